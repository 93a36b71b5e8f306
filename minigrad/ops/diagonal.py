"""Diagonals: diagonal (a view of one), diag_embed and diag (a vector onto one), trace (the sum
of the main one), and the index pairs of a triangle (tril_indices, triu_indices). A diagonal's
gradient goes back onto it."""

import numpy as np

from .. import dtypes
from ..errors import ArgumentError, DTypeError, DimError, ShapeError
from ..engine import Function, Tensor
from .args import check_device, normalize_dim
from .reductions import sum
from .registry import op


def diagonal_view(array, offset, dim1, dim2):
    """A writable view of the `offset`-th diagonal of dims dim1, dim2 (at the end, as numpy's
    read-only np.diagonal puts it): writes through it reach the array, as through torch's."""
    read_only = np.diagonal(array, offset, dim1, dim2)
    start = [slice(None)] * array.ndim
    start[dim1], start[dim2] = slice(max(-offset, 0), None), slice(max(offset, 0), None)
    return np.lib.stride_tricks.as_strided(array[tuple(start)], read_only.shape, read_only.strides)


class Diagonal(Function):
    """out = the offset-th diagonal of dims dim1, dim2 of x (a view); d x = grad on that
    diagonal."""

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.shape, ctx.offset, ctx.dim1, ctx.dim2 = x.shape, offset, dim1, dim2
        return diagonal_view(x, offset, dim1, dim2)

    @staticmethod
    def backward(ctx, grad):
        full = np.zeros(ctx.shape, grad.dtype)
        diagonal_view(full, ctx.offset, ctx.dim1, ctx.dim2)[...] = grad
        return full


def _offset(offset, op):
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise TypeError(
            f"{op}: the diagonal offset must be an int; got {type(offset).__name__} {offset!r}"
        )
    return int(offset)


def _two_dims(dim1, dim2, ndim, op):
    dim1, dim2 = normalize_dim(dim1, ndim, op), normalize_dim(dim2, ndim, op)
    if dim1 == dim2:
        raise DimError(f"{op}: dim1 and dim2 must be different dims; both are {dim1}")
    return dim1, dim2


@op
def diagonal(x, offset=0, dim1=0, dim2=1):
    """The `offset`-th diagonal (above the main one for offset > 0) of dims dim1 and dim2, as a
    last dim; those two dims go (torch.diagonal). A view: writing into it changes x."""
    if x.ndim < 2:
        raise DimError(f"diagonal: expects a tensor with at least 2 dims; got shape {x.shape}")
    dim1, dim2 = _two_dims(dim1, dim2, x.ndim, "diagonal")
    return Diagonal.apply(x, offset=_offset(offset, "diagonal"), dim1=dim1, dim2=dim2)


class DiagEmbed(Function):
    """out: zeros with x's last dim on the offset-th diagonal of dims dim1, dim2; d x = grad's
    diagonal."""

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        size = x.shape[-1] + abs(offset)
        square = np.zeros(x.shape[:-1] + (size, size), x.dtype)
        diagonal_view(square, offset, -2, -1)[...] = x
        ctx.offset, ctx.dims = offset, (dim1, dim2)
        return np.moveaxis(square, (-2, -1), ctx.dims)

    @staticmethod
    def backward(ctx, grad):
        return np.diagonal(np.moveaxis(grad, ctx.dims, (-2, -1)), ctx.offset, -2, -1)


@op
def diag_embed(x, offset=0, dim1=-2, dim2=-1):
    """A tensor with one more dim whose (dim1, dim2) matrices hold x's last dim on their
    `offset`-th diagonal, zeros elsewhere (torch.diag_embed)."""
    if x.ndim == 0:
        raise DimError("diag_embed: expects a tensor with at least 1 dim; got a 0-d tensor")
    dim1, dim2 = _two_dims(dim1, dim2, x.ndim + 1, "diag_embed")
    return DiagEmbed.apply(x, offset=_offset(offset, "diag_embed"), dim1=dim1, dim2=dim2)


@op
def diag(x, diagonal=0):
    """A vector -> the square matrix with it on the `diagonal`-th diagonal; a matrix -> that
    diagonal of it, as a vector (torch.diag)."""
    if x.ndim == 1:
        return diag_embed(x, diagonal, 0, 1)
    if x.ndim == 2:
        return Diagonal.apply(x, offset=_offset(diagonal, "diag"), dim1=0, dim2=1)
    raise DimError(f"diag: expects a 1-D or 2-D tensor; got shape {x.shape}")


def _triangle_indices(row, col, offset, dtype, device, lower, op):
    sizes = {"row": row, "col": col, "offset": offset}
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{op}: {name} must be an int; got {type(value).__name__} {value!r}")
    if row < 0 or col < 0:
        raise ArgumentError(f"{op}: row and col must be non-negative; got row={row}, col={col}")
    check_device(device, op)
    dtype = dtypes.int64 if dtype is None else dtypes.as_dtype(dtype)
    if dtype.kind not in "iu":
        raise DTypeError(f"{op}: dtype must be an integer dtype (int64 or int32); got {dtype}")
    rows, cols = (np.tril_indices if lower else np.triu_indices)(int(row), int(offset), int(col))
    indices = np.stack([rows, cols]).astype(dtype)
    return Tensor._wrap(indices.reshape(2, -1))


@op(method=False)
def tril_indices(row, col, offset=0, dtype=None, device=None):
    """The (2, N) int64 positions of the lower triangle of a row x col matrix (on and below the
    `offset`-th diagonal), row by row: x[tuple(mg.tril_indices(r, c))] reads it. No gradient."""
    return _triangle_indices(row, col, offset, dtype, device, True, "tril_indices")


@op(method=False)
def triu_indices(row, col, offset=0, dtype=None, device=None):
    """As tril_indices, for the upper triangle (on and above the `offset`-th diagonal)."""
    return _triangle_indices(row, col, offset, dtype, device, False, "triu_indices")


@op
def trace(input):
    """The sum of the main diagonal of a matrix (also a non-square one)."""
    input = input if isinstance(input, Tensor) else Tensor(input)
    if input.ndim != 2:
        raise ShapeError(f"trace: expects a matrix (2-D); got shape {input.shape}")
    if input.dtype == np.bool_:
        raise DTypeError("trace: expected a number tensor; got dtype bool")
    return sum(diagonal(input))
