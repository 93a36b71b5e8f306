"""Differentiable ops by family. Each is a Function (forward + backward on numpy arrays) and a
lowercase function that checks its arguments and applies it.

This package also gives Tensor its methods (`x.exp()`, `x + y`, `x.sum(1)`): each is the
function of the same name here, so `x.exp()` and `mg.exp(x)` reach the same Function.
"""

import numpy as np

from ..tensor import Tensor
from .elementwise import (abs, add, bitwise_not, cast, clone, compare, div, exp, log, logical_not, masked_fill,
                          mul, neg, pow, relu, sigmoid, sqrt, sub, tanh, where)
from .inplace import setitem
from .linalg import matmul
from .nn import cross_entropy, dropout, log_softmax, masked_softmax, softmax
from .reduce import argmax, argmin, max, mean, min, sum, var
from .shape import cat, expand, flatten, flip, gather, getitem, permute, reshape, squeeze, stack, transpose, unsqueeze
from . import inplace


def _reflected(op):
    def method(self, other):
        return op(other, self)
    return method


def _comparison(ufunc):
    def method(self, other):
        return compare(ufunc, self, other)
    return method


# Methods that are the op of the same name.
for _name in ("add", "sub", "mul", "div", "pow", "matmul", "neg", "exp", "log", "sqrt", "abs", "tanh",
              "sigmoid", "relu", "clone", "sum", "mean", "max", "min", "var", "argmax", "argmin", "reshape",
              "permute", "transpose", "unsqueeze", "squeeze", "expand", "flip", "flatten", "gather",
              "masked_fill", "softmax", "log_softmax"):
    setattr(Tensor, _name, globals()[_name])

# Python's operators.
for _dunder, _op in (("add", add), ("sub", sub), ("mul", mul), ("truediv", div), ("pow", pow),
                     ("matmul", matmul)):
    setattr(Tensor, f"__{_dunder}__", _op)
    setattr(Tensor, f"__r{_dunder}__", _reflected(_op))
for _dunder, _ufunc in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                        ("gt", np.greater), ("ge", np.greater_equal),
                        ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor)):
    setattr(Tensor, f"__{_dunder}__", _comparison(_ufunc))
Tensor.__neg__ = neg
Tensor.__invert__ = bitwise_not
Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
Tensor.div = div
Tensor.view = reshape
Tensor.contiguous = lambda self: self
Tensor.to = cast
Tensor.float = lambda self: cast(self, np.float32)
Tensor.double = lambda self: cast(self, np.float64)
Tensor.long = lambda self: cast(self, np.int64)
Tensor.int = lambda self: cast(self, np.int32)
Tensor.bool = lambda self: cast(self, np.bool_)
inplace.attach_methods(Tensor)
