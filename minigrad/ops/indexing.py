"""Reading elements by position: x[index], gather, index_select, masked_select, and scatter_add
(which adds into positions). Gradients go back to the positions read; repeated positions add up.

x[index] follows torch where it differs from numpy: integers are applied first, so they do not
count as index arrays (x[1, :, [0, 2]] on shape (2, 3, 3) has shape (3, 2), not numpy's (2, 3));
a 0-d integer tensor is an integer; a negative slice step is an error; a short list that holds
lists, tensors, slices, None or ... is a tuple of indices (x[[[0, 1], [1, 2]]] is
x[[0, 1], [1, 2]]); a list of floats is read as int64.
"""

import math
import warnings

import numpy as np

from ..errors import ArgumentError, DTypeError, DimError, IndexRangeError, ShapeError
from ..engine import Function, Tensor
from .args import as_array, bool_mask, check_broadcast, integer_array, normalize_dim
from .namespace import namespace
from .registry import op


# -- x[index] -----------------------------------------------------------------------------


def list_index_as_tuple(index):
    """torch's reading of a list index (numpy's before 1.23): a list of fewer than 32 parts of
    which one is a sequence, a tensor, a slice, None or Ellipsis stands for the tuple of its
    parts, one index per dim, with a warning (torch's says this is to change). Any other list
    is one index array."""
    if not isinstance(index, list) or len(index) >= 32:
        return index
    if not any(
        isinstance(part, (list, tuple, range, np.ndarray, Tensor, slice))
        or part is None
        or part is Ellipsis
        for part in index
    ):
        return index
    warnings.warn(
        "x[seq] with a list seq that holds lists, tensors, slices, None or ... is read as "
        "x[tuple(seq)], one index per dim, as torch does for now (it warns that this will change); "
        "write x[tuple(seq)], or x[tensor(seq)] for one index array",
        UserWarning,
        stacklevel=3,
    )
    return tuple(index)


def _index_part(part):
    """One part of an index as numpy takes it: tensors and lists become arrays."""
    if isinstance(part, Tensor):
        part = part._data
        if part.ndim == 0 and part.dtype.kind in "iub":  # as torch: a 0-d int tensor is an int
            return int(part) if part.dtype.kind in "iu" else bool(part)
    if isinstance(part, (list, tuple)):  # a tuple inside an index is a sequence, as a list is
        part = np.asarray(part) if part else np.zeros(0, np.int64)
        # as torch: a list of numbers is read as int64, floats cut towards 0
        if part.dtype.kind == "f":
            part = part.astype(np.int64)
    if isinstance(part, np.ndarray) and part.dtype.kind not in "iub":
        raise IndexError(f"tensors used as indices must be integer or bool; got dtype {part.dtype}")
    if isinstance(part, slice) and part.step is not None and part.step <= 0:
        raise ArgumentError(
            f"slice step must be positive (as in torch; use flip to reverse); got {part.step}"
        )
    return part


def index_parts(index):
    """An index with its tensors and lists made numpy arrays (a tuple stays a tuple)."""
    return tuple(_index_part(p) for p in index) if isinstance(index, tuple) else _index_part(index)


def split_index(index):
    """torch's index -> (first, then): x[index] in torch is x[first][then] in numpy.

    `first` applies the integers, slices, None and Ellipsis (a view); `then` applies the index
    arrays to that view, or is None when there are none. Splitting matters only when integers
    and arrays meet: numpy counts integers as index arrays, torch does not.
    """
    parts = index if isinstance(index, tuple) else (index,)
    parts = tuple(_index_part(p) for p in parts)
    arrays = [isinstance(p, np.ndarray) for p in parts]
    if not any(arrays):
        return parts, None
    if not any(isinstance(p, (int, np.integer)) and not isinstance(p, bool) for p in parts):
        return (Ellipsis,), parts
    first, then = [], []
    for part, is_array in zip(parts, arrays):
        if is_array:
            first.extend([slice(None)] * max(part.ndim if part.dtype == np.bool_ else 1, 1))
            then.append(part)
        elif isinstance(part, (int, np.integer)) and not isinstance(part, bool):
            first.append(part)
        elif part is Ellipsis:
            first.append(part)
            then.append(part)
        else:  # a slice or None: applied by `first`, the dim it leaves is taken whole by `then`
            first.append(part)
            then.append(slice(None))
    return tuple(first), tuple(then)


def _index(array, index):
    """array[index], as an array: a single element comes back as a 0-d view of it, not as a
    numpy scalar (a copy), so that x[0, 1].fill_(9) writes into x, as in torch."""
    picked = array[index]
    if isinstance(picked, np.ndarray):
        return picked
    return array[(index if isinstance(index, tuple) else (index,)) + (Ellipsis,)]


def select(array, first, then):
    """array[first][then]: torch's x[index] on a numpy array, with (first, then) from
    split_index."""
    view = _index(array, first)
    return view if then is None else _index(view, then)


def assign(array, first, then, value):
    """array[index] = value in torch's order: written through the view array[first]."""
    if then is None:
        array[first] = value
    else:
        array[first][then] = value


def add_at(shape, places, values):
    """zeros(shape) with `values` added at the flat positions `places` (repeated places add up).
    Floats go through np.bincount, a C loop several times faster than np.add.at."""
    if values.dtype.kind != "f":
        out = np.zeros(math.prod(shape), values.dtype)
        np.add.at(out, places.ravel(), values.ravel())
        return out.reshape(shape)
    summed = np.bincount(places.ravel(), weights=values.ravel(), minlength=math.prod(shape))
    return summed.astype(values.dtype, copy=False).reshape(shape)


def _places(shape):
    """The flat position of every element of an array of `shape` (index it as the array)."""
    return np.arange(math.prod(shape)).reshape(shape)


class GetItem(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, index, split=None):
        first, then = split or split_index(index)
        ctx.shape, ctx.first, ctx.then = x.shape, first, then
        return select(x, first, then)

    @staticmethod
    def backward(ctx, grad):
        if namespace(grad) is not np:  # create_graph=True: the same placing, as an op
            return place(grad, ctx.shape, ctx.first, ctx.then)
        return _placed(grad, ctx.shape, ctx.first, ctx.then)


def _placed(values, shape, first, then):
    """zeros(shape) with values added at [first][then] (GetItem's gradient)."""
    full = np.zeros(shape, dtype=values.dtype)
    if then is None:
        full[first] = values
        return full
    if any(isinstance(p, np.ndarray) and p.dtype != np.bool_ for p in then):  # may repeat
        return add_at(shape, select(_places(shape), first, then), values)
    full[first][then] = values  # full[first] is a view: it keeps a dim per index array
    return full


class Place(Function):
    """zeros(shape) with x added at [first][then]: GetItem's gradient as an op, so that
    create_graph=True can differentiate it again (its gradient is the GetItem it undoes)."""

    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, shape, first, then):
        ctx.first, ctx.then = first, then
        return _placed(x, shape, first, then)

    @staticmethod
    def backward(ctx, grad):
        if namespace(grad) is not np:
            return GetItem.apply(grad, index=None, split=(ctx.first, ctx.then))
        return select(grad, ctx.first, ctx.then)


def place(values, shape, first, then):
    """The op Place: zeros(shape) with the Tensor values added at [first][then]."""
    return Place.apply(values, shape=tuple(shape), first=first, then=then)


def getitem(x, index):
    """x[index] with ints, slices, None, Ellipsis, bool masks and integer tensors, as in torch."""
    index = list_index_as_tuple(index)
    parts = index_parts(index)
    try:
        return GetItem.apply(x, index=parts)
    except IndexError as error:
        raise IndexError(
            f"index {index!r} does not fit a tensor of shape {x.shape}: {error}"
        ) from None


# -- gather, index_select, masked_select, scatter_add -------------------------------------


def _corner(shape, dim):
    """The leading corner of an array that has `shape` in every dim but `dim`."""
    return tuple(slice(None) if k == dim else slice(0, size) for k, size in enumerate(shape))


class Gather(Function):
    """out[i][j][k] = x[i][index[i][j][k]][k] for dim=1 (torch.gather)."""

    @staticmethod
    def forward(ctx, x, index, dim):
        ctx.shape, ctx.index, ctx.dim = x.shape, index, dim
        # torch lets index be shorter than x in the other dims: only that corner of x is read
        return np.take_along_axis(x[_corner(index.shape, dim)], index, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        places = np.take_along_axis(
            _places(ctx.shape)[_corner(ctx.index.shape, ctx.dim)], ctx.index, axis=ctx.dim
        )
        return add_at(ctx.shape, places, grad)


def _check_index_values(index, size, dim, op):
    if index.size and (index.min() < 0 or index.max() >= size):
        raise IndexRangeError(
            f"{op}: index values must be in [0, {size}) for dim {dim}; "
            f"got values in [{index.min()}, {index.max()}]"
        )


def _scatter_index(x, dim, index, op, src=None):
    """Checks shared by gather and scatter_add: an integer index with x's number of dims, no larger
    than x in the other dims (and than src in every dim), values in range along dim."""
    index = integer_array(index, op)
    dim = normalize_dim(dim, x.ndim, op)
    if index.ndim != x.ndim or any(
        i > s for k, (i, s) in enumerate(zip(index.shape, x.shape)) if k != dim
    ):
        raise ShapeError(
            f"{op}: index of shape {index.shape} does not fit input of shape {x.shape} along dim "
            f"{dim}"
        )
    if src is not None and (
        src.ndim != index.ndim or any(i > s for i, s in zip(index.shape, src.shape))
    ):
        raise ShapeError(
            f"{op}: index of shape {index.shape} must be no larger than src of shape {src.shape}"
        )
    _check_index_values(index, x.shape[dim], dim, op)
    return dim, index


@op
def gather(x, dim, index):
    """Values of x at `index` along dim: out[i][j] = x[i][index[i][j]] for dim=1 (torch.gather)."""
    if x.ndim == 0:  # one element along dim 0 (torch accepts dim 0 and -1)
        index = integer_array(index, "gather")
        normalize_dim(dim, 0, "gather")
        _check_index_values(index, 1, 0, "gather")
        return gather(x.reshape(1), 0, index.reshape(-1)).reshape(index.shape)
    dim, index = _scatter_index(x, dim, index, "gather")
    return Gather.apply(x, index=index, dim=dim)


@op
def take_along_dim(x, indices, dim=None):
    """torch.take_along_dim: x's values at `indices` along dim, x and indices broadcast against
    each other in every other dim (same number of dims); dim=None takes from the flattened x."""
    indices = integer_array(indices, "take_along_dim")
    if dim is None:
        return gather(x.reshape(-1), 0, indices.reshape(-1))
    if indices.ndim != x.ndim:
        raise ShapeError(
            f"take_along_dim: indices must have as many dims as x ({x.ndim}); "
            f"got shape {indices.shape} for x of shape {x.shape}"
        )
    dim = normalize_dim(dim, x.ndim, "take_along_dim")
    try:
        common = np.broadcast_shapes(
            *[
                tuple(s for a, s in enumerate(shape) if a != dim)
                for shape in (x.shape, indices.shape)
            ]
        )
    except ValueError:
        raise ShapeError(
            f"take_along_dim: x of shape {x.shape} and indices of shape {indices.shape} do not "
            f"broadcast outside dim {dim}"
        ) from None

    def along(size):
        return common[:dim] + (size,) + common[dim:]

    expanded = x if x.shape == along(x.shape[dim]) else x.expand(*along(x.shape[dim]))
    return gather(
        expanded, dim, np.ascontiguousarray(np.broadcast_to(indices, along(indices.shape[dim])))
    )


@op
def take(x, index):
    """The elements of x, read as a 1-D tensor, at `index` (any shape, negative counts from the
    end): the result has index's shape (torch.take)."""
    index = integer_array(index, "take")
    size = x.numel()
    if index.size and (index.min() < -size or index.max() >= size):
        raise IndexRangeError(
            f"take: index values must be in [{-size}, {size}) for a tensor of {size} elements; "
            f"got values in [{index.min()}, {index.max()}]"
        )
    flat = np.where(index < 0, index + size, index)
    return gather(x.reshape(-1), 0, flat.reshape(-1)).reshape(index.shape)


class IndexSelect(Function):
    """out = x at positions `index` (1-D) along dim; the gradient is added back at them."""

    @staticmethod
    def forward(ctx, x, index, dim):
        ctx.shape, ctx.index, ctx.dim = x.shape, index, dim
        return np.take(x, index, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        # whole slices add up: sort them by index, then one np.add.reduceat per run of equal
        # indices (repeat_interleave's index is sorted already)
        index, rows = ctx.index, np.moveaxis(grad, ctx.dim, 0)
        if index.size > 1 and (index[1:] < index[:-1]).any():
            order = np.argsort(index, kind="stable")
            index, rows = index[order], rows[order]
        full = np.zeros((ctx.shape[ctx.dim],) + rows.shape[1:], dtype=grad.dtype)
        if index.size:
            starts = np.flatnonzero(np.concatenate([[True], index[1:] != index[:-1]]))
            full[index[starts]] = np.add.reduceat(rows, starts, axis=0)
        return np.moveaxis(full, 0, ctx.dim)


@op
def index_select(x, dim, index):
    """The slices of x at `index` (a 1-D integer tensor) along dim, in that order."""
    index = integer_array(index, "index_select")
    if index.ndim > 1:
        raise DimError(f"index_select: index must be 1-D (or 0-d); got shape {index.shape}")
    dim = normalize_dim(dim, x.ndim, "index_select")
    _check_index_values(index, x.shape[dim] if x.ndim else 1, dim, "index_select")
    if x.ndim == 0:
        return x.reshape(1)[index.reshape(-1)].reshape(())
    return IndexSelect.apply(x, index=index.reshape(-1), dim=dim)


class MaskedSelect(Function):
    @staticmethod
    def forward(ctx, x, mask):
        ctx.mask = mask
        return np.broadcast_to(x, mask.shape)[mask]

    @staticmethod
    def backward(ctx, grad):
        full = np.zeros(ctx.mask.shape, dtype=grad.dtype)  # the walk sums it back to x's shape
        full[ctx.mask] = grad
        return full


@op
def masked_select(x, mask):
    """The elements of x where the bool `mask` is True (x and mask broadcast), as a 1-D tensor."""
    mask = bool_mask(mask, "masked_select")
    shape = check_broadcast("masked_select", x, mask)
    return MaskedSelect.apply(x, mask=np.broadcast_to(mask, shape))


class ScatterAdd(Function):
    """out = x, then out[index[i][j]][j] += src[i][j] (dim 0); dx = grad, dsrc = grad gathered at
    index."""

    @staticmethod
    def forward(ctx, x, src, index, dim):
        ctx.index, ctx.dim, ctx.src_shape = index, dim, src.shape
        return x + add_at(x.shape, *_scatter_targets(x.shape, src, index, dim))

    @staticmethod
    def backward(ctx, grad):
        return grad, _src_grad(ctx, grad)


def _scatter_targets(shape, src, index, dim):
    """(the flat positions in an array of `shape` that index points at along dim, the values of
    src that go there): src cut to index's shape, as torch reads it."""
    places = np.take_along_axis(_places(shape)[_corner(index.shape, dim)], index, axis=dim)
    return places, src[tuple(slice(0, s) for s in index.shape)]


def _scatter_operands(x, dim, index, src, op):
    """(dim, index, src) of scatter or scatter_add, checked: src a Tensor of x's dtype."""
    if x.ndim == 0:
        raise ShapeError(f"{op}: expects an input with at least 1 dim; got a 0-d tensor")
    src = src if isinstance(src, Tensor) else Tensor._wrap(np.asarray(src, dtype=x.dtype))
    if src.dtype != x.dtype:
        raise DTypeError(f"{op}: src must have the dtype of the input ({x.dtype}); got {src.dtype}")
    dim, index = _scatter_index(x, dim, index, op, src)
    return dim, index, src


def _src_grad(ctx, grad):
    """The gradient of a scatter's src: grad gathered at index (zeros where src reaches past it)."""
    if not ctx.needs_input_grad[1]:
        return None
    grad_src = np.zeros(ctx.src_shape, dtype=grad.dtype)
    picked = np.take_along_axis(grad[_corner(ctx.index.shape, ctx.dim)], ctx.index, axis=ctx.dim)
    grad_src[tuple(slice(0, s) for s in ctx.index.shape)] = picked
    return grad_src


@op
def scatter_add(x, dim, index, src):
    """A copy of x with src's values added at `index` along dim (repeats add up), as
    torch.scatter_add."""
    dim, index, src = _scatter_operands(x, dim, index, src, "scatter_add")
    return ScatterAdd.apply(x, src, index=index, dim=dim)


class Scatter(Function):
    """out = x, then out[index[i][j]][j] = src[i][j] (dim 0); at a place written twice the last
    write wins (torch leaves that order open). dx = grad with the written places 0; dsrc = grad
    gathered at index (for every src element, as torch's)."""

    @staticmethod
    def forward(ctx, x, src, index, dim):
        places, values = _scatter_targets(x.shape, src, index, dim)
        ctx.index, ctx.dim, ctx.src_shape, ctx.places = index, dim, src.shape, places
        out = np.array(x, order="C")
        out.reshape(-1)[places.ravel()] = values.ravel()
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_x = np.array(grad, order="C")
        grad_x.reshape(-1)[ctx.places.ravel()] = 0
        return grad_x, _src_grad(ctx, grad)


@op
def scatter(x, dim, index, src=None, value=None):
    """A copy of x with src's values (or the number `value`) written at `index` along dim:
    out[index[i][j]][j] = src[i][j] for dim=0 (torch.scatter). Differentiable in x and src."""
    if (src is None) == (value is None):
        raise ArgumentError("scatter: give src (a tensor) or value (a number), not both or neither")
    if src is None or not isinstance(src, Tensor) and np.ndim(src) == 0:  # scatter(dim, index, 2.0)
        number = as_array(value if src is None else src)
        if number.ndim:
            raise ArgumentError(f"scatter: value must be a number; got shape {number.shape}")
        src = Tensor._wrap(
            np.full(np.shape(integer_array(index, "scatter")), number.item(), dtype=x.dtype)
        )
    dim, index, src = _scatter_operands(x, dim, index, src, "scatter")
    return Scatter.apply(x, src, index=index, dim=dim)


@op
def nonzero(x, as_tuple=False):
    """Positions of the nonzero elements: an int64 (count, ndim) tensor, or one index tensor per
    dim (as_tuple=True, usable as x[...]), in row-major order."""
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    if data.ndim == 0:  # as torch: no dims to name (as_tuple: seen as one element of a 1-D tensor)
        count = int(data.item() != 0)
        return (
            (Tensor._wrap(np.zeros(count, np.int64)),)
            if as_tuple
            else Tensor._wrap(np.zeros((count, 0), np.int64))
        )
    positions = [p.astype(np.int64) for p in np.nonzero(data)]
    return (
        tuple(Tensor._wrap(p) for p in positions)
        if as_tuple
        else Tensor._wrap(np.stack(positions, axis=1))
    )
