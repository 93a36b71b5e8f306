"""Elementwise ops. Each Function states its output and its local gradient; broadcasting is
undone by the backward walk (`autograd.sum_to`), so binary ops return broadcast-shaped grads."""

import numpy as np

from .. import dtypes
from ..dtypes import result_type, to_array
from ..errors import ArgumentError, ShapeError
from ..tensor import Function, Tensor
from .args import bool_mask, check_broadcast
from .indexing import nonzero


# -- binary -------------------------------------------------------------------------------


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a - b

    @staticmethod
    def backward(ctx, grad):
        return grad, -grad


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):  # each gradient needs only the other operand: keep only what is needed
        ctx.save_for_backward(
            b if ctx.needs_input_grad[0] else None, a if ctx.needs_input_grad[1] else None
        )
        return a * b

    @staticmethod
    def backward(ctx, grad):
        b, a = ctx.saved
        return None if b is None else grad * b, None if a is None else grad * a


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        grad_a = grad / b
        return grad_a, -grad_a * a / b


class Pow(Function):
    """a ** b for tensors a and b: d/da = b a^(b-1), d/db = a^b log a."""

    @staticmethod
    def forward(ctx, a, b):
        out = (a**b).astype(a.dtype, copy=False)  # numpy makes bool ** bool int8
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved
        grad_a = grad_b = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if ctx.needs_input_grad[
                0
            ]:  # b a^(b-1), and 0 where b == 0 (x ** 0 is constant), as torch
                grad_a = np.where(b == 0, 0, grad * b * a ** (b - 1))
            if ctx.needs_input_grad[
                1
            ]:  # a^b log a; 0 at a == 0 for b >= 0, nan for a < 0, as torch
                grad_b = np.where((a == 0) & (b >= 0), 0, grad * out * np.log(a))
        return grad_a, grad_b


class PowScalar(Function):
    """x ** c for a constant c: d/dx = c x^(c-1)."""

    @staticmethod
    def forward(ctx, x, exponent):
        ctx.save_for_backward(x)
        ctx.exponent = exponent
        return (x**exponent).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        c = ctx.exponent
        if c == 0:  # x ** 0 is constant: gradient 0 everywhere, also at x = 0, as in torch
            return np.zeros_like(grad)
        with np.errstate(divide="ignore", invalid="ignore"):
            return grad * c * x ** (c - 1)


def operand_as(x, dtype):
    """An operand (tensor, array or number) as a tensor of `dtype`: tensors are cast, the rest wrapped."""
    if isinstance(x, Tensor):
        return cast(x, dtype)
    return Tensor._wrap(
        np.asarray(x if isinstance(x, dtypes.NUMBERS) else to_array(x), dtype=dtype)
    )


def _binary(function, name, true_division=False):
    def op(a, b):
        check_broadcast(name, a, b)
        dtype = result_type(a, b)
        if true_division:
            dtype = dtypes.float_result(dtype)  # int / int is a float, as in PyTorch
        return function.apply(operand_as(a, dtype), operand_as(b, dtype))

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} with numpy broadcasting and PyTorch's result dtype."
    return op


add = _binary(Add, "add")
sub = _binary(Sub, "sub")
mul = _binary(Mul, "mul")
_true_div = _binary(Div, "div", true_division=True)


class RoundedDiv(Function):
    """a / b rounded down ("floor") or toward zero ("trunc"): piecewise constant, gradient 0."""

    @staticmethod
    def forward(ctx, a, b, rounding):
        with np.errstate(divide="ignore", invalid="ignore"):
            if a.dtype.kind in "iu" and rounding == "floor":
                return np.floor_divide(a, b)
            quotient = a / b
            return (np.floor(quotient) if rounding == "floor" else np.trunc(quotient)).astype(
                a.dtype
            )

    @staticmethod
    def backward(ctx, grad):
        return np.zeros_like(grad), np.zeros_like(grad)


def div(a, b, rounding_mode=None):
    """a / b (true division: int / int is a float), or rounded: rounding_mode "floor" or "trunc"
    (then int / int stays int, as in torch)."""
    if rounding_mode is None:
        return _true_div(a, b)
    if rounding_mode not in ("floor", "trunc"):
        raise ArgumentError(
            f"div: rounding_mode must be None, 'floor' or 'trunc'; got {rounding_mode!r}"
        )
    check_broadcast("div", a, b)
    dtype = result_type(a, b)
    return RoundedDiv.apply(operand_as(a, dtype), operand_as(b, dtype), rounding=rounding_mode)


def floor_divide(a, b):
    """a // b, rounded down (torch.floor_divide)."""
    return div(a, b, rounding_mode="floor")


def pow(base, exponent):
    """base ** exponent; a Python-number exponent is a constant (no gradient through it)."""
    dtype = result_type(base, exponent)
    if np.dtype(dtype).kind in "iu" and np.any(np.asarray(to_array(exponent)) < 0):
        raise ArgumentError(
            f"pow: integers to negative integer powers are not allowed (an integer result cannot "
            f"hold them); got a {np.dtype(dtype)} power with exponent {exponent}. Make one side float."
        )
    if isinstance(exponent, (int, float)) and isinstance(base, Tensor):
        return PowScalar.apply(cast(base, dtype), exponent=exponent)
    check_broadcast("pow", base, exponent)
    return Pow.apply(operand_as(base, dtype), operand_as(exponent, dtype))


# -- unary --------------------------------------------------------------------------------


class Neg(Function):
    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad * y


class Log(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.log(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad / x


class Sqrt(Function):
    @staticmethod
    def forward(ctx, x):
        y = np.sqrt(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad / (2 * y)


class Abs(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.abs(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad * np.sign(x)


class Tanh(Function):
    @staticmethod
    def forward(ctx, x):
        y = np.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad * (1 - y * y)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, x):
        # tanh form: stable for large |x| in both directions
        y = (np.tanh(x * 0.5) + 1) * 0.5
        ctx.save_for_backward(y)
        return y.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad * y * (1 - y)


class Relu(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x > 0)
        return np.maximum(x, 0)

    @staticmethod
    def backward(ctx, grad):
        (positive,) = ctx.saved
        return grad * positive


class Cast(Function):
    @staticmethod
    def forward(ctx, x, dtype):
        ctx.dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad.astype(ctx.dtype) if np.issubdtype(ctx.dtype, np.floating) else None


class Clone(Function):
    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, grad):
        return grad


def as_float(x):
    """x as a float tensor: float-valued ops on int or bool tensors give the default float (torch)."""
    x = x if isinstance(x, Tensor) else Tensor._wrap(to_array(x))
    return cast(x, dtypes.float_result(x.dtype))


def neg(x):
    return Neg.apply(x)


def exp(x):
    return Exp.apply(as_float(x))


def log(x):
    return Log.apply(as_float(x))


def sqrt(x):
    return Sqrt.apply(as_float(x))


def abs(x):
    return Abs.apply(x)


def tanh(x):
    return Tanh.apply(as_float(x))


def sigmoid(x):
    return Sigmoid.apply(as_float(x))


def relu(x):
    return Relu.apply(x)


def clone(x):
    return Clone.apply(x)


def cast(x, dtype):
    dtype = dtypes.as_dtype(dtype)
    return x if x.dtype == dtype else Cast.apply(x, dtype=dtype)


# -- selection ----------------------------------------------------------------------------


class Where(Function):
    """where(condition, x, y): x where condition is true, else y. The condition is a constant."""

    @staticmethod
    def forward(ctx, x, y, condition):
        ctx.condition = condition
        return np.where(condition, x, y)

    @staticmethod
    def backward(ctx, grad):
        return np.where(ctx.condition, grad, 0), np.where(ctx.condition, 0, grad)


def where(condition, x=None, y=None):
    """Elementwise choice with broadcasting among condition, x and y; torch's result dtype.
    where(condition) alone is nonzero(condition, as_tuple=True), as in torch."""
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    condition = bool_mask(condition, "where")
    check_broadcast("where", condition, x, y)
    dtype = result_type(x, y)
    return Where.apply(operand_as(x, dtype), operand_as(y, dtype), condition=condition)


class MaskedFill(Function):
    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.mask = mask
        return np.where(mask, np.asarray(value, dtype=x.dtype), x)

    @staticmethod
    def backward(ctx, grad):
        return np.where(ctx.mask, 0, grad)


def masked_fill(x, mask, value):
    """A copy of x with `value` where mask is True (mask broadcasts to x's shape)."""
    mask = bool_mask(mask, "masked_fill", x.shape)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ShapeError(
                f"masked_fill: value must be a number or a 0-d tensor; got shape {value.shape}"
            )
        if (
            value.requires_grad
        ):  # the value takes a gradient too (the sum over the filled places), as in torch
            return where(mask, cast(value, x.dtype), x)
        value = value.item()
    return MaskedFill.apply(x, mask=mask, value=value)


# -- outside the graph --------------------------------------------------------------------


def compare(ufunc, a, b):
    """A comparison, logical or bitwise ufunc on tensors/numbers: a tensor with no gradient."""
    a_data = a._data if isinstance(a, Tensor) else a
    b_data = b._data if isinstance(b, Tensor) else b
    check_broadcast(ufunc.__name__, a_data, b_data)
    return Tensor._wrap(np.asarray(ufunc(a_data, b_data)))


def bitwise_not(x):
    """~x: logical not on bool tensors, bitwise not on integer tensors (as in torch)."""
    if x.dtype.kind == "f":
        raise TypeError(
            f"~ (bitwise_not) is defined on bool and integer tensors; got dtype {x.dtype}"
        )
    return Tensor._wrap(np.invert(x._data))
