"""More elementwise ops with torch's names: the inverse trigonometric and the hyperbolic
functions (asin ... atanh, with torch's arcsin ... aliases), tan, exp2, sinc, rad2deg/deg2rad,
frac, hypot, copysign, float_power, true_divide, lerp, nan_to_num; and signbit and heaviside,
which give no gradient.

Float-valued ops on int or bool tensors give the default float dtype, as in torch. Out of
their domain (asin(2), acosh(0.5)) they give NaN, as torch, and so do their gradients.
"""

import math

import numpy as np

from ..dtypes import float_result, result_type
from ..errors import DTypeError
from ..tensor import Function, Tensor
from .args import check_broadcast
from .elementwise import as_float, cast, div, operand_as, pow


class Pointwise(Function):
    """y = function(x) elementwise, with the local gradient dy/dx = derivative(x, y).

    Each op is a subclass (made by `unary`) naming its own pair, so a graph shows `Asin`,
    not a generic node."""

    @staticmethod
    def function(x):
        raise NotImplementedError

    @staticmethod
    def derivative(x, y):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, x):
        with np.errstate(
            all="ignore"
        ):  # out of the domain: NaN (or inf at a pole), as torch, no warning
            y = np.asarray(cls.function(x)).astype(x.dtype, copy=False)
        ctx.save_for_backward(x, y)
        return y

    @classmethod
    def backward(cls, ctx, grad):
        x, y = ctx.saved
        with np.errstate(all="ignore"):
            return grad * cls.derivative(x, y)


def unary(name, function, derivative, doc):
    """The Pointwise subclass of function/derivative and the lowercase op that applies it to a
    float tensor (int and bool inputs become the default float)."""
    node = type(
        name.capitalize(),
        (Pointwise,),
        {"function": staticmethod(function), "derivative": staticmethod(derivative)},
    )

    def op(x):
        return node.apply(as_float(x))

    op.__name__, op.__doc__ = name, doc
    return op


# -- trigonometric and hyperbolic ---------------------------------------------------------

asin = unary(
    "asin",
    np.arcsin,
    lambda x, y: 1 / np.sqrt(1 - x * x),
    "Elementwise arcsine, in [-pi/2, pi/2]; NaN outside [-1, 1]; gradient 1 / sqrt(1 - x^2).",
)
acos = unary(
    "acos",
    np.arccos,
    lambda x, y: -1 / np.sqrt(1 - x * x),
    "Elementwise arccosine, in [0, pi]; NaN outside [-1, 1]; gradient -1 / sqrt(1 - x^2).",
)
atan = unary(
    "atan",
    np.arctan,
    lambda x, y: 1 / (1 + x * x),
    "Elementwise arctangent, in (-pi/2, pi/2); gradient 1 / (1 + x^2).",
)
tan = unary("tan", np.tan, lambda x, y: 1 + y * y, "Elementwise tangent; gradient 1 + tan(x)^2.")
sinh = unary(
    "sinh", np.sinh, lambda x, y: np.cosh(x), "Elementwise hyperbolic sine; gradient cosh(x)."
)
cosh = unary(
    "cosh", np.cosh, lambda x, y: np.sinh(x), "Elementwise hyperbolic cosine; gradient sinh(x)."
)
asinh = unary(
    "asinh",
    np.arcsinh,
    lambda x, y: 1 / np.sqrt(x * x + 1),
    "Elementwise inverse hyperbolic sine; gradient 1 / sqrt(x^2 + 1).",
)
acosh = unary(
    "acosh",
    np.arccosh,
    lambda x, y: 1 / np.sqrt(x * x - 1),
    "Elementwise inverse hyperbolic cosine; NaN below 1; gradient 1 / sqrt(x^2 - 1).",
)
atanh = unary(
    "atanh",
    np.arctanh,
    lambda x, y: 1 / (1 - x * x),
    "Elementwise inverse hyperbolic tangent; +-inf at +-1, NaN outside; gradient 1 / (1 - x^2).",
)
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = (
    asin,
    acos,
    atan,
    asinh,
    acosh,
    atanh,
)  # numpy's names, as torch


def _sinc(x):
    angle = math.pi * x
    return np.where(x == 0, 1, np.sin(angle) / angle)


def _sinc_derivative(x, y):
    angle = math.pi * x
    return np.where(x == 0, 0, (np.cos(angle) * angle - np.sin(angle)) / (angle * x))


sinc = unary(
    "sinc",
    _sinc,
    _sinc_derivative,
    "The normalized sinc, sin(pi x) / (pi x), 1 at 0; gradient (cos(pi x) pi x - sin(pi x)) / (pi x^2), 0 at 0.",
)
exp2 = unary("exp2", np.exp2, lambda x, y: y * math.log(2), "Elementwise 2^x; gradient 2^x log 2.")


def rad2deg(x):
    """Radians to degrees: x * 180 / pi (a float tensor)."""
    return as_float(x) * (180 / math.pi)


def deg2rad(x):
    """Degrees to radians: x * pi / 180 (a float tensor)."""
    return as_float(x) * (math.pi / 180)


# -- parts, signs, distances --------------------------------------------------------------


def _float_tensor(op, x, name="input"):
    """x must be a float tensor (torch has no integer kernel for these ops)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: {name} must be a Tensor; got {type(x).__name__}")
    if x.dtype.kind != "f":
        raise DTypeError(f"{op}: expected a float32 or float64 {name}; got dtype {x.dtype}")
    return x


_frac = unary(
    "frac",
    lambda x: x - np.trunc(x),
    lambda x, y: np.ones_like(x),
    "The fractional part x - trunc(x), with the sign of x; gradient 1.",
)


def frac(x):
    """The fractional part x - trunc(x), with the sign of x (NaN for +-inf); gradient 1. Float
    tensors only, as torch."""
    return _frac(_float_tensor("frac", x))


def float_tensors(op, input, other):
    """The two operands of a binary float op that torch takes only as tensors (hypot, logaddexp),
    cast to their common float dtype; two integer tensors are refused, as torch."""
    for name, x in (("input", input), ("other", other)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor (as torch); got {type(x).__name__}")
    check_broadcast(op, input, other)
    dtype = result_type(input, other)
    if dtype.kind != "f":
        raise DTypeError(
            f"{op}: expected at least one float32 or float64 tensor; got dtypes {input.dtype} "
            f"and {other.dtype}"
        )
    return cast(input, dtype), cast(other, dtype)


class Hypot(Function):
    """y = sqrt(a^2 + b^2) without overflow; dy/da = a / y, dy/db = b / y (NaN at 0, 0, as torch)."""

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


def hypot(input, other):
    """Elementwise sqrt(input^2 + other^2) of two tensors (broadcast; at least one float)."""
    return Hypot.apply(*float_tensors("hypot", input, other))


class Copysign(Function):
    """|a| with the sign of b (also of -0.0 and NaN's sign bit). d/da = y / a (+-1), 0 where
    a == 0, as torch; d/db = 0."""

    @staticmethod
    def forward(ctx, a, b):
        y = np.copysign(a, b)
        ctx.save_for_backward(a, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        a, y = ctx.saved
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(a == 0, 0, grad * (y / a)), np.zeros_like(grad)


def copysign(input, other):
    """Elementwise |input| with the sign of other (a tensor or a number); a float result."""
    if not isinstance(input, Tensor):
        raise TypeError(f"copysign: input must be a Tensor; got {type(input).__name__}")
    check_broadcast("copysign", input, other)
    dtype = float_result(result_type(input, other))
    return Copysign.apply(operand_as(input, dtype), operand_as(other, dtype))


def signbit(x):
    """True where the sign bit is set (negative numbers, -0.0, -inf, NaNs with the bit): a bool
    tensor, no gradient."""
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    return Tensor._wrap(np.zeros(data.shape, bool) if data.dtype == np.bool_ else np.signbit(data))


class Heaviside(Function):
    """1 where x > 0, values where x == 0, 0 where x < 0 (and where x is NaN, as torch).
    torch defines no derivative: backward raises, as torch's does."""

    @staticmethod
    def forward(ctx, x, values):
        return np.where(x == 0, values, x > 0).astype(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError("the derivative of heaviside is not implemented (as in torch)")


def heaviside(input, values):
    """The Heaviside step of input, with `values` (a tensor of input's dtype that broadcasts) where
    input is 0. Its output takes part in no gradient: backward through it raises, as in torch."""
    for name, x in (("input", input), ("values", values)):
        if not isinstance(x, Tensor):
            raise TypeError(
                f"heaviside: {name} must be a Tensor (as torch); got {type(x).__name__}"
            )
    if input.dtype != values.dtype:
        raise DTypeError(
            f"heaviside: input and values must have the same dtype; got {input.dtype} and {values.dtype}"
        )
    check_broadcast("heaviside", input, values)
    return Heaviside.apply(input, values)


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


def true_divide(input, other):
    """input / other with a float result (torch's alias of div)."""
    return div(input, other)


# -- lerp and nan_to_num ------------------------------------------------------------------


class Lerp(Function):
    """start + weight (end - start), computed as torch does it: from end for |weight| >= 1/2,
    which keeps lerp(start, end, 1) == end. d/dstart = 1 - weight, d/dend = weight,
    d/dweight = end - start."""

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


def lerp(input, end, weight):
    """Linear interpolation input + weight (end - input), broadcast. input and end are float
    tensors of one dtype; weight is a number, a 0-d tensor, or a tensor of that dtype."""
    _float_tensor("lerp", input)
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp: end must be a Tensor; got {type(end).__name__}")
    for name, x in (("end", end), ("weight", weight)):
        if isinstance(x, Tensor) and x.dtype != input.dtype and (x is end or x.ndim > 0):
            raise DTypeError(
                f"lerp: expected {name} of input's dtype {input.dtype}; got dtype {x.dtype}"
            )
    check_broadcast("lerp", input, end, weight)
    return Lerp.apply(input, end, operand_as(weight, input.dtype))


class NanToNum(Function):
    """NaN, +inf and -inf replaced by numbers; the gradient passes where x is finite, 0 elsewhere."""

    @staticmethod
    def forward(ctx, x, nan, posinf, neginf):
        ctx.finite = np.isfinite(x)
        return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.finite


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """A copy of input with NaN as `nan`, +inf as `posinf` and -inf as `neginf` (by default the
    largest and the lowest finite value of the dtype). Integer and bool tensors come back as they are."""
    if not isinstance(input, Tensor):
        raise TypeError(f"nan_to_num: input must be a Tensor; got {type(input).__name__}")
    if input.dtype.kind != "f":
        return Tensor._wrap(input._data.copy())
    largest = np.finfo(input.dtype)
    return NanToNum.apply(
        input,
        nan=nan,
        posinf=largest.max if posinf is None else posinf,
        neginf=largest.min if neginf is None else neginf,
    )
