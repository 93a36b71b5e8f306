"""mg.gradcheck itself: it passes correct gradients, and catches wrong ones (defined here on
purpose) naming the input, the worst element and both values."""

import re

import numpy as np
import pytest

import minigrad as mg
from minigrad import Function, GradcheckError


class Square(Function):
    """x**2 with a correct backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad * 2 * x


class SquareMissingFactor(Function):
    """x**2 whose backward forgets the factor 2: wrong everywhere, worst where |x| is largest."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad * x


class DoubleIgnoringGrad(Function):
    """2x whose backward returns 2 whatever the incoming gradient: right only for sum()."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return np.full_like(grad, 2.0)


class MulWrongSecondGrad(Function):
    """a * b whose gradient for b is off by 1% at a single element."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        grad_b = grad * a
        grad_b[1, 2] *= 1.01
        return grad * b, grad_b


def test_passes_a_correct_backward():
    x = np.linspace(-1, 1, 6).reshape(2, 3)
    assert mg.gradcheck(lambda t: Square.apply(t), [x]) is True
    assert mg.gradcheck(lambda a, b: (a @ b).tanh(), [np.ones((2, 3)) * 0.3, np.eye(3)]) is True


def test_catches_a_wrong_backward_and_reports_the_worst_element():
    x = np.array([[0.5, -1.0, 0.25], [2.0, -3.0, 1.5]])
    with pytest.raises(GradcheckError) as info:
        mg.gradcheck(lambda t: SquareMissingFactor.apply(t), [x])
    message = str(info.value)
    assert "input 0" in message
    assert "element (1, 1)" in message  # |x| = 3 gives the largest error
    analytic, numeric = map(
        float, re.search(r"analytic gradient (\S+), numeric (\S+?) ", message).groups()
    )
    assert numeric == pytest.approx(2 * analytic, rel=1e-6)  # the missing factor 2
    assert analytic != 0


def test_every_output_element_is_checked_not_just_the_sum():
    x = np.array([0.5, -1.0, 2.0])
    leaf = mg.tensor(x, requires_grad=True)
    DoubleIgnoringGrad.apply(leaf).sum().backward()
    # right by luck for a plain sum
    np.testing.assert_array_equal(leaf.grad.numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(GradcheckError):
        mg.gradcheck(lambda t: DoubleIgnoringGrad.apply(t), [x])


def test_names_which_input_is_wrong():
    a, b = np.linspace(1, 2, 12).reshape(3, 4), np.linspace(-1, 1, 12).reshape(3, 4)
    with pytest.raises(GradcheckError, match=r"input 1, element \(1, 2\)"):
        mg.gradcheck(lambda p, q: MulWrongSecondGrad.apply(p, q), [a, b])


def test_tolerances_decide():
    a, b = np.linspace(1, 2, 12).reshape(3, 4), np.linspace(-1, 1, 12).reshape(3, 4)
    fn = lambda p, q: MulWrongSecondGrad.apply(p, q)  # noqa: E731  1% off at one element
    assert mg.gradcheck(fn, [a, b], rtol=0.05)
    assert mg.gradcheck(fn, [a, b], rtol=1e-3, raise_exception=False) is False


def test_raise_exception_false_returns_false():
    assert (
        mg.gradcheck(
            lambda t: SquareMissingFactor.apply(t), [np.array([1.0, 2.0])], raise_exception=False
        )
        is False
    )
    assert issubclass(GradcheckError, AssertionError)  # a failed check reads as a test failure


def test_inputs_become_float64_copies_and_integers_pass_through():
    seen = []
    x = mg.tensor([[1.0, 2.0], [3.0, 4.0]])  # float32
    index = np.array([[1], [0]])

    def fn(t, i):
        seen.append((t.dtype, t.requires_grad, i.dtype))
        return t.gather(1, i) * 3

    assert mg.gradcheck(fn, [x, index])
    assert seen[0] == (np.float64, True, np.int64)
    # the caller's tensor is untouched
    np.testing.assert_array_equal(x.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    assert x.grad is None
    # one analytic pass plus two evaluations per element of the float input
    assert len(seen) == 1 + 2 * 4


def test_single_input_and_unused_input():
    assert mg.gradcheck(lambda t: t.exp(), np.array([0.1, 0.2]))
    assert mg.gradcheck(lambda a, b: a * 2, [np.ones(2), np.ones(3)])  # b gets a zero gradient


def test_function_must_return_a_tensor():
    with pytest.raises(TypeError, match="tuple"):
        mg.gradcheck(lambda t: (t, t), [np.ones(2)])


def test_gradgradcheck_passes_recorded_second_derivatives_and_catches_a_wrong_one():
    x = np.array([0.3, -0.7, 1.1])
    assert mg.gradcheck.__module__ == "minigrad.gradcheck"
    from minigrad.gradcheck import GradcheckError, gradgradcheck

    assert mg.autograd.gradgradcheck is gradgradcheck is mg.gradgradcheck  # torch's paths
    assert mg.autograd.gradcheck is mg.gradcheck

    assert gradgradcheck(lambda t: (t.exp() * t.sin()) ** 2, [x])
    assert gradgradcheck(lambda a, b: mg.softmax(a * b, 0), [x, x[::-1].copy()])

    class WrongSecond(mg.engine.Function):  # right first derivative, a constant where t was
        higher_order = "backward"

        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, grad):
            (t,) = ctx.saved
            return grad * (2 * (t._data if isinstance(t, mg.Tensor) else t))

    # its recorded gradient does not depend on t at all: refused, not passed
    with pytest.raises(GradcheckError, match="does not depend on the inputs"):
        gradgradcheck(lambda t: WrongSecond.apply(t), [x])
