"""The shape, join, reduction, selection and in-place ops a PyTorch user reaches for (broadcast_to,
hstack, diagonal, unfold, median, quantile, unique, scatter_reduce, index_add_, uniform_ ...)
against PyTorch: values, indices, dtypes and gradients (float32 and float64), a float64
gradcheck, bad arguments, and for the random in-place fills their distribution and seeding.

Each table row is `call(B, *tensors)` with B = minigrad or torch, run by the sweep's `check`
(float inputs require grad; outputs and gradients of a random weighting are compared)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, DimError, ShapeError
from test_ops_parity_sweep import I, R, check

torch = pytest.importorskip("torch")


def N(*values):
    return np.array(values, dtype=np.float64)


SHAPE_CASES = {
    "broadcast_to (3,1)->(2,3,4)": (lambda B, x: B.broadcast_to(x, (2, 3, 4)), [R(3, 1)]),
    "broadcast_to -1": (lambda B, x: x.broadcast_to(-1, 4), [R(3, 1)]),
    "broadcast_to empty": (lambda B, x: B.broadcast_to(x, (2, 0, 3)), [R(0, 1)]),
    "broadcast_tensors": (lambda B, a, b, c: B.broadcast_tensors(a, b, c), [R(3, 1), R(4), R(2, 1, 1)]),
    "ravel of a transpose": (lambda B, x: x.t().ravel(), [R(3, 4)]),
    "ravel 0-d": (lambda B, x: B.ravel(x), [R()]),
    "hstack vectors": (lambda B, a, b: B.hstack([a, b]), [R(3), R(2)]),
    "hstack matrices": (lambda B, a, b: B.hstack((a, b)), [R(2, 3), R(2, 1)]),
    "hstack 0-d": (lambda B, a, b: B.hstack([a, b]), [R(), R()]),
    "vstack vector and matrix": (lambda B, a, b: B.vstack([a, b]), [R(3), R(2, 3)]),
    "vstack 0-d": (lambda B, a, b: B.vstack([a, b]), [R(), R()]),
    "dstack": (lambda B, a, b, c: B.dstack([a, b, c]), [R(1, 3), R(3), R(1, 3, 2)]),
    "column_stack": (lambda B, a, b, c: B.column_stack([a, b, c]), [R(3), R(3, 2), R(3)]),
    "column_stack 0-d": (lambda B, a, b: B.column_stack([a, b]), [R(), R()]),
    "hsplit int": (lambda B, x: B.hsplit(x, 2), [R(3, 4)]),
    "hsplit vector positions": (lambda B, x: x.hsplit([1, 4]), [R(6)]),
    "hsplit past the end": (lambda B, x: B.hsplit(x, [5]), [R(2, 3)]),
    "vsplit descending positions": (lambda B, x: B.vsplit(x, [3, 1]), [R(4, 2)]),
    "vsplit negative position": (lambda B, x: B.vsplit(x, [-1]), [R(4, 2)]),
    "dsplit": (lambda B, x: x.dsplit(3), [R(2, 1, 6)]),
    "fliplr": (lambda B, x: B.fliplr(x), [R(3, 4, 2)]),
    "flipud": (lambda B, x: x.flipud(), [R(3)]),
    "rot90 k=1": (lambda B, x: B.rot90(x), [R(2, 3)]),
    "rot90 k=2": (lambda B, x: B.rot90(x, 2), [R(2, 3)]),
    "rot90 k=-1 dims (2, 0)": (lambda B, x: x.rot90(-1, (2, 0)), [R(2, 3, 4)]),
    "rot90 k=7": (lambda B, x: B.rot90(x, 7, [1, 2]), [R(2, 3, 4)]),
    "rot90 k=0": (lambda B, x: B.rot90(x, 0), [R(2, 3)]),
    "diag of a vector": (lambda B, x: B.diag(x), [R(3)]),
    "diag of a vector offset 2": (lambda B, x: x.diag(2), [R(3)]),
    "diag of a vector offset -1": (lambda B, x: B.diag(x, -1), [R(3)]),
    "diag of a matrix": (lambda B, x: B.diag(x), [R(3, 4)]),
    "diag of a matrix offset 1": (lambda B, x: B.diag(x, 1), [R(3, 4)]),
    "diag of a matrix offset -2": (lambda B, x: x.diag(-2), [R(3, 4)]),
    "diag of a matrix offset past it": (lambda B, x: B.diag(x, 5), [R(3, 4)]),
    "diag of an empty vector": (lambda B, x: B.diag(x), [R(0)]),
    "diag of ints": (lambda B, x: B.diag(x), [I(1, 2, 3)]),
    "diagonal": (lambda B, x: B.diagonal(x), [R(3, 4)]),
    "diagonal offset, dims": (lambda B, x: x.diagonal(1, 2, 0), [R(3, 4, 5)]),
    "diagonal negative dims": (lambda B, x: B.diagonal(x, -1, -1, -2), [R(2, 3, 4)]),
    "diagonal then sum": (lambda B, x: B.diagonal(x, 0, 0, 1).sum(-1), [R(3, 3, 2)]),
    "diag_embed": (lambda B, x: B.diag_embed(x), [R(2, 3)]),
    "diag_embed offset, dims": (lambda B, x: x.diag_embed(1, 0, 2), [R(2, 3)]),
    "diag_embed negative offset": (lambda B, x: B.diag_embed(x, -2, -1, 0), [R(2, 3)]),
    "tril_indices": (lambda B: B.tril_indices(4, 3), []),
    "tril_indices offset": (lambda B: B.tril_indices(3, 5, 1), []),
    "triu_indices offset": (lambda B: B.triu_indices(4, 3, -1), []),
    "triu_indices empty": (lambda B: B.triu_indices(0, 3), []),
    "tril_indices int32": (lambda B: B.tril_indices(3, 3, dtype=B.int32), []),
    "meshgrid ij": (lambda B, a, b: B.meshgrid(a, b, indexing="ij"), [R(3), R(2)]),
    "meshgrid xy": (lambda B, a, b, c: B.meshgrid([a, b, c], indexing="xy"), [R(3), R(2), R(4)]),
    "meshgrid 0-d": (lambda B, a, b: B.meshgrid(a, b, indexing="ij"), [R(), R(2)]),
    "meshgrid one": (lambda B, a: B.meshgrid(a, indexing="xy"), [R(3)]),
    "unfold": (lambda B, x: x.unfold(0, 2, 1), [R(5)]),
    "unfold step > size": (lambda B, x: x.unfold(1, 2, 3), [R(2, 7, 2)]),
    "unfold negative dim, whole dim": (lambda B, x: x.unfold(-1, 4, 2), [R(3, 4)]),
    "unfold size 0": (lambda B, x: x.unfold(0, 0, 1), [R(3)]),
    "unfold 0-d": (lambda B, x: x.unfold(0, 1, 1), [R()]),
    "select": (lambda B, x: B.select(x, 1, -1), [R(2, 3, 4)]),
    "take": (lambda B, x: B.take(x, B.tensor([[0, -1], [5, 2]])), [R(2, 3)]),
    "take repeated": (lambda B, x: x.take(B.tensor([1, 1, 1])), [R(4)]),
    "take empty index": (lambda B, x: B.take(x, B.tensor([], dtype=B.int64)), [R(4)]),
    "swapdims": (lambda B, x: B.swapdims(x, 0, -1), [R(2, 3, 4)]),
    "moveaxis": (lambda B, x: B.moveaxis(x, (0, 1), (-1, 0)), [R(2, 3, 4)]),
    "unflatten": (lambda B, x: x.unflatten(1, (2, -1)), [R(3, 4)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(SHAPE_CASES))
def test_shape_ops_match_torch(name, dtype):
    call, arrays = SHAPE_CASES[name]
    check(call, *arrays, dtype=dtype)


GRADCHECK = {
    "diagonal": (lambda x: mg.diagonal(x, 1, 0, 2), [R(3, 2, 4)]),
    "diag_embed": (lambda x: mg.diag_embed(x, -1, 0, 2), [R(2, 3)]),
    "unfold": (lambda x: x.unfold(1, 3, 2), [R(2, 7)]),
    "rot90": (lambda x: mg.rot90(x, 3, (1, 0)), [R(2, 3)]),
    "take": (lambda x: mg.take(x, mg.tensor([0, 0, -1, 3])), [R(2, 2)]),
    "meshgrid": (lambda a, b: mg.stack(mg.meshgrid(a, b, indexing="xy")), [R(3), R(2)]),
    "column_stack": (lambda a, b: mg.column_stack([a, b]), [R(3), R(3, 2)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_in_float64(name):
    call, arrays = GRADCHECK[name]
    assert mg.gradcheck(call, [mg.tensor(a, requires_grad=True) for a in arrays])


def test_diagonal_is_a_view_that_writes_into_its_base():
    for B in (mg, torch):
        x = B.zeros(3, 3)
        B.diagonal(x).fill_(2.0)
        x.diagonal(1).add_(1.0)
        y = B.arange(9.0).reshape(3, 3).requires_grad_(True) * 1
        y.diagonal().mul_(10)
        y.sum().backward()
        if B is mg:
            ours = (x.numpy(), y.numpy())
        else:
            np.testing.assert_array_equal(ours[0], x.numpy())
            np.testing.assert_array_equal(ours[1], y.detach().numpy())


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=2, max_size=4), offset=st.integers(-5, 5),
       dims=st.permutations(range(4)), data=st.data())
def test_diagonal_and_unfold_match_torch_for_any_shape(shape, offset, dims, data):
    dim1, dim2 = dims[0] % len(shape), dims[1] % len(shape)
    if dim1 == dim2:
        dim2 = (dim1 + 1) % len(shape)
    array = R(*shape)
    check(lambda B, x: B.diagonal(x, offset, dim1, dim2), array)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = data.draw(st.integers(0, shape[dim]))
    step = data.draw(st.integers(1, 3))
    check(lambda B, x: x.unfold(dim, size, step), array)


BAD_SHAPE_ARGUMENTS = {
    "broadcast_to a smaller shape": (lambda: mg.broadcast_to(mg.zeros(2, 3), (3,)), ShapeError, "(2, 3)"),
    "broadcast_tensors that do not fit": (lambda: mg.broadcast_tensors(mg.zeros(2), mg.zeros(3)), ShapeError,
                                          "(2,) and (3,)"),
    "hstack of one tensor": (lambda: mg.hstack(mg.zeros(3)), TypeError, "sequence of tensors"),
    "vstack of nothing": (lambda: mg.vstack([]), ArgumentError, "non-empty"),
    "vstack of different widths": (lambda: mg.vstack([mg.zeros(3), mg.zeros(2)]), ShapeError, "(1, 3) and (1, 2)"),
    "hsplit into pieces that do not divide": (lambda: mg.hsplit(mg.zeros(2, 5), 2), ArgumentError, "size 5"),
    "hsplit of a 0-d tensor": (lambda: mg.hsplit(mg.tensor(1.0), 1), DimError, "0-d"),
    "vsplit of a vector": (lambda: mg.vsplit(mg.zeros(4), 2), DimError, "(4,)"),
    "dsplit of a matrix": (lambda: mg.dsplit(mg.zeros(4, 2), 2), DimError, "(4, 2)"),
    "fliplr of a vector": (lambda: mg.fliplr(mg.zeros(3)), DimError, "(3,)"),
    "flipud of a 0-d tensor": (lambda: mg.flipud(mg.tensor(1.0)), DimError, "0-d"),
    "rot90 of a vector": (lambda: mg.rot90(mg.zeros(3)), DimError, "(3,)"),
    "rot90 with one dim": (lambda: mg.rot90(mg.zeros(2, 2), 1, (0,)), ArgumentError, "(0,)"),
    "rot90 with the same dim twice": (lambda: mg.rot90(mg.zeros(2, 2), 1, (0, -2)), DimError, "(0, -2)"),
    "rot90 with a float k": (lambda: mg.rot90(mg.zeros(2, 2), 1.5), TypeError, "1.5"),
    "diag of a 3-d tensor": (lambda: mg.diag(mg.zeros(2, 2, 2)), DimError, "(2, 2, 2)"),
    "diagonal of a vector": (lambda: mg.diagonal(mg.zeros(3)), DimError, "(3,)"),
    "diagonal with the same dim twice": (lambda: mg.diagonal(mg.zeros(3, 3), 0, 1, -1), DimError, "both are 1"),
    "diagonal dim out of range": (lambda: mg.diagonal(mg.zeros(3, 3), 0, 0, 2), DimError, "dim 2"),
    "diag_embed of a 0-d tensor": (lambda: mg.diag_embed(mg.tensor(1.0)), DimError, "0-d"),
    "tril_indices negative rows": (lambda: mg.tril_indices(-1, 3), ArgumentError, "row=-1"),
    "triu_indices float dtype": (lambda: mg.triu_indices(3, 3, dtype=mg.float32), DTypeError, "float32"),
    "tril_indices float size": (lambda: mg.tril_indices(2.5, 3), TypeError, "2.5"),
    "meshgrid of a matrix": (lambda: mg.meshgrid(mg.zeros(2, 2), indexing="ij"), DimError, "(2, 2)"),
    "meshgrid bad indexing": (lambda: mg.meshgrid(mg.zeros(2), indexing="ji"), ArgumentError, "'ji'"),
    "meshgrid mixed dtypes": (lambda: mg.meshgrid(mg.zeros(2), mg.zeros(2, dtype=mg.int64)), DTypeError, "int64"),
    "unfold window too long": (lambda: mg.zeros(3).unfold(0, 4, 1), ArgumentError, "size 4"),
    "unfold step 0": (lambda: mg.zeros(3).unfold(0, 2, 0), ArgumentError, "step 0"),
    "unfold dim out of range": (lambda: mg.zeros(3).unfold(1, 2, 1), DimError, "dim 1"),
    "take with a float index": (lambda: mg.take(mg.zeros(3), mg.tensor([0.0])), DTypeError, "float32"),
    "take out of range": (lambda: mg.take(mg.zeros(3), mg.tensor([3])), IndexError, "[-3, 3)"),
}


@pytest.mark.parametrize("name", list(BAD_SHAPE_ARGUMENTS))
def test_bad_shape_arguments_raise_clear_errors(name):
    call, error, fragment = BAD_SHAPE_ARGUMENTS[name]
    with pytest.raises(error) as raised:
        call()
    assert fragment in str(raised.value)
    assert isinstance(raised.value, RuntimeError) or error is TypeError
