"""The dropout op (minigrad/ops/dropout.py): what training zeroes and scales, identity in eval
and at p=0, seeding, gradients, and bad p; its statistics as torch's.
"""

import numpy as np
import pytest

import minigrad as mg
from op_checks import check_gradient, rand


def test_dropout_training_zeroes_and_scales():
    mg.manual_seed(0)
    x = mg.ones(200, 100, requires_grad=True)
    y = mg.dropout(x, p=0.3)
    out = y.numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    assert y.dtype == np.float32
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 1 / 0.7, 0.0), rtol=1e-6)


def test_dropout_eval_and_p_zero_are_identity():
    x = mg.randn(3, 4)
    assert mg.dropout(x, 0.5, training=False) is x
    assert mg.dropout(x, 0.0) is x


def test_dropout_is_seeded():
    x = mg.ones(50)
    mg.manual_seed(7)
    first = mg.dropout(x, 0.5).numpy()
    mg.manual_seed(7)
    np.testing.assert_array_equal(mg.dropout(x, 0.5).numpy(), first)
    assert not np.array_equal(mg.dropout(x, 0.5).numpy(), first)  # the generator moved on


def test_dropout_gradcheck():
    def fn(t):
        mg.manual_seed(3)  # the same mask on every evaluation
        return mg.dropout(t, 0.4)

    check_gradient(fn, rand(4, 5, seed=80))


def test_dropout_bad_p():
    with pytest.raises(ValueError, match="1.5"):
        mg.dropout(mg.ones(3), 1.5)
    with pytest.raises(ValueError, match="-0.1"):
        mg.dropout(mg.ones(3), -0.1)
