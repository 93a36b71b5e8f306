"""Reductions over one or more dims, the running ones (cumsum, cumprod, cummax, cummin,
logcumsumexp), diff and count_nonzero, with torch's rules.

`dim=None` (or an empty tuple) reduces every dim. Integer and bool inputs sum to int64; mean
needs a float input (or dtype=). A reduction that has no identity (max, min, amax, amin,
argmax) refuses an empty dim with DimError; sum gives 0, prod 1, mean nan, as torch does.

This module defines sum/max/min/any/all; Python's builtins of those names are not used here.
"""

import builtins
import math
from collections import namedtuple

import numpy as np

from .. import dtypes
from ..errors import ArgumentError, DimError, DTypeError, ShapeError
from ..engine import Function, Tensor
from .args import normalize_dim, normalize_dims
from .conversion import cast
from .indexing import Gather
from .join import cat
from .namespace import namespace
from .piecewise import maximum, minimum
from .selection import TakeAlongDim
from .shape import narrow, reshape
from .registry import op


def reduction_dims(dim, ndim, op):
    """The dims a reduction covers: None or () means all of them (torch)."""
    return normalize_dims(
        None if isinstance(dim, (tuple, list)) and len(dim) == 0 else dim, ndim, op
    )


def expand_back(grad, shape, dims, keepdim):
    """Give a reduced gradient its size-1 dims back so it broadcasts against the input."""
    xp = namespace(grad)
    if not keepdim:
        grad = xp.expand_dims(grad, dims)
    return xp.broadcast_to(grad, shape)


def _count(shape, dims):
    return math.prod(shape[d] for d in dims)


def refuse_empty(x, dims, op):
    for d in dims:
        if x.shape[d] == 0:
            raise DimError(
                f"{op}: cannot reduce over dim {d} of size 0 (shape {x.shape}): the {op} of "
                f"no elements is undefined"
            )


def _accumulation_dtype(x, dtype):
    """sum/prod/cumsum: the requested dtype, else int64 for integer and bool inputs (torch)."""
    if dtype is not None:
        return dtypes.as_dtype(dtype)
    return x.dtype if x.dtype.kind == "f" else dtypes.int64


# -- sum, mean, prod ----------------------------------------------------------------------


class Sum(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        return x.sum(axis=dims, keepdims=keepdim, dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return expand_back(grad, ctx.shape, ctx.dims, ctx.keepdim)


class Mean(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.count = _count(x.shape, dims)
        with np.errstate(invalid="ignore", divide="ignore"):  # the mean of no elements is nan
            return x.sum(axis=dims, keepdims=keepdim) / x.dtype.type(ctx.count)

    @staticmethod
    def backward(ctx, grad):
        with np.errstate(invalid="ignore", divide="ignore"):
            return expand_back(grad / ctx.count, ctx.shape, ctx.dims, ctx.keepdim)


@op
def sum(x, dim=None, keepdim=False, dtype=None):
    """Sum over `dim` (an int, a tuple, or None for all); ints and bools give int64 (torch)."""
    x = cast(x, _accumulation_dtype(x, dtype))
    return Sum.apply(x, dims=reduction_dims(dim, x.ndim, "sum"), keepdim=keepdim)


@op
def mean(x, dim=None, keepdim=False, dtype=None):
    """Mean over `dim`; needs a float tensor or dtype= (as torch), nan over no elements."""
    if dtype is not None:
        x = cast(x, dtype)
    if x.dtype.kind != "f":
        raise DTypeError(
            f"mean: the input must be a float tensor, or pass dtype=mg.float32; got dtype {x.dtype}"
        )
    return Mean.apply(x, dims=reduction_dims(dim, x.ndim, "mean"), keepdim=keepdim)


class Prod(Function):
    """y = prod(x) along one axis; dy/dx_i is the product of the others: of those before i
    times those after i (exact where some x are 0; no division)."""

    @staticmethod
    def forward(ctx, x, axis, keepdim):
        ctx.save_for_backward(x)
        ctx.axis, ctx.keepdim = axis, keepdim
        return x.prod(axis=axis, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        axis = ctx.axis
        if not ctx.keepdim:
            grad = np.expand_dims(grad, axis)
        before = _exclusive_cumprod(x, axis)
        after = np.flip(_exclusive_cumprod(np.flip(x, axis), axis), axis)
        return grad * before * after


def _exclusive_cumprod(x, axis):
    """out_i = x_0 * ... * x_(i-1) along axis (1 at i = 0)."""
    ones = np.ones_like(x, shape=x.shape[:axis] + (1,) + x.shape[axis + 1 :])
    running = np.concatenate([ones, np.cumprod(x, axis=axis)], axis=axis)
    return np.delete(running, -1, axis=axis)


@op
def prod(x, dim=None, keepdim=False, dtype=None):
    """Product over one dim, or of every element (dim=None); ints and bools give int64, and the
    product of no elements is 1 (torch)."""
    x = cast(x, _accumulation_dtype(x, dtype))
    if dim is None:
        return Prod.apply(reshape(x, -1), axis=0, keepdim=False)
    axis = normalize_dim(dim, x.ndim, "prod")
    return x.clone() if x.ndim == 0 else Prod.apply(x, axis=axis, keepdim=keepdim)


# -- max, min, amax, amin, argmax, argmin -------------------------------------------------


class Extreme(Function):
    """amax or amin: the gradient goes to the extreme elements, shared evenly among ties (torch).

    Where the extreme is NaN no element equals it, so the gradient over those elements is
    0 / 0 = NaN, as amax's in torch; with nan_shares (torch's max() and min() of every element)
    the NaN elements share it instead."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, reduce, nan_shares=False):
        y = reduce(x, axis=dims, keepdims=True)
        hit = x == y
        if nan_shares and y.dtype.kind == "f" and np.isnan(y).any():
            hit = np.isnan(x)
        ctx.save_for_backward(hit)
        ctx.dims, ctx.keepdim = dims, keepdim
        return y if keepdim else np.squeeze(y, axis=dims)

    higher_order = "backward"  # hit is a mask: a constant

    @staticmethod
    def backward(ctx, grad):
        (hit,) = ctx.saved
        if not ctx.keepdim:
            grad = namespace(grad).expand_dims(grad, ctx.dims)
        with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0 where the extreme is NaN
            return grad * (hit / hit.sum(axis=ctx.dims, keepdims=True, dtype=grad.dtype))


def _extreme(x, dim, keepdim, reduce, op, nan_shares=False):
    dims = reduction_dims(dim, x.ndim, op)
    refuse_empty(x, dims, op)
    return Extreme.apply(x, dims=dims, keepdim=keepdim, reduce=reduce, nan_shares=nan_shares)


@op
def amax(x, dim=(), keepdim=False):
    """Largest value over `dim` (all by default); ties share the gradient evenly."""
    return _extreme(x, dim, keepdim, np.max, "amax")


@op
def amin(x, dim=(), keepdim=False):
    """Smallest value over `dim` (all by default); ties share the gradient evenly."""
    return _extreme(x, dim, keepdim, np.min, "amin")


MaxMin = namedtuple("MaxMin", ["values", "indices"])


def _along_dim(x, dim, keepdim, arg, op):
    # indices exist for one dim only
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(
            f"{op}: dim must be one int (values and indices along it); got {dim!r}. "
            f"Use amax/amin to reduce several dims at once."
        )
    axis = normalize_dim(dim, x.ndim, op)
    if x.ndim == 0:
        return MaxMin(x.clone(), Tensor._wrap(np.zeros((), np.int64)))
    refuse_empty(x, (axis,), op)
    indices = arg(x._data, axis=axis, keepdims=True)
    values = TakeAlongDim.apply(x, indices=indices, dim=axis, keepdim=keepdim)
    return MaxMin(values, Tensor._wrap(indices if keepdim else np.squeeze(indices, axis)))


@op
def max(x, dim=None, keepdim=False):
    """max of every element (ties share the gradient, and so do NaNs, which win); max(x, dim): a
    (values, indices) pair whose gradient goes to the returned index (the first NaN, else the
    first of ties); max(x, other_tensor): elementwise maximum. As torch."""
    if isinstance(dim, Tensor):
        return maximum(x, dim)
    if dim is None:
        return _extreme(x, None, False, np.max, "max", nan_shares=True)
    return _along_dim(x, dim, keepdim, np.argmax, "max")


@op
def min(x, dim=None, keepdim=False):
    """min of every element, min(x, dim) -> (values, indices), or min(x, other): as max."""
    if isinstance(dim, Tensor):
        return minimum(x, dim)
    if dim is None:
        return _extreme(x, None, False, np.min, "min", nan_shares=True)
    return _along_dim(x, dim, keepdim, np.argmin, "min")


def _arg(function, x, dim, keepdim, op):
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    if dim is None:
        if data.size == 0:
            raise DimError(
                f"{op}: the tensor of shape {data.shape} has no elements; give a dim to reduce over"
            )
        index = np.asarray(function(data), dtype=np.int64)
        return Tensor._wrap(index.reshape((1,) * data.ndim) if keepdim else index)
    axis = normalize_dim(dim, data.ndim, op)
    if data.ndim == 0:
        return Tensor._wrap(np.zeros((), np.int64))
    if data.shape[axis] == 0:
        raise DimError(f"{op}: cannot reduce over dim {axis} of size 0 (shape {data.shape})")
    return Tensor._wrap(np.asarray(function(data, axis=axis, keepdims=keepdim), dtype=np.int64))


@op
def argmax(x, dim=None, keepdim=False):
    """Index of the largest value along `dim` (of the flattened tensor for dim=None); first of
    ties."""
    return _arg(np.argmax, x, dim, keepdim, "argmax")


@op
def argmin(x, dim=None, keepdim=False):
    """Index of the smallest value along `dim` (of the flattened tensor for dim=None); first of
    ties."""
    return _arg(np.argmin, x, dim, keepdim, "argmin")


# -- any, all, cumsum ---------------------------------------------------------------------


def _truth(function, x, dim, keepdim, op):
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    result = function(data, axis=reduction_dims(dim, data.ndim, op), keepdims=keepdim)
    return Tensor._wrap(np.asarray(result, dtype=np.uint8 if data.dtype == np.uint8 else np.bool_))


@op
def any(x, dim=None, keepdim=False):
    """True where some element along `dim` is nonzero (bool; uint8 for a uint8 input, as torch)."""
    return _truth(np.any, x, dim, keepdim, "any")


@op
def all(x, dim=None, keepdim=False):
    """True where every element along `dim` is nonzero (bool; uint8 for a uint8 input, as torch)."""
    return _truth(np.all, x, dim, keepdim, "all")


class CumSum(Function):
    """y_i = x_0 + ... + x_i along an axis; dx_i = dy_i + ... + dy_last (a reversed cumsum)."""

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        return np.cumsum(x, axis=axis, dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return np.flip(np.cumsum(np.flip(grad, ctx.axis), axis=ctx.axis), ctx.axis)


class CumProd(Function):
    """y_i = x_0 * ... * x_i along an axis. dL/dx_i = (x_0 ... x_{i-1}) * S_i with
    S_i = g_i + x_{i+1} S_{i+1} (S_last = g_last): no division, so zeros in x are exact."""

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        ctx.save_for_backward(x)
        return np.cumprod(x, axis=axis, dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        x, grad = np.moveaxis(x, ctx.axis, -1), np.moveaxis(grad, ctx.axis, -1)
        before = np.cumprod(
            np.concatenate([np.ones_like(x[..., :1]), x[..., :-1]], axis=-1), axis=-1
        )
        tail = np.empty_like(grad)
        if grad.shape[-1]:
            tail[..., -1] = grad[..., -1]
        for i in range(grad.shape[-1] - 2, -1, -1):
            tail[..., i] = grad[..., i] + x[..., i + 1] * tail[..., i + 1]
        return np.moveaxis(before * tail, -1, ctx.axis)


def _running(op, name, what):
    def running(x, dim, dtype=None):
        x = cast(x, _accumulation_dtype(x, dtype))
        axis = normalize_dim(dim, x.ndim, name)
        return x.clone() if x.ndim == 0 else op.apply(x, axis=axis)

    running.__name__ = name
    running.__doc__ = f"Running {what} along `dim`; ints and bools give int64 (torch)."
    return running


cumprod = op(_running(CumProd, "cumprod", "product"), name="cumprod")
cumsum = op(_running(CumSum, "cumsum", "sum"), name="cumsum")


class LogCumSumExp(Function):
    """y_i = log(exp(x_0) + ... + exp(x_i)) along an axis (np.logaddexp, no overflow);
    dx_i = sum over j >= i of g_j exp(x_i - y_j), summed in log space for the positive and the
    negative g separately, so that no exp overflows (as torch does)."""

    @staticmethod
    def forward(ctx, x, axis):
        y = np.logaddexp.accumulate(x, axis=axis)
        ctx.save_for_backward(x, y)
        ctx.axis = axis
        return y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved
        axis = ctx.axis

        def reverse_logcumsumexp(a):
            return np.flip(np.logaddexp.accumulate(np.flip(a, axis), axis=axis), axis)

        with np.errstate(divide="ignore", invalid="ignore"):
            positive = reverse_logcumsumexp(np.where(grad > 0, np.log(np.abs(grad)), -np.inf) - y)
            negative = reverse_logcumsumexp(np.where(grad < 0, np.log(np.abs(grad)), -np.inf) - y)
            return np.exp(x + positive) - np.exp(x + negative)


@op
def logcumsumexp(x, dim):
    """log(cumsum(exp(x))) along `dim`, without overflow (torch.logcumsumexp); a float input."""
    if x.dtype.kind != "f":
        raise DTypeError(f"logcumsumexp: the input must be a float tensor; got dtype {x.dtype}")
    axis = normalize_dim(dim, x.ndim, "logcumsumexp")
    return x.clone() if x.ndim == 0 else LogCumSumExp.apply(x, axis=axis)


CumExtremes = namedtuple("CumExtremes", ["values", "indices"])


def _running_extreme(x, dim, better, op):
    """(values, indices) of the running max or min along dim: an element at least as good as the
    best so far (max: >=) takes over, so ties give the last index; a NaN takes over and stays,
    later NaNs taking the index (torch's rule). The gradient goes to the index of each value."""
    axis = normalize_dim(dim, x.ndim, op)
    if x.ndim == 0:
        return CumExtremes(x.clone(), Tensor._wrap(np.zeros((), np.int64)))
    data = np.moveaxis(x._data, axis, -1)
    indices = np.zeros(data.shape, np.int64)
    if data.shape[-1]:
        best, best_index = data[..., 0].copy(), np.zeros(data.shape[:-1], np.int64)
        for i in range(data.shape[-1]):
            value = data[..., i]
            with np.errstate(invalid="ignore"):
                takes_over = better(value, best)
            if data.dtype.kind == "f":
                takes_over = np.isnan(value) | (takes_over & ~np.isnan(best))
            best, best_index = (
                np.where(takes_over, value, best),
                np.where(takes_over, i, best_index),
            )
            indices[..., i] = best_index
    indices = np.ascontiguousarray(np.moveaxis(indices, -1, axis))
    return CumExtremes(Gather.apply(x, index=indices, dim=axis), Tensor._wrap(indices))


@op
def cummax(x, dim):
    """(values, indices): the largest element so far along `dim` and where it is (torch.cummax)."""
    return _running_extreme(x, dim, np.greater_equal, "cummax")


@op
def cummin(x, dim):
    """(values, indices): the smallest element so far along `dim` and where it is (torch.cummin)."""
    return _running_extreme(x, dim, np.less_equal, "cummin")


# -- diff, count_nonzero --------------------------------------------------------------------


@op
def diff(x, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim, out[i] = x[i + 1] - x[i] applied n times, after
    joining `prepend` before and `append` after x along dim (torch.diff; bools give x[i + 1] !=
    x[i])."""
    if x.ndim == 0:
        raise DimError("diff: expects a tensor with at least 1 dim; got a 0-d tensor")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise ArgumentError(f"diff: n must be a non-negative int; got {n!r}")
    axis = normalize_dim(dim, x.ndim, "diff")
    pieces = [p for p in (prepend, x, append) if p is not None]
    if len(pieces) > 1:
        pieces = [p if isinstance(p, Tensor) else Tensor._wrap(np.asarray(p)) for p in pieces]
        for p in pieces:
            if p.ndim != x.ndim:
                raise ShapeError(
                    f"diff: prepend and append must have the {x.ndim} dims of the input "
                    f"(shape {x.shape}); got shape {p.shape}"
                )
        x = cat(pieces, axis)
    for _ in range(int(n)):
        length = builtins.max(x.shape[axis] - 1, 0)
        later, earlier = narrow(x, axis, x.shape[axis] - length, length), narrow(x, axis, 0, length)
        x = later != earlier if x.dtype == np.bool_ else later - earlier
    return x


@op
def count_nonzero(x, dim=None):
    """How many elements along `dim` (an int, a tuple, or None for all) are not zero: int64."""
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    dims = reduction_dims(dim, data.ndim, "count_nonzero")
    return Tensor._wrap(np.asarray(np.count_nonzero(data, axis=dims), dtype=np.int64))
