"""`nbgrader generate_assignment` on notebooks/exercises/ gives the student version that
tests/exercise_grading.py grades: each solution region replaced by `raise NotImplementedError()`,
the hidden tests taken out, every other cell as it is."""

import shutil
import subprocess
import sys

import nbformat
import pytest

from exercise_grading import EXERCISES, blank, without_hidden_tests

pytest.importorskip("nbgrader")


def test_the_released_notebooks_are_the_graded_student_version(tmp_path):
    source = tmp_path / "source" / "minigrad"
    source.mkdir(parents=True)
    for path in EXERCISES:
        shutil.copy(path, source / path.name)
    command = [sys.executable, "-m", "nbgrader", "generate_assignment", "minigrad"]
    command += [f"--CourseDirectory.root={tmp_path}"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    for path in EXERCISES:
        released = nbformat.read(tmp_path / "release" / "minigrad" / path.name, as_version=4)
        teacher = nbformat.read(path, as_version=4)
        assert len(released.cells) == len(teacher.cells)
        for ours, theirs in zip(teacher.cells, released.cells):
            expected = ours.source
            if ours.metadata["nbgrader"]["solution"]:
                expected = blank(expected)
            if ours.metadata["nbgrader"]["grade"]:
                expected = without_hidden_tests(expected)
            assert theirs.source.strip() == expected.strip(), (path.name, theirs.source)
            assert "BEGIN SOLUTION" not in theirs.source and "HIDDEN" not in theirs.source
