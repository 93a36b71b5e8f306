"""Exercise 4 (notebooks/exercises/04_softmax.ipynb): a numerically stable softmax and its
backward, the Jacobian-vector product. The teacher's version scores full marks, the student's
scores zero without crashing, and typical wrong answers fail their test with a message naming
the mistake."""

import pytest

from exercise_grading import answer, grade

NOT_WRITTEN = "is not written yet: it raised NotImplementedError"
SUM = "(s * grad).sum(axis=-1, keepdims=True)"
SHIFT = "e = np.exp(x - x.max(axis=-1, keepdims=True))"
NORMALIZE = "s = e / e.sum(axis=-1, keepdims=True)"


def test_the_solutions_score_full_marks():
    result = grade("04")
    assert (result.score, result.total, result.failures, result.errors) == (4, 4, {}, {})
    assert "weights of 'it': [0.9316 0.0134 0.0551]" in result.printed


def test_the_student_version_scores_zero_and_says_what_is_not_written():
    result = grade("04", student=True)
    assert (result.score, result.total, result.errors) == (0, 4, {})
    for test in ("test_forward", "test_stable", "test_backward", "test_attention"):
        assert NOT_WRITTEN in result.failures[test], result.failures[test]


WRONG = [
    (  # the diagonal of the Jacobian alone: s * g
        SUM, "0", {"test_backward", "test_attention"},
        "Softmax.backward returned s * g, the diagonal of the Jacobian alone",
        "the term - s * sum(s * g) (summed over the last axis) is missing",
    ),
    (  # no max shift: exp(1000) is inf, inf / inf nan
        SHIFT, "e = np.exp(x)", {"test_stable"},
        "Softmax.forward's output for scores of 1000 is wrong at index (0, 0): yours is nan",
        "an overflow (exp of a large number is inf, inf / inf nan)?",
    ),
    (  # the forward's sum over the first axis
        NORMALIZE, "s = e / e.sum(axis=0, keepdims=True)",
        {"test_forward", "test_stable", "test_backward", "test_attention"},
        "Softmax.forward: row 0 of your output (input of shape (2, 3)) sums to 1.467, not 1",
        "did you sum over the wrong axis?",
    ),
    (  # the backward's sum over the first axis
        SUM, "(s * grad).sum(axis=0, keepdims=True)", {"test_backward", "test_attention"},
        "Softmax.backward: row 0 of your gradient sums to",
        "did you sum s * g over the wrong axis?",
    ),
    (  # no return in backward
        "return s * (grad", "s * (grad", {"test_backward", "test_attention"},
        "Softmax.backward returned None", "did you forget a `return`?",
    ),
]  # fmt: skip


@pytest.mark.parametrize("old, new, failing, first, words", WRONG)
def test_a_wrong_answer_fails_its_tests_with_a_message_naming_it(old, new, failing, first, words):
    result = grade("04", answers=answer("04", "softmax", old, new))
    assert set(result.failures) == failing, result.failures
    first_test = next(t for t in ("test_forward", "test_stable", "test_backward") if t in failing)
    assert first in result.failures[first_test], result.failures[first_test]
    assert words in result.failures[first_test], result.failures[first_test]
    assert result.score == 4 - len(failing) and not result.errors


def test_a_wrong_backward_is_named_inside_minigrad_by_the_swap():
    result = grade("04", answers=answer("04", "softmax", SUM, "0"))
    message = result.failures["test_attention"]
    assert "your Softmax, call 1: the gradient of the softmax's input (shape (3, 3))" in message
    assert "minigrad's own gives" in message
