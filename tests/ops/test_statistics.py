"""The statistics (minigrad/ops/statistics.py: var, std, median, quantile ...): values against
numpy and torch, gradients against float64 central differences and torch.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from op_checks import check_gradient, rand, value
from parity import N, R, check

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
