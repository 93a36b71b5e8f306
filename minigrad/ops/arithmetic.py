"""Arithmetic: + - * / ** // % as functions (add, sub, mul, div, pow, floor_divide, remainder,
fmod), reciprocal, true_divide, float_power, atan2, hypot, lerp, and the pointwise
multiply-adds addcmul and addcdiv.

Each Function states its output and its local gradient; broadcasting is undone by the backward
walk (`autograd.sum_to`), so binary ops return broadcast-shaped gradients. The result dtype is
torch's (`dtypes.result_type`): int / int is a float, a Python number does not widen a tensor.
"""

import numpy as np

from .. import dtypes
from ..dtypes import float_result, result_type, to_array
from ..errors import ArgumentError, DTypeError
from ..engine import Function, Tensor
from .args import check_broadcast, float_tensor, float_tensors
from .conversion import cast, operand_as
from .namespace import namespace
from .registry import op

# -- + - * / ** ---------------------------------------------------------------------------


class Add(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class Sub(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, a, b):
        return a - b

    @staticmethod
    def backward(ctx, grad):
        return grad, -grad


class Mul(Function):
    higher_order = "backward"

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
    higher_order = "backward"

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

    higher_order = "backward"

    @staticmethod
    def forward(ctx, a, b):
        out = (a**b).astype(a.dtype, copy=False)  # numpy makes bool ** bool int8
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved
        xp, grad_a, grad_b = namespace(grad), None, None
        with np.errstate(divide="ignore", invalid="ignore"):
            # b a^(b-1), and 0 where b == 0 (x ** 0 is constant), as torch
            if ctx.needs_input_grad[0]:
                grad_a = xp.where(b == 0, 0, grad * b * a ** (b - 1))
            # a^b log a; 0 at a == 0 for b >= 0, nan for a < 0, as torch
            if ctx.needs_input_grad[1]:
                grad_b = xp.where((a == 0) & (b >= 0), 0, grad * out * xp.log(a))
        return grad_a, grad_b


class PowScalar(Function):
    """x ** c for a constant c: d/dx = c x^(c-1)."""

    higher_order = "backward"

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
            return namespace(grad).zeros_like(grad)
        with np.errstate(divide="ignore", invalid="ignore"):
            return grad * c * x ** (c - 1)


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


add = op(_binary(Add, "add"), name="add")
sub = op(_binary(Sub, "sub"), name="sub")
mul = op(_binary(Mul, "mul"), name="mul")
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


@op
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
    _no_integer_zero("div", dtype, b)
    return RoundedDiv.apply(operand_as(a, dtype), operand_as(b, dtype), rounding=rounding_mode)


def _no_integer_zero(name, dtype, divisor):
    """Integer division by zero has no answer: torch raises (numpy would give 0 and warn)."""
    values = divisor._data if isinstance(divisor, Tensor) else np.asarray(divisor)
    if np.dtype(dtype).kind in "iu" and np.any(values == 0):
        raise ArgumentError(f"{name}: integer division by zero (a {np.dtype(dtype)} divisor of 0)")


@op
def floor_divide(a, b):
    """a // b, rounded down (torch.floor_divide)."""
    return div(a, b, rounding_mode="floor")


@op
def pow(base, exponent):
    """base ** exponent; a Python-number exponent is a constant (no gradient through it)."""
    dtype = result_type(base, exponent)
    if np.dtype(dtype).kind in "iu" and np.any(np.asarray(to_array(exponent)) < 0):
        raise ArgumentError(
            f"pow: integers to negative integer powers are not allowed (an integer result cannot "
            f"hold them); got a {np.dtype(dtype)} power with exponent {exponent}. "
            "Make one side float."
        )
    if isinstance(exponent, (int, float)) and isinstance(base, Tensor):
        return PowScalar.apply(cast(base, dtype), exponent=exponent)
    check_broadcast("pow", base, exponent)
    return Pow.apply(operand_as(base, dtype), operand_as(exponent, dtype))


# -- remainders, angles, distances, interpolation -----------------------------------


@op
def reciprocal(x):
    """1 / x (a float tensor, also for an integer x)."""
    return div(1, x)


class Remainder(Function):
    """a - b * rounding(a / b): remainder (rounding floor, the sign of b, Python's %) or fmod
    (rounding toward zero, the sign of a). d/da = 1, d/db = -rounding(a / b)."""

    higher_order = "backward"

    @staticmethod
    def forward(ctx, a, b, truncate):
        ctx.save_for_backward(a, b)
        ctx.truncate = truncate
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.fmod(a, b) if truncate else np.remainder(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            quotient = (np.trunc if ctx.truncate else np.floor)(getattr(a, "_data", a) / b)
        return grad, -grad * quotient


def _remainder(truncate, name):
    def op(input, other):
        check_broadcast(name, input, other)
        dtype = result_type(input, other)
        _no_integer_zero(name, dtype, other)
        return Remainder.apply(
            operand_as(input, dtype), operand_as(other, dtype), truncate=truncate
        )

    op.__name__ = name
    op.__doc__ = (
        f"Elementwise {name}: the remainder of input / other, with the sign of "
        f"{'input (C fmod)' if truncate else 'other (Python %)'}."
    )
    return op


remainder = op(_remainder(False, "remainder"), name="remainder")
fmod = op(_remainder(True, "fmod"), name="fmod")


class Atan2(Function):
    """The angle of the point (b, a): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)."""

    higher_order = "backward"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.arctan2(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        squared = a * a + b * b
        with np.errstate(divide="ignore", invalid="ignore"):  # at (0, 0): 0, as torch
            scale = namespace(grad).where(squared == 0, 0, grad / squared)
        return scale * b, -scale * a


@op
def atan2(input, other):
    """Elementwise atan2(input, other): the angle in (-pi, pi] of the point (other, input), as
    torch.atan2 (integers give the default float)."""
    check_broadcast("atan2", input, other)
    dtype = float_result(result_type(input, other))
    return Atan2.apply(operand_as(input, dtype), operand_as(other, dtype))


class Hypot(Function):
    """y = sqrt(a^2 + b^2) without overflow; dy/da = a / y, dy/db = b / y (NaN at 0, 0, as
    torch)."""

    higher_order = "backward"

    @staticmethod
    def forward(ctx, a, b):
        y = np.hypot(a, b)
        ctx.save_for_backward(a, b, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        a, b, y = ctx.saved
        with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0 and inf / inf: NaN, as torch
            scale = grad / y
            return scale * a, scale * b


@op
def hypot(input, other):
    """Elementwise sqrt(input^2 + other^2) of two tensors (broadcast; at least one float)."""
    dtype = float_tensors("hypot", input, other)
    return Hypot.apply(cast(input, dtype), cast(other, dtype))


@op
def float_power(input, exponent):
    """input ** exponent computed in float64 (a float64 result, whatever the inputs); the
    gradients come back in each input's own dtype."""
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(
            f"float_power: expected at least one tensor; got {input!r} and {exponent!r}"
        )
    return pow(_as_float64(input), _as_float64(exponent))


def _as_float64(x):
    """A number stays a number (a constant exponent); anything else becomes a float64 tensor."""
    return float(x) if isinstance(x, (int, float)) else operand_as(x, np.float64)


@op
def true_divide(input, other):
    """input / other with a float result (torch's alias of div)."""
    return div(input, other)


class Lerp(Function):
    """start + weight (end - start), computed as torch does it: from end for |weight| >= 1/2,
    which keeps lerp(start, end, 1) == end. d/dstart = 1 - weight, d/dend = weight,
    d/dweight = end - start."""

    higher_order = "backward"

    @staticmethod
    def forward(ctx, start, end, weight):
        ctx.save_for_backward(start, end, weight)
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, as torch
            difference = end - start
            return np.where(
                np.abs(weight) < 0.5, start + weight * difference, end - difference * (1 - weight)
            )

    @staticmethod
    def backward(ctx, grad):
        start, end, weight = ctx.saved
        with np.errstate(invalid="ignore"):
            return grad * (1 - weight), grad * weight, grad * (end - start)


@op
def lerp(input, end, weight):
    """Linear interpolation input + weight (end - input), broadcast. input and end are float
    tensors of one dtype; weight is a number, a 0-d tensor, or a tensor of that dtype."""
    float_tensor("lerp", input)
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp: end must be a Tensor; got {type(end).__name__}")
    for name, x in (("end", end), ("weight", weight)):
        if isinstance(x, Tensor) and x.dtype != input.dtype and (x is end or x.ndim > 0):
            raise DTypeError(
                f"lerp: expected {name} of input's dtype {input.dtype}; got dtype {x.dtype}"
            )
    check_broadcast("lerp", input, end, weight)
    return Lerp.apply(input, end, operand_as(weight, input.dtype))


class Neg(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, grad):
        return -grad


@op
def neg(x):
    """-x elementwise (the dtype kept)."""
    return Neg.apply(x)


# -- pointwise multiply-adds: input + value * (tensor1 op tensor2) ------------------------


def _pointwise_add(op, combine, input, tensor1, tensor2, value):
    check_broadcast(op, input, tensor1, tensor2)
    dtype = result_type(input, tensor1, tensor2)
    input, tensor1, tensor2 = (operand_as(x, dtype) for x in (input, tensor1, tensor2))
    product = combine(tensor1, tensor2)
    return add(input, product if value == 1 else mul(product, value))  # value 0 keeps NaN, as torch


@op
def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2 (broadcast, torch's result dtype)."""
    return _pointwise_add("addcmul", mul, input, tensor1, tensor2, value)


@op
def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (broadcast); integer tensor1 and tensor2 are refused, as
    torch."""
    if result_type(tensor1, tensor2).kind != "f":
        raise DTypeError(
            "addcdiv: tensor1 / tensor2 of integers is not supported (as torch); "
            f"got dtypes {result_type(tensor1)} and {result_type(tensor2)}"
        )
    return _pointwise_add("addcdiv", div, input, tensor1, tensor2, value)
