"""What every loss shares (minigrad/ops/losses/reduction.py): the mean of nothing is nan and the
sum 0, as torch's; a target of another shape is broadcast with torch's warning; a bad reduction
and a weight that wants a gradient are refused, as torch refuses them.
"""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from loss_checks import X, refuses

pytest.importorskip("torch")


def test_the_mean_of_an_empty_batch_is_nan_and_the_sum_zero():
    assert np.isnan(F.mse_loss(mg.zeros(0), mg.zeros(0)).item())
    assert F.mse_loss(mg.zeros(0, 2), mg.zeros(0, 2), reduction="sum").item() == 0


def test_mse_broadcasts_a_different_target_shape_with_torchs_warning():
    with pytest.warns(UserWarning, match="target size"):
        loss = F.mse_loss(mg.tensor([[1.0, 2.0], [3.0, 4.0]]), mg.tensor([1.0, 2.0]))
    assert loss.item() == 2.0  # (0 + 0 + 4 + 4) / 4
    assert F.mse_loss(mg.tensor([1.0]), mg.tensor([3], dtype=mg.int64)).item() == 4.0


# name -> (call(library), minigrad's exception, message fragment, does torch raise too)
ERRORS = {
    "bad reduction": (
        lambda L: L.F.cross_entropy(L.tensor(X), L.tensor(np.array([0, 1, 2])), reduction="avg"),
        ValueError,
        "avg is not a valid value for reduction",
        True,
    ),
    "weight that wants a gradient": (
        lambda L: L.F.cross_entropy(
            L.tensor(X),
            L.tensor(np.array([0, 1, 2])),
            L.tensor(np.ones(4, np.float32)).requires_grad_(),
        ),
        RuntimeError,
        "takes no gradient",
        True,
    ),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_name_what_was_expected(name):
    refuses(*ERRORS[name])
