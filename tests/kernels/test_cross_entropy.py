"""minigrad/kernels/cross_entropy.py: the fused cross-entropy (forward and backward, ignored rows)
against its numpy twin, and the twin against a loop, finite differences and torch; targets out of
range refused.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_checks import FLOATS, close, few
from minigrad.kernels import cross_entropy as numba_cross_entropy
from minigrad.kernels import reference


def test_cross_entropy_twin_matches_loop_and_finite_differences():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((6, 4))
    target = np.array([0, 3, -100, 2, 1, -100])
    loss, probs, count = reference.cross_entropy_forward(logits, target)
    kept = [(row, t) for row, t in enumerate(target) if t != -100]
    expected = np.mean([np.log(np.exp(logits[r]).sum()) - logits[r, t] for r, t in kept])
    assert count == 4 and loss.shape == () and loss.dtype == np.float64
    assert loss == pytest.approx(expected, rel=1e-13)
    np.testing.assert_allclose(
        probs, np.exp(logits) / np.exp(logits).sum(1, keepdims=True), rtol=1e-13
    )

    grad = reference.cross_entropy_backward(probs, target, -100, count, 2.0)
    numeric = np.zeros_like(logits)
    for index in np.ndindex(*logits.shape):
        step = np.zeros_like(logits)
        step[index] = 1e-6
        numeric[index] = (
            2.0
            * (
                reference.cross_entropy_forward(logits + step, target)[0]
                - reference.cross_entropy_forward(logits - step, target)[0]
            )
            / 2e-6
        )
    np.testing.assert_allclose(grad, numeric, atol=1e-8)
    assert (grad[[2, 5]] == 0).all()


def test_cross_entropy_all_ignored_gives_zero_loss_and_grad():
    for module in (reference, numba_cross_entropy):
        loss, probs, count = module.cross_entropy_forward(
            np.ones((3, 2), np.float32), np.full(3, -1), -1
        )
        assert count == 0 and loss == 0.0 and loss.dtype == np.float32
        assert (module.cross_entropy_backward(probs, np.full(3, -1), -1, 0, 1.0) == 0).all()


def test_cross_entropy_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((9, 5)).astype(np.float32)
    target = np.array([4, 0, 7, 7, 1, 2, 3, 7, 0])  # 7 is the ignore_index here
    torch_logits = torch.tensor(logits, requires_grad=True)
    torch_loss = torch.nn.functional.cross_entropy(
        torch_logits, torch.tensor(target), ignore_index=7
    )
    torch_loss.backward(torch.tensor(1.5))
    for module in (reference, numba_cross_entropy):
        loss, probs, count = module.cross_entropy_forward(logits, target, ignore_index=7)
        assert float(loss) == pytest.approx(torch_loss.item(), rel=1e-5)
        close(
            module.cross_entropy_backward(probs, target, 7, count, 1.5),
            torch_logits.grad.numpy(),
            np.float32,
        )


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 40),
    classes=st.integers(1, 30),
    dtype=st.sampled_from(FLOATS),
    ignore_index=st.sampled_from([-100, 0, 3]),
    grad_loss=st.floats(-2, 2),
)
def test_cross_entropy_matches_twin(seed, rows, classes, dtype, ignore_index, grad_loss):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((rows, classes)) * 3).astype(dtype)
    target = rng.integers(0, classes, rows)
    target[rng.random(rows) < 0.3] = ignore_index
    loss, probs, count = numba_cross_entropy.cross_entropy_forward(logits, target, ignore_index)
    ref_loss, ref_probs, ref_count = reference.cross_entropy_forward(logits, target, ignore_index)
    assert count == ref_count and isinstance(count, int)
    close(loss, ref_loss, dtype)
    close(probs, ref_probs, dtype)
    close(
        numba_cross_entropy.cross_entropy_backward(probs, target, ignore_index, count, grad_loss),
        reference.cross_entropy_backward(ref_probs, target, ignore_index, count, grad_loss),
        dtype,
    )


@pytest.mark.parametrize("module", [reference, numba_cross_entropy], ids=["numpy", "numba"])
def test_cross_entropy_rejects_targets_out_of_range(module):
    logits = np.zeros((3, 5), np.float32)
    with pytest.raises(ValueError, match=r"target 7 .*5 classes"):
        module.cross_entropy_forward(logits, np.array([1, 7, 0]))
    with pytest.raises(ValueError, match=r"target -1 .*5 classes"):
        module.cross_entropy_forward(logits, np.array([1, -1, 0]))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        module.cross_entropy_forward(logits, np.array([1, 2]))
