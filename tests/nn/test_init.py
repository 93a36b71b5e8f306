"""nn.init (nn/init.py): the normal initialisers have torch's spread, trunc_normal_ stays inside
its bounds.
"""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


@pytest.mark.parametrize(
    "name, settings, expected_std",
    [
        ("xavier_normal_", {}, math.sqrt(2 / (300 + 200))),
        ("xavier_normal_", {"gain": 2.0}, 2 * math.sqrt(2 / (300 + 200))),
        ("kaiming_normal_", {"nonlinearity": "relu"}, math.sqrt(2) / math.sqrt(300)),
        (
            "kaiming_normal_",
            {"mode": "fan_out", "nonlinearity": "relu"},
            math.sqrt(2) / math.sqrt(200),
        ),
        (
            "kaiming_normal_",
            {},
            math.sqrt(2) / math.sqrt(300),
        ),  # leaky_relu with a=0 has relu's gain
    ],
)
def test_normal_initialisers_have_torchs_spread(name, settings, expected_std):
    weight = nn.Parameter(np.empty((200, 300), np.float32))  # fan_in 300, fan_out 200
    mg.manual_seed(0)
    getattr(nn.init, name)(weight, **settings)
    values = weight.numpy()
    assert abs(values.mean()) < 4 * expected_std / math.sqrt(values.size)
    assert values.std() == pytest.approx(expected_std, rel=0.01)


def test_trunc_normal_stays_inside_its_bounds():
    weight = nn.Parameter(np.empty((100, 100), np.float32))
    mg.manual_seed(0)
    nn.init.trunc_normal_(weight, mean=0.5, std=1.0, a=0.0, b=1.5)
    values = weight.numpy()
    assert values.min() >= 0.0 and values.max() <= 1.5
    # the truncated mean
    assert values.mean() == pytest.approx(0.5 + (0.3521 - 0.2420) / (0.8413 - 0.3085), abs=0.02)
    nn.init.trunc_normal_(weight, std=0.02)  # nanoGPT's call: the bounds are +-2, far away
    assert weight.numpy().std() == pytest.approx(0.02, rel=0.02)
    with pytest.raises(ValueError, match="expected a < b"):
        nn.init.trunc_normal_(weight, a=1.0, b=0.0)
    with pytest.raises(ValueError, match="holds almost none"):
        nn.init.trunc_normal_(weight, mean=0.0, std=1e-3, a=5.0, b=6.0)
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        nn.init.kaiming_normal_(weight, mode="fan")
