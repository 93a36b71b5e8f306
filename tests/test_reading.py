"""docs/READING.md, the engine in reading order, stays true: every file it cites exists, every
definition it names is defined there, and each step's line count is within 10% of the real one."""

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
    assert abs(lines - actual) <= 0.1 * actual + 2, (
        f"READING.md says about {lines} lines for {path} {names}; they are {actual}"
    )


def test_the_first_three_steps_read_whole_files_of_about_600_lines():
    """Steps 1-3 (the Tensor, the Function, the walk, an op) send the reader to whole files,
    not to parts of larger ones, and together they stay a sitting's reading."""
    first_steps = READING[READING.index("## Step 1") : READING.index("## Step 4")]
    found = [(m.group(1), m.group(2).strip(), int(m.group(3))) for m in ROW.finditer(first_steps)]
    assert len(found) >= 4
    assert [path for path, names, _ in found if names] == [], "a row names parts of a file"
    total = sum(len((ROOT / path).read_text().splitlines()) for path, _, _ in found)
    assert total <= 650, f"steps 1-3 now hold {total} lines"


def test_every_file_the_guide_links_exists():
    for link in re.findall(r"\]\(\.\./([^)#]+)", READING):
        assert (ROOT / link).exists(), link
