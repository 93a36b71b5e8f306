"""Flatten and Unflatten (nn/flatten.py) against torch's: reprs, values, dtypes and the
gradient of the input in float32 and float64; the sizes Unflatten refuses, an empty batch.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from parity import assert_runs_match, run_both

torch = pytest.importorskip("torch")

# name -> (minigrad module, torch module given torch.nn)
LAYERS = {
    "Flatten": (lambda: nn.Flatten(), lambda T: T.Flatten()),
    "Flatten_0_1": (lambda: nn.Flatten(0, 1), lambda T: T.Flatten(0, 1)),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 3)), lambda T: T.Unflatten(1, (2, 3))),
    "Unflatten_inferred": (lambda: nn.Unflatten(-1, (-1, 2)), lambda T: T.Unflatten(-1, (-1, 2))),
}


@pytest.mark.parametrize("name", LAYERS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_modules_match_torch_values_grads_and_repr(name, dtype):
    ours, theirs = LAYERS[name][0](), LAYERS[name][1](torch.nn)
    assert repr(ours) == repr(theirs)
    array = np.random.default_rng(0).standard_normal((2, 6, 2)).astype(dtype) * 3
    mine, torchs = run_both(None, [array], sides=(ours, theirs), seed=1)
    assert_runs_match(mine, torchs, "layer")


def test_unflatten_refuses_sizes_that_do_not_fit_and_flatten_takes_an_empty_batch():
    with pytest.raises(ValueError, match=r"cannot view 6 elements as shape \(4, 2\)"):
        nn.Unflatten(1, (4, 2))(mg.zeros(2, 6))
    with pytest.raises(IndexError, match="out of range"):
        nn.Unflatten(3, (2, 3))(mg.zeros(2, 6))
    assert nn.Flatten()(mg.zeros(0, 2, 3)).shape == (0, 6)
