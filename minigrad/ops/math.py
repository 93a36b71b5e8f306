"""More elementwise ops with torch's names: sin, cos, erf, rsqrt, square, log1p, expm1;
clamp and maximum/minimum (whose gradient goes to whichever operand won); and the tests that
give bool tensors and no gradient (isnan, isinf, isfinite, logical_and/or/xor/not).

Float-valued ops on int or bool tensors give the default float dtype, as in torch.
"""

import math

import numpy as np

from ..errors import ArgumentError
from ..dtypes import NUMBERS, float_result, result_type
from ..tensor import Function, Tensor
from .args import as_array, check_broadcast
from .elementwise import operand_as, as_float, cast, div

# -- float-valued unary ops ---------------------------------------------------------------


class Sin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.sin(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad * np.cos(x)


class Cos(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.cos(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return -grad * np.sin(x)


class Rsqrt(Function):
    """y = 1 / sqrt(x); dy/dx = -y^3 / 2."""

    @staticmethod
    def forward(ctx, x):
        with np.errstate(
            divide="ignore", invalid="ignore"
        ):  # rsqrt(0) = inf, rsqrt(-1) = nan, as torch
            y = 1 / np.sqrt(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return -0.5 * grad * y * y * y


class Log1p(Function):
    """y = log(1 + x), exact for small x; dy/dx = 1 / (1 + x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.log1p(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad / (1 + x)


class Expm1(Function):
    """y = exp(x) - 1, exact for small x; dy/dx = y + 1."""

    @staticmethod
    def forward(ctx, x):
        y = np.expm1(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad * (y + 1)


class Erf(Function):
    """y = erf(x) = 2/sqrt(pi) * integral of exp(-t^2) from 0 to x; dy/dx = 2/sqrt(pi) exp(-x^2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return erf_array(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad * (2 / math.sqrt(math.pi)) * np.exp(-x * x)


def erf_array(x):
    """erf of a float array, within a few ulps of float64 (numpy has no erf).

    |x| < 2: erf(x) = 2/sqrt(pi) exp(-x^2) sum_n (2 x^2)^n x / (1 * 3 * ... * (2n + 1)), a
    series of positive terms (no cancellation; 32 terms reach float64 precision at |x| = 2).
    |x| >= 2: 1 - erfc(x), with erfc(x) = exp(-x^2) / sqrt(pi) / (x + (1/2) / (x + (2/2) / (x +
    (3/2) / (x + ...)))), Laplace's continued fraction (Abramowitz & Stegun 7.1.14), evaluated
    from 48 levels deep. float32 needs 20 terms and 20 levels (error 5e-9). Each loop runs over
    terms, a whole-array numpy step each, on the elements of its own range only.
    """
    terms, levels = (32, 48) if x.dtype == np.float64 else (20, 20)
    wide = x.astype(np.float64)
    size = np.abs(wide)
    result = np.empty_like(wide)
    small = size < 2.0
    near = size[small]
    term, total, ratio = near, near, 2 * near * near
    for n in range(1, terms):
        term = term * ratio / (2 * n + 1)
        total = total + term
    result[small] = (2 / math.sqrt(math.pi)) * np.exp(-near * near) * total
    result[~small] = 1 - erfc_far(size[~small], levels)  # |x| >= 2, inf and nan
    return np.copysign(result, wide).astype(x.dtype, copy=False)


def erfc_far(far, levels=48):
    """erfc(x) = 1 - erf(x) for float64 x >= 2 (inf and nan too), to full relative precision
    (erfinv's tail needs it): the continued fraction of erf_array, `levels` deep."""
    fraction = far
    for k in range(levels, 0, -1):
        fraction = far + (k / 2) / fraction
    with np.errstate(invalid="ignore"):  # inf / inf where x = inf: erfc is 0 there
        erfc = np.exp(-far * far) / (math.sqrt(math.pi) * fraction)
    return np.where(np.isinf(far), 0.0, erfc)


def sin(x):
    return Sin.apply(as_float(x))


def cos(x):
    return Cos.apply(as_float(x))


def erf(x):
    return Erf.apply(as_float(x))


def rsqrt(x):
    return Rsqrt.apply(as_float(x))


class LogBase(Function):
    """y = log(x) / log(base) (log2, log10); dy/dx = 1 / (x log(base))."""

    @staticmethod
    def forward(ctx, x, base):
        ctx.save_for_backward(x)
        ctx.log_base = np.log(x.dtype.type(base))
        return np.log2(x) if base == 2 else np.log10(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad / (x * ctx.log_base)


def log2(x):
    return LogBase.apply(as_float(x), base=2)


def log10(x):
    return LogBase.apply(as_float(x), base=10)


def log1p(x):
    return Log1p.apply(as_float(x))


def expm1(x):
    return Expm1.apply(as_float(x))


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return 2 * grad * x


def square(x):
    """x * x; an integer tensor stays integer and a bool tensor becomes int64, as in torch."""
    x = _tensor(x)
    return Square.apply(cast(x, np.int64) if x.dtype == np.bool_ else x)


# -- rounding and remainders --------------------------------------------------------------


class Step(Function):
    """sign, floor, ceil, round, trunc: piecewise constant, so the gradient is 0 (as torch's)."""

    @staticmethod
    def forward(ctx, x, function):
        return function(x)

    @staticmethod
    def backward(ctx, grad):
        return np.zeros_like(grad)


def _step(function, name):
    def op(x):
        x = _tensor(x)
        if x.dtype.kind != "f":  # integers are already whole: torch returns them unchanged
            return Tensor._wrap(np.asarray(function(x._data)).astype(x.dtype, copy=False))
        return Step.apply(x, function=function)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name}; the gradient is 0 (the function is piecewise constant)."
    return op


sign = _step(np.sign, "sign")
floor = _step(np.floor, "floor")
ceil = _step(np.ceil, "ceil")
trunc = _step(np.trunc, "trunc")


def round(x, decimals=0):
    """Round half to even (as torch.round), to `decimals` decimal places; gradient 0."""
    return _step(lambda data: np.round(data, decimals), "round")(x)


def reciprocal(x):
    """1 / x (a float tensor, also for an integer x)."""
    return div(1, x)


class Remainder(Function):
    """a - b * rounding(a / b): remainder (rounding floor, the sign of b, Python's %) or fmod
    (rounding toward zero, the sign of a). d/da = 1, d/db = -rounding(a / b)."""

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
            quotient = (np.trunc if ctx.truncate else np.floor)(a / b)
        return grad, -grad * quotient


def _remainder(truncate, name):
    def op(input, other):
        check_broadcast(name, input, other)
        dtype = result_type(input, other)
        return Remainder.apply(
            operand_as(input, dtype), operand_as(other, dtype), truncate=truncate
        )

    op.__name__ = name
    op.__doc__ = (
        f"Elementwise {name}: the remainder of input / other, with the sign of "
        f"{'input (C fmod)' if truncate else 'other (Python %)'}."
    )
    return op


remainder = _remainder(False, "remainder")
fmod = _remainder(True, "fmod")


class Atan2(Function):
    """The angle of the point (b, a): d/da = b / (a^2 + b^2), d/db = -a / (a^2 + b^2)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return np.arctan2(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = grad / (a * a + b * b)
        return scale * b, -scale * a


def atan2(input, other):
    """Elementwise atan2(input, other): the angle in (-pi, pi] of the point (other, input), as
    torch.atan2 (integers give the default float)."""
    check_broadcast("atan2", input, other)
    dtype = float_result(result_type(input, other))
    return Atan2.apply(operand_as(input, dtype), operand_as(other, dtype))


# -- clamp, maximum, minimum --------------------------------------------------------------


class Clamp(Function):
    """y = min(max(x, low), high) with tensor bounds (has_low/has_high False: no bound there).
    The gradient goes where torch sends it: to x where low <= x <= high, to low where
    x < low < high, to high where x > high or high < low (then every output is high); where
    x < low == high, to none of them."""

    @staticmethod
    def forward(ctx, x, low, high, has_low, has_high):
        y = x
        if has_low:
            y = np.maximum(y, low)
        if has_high:
            y = np.minimum(y, high)
        ctx.save_for_backward(x, low, high)
        ctx.has_low, ctx.has_high = has_low, has_high
        return y

    @staticmethod
    def backward(ctx, grad):
        x, low, high = ctx.saved
        passes = np.ones(x.shape, dtype=bool)
        if ctx.has_low:
            passes = passes & (x >= low)
        if ctx.has_high:
            passes = passes & (x <= high)
        grad_x = np.where(passes, grad, 0)
        grad_low = grad_high = None
        if ctx.has_low and ctx.needs_input_grad[1]:
            low_wins = x < low
            if ctx.has_high:
                low_wins = low_wins & (low < high)
            grad_low = np.where(low_wins, grad, 0)
        if ctx.has_high and ctx.needs_input_grad[2]:
            high_wins = x > high
            if ctx.has_low:
                high_wins = high_wins | (high < low)
            grad_high = np.where(high_wins, grad, 0)
        return grad_x, grad_low, grad_high


def clamp(x, min=None, max=None):
    """Elementwise min(max(x, min), max); either bound may be None, a number or a tensor that
    broadcasts with x. Where min > max every element is max, as in torch."""
    if min is None and max is None:
        raise ArgumentError("clamp: at least one of min and max must be given (not None)")
    x = _tensor(x)
    bounds = [b for b in (min, max) if b is not None]
    check_broadcast("clamp", x, *bounds)
    dtype = result_type(x, *bounds)
    zero = Tensor._wrap(np.zeros((), dtype))  # stands for a missing bound (never read)
    low = zero if min is None else operand_as(min, dtype)
    high = zero if max is None else operand_as(max, dtype)
    return Clamp.apply(cast(x, dtype), low, high, has_low=min is not None, has_high=max is not None)


clip = clamp


class Extremum(Function):
    """maximum(a, b) (or minimum): the winner gets the gradient; a tie splits it in halves (torch)."""

    @staticmethod
    def forward(ctx, a, b, pick):
        ctx.save_for_backward(a, b)
        ctx.pick = pick
        return pick(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        shared = np.where(
            a == b, grad / 2, grad
        )  # where a NaN meets a number both get all of it (torch)
        a_loses, b_loses = (a < b, b < a) if ctx.pick is np.maximum else (a > b, b > a)
        return np.where(a_loses, 0, shared), np.where(b_loses, 0, shared)


def _extremum(pick, name):
    def op(input, other):
        if not isinstance(input, Tensor) or not isinstance(other, Tensor):
            raise TypeError(
                f"{name}: both arguments must be tensors (as in torch; use clamp for a number); "
                f"got {type(input).__name__} and {type(other).__name__}"
            )
        check_broadcast(name, input, other)
        dtype = result_type(input, other)
        return Extremum.apply(cast(input, dtype), cast(other, dtype), pick=pick)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} of two tensors (broadcast); NaN wins, as in torch."
    return op


maximum = _extremum(np.maximum, "maximum")
minimum = _extremum(np.minimum, "minimum")


# -- tests: bool results, no gradient -----------------------------------------------------


def _tensor(x):
    return x if isinstance(x, Tensor) else Tensor._wrap(as_array(x))


def _test(ufunc, x):
    return Tensor._wrap(np.asarray(ufunc(_tensor(x)._data)))


def isnan(x):
    return _test(np.isnan, x)


def isinf(x):
    return _test(np.isinf, x)


def isfinite(x):
    return _test(np.isfinite, x)


def logical_not(x):
    return _test(np.logical_not, x)


def _logical(ufunc, name):
    def op(input, other):
        a, b = (v._data if isinstance(v, Tensor) else v for v in (input, other))
        if isinstance(a, NUMBERS) and isinstance(b, NUMBERS):
            raise TypeError(f"{name}: expected at least one tensor; got {a!r} and {b!r}")
        check_broadcast(name, a, b)
        return Tensor._wrap(np.asarray(ufunc(a, b)))

    op.__name__ = name
    op.__doc__ = (
        f"Elementwise {name} of the truth values (nonzero is true): a bool tensor, no gradient."
    )
    return op


logical_and = _logical(np.logical_and, "logical_and")
logical_or = _logical(np.logical_or, "logical_or")
logical_xor = _logical(np.logical_xor, "logical_xor")
