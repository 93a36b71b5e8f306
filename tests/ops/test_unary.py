"""The unary mechanism (minigrad/ops/unary.py) on neg, exp, log, sqrt, abs, tanh, sigmoid and
relu: values against numpy, gradients against float64 central differences, edge values and
float32 kept. The functions of pointwise.py against torch: tests/ops/test_pointwise.py.
"""

import numpy as np
import pytest

import minigrad as mg
from op_checks import away_from_zero, check_gradient, rand, value

UNARY = {
    "neg": (lambda x: -x, np.negative, away_from_zero),
    "exp": (mg.exp, np.exp, rand),
    "log": (mg.log, np.log, lambda *s, seed=0: rand(*s, low=0.3, high=3.0, seed=seed)),
    "sqrt": (mg.sqrt, np.sqrt, lambda *s, seed=0: rand(*s, low=0.3, high=3.0, seed=seed)),
    "abs": (mg.abs, np.abs, away_from_zero),
    "tanh": (mg.tanh, np.tanh, rand),
    "sigmoid": (mg.sigmoid, lambda x: 1 / (1 + np.exp(-x)), rand),
    "relu": (mg.relu, lambda x: np.maximum(x, 0), away_from_zero),
}


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops(name):
    op, reference, sample = UNARY[name]
    x = sample(3, 4, seed=11)
    np.testing.assert_allclose(value(op, x), reference(x), rtol=1e-12)
    check_gradient(op, x)
    method = getattr(mg.tensor(x), name)().numpy()
    np.testing.assert_allclose(method, reference(x), rtol=1e-12)


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_keep_float32(name):
    op, reference, sample = UNARY[name]
    x = sample(5, seed=12).astype(np.float32)
    out = op(mg.tensor(x, requires_grad=True))
    assert out.dtype == np.float32
    out.sum().backward()
    np.testing.assert_allclose(out.numpy(), reference(x.astype(np.float64)), rtol=1e-5)


def test_unary_edge_values():
    big = mg.tensor([-1000.0, 0.0, 1000.0])
    np.testing.assert_array_equal(mg.sigmoid(big).numpy(), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(mg.tanh(big).numpy(), [-1.0, 0.0, 1.0])
    x = mg.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    (mg.relu(x) + mg.abs(x)).sum().backward()
    # relu'(0) = abs'(0) = 0, as torch
    np.testing.assert_array_equal(x.grad.numpy(), [-1.0, 0.0, 2.0])
