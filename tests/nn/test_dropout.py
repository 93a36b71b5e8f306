"""The dropout layers (nn/dropout.py): kept elements scaled and identity in eval, gradients through
the kept elements only, channel and alpha dropout as torch's, in-place spellings and reprs.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def test_dropout_scales_kept_elements_and_is_identity_in_eval():
    mg.manual_seed(6)
    layer = nn.Dropout(0.25)
    x = mg.ones(200, 100)
    y = layer(x).data
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75)
    assert abs(kept.mean() - 0.75) < 0.01  # 20000 draws
    layer.eval()
    assert layer(x) is x
    with pytest.raises(ValueError, match=r"\[0, 1\].*1.5"):
        nn.Dropout(1.5)


def test_dropout_gradient_flows_only_through_kept_elements():
    mg.manual_seed(8)
    x = mg.ones(50, dtype=np.float64, requires_grad=True)
    y = nn.Dropout(0.5)(x)
    y.sum().backward()
    np.testing.assert_array_equal(
        x.grad.data, y.data
    )  # d(x * mask / 0.5)/dx = mask / 0.5 = y when x == 1


def test_dropout_inplace_module_writes_into_its_input():
    mg.manual_seed(3)
    x = mg.ones(100) * 1
    assert nn.Dropout(0.5, inplace=True)(x) is x
    assert set(np.unique(x.numpy())) == {0.0, 2.0}
    assert repr(nn.Dropout(0.5, inplace=True)) == "Dropout(p=0.5, inplace=True)"
