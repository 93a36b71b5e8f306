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


# -- reductions and scans ------------------------------------------------------------------

NAN = np.nan
TIES = N(2, 1, 2, 1, 3, 1)

REDUCTION_CASES = {
    "diff": (lambda B, x: B.diff(x), [R(5)]),
    "diff n=2 dim 0": (lambda B, x: x.diff(2, 0), [R(5, 3)]),
    "diff n larger than the size": (lambda B, x: B.diff(x, 4), [R(3)]),
    "diff n=0": (lambda B, x: B.diff(x, 0), [R(3)]),
    "diff prepend and append": (lambda B, x, p, a: B.diff(x, 1, -1, p, a), [R(2, 3), R(2, 1), R(2, 2)]),
    "diff prepend only, dim 0": (lambda B, x, p: B.diff(x, dim=0, prepend=p), [R(2, 3), R(1, 3)]),
    "diff ints": (lambda B, x: B.diff(x), [I(1, 4, 9, 16)]),
    "diff bools": (lambda B, x: B.diff(x > 0), [R(6)]),
    "diff empty": (lambda B, x: B.diff(x), [R(2, 0)]),
    "cummax": (lambda B, x: B.cummax(x, 0), [R(6)]),
    "cummax ties and NaN": (lambda B, x: B.cummax(x, 0), [N(1, 3, 3, NAN, 2, NAN, 5)]),
    "cummax dim -1": (lambda B, x: x.cummax(-1), [R(3, 5)]),
    "cummax ints": (lambda B, x: B.cummax(x, 0), [I(1, 0, 3, 3, 2)]),
    "cummin ties": (lambda B, x: B.cummin(x, 1), [N(3, 1, 1, 0, 0, 2).reshape(2, 3)]),
    "cummin NaN first": (lambda B, x: x.cummin(0), [N(NAN, 1, -1)]),
    "cummin empty": (lambda B, x: B.cummin(x, 1), [R(2, 0)]),
    "cummax 0-d": (lambda B, x: B.cummax(x, 0), [R()]),
    "logcumsumexp": (lambda B, x: B.logcumsumexp(x, 0), [R(5)]),
    "logcumsumexp past exp overflow": (lambda B, x: x.logcumsumexp(-1), [R(3, 4) * 50]),
    "logcumsumexp -inf": (lambda B, x: B.logcumsumexp(x, 0), [N(-np.inf, 0.5, -np.inf, 1.0)]),
    "logcumsumexp 0-d": (lambda B, x: B.logcumsumexp(x, 0), [R()]),
    "count_nonzero": (lambda B, x: B.count_nonzero(x), [N(0, 1, 0, 2, NAN)]),
    "count_nonzero dims": (lambda B, x: x.count_nonzero((0, -1)), [np.round(R(2, 3, 4))]),
    "count_nonzero ints dim": (lambda B, x: B.count_nonzero(x, 0), [I(0, 1, 0, 3).reshape(2, 2)]),
    "median": (lambda B, x: B.median(x), [R(3, 4)]),
    "median even count is the lower one": (lambda B, x: x.median(), [N(4, 1, 3, 2)]),
    "median ties share the gradient": (lambda B, x: B.median(x), [TIES]),
    "median NaN": (lambda B, x: B.median(x), [N(1, NAN, 2, NAN)]),
    "median empty": (lambda B, x: B.median(x), [R(0)]),
    "median ints": (lambda B, x: B.median(x), [I(5, 1, 4, 2)]),
    "median dim": (lambda B, x: B.median(x, 1), [R(3, 4)]),
    "median dim keepdim": (lambda B, x: x.median(0, True), [R(3, 5)]),
    "median dim NaN: the first NaN": (lambda B, x: B.median(x, 1), [N(1, NAN, 0, NAN, NAN, NAN, 3, 4).reshape(2, 4)]),
    "median dim 0-d": (lambda B, x: B.median(x, 0), [R()]),
    "nanmedian": (lambda B, x: B.nanmedian(x), [N(1, NAN, 2, 5, NAN)]),
    "nanmedian all NaN": (lambda B, x: B.nanmedian(x), [N(NAN, NAN)]),
    "nanmedian dim": (lambda B, x: B.nanmedian(x, 1), [N(1, NAN, 0, 7, 3, NAN, 2, 4).reshape(2, 4)]),
    "kthvalue": (lambda B, x: B.kthvalue(x, 2), [R(3, 4)]),
    "kthvalue dim 0 keepdim": (lambda B, x: x.kthvalue(3, 0, True), [R(4, 2)]),
    "kthvalue k = n": (lambda B, x: B.kthvalue(x, 4, -1), [R(2, 4)]),
    "kthvalue ints": (lambda B, x: B.kthvalue(x, 1), [I(3, 1, 2)]),
    "mode": (lambda B, x: B.mode(x), [N(1, 2, 2, 1, 3, 1)]),
    "mode ties: the smaller, its last index": (lambda B, x: B.mode(x, 0), [N(2, 1, 2, 1, 3)]),
    "mode dim keepdim": (lambda B, x: x.mode(0, True), [np.round(R(4, 3))]),
    "mode ints": (lambda B, x: B.mode(x), [I(4, 4, 1, 1, 1, 4).reshape(2, 3)]),
    "mode all distinct": (lambda B, x: B.mode(x), [R(5)]),
    "quantile": (lambda B, x: B.quantile(x, 0.3), [R(7)]),
    "quantile tensor q, dim": (lambda B, x, q: B.quantile(x, q, 1), [R(3, 5), N(0.0, 0.25, 0.5, 1.0)]),
    "quantile keepdim": (lambda B, x: x.quantile(0.6, 0, keepdim=True), [R(4, 3)]),
    "quantile keepdim, all dims": (lambda B, x, q: B.quantile(x, q, keepdim=True), [R(2, 3), N(0.1, 0.9)]),
    "quantile 0-d q tensor": (lambda B, x, q: B.quantile(x, q, -1), [R(2, 3), np.array(0.4)]),
    "quantile NaN": (lambda B, x: B.quantile(x, 0.5, 1), [N(1, NAN, 3, 2, 0, 4).reshape(2, 3)]),
    "quantile ties": (lambda B, x: B.quantile(x, 0.5), [TIES]),
    "quantile 0-d": (lambda B, x: B.quantile(x, 0.5, 0), [R()]),
    **{f"quantile {mode}": (lambda B, x, q, mode=mode: B.quantile(x, q, 0, interpolation=mode),
                            [R(6, 2), N(0.1, 0.3, 0.5, 0.7, 0.9)]) for mode in ("lower", "higher", "midpoint", "nearest")},
    "quantile nearest, halves to even": (lambda B, x, q: B.quantile(x, q, interpolation="nearest"),
                                         [N(0, 1, 2, 3, 4), N(0.125, 0.375, 0.625, 0.875)]),
    "nanquantile": (lambda B, x, q: B.nanquantile(x, q, 1), [N(1, NAN, 3, 2, 0, 4, NAN, NAN).reshape(2, 4),
                                                          N(0.2, 0.5)]),
    "nanquantile all NaN": (lambda B, x: x.nanquantile(0.5), [N(NAN, NAN)]),
    "nanquantile nearest": (lambda B, x: B.nanquantile(x, 0.5, interpolation="nearest"), [N(1, NAN, 3, 5)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(REDUCTION_CASES))
def test_reductions_and_scans_match_torch(name, dtype):
    call, arrays = REDUCTION_CASES[name]
    check(call, *arrays, dtype=dtype)


TIED_INDICES = {  # torch finds these with nth_element: which of equal elements it names is not specified
    "median dim": lambda B, x: B.median(x, -1),
    "nanmedian dim": lambda B, x: B.nanmedian(x, -1),
    "kthvalue": lambda B, x: B.kthvalue(x, 3, -1),
}


@pytest.mark.parametrize("name", list(TIED_INDICES))
def test_tied_order_statistics_name_an_element_of_that_value(name):
    rows = np.stack([TIES, np.full(6, 5.0), N(NAN, 2, 2, 2, 1, NAN)])
    ours, theirs = TIED_INDICES[name](mg, mg.tensor(rows)), TIED_INDICES[name](torch, torch.tensor(rows))
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    picked = np.take_along_axis(rows, ours.indices.numpy()[:, None], axis=1)[:, 0]
    np.testing.assert_array_equal(picked, ours.values.numpy())


GRADCHECK.update({
    "cummax": (lambda x: mg.cummax(x, 1).values, [R(2, 5)]),
    "cummin": (lambda x: mg.cummin(x, 0).values, [R(4, 2)]),
    "logcumsumexp": (lambda x: mg.logcumsumexp(x, 1), [R(2, 5)]),
    "diff": (lambda x, p: mg.diff(x, 2, 0, prepend=p), [R(4, 2), R(1, 2)]),
    "median": (lambda x: mg.median(x), [R(3, 3)]),
    "median dim": (lambda x: mg.median(x, 0).values, [R(4, 3)]),
    "mode": (lambda x: mg.mode(x.round()).values * x.sum(), [R(2, 5)]),
    "kthvalue": (lambda x: mg.kthvalue(x, 2, 0).values, [R(3, 2)]),
    "quantile": (lambda x: mg.quantile(x, mg.tensor([0.1, 0.5, 0.8], dtype=mg.float64), 1), [R(2, 6)]),
    "nanquantile": (lambda x: mg.nanquantile(x, 0.3, interpolation="midpoint"), [R(7)]),
})


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), q=st.floats(0, 1), data=st.data())
def test_order_statistics_match_torch_for_any_shape(shape, q, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    array = R(*shape, seed=data.draw(st.integers(0, 99)))
    check(lambda B, x: B.quantile(x, q, dim), array)
    check(lambda B, x: B.nanquantile(x, q, dim, interpolation="higher"), array)
    check(lambda B, x: B.median(x, dim), array)
    check(lambda B, x: B.cummax(x, dim), array)
    check(lambda B, x: B.logcumsumexp(x, dim), array)


BAD_REDUCTION_ARGUMENTS = {
    "diff of a 0-d tensor": (lambda: mg.diff(mg.tensor(1.0)), DimError, "0-d"),
    "diff negative n": (lambda: mg.diff(mg.zeros(3), -1), ArgumentError, "-1"),
    "diff prepend of other dims": (lambda: mg.diff(mg.zeros(2, 3), prepend=mg.zeros(3)), ShapeError, "(3,)"),
    "diff append that does not fit": (lambda: mg.diff(mg.zeros(2, 3), append=mg.zeros(3, 1)), ShapeError,
                                      "(2, 3) and (3, 1)"),
    "cummax dim out of range": (lambda: mg.cummax(mg.zeros(3), 1), DimError, "dim 1"),
    "logcumsumexp of ints": (lambda: mg.logcumsumexp(mg.tensor([1, 2]), 0), DTypeError, "int64"),
    "median of an empty dim": (lambda: mg.median(mg.zeros(2, 0), 1), DimError, "size 0"),
    "median of empty ints": (lambda: mg.median(mg.zeros(0, dtype=mg.int64)), DimError, "size 0"),
    "kthvalue k = 0": (lambda: mg.kthvalue(mg.zeros(3), 0), ArgumentError, "[1, 3]"),
    "kthvalue k too large": (lambda: mg.kthvalue(mg.zeros(2, 3), 3, 0), ArgumentError, "got 3"),
    "mode of an empty dim": (lambda: mg.mode(mg.zeros(0)), DimError, "size 0"),
    "quantile of ints": (lambda: mg.quantile(mg.tensor([1, 2]), 0.5), DTypeError, "int64"),
    "quantile q above 1": (lambda: mg.quantile(mg.zeros(3), 1.5), ArgumentError, "[1.5]"),
    "quantile q of another dtype": (lambda: mg.quantile(mg.zeros(3), mg.tensor([0.5], dtype=mg.float64)),
                                    DTypeError, "float64"),
    "quantile 2-d q": (lambda: mg.quantile(mg.zeros(3), mg.zeros(1, 1)), DimError, "(1, 1)"),
    "quantile bad interpolation": (lambda: mg.quantile(mg.zeros(3), 0.5, interpolation="cubic"), ArgumentError,
                                   "'cubic'"),
    "quantile of nothing": (lambda: mg.quantile(mg.zeros(0), 0.5), ArgumentError, "(0,)"),
}


@pytest.mark.parametrize("name", list(BAD_REDUCTION_ARGUMENTS))
def test_bad_reduction_arguments_raise_clear_errors(name):
    call, error, fragment = BAD_REDUCTION_ARGUMENTS[name]
    with pytest.raises(error) as raised:
        call()
    assert fragment in str(raised.value)
