"""docs/READING.md, the engine in reading order, stays true: every file it cites exists, every
definition it names is defined there, and each step's line count is near the real one."""

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
READING = (ROOT / "docs" / "READING.md").read_text()

# A step of the path is a table row: | `file` | `Name`, `Class.method` ... | about N lines | ...
ROW = re.compile(r"^\|\s*`([\w/.]+\.py)`\s*\|([^|]*)\|\s*~?(\d+)\s*\|", re.MULTILINE)


def rows():
    found = [
        (m.group(1), re.findall(r"`([\w.]+)`", m.group(2)), int(m.group(3)))
        for m in ROW.finditer(READING)
    ]
    assert len(found) >= 8, "READING.md lost its steps"
    return found


def definitions(path):
    """{"Name": node, "Class.method": node} of the file's top-level definitions and methods,
    and module-level names bound by assignment (`log = op(unary(...))`)."""
    tree = ast.parse(path.read_text())
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        names[f"{node.name}.{item.name}"] = item
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
    return names


@pytest.mark.parametrize(
    "path, names, lines", rows(), ids=[r[0] + ":" + ",".join(r[1]) for r in rows()]
)
def test_each_cited_definition_exists_and_the_line_count_holds(path, names, lines):
    file = ROOT / path
    assert file.is_file(), f"READING.md cites {path}, which does not exist"
    defined = definitions(file)
    missing = [name for name in names if name not in defined]
    assert not missing, f"{path} defines none of {missing}"
    if names:  # the lines of the cited definitions (a class without cited methods: all of it)
        spans = {defined[name].lineno: defined[name].end_lineno for name in names}
        counted = set()
        for start, end in spans.items():
            counted.update(range(start, end + 1))
        actual = len(counted)
    else:  # the whole file
        actual = len(file.read_text().splitlines())
    assert 0.6 * actual <= lines <= 1.5 * actual + 5, (
        f"READING.md says about {lines} lines for {path} {names}; they are {actual}"
    )


def test_every_file_the_guide_links_exists():
    for link in re.findall(r"\]\(\.\./([^)#]+)", READING):
        assert (ROOT / link).exists(), link
