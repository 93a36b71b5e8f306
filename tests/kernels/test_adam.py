"""minigrad/kernels/adam.py: the fused Adam step against its numpy twin (serial and parallel
paths), and the twin against the scalar formula and torch.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_checks import FLOATS, close, few
from minigrad.kernels import adam as numba_adam
from minigrad.kernels import reference


def test_adam_twin_matches_scalar_formula_and_torch():
    rng = np.random.default_rng(4)
    param, grads = rng.standard_normal(5), rng.standard_normal((3, 5))
    lr, beta1, beta2, eps, decay = 0.1, 0.8, 0.95, 1e-3, 0.05
    twin = (param.copy(), np.zeros(5), np.zeros(5))
    by_hand = [float(v) for v in param], [0.0] * 5, [0.0] * 5
    for step, grad in enumerate(grads, start=1):
        reference.adam_update(twin[0], grad, twin[1], twin[2], step, lr, beta1, beta2, eps, decay)
        p, m, v = by_hand
        for i in range(5):
            g = grad[i] + decay * p[i]
            m[i] = beta1 * m[i] + (1 - beta1) * g
            v[i] = beta2 * v[i] + (1 - beta2) * g * g
            p[i] -= lr * (m[i] / (1 - beta1**step)) / ((v[i] / (1 - beta2**step)) ** 0.5 + eps)
    np.testing.assert_allclose(twin[0], by_hand[0], rtol=1e-13)
    np.testing.assert_allclose(twin[2], by_hand[2], rtol=1e-13)

    torch = pytest.importorskip("torch")
    torch_param = torch.tensor(param, requires_grad=True)
    optimizer = torch.optim.Adam(
        [torch_param], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=decay
    )
    for grad in grads:
        torch_param.grad = torch.tensor(grad)
        optimizer.step()
    np.testing.assert_allclose(twin[0], torch_param.detach().numpy(), rtol=1e-12)


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.lists(st.integers(1, 7), min_size=1, max_size=3),
    dtype=st.sampled_from(FLOATS),
    decay=st.sampled_from([0.0, 0.01]),
    steps=st.integers(1, 3),
)
def test_adam_matches_twin(seed, shape, dtype, decay, steps):
    rng = np.random.default_rng(seed)
    state = [
        rng.standard_normal(shape).astype(dtype),
        np.zeros(shape, dtype),
        np.zeros(shape, dtype),
    ]
    twin = [array.copy() for array in state]
    for step in range(1, steps + 1):
        grad = rng.standard_normal(shape).astype(dtype)
        numba_adam.adam_update(
            state[0], grad, state[1], state[2], step, 1e-2, 0.9, 0.999, 1e-8, decay
        )
        reference.adam_update(twin[0], grad, twin[1], twin[2], step, 1e-2, 0.9, 0.999, 1e-8, decay)
    for mine, theirs in zip(state, twin):
        close(mine, theirs, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "size", [numba_adam.TWO_THREADS_MIN_SIZE - 1, numba_adam.TWO_THREADS_MIN_SIZE + 3]
)
def test_adam_one_thread_and_two_threads_match_twin(dtype, size):
    """Both sides of the two-thread threshold (an odd size: halves of unequal length), the same
    numbers as the twin (to rounding: both compute in the parameter's dtype, vectorised or
    not)."""
    rng = np.random.default_rng(size)
    state = [rng.standard_normal(size).astype(dtype), np.zeros(size, dtype), np.zeros(size, dtype)]
    twin = [array.copy() for array in state]
    for step in (1, 2):
        grad = rng.standard_normal(size).astype(dtype)
        numba_adam.adam_update(
            state[0], grad, state[1], state[2], step, 1e-2, 0.9, 0.999, 1e-8, 0.01
        )
        reference.adam_update(twin[0], grad, twin[1], twin[2], step, 1e-2, 0.9, 0.999, 1e-8, 0.01)
    for mine, theirs in zip(state, twin):
        close(mine, theirs, dtype)
