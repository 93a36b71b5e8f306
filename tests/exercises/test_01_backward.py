"""Exercise 1 (notebooks/exercises/01_backward.ipynb): the backward of Mul, Div, Pow, Exp and
Tanh. The teacher's version scores full marks, the student's scores zero without crashing, and
typical wrong answers fail the test of their op with a message naming the mistake."""

import pytest

from exercise_grading import answer, grade

NOT_WRITTEN = "is not written yet: it raised NotImplementedError"


def test_the_solutions_score_full_marks():
    result = grade("01")
    assert (result.score, result.total, result.failures, result.errors) == (6, 6, {}, {})
    assert "Tanh: right" in result.printed and "dL/da =" in result.printed


def test_the_student_version_scores_zero_and_says_what_is_not_written():
    result = grade("01", student=True)
    assert (result.score, result.total, result.errors) == (0, 6, {})
    for op in ("Mul", "Div", "Pow", "Exp", "Tanh"):
        assert f"{op}.backward {NOT_WRITTEN}" in result.failures[f"test_{op.lower()}"]
    assert NOT_WRITTEN in result.failures["test_engine"]


WRONG = [
    (  # d(x/y)/dy without its minus sign
        "div", "return grad / y, -grad * z / y", "return grad / y, grad * z / y", "test_div",
        "Div.backward's gradient for input 1 (y) is wrong at index (0, 0): yours is 0.",
    ),
    (  # the gradients of x and y swapped
        "mul", "return grad * y, grad * x", "return grad * x, grad * y", "test_mul",
        "Mul.backward's gradient for input 0 (x) is wrong at index (0, 0)",
    ),
    (  # one gradient for two inputs
        "mul", "return grad * y, grad * x", "return grad * y * x", "test_mul",
        "Mul.backward returned 1 gradient(s) for 2 input(s) (x, y)",
    ),
    (  # the exponent not lowered
        "pow", "x ** (ctx.exponent - 1)", "x**ctx.exponent", "test_pow",
        "Pow.backward's gradient for input 0 (x) is wrong at index (0, 0)",
    ),
    (  # tanh's derivative as 1 - y, not 1 - y^2
        "tanh", "return grad * (1 - y * y)", "return grad * (1 - y)", "test_tanh",
        "Tanh.backward's gradient for input 0 (x) is wrong at index",
    ),
    (  # the upstream gradient forgotten: dy/dx alone
        "exp", "return grad * y", "return y", "test_exp",
        "Exp.backward's gradient for input 0 (x) is wrong at index (0, 0)",
    ),
    (  # no return: None
        "exp", "return grad * y", "grad * y", "test_exp",
        "Exp.backward returned None: it must return the gradient for each input (1: x)",
    ),
]  # fmt: skip


@pytest.mark.parametrize("grade_id, old, new, test, words", WRONG)
def test_a_wrong_answer_fails_its_test_with_a_message_naming_it(grade_id, old, new, test, words):
    result = grade("01", answers=answer("01", grade_id, old, new))
    assert test in result.failures, result.failures
    assert words in result.failures[test], result.failures[test]
    assert "finite differences give" in result.failures[test] or "returned" in words
    others = [t for t in result.failures if t not in (test, "test_engine")]
    assert not others, others  # the other ops still score
