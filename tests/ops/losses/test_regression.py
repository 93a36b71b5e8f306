"""The regression losses of minigrad/ops/losses/regression.py against torch: mse_loss, l1_loss,
smooth_l1_loss (every beta, 0 too) and huber_loss (every delta), over hypothesis-drawn shapes with
ties on the knee, every reduction, float32 and float64; float64 gradchecks; the errors torch
raises.
"""

import numpy as np
import pytest
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from loss_checks import VALUES, X, elementwise_shape, refuses, torch_sweep

pytest.importorskip("torch")


def regression(name, option=None, values=()):
    def case(data, rng, dtype):
        shape = elementwise_shape(data)
        target = rng.standard_normal(shape)
        if target.size:  # exact ties and differences on the smooth losses' knee
            target.reshape(-1)[0] = 0.0
        input_ = target + rng.standard_normal(shape) * 1.5
        if input_.size:
            input_.reshape(-1)[0] = 0.0
        options = {option: data.draw(st.sampled_from(values), label=option)} if option else {}
        return (
            name,
            {"input": input_.astype(dtype), "target": target.astype(dtype)},
            ["input", "target"],
            options,
        )

    return case


CASES = {
    "mse_loss": regression("mse_loss"),
    "l1_loss": regression("l1_loss"),
    "smooth_l1_loss": regression("smooth_l1_loss", "beta", [1.0, 0.5, 0.0, 2.0]),
    "huber_loss": regression("huber_loss", "delta", [1.0, 0.3, 2.0]),
}
test_matches_torch_values_and_gradients = torch_sweep(CASES)


GRADCHECKS = {
    "mse_loss": (lambda x, y: F.mse_loss(x, y), [VALUES, VALUES[::-1].copy()]),
    "l1_loss": (lambda x, y: F.l1_loss(x, y, reduction="sum"), [VALUES, VALUES[::-1] + 0.1]),
    "smooth_l1_loss": (lambda x, y: F.smooth_l1_loss(x, y, beta=0.7), [VALUES, VALUES[::-1] + 0.1]),
    "huber_loss": (
        lambda x, y: F.huber_loss(x, y, delta=0.6, reduction="none"),
        [VALUES, VALUES[::-1] + 0.1],
    ),
}


@pytest.mark.parametrize("name", GRADCHECKS)
def test_gradcheck(name):
    function, inputs = GRADCHECKS[name]
    assert mg.gradcheck(function, [mg.tensor(array) for array in inputs])


# name -> (call(library), minigrad's exception, message fragment, does torch raise too)
ERRORS = {
    "mse shapes": (
        lambda L: L.F.mse_loss(L.tensor(X), L.tensor(np.zeros(5, np.float32))),
        mg.ShapeError,
        "does not broadcast",
        True,
    ),
    "negative beta": (
        lambda L: L.F.smooth_l1_loss(L.tensor(X), L.tensor(X), beta=-1.0),
        ValueError,
        "negative values for beta",
        True,
    ),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_name_what_was_expected(name):
    refuses(*ERRORS[name])
