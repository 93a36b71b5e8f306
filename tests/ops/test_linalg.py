"""matmul and the linear-algebra ops (minigrad/ops/linalg.py): values against numpy, gradients
against float64 central differences, batch broadcasting, float32 kept, and errors that name
both shapes.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from op_checks import FAST, check_gradient, rand, value


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 4), (4, 5)),  # 2-D
        ((2, 3, 4), (2, 4, 5)),  # batched
        ((2, 3, 4), (4, 5)),  # batch on the left only
        ((3, 4), (2, 4, 5)),  # batch on the right only
        ((2, 1, 3, 4), (3, 4, 2)),  # batch dims broadcast: (2, 1) with (3,)
        ((1, 3, 4), (2, 4, 5)),  # size-1 batch dim broadcast
        ((4,), (4, 5)),  # 1-D on the left
        ((3, 4), (4,)),  # 1-D on the right
        ((4,), (4,)),  # dot product
        ((4,), (2, 4, 5)),
        ((2, 3, 4), (4,)),
    ],
    ids=str,
)
def test_matmul(shapes):
    a, b = rand(*shapes[0], seed=6), rand(*shapes[1], seed=7)
    out = value(lambda x, y: x @ y, a, b)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-12, atol=1e-12)
    assert out.shape == np.matmul(a, b).shape
    check_gradient(lambda x, y: x @ y, a, b)
    check_gradient(lambda x, y: mg.matmul(x, y), a, b)


@FAST
@given(
    batch=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3),
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
    seed=st.integers(0, 1000),
)
def test_matmul_random_batch_broadcasting(batch, sizes, seed):
    n, k, m = sizes
    a = rand(*batch.input_shapes[0], n, k, seed=seed)
    b = rand(*batch.input_shapes[1], k, m, seed=seed + 1)
    out = value(lambda x, y: x @ y, a, b)
    assert out.shape == batch.result_shape + (n, m)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-12, atol=1e-12)
    check_gradient(lambda x, y: x @ y, a, b)


def test_matmul_one_side_constant():
    a, b = rand(3, 4, seed=8), rand(2, 4, 5, seed=9)
    check_gradient(lambda x: x @ mg.tensor(b), a)
    check_gradient(lambda y: mg.tensor(a) @ y, b)
    check_gradient(lambda x: np.ones((4, 2)) @ x, rand(2, 3, seed=10))  # numpy array on the left


def test_matmul_float32():
    a, b = mg.randn(3, 4), mg.randn(2, 4, 5)
    out = a @ b
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), np.matmul(a.numpy(), b.numpy()), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "shapes",
    [((3, 4), (5, 6)), ((4,), (3,)), ((2, 3, 4), (3, 5)), ((2, 3, 4), (3, 4, 5)), ((3,), (4, 5))],
    ids=str,
)
def test_matmul_mismatch_names_both_shapes(shapes):
    with pytest.raises(ValueError) as info:
        mg.zeros(*shapes[0]) @ mg.zeros(*shapes[1])
    assert str(shapes[0]) in str(info.value) and str(shapes[1]) in str(info.value)


def test_matmul_0d_and_dtype_errors():
    with pytest.raises(ValueError, match=r"\(\)"):
        mg.tensor(2.0) @ mg.zeros(3)
    with pytest.raises(TypeError, match="float64"):
        mg.zeros(2, 2) @ mg.zeros(2, 2, dtype=mg.float64)
