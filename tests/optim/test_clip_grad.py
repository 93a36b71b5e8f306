"""clip_grad_norm_ and clip_grad_value_ (minigrad/optim/clip_grad.py) against torch: every norm
order, float32 and float64, by hand, and a non-finite norm refused when asked.
"""

import math

import numpy as np
import pytest

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
import minigrad.optim  # noqa: F401  (mg.optim)
from minigrad import nn
from optim_checks import SHAPES, torch_or_skip
from parity import assert_close, tolerance


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(dtype, max_norm):
    torch = torch_or_skip()
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    ours = [nn.Parameter(np.zeros(shape, dtype)) for shape in SHAPES] + [
        nn.Parameter(np.zeros(2, dtype))
    ]
    theirs = [
        torch.zeros(shape, dtype=getattr(torch, np.dtype(dtype).name), requires_grad=True)
        for shape in SHAPES
    ]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = mg.tensor(g), torch.tensor(g)
    total = mg.optim.clip_grad_norm_(iter(ours), max_norm)  # the last parameter has no grad
    total_torch = torch.nn.utils.clip_grad_norm_(theirs, max_norm)
    # a 0-d tensor, as torch's
    assert isinstance(total, mg.Tensor) and total.shape == () and total.dtype == dtype
    steps = tolerance("optimizer steps", dtype)
    assert_close(total, total_torch, dict(rtol=steps["rtol"], atol=0), "the total norm")
    np.testing.assert_allclose(
        total, np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads)), rtol=1e-6
    )
    for p, q in zip(ours, theirs):
        assert_close(p.grad, q.grad, steps, "a clipped gradient")
    assert nn.utils.clip_grad_norm_ is mg.optim.clip_grad_norm_


def test_clip_grad_norm_by_hand():
    p = nn.Parameter(np.zeros(2))
    p.grad = mg.tensor(np.array([3.0, 4.0]))
    assert nn.utils.clip_grad_norm_(p, 1.0) == 5.0
    np.testing.assert_allclose(p.grad.numpy(), [0.6, 0.8], rtol=1e-6)
    assert nn.utils.clip_grad_norm_([nn.Parameter(np.zeros(2))], 1.0) == 0.0  # no grads at all


@pytest.mark.parametrize("norm_type", [1, 3.5, math.inf, "inf"])
def test_clip_grad_norm_of_other_orders_and_clip_grad_value_match_torch(norm_type):
    torch = torch_or_skip()
    rng = np.random.default_rng(4)
    grads = [rng.standard_normal(shape) for shape in SHAPES]
    ours = [nn.Parameter(np.zeros(shape)) for shape in SHAPES]
    theirs = [torch.zeros(shape, dtype=torch.float64, requires_grad=True) for shape in SHAPES]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = mg.tensor(g), torch.tensor(g)
    total = nn.utils.clip_grad_norm_(ours, 0.7, norm_type=norm_type)
    assert total.item() == pytest.approx(
        torch.nn.utils.clip_grad_norm_(theirs, 0.7, norm_type=norm_type).item(), rel=1e-12
    )
    assert f"{total:.3f}" == f"{total.item():.3f}"
    nn.utils.clip_grad_value_(ours, 0.05)
    torch.nn.utils.clip_grad_value_(theirs, 0.05)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_refuses_a_non_finite_norm_when_asked():
    p = nn.Parameter(np.zeros(3))
    p.grad = mg.tensor(np.array([1.0, np.inf, 0.0]))
    with pytest.raises(RuntimeError, match="total norm of order 2.0 of the gradients is inf"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    # without asking: reported, not raised
    assert nn.utils.clip_grad_norm_(p, 1.0).item() == math.inf
    with pytest.raises(ValueError, match="norm_type must be > 0"):
        nn.utils.clip_grad_norm_(p, 1.0, norm_type=0)
    with pytest.raises(ValueError, match="clip_value must be >= 0; got -1.0"):
        nn.utils.clip_grad_value_(p, -1)
