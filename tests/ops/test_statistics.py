"""The statistics (minigrad/ops/statistics.py: var, std, median, quantile ...): values against
numpy and torch, gradients against float64 central differences and torch.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, DimError
from op_checks import assert_clear_error, check_gradient, rand, value
from parity import I, N, R, assert_close, check

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("unbiased", [True, False])
def test_var(dim, keepdim, unbiased):
    x = rand(2, 3, 4, seed=16)
    out = value(lambda t: t.var(dim, unbiased, keepdim), x)  # torch's positional order
    np.testing.assert_allclose(
        out, np.var(x, axis=dim, keepdims=keepdim, ddof=1 if unbiased else 0), rtol=1e-12
    )
    check_gradient(lambda t: mg.var(t, dim, keepdim=keepdim, unbiased=unbiased), x)


NAN = np.nan
TIES = N(2, 1, 2, 1, 3, 1)  # the tied input of the sweep's order statistics

# torch finds these with nth_element: which of equal elements it names is not specified
TIED_INDICES = {
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


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantiles_next_to_an_infinity_are_torchs(name):
    rng = np.random.default_rng(3)
    for _ in range(60):
        x = rng.standard_normal(7)
        x[rng.integers(0, 7, size=2)] = rng.choice([np.inf, -np.inf, np.nan], size=2)
        q = np.sort(rng.random(3))
        ours = getattr(mg, name)(mg.tensor(x), mg.tensor(q))
        theirs = getattr(torch, name)(torch.tensor(x), torch.tensor(q))
        assert_close(ours, theirs, what=f"{name}({x.tolist()}, {q.tolist()})")


# -- tables: against torch (parity.check), float64 gradchecks, the errors of bad arguments --


# name -> (call(B, *tensors), arrays): values, dtypes and the gradients of float inputs
TORCH_CASES = {
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


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name, dtype):
    call, arrays = TORCH_CASES[name]
    check(call, *arrays, dtype=dtype)


GRADCHECK = {
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


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_in_float64(name):
    call, arrays = GRADCHECK[name]
    check_gradient(call, *arrays)


# name -> (call, the error, a fragment of its message)
BAD_ARGUMENTS = {
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


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    assert_clear_error(*BAD_ARGUMENTS[name])
