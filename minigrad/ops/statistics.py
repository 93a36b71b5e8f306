"""Reductions with a formula of their own: var and std (with Bessel's correction), logsumexp,
norm, and the order statistics (median, nanmedian, kthvalue, mode, quantile, nanquantile). Each is
one Function whose backward is torch's, including where the formula
divides by zero (std and norm of all-zero inputs have gradient 0, not nan)."""

import math
from collections import namedtuple

import numpy as np

from ..errors import ArgumentError, DimError, DTypeError
from ..engine import Function, Tensor
from .args import as_array, normalize_dim
from .conversion import as_float, cast
from .indexing import gather
from .piecewise import where
from .reductions import Extreme, reduction_dims, expand_back, refuse_empty, mean
from .selection import TakeAlongDim, sort
from .shape import movedim, reshape
from .registry import op


def _float_input(x, op):
    if x.dtype.kind != "f":
        raise DTypeError(f"{op}: the input must be a float tensor; got dtype {x.dtype}")


# -- var and std --------------------------------------------------------------------------


class Variance(Function):
    """var = sum((x - mean)^2) / max(0, N - correction) over dims (std = its square root);
    d var/dx = 2 (x - mean) / (N - correction); d std = d var / (2 std), 0 where std = 0."""

    @staticmethod
    def forward(ctx, x, dims, correction, keepdim, root):
        count = math.prod(x.shape[d] for d in dims)
        dof = x.dtype.type(np.maximum(count - correction, 0))
        # no elements, or N <= correction: nan/inf
        with np.errstate(invalid="ignore", divide="ignore"):
            centered = x - x.sum(axis=dims, keepdims=True) / x.dtype.type(count)
            y = np.square(centered).sum(axis=dims, keepdims=keepdim) / dof
        if root:
            y = np.sqrt(y)
        ctx.save_for_backward(centered, y)
        ctx.dims, ctx.keepdim, ctx.dof, ctx.root = dims, keepdim, dof, root
        return y

    @staticmethod
    def backward(ctx, grad):
        centered, y = ctx.saved
        with np.errstate(invalid="ignore", divide="ignore"):
            if ctx.root:
                grad = np.where(y == 0, 0, grad / (2 * y))
            grad = expand_back(grad, centered.shape, ctx.dims, ctx.keepdim)
            return grad * (2 / ctx.dof) * centered


def _correction(op, dim, unbiased, correction):
    """torch's three spellings: var(x, dim, unbiased), var(x, dim, correction=c), var(x,
    unbiased)."""
    if isinstance(dim, bool):  # x.var(False): the old positional `unbiased`
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}: give either unbiased= or correction=, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _spread(x, dim, unbiased, keepdim, correction, root, op):
    _float_input(x, op)
    dim, correction = _correction(op, dim, unbiased, correction)
    return Variance.apply(
        x, dims=reduction_dims(dim, x.ndim, op), correction=correction, keepdim=keepdim, root=root
    )


@op
def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over `dim` (all dims for None) with N - correction in the denominator (correction=1,
    Bessel's, unless unbiased=False or correction= says otherwise); nan over no elements."""
    return _spread(x, dim, unbiased, keepdim, correction, False, "var")


@op
def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation: the square root of var (same arguments)."""
    return _spread(x, dim, unbiased, keepdim, correction, True, "std")


@op(method=False)
def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over the same dims, as torch.var_mean."""
    mean_dim = None if isinstance(dim, bool) else dim
    return var(x, dim, unbiased, keepdim, correction=correction), mean(x, mean_dim, keepdim)


@op(method=False)
def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over the same dims, as torch.std_mean."""
    mean_dim = None if isinstance(dim, bool) else dim
    return std(x, dim, unbiased, keepdim, correction=correction), mean(x, mean_dim, keepdim)


# -- logsumexp ----------------------------------------------------------------------------


class LogSumExp(Function):
    """y = log(sum(exp(x))) over dims, computed as m + log(sum(exp(x - m))) with m the largest
    finite-or-not max (0 where it is infinite); dy/dx = exp(x - y) (the softmax)."""

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        shift = np.max(x, axis=dims, keepdims=True, initial=-np.inf)
        shift = np.where(np.isfinite(shift), shift, 0).astype(x.dtype)
        with np.errstate(divide="ignore"):  # log(0) = -inf: no elements, or all -inf
            y = np.log(np.exp(x - shift).sum(axis=dims, keepdims=True)) + shift
        ctx.save_for_backward(x, y)
        ctx.dims, ctx.keepdim = dims, keepdim
        return y if keepdim else np.squeeze(y, axis=dims)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved
        if not ctx.keepdim:
            grad = np.expand_dims(grad, ctx.dims)
        with np.errstate(invalid="ignore"):
            return grad * np.exp(x - y)


@op
def logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x))) over `dim` (an int or a tuple), without overflow; -inf over no elements."""
    x = as_float(x)
    return LogSumExp.apply(x, dims=reduction_dims(dim, x.ndim, "logsumexp"), keepdim=keepdim)


# -- norm ---------------------------------------------------------------------------------


class Norm(Function):
    """The p-norm (sum |x|^p)^(1/p) over dims: p = 2 (Euclidean), 1, inf (max |x|), -inf (min |x|),
    0 (the count of nonzeros), or any other number. Gradients as torch's norm_backward: 0 where
    the norm is 0, and inf/-inf share theirs among ties."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, p):
        size = np.abs(x)
        if p == np.inf or p == -np.inf:
            y = (np.max if p > 0 else np.min)(size, axis=dims, keepdims=True)
        elif p == 0:
            y = (x != 0).sum(axis=dims, keepdims=True).astype(x.dtype)
        elif p == 1:
            y = size.sum(axis=dims, keepdims=True)
        elif p == 2:
            y = np.sqrt(np.square(x).sum(axis=dims, keepdims=True))
        else:
            with np.errstate(divide="ignore"):  # 0 ** negative p
                y = (size**p).sum(axis=dims, keepdims=True) ** (1 / p)
        ctx.save_for_backward(x, y)
        ctx.dims, ctx.keepdim, ctx.p = dims, keepdim, p
        return y if keepdim else np.squeeze(y, axis=dims)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved
        p = ctx.p
        if not ctx.keepdim:
            grad = np.expand_dims(grad, ctx.dims)
        with np.errstate(invalid="ignore", divide="ignore"):
            if p == 0:
                return np.zeros_like(x)
            if p == 1:
                return np.sign(x) * grad
            if p == np.inf or p == -np.inf:
                size = np.abs(x)
                extreme = (size == y) | np.isnan(size)
                return np.sign(x) * (grad / extreme.sum(axis=ctx.dims, keepdims=True)) * extreme
            if p == 2:
                return x * np.where(y == 0, 0, grad / y)
            if p < 1:
                scaled = np.where(x == 0, 0, np.sign(x) * np.abs(x) ** (p - 1))
                return scaled * grad * y ** (1 - p)
            scaled = np.sign(x) * np.abs(x) ** (p - 1)
            return scaled * np.where(y == 0, 0, grad / y ** (p - 1))


@op
def norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    """The p-norm of x over `dim` (all dims for None) as torch.norm: p = "fro" or 2, 1, inf, -inf,
    0 or any number. A float input (or dtype=) is needed."""
    if dtype is not None:
        x = cast(x, dtype)
    _float_input(x, "norm")
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str) or not isinstance(p, (int, float, np.number)) or isinstance(p, bool):
        raise ArgumentError(
            f"norm: p must be a number, inf, -inf or 'fro' (vector norms); got {p!r}"
        )
    dims = reduction_dims(dim, x.ndim, "norm")
    # no identity: max, min, 1 / sum(|x|^p) of nothing
    if (np.isinf(p) or p < 0) and x.numel() == 0:
        refuse_empty(x, dims, f"norm(p={p})")
    return Norm.apply(x, dims=dims, keepdim=keepdim, p=float(p))


# -- medians, k-th values, modes ----------------------------------------------------------

Picked = namedtuple("Picked", ["values", "indices"])


def _lower_median(ignore_nan):
    """The reduce for Extreme: the lower median of every element (NaN if there is one, unless
    ignore_nan, which drops them), kept in a shape of 1s."""

    def reduce(x, axis, keepdims):
        flat = np.sort(x.ravel())  # NaN sorts last
        is_nan = np.isnan(flat) if flat.dtype.kind == "f" else np.zeros(flat.shape, bool)
        values = flat[~is_nan] if ignore_nan else flat
        median = (
            flat.dtype.type(np.nan)
            if not values.size or is_nan.any() and not ignore_nan
            else values[(values.size - 1) // 2]
        )
        return np.full((1,) * x.ndim, median, x.dtype)

    return reduce


def _picked(x, dim, keepdim, position, op):
    """(values, indices) of the element of each slice along dim at `position(order, data)` in its
    stable ascending order (NaN last); the gradient goes to that element."""
    axis = normalize_dim(dim, x.ndim, op)
    if x.ndim == 0:
        return Picked(x.clone(), Tensor._wrap(np.zeros((), np.int64)))
    refuse_empty(x, (axis,), op)
    order = np.argsort(x._data, axis=axis, kind="stable")
    indices = np.take_along_axis(order, position(order, x._data, axis), axis=axis).astype(np.int64)
    values = TakeAlongDim.apply(x, indices=indices, dim=axis, keepdim=keepdim)
    return Picked(values, Tensor._wrap(indices if keepdim else np.squeeze(indices, axis)))


def _median_position(ignore_nan):
    def position(order, data, axis):
        size = data.shape[axis]
        if data.dtype.kind != "f":
            return np.full(data.shape[:axis] + (1,) + data.shape[axis + 1 :], (size - 1) // 2)
        valid = (~np.isnan(data)).sum(axis=axis, keepdims=True)
        if ignore_nan:
            return np.maximum(valid - 1, 0) // 2
        # a slice with NaN gives its first NaN: the first of the NaNs at the end of a stable order
        return np.where(valid < size, valid, (size - 1) // 2)

    return position


@op
def median(x, dim=None, keepdim=False):
    """The lower median (the smaller of the two middle values for an even count) of every element,
    NaN if one is NaN; its gradient is shared by the elements equal to it. median(x, dim) ->
    (values, indices) along dim, the gradient to the index. As torch.median."""
    if dim is None:
        refuse_empty(x, () if x.dtype.kind == "f" else range(x.ndim), "median")
        return Extreme.apply(
            x,
            dims=tuple(range(x.ndim)),
            keepdim=False,
            reduce=_lower_median(False),
            nan_shares=True,
        )
    return _picked(x, dim, keepdim, _median_position(False), "median")


@op
def nanmedian(x, dim=None, keepdim=False):
    """median ignoring NaN (NaN only where every element is NaN), as torch.nanmedian."""
    if dim is None:
        refuse_empty(x, () if x.dtype.kind == "f" else range(x.ndim), "nanmedian")
        return Extreme.apply(
            x, dims=tuple(range(x.ndim)), keepdim=False, reduce=_lower_median(True), nan_shares=True
        )
    return _picked(x, dim, keepdim, _median_position(True), "nanmedian")


@op
def kthvalue(x, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest element (k = 1 the smallest) along dim
    (torch.kthvalue)."""
    size = x.shape[normalize_dim(dim, x.ndim, "kthvalue")] if x.ndim else 1
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= size:
        raise ArgumentError(
            f"kthvalue: k must be an int in [1, {size}] "
            f"(the size of dim {dim} of shape {x.shape}); got {k!r}"
        )
    return _picked(
        x,
        dim,
        keepdim,
        lambda order, data, axis: np.full_like(
            order, k - 1, shape=order.shape[:axis] + (1,) + order.shape[axis + 1 :]
        ),
        "kthvalue",
    )


def _mode_position(order, data, axis):
    """Where in the stable order the most frequent value ends (its last occurrence): the smallest
    of the most frequent values, as torch."""
    ranked = np.take_along_axis(data, order, axis=axis)
    rows = np.moveaxis(ranked, axis, -1).reshape(-1, data.shape[axis])
    ends = np.empty(rows.shape[0], np.int64)
    for r, row in enumerate(rows):
        starts = np.flatnonzero(np.concatenate([[True], row[1:] != row[:-1]]))
        lengths = np.diff(np.append(starts, row.size))
        most = np.argmax(lengths)  # the first of the longest runs: the smallest value
        ends[r] = starts[most] + lengths[most] - 1
    shape = np.moveaxis(ranked, axis, -1).shape[:-1]
    return np.expand_dims(ends.reshape(shape), axis)


@op
def mode(x, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along dim (the smallest of ties) and its last
    position (torch.mode); the gradient goes to that position."""
    return _picked(x, dim, keepdim, _mode_position, "mode")


# -- quantiles ----------------------------------------------------------------------------

INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x, q, dim, keepdim, interpolation, ignore_nan, op):
    _float_input(x, op)
    if interpolation not in INTERPOLATIONS:
        raise ArgumentError(
            f"{op}: interpolation must be one of {', '.join(INTERPOLATIONS)}; got {interpolation!r}"
        )
    q_array = as_array(q)
    if isinstance(q, Tensor) and q.dtype != x.dtype:
        raise DTypeError(f"{op}: q must have the dtype of the input ({x.dtype}); got {q.dtype}")
    if q_array.ndim > 1:
        raise DimError(
            f"{op}: q must be a number or a 0-d or 1-D tensor; got shape {q_array.shape}"
        )
    if q_array.size and (np.isnan(q_array).any() or q_array.min() < 0 or q_array.max() > 1):
        raise ArgumentError(f"{op}: q must be in [0, 1]; got {q_array.reshape(-1).tolist()}")
    if x.numel() == 0:
        raise ArgumentError(f"{op}: the input must be non-empty; got shape {x.shape}")
    shape = x.shape
    if dim is None:
        x, axis = reshape(x, -1), 0
    else:
        axis = normalize_dim(dim, x.ndim, op)
        if x.ndim == 0:
            x = reshape(x, 1)
    ordered = movedim(sort(x, axis).values, axis, -1)  # (..., n), NaN last
    size = ordered.shape[-1]
    valid = (~np.isnan(ordered._data)).sum(axis=-1, keepdims=True)
    # rank = q * scale + start: q * (count - 1), or the end of a slice that holds NaN (quantile);
    # a tensor q that requires grad gets its gradient through the linear weight, as in torch
    if ignore_nan:
        scale, start = np.maximum(valid - 1, 0), np.zeros_like(valid)
    else:
        scale, start = np.where(valid < size, 0, size - 1), np.where(valid < size, size - 1, 0)
    q_row = reshape(q, -1) if isinstance(q, Tensor) else q_array.reshape(-1).astype(x.dtype)
    ranks = q_row * scale.astype(x.dtype) + start.astype(x.dtype)
    rank_values = as_array(ranks)
    below, above = np.floor(rank_values).astype(np.int64), np.ceil(rank_values).astype(np.int64)
    if interpolation in ("lower", "higher", "nearest"):
        picked = {
            "lower": below,
            "higher": above,
            "nearest": np.round(rank_values).astype(np.int64),
        }[interpolation]
        out = gather(ordered, -1, picked)
    else:
        weight = ranks - below.astype(x.dtype) if interpolation == "linear" else x.dtype.type(0.5)
        low, high = gather(ordered, -1, below), gather(ordered, -1, above)
        # torch's lerp: from the nearer end, so that a value next to an infinity is that infinity
        near_low = as_array(weight) < 0.5
        out = where(near_low, low + (high - low) * weight, high - (high - low) * (1 - weight))
    out = movedim(out, -1, 0)  # (len(q), ...)
    if keepdim:
        kept = (1,) * len(shape) if dim is None else shape[:axis] + (1,) + shape[axis + 1 :]
        out = reshape(out, out.shape[:1] + kept)
    return reshape(out, out.shape[1:]) if q_array.ndim == 0 else out


@op
def quantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles (q a number or a 1-D tensor in [0, 1]; its values become a first dim)
    over dim (None: every element), interpolating between the two nearest ranks as `interpolation`
    says (linear, lower, higher, midpoint, nearest); NaN where a slice holds NaN
    (torch.quantile)."""
    return _quantile(x, q, dim, keepdim, interpolation, False, "quantile")


@op
def nanquantile(x, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile ignoring NaN (NaN only where a slice is all NaN), as torch.nanquantile."""
    return _quantile(x, q, dim, keepdim, interpolation, True, "nanquantile")
