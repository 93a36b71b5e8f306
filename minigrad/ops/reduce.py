"""Reductions over one or more dims (`dim=None` reduces everything), PyTorch style.

This module defines sum/max/min; Python's builtins of those names are not used here."""

from collections import namedtuple

import numpy as np

from ..tensor import Function, Tensor
from .args import normalize_dims


def _expand_back(grad, shape, dims, keepdim):
    """Give a reduced gradient its size-1 dims back so it broadcasts against the input."""
    if not keepdim:
        grad = np.expand_dims(grad, dims)
    return np.broadcast_to(grad, shape)


class Sum(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return x.sum(axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad, ctx.shape, ctx.dims, ctx.keepdim)


class Mean(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.count = int(np.prod([x.shape[d] for d in dims]))
        return x.mean(axis=dims, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        return _expand_back(grad / ctx.count, ctx.shape, ctx.dims, ctx.keepdim)


class Extreme(Function):
    """max or min: the gradient goes to the extreme elements (shared evenly among ties)."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, reduce):
        y = reduce(x, axis=dims, keepdims=True)
        ctx.save_for_backward(x == y)
        ctx.dims, ctx.keepdim = dims, keepdim
        return y if keepdim else np.squeeze(y, axis=dims)

    @staticmethod
    def backward(ctx, grad):
        (hit,) = ctx.saved
        if not ctx.keepdim:
            grad = np.expand_dims(grad, ctx.dims)
        return grad * hit / hit.sum(axis=ctx.dims, keepdims=True)


def sum(x, dim=None, keepdim=False):
    return Sum.apply(x, dims=normalize_dims(dim, x.ndim), keepdim=keepdim)


def mean(x, dim=None, keepdim=False):
    return Mean.apply(x, dims=normalize_dims(dim, x.ndim), keepdim=keepdim)


MaxMin = namedtuple("MaxMin", ["values", "indices"])


def _extreme(x, dim, keepdim, reduce, arg):
    if dim is None:  # like torch: the single extreme value, no indices
        return Extreme.apply(x, dims=normalize_dims(None, x.ndim), keepdim=False, reduce=reduce)
    if not isinstance(dim, (int, np.integer)):  # indices exist for one dim only, as in torch.max
        raise TypeError(f"{reduce.__name__}: dim must be one int (values and indices along it); got {dim!r}. "
                        f"Reduce one dim at a time, or flatten those dims first.")
    values = Extreme.apply(x, dims=normalize_dims(dim, x.ndim), keepdim=keepdim, reduce=reduce)
    return MaxMin(values, arg(x, dim, keepdim))


def max(x, dim=None, keepdim=False):
    """max over everything (a 0-d tensor), or over `dim`: a (values, indices) pair, as in torch."""
    return _extreme(x, dim, keepdim, np.max, argmax)


def min(x, dim=None, keepdim=False):
    """min over everything (a 0-d tensor), or over `dim`: a (values, indices) pair, as in torch."""
    return _extreme(x, dim, keepdim, np.min, argmin)


def var(x, dim=None, keepdim=False, unbiased=True):
    """Variance, built from differentiable primitives (Bessel-corrected unless unbiased=False)."""
    dims = normalize_dims(dim, x.ndim)
    count = int(np.prod([x.shape[d] for d in dims]))
    centered = x - mean(x, dims, keepdim=True)
    return sum(centered * centered, dims, keepdim) / (count - 1 if unbiased else count)


def argmax(x, dim=None, keepdim=False):
    return _arg(np.argmax, x, dim, keepdim)


def argmin(x, dim=None, keepdim=False):
    return _arg(np.argmin, x, dim, keepdim)


def _arg(function, x, dim, keepdim):
    data = x.data if isinstance(x, Tensor) else np.asarray(x)
    if dim is None:
        return Tensor._wrap(np.asarray(function(data), dtype=np.int64))
    return Tensor._wrap(np.asarray(function(data, axis=dim, keepdims=keepdim), dtype=np.int64))
