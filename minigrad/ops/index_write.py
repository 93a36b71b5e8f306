"""Ops that write into positions of a copy of x: scatter_reduce (sum, prod, mean, amax, amin of
src's values at index along dim), index_add, index_copy and index_fill (whole slices at
positions of dim). The in-place forms (scatter_reduce_, index_add_ ...) are these, written back
by ops/inplace.py. Gradients are torch's, formula for formula."""

import numpy as np

from ..errors import ArgumentError, DTypeError, DimError, ShapeError
from ..engine import Function, Tensor
from .args import as_array, integer_array, normalize_dim
from .indexing import _check_index_values, _scatter_operands, _scatter_targets, add_at
from .shape import expand, reshape
from .registry import op

REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce, dtype):
    """The value a position starts from when include_self=False: the reduction's identity."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    limits = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    big = np.inf if dtype.kind == "f" else limits.max
    return (
        -big
        if reduce == "amax" and dtype.kind == "f"
        else (limits.min if reduce == "amax" else big)
    )


def _reduce_at(x, places, values, reduce, include_self):
    """x with `values` reduced in at the flat `places` (repeats combine); float output for mean."""
    out = np.array(x, order="C")
    flat = out.reshape(-1)
    if not include_self:
        flat[places] = _identity(reduce, x.dtype)
    ufunc = {
        "sum": np.add,
        "mean": np.add,
        "prod": np.multiply,
        "amax": np.maximum,
        "amin": np.minimum,
    }[reduce]
    ufunc.at(flat, places.ravel(), values.ravel())
    if reduce == "mean":
        count = _hits(x.shape, places, include_self)
        count[count == 0] = 1  # not reached and include_self=False: x's value stays
        out = out // count.astype(x.dtype) if x.dtype.kind in "iu" else out / count.astype(x.dtype)
    return out


def _hits(shape, places, include_self):
    """How many values land at each position (plus 1 for x itself when include_self)."""
    return add_at(shape, places, np.ones(places.shape)) + (1 if include_self else 0)


class ScatterReduce(Function):
    """out = x with src's values reduced in at index along dim (torch.scatter_reduce)."""

    @staticmethod
    def forward(ctx, x, src, index, dim, reduce, include_self):
        places, values = _scatter_targets(x.shape, src, index, dim)
        out = _reduce_at(x, places, values, reduce, include_self)
        ctx.save_for_backward(x, values, out)
        ctx.places, ctx.src_shape, ctx.reduce, ctx.include_self = (
            places,
            src.shape,
            reduce,
            include_self,
        )
        return out

    @staticmethod
    def backward(ctx, grad):
        x, values, out = ctx.saved
        places, reduce, include_self = ctx.places, ctx.reduce, ctx.include_self

        def gather(array):  # array (x's shape) read at index: index's shape
            return array.reshape(-1)[places]

        with np.errstate(divide="ignore", invalid="ignore"):
            if reduce == "sum":
                grad_x, grad_values = grad, gather(grad)
            elif reduce == "mean":
                count = _hits(x.shape, places, include_self)
                count[count == 0] = 1
                grad_x = grad / count
                grad_values = gather(grad_x)
            elif reduce == "prod":
                # products of the others, exact where an element is 0: x's zeros (or a single zero
                # among a position's values) are replaced by 1 and the product taken again
                x_ones = np.where(x == 0, 1, x)
                grad_x = grad * _reduce_at(x_ones, places, values, "prod", include_self) / x_ones
                values_zero = values == 0
                zeros_there = gather(add_at(x.shape, places, values_zero.astype(grad.dtype)))
                single_zero = values_zero & (zeros_there == 1)
                without_zero = _reduce_at(
                    x, places, np.where(single_zero, 1, values), "prod", include_self
                )
                grad_values = np.where(
                    single_zero,
                    gather(grad * without_zero),
                    gather(grad * out) / np.where(values_zero, 1, values),
                )
            else:  # amax, amin: the winners share the gradient evenly (x itself counted if it ties)
                x_wins = (x == out).astype(grad.dtype)
                value_wins = values == gather(out)
                shared = grad / (x_wins + add_at(x.shape, places, value_wins.astype(grad.dtype)))
                grad_x, grad_values = x_wins * shared, value_wins * gather(shared)
        if not include_self:
            grad_x = np.array(grad_x, order="C")
            grad_x.reshape(-1)[places] = 0
        grad_src = None
        if ctx.needs_input_grad[1]:
            grad_src = np.zeros(ctx.src_shape, grad.dtype)
            grad_src[tuple(slice(0, s) for s in places.shape)] = grad_values
        return grad_x, grad_src


@op
def scatter_reduce(x, dim, index, src, reduce, *, include_self=True):
    """A copy of x with src's values reduced in at `index` along dim: out[index[i][j]][j] =
    reduce(out[...], src[i][j]) for dim 0, reduce one of sum, prod, mean, amax, amin; with
    include_self=False the positions reached start without x's value (torch.scatter_reduce)."""
    if reduce not in REDUCTIONS:
        raise ArgumentError(
            f"scatter_reduce: reduce must be one of {', '.join(REDUCTIONS)}; got {reduce!r}"
        )
    dim, index, src = _scatter_operands(x, dim, index, src, "scatter_reduce")
    return ScatterReduce.apply(
        x, src, index=index, dim=dim, reduce=reduce, include_self=bool(include_self)
    )


# -- whole slices at positions of a dim ----------------------------------------------------


def _slice_index(x, dim, index, op, negative=False):
    """(dim, index) for index_add/copy/fill: a 1-D (or 0-d) integer index of positions along dim
    (negative ones counted from the end when `negative`, as torch's index_fill)."""
    dim = normalize_dim(dim, x.ndim, op)
    index = integer_array(index, op)
    if index.ndim > 1:
        raise DimError(f"{op}: index must be 1-D (or 0-d); got shape {index.shape}")
    size = x.shape[dim] if x.ndim else 1
    index = index.reshape(-1)
    if negative:
        index = np.where(index < 0, index + size, index)
    _check_index_values(index, size, dim, op)
    return dim, index


def _as_tensor(source, x):
    return source if isinstance(source, Tensor) else Tensor._wrap(np.asarray(source, dtype=x.dtype))


def _source(x, dim, index, source, op):
    """source as a Tensor of x's dtype with x's shape but len(index) along dim."""
    source = _as_tensor(source, x)
    if source.dtype != x.dtype:
        raise DTypeError(
            f"{op}: source must have the dtype of the input ({x.dtype}); got {source.dtype}"
        )
    expected = x.shape[:dim] + (index.size,) + x.shape[dim + 1 :]
    if source.shape != expected:
        raise ShapeError(
            f"{op}: source must have shape {expected} (the input's {x.shape} with the {index.size} "
            f"indexed positions along dim {dim}); got {source.shape}"
        )
    return source


class IndexAdd(Function):
    """out = x with alpha * source's slices added at positions index along dim (repeats add up)."""

    @staticmethod
    def forward(ctx, x, source, index, dim, alpha):
        ctx.index, ctx.dim, ctx.alpha = index, dim, alpha
        out = x.copy()
        np.add.at(out, (slice(None),) * dim + (index,), source * alpha if alpha != 1 else source)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad, np.take(grad, ctx.index, axis=ctx.dim) * ctx.alpha


@op
def index_add(x, dim, index, source, *, alpha=1):
    """A copy of x with alpha * source's slices added at `index` along dim (torch.index_add)."""
    if x.ndim == 0:
        return index_add(
            x.reshape(1), dim, index, _as_tensor(source, x).reshape(-1), alpha=alpha
        ).reshape(())
    dim, index = _slice_index(x, dim, index, "index_add")
    return IndexAdd.apply(
        x, _source(x, dim, index, source, "index_add"), index=index, dim=dim, alpha=alpha
    )


class IndexCopy(Function):
    """out = x with source's slices written at positions index along dim; d x = grad with those
    slices 0, d source = grad's slices at index."""

    @staticmethod
    def forward(ctx, x, source, index, dim):
        ctx.where, ctx.index, ctx.dim = (slice(None),) * dim + (index,), index, dim
        out = x.copy()
        out[ctx.where] = source
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_x = grad.copy()
        grad_x[ctx.where] = 0
        return grad_x, np.take(grad, ctx.index, axis=ctx.dim)


@op
def index_copy(x, dim, index, source):
    """A copy of x with source's slices put at `index` along dim (torch.index_copy)."""
    if x.ndim == 0:
        return index_copy(x.reshape(1), dim, index, _as_tensor(source, x).reshape(-1)).reshape(())
    dim, index = _slice_index(x, dim, index, "index_copy")
    return IndexCopy.apply(x, _source(x, dim, index, source, "index_copy"), index=index, dim=dim)


@op
def index_fill(x, dim, index, value):
    """A copy of x with the slices at `index` along dim set to value (a number or a 0-d tensor,
    which gets a gradient), as torch.index_fill; negative positions count from the end."""
    if np.ndim(as_array(value)):
        raise ArgumentError(
            "index_fill: value must be a number or a 0-d tensor; "
            f"got shape {np.shape(as_array(value))}"
        )
    if x.ndim == 0:
        return index_fill(x.reshape(1), dim, index, value).reshape(())
    dim, index = _slice_index(x, dim, index, "index_fill", negative=True)
    index = np.unique(index)  # each slice once, so that value's gradient counts it once
    value = (
        value
        if isinstance(value, Tensor)
        else Tensor._wrap(np.asarray(as_array(value).item(), dtype=x.dtype))
    )
    slices = expand(
        reshape(value.to(x.dtype), (1,) * x.ndim),
        x.shape[:dim] + (index.size,) + x.shape[dim + 1 :],
    )
    return IndexCopy.apply(x, slices, index=index, dim=dim)
