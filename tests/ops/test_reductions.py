"""The reductions (minigrad/ops/reductions.py: sum, mean, max, min, argmax ...): values against
numpy, gradients against float64 central differences, ties, every dim form, keepdim, float32
kept, and bad dims.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from op_checks import FAST, check_gradient, rand, value

REDUCE_DIMS = [None, 0, 1, -1, (0, 2), (2, 0, 1)]


@pytest.mark.parametrize("dim", REDUCE_DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_sum_mean(name, dim, keepdim):
    x = rand(2, 3, 4, seed=13)
    axis = dim if not isinstance(dim, tuple) else tuple(dim)
    out = value(lambda t: getattr(t, name)(dim, keepdim), x)
    np.testing.assert_allclose(out, getattr(np, name)(x, axis=axis, keepdims=keepdim), rtol=1e-12)
    check_gradient(lambda t: getattr(mg, name)(t, dim=dim, keepdim=keepdim), x)


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_along_a_dim(name, dim, keepdim):
    x = rand(2, 3, 4, seed=14)  # distinct values: no ties
    result = getattr(mg.tensor(x), name)(dim, keepdim)
    values, indices = result
    assert result.values is values and result.indices is indices
    np.testing.assert_array_equal(values.numpy(), getattr(np, name)(x, axis=dim, keepdims=keepdim))
    arg = np.argmax if name == "max" else np.argmin
    np.testing.assert_array_equal(indices.numpy(), arg(x, axis=dim, keepdims=keepdim))
    assert indices.dtype == np.int64
    check_gradient(lambda t: getattr(mg, name)(t, dim, keepdim).values, x)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_over_several_dims_by_flattening(name):
    x = rand(2, 3, 4, seed=24)
    # several dims at once: move them together and flatten (max(dim) takes one int, as torch)
    fn = lambda t: getattr(t.permute(1, 0, 2).flatten(1), name)(1).values  # noqa: E731
    np.testing.assert_array_equal(value(fn, x), getattr(np, name)(x, axis=(0, 2)))
    check_gradient(fn, x)
    with pytest.raises(TypeError, match=r"\(0, 2\)"):
        getattr(mg.tensor(x), name)((0, 2))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_everything(name):
    x = rand(3, 4, seed=15)
    out = getattr(mg.tensor(x), name)()
    assert out.shape == ()
    assert out.item() == getattr(np, name)(x)
    check_gradient(lambda t: getattr(t, name)(), x)


def test_max_ties_share_the_gradient():
    x = mg.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.5, 0.5, 0.0])  # as torch.max()


def test_argmax_argmin():
    x = mg.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    np.testing.assert_array_equal(x.argmax(1).numpy(), [1, 0])
    np.testing.assert_array_equal(mg.argmin(x, 0).numpy(), [0, 1, 0])
    assert x.argmax().item() == 3
    assert x.argmax(1, keepdim=True).shape == (2, 1)


def test_reduce_bad_dim():
    with pytest.raises(IndexError, match="3"):
        mg.zeros(2, 3).sum(3)


def test_reductions_keep_float32():
    x = mg.randn(3, 4, requires_grad=True)
    for out in (x.sum(), x.mean(1), x.max(0).values, x.min(), x.var(1)):
        assert out.dtype == np.float32


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), data=st.data())
def test_reductions_random_shapes(shape, data):
    dims = data.draw(
        st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True)
    )
    keepdim = data.draw(st.booleans())
    x = rand(*shape, seed=len(shape))
    np.testing.assert_allclose(
        value(lambda t: t.sum(tuple(dims), keepdim), x),
        x.sum(axis=tuple(dims), keepdims=keepdim),
        rtol=1e-12,
        atol=1e-12,
    )
    check_gradient(lambda t: t.mean(tuple(dims), keepdim) * t.sum(tuple(dims), keepdim), x)
    check_gradient(lambda t: t.max(dims[0], keepdim).values, x)
