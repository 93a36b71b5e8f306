"""Products of tensors over named dims: einsum (any sum of products, with its backward), and the
ops written with it or with elementwise ops, so that their gradients are those ops' gradients:
tensordot, inner, kron and cross. The matrix products (matmul, mm, bmm ...) are in matmul.py."""

import math
import string
import warnings

import numpy as np

from .. import kernels
from ..errors import ArgumentError, ShapeError
from ..engine import Function
from .args import check_broadcast, check_same_dtype, normalize_dim, tensor_operand
from .arithmetic import mul
from .shape import reshape, roll
from .registry import op


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
        # size 1 on one side (broadcast): the sum of
        if a.shape[sa.index(c)] != b.shape[sb.index(c)]:
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
    operands = [tensor_operand(x) for x in operands]
    for x in operands[1:]:
        check_same_dtype("einsum", operands[0], x)
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


# -- products written with einsum and the elementwise ops --------------------


@op(method=False)
def tensordot(a, b, dims=2):
    """The sum of products over dims of a paired with dims of b: dims=n pairs a's last n dims
    with b's first n; dims=([dims of a], [dims of b]) names them. The result has a's other dims,
    then b's."""
    a, b = tensor_operand(a), tensor_operand(b)
    check_same_dtype("tensordot", a, b)
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
    input, other = tensor_operand(input), tensor_operand(other)
    check_same_dtype("inner", input, other)
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
    input, other = tensor_operand(input), tensor_operand(other)
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
    input, other = tensor_operand(input), tensor_operand(other)
    if input.ndim != other.ndim:
        raise ShapeError(
            f"cross: inputs must have the same number of dims; got shapes {input.shape} and "
            f"{other.shape}"
        )
    check_same_dtype("cross", input, other)
    shape = check_broadcast("cross", input, other)
    if dim is None:
        warnings.warn(
            "cross: dim=None takes the first dim of size 3, as torch.cross does "
            "(deprecated in torch); pass dim explicitly (torch.linalg.cross uses dim=-1)",
            UserWarning,
            stacklevel=2,
        )
        dim = next((d for d, size in enumerate(shape) if size == 3), None)
        if dim is None:
            raise ShapeError(f"cross: no dim of size 3 in shapes {input.shape} and {other.shape}")
    dim = normalize_dim(dim, len(shape), "cross")
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise ShapeError(
            f"cross: dim {dim} must have size 3 in both inputs; "
            f"got shapes {input.shape} and {other.shape}"
        )
    # (a x b)_i = a_(i+1) b_(i+2) - a_(i+2) b_(i+1), indices mod 3: rolls along dim line them up
    return (roll(input, -1, dim) * roll(other, -2, dim)) - (
        roll(input, -2, dim) * roll(other, -1, dim)
    )
