"""The binary cross-entropies of minigrad/ops/losses/binary.py against torch: of probabilities
and of logits, with weight and pos_weight, over hypothesis-drawn shapes, every reduction, float32
and float64; float64 gradchecks; the clamped logs at 0 and 1; huge logits; the errors torch
raises.
"""

import numpy as np
import pytest
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from loss_checks import VALUES, WEIGHT, X, elementwise_shape, refuses, torch_sweep
from parity import assert_close

torch = pytest.importorskip("torch")


def bce(data, rng, dtype):
    shape = elementwise_shape(data)
    options = {}
    if shape and data.draw(st.booleans(), label="weight"):
        options["weight"] = rng.uniform(0.2, 2.0, shape[-1:]).astype(dtype)
    probabilities = 1 / (1 + np.exp(-3 * rng.standard_normal(shape)))
    arrays = {"input": probabilities.astype(dtype), "target": rng.random(shape).astype(dtype)}
    return "binary_cross_entropy", arrays, ["input", "target"], options


def bce_with_logits(data, rng, dtype):
    shape = elementwise_shape(data)
    options = {}
    if shape and data.draw(st.booleans(), label="weight"):
        options["weight"] = rng.uniform(0.2, 2.0, shape[-1:]).astype(dtype)
    if shape and data.draw(st.booleans(), label="pos_weight"):
        options["pos_weight"] = rng.uniform(0.2, 3.0, shape[-1:]).astype(dtype)
    arrays = {
        "input": (rng.standard_normal(shape) * 5).astype(dtype),
        "target": rng.random(shape).astype(dtype),
    }
    return "binary_cross_entropy_with_logits", arrays, ["input", "target"], options


CASES = {"binary_cross_entropy": bce, "binary_cross_entropy_with_logits": bce_with_logits}
test_matches_torch_values_and_gradients = torch_sweep(CASES)


GRADCHECKS = {
    "binary_cross_entropy": (
        lambda p, y: F.binary_cross_entropy(p, y, WEIGHT),
        [1 / (1 + np.exp(-VALUES)), np.abs(np.sin(VALUES))],
    ),
    "binary_cross_entropy_with_logits": (
        lambda x, y: F.binary_cross_entropy_with_logits(
            x, y, WEIGHT, pos_weight=WEIGHT[::-1].copy()
        ),
        [VALUES, np.abs(np.cos(VALUES))],
    ),
}


@pytest.mark.parametrize("name", GRADCHECKS)
def test_gradcheck(name):
    function, inputs = GRADCHECKS[name]
    assert mg.gradcheck(function, [mg.tensor(array) for array in inputs])


def test_binary_cross_entropy_at_zero_and_one_is_clamped_as_torch():
    p, y = np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0, 0.5])
    ours_p, ours_y = mg.tensor(p, requires_grad=True), mg.tensor(y, requires_grad=True)
    theirs_p, theirs_y = torch.tensor(p, requires_grad=True), torch.tensor(y, requires_grad=True)
    loss = F.binary_cross_entropy(ours_p, ours_y, reduction="sum")
    torch_loss = torch.nn.functional.binary_cross_entropy(theirs_p, theirs_y, reduction="sum")
    loss.backward()
    torch_loss.backward()
    assert_close(loss, torch_loss, "clamped logs", "loss")  # 100 + 100 + log 2
    assert_close(ours_p.grad, theirs_p.grad, "clamped logs", "gradient of p")  # +-1e12
    np.testing.assert_array_equal(ours_y.grad.numpy(), theirs_y.grad.numpy())  # inf, -inf, 0


def test_binary_cross_entropy_with_logits_is_stable_for_huge_logits():
    x = mg.tensor([1000.0, -1000.0, 50.0], requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, mg.tensor([0.0, 1.0, 1.0]), reduction="none")
    loss.sum().backward()
    np.testing.assert_allclose(loss.numpy(), [1000.0, 1000.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, 0.0], atol=1e-6)


# name -> (call(library), minigrad's exception, message fragment, does torch raise too)
ERRORS = {
    "bce outside [0, 1]": (
        lambda L: L.F.binary_cross_entropy(L.tensor(X + 2), L.tensor(X)),
        ValueError,
        "between 0 and 1",
        True,
    ),
    "bce target shape": (
        lambda L: L.F.binary_cross_entropy(L.tensor(X), L.tensor(np.zeros(3, np.float32))),
        mg.ShapeError,
        r"target size \(3,\)",
        True,
    ),
    "bce logits target shape": (
        lambda L: L.F.binary_cross_entropy_with_logits(
            L.tensor(X), L.tensor(np.zeros(4, np.float32))
        ),
        mg.ShapeError,
        "must be the same as input size",
        True,
    ),
    "pos_weight shape": (
        lambda L: L.F.binary_cross_entropy_with_logits(
            L.tensor(X), L.tensor(X), pos_weight=L.tensor(np.ones(3, np.float32))
        ),
        mg.ShapeError,
        "pos_weight of shape",
        True,
    ),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_name_what_was_expected(name):
    refuses(*ERRORS[name])
