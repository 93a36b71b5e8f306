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
from parity import I, R, check

torch = pytest.importorskip("torch")


def N(*values):
    return np.array(values, dtype=np.float64)


SHAPE_CASES = {
    "broadcast_to (3,1)->(2,3,4)": (lambda B, x: B.broadcast_to(x, (2, 3, 4)), [R(3, 1)]),
    "broadcast_to -1": (lambda B, x: x.broadcast_to(-1, 4), [R(3, 1)]),
    "broadcast_to empty": (lambda B, x: B.broadcast_to(x, (2, 0, 3)), [R(0, 1)]),
    "broadcast_tensors": (
        lambda B, a, b, c: B.broadcast_tensors(a, b, c),
        [R(3, 1), R(4), R(2, 1, 1)],
    ),
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


GRADCHECK = {
    "diagonal": (lambda x: mg.diagonal(x, 1, 0, 2), [R(3, 2, 4)]),
    "diag_embed": (lambda x: mg.diag_embed(x, -1, 0, 2), [R(2, 3)]),
    "unfold": (lambda x: x.unfold(1, 3, 2), [R(2, 7)]),
    "rot90": (lambda x: mg.rot90(x, 3, (1, 0)), [R(2, 3)]),
    "take": (lambda x: mg.take(x, mg.tensor([0, 0, -1, 3])), [R(2, 2)]),
    "meshgrid": (lambda a, b: mg.stack(mg.meshgrid(a, b, indexing="xy")), [R(3), R(2)]),
    "column_stack": (lambda a, b: mg.column_stack([a, b]), [R(3), R(3, 2)]),
}


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
@given(
    shape=st.lists(st.integers(0, 4), min_size=2, max_size=4),
    offset=st.integers(-5, 5),
    dims=st.permutations(range(4)),
    data=st.data(),
)
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
    "broadcast_to a smaller shape": (
        lambda: mg.broadcast_to(mg.zeros(2, 3), (3,)),
        ShapeError,
        "(2, 3)",
    ),
    "broadcast_tensors that do not fit": (
        lambda: mg.broadcast_tensors(mg.zeros(2), mg.zeros(3)),
        ShapeError,
        "(2,) and (3,)",
    ),
    "hstack of one tensor": (lambda: mg.hstack(mg.zeros(3)), TypeError, "sequence of tensors"),
    "vstack of nothing": (lambda: mg.vstack([]), ArgumentError, "non-empty"),
    "vstack of different widths": (
        lambda: mg.vstack([mg.zeros(3), mg.zeros(2)]),
        ShapeError,
        "(1, 3) and (1, 2)",
    ),
    "hsplit into pieces that do not divide": (
        lambda: mg.hsplit(mg.zeros(2, 5), 2),
        ArgumentError,
        "size 5",
    ),
    "hsplit of a 0-d tensor": (lambda: mg.hsplit(mg.tensor(1.0), 1), DimError, "0-d"),
    "vsplit of a vector": (lambda: mg.vsplit(mg.zeros(4), 2), DimError, "(4,)"),
    "dsplit of a matrix": (lambda: mg.dsplit(mg.zeros(4, 2), 2), DimError, "(4, 2)"),
    "fliplr of a vector": (lambda: mg.fliplr(mg.zeros(3)), DimError, "(3,)"),
    "flipud of a 0-d tensor": (lambda: mg.flipud(mg.tensor(1.0)), DimError, "0-d"),
    "rot90 of a vector": (lambda: mg.rot90(mg.zeros(3)), DimError, "(3,)"),
    "rot90 with one dim": (lambda: mg.rot90(mg.zeros(2, 2), 1, (0,)), ArgumentError, "(0,)"),
    "rot90 with the same dim twice": (
        lambda: mg.rot90(mg.zeros(2, 2), 1, (0, -2)),
        DimError,
        "(0, -2)",
    ),
    "rot90 with a float k": (lambda: mg.rot90(mg.zeros(2, 2), 1.5), TypeError, "1.5"),
    "diag of a 3-d tensor": (lambda: mg.diag(mg.zeros(2, 2, 2)), DimError, "(2, 2, 2)"),
    "diagonal of a vector": (lambda: mg.diagonal(mg.zeros(3)), DimError, "(3,)"),
    "diagonal with the same dim twice": (
        lambda: mg.diagonal(mg.zeros(3, 3), 0, 1, -1),
        DimError,
        "both are 1",
    ),
    "diagonal dim out of range": (lambda: mg.diagonal(mg.zeros(3, 3), 0, 0, 2), DimError, "dim 2"),
    "diag_embed of a 0-d tensor": (lambda: mg.diag_embed(mg.tensor(1.0)), DimError, "0-d"),
    "tril_indices negative rows": (lambda: mg.tril_indices(-1, 3), ArgumentError, "row=-1"),
    "triu_indices float dtype": (
        lambda: mg.triu_indices(3, 3, dtype=mg.float32),
        DTypeError,
        "float32",
    ),
    "tril_indices float size": (lambda: mg.tril_indices(2.5, 3), TypeError, "2.5"),
    "meshgrid of a matrix": (
        lambda: mg.meshgrid(mg.zeros(2, 2), indexing="ij"),
        DimError,
        "(2, 2)",
    ),
    "meshgrid bad indexing": (
        lambda: mg.meshgrid(mg.zeros(2), indexing="ji"),
        ArgumentError,
        "'ji'",
    ),
    "meshgrid mixed dtypes": (
        lambda: mg.meshgrid(mg.zeros(2), mg.zeros(2, dtype=mg.int64)),
        DTypeError,
        "int64",
    ),
    "unfold window too long": (lambda: mg.zeros(3).unfold(0, 4, 1), ArgumentError, "size 4"),
    "unfold step 0": (lambda: mg.zeros(3).unfold(0, 2, 0), ArgumentError, "step 0"),
    "unfold dim out of range": (lambda: mg.zeros(3).unfold(1, 2, 1), DimError, "dim 1"),
    "take with a float index": (
        lambda: mg.take(mg.zeros(3), mg.tensor([0.0])),
        DTypeError,
        "float32",
    ),
    "take out of range": (lambda: mg.take(mg.zeros(3), mg.tensor([3])), IndexError, "[-3, 3)"),
}


# -- reductions and scans ------------------------------------------------------------------

NAN = np.nan
TIES = N(2, 1, 2, 1, 3, 1)

REDUCTION_CASES = {
    "diff": (lambda B, x: B.diff(x), [R(5)]),
    "diff n=2 dim 0": (lambda B, x: x.diff(2, 0), [R(5, 3)]),
    "diff n larger than the size": (lambda B, x: B.diff(x, 4), [R(3)]),
    "diff n=0": (lambda B, x: B.diff(x, 0), [R(3)]),
    "diff prepend and append": (
        lambda B, x, p, a: B.diff(x, 1, -1, p, a),
        [R(2, 3), R(2, 1), R(2, 2)],
    ),
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
    "median dim NaN: the first NaN": (
        lambda B, x: B.median(x, 1),
        [N(1, NAN, 0, NAN, NAN, NAN, 3, 4).reshape(2, 4)],
    ),
    "median dim 0-d": (lambda B, x: B.median(x, 0), [R()]),
    "nanmedian": (lambda B, x: B.nanmedian(x), [N(1, NAN, 2, 5, NAN)]),
    "nanmedian all NaN": (lambda B, x: B.nanmedian(x), [N(NAN, NAN)]),
    "nanmedian dim": (
        lambda B, x: B.nanmedian(x, 1),
        [N(1, NAN, 0, 7, 3, NAN, 2, 4).reshape(2, 4)],
    ),
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
    "quantile tensor q, dim": (
        lambda B, x, q: B.quantile(x, q, 1),
        [R(3, 5), N(0.0, 0.25, 0.5, 1.0)],
    ),
    "quantile keepdim": (lambda B, x: x.quantile(0.6, 0, keepdim=True), [R(4, 3)]),
    "quantile keepdim, all dims": (
        lambda B, x, q: B.quantile(x, q, keepdim=True),
        [R(2, 3), N(0.1, 0.9)],
    ),
    "quantile 0-d q tensor": (lambda B, x, q: B.quantile(x, q, -1), [R(2, 3), np.array(0.4)]),
    "quantile NaN": (lambda B, x: B.quantile(x, 0.5, 1), [N(1, NAN, 3, 2, 0, 4).reshape(2, 3)]),
    "quantile ties": (lambda B, x: B.quantile(x, 0.5), [TIES]),
    "quantile 0-d": (lambda B, x: B.quantile(x, 0.5, 0), [R()]),
    **{
        f"quantile {mode}": (
            lambda B, x, q, mode=mode: B.quantile(x, q, 0, interpolation=mode),
            [R(6, 2), N(0.1, 0.3, 0.5, 0.7, 0.9)],
        )
        for mode in ("lower", "higher", "midpoint", "nearest")
    },
    "quantile nearest, halves to even": (
        lambda B, x, q: B.quantile(x, q, interpolation="nearest"),
        [N(0, 1, 2, 3, 4), N(0.125, 0.375, 0.625, 0.875)],
    ),
    "nanquantile": (
        lambda B, x, q: B.nanquantile(x, q, 1),
        [N(1, NAN, 3, 2, 0, 4, NAN, NAN).reshape(2, 4), N(0.2, 0.5)],
    ),
    "nanquantile all NaN": (lambda B, x: x.nanquantile(0.5), [N(NAN, NAN)]),
    "nanquantile nearest": (
        lambda B, x: B.nanquantile(x, 0.5, interpolation="nearest"),
        [N(1, NAN, 3, 5)],
    ),
}


TIED_INDICES = {  # torch finds these with nth_element: which of equal elements it names is not specified
    "median dim": lambda B, x: B.median(x, -1),
    "nanmedian dim": lambda B, x: B.nanmedian(x, -1),
    "kthvalue": lambda B, x: B.kthvalue(x, 3, -1),
}


@pytest.mark.parametrize("name", list(TIED_INDICES))
def test_tied_order_statistics_name_an_element_of_that_value(name):
    rows = np.stack([TIES, np.full(6, 5.0), N(NAN, 2, 2, 2, 1, NAN)])
    ours, theirs = (
        TIED_INDICES[name](mg, mg.tensor(rows)),
        TIED_INDICES[name](torch, torch.tensor(rows)),
    )
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    picked = np.take_along_axis(rows, ours.indices.numpy()[:, None], axis=1)[:, 0]
    np.testing.assert_array_equal(picked, ours.values.numpy())


GRADCHECK.update(
    {
        "cummax": (lambda x: mg.cummax(x, 1).values, [R(2, 5)]),
        "cummin": (lambda x: mg.cummin(x, 0).values, [R(4, 2)]),
        "logcumsumexp": (lambda x: mg.logcumsumexp(x, 1), [R(2, 5)]),
        "diff": (lambda x, p: mg.diff(x, 2, 0, prepend=p), [R(4, 2), R(1, 2)]),
        "median": (lambda x: mg.median(x), [R(3, 3)]),
        "median dim": (lambda x: mg.median(x, 0).values, [R(4, 3)]),
        "mode": (lambda x: mg.mode(x.round()).values * x.sum(), [R(2, 5)]),
        "kthvalue": (lambda x: mg.kthvalue(x, 2, 0).values, [R(3, 2)]),
        "quantile": (
            lambda x: mg.quantile(x, mg.tensor([0.1, 0.5, 0.8], dtype=mg.float64), 1),
            [R(2, 6)],
        ),
        "nanquantile": (lambda x: mg.nanquantile(x, 0.3, interpolation="midpoint"), [R(7)]),
    }
)


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
    "diff prepend of other dims": (
        lambda: mg.diff(mg.zeros(2, 3), prepend=mg.zeros(3)),
        ShapeError,
        "(3,)",
    ),
    "diff append that does not fit": (
        lambda: mg.diff(mg.zeros(2, 3), append=mg.zeros(3, 1)),
        ShapeError,
        "(2, 3) and (3, 1)",
    ),
    "cummax dim out of range": (lambda: mg.cummax(mg.zeros(3), 1), DimError, "dim 1"),
    "logcumsumexp of ints": (lambda: mg.logcumsumexp(mg.tensor([1, 2]), 0), DTypeError, "int64"),
    "median of an empty dim": (lambda: mg.median(mg.zeros(2, 0), 1), DimError, "size 0"),
    "median of empty ints": (lambda: mg.median(mg.zeros(0, dtype=mg.int64)), DimError, "size 0"),
    "kthvalue k = 0": (lambda: mg.kthvalue(mg.zeros(3), 0), ArgumentError, "[1, 3]"),
    "kthvalue k too large": (lambda: mg.kthvalue(mg.zeros(2, 3), 3, 0), ArgumentError, "got 3"),
    "mode of an empty dim": (lambda: mg.mode(mg.zeros(0)), DimError, "size 0"),
    "quantile of ints": (lambda: mg.quantile(mg.tensor([1, 2]), 0.5), DTypeError, "int64"),
    "quantile q above 1": (lambda: mg.quantile(mg.zeros(3), 1.5), ArgumentError, "[1.5]"),
    "quantile q of another dtype": (
        lambda: mg.quantile(mg.zeros(3), mg.tensor([0.5], dtype=mg.float64)),
        DTypeError,
        "float64",
    ),
    "quantile 2-d q": (lambda: mg.quantile(mg.zeros(3), mg.zeros(1, 1)), DimError, "(1, 1)"),
    "quantile bad interpolation": (
        lambda: mg.quantile(mg.zeros(3), 0.5, interpolation="cubic"),
        ArgumentError,
        "'cubic'",
    ),
    "quantile of nothing": (lambda: mg.quantile(mg.zeros(0), 0.5), ArgumentError, "(0,)"),
}


# -- counting and searching (no gradient) ----------------------------------------------------

COUNTING_CASES = {
    "unique": (lambda B, x: B.unique(x), [N(3, 1, 2, 1, 3)]),
    "unique inverse, counts": (
        lambda B, x: B.unique(x, return_inverse=True, return_counts=True),
        [N(3, 1, 2, 1, 3, 3).reshape(2, 3)],
    ),
    "unique NaN kept apart": (
        lambda B, x: x.unique(return_inverse=True, return_counts=True),
        [N(3, 1, NAN, 1, NAN, 2)],
    ),
    "unique sorted=False": (lambda B, x: B.unique(x, sorted=False), [I(3, 1, 2, 1)]),
    "unique dim": (
        lambda B, x: B.unique(x, dim=0, return_inverse=True, return_counts=True),
        [I(1, 2, 1, 2, 0, 5).reshape(3, 2)],
    ),
    "unique dim -1": (
        lambda B, x: B.unique(x, return_counts=True, dim=-1),
        [I(1, 1, 0, 2, 2, 3).reshape(2, 3)],
    ),
    "unique empty": (lambda B, x: B.unique(x, return_inverse=True, return_counts=True), [R(0)]),
    "unique bools": (lambda B, x: B.unique(x > 0), [R(6)]),
    "unique_consecutive": (
        lambda B, x: B.unique_consecutive(x, return_inverse=True, return_counts=True),
        [I(1, 1, 2, 2, 3, 1, 1, 2)],
    ),
    "unique_consecutive NaN": (lambda B, x: x.unique_consecutive(), [N(NAN, NAN, 1, 1)]),
    "unique_consecutive dim": (
        lambda B, x: B.unique_consecutive(x, return_counts=True, dim=0),
        [I(1, 2, 1, 2, 0, 5, 1, 2).reshape(4, 2)],
    ),
    "unique_consecutive 2-d flat": (
        lambda B, x: B.unique_consecutive(x, return_inverse=True),
        [I(1, 1, 2, 2, 2, 1).reshape(2, 3)],
    ),
    "bincount": (lambda B, x: B.bincount(x), [I(0, 2, 2, 5)]),
    "bincount minlength": (lambda B, x: x.bincount(minlength=8), [I(0, 2, 2, 5)]),
    "bincount weights": (lambda B, x, w: B.bincount(x, w), [I(0, 2, 2, 1), R(4)]),
    "bincount int weights": (
        lambda B, x, w: B.bincount(x, weights=w),
        [I(0, 2, 2, 1), I(1, 2, 3, 4)],
    ),
    "bincount empty": (lambda B, x: B.bincount(x), [I()]),
    "histc": (lambda B, x: B.histc(x, bins=4, min=0, max=3), [N(0, 1, 1.5, 3, 3, -1, 4, 2.999)]),
    "histc data range": (lambda B, x: x.histc(5), [R(20)]),
    "histc one value": (lambda B, x: B.histc(x, bins=4), [N(1, 1)]),
    "histc empty": (lambda B, x: B.histc(x, bins=3), [R(0)]),
    "bucketize": (lambda B, x, b: B.bucketize(x, b), [N(0, 1, 2, 3, 5, 6, 9), N(1, 3, 5, 7)]),
    "bucketize right": (
        lambda B, x, b: B.bucketize(x, b, right=True),
        [N(0, 1, 2, 3, 5, 6, 9), N(1, 3, 5, 7)],
    ),
    "bucketize 2-d int32": (
        lambda B, x, b: B.bucketize(x, b, out_int32=True),
        [R(2, 3), N(-1, 0, 1)],
    ),
    "searchsorted": (lambda B, s, v: B.searchsorted(s, v), [N(1, 3, 5, 7), N(3, 6, 9, 0)]),
    "searchsorted right": (
        lambda B, s, v: B.searchsorted(s, v, right=True),
        [N(1, 3, 3, 7), N(3, 6, 9, 0)],
    ),
    "searchsorted side": (
        lambda B, s, v: B.searchsorted(s, v, side="right"),
        [N(1, 3, 3, 7), N(3, 6, 9, 0)],
    ),
    "searchsorted rows": (
        lambda B, s, v: B.searchsorted(s, v),
        [N(1, 3, 5, 2, 4, 6).reshape(2, 3), N(3, 6, 0, 5).reshape(2, 2)],
    ),
    "searchsorted sorter": (
        lambda B, s, v: B.searchsorted(s, v, sorter=B.argsort(s)),
        [N(5, 1, 3), N(2, 4)],
    ),
    "searchsorted NaN": (lambda B, s, v: B.searchsorted(s, v), [N(1, 2, NAN), N(NAN, 1.5)]),
    "searchsorted ints": (lambda B, s, v: B.searchsorted(s, v), [I(1, 3, 5), I(3, 4)]),
    "argwhere": (lambda B, x: B.argwhere(x), [N(0, 1, 0, 2, 0, 3).reshape(2, 3)]),
    "argwhere empty": (lambda B, x: x.argwhere(), [R(0, 2)]),
    "count_nonzero empty": (lambda B, x: B.count_nonzero(x), [R(0)]),
}


def test_searchsorted_with_a_number_and_bucketize_of_a_number():
    for B in (mg, torch):
        found = (
            B.searchsorted(B.tensor([1, 3, 5]), 3).item(),
            B.bucketize(3, B.tensor([1, 3, 5])).item(),
        )
        assert found == (1, 1)


# -- writing into positions: scatter_reduce, index_add / copy / fill -------------------------


def _scatter_case(reduce, include_self, x, index, src, dim=0):
    return (
        lambda B, x_, s_: B.scatter_reduce(
            x_, dim, B.tensor(index), s_, reduce, include_self=include_self
        ),
        [x, src],
    )


SCATTER_INDEX = I(0, 1, 0, 1, 2, 1, 2, 0, 0).reshape(3, 3)
WRITE_CASES = {
    **{
        f"scatter_reduce {reduce} include_self={flag}": _scatter_case(
            reduce, flag, R(3, 3), SCATTER_INDEX, R(3, 3)
        )
        for reduce in ("sum", "prod", "mean", "amax", "amin")
        for flag in (True, False)
    },
    "scatter_reduce prod zeros": _scatter_case(
        "prod", True, N(0, 2, 3, 0, 1, 2), I(0, 0, 1, 1, 1, 2), N(2, 0, 0, 4, 0, 5)
    ),
    "scatter_reduce prod zeros without self": _scatter_case(
        "prod", False, N(0, 2, 3, 1), I(0, 0, 1, 1, 3), N(2, 0, 0, 4, 5)
    ),
    "scatter_reduce amax ties": _scatter_case(
        "amax", True, N(1, 5, 0), I(0, 0, 1, 1, 2), N(1, 1, 5, 2, -1)
    ),
    "scatter_reduce amin ties without self": _scatter_case(
        "amin", False, N(1, 5, 0), I(0, 0, 1, 1), N(1, 1, 5, 5)
    ),
    "scatter_reduce dim 1": _scatter_case(
        "mean", True, R(2, 4), I(3, 0, 3, 1).reshape(2, 2), R(2, 2), dim=1
    ),
    "scatter_reduce method, ints": (
        lambda B, x, s: x.scatter_reduce(0, B.tensor([0, 0, 2]), s, "mean"),
        [I(5, 5, 5), I(2, 3, 7)],
    ),
    "scatter_reduce ints amax": (
        lambda B, x, s: B.scatter_reduce(x, 0, B.tensor([0, 0, 2]), s, "amax", include_self=False),
        [I(5, 5, 5), I(2, 3, 7)],
    ),
    "index_add": (lambda B, x, s: B.index_add(x, 0, B.tensor([2, 0, 2]), s), [R(3, 2), R(3, 2)]),
    "index_add alpha, dim -1": (
        lambda B, x, s: x.index_add(-1, B.tensor([1]), s, alpha=-2.5),
        [R(2, 3), R(2, 1)],
    ),
    "index_add 0-d": (lambda B, x, s: B.index_add(x, 0, B.tensor([0]), s), [R(), R()]),
    "index_copy": (lambda B, x, s: B.index_copy(x, 1, B.tensor([2, 0]), s), [R(2, 3), R(2, 2)]),
    "index_copy method": (lambda B, x, s: x.index_copy(0, B.tensor(1), s), [R(2, 3), R(1, 3)]),
    "index_fill": (lambda B, x: B.index_fill(x, 1, B.tensor([0, 2, 0]), -1.5), [R(2, 3)]),
    "index_fill negative index": (lambda B, x: x.index_fill(0, B.tensor([-1]), 2.0), [R(3, 2)]),
    "index_fill tensor value": (
        lambda B, x, v: B.index_fill(x, 0, B.tensor([1, 1, 2]), v),
        [R(3, 2), R()],
    ),
    "index_add ints": (
        lambda B, x, s: B.index_add(x, 0, B.tensor([1, 1]), s),
        [I(1, 2, 3), I(10, 20)],
    ),
}


IN_PLACE_WRITES = {
    "scatter_reduce_": lambda B, h, s: h.scatter_reduce_(
        0, B.tensor([[0, 1], [0, 0], [1, 1]]), s, "amax", include_self=False
    ),
    "index_add_": lambda B, h, s: h.index_add_(0, B.tensor([2, 2, 0]), s, alpha=3),
    "index_copy_": lambda B, h, s: h.index_copy_(0, B.tensor([1, 0, 2]), s),
    "index_fill_": lambda B, h, s: h.index_fill_(0, B.tensor([1]), s[0, 0]),
}


@pytest.mark.parametrize("name", list(IN_PLACE_WRITES))
def test_in_place_writes_follow_the_graph_and_the_version_counter(name):
    """h = x * 2; h.op_(..., s); a view of h sees it; the gradients of x and s are torch's."""

    def call(B, x, s):
        h = x * 2
        row = h[1]
        before = h._version if B is torch else h._version[0]
        out = IN_PLACE_WRITES[name](B, h, s)
        assert out is h and (h._version if B is torch else h._version[0]) == before + 1
        return h, row * 1

    check(call, R(3, 2), R(3, 2))


def test_an_in_place_write_after_a_saved_use_raises_in_backward():
    x = mg.tensor(R(3), requires_grad=True)
    h = x * 1
    y = h * h  # saves h
    h.index_add_(0, mg.tensor([0]), mg.tensor(R(1)))
    with pytest.raises(RuntimeError, match="modified|changed|version"):
        y.sum().backward()


def test_an_in_place_write_into_a_leaf_that_requires_grad_is_refused():
    w = mg.zeros(3, requires_grad=True)
    for fill in (
        lambda: w.index_fill_(0, mg.tensor([0]), 1.0),
        lambda: w.uniform_(),
        lambda: w.normal_(),
    ):
        with pytest.raises(RuntimeError, match="leaf"):
            fill()
    with mg.no_grad():
        w.uniform_(-1, 1)
    assert w._version[0] == 1 and w.requires_grad


GRADCHECK.update(
    {
        "scatter_reduce prod": (
            lambda x, s: mg.scatter_reduce(x, 0, mg.tensor([0, 0, 1, 2]), s, "prod"),
            [R(3), R(4)],
        ),
        "scatter_reduce mean": (
            lambda x, s: mg.scatter_reduce(
                x, 0, mg.tensor([0, 0, 2]), s, "mean", include_self=False
            ),
            [R(3), R(3)],
        ),
        "scatter_reduce amin": (
            lambda x, s: mg.scatter_reduce(x, 0, mg.tensor([1, 0, 2]), s, "amin"),
            [R(3), R(3)],
        ),
        "index_add": (
            lambda x, s: mg.index_add(x, 1, mg.tensor([0, 0]), s, alpha=2),
            [R(2, 2), R(2, 2)],
        ),
        "index_copy": (lambda x, s: mg.index_copy(x, 0, mg.tensor([1]), s), [R(2, 2), R(1, 2)]),
        "index_fill": (lambda x, v: mg.index_fill(x, 0, mg.tensor([1, 1]), v), [R(2, 2), R()]),
        "vander": (lambda x: mg.vander(x, 4), [N(0.0, 1.5, -2.0)]),
        "trapezoid": (lambda y, x: mg.trapezoid(y, x, dim=0), [R(4, 2), R(4)]),
    }
)


BAD_WRITE_ARGUMENTS = {
    "scatter_reduce bad reduce": (
        lambda: mg.scatter_reduce(mg.zeros(3), 0, mg.tensor([0]), mg.zeros(1), "max"),
        ArgumentError,
        "'max'",
    ),
    "scatter_reduce index out of range": (
        lambda: mg.scatter_reduce(mg.zeros(3), 0, mg.tensor([3]), mg.zeros(1), "sum"),
        IndexError,
        "[0, 3)",
    ),
    "scatter_reduce src of another dtype": (
        lambda: mg.scatter_reduce(
            mg.zeros(3), 0, mg.tensor([0]), mg.zeros(1, dtype=mg.float64), "sum"
        ),
        DTypeError,
        "float64",
    ),
    "index_add 2-d index": (
        lambda: mg.index_add(mg.zeros(3), 0, mg.tensor([[0]]), mg.zeros(1)),
        DimError,
        "(1, 1)",
    ),
    "index_add source of the wrong shape": (
        lambda: mg.index_add(mg.zeros(3, 2), 0, mg.tensor([0, 1]), mg.zeros(2, 3)),
        ShapeError,
        "(2, 2)",
    ),
    "index_add negative index": (
        lambda: mg.index_add(mg.zeros(3), 0, mg.tensor([-1]), mg.zeros(1)),
        IndexError,
        "[0, 3)",
    ),
    "index_copy float index": (
        lambda: mg.index_copy(mg.zeros(3), 0, mg.tensor([0.0]), mg.zeros(1)),
        DTypeError,
        "float32",
    ),
    "index_fill value not a number": (
        lambda: mg.index_fill(mg.zeros(3), 0, mg.tensor([0]), mg.zeros(2)),
        ArgumentError,
        "(2,)",
    ),
    "bincount of floats": (lambda: mg.bincount(mg.zeros(3)), DTypeError, "float32"),
    "bincount negative": (lambda: mg.bincount(mg.tensor([1, -1])), ArgumentError, "-1"),
    "bincount 2-d": (lambda: mg.bincount(mg.tensor([[1]])), DimError, "(1, 1)"),
    "bincount weights of another shape": (
        lambda: mg.bincount(mg.tensor([1, 2]), mg.zeros(3)),
        ShapeError,
        "(3,)",
    ),
    "histc of ints": (lambda: mg.histc(mg.tensor([1, 2])), DTypeError, "int64"),
    "histc max below min": (lambda: mg.histc(mg.zeros(3), 4, 2, 1), ArgumentError, "min=2, max=1"),
    "histc zero bins": (lambda: mg.histc(mg.zeros(3), 0), ArgumentError, "0"),
    "searchsorted side and right": (
        lambda: mg.searchsorted(mg.zeros(3), mg.zeros(1), right=True, side="left"),
        ArgumentError,
        "side='left'",
    ),
    "searchsorted rows that do not fit": (
        lambda: mg.searchsorted(mg.zeros(2, 3), mg.zeros(3, 1)),
        ShapeError,
        "(3, 1)",
    ),
    "bucketize 2-d boundaries": (
        lambda: mg.bucketize(mg.zeros(3), mg.zeros(2, 2)),
        DimError,
        "(2, 2)",
    ),
    "unique dim of a 0-d tensor": (lambda: mg.unique(mg.tensor(1.0), dim=0), DimError, "0-d"),
    "vander of a matrix": (lambda: mg.vander(mg.zeros(2, 2)), DimError, "(2, 2)"),
    "vander negative N": (lambda: mg.vander(mg.zeros(2), -1), ArgumentError, "-1"),
    "trapezoid x and dx": (
        lambda: mg.trapezoid(mg.zeros(3), mg.zeros(3), dx=1.0),
        ArgumentError,
        "not both",
    ),
    "trapezoid x of the wrong length": (
        lambda: mg.trapezoid(mg.zeros(3), mg.zeros(2)),
        ShapeError,
        "length 3",
    ),
    "logspace negative steps": (lambda: mg.logspace(0, 1, -1), ArgumentError, "-1"),
}


# -- sequences: logspace, vander, trapezoid, randint_like ------------------------------------

SERIES_CASES = {
    "logspace": (lambda B: B.logspace(-1, 2, 5), []),
    "logspace base 2, float64": (lambda B: B.logspace(0, 10, 11, base=2, dtype=B.float64), []),
    "logspace one step": (lambda B: B.logspace(3, 5, 1), []),
    "trapezoid": (lambda B, y: B.trapezoid(y), [R(5)]),
    "trapezoid dx dim 0": (lambda B, y: B.trapezoid(y, dx=0.5, dim=0), [R(4, 3)]),
    "trapezoid x 1-D": (lambda B, y, x: B.trapezoid(y, x), [R(2, 4), N(0, 0.5, 2, 3)]),
    "trapezoid x full shape": (lambda B, y, x: B.trapezoid(y, x, dim=0), [R(3, 2), R(3, 2)]),
    "trapezoid one sample": (lambda B, y: B.trapezoid(y), [R(2, 1)]),
    "trapezoid ints": (lambda B, y: B.trapezoid(y), [I(1, 2, 4)]),
}


VANDER_CASES = {  # values only: torch 2.13's vander backward fails (its own in-place cumprod); gradcheck has ours
    "vander": (lambda B, x: B.vander(x), [R(4)]),
    "vander N, increasing": (lambda B, x: B.vander(x, 3, True), [N(0, 1, 2, -1)]),
    "vander N = 0": (lambda B, x: B.vander(x, N=0), [R(3)]),
    "vander ints": (lambda B, x: B.vander(x, 4), [I(1, 2, 3)]),
}


# -- random fills: distribution, range, seeding, generator= ----------------------------------

SIZE = 40_000
FILLS = {  # name -> (fill, mean, variance, low, high) of the distribution drawn
    "uniform_": (lambda x, g: x.uniform_(-2, 3, generator=g), 0.5, 25 / 12, -2, 3),
    "normal_": (lambda x, g: x.normal_(1.5, 0.5, generator=g), 1.5, 0.25, -np.inf, np.inf),
    "exponential_": (lambda x, g: x.exponential_(4.0, generator=g), 0.25, 1 / 16, 0, np.inf),
    "bernoulli_": (lambda x, g: x.bernoulli_(0.3, generator=g), 0.3, 0.21, 0, 1),
    "random_(from, to)": (lambda x, g: x.random_(-3, 5, generator=g), 0.5, 63 / 12, -3, 4),
    "random_(to)": (lambda x, g: x.random_(10, generator=g), 4.5, 99 / 12, 0, 9),
}


@pytest.mark.parametrize("dtype", [mg.float32, mg.float64])
@pytest.mark.parametrize("name", list(FILLS))
def test_random_fills_draw_the_right_distribution(name, dtype):
    fill, mean, variance, low, high = FILLS[name]
    mg.manual_seed(1234)
    x = mg.zeros(SIZE, dtype=dtype)
    assert fill(x, None) is x
    values = x.numpy()
    assert values.dtype == dtype and values.min() >= low and values.max() <= high
    # the sample mean lies within 5 standard errors; the variance within 5% (SIZE draws)
    assert abs(values.mean() - mean) < 5 * np.sqrt(variance / SIZE)
    assert abs(values.var() - variance) < 0.05 * variance
    if name.startswith(("random_", "bernoulli_")):
        assert (values == np.round(values)).all()


@pytest.mark.parametrize("name", list(FILLS))
def test_random_fills_repeat_from_the_seed_and_from_a_generator(name):
    fill = FILLS[name][0]
    mg.manual_seed(7)
    first = fill(mg.zeros(50), None).numpy()
    mg.manual_seed(7)
    np.testing.assert_array_equal(fill(mg.zeros(50), None).numpy(), first)
    mg.manual_seed(7)
    state = mg.get_rng_state()
    ours = fill(mg.zeros(50), mg.Generator().manual_seed(3)).numpy()
    np.testing.assert_array_equal(fill(mg.zeros(50), mg.Generator().manual_seed(3)).numpy(), ours)
    np.testing.assert_array_equal(
        mg.get_rng_state().numpy(), state.numpy()
    )  # generator= left the global one


def test_random_fills_of_a_view_write_into_its_base_and_bump_its_version():
    x = mg.zeros(4, 3)
    row = x[1]
    row.uniform_(5, 6)
    x.t()[2].exponential_()
    assert (
        (x.numpy()[1, :2] >= 5).all()
        and (x.numpy()[:, 2] > 0).all()
        and (x.numpy()[[0, 2, 3], :2] == 0).all()
    )
    assert row._version[0] == 2  # a view shares its base's counter, recorded or not (torch: 2)


def test_a_random_fill_while_recording_cuts_the_old_history():
    """h = x * 2; h.uniform_(): the gradient of x through h is 0, as in torch."""
    x = mg.tensor(R(3), requires_grad=True)
    h = x * 2
    h.normal_()
    (h * 3 + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


def test_random_and_bernoulli_on_ints_and_the_full_range_of_random_():
    mg.manual_seed(0)
    ints = mg.zeros(10_000, dtype=mg.int64).random_(3)
    assert set(np.unique(ints.numpy())) == {0, 1, 2}
    whole = mg.zeros(10_000, dtype=mg.float32).random_()
    assert whole.numpy().min() >= 0 and whole.numpy().max() <= 2**24 and whole.numpy().max() > 2**23
    bits = mg.zeros(10_000, dtype=mg.int64).bernoulli_(mg.tensor([0.0, 1.0]).repeat(5_000))
    np.testing.assert_array_equal(bits.numpy(), np.tile([0, 1], 5_000))


def test_randint_like_takes_the_shape_and_dtype_and_draws_from_its_range():
    mg.manual_seed(5)
    like = mg.randint_like(mg.zeros(2, 3, dtype=mg.float64), 4)
    assert (
        like.shape == (2, 3)
        and like.dtype == mg.float64
        and set(like.numpy().ravel()) <= {0, 1, 2, 3}
    )
    spread = mg.randint_like(mg.zeros(20_000, dtype=mg.int64), -2, 2, dtype=mg.int32)
    assert spread.dtype == mg.int32 and sorted(np.unique(spread.numpy())) == [-2, -1, 0, 1]
    assert abs(spread.numpy().mean() + 0.5) < 5 * np.sqrt(1.25 / 20_000)
    mg.manual_seed(5)
    np.testing.assert_array_equal(
        mg.randint_like(mg.zeros(2, 3, dtype=mg.float64), 4).numpy(), like.numpy()
    )
    torch_like = torch.randint_like(torch.zeros(2, 3, dtype=torch.float64), 4)
    assert torch_like.dtype == torch.float64 and tuple(torch_like.shape) == like.shape


BAD_FILLS = {
    "uniform_ of ints": (lambda: mg.zeros(3, dtype=mg.int64).uniform_(), DTypeError, "int64"),
    "uniform_ from > to": (lambda: mg.zeros(3).uniform_(2, 1), ArgumentError, "from=2, to=1"),
    "normal_ negative std": (lambda: mg.zeros(3).normal_(0, -1), ArgumentError, "-1"),
    "normal_ tensor mean": (lambda: mg.zeros(3).normal_(mg.zeros(3)), TypeError, "Tensor"),
    "exponential_ rate 0": (lambda: mg.zeros(3).exponential_(0), ArgumentError, "positive"),
    "bernoulli_ p above 1": (lambda: mg.zeros(3).bernoulli_(1.5), ArgumentError, "1.5"),
    "bernoulli_ p of another shape": (
        lambda: mg.zeros(3).bernoulli_(mg.zeros(2)),
        ShapeError,
        "(2,)",
    ),
    "random_ from >= to": (lambda: mg.zeros(3).random_(4, 4), ArgumentError, "from=4, to=4"),
    "random_ float bound": (lambda: mg.zeros(3).random_(0.5), TypeError, "0.5"),
    "randint_like low >= high": (
        lambda: mg.randint_like(mg.zeros(3), 5, 1),
        ArgumentError,
        "low=5, high=1",
    ),
}


# -- the tables, run ----------------------------------------------------------------------

WITH_GRADIENTS = {**SHAPE_CASES, **REDUCTION_CASES, **WRITE_CASES, **SERIES_CASES}
VALUES_ONLY = {**COUNTING_CASES, **VANDER_CASES}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(WITH_GRADIENTS) + list(VALUES_ONLY))
def test_matches_torch(name, dtype):
    call, arrays = WITH_GRADIENTS.get(name) or VALUES_ONLY[name]
    check(call, *arrays, dtype=dtype, grad=name in WITH_GRADIENTS)


BAD_ARGUMENTS = {
    **BAD_SHAPE_ARGUMENTS,
    **BAD_REDUCTION_ARGUMENTS,
    **BAD_WRITE_ARGUMENTS,
    **BAD_FILLS,
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    """The error names what was expected and what was given; minigrad's errors are RuntimeErrors too."""
    call, error, fragment = BAD_ARGUMENTS[name]
    with pytest.raises(error) as raised:
        call()
    assert fragment in str(raised.value)
    assert isinstance(raised.value, RuntimeError) or error is TypeError


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_in_float64(name):
    call, arrays = GRADCHECK[name]
    assert mg.gradcheck(call, [mg.tensor(a, requires_grad=True) for a in arrays])
