"""Special functions with torch's names: erf, lgamma, digamma, erfinv, logit, xlogy, logaddexp
and logaddexp2.

numpy has no erf or gamma family and scipy is not a dependency, so erf, lgamma, digamma (and
trigamma, its derivative) and erfinv are vectorised approximations here, each a few whole-array
numpy steps, accurate to about 1e-15 relative in float64 (computed in float64 for float32
inputs too). The unary ones are declared through `unary.unary`, as the other unary functions.
"""

import math

import numpy as np

from ..dtypes import float_result, result_type
from ..engine import Function, Tensor
from .args import check_broadcast, float_tensors
from .conversion import as_float, cast, operand_as
from .registry import op
from .unary import unary

# -- erf ----------------------------------------------------------------------------------


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


erf = op(
    unary(
        "erf",
        erf_array,
        lambda x, y, xp: (2 / math.sqrt(math.pi)) * xp.exp(-x * x),
        "The error function 2/sqrt(pi) * integral of exp(-t^2) from 0 to x; "
        "gradient 2/sqrt(pi) exp(-x^2).",
    )
)


# -- the gamma family ---------------------------------------------------------------------

# Lanczos' approximation with g = 7 and 9 terms: Gamma(z + 1) = sqrt(2 pi) t^(z + 1/2) e^-t A(z),
# t = z + g + 1/2, A(z) = c0 + sum_k c_k / (z + k). Relative error about 1e-15 for z >= -1/2.
LANCZOS_G = 7
LANCZOS_COEFFICIENTS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)


def lgamma_array(x):
    """log |Gamma(x)| of a float array: Lanczos for x >= 1/2; below, the reflection
    lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x). inf at 0 and the negative integers, as
    torch."""
    wide = x.astype(np.float64)
    with np.errstate(all="ignore"):
        reflected = wide < 0.5
        z = np.where(reflected, 1 - wide, wide) - 1  # z >= -1/2
        series = np.full_like(z, LANCZOS_COEFFICIENTS[0])
        for k, coefficient in enumerate(LANCZOS_COEFFICIENTS[1:], start=1):
            series += coefficient / (z + k)
        t = z + LANCZOS_G + 0.5
        result = 0.5 * math.log(2 * math.pi) + (z + 0.5) * np.log(t) - t + np.log(series)
        sine = np.abs(np.sin(math.pi * wide))
        result = np.where(reflected, np.log(math.pi / sine) - result, result)
        result = np.where(reflected & (wide == np.floor(wide)), np.inf, result)  # the poles
        result = np.where(np.isinf(wide), np.inf, result)
    return result.astype(x.dtype, copy=False)


def _shifted_up(y, term):
    """y moved up to y >= 10 in whole steps, and the sum of term(y + k) over the steps taken (the
    recurrences psi(y) = psi(y + 1) - 1/y and psi'(y) = psi'(y + 1) + 1/y^2)."""
    steps = np.where(y < 10, np.ceil(10 - y), 0)
    total = np.zeros_like(y)
    for k in range(10):
        total += np.where(k < steps, term(y + k), 0)
    return y + steps, total


def digamma_array(x):
    """ψ(x) = d/dx lgamma(x): shifted up to x >= 10 by ψ(x) = ψ(x + 1) - 1/x, then the asymptotic
    series log x - 1/(2x) - sum_k B_2k / (2k x^2k); below 0 the reflection
    ψ(x) = ψ(1 - x) - pi / tan(pi x).
    -inf at 0.0 (+inf at -0.0), NaN at the negative integers and -inf, as torch."""
    wide = x.astype(np.float64)
    with np.errstate(all="ignore"):
        negative = wide < 0
        y = np.where(negative, 1 - wide, wide)
        y, correction = _shifted_up(y, lambda z: -1 / z)
        inverse_square = 1 / (y * y)
        series = inverse_square * (
            1 / 12
            - inverse_square
            * (
                1 / 120
                - inverse_square
                * (
                    1 / 252
                    - inverse_square
                    * (
                        1 / 240
                        - inverse_square
                        * (1 / 132 - inverse_square * (691 / 32760 - inverse_square / 12))
                    )
                )
            )
        )
        result = np.log(y) - 0.5 / y - series + correction
        result = np.where(np.isposinf(y), np.inf, result)
        result = np.where(negative, result - math.pi / np.tan(math.pi * wide), result)
        result = np.where(negative & (wide == np.floor(wide)), np.nan, result)
        result = np.where(wide == 0, np.copysign(np.inf, -wide), result)
    return result.astype(x.dtype, copy=False)


def trigamma_array(x):
    """ψ'(x), the derivative of digamma: shifted up to x >= 10 by ψ'(x) = ψ'(x + 1) + 1/x^2, then
    1/x + 1/(2x^2) + sum_k B_2k / x^(2k+1); below 0 the reflection
    ψ'(x) = pi^2 / sin^2(pi x) - ψ'(1 - x)."""
    wide = x.astype(np.float64)
    with np.errstate(all="ignore"):
        negative = wide < 0
        y = np.where(negative, 1 - wide, wide)
        y, correction = _shifted_up(y, lambda z: 1 / (z * z))
        inverse = 1 / y
        inverse_square = inverse * inverse
        series = inverse * (
            1
            + inverse
            * (
                0.5
                + inverse
                * (
                    1 / 6
                    - inverse_square
                    * (
                        1 / 30
                        - inverse_square
                        * (
                            1 / 42
                            - inverse_square
                            * (1 / 30 - inverse_square * (5 / 66 - inverse_square * 691 / 2730))
                        )
                    )
                )
            )
        )
        result = series + correction
        result = np.where(np.isposinf(y), 0.0, result)
        result = np.where(negative, (math.pi / np.sin(math.pi * wide)) ** 2 - result, result)
        result = np.where(wide == 0, np.inf, result)
    return result.astype(x.dtype, copy=False)


lgamma = op(
    unary(
        "lgamma",
        lgamma_array,
        lambda x, y, xp: digamma_array(x),
        "log |Gamma(x)| elementwise (inf at the poles 0, -1, -2 ...); gradient digamma(x).",
        recorded=False,
    )
)
digamma = op(
    unary(
        "digamma",
        digamma_array,
        lambda x, y, xp: trigamma_array(x),
        "The digamma function psi(x) = d/dx lgamma(x); gradient polygamma(1, x) (trigamma).",
        recorded=False,
    )
)


# -- erfinv -------------------------------------------------------------------------------


def erfinv_array(y):
    """The x with erf(x) = y, for y in [-1, 1] (+-inf at +-1, NaN outside): Giles' single
    precision polynomials in w = -log(1 - y^2) (2010), then Newton steps, which double the correct
    digits each. For |y| < 1/2 they solve erf(x) = |y|; above, log erfc(x) = log(1 - |y|) (1 - |y|
    is exact in floats there, and the log is nearly linear far out where Giles' guess is rough),
    so the tails near +-1 keep their relative precision."""
    wide = y.astype(np.float64)
    size = np.abs(wide)
    with np.errstate(all="ignore"):
        w = -np.log((1 - size) * (1 + size))
        central, tail = w - 2.5, np.sqrt(w) - 3
        near = np.polyval(
            [
                2.81022636e-08,
                3.43273939e-07,
                -3.5233877e-06,
                -4.39150654e-06,
                0.00021858087,
                -0.00125372503,
                -0.00417768164,
                0.246640727,
                1.50140941,
            ],
            central,
        )
        far = np.polyval(
            [
                -0.000200214257,
                0.000100950558,
                0.00134934322,
                -0.00367342844,
                0.00573950773,
                -0.0076224613,
                0.00943887047,
                1.00167406,
                2.83297682,
            ],
            tail,
        )
        inside = size < 1
        # 0 keeps the steps finite at the ends
        x = np.where(inside, np.where(w < 5, near, far) * size, 0.0)
        central = size < 0.5
        for _ in range(4):
            slope = (2 / math.sqrt(math.pi)) * np.exp(-x * x)  # d erf / dx
            erfc = np.where(x < 2, 1 - erf_array(x), erfc_far(np.maximum(x, 2)))
            x = np.where(
                central,
                x - (erf_array(x) - size) / slope,
                x + (np.log(erfc) - np.log1p(-size)) * erfc / slope,
            )
        x = np.where(inside, x, np.where(size == 1, np.inf, np.nan))
    return np.copysign(x, wide).astype(y.dtype, copy=False)


erfinv = op(
    unary(
        "erfinv",
        erfinv_array,
        lambda x, y, xp: math.sqrt(math.pi) / 2 * xp.exp(y * y),
        "The inverse of erf on [-1, 1] (+-inf at +-1, NaN outside); "
        "gradient sqrt(pi)/2 exp(erfinv(x)^2).",
    )
)


# -- logit, xlogy, logaddexp --------------------------------------------------------------


class Logit(Function):
    """y = log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given. dy/dx =
    1 / (x (1 - x)); as torch: NaN outside [0, 1] without eps, 0 outside [eps, 1 - eps] with it
    (NaN at NaN)."""

    @staticmethod
    def forward(ctx, x, eps):
        ctx.save_for_backward(x)
        ctx.eps = eps
        clamped = x if eps is None else np.clip(x, eps, 1 - eps)
        with np.errstate(all="ignore"):
            return np.log(clamped / (1 - clamped))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        eps = ctx.eps
        with np.errstate(all="ignore"):
            slope = grad / (x * (1 - x))
        if eps is None:
            return np.where((x < 0) | (x > 1), np.nan, slope)
        # NaN stays NaN (torch's scalar kernel)
        return np.where((x < eps) | (x > 1 - eps), 0, slope)


@op
def logit(x, eps=None):
    """The inverse of sigmoid, log(x / (1 - x)) elementwise; with eps, x is clamped to
    [eps, 1 - eps] first (torch.logit)."""
    return Logit.apply(as_float(x), eps=None if eps is None else float(eps))


class Xlogy(Function):
    """y = x log(other), 0 where x == 0 (unless other is NaN), as torch.xlogy.
    dy/dx = log(other) (also at x == 0; 0 where x == 0 and other <= 0, as torch);
    dy/dother = x / other."""

    @staticmethod
    def forward(ctx, x, other):
        ctx.save_for_backward(x, other)
        with np.errstate(all="ignore"):
            return np.where((x == 0) & ~np.isnan(other), 0, x * np.log(other))

    @staticmethod
    def backward(ctx, grad):
        x, other = ctx.saved
        with np.errstate(all="ignore"):
            scaled = np.where((grad == 0) & ~np.isnan(other), 0, grad * np.log(other))
            grad_x = np.where((x == 0) & (other <= 0), 0, scaled)
            return grad_x, grad * x / other


@op
def xlogy(input, other):
    """Elementwise input * log(other), 0 where input is 0 (tensors or numbers, broadcast; a float
    result)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(f"xlogy: expected at least one tensor; got {input!r} and {other!r}")
    check_broadcast("xlogy", input, other)
    dtype = float_result(result_type(input, other))
    return Xlogy.apply(operand_as(input, dtype), operand_as(other, dtype))


class LogAddExp(Function):
    """y = log(e^a + e^b) (base 2 in logaddexp2: log2(2^a + 2^b)) without overflow:
    max(a, b) + log(1 + e^-|a - b|). dy/da = 1 / (1 + e^(b - a)), dy/db = 1 / (1 + e^(a - b))
    (NaN where a == b == +-inf, as torch)."""

    @staticmethod
    def forward(ctx, a, b, base):
        ctx.save_for_backward(a, b)
        ctx.base = base
        with np.errstate(all="ignore"):
            larger = np.maximum(a, b)
            if base == 2:
                y = larger + np.log1p(np.exp2(-np.abs(a - b))) / math.log(2)
            else:
                y = larger + np.log1p(np.exp(-np.abs(a - b)))
            # inf - inf inside: the sum is the infinity
            return np.where(np.isinf(a) & (a == b), a, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        power = np.exp2 if ctx.base == 2 else np.exp
        with np.errstate(all="ignore"):
            return grad / (1 + power(b - a)), grad / (1 + power(a - b))


@op
def logaddexp(input, other):
    """Elementwise log(exp(input) + exp(other)) of two tensors, without overflow."""
    dtype = float_tensors("logaddexp", input, other)
    return LogAddExp.apply(cast(input, dtype), cast(other, dtype), base=math.e)


@op
def logaddexp2(input, other):
    """Elementwise log2(2^input + 2^other) of two tensors, without overflow."""
    dtype = float_tensors("logaddexp2", input, other)
    return LogAddExp.apply(cast(input, dtype), cast(other, dtype), base=2)
