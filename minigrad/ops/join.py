"""Ops that join tensors or cut one into pieces (cat, stack, hstack ..., split, chunk, hsplit ...,
unbind), that broadcast them together (broadcast_tensors, meshgrid) and that repeat one
(repeat, tile, repeat_interleave). A cut is one graph node with one output per
piece; its backward joins the pieces' gradients again."""

import numpy as np

from ..dtypes import result_type
from ..errors import ArgumentError, DTypeError, DimError, ShapeError
from ..engine import Function, Tensor
from .args import check_broadcast, integer_array, normalize_dim, shape_args
from .conversion import cast
from .indexing import IndexSelect
from .shape import expand, reshape, unsqueeze
from .namespace import namespace
from .registry import op


def _tensors(tensors, op):
    tensors = [t if isinstance(t, Tensor) else Tensor(t) for t in tensors]
    if not tensors:
        raise ArgumentError(f"{op}: expected a non-empty sequence of tensors")
    dtype = result_type(*[t for t in tensors])
    return [cast(t, dtype) for t in tensors]


class Cat(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, *arrays, dim):
        ctx.dim = dim
        ctx.splits = np.cumsum([a.shape[dim] for a in arrays])[:-1]
        return np.concatenate(arrays, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        return tuple(namespace(grad).split(grad, ctx.splits, axis=ctx.dim))


@op(method=False)
def cat(tensors, dim=0):
    """Join tensors along an existing dim; the others must match. Result dtype as torch promotes."""
    tensors = _tensors(tensors, "cat")
    if any(t.ndim > 1 for t in tensors):  # torch skips legacy empty (0,) tensors among n-d ones
        tensors = [t for t in tensors if t.shape != (0,)] or tensors
    first = tensors[0]
    if first.ndim == 0:
        raise DimError("cat: zero-dimensional tensors cannot be concatenated; use stack")
    dim = normalize_dim(dim, first.ndim, "cat")
    for t in tensors[1:]:
        if (
            t.ndim != first.ndim
            or t.shape[:dim] + t.shape[dim + 1 :] != first.shape[:dim] + first.shape[dim + 1 :]
        ):
            raise ShapeError(
                f"cat: all tensors must have the same shape except in dim {dim}; "
                f"got {first.shape} and {t.shape}"
            )
    return Cat.apply(*tensors, dim=dim)


concat = op(cat, name="concat", method=False)
concatenate = op(cat, name="concatenate", method=False)


class Stack(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, *arrays, dim):
        ctx.dim = dim
        return np.stack(arrays, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        if namespace(grad) is not np:
            return tuple(grad.select(ctx.dim, i) for i in range(grad.shape[ctx.dim]))
        return tuple(np.moveaxis(grad, ctx.dim, 0))


@op(method=False)
def stack(tensors, dim=0):
    """Join same-shaped tensors along a new dim."""
    tensors = _tensors(tensors, "stack")
    dim = normalize_dim(dim, tensors[0].ndim + 1, "stack")
    for t in tensors[1:]:
        if t.shape != tensors[0].shape:
            raise ShapeError(
                f"stack: all tensors must have the same shape; got {tensors[0].shape} and {t.shape}"
            )
    return Stack.apply(*tensors, dim=dim)


def _at_least(tensors, ndim, op):
    """The tensors with size-1 dims added (numpy's atleast_1d/2d/3d): a vector (n,) becomes (1, n)
    and then (1, n, 1), a matrix (m, n) becomes (m, n, 1)."""
    if isinstance(tensors, Tensor):
        raise TypeError(f"{op}: expects a sequence of tensors; got one Tensor (wrap it in a list)")
    shaped = []
    for t in _tensors(tensors, op):
        if t.ndim == 0:
            t = reshape(t, (1,) * ndim)
        elif t.ndim == 1 and ndim >= 2:
            t = reshape(t, (1, t.shape[0], 1)[:ndim])
        elif t.ndim == 2 and ndim == 3:
            t = unsqueeze(t, 2)
        shaped.append(t)
    return shaped


@op(method=False)
def hstack(tensors):
    """Join along dim 1 (along dim 0 for vectors), as torch.hstack."""
    tensors = _at_least(tensors, 1, "hstack")
    return cat(tensors, 0 if all(t.ndim == 1 for t in tensors) else 1)


@op(method=False)
def vstack(tensors):
    """Join along dim 0, vectors as rows (1, n) (torch.vstack, also called row_stack)."""
    return cat(_at_least(tensors, 2, "vstack"), 0)


@op(method=False)
def dstack(tensors):
    """Join along dim 2 (depth), vectors as (1, n, 1) and matrices as (m, n, 1) (torch.dstack)."""
    return cat(_at_least(tensors, 3, "dstack"), 2)


@op(method=False)
def column_stack(tensors):
    """Join along dim 1, vectors (and numbers) as columns (n, 1) (torch.column_stack)."""
    tensors = [
        reshape(t, (-1, 1)) if t.ndim < 2 else t for t in _at_least(tensors, 1, "column_stack")
    ]
    return cat(tensors, 1)


@op(method=False)
def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape (views, as torch.broadcast_tensors)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    tensors = [t if isinstance(t, Tensor) else Tensor(t) for t in tensors]
    shape = check_broadcast("broadcast_tensors", *tensors)
    return tuple(expand(t, shape) for t in tensors)


@op(method=False)
def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 1-D (or 0-d) tensors: output k repeats tensor k along its own dim of
    the shape (n_0, n_1, ...); indexing="xy" swaps the first two dims (numpy's and matplotlib's
    layout). The grids are expanded views, as torch's."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy'; got {indexing!r}")
    if not tensors:
        raise ArgumentError("meshgrid: expects at least one tensor")
    tensors = [t if isinstance(t, Tensor) else Tensor(t) for t in tensors]
    for t in tensors:
        if t.ndim > 1:
            raise DimError(f"meshgrid: expects 0-d or 1-D tensors; got shape {t.shape}")
    if len({t.dtype for t in tensors}) > 1:
        raise DTypeError(
            "meshgrid: expects tensors of one dtype; "
            f"got {', '.join(str(t.dtype) for t in tensors)}"
        )
    position = list(range(len(tensors)))  # the dim of the grid each tensor runs along
    if indexing == "xy" and len(tensors) > 1:
        position[0], position[1] = 1, 0
    shape = [0] * len(tensors)
    for t, dim in zip(tensors, position):
        shape[dim] = t.numel()
    grids = []
    for t, dim in zip(tensors, position):
        along = [1] * len(tensors)
        along[dim] = -1
        grids.append(expand(reshape(t, along), shape))
    return tuple(grids)


# -- cutting ------------------------------------------------------------------------------


class Split(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, sizes, dim):
        ctx.dim = dim
        return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim))

    @staticmethod
    def backward(ctx, *grads):
        return namespace(grads[0]).concatenate(grads, axis=ctx.dim)


def _cut_dim(x, dim, op):
    if x.ndim == 0:
        raise DimError(f"{op}: expects a tensor with at least 1 dim; got a 0-d tensor")
    return normalize_dim(dim, x.ndim, op)


@op
def split(x, split_size_or_sections, dim=0):
    """Pieces of `split_size` along dim (the last may be smaller), or of the listed sizes."""
    dim = _cut_dim(x, dim, "split")
    size = x.shape[dim]
    if isinstance(split_size_or_sections, (int, np.integer)):
        step = int(split_size_or_sections)
        if step < 0 or (step == 0 and size):
            raise ShapeError(
                "split: split_size must be positive (0 only for an empty dim); "
                f"got {step} for dim {dim} of size {size}"
            )
        sizes = [step] * (size // step) + ([size % step] if size % step else []) if size else [0]
    else:
        sizes = list(shape_args((split_size_or_sections,), "split"))
        if any(s < 0 for s in sizes) or np.sum(sizes) != size:
            raise ShapeError(
                f"split: sizes {sizes} must be non-negative and add up to {size}, the size of "
                f"dim {dim} (shape {x.shape})"
            )
    return Split.apply(x, sizes=sizes, dim=dim)


@op
def chunk(x, chunks, dim=0):
    """`chunks` pieces of equal size along dim (size ceil(n / chunks); there may be fewer), as
    torch."""
    dim = _cut_dim(x, dim, "chunk")
    if not isinstance(chunks, (int, np.integer)) or chunks <= 0:
        raise ArgumentError(f"chunk: chunks must be a positive int; got {chunks!r}")
    size = x.shape[dim]
    if size == 0:
        return Split.apply(x, sizes=[0] * int(chunks), dim=dim)
    return split(x, -(-size // int(chunks)), dim)


class Unbind(Function):
    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return tuple(np.moveaxis(x, dim, 0))

    @staticmethod
    def backward(ctx, *grads):
        return np.stack(grads, axis=ctx.dim)


@op
def unbind(x, dim=0):
    """The slices of x along dim, as a tuple (dim removed)."""
    dim = _cut_dim(x, dim, "unbind")
    if x.shape[dim] == 0:
        return ()
    return Unbind.apply(x, dim=dim)


def _split_by(x, sections, dim, op):
    """x cut along dim into `sections` equal pieces (an int, which must divide the size) or at the
    listed positions, each piece a slice as x[a:b] (torch's tensor_split; hsplit, vsplit,
    dsplit)."""
    size = x.shape[dim]
    if isinstance(sections, (int, np.integer)) and not isinstance(sections, bool):
        if sections <= 0 or size % sections:
            raise ArgumentError(
                f"{op}: cannot split dim {dim} of size {size} (shape {x.shape}) into {sections} "
                f"equal pieces; give a number of pieces that divides {size}, or split positions"
            )
        return split(x, size // int(sections), dim)
    bounds = [0] + list(shape_args((sections,), op)) + [size]
    return tuple(
        x[(slice(None),) * dim + (slice(start, stop),)] for start, stop in zip(bounds, bounds[1:])
    )


@op
def hsplit(x, sections):
    """Cut along dim 1 (dim 0 for a vector) into equal pieces or at positions (torch.hsplit)."""
    if x.ndim == 0:
        raise DimError("hsplit: expects a tensor with at least 1 dim; got a 0-d tensor")
    return _split_by(x, sections, 1 if x.ndim > 1 else 0, "hsplit")


@op
def vsplit(x, sections):
    """Cut along dim 0 into equal pieces or at positions; needs at least 2 dims (torch.vsplit)."""
    if x.ndim < 2:
        raise DimError(f"vsplit: expects a tensor with at least 2 dims; got shape {x.shape}")
    return _split_by(x, sections, 0, "vsplit")


@op
def dsplit(x, sections):
    """Cut along dim 2 into equal pieces or at positions; needs at least 3 dims (torch.dsplit)."""
    if x.ndim < 3:
        raise DimError(f"dsplit: expects a tensor with at least 3 dims; got shape {x.shape}")
    return _split_by(x, sections, 2, "dsplit")


# -- repeating ----------------------------------------------------------------------------


class Repeat(Function):
    """np.tile; the gradient of each input element is the sum over its copies."""

    @staticmethod
    def forward(ctx, x, repeats):
        ctx.shape, ctx.repeats = x.shape, repeats
        return np.tile(x, repeats)

    @staticmethod
    def backward(ctx, grad):
        # (r0 * s0, r1 * s1, ...) -> (r0, s0, r1, s1, ...), summed over the r axes
        padded = (1,) * (len(ctx.repeats) - len(ctx.shape)) + ctx.shape
        pairs = [n for pair in zip(ctx.repeats, padded) for n in pair]
        return grad.reshape(pairs).sum(axis=tuple(range(0, len(pairs), 2))).reshape(ctx.shape)


@op(public=False)
def repeat(x, *sizes):
    """x repeated sizes[i] times along each dim (torch's repeat: as many sizes as dims, or more)."""
    if not sizes:
        raise TypeError("repeat: expects the number of repeats of each dim, e.g. x.repeat(2, 1)")
    sizes = shape_args(sizes, "repeat")
    if len(sizes) < x.ndim:
        raise ShapeError(
            f"repeat: needs at least one size per dim ({x.ndim} for shape {x.shape}); got {sizes}"
        )
    if any(s < 0 for s in sizes):
        raise ShapeError(f"repeat: sizes must be non-negative; got {sizes}")
    return Repeat.apply(x, repeats=sizes)


@op
def tile(x, dims):
    """As repeat, but fewer sizes than dims are padded with 1s on the left (torch.tile)."""
    dims = shape_args((dims,) if isinstance(dims, (tuple, list)) else (dims,), "tile")
    return repeat(x, (1,) * (x.ndim - len(dims)) + dims)


@op
def repeat_interleave(x, repeats, dim=None):
    """Each element (slice along dim) repeated `repeats` times in place: [a, b] -> [a, a, b, b].
    repeats: an int, or one count per element along dim; dim=None works on the flattened tensor."""
    if dim is None:
        x, dim = reshape(x, -1), 0
    dim = _cut_dim(x, dim, "repeat_interleave")
    size = x.shape[dim]
    counts = (
        np.asarray(repeats, dtype=np.int64)
        if isinstance(repeats, (int, np.integer))
        else integer_array(repeats, "repeat_interleave", "repeats").reshape(-1)
    )
    if counts.size == 1:
        counts = np.full(size, counts.item(), dtype=np.int64)
    if counts.shape != (size,):
        raise ShapeError(
            f"repeat_interleave: expected one repeat count or {size} (the size of dim {dim}); "
            f"got {counts.size}"
        )
    if counts.size and counts.min() < 0:
        raise ArgumentError(f"repeat_interleave: repeats must be non-negative; got {counts.min()}")
    if counts.size and (counts == counts[0]).all():  # one count: a broadcast (its gradient: a sum)
        shape, times = x.shape, int(counts[0])
        copies = expand(unsqueeze(x, dim + 1), shape[: dim + 1] + (times,) + shape[dim + 1 :])
        return reshape(copies, shape[:dim] + (size * times,) + shape[dim + 1 :])
    return IndexSelect.apply(x, index=np.repeat(np.arange(size), counts), dim=dim)
