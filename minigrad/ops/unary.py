"""Unary elementwise ops, y = f(x) element by element: how an op is written.

Exp and Tanh are written out in full as worked examples of a Function: forward computes y and
saves it, which is all backward needs (dy/dx in terms of y), and the lowercase function,
declared with `@op` (registry.py), checks its argument and applies the Function. Then the one
mechanism that declares every other simple elementwise op in one line, `unary(name, function,
derivative, doc)`: pointwise.py holds those lines (log, sqrt, sin, ...).

Float-valued ops on int or bool tensors give the default float dtype, as in torch.
"""

import numpy as np

from ..engine import Function, Tensor
from .args import as_array
from .conversion import as_float
from .namespace import namespace
from .registry import op

# -- worked examples ----------------------------------------------------------------------


class Exp(Function):
    """y = e^x; dy/dx = e^x = y, so forward keeps y for backward."""

    higher_order = "backward"  # this backward runs on Tensors too (create_graph=True)

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

    higher_order = "backward"

    @staticmethod
    def forward(ctx, x):
        y = np.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad * (1 - y * y)


@op
def exp(x):
    """e^x elementwise."""
    return Exp.apply(as_float(x))


@op
def tanh(x):
    """The hyperbolic tangent elementwise."""
    return Tanh.apply(as_float(x))


# -- the mechanism ------------------------------------------------------------------------


class Unary(Function):
    """y = function(x) elementwise, with the local gradient dy/dx = derivative(x, y, xp).

    Each op is a subclass (made by `unary`) naming its own pair, so a graph shows `Asin`,
    not a generic node. Keyword settings given to apply (round's decimals) go to function.
    xp is numpy, or under create_graph=True the Tensor namespace (namespace.py)."""

    higher_order = "backward"

    @staticmethod
    def function(x, **settings):
        raise NotImplementedError

    @staticmethod
    def derivative(x, y, xp):
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
            return grad * cls.derivative(x, y, namespace(grad))


def unary(name, function, derivative, doc, floats=True, recorded=True):
    """The Unary subclass of function/derivative and the lowercase op that applies it. With
    floats (the default), int and bool inputs become the default float; else the dtype is kept.
    recorded=False: derivative computes with numpy only, so create_graph=True refuses the op."""
    members = dict(function=staticmethod(function), derivative=staticmethod(derivative))
    node = type(
        name.capitalize(), (Unary,), {**members, "higher_order": "backward" if recorded else None}
    )

    def apply(x):
        return node.apply(as_float(x) if floats else _tensor(x))

    apply.__name__, apply.__qualname__, apply.__doc__ = name, name, doc
    apply.node = node
    return apply


def _tensor(x):
    return x if isinstance(x, Tensor) else Tensor._wrap(as_array(x))
