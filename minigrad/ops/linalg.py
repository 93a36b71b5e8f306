"""Matrix products: matmul (2-D, batched with numpy broadcasting of the batch dims, 1-D operands
promoted as in torch), mm, bmm, dot, outer, and einsum with its backward."""

import math
import string

import numpy as np

from .. import kernels
from ..errors import ArgumentError, DTypeError, ShapeError
from ..engine import Function, Tensor
from .shape import squeeze, unsqueeze
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

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
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
        needs = tuple(ctx.needs_input_grad) + (False,) * (
            3 - len(ctx.needs_input_grad)
        )  # no bias: never
        grad_x, grad_weight, grad_bias = kernels.linear_backward(
            _rows(x), weight, _rows(grad), needs
        )
        grads = (None if grad_x is None else grad_x.reshape(x.shape), grad_weight, grad_bias)
        return grads[: len(ctx.needs_input_grad)]


def _rows(x):
    """(..., k) -> (rows, k); reshape(-1, k) would be ambiguous when there are no rows."""
    return x.reshape(math.prod(x.shape[:-1]), x.shape[-1])


def _tensor(x):
    return x if isinstance(x, Tensor) else Tensor(x)


def _same_dtype(op, a, b):
    if a.dtype != b.dtype:
        raise DTypeError(
            f"{op}: both operands must have the same dtype; got {a.dtype} and {b.dtype}"
        )


@op
def matmul(a, b):
    """a @ b like torch.matmul: 1-D operands are promoted to matrices and the added dim removed;
    batch dims broadcast. Integer tensors multiply too (without gradient)."""
    a, b = _tensor(a), _tensor(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"matmul: both operands need at least 1 dim; got shapes {a.shape} and {b.shape}"
        )
    inner = b.shape[-2 if b.ndim > 1 else 0]
    if a.shape[-1] != inner:
        raise ShapeError(
            f"matmul: shapes {a.shape} and {b.shape} do not match (inner dims {a.shape[-1]} and "
            f"{inner})"
        )
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ShapeError(
            f"matmul: batch dims of shapes {a.shape} and {b.shape} cannot be broadcast"
        ) from None
    _same_dtype("matmul", a, b)
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
    a, b = _tensor(a), _tensor(b)
    _check_ndim("mm", 2, a, b)
    return matmul(a, b)


@op
def bmm(a, b):
    """Batched product of matrices, (B, n, k) @ (B, k, m), with the same batch size B (no
    broadcasting)."""
    a, b = _tensor(a), _tensor(b)
    _check_ndim("bmm", 3, a, b)
    if a.shape[0] != b.shape[0]:
        raise ShapeError(f"bmm: batch sizes differ: shapes {a.shape} and {b.shape}")
    return matmul(a, b)


@op
def dot(a, b):
    """Inner product of two 1-D tensors of the same size."""
    a, b = _tensor(a), _tensor(b)
    _check_ndim("dot", 1, a, b)
    return matmul(a, b)


@op
def outer(a, b):
    """Outer product of two 1-D tensors: out[i, j] = a[i] * b[j]."""
    a, b = _tensor(a), _tensor(b)
    _check_ndim("outer", 1, a, b)
    return unsqueeze(a, 1) * b


# -- einsum -------------------------------------------------------------------------------


class Einsum(Function):
    """np.einsum over explicit subscripts (letters only: ellipses already spelled out).

    The gradient of operand i is itself an einsum: the output gradient contracted with the
    other operands, written out in operand i's subscripts. Two cases need one more operand:
    a label only operand i has (it was summed away: the gradient is constant along it, an
    operand of ones), and a label repeated in operand i (a diagonal: an identity matrix puts
    the gradient on the diagonal)."""

    @staticmethod
    def forward(ctx, *operands, inputs, output):
        ctx.save_for_backward(*operands)
        ctx.subscripts, ctx.output = inputs, output
        return contract(inputs, output, operands)

    @staticmethod
    def backward(ctx, grad):
        operands, inputs = ctx.saved, ctx.subscripts
        used = set("".join(inputs) + ctx.output)
        fresh = iter(c for c in string.ascii_letters if c not in used)
        grads = []
        for i, (subscripts, operand) in enumerate(zip(inputs, operands)):
            if not ctx.needs_input_grad[i]:
                grads.append(None)
                continue
            others = [(s, a) for j, (s, a) in enumerate(zip(inputs, operands)) if j != i]
            known = set(ctx.output + "".join(s for s, _ in others))
            target, extra = "", []
            for position, label in enumerate(subscripts):
                size = operand.shape[position]
                if label in target:  # a repeated label: the diagonal
                    new = next(fresh)
                    extra.append((label + new, np.eye(size, dtype=grad.dtype)))
                    label = new
                elif label not in known:  # summed inside operand i only
                    extra.append((label, np.ones(size, dtype=grad.dtype)))
                target += label
            terms = [(ctx.output, grad)] + others + extra
            grads.append(contract([s for s, _ in terms], target, [a for _, a in terms]))
        return tuple(grads)


def contract(inputs, output, arrays):
    """np.einsum over letter subscripts; two operands without a repeated letter run as one batched
    matmul (BLAS), which is what attention's 'bhqd,bhkd->bhqk' needs (np.einsum's own loop is
    about 30x slower there)."""
    if len(arrays) == 2 and all(len(set(s)) == len(s) for s in inputs):
        return _contract_pair(*inputs, output, *arrays)
    return np.einsum(",".join(inputs) + "->" + output, *arrays, optimize=True)


def _sum_out(x, subscripts, labels):
    """x summed over the dims of `labels`, and its subscripts without them."""
    if not labels:
        return x, subscripts
    return x.sum(axis=tuple(subscripts.index(c) for c in labels)), "".join(
        c for c in subscripts if c not in labels
    )


def _contract_pair(sa, sb, out, a, b):
    # a label only one operand has and the output lacks is summed inside that operand first
    a, sa = _sum_out(a, sa, [c for c in sa if c not in sb and c not in out])
    b, sb = _sum_out(b, sb, [c for c in sb if c not in sa and c not in out])
    for c in [c for c in sa if c in sb and c not in out]:
        if (
            a.shape[sa.index(c)] != b.shape[sb.index(c)]
        ):  # size 1 on one side (broadcast): the sum of
            a, sa = _sum_out(a, sa, [c])  # products is the product of the sums
            b, sb = _sum_out(b, sb, [c])
    batch = [c for c in out if c in sa and c in sb]
    left = [c for c in out if c in sa and c not in sb]
    right = [c for c in out if c in sb and c not in sa]
    summed = [c for c in sa if c in sb and c not in out]
    a = a.transpose([sa.index(c) for c in batch + left + summed])
    b = b.transpose([sb.index(c) for c in batch + summed + right])
    rank = len(batch)
    left_sizes, right_sizes = a.shape[rank : rank + len(left)], b.shape[rank + len(summed) :]
    inner = math.prod(a.shape[rank + len(left) :])
    multiply = kernels.matmul if a.dtype.kind == "f" else np.matmul
    product = multiply(
        a.reshape(a.shape[:rank] + (math.prod(left_sizes), inner)),
        b.reshape(b.shape[:rank] + (inner, math.prod(right_sizes))),
    )
    product = product.reshape(product.shape[:rank] + left_sizes + right_sizes)
    order = batch + left + right
    return product.transpose([order.index(c) for c in out])


def _spell_out(equation, operands):
    """An einsum equation -> (input subscripts, output subscripts), letters only, as torch reads
    it: spaces ignored, '...' stands for the dims no letter names (aligned right, broadcast),
    and without '->' the output is '...' then the letters used once, in alphabetical order."""
    equation = equation.replace(" ", "")
    left, arrow, output = equation.partition("->")
    inputs = left.split(",")
    if len(inputs) != len(operands):
        raise ArgumentError(
            f"einsum: the equation {equation!r} names {len(inputs)} operands; got {len(operands)}"
        )
    spare = [c for c in string.ascii_letters if c not in equation]
    broadcast = 0
    for subscripts, operand in zip(inputs, operands):
        letters = subscripts.replace("...", "", 1)
        if (letters and not letters.isalpha()) or not letters.isascii():
            raise ArgumentError(
                f"einsum: subscripts must be letters and at most one '...'; got {subscripts!r}"
            )
        named = len(letters)
        if ("..." in subscripts and named > operand.ndim) or (
            "..." not in subscripts and named != operand.ndim
        ):
            raise ShapeError(
                f"einsum: subscripts {subscripts!r} do not fit an operand of shape {operand.shape}"
            )
        if "..." in subscripts:
            broadcast = max(broadcast, operand.ndim - named)
    ellipsis = "".join(spare[:broadcast])
    spelled = []
    for subscripts, operand in zip(inputs, operands):
        if "..." in subscripts:  # the dims it covers take the last of the ellipsis letters
            covered = operand.ndim - len(subscripts.replace("...", ""))
            subscripts = subscripts.replace("...", ellipsis[broadcast - covered :])
        spelled.append(subscripts)
    if not arrow:
        counts = "".join(inputs).replace("...", "")
        output = ("..." if "..." in left else "") + "".join(
            sorted(c for c in set(counts) if counts.count(c) == 1)
        )
    output = output.replace("...", ellipsis)
    if (
        not output.isalpha()
        and output
        or len(set(output)) != len(output)
        or not set(output) <= set("".join(spelled))
    ):
        raise ArgumentError(
            f"einsum: output subscripts {output!r} must be distinct letters that appear in the "
            "inputs"
        )
    return spelled, output


@op(method=False)
def einsum(equation, *operands):
    """Einstein summation as torch.einsum(equation, *operands) (operands may also come as one list):
    'bhqd,bhkd->bhqk', 'ij,jk', '...ij,...jk->...ik', 'ii->i'. Differentiable in every operand."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    operands = [_tensor(x) for x in operands]
    for x in operands[1:]:
        _same_dtype("einsum", operands[0], x)
    inputs, output = _spell_out(equation, operands)
    sizes = {}
    for subscripts, x in zip(inputs, operands):
        for label, size in zip(subscripts, x.shape):
            if size != 1 and sizes.setdefault(label, size) != size:
                raise ShapeError(
                    f"einsum: label {label!r} has size {size} in an operand of shape {x.shape} but "
                    f"{sizes[label]} elsewhere (equation {equation!r})"
                )
    return Einsum.apply(*operands, inputs=inputs, output=output)
