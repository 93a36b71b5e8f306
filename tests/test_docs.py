"""The documentation does not rot: links resolve, the README stays a front page.

Every relative link (and image) in README.md, docs/*.md, examples/**/README.md and
benchmarks/*.md must name a file of the repository, and a `#fragment` pointing into a
Markdown file must name one of its headings (GitHub's anchors). docs/READING.md is left to
its own test (tests of the engine's reading order check the names it cites).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 250
SKIPPED = {ROOT / "docs" / "READING.md"}

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")
# [text](target) and ![alt](target); the target ends at whitespace or the closing parenthesis
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def markdown_files():
    """Every Markdown page whose links this test checks, as paths under ROOT."""
    pages = [ROOT / "README.md"]
    pages += sorted((ROOT / "docs").glob("*.md"))
    pages += sorted((ROOT / "examples").glob("**/README.md"))
    pages += sorted((ROOT / "benchmarks").glob("*.md"))
    return [page for page in pages if page not in SKIPPED]


def prose_lines(text):
    """The lines of a Markdown text outside fenced code blocks, with (number, line) pairs."""
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield number, line


def links(page):
    """(line number, target) of every link and image in a page, code spans left out."""
    found = []
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        for match in LINK.finditer(INLINE_CODE.sub("", line)):
            found.append((number, match.group(1)))
    return found


def anchor(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page):
    """Every heading anchor of a Markdown page (repeated headings get -1, -2, ... as on GitHub)."""
    seen = {}
    result = set()
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = anchor(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def is_external(target):
    return re.match(r"^[a-z][a-z0-9+.-]*:", target) is not None  # http:, https:, mailto:


@pytest.mark.parametrize("page", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_points_at_a_file_of_the_repository(page):
    problems = []
    for number, target in links(page):
        if is_external(target):
            continue
        path_part, _, fragment = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(ROOT)}:{number}: {target}"
        if ROOT not in resolved.parents and resolved != ROOT:
            problems.append(f"{where} points outside the repository")
        elif not resolved.exists():
            problems.append(f"{where} names no file ({resolved.relative_to(ROOT)})")
        elif fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            problems.append(f"{where}: {resolved.name} has no heading with anchor #{fragment}")
    assert not problems, "broken links:\n" + "\n".join(problems)


# `tests/test_io.py`, `benchmarks/train_step.py`, `minigrad/kernels/` ... cited in code spans
CITED_PATH = re.compile(r"`((?:tests|benchmarks|examples|minigrad|nn|docs)/[\w./*-]*)`")
# pages whose cited paths must exist today: not the benchmark logs (benchmarks/README-*.md),
# which record file names as they were when each run was made, nor the lead's two pages
CURRENT_PAGES = [
    page
    for page in markdown_files()
    if not page.name.startswith("README-") and page.name != "ARCHITECTURE.md"
]


@pytest.mark.parametrize("page", CURRENT_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_cited_repository_path_exists(page):
    """A path named in a code span (a test file, a benchmark, a kernel) still exists."""
    missing = []
    for number, line in prose_lines(page.read_text(encoding="utf-8")):
        for match in CITED_PATH.finditer(line):
            cited = match.group(1)
            if not any(ROOT.glob(cited.rstrip("/"))):
                missing.append(f"{page.relative_to(ROOT)}:{number}: {cited}")
    assert not missing, "paths cited that do not exist (renamed? update the page):\n" + "\n".join(
        missing
    )


def test_the_link_finder_sees_links_and_skips_code():
    sample = ROOT / "README.md"
    assert links(sample), "README.md has no links: the link pattern is broken"
    assert anchor("2. The four matrices: `examples/four_matrices.py`") == (
        "2-the-four-matrices-examplesfour_matricespy"
    )


def readme_text():
    return (ROOT / "README.md").read_text(encoding="utf-8")


def first_code_block(text):
    """The lines of the first fenced code block of a Markdown text."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if FENCE.match(line))
    end = next(i for i in range(start + 1, len(lines)) if FENCE.match(lines[i]))
    return lines[start + 1 : end]


def test_readme_is_a_front_page():
    lines = readme_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines; a front page has at most {README_MAX_LINES}: "
        "move the long write-ups to docs/ or next to the examples"
    )


def readme_commands():
    """The two commands of the README's first code block, comments removed."""
    commands = [line.split("#")[0].strip() for line in first_code_block(readme_text())]
    return [command for command in commands if command]


def test_readme_opens_with_the_two_commands():
    commands = readme_commands()
    assert len(commands) == 2, f"expected the two commands (experiment, tests), got {commands}"
    experiment, tests = commands
    assert experiment.startswith("pip install -e . && python examples/sentiment/train.py")
    assert tests.startswith('pip install -e ".[test]" && python -m pytest')
    # the commands come first: the first line after the title opens their code block
    after_title = [line for line in readme_text().splitlines()[1:] if line.strip()]
    assert FENCE.match(after_title[0]), "README.md must start with the two commands"


def test_ci_runs_the_readme_test_command():
    test_command = readme_commands()[1].split("&&")[-1].strip()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert test_command in ci_lines, f".ci/run does not run the README's `{test_command}`"


def test_readme_stays_inside_the_repository():
    text = readme_text()
    assert "../shared" not in text and "/work/" not in text
