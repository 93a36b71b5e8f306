"""Grading the exercises (notebooks/exercises/) as nbgrader does, without nbgrader: the teacher's
version (solutions in), the student's (each `### BEGIN SOLUTION` ... `### END SOLUTION` region
replaced by `raise NotImplementedError()`, as `nbgrader generate_assignment` makes it) or either
with some answers replaced (a typical wrong one). The cells run in order in one namespace, as in
a kernel; a cell that raises does not stop the run (nbgrader autograde goes on too); a test
cell (nbgrader `grade: true`) scores its points when it runs without an error."""

import contextlib
import io
import linecache
import re
from pathlib import Path
from typing import NamedTuple

import matplotlib
import nbformat

matplotlib.use("Agg")

FOLDER = Path(__file__).resolve().parents[1] / "notebooks" / "exercises"
EXERCISES = sorted(FOLDER.glob("[0-9][0-9]_*.ipynb"))
SOLUTION = re.compile(
    r"^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION[ \t]*$", re.M | re.S
)
HIDDEN = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS\n.*?^[ \t]*### END HIDDEN TESTS[ \t]*\n?", re.M | re.S
)


def notebook(name):
    path = next(p for p in EXERCISES if p.name.startswith(name))
    return nbformat.read(path, as_version=4)


def blank(source):
    """A solution cell as the student gets it."""
    return SOLUTION.sub(
        lambda m: f"{m[1]}# YOUR CODE HERE\n{m[1]}raise NotImplementedError()", source
    )


def without_hidden_tests(source):
    return HIDDEN.sub("", source)


class Result(NamedTuple):
    score: int
    total: int
    failures: dict  # grade_id of a test cell -> the message of its error
    errors: dict  # grade_id of any other cell -> the message of its error
    printed: str


def grade(name, student=False, answers=None):
    """Run exercise `name` ("01") and grade it. answers: {grade_id: source} replacing solution
    cells (a wrong answer) before running."""
    answers = dict(answers or {})
    namespace = {"__name__": "__main__"}
    score = total = 0
    failures, errors = {}, {}
    out = io.StringIO()
    for index, cell in enumerate(notebook(name).cells):
        if cell.cell_type != "code":
            continue
        meta = cell.metadata["nbgrader"]
        grade_id = meta["grade_id"]
        source = cell.source
        if grade_id in answers:
            assert meta["solution"], f"{grade_id} is not a solution cell"
            source = answers.pop(grade_id)
        elif student and meta["solution"]:
            source = blank(source)
        filename = f"<exercise {name} cell {grade_id}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        if meta["grade"]:
            total += meta["points"]
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(source, filename, "exec"), namespace)
        except Exception as error:  # noqa: BLE001 (a grader records every failure)
            message = f"{type(error).__name__}: {error}"
            (failures if meta["grade"] else errors)[grade_id] = message
        else:
            if meta["grade"]:
                score += meta["points"]
    assert not answers, f"no solution cells {sorted(answers)} in exercise {name}"
    return Result(score, total, failures, errors, out.getvalue())


def solution_source(name, grade_id):
    cell = next(c for c in notebook(name).cells if c.metadata["nbgrader"]["grade_id"] == grade_id)
    return cell.source


def answer(name, grade_id, old, new):
    """The solution cell `grade_id` with `old` (text of the solution) replaced by `new`."""
    source = solution_source(name, grade_id)
    assert old in source, f"{old!r} is not in {grade_id}"
    return {grade_id: source.replace(old, new)}
