"""minigrad.teaching.checks: a failed check names what is wrong (output or gradient, index, the
student's value, the finite-difference value and minigrad's, the expected shape) and is an
ExerciseError (an AssertionError, as graders count failures), never a traceback into minigrad.
The finite differences are the truth: a wrong backward fails whatever minigrad says."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.teaching import ExerciseError, check_array, check_function, finite_differences


class Mul(mg.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved
        return grad * y, grad * x


def mul_with(backward):
    return type("Mul", (Mul,), {"backward": staticmethod(backward)})


X, Y = np.arange(6.0).reshape(2, 3) / 7 + 0.5, np.array([1.5, -2.0, 0.25])


def failure(function, *inputs, **options):
    with pytest.raises(ExerciseError) as caught:
        check_function(function, *inputs, reference=lambda x, y: x * y, **options)
    assert isinstance(caught.value, AssertionError)
    return str(caught.value)


def test_a_right_function_passes_and_its_outputs_are_returned():
    out = check_function(Mul, X, Y, reference=lambda x, y: x * y)
    assert np.allclose(out, X * Y)


def test_a_gradient_of_the_broadcast_shape_is_summed_down_as_the_engine_does():
    # dL/dy returned as (2, 3) for y of shape (3,): the walk's sum_to makes it right
    check_function(mul_with(lambda ctx, g: (g * ctx.saved[1], g * ctx.saved[0])), X, Y)


WRONG_BACKWARDS = {
    "None": (
        lambda ctx, g: None,
        "Mul.backward returned None: it must return the gradient for each input (2: x, y)",
    ),
    "one for two": (
        lambda ctx, g: g * ctx.saved[1],
        "Mul.backward returned 1 gradient(s) for 2 input(s) (x, y)",
    ),
    "None for y": (
        lambda ctx, g: (g * ctx.saved[1], None),
        "Mul.backward returned None for input 1 (y), of shape (3,)",
    ),
    "wrong shape": (
        lambda ctx, g: (g * ctx.saved[1], np.ones(2)),
        "returned a gradient of shape (2,) for input 1 (y), whose shape is (3,)",
    ),
    "swapped": (
        lambda ctx, g: (g * ctx.saved[0], g * ctx.saved[1]),
        "Mul.backward's gradient for input 0 (x) is wrong at index (0, 0): yours is",
    ),
    "rows not added": (
        lambda ctx, g: (g * ctx.saved[1], (g * ctx.saved[0])[0]),
        "Mul.backward's gradient for input 1 (y) is wrong at index (0,)",
    ),
}


@pytest.mark.parametrize("backward, words", WRONG_BACKWARDS.values(), ids=WRONG_BACKWARDS)
def test_a_wrong_backward_is_named(backward, words):
    message = failure(mul_with(backward), X, Y)
    assert words in message, message


def test_a_wrong_value_names_the_index_yours_finite_differences_and_minigrads():
    message = failure(mul_with(lambda ctx, g: (2 * g * ctx.saved[1], g * ctx.saved[0])), X, Y)
    rng = np.random.default_rng(0)
    upstream = rng.normal(size=(2, 3))
    right = upstream[0, 0] * Y[0]
    assert f"yours is {2 * right:.6g}, finite differences give {right:.6g}" in message
    assert f"minigrad's is {right:.6g} (6 of 6 numbers differ)" in message


def test_the_students_exceptions_are_told_with_their_line():
    def forward(ctx, x, y):
        raise NotImplementedError()

    message = failure(type("Mul", (Mul,), {"forward": staticmethod(forward)}), X, Y)
    assert message.startswith("Mul.forward is not written yet: it raised NotImplementedError")

    def backward(ctx, grad):
        x, y = ctx.saved
        return grad @ y, grad * x  # a matrix product where a product was meant

    message = failure(mul_with(backward), X, np.ones((2, 3)))
    assert message.startswith("Mul.backward raised ValueError: matmul")
    assert "of your code: `return grad @ y, grad * x" in message


def test_a_wrong_forward_is_named_against_minigrad():
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x + y

    message = failure(type("Mul", (Mul,), {"forward": staticmethod(forward)}), X, Y)
    assert message.startswith("Mul.forward's output (inputs of shapes (2, 3), (3,)) is wrong at")
    assert "(0, 0): yours is 2, the expected value is 0.75" in message


def test_check_array_names_none_a_wrong_shape_a_wrong_number_and_nan():
    expected = np.array([[1.0, 2.0], [3.0, 4.0]])
    check_array("the weights", expected + 1e-9, expected)
    cases = [
        (None, "the weights: yours is None; did you forget a `return`?"),
        ("text", "the weights: yours is a str, not an array of numbers"),
        (np.ones(4), "the weights: yours has shape (4,); the expected shape is (2, 2)"),
        (np.array([[1.0, 2.0], [3.5, 4.0]]), "the weights is wrong at index (1, 0): yours is 3.5"),
        (np.array([[1.0, np.nan], [3.0, 4.0]]), "yours is nan: an overflow"),
    ]
    for yours, words in cases:
        with pytest.raises(ExerciseError) as caught:
            check_array("the weights", yours, expected)
        assert words in str(caught.value)


def test_finite_differences_of_a_known_function():
    (grad,) = finite_differences(lambda x: np.sin(x), [np.array([0.0, 1.0])], [np.ones(2)])
    assert np.allclose(grad, np.cos([0.0, 1.0]), atol=1e-8)
