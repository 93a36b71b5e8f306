"""Unary elementwise functions: y = f(x) element by element, with the local gradient f'(x).

Three are written out in full as worked examples of a Function (Exp, Tanh, Sigmoid: each saves
its output, which is all its backward needs), and two more for speed and memory on the training
path (Neg saves nothing, Relu one bool mask). Every other op here is one `unary(...)`
declaration: a name, the numpy function, its derivative in terms of x and y, and a docstring.

Float-valued ops on int or bool tensors give the default float dtype, as in torch. Out of
their domain (log(-1), asin(2), acosh(0.5)) they give NaN, as torch, and so do their gradients.
"""

import math

import numpy as np

from ..tensor import Function, Tensor
from .args import as_array, float_tensor
from .conversion import as_float, cast
from .registry import op

# -- worked examples ----------------------------------------------------------------------


class Exp(Function):
    """y = e^x; dy/dx = e^x = y, so forward keeps y for backward."""

    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad * y


class Tanh(Function):
    """y = tanh(x); dy/dx = 1 - y^2."""

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
    """y = 1 / (1 + e^-x); dy/dx = y (1 - y)."""

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


class Neg(Function):
    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Relu(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x > 0)
        return np.maximum(x, 0)

    @staticmethod
    def backward(ctx, grad):
        (positive,) = ctx.saved
        return grad * positive


@op
def exp(x):
    """e^x elementwise."""
    return Exp.apply(as_float(x))


@op
def tanh(x):
    """The hyperbolic tangent elementwise."""
    return Tanh.apply(as_float(x))


@op
def sigmoid(x):
    """1 / (1 + e^-x) elementwise."""
    return Sigmoid.apply(as_float(x))


@op
def neg(x):
    """-x elementwise (the dtype kept)."""
    return Neg.apply(x)


@op
def relu(x):
    """max(x, 0) elementwise (the dtype kept); gradient 1 where x > 0, else 0."""
    return Relu.apply(x)


# -- the mechanism ------------------------------------------------------------------------


class Unary(Function):
    """y = function(x) elementwise, with the local gradient dy/dx = derivative(x, y).

    Each op is a subclass (made by `unary`) naming its own pair, so a graph shows `Asin`,
    not a generic node. Keyword settings given to apply (round's decimals) go to function."""

    @staticmethod
    def function(x, **settings):
        raise NotImplementedError

    @staticmethod
    def derivative(x, y):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, x, **settings):
        with np.errstate(all="ignore"):  # out of the domain: NaN (or inf at a pole), no warning
            y = np.asarray(cls.function(x, **settings)).astype(x.dtype, copy=False)
        ctx.save_for_backward(x, y)
        return y

    @classmethod
    def backward(cls, ctx, grad):
        x, y = ctx.saved
        with np.errstate(all="ignore"):
            return grad * cls.derivative(x, y)


def unary(name, function, derivative, doc, floats=True):
    """The Unary subclass of function/derivative and the lowercase op that applies it. With
    floats (the default), int and bool inputs become the default float; else the dtype is kept."""
    node = type(
        name.capitalize(),
        (Unary,),
        {"function": staticmethod(function), "derivative": staticmethod(derivative)},
    )

    def apply(x):
        return node.apply(as_float(x) if floats else _tensor(x))

    apply.__name__, apply.__qualname__, apply.__doc__ = name, name, doc
    apply.node = node
    return apply


def _tensor(x):
    return x if isinstance(x, Tensor) else Tensor._wrap(as_array(x))


# -- powers, roots, logarithms ------------------------------------------------------------

log = op(unary("log", np.log, lambda x, y: 1 / x, "The natural logarithm; gradient 1 / x."))
log2 = op(
    unary("log2", np.log2, lambda x, y: 1 / (x * math.log(2)), "log base 2; gradient 1/(x log 2).")
)
log10 = op(
    unary(
        "log10",
        np.log10,
        lambda x, y: 1 / (x * math.log(10)),
        "log base 10; gradient 1/(x log 10).",
    )
)
log1p = op(unary("log1p", np.log1p, lambda x, y: 1 / (1 + x), "log(1 + x), exact for small x."))
expm1 = op(
    unary("expm1", np.expm1, lambda x, y: y + 1, "e^x - 1, exact for small x; gradient y + 1.")
)
exp2 = op(unary("exp2", np.exp2, lambda x, y: y * math.log(2), "2^x; gradient 2^x log 2."))
sqrt = op(unary("sqrt", np.sqrt, lambda x, y: 0.5 / y, "The square root; gradient 1 / (2 y)."))
rsqrt = op(
    unary(
        "rsqrt",
        lambda x: 1 / np.sqrt(x),
        lambda x, y: -0.5 * y * y * y,
        "1 / sqrt(x) (inf at 0, NaN below, as torch); gradient -y^3 / 2.",
    )
)
abs = op(unary("abs", np.abs, lambda x, y: np.sign(x), "|x| (the dtype kept).", floats=False))
_square = unary("square", lambda x: x * x, lambda x, y: 2 * x, "x * x; gradient 2 x.", floats=False)


@op
def square(x):
    """x * x; an integer tensor stays integer and a bool tensor becomes int64, as in torch."""
    x = _tensor(x)
    return _square(cast(x, np.int64) if x.dtype == np.bool_ else x)


# -- trigonometric and hyperbolic ---------------------------------------------------------

sin = op(unary("sin", np.sin, lambda x, y: np.cos(x), "The sine; gradient cos(x)."))
cos = op(unary("cos", np.cos, lambda x, y: -np.sin(x), "The cosine; gradient -sin(x)."))
tan = op(unary("tan", np.tan, lambda x, y: 1 + y * y, "The tangent; gradient 1 + tan(x)^2."))
asin = op(
    unary(
        "asin",
        np.arcsin,
        lambda x, y: 1 / np.sqrt(1 - x * x),
        "The arcsine, in [-pi/2, pi/2]; NaN outside [-1, 1]; gradient 1 / sqrt(1 - x^2).",
    )
)
acos = op(
    unary(
        "acos",
        np.arccos,
        lambda x, y: -1 / np.sqrt(1 - x * x),
        "The arccosine, in [0, pi]; NaN outside [-1, 1]; gradient -1 / sqrt(1 - x^2).",
    )
)
atan = op(
    unary(
        "atan",
        np.arctan,
        lambda x, y: 1 / (1 + x * x),
        "The arctangent, in (-pi/2, pi/2); gradient 1 / (1 + x^2).",
    )
)
sinh = op(unary("sinh", np.sinh, lambda x, y: np.cosh(x), "Hyperbolic sine; gradient cosh(x)."))
cosh = op(unary("cosh", np.cosh, lambda x, y: np.sinh(x), "Hyperbolic cosine; gradient sinh(x)."))
asinh = op(
    unary(
        "asinh",
        np.arcsinh,
        lambda x, y: 1 / np.sqrt(x * x + 1),
        "The inverse hyperbolic sine; gradient 1 / sqrt(x^2 + 1).",
    )
)
acosh = op(
    unary(
        "acosh",
        np.arccosh,
        lambda x, y: 1 / np.sqrt(x * x - 1),
        "The inverse hyperbolic cosine; NaN below 1; gradient 1 / sqrt(x^2 - 1).",
    )
)
atanh = op(
    unary(
        "atanh",
        np.arctanh,
        lambda x, y: 1 / (1 - x * x),
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


def _sinc_derivative(x, y):
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


def _zero(x, y):
    return np.zeros_like(x)


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
    lambda x, y: np.ones_like(x),
    "The fractional part x - trunc(x), with the sign of x; gradient 1.",
)


@op
def frac(x):
    """The fractional part x - trunc(x), with the sign of x (NaN for +-inf); gradient 1. Float
    tensors only, as torch."""
    return _frac(float_tensor("frac", x))
