"""Exercise 2 (notebooks/exercises/02_sum_to.ipynb): sum_to, undoing broadcasting, checked
against the gradient minigrad's engine gives a broadcast input."""

import pytest

from exercise_grading import grade


def test_the_solutions_score_full_marks():
    result = grade("02")
    assert (result.score, result.total, result.failures, result.errors) == (3, 3, {}, {})


def test_the_student_version_scores_zero_and_says_what_is_not_written():
    result = grade("02", student=True)
    assert (result.score, result.total, result.errors) == (0, 3, {})
    assert all("your sum_to is not written yet" in m for m in result.failures.values())


NOT_SUMMED = "def sum_to(grad, shape):\n    return grad\n"
LEADING_ONLY = (
    "def sum_to(grad, shape):\n    return grad.sum(axis=tuple(range(grad.ndim - len(shape))))\n"
)
KEEPDIMS_LOST = (
    "def sum_to(grad, shape):\n"
    "    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))\n"
    "    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)\n"
    "    return grad.sum(axis=stretched)\n"
)
MEAN = NOT_SUMMED.replace(
    "return grad", "return grad.mean(axis=0) if grad.ndim > len(shape) else grad"
)
WRONG = [
    (NOT_SUMMED, ["test_leading_axes", "test_size_one_axes", "test_bias"],
     "sum_to(a gradient of shape (4, 3), (3,)): yours has shape (4, 3); the expected shape is "
     "(3,): not summed down?"),
    (LEADING_ONLY, ["test_size_one_axes"],
     "sum_to(a gradient of shape (4, 3), (4, 1)): yours has shape (4, 3); the expected shape is "
     "(4, 1): not summed down?"),
    (KEEPDIMS_LOST, ["test_size_one_axes"],
     "sum_to(a gradient of shape (4, 3), (4, 1)): yours has shape (4,); the expected shape is "
     "(4, 1)"),
    (MEAN, ["test_leading_axes", "test_size_one_axes", "test_bias"],
     "sum_to(a gradient of shape (4, 3), (3,)) is wrong at index (0,): yours is"),
]  # fmt: skip


@pytest.mark.parametrize("source, failing, words", WRONG, ids=["none", "leading", "keep", "mean"])
def test_a_wrong_sum_to_fails_with_a_message_naming_it(source, failing, words):
    result = grade("02", answers={"sum_to": source})
    assert sorted(result.failures) == sorted(failing), result.failures
    assert words in result.failures[failing[0]], result.failures[failing[0]]
