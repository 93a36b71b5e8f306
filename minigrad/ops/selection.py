"""Ops that pick elements by order: sort, argsort, topk (values are differentiable, indices are
int64 tensors without gradient), and TakeAlongDim, the Function behind them and max(dim).

Order follows torch: NaN counts as larger than every number; a stable sort keeps equal
elements in their original order, descending too.
"""

from collections import namedtuple

import numpy as np

from ..errors import ShapeError
from ..engine import Function, Tensor
from .args import normalize_dim
from .registry import op


class TakeAlongDim(Function):
    """out = x at `indices` along `dim` (distinct indices within each slice, as a sort or a max
    gives; keepdim=False drops dim, of size 1); the gradient is put back at those indices."""

    @staticmethod
    def forward(ctx, x, indices, dim, keepdim=True):
        ctx.shape, ctx.indices, ctx.dim, ctx.keepdim = x.shape, indices, dim, keepdim
        out = np.take_along_axis(x, indices, axis=dim)
        return out if keepdim else np.squeeze(out, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        full = np.zeros(ctx.shape, dtype=grad.dtype)
        np.put_along_axis(
            full, ctx.indices, grad if ctx.keepdim else np.expand_dims(grad, ctx.dim), axis=ctx.dim
        )
        return full


def _order(data, axis, descending):
    """Indices that sort `data` along axis, stably (equal elements keep their order)."""
    if not descending:
        return np.argsort(data, axis=axis, kind="stable")
    # sort the reversed data ascending and reverse the result: descending, and ties still in
    # their original order (sorting -data would not work for bools, nor put NaN first)
    backwards = np.argsort(np.flip(data, axis), axis=axis, kind="stable")
    return data.shape[axis] - 1 - np.flip(backwards, axis)


SortResult = namedtuple("SortResult", ["values", "indices"])
# topk partitions first when it wants at most 1/PARTIAL_SHARE of a row (else it sorts it all)
PARTIAL_SHARE = 8

TopKResult = namedtuple("TopKResult", ["values", "indices"])


def _as_rows(x, dim, op):
    """x and its axis; a 0-d tensor is viewed as one element along dim 0 (torch accepts dim
    0/-1)."""
    axis = normalize_dim(dim, x.ndim, op)
    return (x.reshape(1) if x.ndim == 0 else x), axis


def _pick(x, rows, order, axis):
    values = TakeAlongDim.apply(rows, indices=order, dim=axis)
    indices = Tensor._wrap(order.astype(np.int64, copy=False))
    if x.ndim == 0:
        values, indices = values.reshape(()), Tensor._wrap(order.reshape(()))
    return values, indices


@op
def sort(x, dim=-1, descending=False, stable=False):
    """(values, indices) of x sorted along `dim`; always stable (stable= is accepted for torch)."""
    rows, axis = _as_rows(x, dim, "sort")
    return SortResult(*_pick(x, rows, _order(rows._data, axis, descending), axis))


@op
def argsort(x, dim=-1, descending=False, stable=False):
    """The indices that sort x along `dim` (int64, no gradient); stable."""
    rows, axis = _as_rows(x, dim, "argsort")
    order = _order(rows._data, axis, descending).astype(np.int64, copy=False)
    return Tensor._wrap(order.reshape(x.shape))


@op
def topk(x, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (largest=False: smallest) elements along `dim`, in
    order."""
    rows, axis = _as_rows(x, dim, "topk")
    if x.ndim == 0 and k in (0, 1):  # torch gives the element for k = 0 too
        k = 1
    size = rows.shape[axis]
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 0 <= k <= size:
        raise ShapeError(
            f"topk: k must be an int in [0, {size}] (the size of dim {dim} of shape {x.shape}); "
            f"got {k!r}"
        )
    return TopKResult(*_pick(x, rows, _top(rows._data, k, axis, largest), axis))


def _top(data, k, axis, largest):
    """Indices of the k largest (smallest) along axis, in order, ties to the lowest index: the
    first k of a stable sort. For a few of many (k <= size / PARTIAL_SHARE), a partition finds
    each row's k and only they are sorted (a row with ties at the k-th place, where a partition
    would leave the choice among them to chance, gets the whole stable sort)."""
    size = data.shape[axis]
    if k == 0 or k * PARTIAL_SHARE > size:
        return np.take(_order(data, axis, largest), np.arange(k), axis=axis)
    moved = np.moveaxis(data, axis, -1)
    rows = moved.reshape(-1, size)
    kth = size - k if largest else k - 1
    parted = np.argpartition(rows, kth, axis=-1)  # NaN last, as in _order's ascending sort
    chosen = np.sort(parted[:, kth:] if largest else parted[:, :k], axis=-1)  # by position
    values = np.take_along_axis(rows, chosen, axis=-1)
    boundary = np.take_along_axis(rows, parted[:, kth : kth + 1], axis=-1)  # the k-th value
    # tied: a value equal to the k-th was left out (NaN equal to NaN here)
    tied = (rows == boundary).sum(axis=-1) > (values == boundary).sum(axis=-1)
    nan = np.isnan(boundary[:, 0]) if np.issubdtype(rows.dtype, np.floating) else None
    if nan is not None and nan.any():
        tied[nan] = np.isnan(rows[nan]).sum(axis=-1) > np.isnan(values[nan]).sum(axis=-1)
    # the stable sort of the chosen, by position, keeps their ties in order
    picked = np.take_along_axis(chosen, _order(values, -1, largest), axis=-1)
    if tied.any():
        picked[tied] = _order(rows[tied], -1, largest)[:, :k]
    return np.moveaxis(picked.reshape(moved.shape[:-1] + (k,)), -1, axis)
