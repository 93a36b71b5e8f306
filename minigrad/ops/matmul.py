"""Matrix products, torch's BLAS family: matmul (2-D, batched with numpy broadcasting of the
batch dims, 1-D operands promoted as in torch), mm, bmm, mv, dot, outer; linear (x W^T + b as
one node, nn.Linear's); and the multiply-adds beta * input + alpha * product: addmm, addmv,
baddbmm, addbmm. MatMul and Linear are Functions with their own backward; the other ops are
built from them and the elementwise ops, so their gradients are those ops' gradients. Products
of tensors over named dims (einsum, tensordot, inner, kron, cross) are in tensor_products.py."""

import math

import numpy as np

from .. import kernels
from ..errors import DTypeError, ShapeError
from ..engine import Function, Tensor
from .args import check_same_dtype, tensor_operand
from .arithmetic import add, mul
from .piecewise import where
from .reductions import sum
from .shape import squeeze, transpose, unsqueeze
from .registry import op


class MatMul(Function):
    """C = A @ B: dA = dC @ B^T, dB = A^T @ dC (batch dims are summed back by the walk).

    A stack of rows times one matrix, (..., n, k) @ (k, m), runs as a single (rows, k) @ (k, m)
    GEMM each way instead of one GEMM per batch entry (3-5x faster for (128, 256, 256) @ (256,
    256)).
    """

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        if b.ndim == 2:
            return kernels.matmul(_rows(a), b).reshape(a.shape[:-1] + b.shape[1:])
        return kernels.matmul(a, b)

    higher_order = "backward"

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        if isinstance(grad, Tensor):  # create_graph=True: the same products, recorded
            return _recorded_grads(a, b, grad, ctx.needs_input_grad)
        if b.ndim == 2:
            rows, grad_rows = _rows(a), _rows(grad)
            if all(ctx.needs_input_grad):
                grad_a, grad_b = kernels.matmul_grads(rows, b, grad_rows)  # the two at once
                return grad_a.reshape(a.shape), grad_b
            grad_a = (
                kernels.matmul_grad_a(grad_rows, b).reshape(a.shape)
                if ctx.needs_input_grad[0]
                else None
            )
            grad_b = kernels.matmul_grad_b(rows, grad_rows) if ctx.needs_input_grad[1] else None
            return grad_a, grad_b
        grad_a = kernels.matmul_grad_a(grad, b) if ctx.needs_input_grad[0] else None
        grad_b = kernels.matmul_grad_b(a, grad) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


def _recorded_grads(a, b, grad, needs):
    """MatMul's gradients as recorded matmuls (1-d operands made 2-d and back)."""
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(1) if b.ndim == 1 else b
    g2 = grad.unsqueeze(-2) if a.ndim == 1 else grad
    g2 = g2.unsqueeze(-1) if b.ndim == 1 else g2
    grad_a = grad_b = None
    if needs[0]:
        grad_a = g2 @ b2.transpose(-1, -2)
        grad_a = grad_a.squeeze(-2) if a.ndim == 1 else grad_a
    if needs[1]:
        grad_b = a2.transpose(-1, -2) @ g2
        grad_b = grad_b.squeeze(-1) if b.ndim == 1 else grad_b
    return grad_a, grad_b


class Linear(Function):
    """y = x W^T + b over the last dim of x, as one node (torch's AddmmBackward does the same):
    dx = dy W, dW = dy^T x, db = dy summed over every leading position.

    One node instead of the four of the composition (x @ W.T, + b, and the reshapes around
    them): the bias is added in place (kernels.linear_forward), and backward makes dW in W's
    own layout, so the optimizer reads a C-contiguous gradient."""

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        ctx.save_for_backward(x, weight)
        return kernels.linear_forward(_rows(x), weight, bias).reshape(
            x.shape[:-1] + weight.shape[:1]
        )

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved
        # no bias: never
        needs = tuple(ctx.needs_input_grad) + (False,) * (3 - len(ctx.needs_input_grad))
        grad_x, grad_weight, grad_bias = kernels.linear_backward(
            _rows(x), weight, _rows(grad), needs
        )
        grads = (None if grad_x is None else grad_x.reshape(x.shape), grad_weight, grad_bias)
        return grads[: len(ctx.needs_input_grad)]

    higher_order = "composite"

    @staticmethod
    def composite(ctx, x, weight, bias=None):
        y = x @ weight.transpose(0, 1)
        return y if bias is None else y + bias


def _rows(x):
    """(..., k) -> (rows, k); reshape(-1, k) would be ambiguous when there are no rows."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


@op
def matmul(a, b):
    """a @ b like torch.matmul: 1-D operands are promoted to matrices and the added dim removed;
    batch dims broadcast. Integer tensors multiply too (without gradient)."""
    a, b = tensor_operand(a), tensor_operand(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"matmul: both operands need at least 1 dim; got shapes {a.shape} and {b.shape}"
        )
    inner = b.shape[-2 if b.ndim > 1 else 0]
    if a.shape[-1] != inner:
        raise ShapeError(
            f"matmul: shapes {a.shape} and {b.shape} do not match "
            f"(inner dims {a.shape[-1]} and {inner})"
        )
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ShapeError(
            f"matmul: batch dims of shapes {a.shape} and {b.shape} cannot be broadcast"
        ) from None
    check_same_dtype("matmul", a, b)
    if a.dtype.kind != "f":
        return Tensor._wrap(np.asarray(np.matmul(a._data, b._data)))
    if a.ndim == 1 and b.ndim == 1:
        return (a * b).sum()
    if a.ndim == 1:
        return squeeze(matmul(unsqueeze(a, 0), b), -2)
    if b.ndim == 1:
        return squeeze(matmul(a, unsqueeze(b, -1)), -1)
    return MatMul.apply(a, b)


def _check_ndim(op, ndim, *tensors):
    for t in tensors:
        if t.ndim != ndim:
            shapes = " and ".join(str(t.shape) for t in tensors)
            raise ShapeError(f"{op}: expects {ndim}-D tensors; got shapes {shapes}")


@op
def mm(a, b):
    """Product of two matrices, (n, k) @ (k, m)."""
    a, b = tensor_operand(a), tensor_operand(b)
    _check_ndim("mm", 2, a, b)
    return matmul(a, b)


@op
def bmm(a, b):
    """Batched product of matrices, (B, n, k) @ (B, k, m), with the same batch size B (no
    broadcasting)."""
    a, b = tensor_operand(a), tensor_operand(b)
    _check_ndim("bmm", 3, a, b)
    if a.shape[0] != b.shape[0]:
        raise ShapeError(f"bmm: batch sizes differ: shapes {a.shape} and {b.shape}")
    return matmul(a, b)


@op
def dot(a, b):
    """Inner product of two 1-D tensors of the same size."""
    a, b = tensor_operand(a), tensor_operand(b)
    _check_ndim("dot", 1, a, b)
    return matmul(a, b)


@op
def outer(a, b):
    """Outer product of two 1-D tensors: out[i, j] = a[i] * b[j]."""
    a, b = tensor_operand(a), tensor_operand(b)
    _check_ndim("outer", 1, a, b)
    return unsqueeze(a, 1) * b


@op
def mv(input, vec):
    """Matrix times vector, (n, m) @ (m,) -> (n,)."""
    input, vec = tensor_operand(input), tensor_operand(vec)
    if input.ndim != 2 or vec.ndim != 1:
        raise ShapeError(
            f"mv: expects a 2-D matrix and a 1-D vector; got shapes {input.shape} and {vec.shape}"
        )
    check_same_dtype("mv", input, vec)
    return matmul(input, vec)


@op(method=False, public=False)
def linear(x, weight, bias=None):
    """x (..., in) @ weight (out, in)^T + bias (out,) -> (..., out), as torch.nn.functional.linear
    (nn.functional's and nn.Linear's).

    One graph node, Linear: leading dims are flattened into one matrix product (a single GEMM,
    not a batched one) and the bias is added in place."""
    x = tensor_operand(x)
    if weight.ndim != 2:
        raise ShapeError(
            f"linear: weight must have shape (out_features, in_features); got {weight.shape}"
        )
    out_features, in_features = weight.shape
    if x.ndim == 0 or x.shape[-1] != in_features:
        raise ShapeError(
            f"linear: expected input of shape (..., in_features={in_features}); "
            f"got input of shape {x.shape}"
        )
    if x.dtype != weight.dtype:
        raise DTypeError(
            f"linear: input dtype {x.dtype} does not match weight dtype {weight.dtype}"
        )
    if bias is not None and (bias.shape != (out_features,) or bias.dtype != weight.dtype):
        raise ShapeError(
            f"linear: bias must have shape ({out_features},) and dtype {weight.dtype}; "
            f"got {bias.shape} {bias.dtype}"
        )
    if weight.dtype.kind != "f":  # integer tensors multiply too, without gradient (as matmul)
        y = matmul(x, transpose(weight, 0, 1))
        return y if bias is None else add(y, bias)
    return Linear.apply(x, weight) if bias is None else Linear.apply(x, weight, bias)


# -- fused multiply-adds: beta * input + alpha * product ----------------------------------


def _scaled(x, factor):
    """factor * x; factor 0 ignores x's values (its NaN and inf too, as torch) but keeps x in the
    graph."""
    if factor == 0:
        return where(np.zeros((), bool), x, 0)
    return x if factor == 1 else mul(x, factor)


def _multiply_add(op, input, product, beta, alpha):
    """beta * input + alpha * product, input broadcasting to the product's shape (not beyond it)."""
    input = tensor_operand(input)
    check_same_dtype(op, input, product)
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
    mat1, mat2 = tensor_operand(mat1), tensor_operand(mat2)
    _check_ndim("addmm", 2, mat1, mat2)
    return _multiply_add("addmm", input, matmul(mat1, mat2), beta, alpha)


@op
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta * input + alpha * (mat @ vec): (n, m) @ (m,), input broadcasting to (n,)."""
    return _multiply_add("addmv", input, mv(mat, vec), beta, alpha)


def _batched(op, batch1, batch2):
    batch1, batch2 = tensor_operand(batch1), tensor_operand(batch2)
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
