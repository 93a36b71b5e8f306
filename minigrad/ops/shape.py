"""Ops that move elements around without changing them: their backward moves the gradient back."""

import numpy as np

from ..errors import ShapeError
from ..tensor import Function, Tensor
from .args import normalize_dim, shape_args


class Reshape(Function):
    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape)


def reshape(x, *shape):
    shape = shape_args(shape)
    known = int(np.prod([s for s in shape if s != -1]))
    if shape.count(-1) == 1 and known and x.data.size % known == 0:
        shape = tuple(x.data.size // known if s == -1 else s for s in shape)
    if shape.count(-1) or int(np.prod(shape)) != x.data.size:
        raise ValueError(f"reshape: cannot view shape {x.shape} ({x.data.size} elements) as {shape}")
    return x if shape == x.shape else Reshape.apply(x, shape=shape)


class Permute(Function):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.inverse = np.argsort(dims)
        return np.transpose(x, dims)

    @staticmethod
    def backward(ctx, grad):
        return np.transpose(grad, ctx.inverse)


def permute(x, *dims):
    dims = tuple(normalize_dim(d, x.ndim) for d in shape_args(dims))
    if sorted(dims) != list(range(x.ndim)):
        raise ValueError(f"permute: dims {dims} are not a permutation of the {x.ndim} dims of shape {x.shape}")
    return Permute.apply(x, dims=dims)


def transpose(x, dim0, dim1):
    dims = list(range(x.ndim))
    dim0, dim1 = normalize_dim(dim0, x.ndim), normalize_dim(dim1, x.ndim)
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return Permute.apply(x, dims=tuple(dims))


def unsqueeze(x, dim):
    dim = normalize_dim(dim, x.ndim + 1)
    return reshape(x, x.shape[:dim] + (1,) + x.shape[dim:])


def squeeze(x, dim=None):
    if dim is None:
        return reshape(x, tuple(s for s in x.shape if s != 1))
    dim = normalize_dim(dim, x.ndim)
    return x if x.shape[dim] != 1 else reshape(x, x.shape[:dim] + x.shape[dim + 1:])


def flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return reshape(x, 1)
    start, end = normalize_dim(start_dim, x.ndim), normalize_dim(end_dim, x.ndim)
    return reshape(x, x.shape[:start] + (-1,) + x.shape[end + 1:])


class Expand(Function):
    """Broadcast to a larger shape; the walk's sum_to sums the gradient back."""

    @staticmethod
    def forward(ctx, x, shape):
        return np.broadcast_to(x, shape)

    @staticmethod
    def backward(ctx, grad):
        return grad


def expand(x, *shape):
    shape = shape_args(shape)
    lead = len(shape) - x.ndim
    target = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    try:
        if lead < 0 or np.broadcast_shapes(x.shape, target) != target:
            raise ValueError
    except ValueError:
        raise ValueError(f"expand: cannot expand shape {x.shape} to {shape}") from None
    return Expand.apply(x, shape=target)


class Flip(Function):
    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return np.flip(x, dims)

    @staticmethod
    def backward(ctx, grad):
        return np.flip(grad, ctx.dims)


def flip(x, dims):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    return Flip.apply(x, dims=tuple(normalize_dim(d, x.ndim) for d in dims))


# -- indexing -----------------------------------------------------------------------------

def _index_arrays(index):
    """Tensors inside an index become arrays; a lone list becomes an integer array."""
    if isinstance(index, Tensor):
        return index.data
    if isinstance(index, tuple):
        return tuple(_index_arrays(i) for i in index)
    if isinstance(index, list):
        return np.asarray(index)
    return index


def _is_advanced(index):
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, np.ndarray) for p in parts)


class GetItem(Function):
    @staticmethod
    def forward(ctx, x, index):
        ctx.shape, ctx.dtype, ctx.index = x.shape, x.dtype, index
        return x[index]

    @staticmethod
    def backward(ctx, grad):
        full = np.zeros(ctx.shape, dtype=grad.dtype)
        if _is_advanced(ctx.index):
            np.add.at(full, ctx.index, grad)  # repeated indices add up
        else:
            full[ctx.index] = grad
        return full


def getitem(x, index):
    """t[index] with slices, ints, None, Ellipsis, bool masks and integer arrays (numpy rules)."""
    index = _index_arrays(index)
    try:
        return GetItem.apply(x, index=index)
    except IndexError as error:
        raise IndexError(f"index {index!r} does not fit a tensor of shape {x.shape}: {error}") from None


class Gather(Function):
    """out[i][j][k] = x[i][index[i][j][k]][k] for dim=1 (torch.gather)."""

    @staticmethod
    def forward(ctx, x, index, dim):
        ctx.shape, ctx.index, ctx.dim = x.shape, index, dim
        # torch lets index be shorter than x in the other dims: only that corner of x is read
        corner = tuple(slice(None) if k == dim else slice(0, size) for k, size in enumerate(index.shape))
        return np.take_along_axis(x[corner], index, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        full = np.zeros(ctx.shape, dtype=grad.dtype)
        positions = list(np.ogrid[tuple(slice(s) for s in ctx.index.shape)])
        positions[ctx.dim] = ctx.index
        np.add.at(full, tuple(positions), grad)
        return full


def gather(x, dim, index):
    index = np.asarray(index.data if isinstance(index, Tensor) else index)
    if not np.issubdtype(index.dtype, np.integer):
        raise TypeError(f"gather: index must be an integer tensor; got dtype {index.dtype}")
    dim = normalize_dim(dim, x.ndim)
    if index.ndim != x.ndim or any(i > s for k, (i, s) in enumerate(zip(index.shape, x.shape)) if k != dim):
        raise ValueError(f"gather: index of shape {index.shape} does not fit input of shape {x.shape} along dim {dim}")
    if index.size and (index.min() < -x.shape[dim] or index.max() >= x.shape[dim]):
        raise IndexError(f"gather: index values must be in [0, {x.shape[dim]}); got range "
                         f"[{index.min()}, {index.max()}]")
    return Gather.apply(x, index=index, dim=dim)


# -- joining ------------------------------------------------------------------------------

class Cat(Function):
    @staticmethod
    def forward(ctx, *arrays, dim):
        ctx.dim = dim
        ctx.splits = np.cumsum([a.shape[dim] for a in arrays])[:-1]
        return np.concatenate(arrays, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        return tuple(np.split(grad, ctx.splits, axis=ctx.dim))


class Stack(Function):
    @staticmethod
    def forward(ctx, *arrays, dim):
        ctx.dim = dim
        return np.stack(arrays, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        return tuple(np.moveaxis(grad, ctx.dim, 0))


def _check_join(name, tensors, dim, same_dim_too):
    tensors = [t if isinstance(t, Tensor) else Tensor(t) for t in tensors]
    if not tensors:
        raise ValueError(f"{name}: expected a non-empty sequence of tensors")
    first = tensors[0].shape
    for t in tensors[1:]:
        rest = [s for k, s in enumerate(t.shape) if same_dim_too or k != dim]
        expected = [s for k, s in enumerate(first) if same_dim_too or k != dim]
        if t.ndim != len(first) or rest != expected:
            raise ValueError(f"{name}: all tensors must have the same shape{'' if same_dim_too else ' except in dim %d' % dim}; "
                             f"got {first} and {t.shape}")
    return tensors


def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty sequence of tensors")
    ndim = np.ndim(tensors[0].data if isinstance(tensors[0], Tensor) else tensors[0])
    dim = normalize_dim(dim, ndim)
    return Cat.apply(*_check_join("cat", tensors, dim, False), dim=dim)


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty sequence of tensors")
    ndim = np.ndim(tensors[0].data if isinstance(tensors[0], Tensor) else tensors[0])
    dim = normalize_dim(dim, ndim + 1)
    return Stack.apply(*_check_join("stack", tensors, dim, True), dim=dim)
