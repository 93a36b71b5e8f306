"""minigrad: a tensor autograd framework written from scratch (numpy + Numba).

    import minigrad as mg
    from minigrad import nn

    x = mg.randn(4, 3, requires_grad=True)
    loss = mg.cross_entropy(x @ w, mg.tensor([0, 1, 1, 0]))
    loss.backward()

The engine (tensor, ops, optim, viz, io) does not import the layers: `mg.nn` is the top-level
`nn` package, loaded on first use.
"""

import importlib

from . import dtypes, optim, viz
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .creation import (arange, from_numpy, full, full_like, ones, ones_like, rand, rand_like, randn, randn_like,
                       tensor, zeros, zeros_like)
from .dtypes import bool_ as bool, float32, float64, get_default_dtype, int32, int64, set_default_dtype, uint8
from .errors import DimError, DTypeError, ShapeError
from .gradcheck import GradcheckError, gradcheck
from .io import load, save
from .ops import (abs, argmax, argmin, cat, dropout, exp, expand, flatten, flip, gather, log,
                  log_softmax, masked_fill, masked_softmax, matmul, max, mean, min, permute, relu, reshape,
                  sigmoid, softmax, sqrt, squeeze, stack, sum, tanh, transpose, unsqueeze, var, where)
from .ops.loss import cross_entropy  # the general one; its plain (N, C) case is ops.nn's fused kernel
from .random import manual_seed
from .tensor import Function, Parameter, Tensor

__version__ = "0.1.0"

# What `from minigrad import *` gives: no names that shadow Python's builtins (sum, max, min,
# abs, bool) and no numpy. Those are reached as mg.sum, mg.max, ...
__all__ = [
    "Tensor", "Parameter", "Function", "tensor", "from_numpy", "zeros", "ones", "full", "arange", "randn",
    "rand", "zeros_like", "ones_like", "full_like", "randn_like", "rand_like",
    "float32", "float64", "int64", "int32", "uint8", "get_default_dtype", "set_default_dtype",
    "no_grad", "enable_grad", "is_grad_enabled", "set_grad_enabled", "manual_seed",
    "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "where", "masked_fill", "matmul", "mean", "var",
    "argmax", "argmin", "cat", "stack", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "expand",
    "flatten", "flip", "gather", "softmax", "log_softmax", "masked_softmax", "cross_entropy", "dropout",
    "gradcheck", "GradcheckError", "save", "load", "optim", "viz", "nn",
    "ShapeError", "DTypeError", "DimError",
]


def __getattr__(name):
    # PEP 562: `mg.nn` (and `from minigrad import nn`) loads the layers on first use, so that
    # importing the engine does not import every layer.
    if name == "nn":
        return importlib.import_module("nn")
    raise AttributeError(f"module 'minigrad' has no attribute {name!r}")
