"""More products with torch's names, built from matmul, einsum and the elementwise ops (so
their gradients are those ops' gradients): mv, inner, tensordot, kron, cross, trace; the fused
forms addmm, addmv, addbmm, baddbmm, addcmul, addcdiv; and the distances dist and cdist."""

import string
import warnings

import numpy as np

from ..dtypes import result_type
from ..errors import ArgumentError, DTypeError, ShapeError
from .args import check_broadcast, check_float, normalize_dim
from .arithmetic import add, div, mul
from .conversion import operand_as
from .piecewise import where
from .indexing import getitem
from .linalg import _check_ndim, _same_dtype, _tensor, einsum, matmul
from .reductions import sum
from .shape import reshape, roll, unsqueeze
from .statistics import norm
from .registry import op

# -- products of vectors, matrices and tensors --------------------------------------------


@op
def mv(input, vec):
    """Matrix times vector, (n, m) @ (m,) -> (n,)."""
    input, vec = _tensor(input), _tensor(vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise ShapeError(
            f"mv: expects a 2-D matrix and a 1-D vector; got shapes {input.shape} and {vec.shape}"
        )
    _same_dtype("mv", input, vec)
    return matmul(input, vec)


@op(method=False)
def tensordot(a, b, dims=2):
    """The sum of products over dims of a paired with dims of b: dims=n pairs a's last n dims
    with b's first n; dims=([dims of a], [dims of b]) names them. The result has a's other dims,
    then b's."""
    a, b = _tensor(a), _tensor(b)
    _same_dtype("tensordot", a, b)
    if isinstance(dims, (int, np.integer)) and not isinstance(dims, bool):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise ArgumentError(
                f"tensordot: dims must be an int in [0, {min(a.ndim, b.ndim)}] for shapes "
                f"{a.shape} and {b.shape}; got {dims}"
            )
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    elif isinstance(dims, (tuple, list)) and len(dims) == 2:
        dims_a, dims_b = ([d] if isinstance(d, (int, np.integer)) else list(d) for d in dims)
        if len(dims_a) != len(dims_b):
            raise ArgumentError(
                f"tensordot: the two dim lists must have the same length; got {dims_a} and {dims_b}"
            )
        dims_a = [normalize_dim(d, a.ndim, "tensordot") for d in dims_a]
        dims_b = [normalize_dim(d, b.ndim, "tensordot") for d in dims_b]
    else:
        raise TypeError(f"tensordot: dims must be an int or a pair of dim lists; got {dims!r}")
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db] and 1 not in (a.shape[da], b.shape[db]):
            raise ShapeError(
                f"tensordot: contracted dims must match: dim {da} of shape {a.shape} has size "
                f"{a.shape[da]}, dim {db} of shape {b.shape} has size {b.shape[db]}"
            )
    letters = iter(string.ascii_letters)
    labels_a = [next(letters) for _ in range(a.ndim)]
    labels_b = [next(letters) for _ in range(b.ndim)]
    for da, db in zip(dims_a, dims_b):
        labels_b[db] = labels_a[da]
    kept = [c for d, c in enumerate(labels_a) if d not in dims_a] + [
        c for d, c in enumerate(labels_b) if d not in dims_b
    ]
    return einsum(f"{''.join(labels_a)},{''.join(labels_b)}->{''.join(kept)}", a, b)


@op
def inner(input, other):
    """The sum of products over the last dim of both: shape input.shape[:-1] + other.shape[:-1];
    a 0-d operand multiplies the other."""
    input, other = _tensor(input), _tensor(other)
    _same_dtype("inner", input, other)
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise ShapeError(
            f"inner: the last dims must match; got shapes {input.shape} and {other.shape}"
        )
    return tensordot(input, other, dims=([-1], [-1]))


@op
def kron(input, other):
    """The Kronecker product: block (i, j, ...) is input[i, j, ...] * other. The operand with fewer
    dims gets leading 1s; the result's size along each dim is the product of the two sizes."""
    input, other = _tensor(input), _tensor(other)
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + input.shape
    b_shape = (1,) * (ndim - other.ndim) + other.shape
    interleaved_a = [n for size in a_shape for n in (size, 1)]  # (a0, 1, a1, 1, ...)
    interleaved_b = [n for size in b_shape for n in (1, size)]  # (1, b0, 1, b1, ...)
    blocks = mul(reshape(input, interleaved_a), reshape(other, interleaved_b))
    return reshape(blocks, [sa * sb for sa, sb in zip(a_shape, b_shape)])


@op
def cross(input, other, dim=None):
    """The cross product of 3-vectors along `dim` (broadcast; same number of dims). dim=None
    takes the first dim of size 3 and warns, as torch 2.13's torch.cross still does
    (torch.linalg.cross's default is dim=-1)."""
    input, other = _tensor(input), _tensor(other)
    if input.ndim != other.ndim:
        raise ShapeError(
            f"cross: inputs must have the same number of dims; got shapes {input.shape} and "
            f"{other.shape}"
        )
    _same_dtype("cross", input, other)
    shape = check_broadcast("cross", input, other)
    if dim is None:
        warnings.warn(
            "cross: dim=None takes the first dim of size 3, as torch.cross does (deprecated in "
            "torch); "
            "pass dim explicitly (torch.linalg.cross uses dim=-1)",
            UserWarning,
            stacklevel=2,
        )
        dim = next((d for d, size in enumerate(shape) if size == 3), None)
        if dim is None:
            raise ShapeError(f"cross: no dim of size 3 in shapes {input.shape} and {other.shape}")
    dim = normalize_dim(dim, len(shape), "cross")
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise ShapeError(
            f"cross: dim {dim} must have size 3 in both inputs; got shapes {input.shape} and "
            f"{other.shape}"
        )
    # (a x b)_i = a_(i+1) b_(i+2) - a_(i+2) b_(i+1), indices mod 3: rolls along dim line them up
    return (roll(input, -1, dim) * roll(other, -2, dim)) - (
        roll(input, -2, dim) * roll(other, -1, dim)
    )


@op
def trace(input):
    """The sum of the main diagonal of a matrix (also a non-square one)."""
    input = _tensor(input)
    if input.ndim != 2:
        raise ShapeError(f"trace: expects a matrix (2-D); got shape {input.shape}")
    if input.dtype == np.bool_:
        raise DTypeError("trace: expected a number tensor; got dtype bool")
    diagonal = np.arange(min(input.shape))
    return sum(getitem(input, (diagonal, diagonal)))


# -- fused multiply-adds: beta * input + alpha * product ----------------------------------


def _scaled(x, factor):
    """factor * x; factor 0 ignores x's values (its NaN and inf too, as torch) but keeps x in the
    graph."""
    if factor == 0:
        return where(np.zeros((), bool), x, 0)
    return x if factor == 1 else mul(x, factor)


def _multiply_add(op, input, product, beta, alpha):
    """beta * input + alpha * product, input broadcasting to the product's shape (not beyond it)."""
    input = _tensor(input)
    _same_dtype(op, input, product)
    try:
        fits = np.broadcast_shapes(input.shape, product.shape) == product.shape
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(
            f"{op}: input of shape {input.shape} does not broadcast to the product's shape "
            f"{product.shape}"
        )
    return add(_scaled(input, beta), _scaled(product, alpha))


@op
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2): (n, k) @ (k, m), input broadcasting to (n, m)."""
    mat1, mat2 = _tensor(mat1), _tensor(mat2)
    _check_ndim("addmm", 2, mat1, mat2)
    return _multiply_add("addmm", input, matmul(mat1, mat2), beta, alpha)


@op
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec): (n, m) @ (m,), input broadcasting to (n,)."""
    return _multiply_add("addmv", input, mv(mat, vec), beta, alpha)


def _batched(op, batch1, batch2):
    batch1, batch2 = _tensor(batch1), _tensor(batch2)
    _check_ndim(op, 3, batch1, batch2)
    if batch1.shape[0] != batch2.shape[0]:
        raise ShapeError(f"{op}: batch sizes differ: shapes {batch1.shape} and {batch2.shape}")
    return matmul(batch1, batch2)


@op
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2): (B, n, k) @ (B, k, m), input broadcasting to (B, n,
    m)."""
    return _multiply_add("baddbmm", input, _batched("baddbmm", batch1, batch2), beta, alpha)


@op
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * the sum over the batch of batch1 @ batch2: input broadcasting to (n,
    m)."""
    return _multiply_add("addbmm", input, sum(_batched("addbmm", batch1, batch2), 0), beta, alpha)


def _pointwise_add(op, combine, input, tensor1, tensor2, value):
    check_broadcast(op, input, tensor1, tensor2)
    dtype = result_type(input, tensor1, tensor2)
    input, tensor1, tensor2 = (operand_as(x, dtype) for x in (input, tensor1, tensor2))
    product = combine(tensor1, tensor2)
    return add(input, product if value == 1 else mul(product, value))  # value 0 keeps NaN, as torch


@op
def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2 (broadcast, torch's result dtype)."""
    return _pointwise_add("addcmul", mul, input, tensor1, tensor2, value)


@op
def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (broadcast); integer tensor1 and tensor2 are refused, as
    torch."""
    if result_type(tensor1, tensor2).kind != "f":
        raise DTypeError(
            f"addcdiv: tensor1 / tensor2 of integers is not supported (as torch); got dtypes "
            f"{result_type(tensor1)} and {result_type(tensor2)}"
        )
    return _pointwise_add("addcdiv", div, input, tensor1, tensor2, value)


# -- distances ----------------------------------------------------------------------------


@op
def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), as torch.dist; a float input is needed."""
    return norm(input - other, p)


@op(method=False)
def cdist(x1, x2, p=2.0):
    """The p-norm distance of every row of x1 to every row of x2: (..., P, M) and (..., R, M) ->
    (..., P, R), batch dims broadcast. p >= 0; float tensors of one dtype."""
    x1, x2 = _tensor(x1), _tensor(x2)
    for name, x in (("x1", x1), ("x2", x2)):
        if x.ndim < 2:
            raise ShapeError(
                f"cdist: expects {name} with at least 2 dims (rows, features); got shape {x.shape}"
            )
        check_float("cdist", x, name, several=True)
    _same_dtype("cdist", x1, x2)
    if x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(
            f"cdist: x1 and x2 need the same number of features (last dim); got shapes "
            f"{x1.shape} and {x2.shape}"
        )
    if not isinstance(p, (int, float, np.number)) or isinstance(p, bool) or p < 0:
        raise ArgumentError(f"cdist: p must be a number >= 0; got {p!r}")
    try:
        np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    except ValueError:
        raise ShapeError(
            f"cdist: the batch dims of shapes {x1.shape} and {x2.shape} cannot be broadcast"
        ) from None
    return norm(unsqueeze(x1, -2) - unsqueeze(x2, -3), p, dim=-1)
