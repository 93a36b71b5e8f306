"""Exercise 3 (notebooks/exercises/03_topological_order.ipynb): the student's own test finds
the bug of a value used twice in naive_order, then their topological_order lists each value
once after its inputs, on a chain deeper than the recursion limit too."""

import pytest

from exercise_grading import answer, grade


def test_the_solutions_score_full_marks():
    result = grade("03")
    assert (result.score, result.total, result.failures, result.errors) == (4, 4, {}, {})
    assert "on naive_order your test fails" in result.printed


def test_the_student_version_scores_zero_and_says_what_is_not_written():
    result = grade("03", student=True)
    assert (result.score, result.total, result.errors) == (0, 4, {})
    assert all("is not written yet" in m for m in result.failures.values()), result.failures


LEAF_TWICE = (  # a test that uses only a leaf twice: naive_order gets that right
    "def test_value_used_twice(order):\n"
    "    a = Value(3.0)\n"
    "    c = a * a\n"
    "    backward(c, order)\n"
    "    assert a.grad == 6.0\n"
)
WRONG_BY_HAND = LEAF_TWICE.replace("c = a * a", "c = (a * a) * (a * a)").replace("6.0", "100.0")
RECURSIVE = (
    "def topological_order(root):\n"
    "    order, visited = [], set()\n"
    "    def visit(value):\n"
    "        if id(value) not in visited:\n"
    "            visited.add(id(value))\n"
    "            for x in value.inputs:\n"
    "                visit(x)\n"
    "            order.append(value)\n"
    "    visit(root)\n"
    "    return order\n"
)
WRONG = [
    ({"test_used_twice": LEAF_TWICE}, "test_finds_the_bug", "your test passes on naive_order"),
    ({"test_used_twice": WRONG_BY_HAND}, "test_finds_the_bug", "your test fails on a right order"),
    ({"topological_order": RECURSIVE}, "test_deep", "raised RecursionError"),
    (
        answer(
            "03", "topological_order", "        elif id(value) not in visited:", "        else:"
        ),
        "test_order",
        "twice",
    ),
    (
        answer("03", "topological_order", "    return order\n", "    return order[::-1]\n"),
        "test_order",
        "after",
    ),
]


@pytest.mark.parametrize(
    "answers, test, words", WRONG, ids=["leaf", "hand", "deep", "twice", "rev"]
)
def test_a_wrong_answer_fails_with_a_message_naming_it(answers, test, words):
    result = grade("03", answers=answers)
    assert test in result.failures, result.failures
    assert words in result.failures[test], result.failures[test]
