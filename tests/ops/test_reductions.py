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
from minigrad.errors import ArgumentError, DTypeError, DimError, ShapeError
from op_checks import FAST, assert_clear_error, check_gradient, rand, value
from parity import I, N, R, check

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


# -- tables: against torch (parity.check), float64 gradchecks, the errors of bad arguments --


NAN = np.nan


# name -> (call(B, *tensors), arrays): values, dtypes and the gradients of float inputs
TORCH_CASES = {
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
}


# the same, values, indices and dtypes only (no gradient)
VALUES_ONLY = {"count_nonzero empty": (lambda B, x: B.count_nonzero(x), [R(0)])}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(TORCH_CASES) + list(VALUES_ONLY))
def test_matches_torch(name, dtype):
    call, arrays = TORCH_CASES.get(name) or VALUES_ONLY[name]
    check(call, *arrays, dtype=dtype, grad=name in TORCH_CASES)


GRADCHECK = {
    "cummax": (lambda x: mg.cummax(x, 1).values, [R(2, 5)]),
    "cummin": (lambda x: mg.cummin(x, 0).values, [R(4, 2)]),
    "logcumsumexp": (lambda x: mg.logcumsumexp(x, 1), [R(2, 5)]),
    "diff": (lambda x, p: mg.diff(x, 2, 0, prepend=p), [R(4, 2), R(1, 2)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_in_float64(name):
    call, arrays = GRADCHECK[name]
    check_gradient(call, *arrays)


# name -> (call, the error, a fragment of its message)
BAD_ARGUMENTS = {
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
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    assert_clear_error(*BAD_ARGUMENTS[name])
