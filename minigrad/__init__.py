"""minigrad: a tensor autograd framework written from scratch (numpy + Numba).

    import minigrad as mg
    from minigrad import nn

    x = mg.randn(4, 3, requires_grad=True)
    loss = mg.cross_entropy(x @ w, mg.tensor([0, 1, 1, 0]))
    loss.backward()

The engine (tensor, ops, optim, viz, io) does not import the layers: `mg.nn` (minigrad.nn, whose
source is the repository's top-level nn/ folder) is loaded on first use.
"""

import importlib

from . import dtypes, ops, optim, parallel, utils, viz
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .creation import (arange, as_tensor, bernoulli, empty, empty_like, eye, from_numpy, full, full_like,
                       get_rng_state, linspace, multinomial, normal, ones, ones_like, rand, rand_like, randint, randn,
                       randn_like, randperm, set_rng_state, tensor, zeros, zeros_like)
from .dtypes import bool_ as bool, float32, float64, get_default_dtype, int32, int64, set_default_dtype, uint8
from .errors import ArgumentError, DimError, DTypeError, ShapeError
from .gradcheck import GradcheckError, gradcheck
from .io import load, save
from .ops import (broadcast_tensors, broadcast_to, column_stack, diag, diag_embed, diagonal, dsplit, dstack, fliplr,
                  flipud, hsplit, hstack, meshgrid, ravel, rot90, select, take, tril_indices, triu_indices, vsplit,
                  vstack)
from .ops import (count_nonzero, cummax, cummin, diff, kthvalue, logcumsumexp, median, mode, nanmedian, nanquantile,
                  quantile)
from .ops import (argwhere, bincount, bucketize, histc, index_add, index_copy, index_fill, logspace, randint_like,
                  scatter_reduce, searchsorted, trapezoid, unique, unique_consecutive, vander)
from .ops import (abs, add, all, allclose, amax, amin, any, argmax, argmin, argsort, atan2, bmm, cat, ceil, chunk,
                  clamp, clip, clone, concat, concatenate, cos, cumprod, cumsum, div, dot, dropout, einsum, eq, equal,
                  erf, exp, expand, expm1, flatten, flip, floor, floor_divide, fmod, gather, ge, gt, index_select,
                  is_floating_point, isclose, isfinite, isinf, isnan, le, log, log10, log1p, log2, log_softmax,
                  logical_and, logical_not, logical_or, logical_xor, logsumexp, lt, masked_fill, masked_select,
                  masked_softmax, matmul, max, maximum, mean, min, minimum, mm, moveaxis, movedim, mul, narrow, ne,
                  neg, nonzero, norm, numel, outer, permute, pow, prod, reciprocal, relu, remainder,
                  repeat_interleave, reshape, roll, round, rsqrt, scatter, scatter_add, sigmoid, sign, sin, softmax,
                  sort, split, sqrt, square, squeeze, stack, std, std_mean, sub, sum, swapaxes, swapdims, t,
                  take_along_dim, tanh, tile, topk, transpose, tril, triu, trunc, unbind, unflatten, unsqueeze, var,
                  var_mean, where)
from .ops import (acos, acosh, addbmm, addcdiv, addcmul, addmm, addmv, arccos, arccosh, arcsin, arcsinh, arctan,
                  arctanh, asin, asinh, atan, atanh, baddbmm, cdist, copysign, cosh, cross, deg2rad, digamma, dist,
                  erfinv, exp2, float_power, frac, heaviside, hypot, inner, kron, lerp, lgamma, logaddexp, logaddexp2,
                  logit, mv, nan_to_num, nanmean, nansum, rad2deg, signbit, sinc, sinh, tan, tensordot, trace,
                  true_divide, xlogy)
from .ops.loss import cross_entropy  # the general one; its plain (N, C) case is ops.nn's fused kernel
from .ops.conv import conv1d, conv2d  # torch's top-level names
from .ops.pooling import avg_pool1d, max_pool1d, max_pool2d
from .random import Generator, default_generator, manual_seed
from .tensor import Function, Parameter, Tensor

__version__ = "0.1.0"

# torch's other names of the dtypes (mg.float and mg.int, like mg.bool, are not in __all__)
long, double, float, int = int64, float64, float32, int32


def is_tensor(obj):
    """True for a minigrad Tensor (Parameters included)."""
    return isinstance(obj, Tensor)


# What `from minigrad import *` gives: no names that shadow Python's builtins (sum, max, min,
# abs, all, any, pow, round, bool, float, int) and no numpy. Those are reached as mg.sum, mg.max, ...
__all__ = [
    "Tensor", "Parameter", "Function", "tensor", "as_tensor", "from_numpy", "is_tensor", "numel",
    "zeros", "ones", "empty", "full", "eye", "arange", "linspace", "zeros_like", "ones_like", "empty_like",
    "full_like", "randn", "rand", "randint", "randperm", "multinomial", "randn_like", "rand_like", "manual_seed", "Generator", "default_generator",
    "get_rng_state", "set_rng_state",
    "bernoulli", "normal",
    "float32", "float64", "int64", "int32", "uint8", "long", "double", "get_default_dtype", "set_default_dtype",
    "no_grad", "enable_grad", "inference_mode", "is_grad_enabled", "set_grad_enabled",
    # elementwise
    "add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "sin", "cos", "erf",
    "rsqrt", "square", "log1p", "log2", "log10", "expm1", "clamp", "clip", "maximum", "minimum", "where", "masked_fill",
    "isnan", "isinf", "isfinite", "logical_and", "logical_or", "logical_xor", "logical_not", "clone",
    "sign", "floor", "ceil", "trunc", "reciprocal", "remainder", "fmod", "floor_divide", "atan2",
    "eq", "ne", "lt", "le", "gt", "ge",
    "allclose", "isclose", "equal", "is_floating_point",
    # reductions
    "mean", "prod", "amax", "amin", "argmax", "argmin", "cumsum", "cumprod", "var", "std", "var_mean", "std_mean",
    "logsumexp", "norm",
    # shape, joining, indexing, order
    "reshape", "permute", "transpose", "swapaxes", "swapdims", "t", "movedim", "moveaxis", "squeeze",
    "unsqueeze", "expand", "flatten", "unflatten", "flip", "roll", "narrow", "tril", "triu",
    "cat", "concat", "concatenate", "stack", "split", "chunk", "unbind", "tile", "repeat_interleave",
    "gather", "take_along_dim", "index_select", "masked_select", "scatter", "scatter_add", "nonzero", "sort",
    "argsort", "topk",
    "broadcast_to", "broadcast_tensors", "ravel", "hstack", "vstack", "dstack", "column_stack", "hsplit", "vsplit",
    "dsplit", "fliplr", "flipud", "rot90", "diag", "diagonal", "diag_embed", "tril_indices", "triu_indices",
    "meshgrid", "select", "take",
    "diff", "cummax", "cummin", "logcumsumexp", "count_nonzero", "median", "nanmedian", "kthvalue", "mode",
    "quantile", "nanquantile",
    "unique", "unique_consecutive", "bincount", "histc", "bucketize", "searchsorted", "argwhere", "scatter_reduce",
    "index_add", "index_copy", "index_fill", "logspace", "randint_like", "vander", "trapezoid",
    # linear algebra
    "matmul", "mm", "bmm", "dot", "outer", "einsum",
    "asin", "acos", "atan", "tan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan", "arcsinh",
    "arccosh", "arctanh", "exp2", "logit", "xlogy", "hypot", "lerp", "lgamma", "digamma", "erfinv", "logaddexp",
    "logaddexp2", "sinc", "frac", "float_power", "true_divide", "nan_to_num", "signbit", "rad2deg", "deg2rad",
    "heaviside", "copysign", "nansum", "nanmean",
    "addmm", "addmv", "addcmul", "addcdiv", "baddbmm", "addbmm", "mv", "inner", "tensordot", "kron", "cross", "trace",
    "dist", "cdist",
    # neural-network ops
    "softmax", "log_softmax", "masked_softmax", "cross_entropy", "dropout",
    "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d",
    "gradcheck", "GradcheckError", "save", "load", "optim", "parallel", "viz", "nn",
    "ShapeError", "DTypeError", "DimError", "ArgumentError",
]


def __getattr__(name):
    # PEP 562: `mg.nn` (and `from minigrad import nn`) loads the layers on first use, so that
    # importing the engine does not import every layer.
    if name == "nn":
        return importlib.import_module("minigrad.nn")
    raise AttributeError(f"module 'minigrad' has no attribute {name!r}")
