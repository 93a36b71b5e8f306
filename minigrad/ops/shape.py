"""Ops that rearrange elements without changing them (reshape, permute, flip, roll, narrow ...),
and tril/triu, which zero some. Each backward moves the gradient back the same way."""

import math

import numpy as np

from ..errors import ArgumentError, DimError, ShapeError
from ..engine import Function
from .args import normalize_dim, normalize_dims, shape_args
from .indexing import getitem, place
from .namespace import namespace
from .registry import op


class Reshape(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape)


def infer_shape(shape, size, op):
    """A shape with at most one -1, resolved for `size` elements (ShapeError if it cannot be)."""
    known = math.prod(s for s in shape if s != -1)
    if shape.count(-1) == 1 and known and size % known == 0:
        shape = tuple(size // known if s == -1 else s for s in shape)
    if shape.count(-1) or any(s < 0 for s in shape) or math.prod(shape) != size:
        raise ShapeError(f"{op}: cannot view {size} elements as shape {shape}")
    return shape


@op
def reshape(x, *shape):
    """x with another shape of the same number of elements (one size may be -1)."""
    shape = infer_shape(shape_args(shape), x.numel(), f"reshape of shape {x.shape}")
    return x if shape == x.shape else Reshape.apply(x, shape=shape)


def _reshapes_in_place(array, shape):
    """True when array can take `shape` as a view of the same memory (no copy)."""
    try:
        np.reshape(array, shape, copy=False)
    except TypeError:  # numpy < 2.1 has no copy= here
        try:
            array.view().shape = shape
        except AttributeError:
            return False
    except ValueError:
        return False
    return True


@op(public=False)
def view(x, *shape):
    """x with another shape, sharing its memory, as torch's view: where the strides do not allow
    it (a transposed tensor flattened, say) it raises, as torch does, instead of copying
    silently (writes through a copy would never reach x); reshape() copies when it must."""
    shape = infer_shape(shape_args(shape), x.numel(), f"view of shape {x.shape}")
    if not _reshapes_in_place(x._data, shape):
        raise ShapeError(
            f"view: a tensor of shape {x.shape} with strides {x._data.strides} cannot be viewed as "
            f"shape {shape} without a copy; use .reshape(...) (or .contiguous().view(...))"
        )
    return x if shape == x.shape else Reshape.apply(x, shape=shape)


@op(public=False)
def view_as(x, other):
    return view(x, *other.shape)


@op(public=False)
def expand_as(x, other):
    return expand(x, other.shape)


class Permute(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.inverse = tuple(int(d) for d in np.argsort(dims))
        return np.transpose(x, dims)

    @staticmethod
    def backward(ctx, grad):
        return namespace(grad).transpose(grad, ctx.inverse)


@op
def permute(x, *dims):
    if not dims:
        raise TypeError("permute: expects the order of the dims, e.g. x.permute(1, 0)")
    dims = tuple(normalize_dim(d, x.ndim, "permute") for d in shape_args(dims, "permute"))
    if sorted(dims) != list(range(x.ndim)):
        raise DimError(
            f"permute: dims {dims} are not a permutation of the {x.ndim} dims of shape {x.shape}"
        )
    return Permute.apply(x, dims=dims)


@op
def transpose(x, dim0, dim1):
    """x with dims dim0 and dim1 swapped (also called swapaxes and swapdims)."""
    dims = list(range(x.ndim))
    dim0, dim1 = normalize_dim(dim0, x.ndim, "transpose"), normalize_dim(dim1, x.ndim, "transpose")
    if x.ndim == 0:
        return x
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return Permute.apply(x, dims=tuple(dims))


swapaxes = op(transpose, name="swapaxes")
swapdims = op(transpose, name="swapdims")


@op
def t(x):
    """The transpose of a matrix (a 0-d or 1-D tensor is returned as it is), as torch.t."""
    if x.ndim > 2:
        raise DimError(
            f"t: expects a tensor with at most 2 dims; got shape {x.shape}. "
            "Use transpose(dim0, dim1)"
        )
    return transpose(x, 0, -1) if x.ndim == 2 else x


@op
def movedim(x, source, destination):
    """Move dims `source` to positions `destination` (ints or equal-length sequences), others in
    order."""
    source = (source,) if isinstance(source, (int, np.integer)) else tuple(source)
    destination = (
        (destination,) if isinstance(destination, (int, np.integer)) else tuple(destination)
    )
    if len(source) != len(destination):
        raise ShapeError(
            f"movedim: source {source} and destination {destination} must have the same length"
        )
    source = [normalize_dim(d, x.ndim, "movedim") for d in source]
    destination = [normalize_dim(d, x.ndim, "movedim") for d in destination]
    for name, dims in (("source", source), ("destination", destination)):
        if len(set(dims)) != len(dims):
            raise DimError(f"movedim: repeated dim in {name} {dims}")
    if x.ndim == 0:
        return x
    order = [d for d in range(x.ndim) if d not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return Permute.apply(x, dims=tuple(order))


moveaxis = op(movedim, name="moveaxis")


@op
def unsqueeze(x, dim):
    dim = normalize_dim(dim, x.ndim + 1, "unsqueeze")
    return reshape(x, x.shape[:dim] + (1,) + x.shape[dim:])


@op
def squeeze(x, dim=None):
    """Drop size-1 dims: all of them, or those of `dim` (an int or a tuple) that have size 1."""
    dims = range(x.ndim) if dim is None else normalize_dims(dim, x.ndim, "squeeze")
    drop = {d for d in dims if x.shape[d] == 1}
    return reshape(x, tuple(s for d, s in enumerate(x.shape) if d not in drop))


@op
def flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return reshape(x, 1)
    start, end = (
        normalize_dim(start_dim, x.ndim, "flatten"),
        normalize_dim(end_dim, x.ndim, "flatten"),
    )
    if start > end:
        raise DimError(
            f"flatten: start_dim {start_dim} comes after end_dim {end_dim} (shape {x.shape})"
        )
    return reshape(x, x.shape[:start] + (math.prod(x.shape[start : end + 1]),) + x.shape[end + 1 :])


@op
def unflatten(x, dim, sizes):
    """Split dim `dim` into several of sizes `sizes` (one may be -1): the inverse of flatten."""
    dim = normalize_dim(dim, x.ndim, "unflatten")
    sizes = infer_shape(
        shape_args((sizes,), "unflatten"),
        x.shape[dim] if x.ndim else 1,
        f"unflatten of dim {dim} (size {x.shape[dim] if x.ndim else 1})",
    )
    return reshape(x, x.shape[:dim] + sizes + x.shape[dim + 1 :])


class Expand(Function):
    """Broadcast to a larger shape; the walk's sum_to sums the gradient back."""

    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, shape):
        return np.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, grad):
        return grad


@op
def expand(x, *shape):
    """x broadcast to `shape` (-1 keeps a size); no copy."""
    shape = shape_args(shape, "expand")
    lead = len(shape) - x.ndim
    if lead < 0 or any(s == -1 for s in shape[:lead]):
        raise ShapeError(f"expand: cannot expand shape {x.shape} to {shape}")
    target = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    try:
        if np.broadcast_shapes(x.shape, target) != target:
            raise ValueError
    except ValueError:
        raise ShapeError(f"expand: cannot expand shape {x.shape} to {shape}") from None
    return Expand.apply(x, shape=target)


broadcast_to = op(expand, name="broadcast_to")


@op
def ravel(x):
    """x as a 1-D tensor (torch.ravel)."""
    return reshape(x, -1)


# -- reversing, rolling, cutting ----------------------------------------------------------


class Flip(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        # a copy, as torch's flip: writing into it leaves x as it was
        return np.flip(x, dims).copy()

    @staticmethod
    def backward(ctx, grad):
        return np.flip(grad, ctx.dims) if namespace(grad) is np else grad.flip(ctx.dims)


@op
def flip(x, dims):
    """Reverse the order of elements along each of `dims` (an int or a sequence of distinct
    dims)."""
    dims = normalize_dims(
        (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims), x.ndim, "flip"
    )
    return Flip.apply(x, dims=dims)


@op
def fliplr(x):
    """x with the order of its columns (dim 1) reversed; needs at least 2 dims."""
    if x.ndim < 2:
        raise DimError(f"fliplr: expects a tensor with at least 2 dims; got shape {x.shape}")
    return flip(x, 1)


@op
def flipud(x):
    """x with the order of its rows (dim 0) reversed; needs at least 1 dim."""
    if x.ndim < 1:
        raise DimError("flipud: expects a tensor with at least 1 dim; got a 0-d tensor")
    return flip(x, 0)


@op
def rot90(x, k=1, dims=(0, 1)):
    """x turned by k quarter turns in the plane of `dims`, from the first dim towards the second
    (torch.rot90; k may be negative)."""
    dims = tuple(dims)
    if len(dims) != 2:
        raise ArgumentError(f"rot90: dims must name two dims; got {dims}")
    if x.ndim < 2:
        raise DimError(f"rot90: expects a tensor with at least 2 dims; got shape {x.shape}")
    first, second = (normalize_dim(d, x.ndim, "rot90") for d in dims)
    if first == second:
        raise DimError(f"rot90: dims must be two different dims; got {dims}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"rot90: k must be an int; got {type(k).__name__} {k!r}")
    turns = int(k) % 4
    if turns == 0:
        return x.clone()
    if turns == 2:
        return flip(x, (first, second))
    return transpose(flip(x, second if turns == 1 else first), first, second)


class Roll(Function):
    @staticmethod
    def forward(ctx, x, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return np.roll(x, shifts, axis=dims)

    @staticmethod
    def backward(ctx, grad):
        return np.roll(grad, tuple(-s for s in ctx.shifts), axis=ctx.dims)


@op
def roll(x, shifts, dims=None):
    """Shift elements along `dims` by `shifts`, wrapping around; dims=None rolls the flattened
    tensor."""
    shifts = (shifts,) if isinstance(shifts, (int, np.integer)) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise ShapeError(f"roll: without dims, shifts must be one int; got {shifts}")
        return reshape(Roll.apply(reshape(x, -1), shifts=shifts, dims=(0,)), x.shape)
    dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
    if len(shifts) != len(dims):
        raise ShapeError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    if x.ndim == 0:
        raise DimError(f"roll: a 0-d tensor has no dim {dims[0]} (roll it without dims)")
    dims = tuple(normalize_dim(d, x.ndim, "roll") for d in dims)
    return Roll.apply(x, shifts=tuple(int(s) for s in shifts), dims=dims)


class Narrow(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, dim, start, length):
        ctx.shape, ctx.window = x.shape, (slice(None),) * dim + (slice(start, start + length),)
        return x[ctx.window]

    @staticmethod
    def backward(ctx, grad):
        if namespace(grad) is not np:  # create_graph=True: grad placed in zeros, as an op
            return place(grad, ctx.shape, ctx.window, None)
        full = np.zeros(ctx.shape, grad.dtype)
        full[ctx.window] = grad
        return full


@op
def narrow(x, dim, start, length):
    """The `length` elements of dim `dim` from `start` on (start may be negative)."""
    dim = normalize_dim(dim, x.ndim, "narrow")
    size = x.shape[dim] if x.ndim else 1
    start, length = int(start), int(length)
    first = start + size if start < 0 else start
    if not 0 <= first <= size or length < 0 or first + length > size:
        raise ShapeError(
            f"narrow: start {start} and length {length} do not fit dim {dim} of size {size} "
            f"(shape {x.shape})"
        )
    start = first
    return x if x.ndim == 0 else Narrow.apply(x, dim=dim, start=start, length=length)


class Unfold(Function):
    """out[..., i, ..., j] = x[..., i * step + j, ...] along dim (the windows in a new last dim);
    d x: each window's gradient added back where it was read (windows may overlap)."""

    @staticmethod
    def forward(ctx, x, dim, size, step):
        ctx.shape, ctx.dim, ctx.size, ctx.step = x.shape, dim, size, step
        windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=dim)
        return windows[(slice(None),) * dim + (slice(None, None, step),)].copy()

    @staticmethod
    def backward(ctx, grad):
        full = np.zeros(ctx.shape, grad.dtype)
        for i in range(grad.shape[ctx.dim]):
            window = (slice(None),) * ctx.dim + (slice(i * ctx.step, i * ctx.step + ctx.size),)
            full[window] += np.moveaxis(np.take(grad, i, axis=ctx.dim), -1, ctx.dim)
        return full


@op(public=False)
def unfold(x, dimension, size, step):
    """The windows of `size` elements along `dimension`, `step` apart, as a new last dim: that dim
    becomes (length - size) // step + 1 long (torch's Tensor.unfold)."""
    dim = normalize_dim(dimension, x.ndim, "unfold")
    length = x.shape[dim] if x.ndim else 1
    for name, value in (("size", size), ("step", step)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"unfold: {name} must be an int; got {type(value).__name__} {value!r}")
    if step <= 0 or not 0 <= size <= length:
        raise ArgumentError(
            f"unfold: expected 0 <= size <= {length} (the size of dim {dim}) and step > 0; "
            f"got size {size} and step {step}"
        )
    if x.ndim == 0:
        return reshape(x, 1)[:size]  # one element, seen as 1-D: one window of size 1, or none
    return Unfold.apply(x, dim=dim, size=int(size), step=int(step))


class TriangleMask(Function):
    """tril/triu: zero the elements outside a triangle of the last two dims (gradient likewise)."""

    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, keep):
        ctx.keep = keep
        return np.where(keep, x, np.zeros((), x.dtype))

    @staticmethod
    def backward(ctx, grad):
        return namespace(grad).where(ctx.keep, grad, 0)


def _triangle(x, diagonal, lower, op):
    if x.ndim < 2:
        raise DimError(f"{op}: the input needs at least 2 dims; got shape {x.shape}")
    rows, cols = x.shape[-2:]
    offset = np.arange(cols)[None, :] - np.arange(rows)[:, None]  # column - row
    keep = offset <= diagonal if lower else offset >= diagonal
    return TriangleMask.apply(x, keep=keep)


@op
def tril(x, diagonal=0):
    """The lower triangle of the last two dims (on and below the `diagonal`-th diagonal), zeros
    above."""
    return _triangle(x, diagonal, True, "tril")


@op
def triu(x, diagonal=0):
    """The upper triangle of the last two dims (on and above the `diagonal`-th diagonal), zeros
    below."""
    return _triangle(x, diagonal, False, "triu")


@op
def select(x, dim, index):
    """The slice at position `index` along dim, that dim gone (torch.select): x[:, index] for dim
    1."""
    dim = normalize_dim(dim, x.ndim, "select")
    return getitem(x, (slice(None),) * dim + (index,))
