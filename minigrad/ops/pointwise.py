"""The elementwise math functions, each one `unary(...)` line (the mechanism: unary.py).

A line gives the op's name, the numpy function, its derivative in terms of x and y = f(x),
and a docstring. Out of their domain (log(-1), asin(2), acosh(0.5)) they give NaN, as torch,
and so do their gradients. Rounding ops are piecewise constant: gradient 0, as torch's.
"""

import math

import numpy as np

from ..engine import Tensor
from .args import float_tensor
from .conversion import as_float, cast
from .registry import op
from .unary import _tensor, unary

# -- powers, roots, logarithms ------------------------------------------------------------

log = op(unary("log", np.log, lambda x, y, xp: 1 / x, "The natural logarithm; gradient 1 / x."))
log2 = op(
    unary(
        "log2", np.log2, lambda x, y, xp: 1 / (x * math.log(2)), "log base 2; gradient 1/(x log 2)."
    )
)
log10 = op(
    unary(
        "log10",
        np.log10,
        lambda x, y, xp: 1 / (x * math.log(10)),
        "log base 10; gradient 1/(x log 10).",
    )
)
log1p = op(unary("log1p", np.log1p, lambda x, y, xp: 1 / (1 + x), "log(1 + x), exact for small x."))
expm1 = op(
    unary("expm1", np.expm1, lambda x, y, xp: y + 1, "e^x - 1, exact for small x; gradient y + 1.")
)
exp2 = op(unary("exp2", np.exp2, lambda x, y, xp: y * math.log(2), "2^x; gradient 2^x log 2."))
sqrt = op(unary("sqrt", np.sqrt, lambda x, y, xp: 0.5 / y, "The square root; gradient 1 / (2 y)."))
rsqrt = op(
    unary(
        "rsqrt",
        lambda x: 1 / np.sqrt(x),
        lambda x, y, xp: -0.5 * y * y * y,
        "1 / sqrt(x) (inf at 0, NaN below, as torch); gradient -y^3 / 2.",
    )
)
abs = op(unary("abs", np.abs, lambda x, y, xp: xp.sign(x), "|x| (the dtype kept).", floats=False))
_square = unary(
    "square", lambda x: x * x, lambda x, y, xp: 2 * x, "x * x; gradient 2 x.", floats=False
)


@op
def square(x):
    """x * x; an integer tensor stays integer and a bool tensor becomes int64, as in torch."""
    x = _tensor(x)
    return _square(cast(x, np.int64) if x.dtype == np.bool_ else x)


# -- trigonometric and hyperbolic ---------------------------------------------------------

sin = op(unary("sin", np.sin, lambda x, y, xp: xp.cos(x), "The sine; gradient cos(x)."))
cos = op(unary("cos", np.cos, lambda x, y, xp: -xp.sin(x), "The cosine; gradient -sin(x)."))
tan = op(unary("tan", np.tan, lambda x, y, xp: 1 + y * y, "The tangent; gradient 1 + tan(x)^2."))
asin = op(
    unary(
        "asin",
        np.arcsin,
        lambda x, y, xp: 1 / xp.sqrt(1 - x * x),
        "The arcsine, in [-pi/2, pi/2]; NaN outside [-1, 1]; gradient 1 / sqrt(1 - x^2).",
    )
)
acos = op(
    unary(
        "acos",
        np.arccos,
        lambda x, y, xp: -1 / xp.sqrt(1 - x * x),
        "The arccosine, in [0, pi]; NaN outside [-1, 1]; gradient -1 / sqrt(1 - x^2).",
    )
)
atan = op(
    unary(
        "atan",
        np.arctan,
        lambda x, y, xp: 1 / (1 + x * x),
        "The arctangent, in (-pi/2, pi/2); gradient 1 / (1 + x^2).",
    )
)
sinh = op(unary("sinh", np.sinh, lambda x, y, xp: xp.cosh(x), "Hyperbolic sine; gradient cosh(x)."))
cosh = op(
    unary("cosh", np.cosh, lambda x, y, xp: xp.sinh(x), "Hyperbolic cosine; gradient sinh(x).")
)
asinh = op(
    unary(
        "asinh",
        np.arcsinh,
        lambda x, y, xp: 1 / xp.sqrt(x * x + 1),
        "The inverse hyperbolic sine; gradient 1 / sqrt(x^2 + 1).",
    )
)
acosh = op(
    unary(
        "acosh",
        np.arccosh,
        lambda x, y, xp: 1 / xp.sqrt(x * x - 1),
        "The inverse hyperbolic cosine; NaN below 1; gradient 1 / sqrt(x^2 - 1).",
    )
)
atanh = op(
    unary(
        "atanh",
        np.arctanh,
        lambda x, y, xp: 1 / (1 - x * x),
        "The inverse hyperbolic tangent; +-inf at +-1, NaN outside; gradient 1 / (1 - x^2).",
    )
)
# numpy's names, as torch has them
arcsin = op(asin, name="arcsin")
arccos = op(acos, name="arccos")
arctan = op(atan, name="arctan")
arcsinh = op(asinh, name="arcsinh")
arccosh = op(acosh, name="arccosh")
arctanh = op(atanh, name="arctanh")


def _sinc(x):
    angle = math.pi * x
    return np.where(x == 0, 1, np.sin(angle) / angle)


def _sinc_derivative(x, y, xp):
    # near 0 the quotient's x^2 underflows (0 / 0): its series, -pi^2 x / 3, is exact there
    angle = math.pi * x
    small = np.abs(x) < 1e-4
    with np.errstate(all="ignore"):
        quotient = (np.cos(angle) * angle - np.sin(angle)) / (angle * x)
    return np.where(small, -(math.pi**2 / 3) * x, quotient)


sinc = op(
    unary(
        "sinc",
        _sinc,
        _sinc_derivative,
        "The normalized sinc, sin(pi x) / (pi x), 1 at 0; gradient "
        "(cos(pi x) pi x - sin(pi x)) / (pi x^2), -pi^2 x / 3 near 0.",
        recorded=False,
    )
)


@op
def rad2deg(x):
    """Radians to degrees: x * 180 / pi (a float tensor)."""
    return as_float(x) * (180 / math.pi)


@op
def deg2rad(x):
    """Degrees to radians: x * pi / 180 (a float tensor)."""
    return as_float(x) * (math.pi / 180)


# -- rounding: piecewise constant, so the gradient is 0 (as torch's) ----------------------


def _zero(x, y, xp):
    return xp.zeros_like(x)


def _rounding(name, function, doc):
    """A rounding op: integers are already whole (torch returns them unchanged, no node); floats
    go through a Unary node whose gradient is 0."""
    node = unary(name, function, _zero, doc).node

    def apply(x, **settings):
        x = _tensor(x)
        if x.dtype.kind == "b":  # as torch: the sign of a bool is itself; the others refuse it
            if name == "sign":
                return Tensor._wrap(x._data.copy())
            raise NotImplementedError(f"{name}: not implemented for bool tensors (as in torch)")
        if x.dtype.kind != "f":
            return Tensor._wrap(np.asarray(function(x._data, **settings)).astype(x.dtype))
        return node.apply(x, **settings)

    apply.__name__, apply.__qualname__, apply.__doc__ = name, name, doc
    return apply


sign = op(_rounding("sign", np.sign, "-1, 0 or 1 by the sign of x; gradient 0."))
floor = op(_rounding("floor", np.floor, "Rounded down; gradient 0."))
ceil = op(_rounding("ceil", np.ceil, "Rounded up; gradient 0."))
trunc = op(_rounding("trunc", np.trunc, "Rounded toward zero; gradient 0."))
_round = _rounding("round", lambda x, decimals=0: np.round(x, decimals), "")


@op
def round(x, decimals=0):
    """Round half to even (as torch.round), to `decimals` decimal places; gradient 0."""
    return _round(x, decimals=decimals)


_frac = unary(
    "frac",
    lambda x: x - np.trunc(x),
    lambda x, y, xp: xp.ones_like(x),
    "The fractional part x - trunc(x), with the sign of x; gradient 1.",
)


@op
def frac(x):
    """The fractional part x - trunc(x), with the sign of x (NaN for +-inf); gradient 1. Float
    tensors only, as torch."""
    return _frac(float_tensor("frac", x))
