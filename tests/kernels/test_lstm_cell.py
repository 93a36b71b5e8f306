"""minigrad/kernels/lstm_cell.py: the fused LSTM step, forward and backward, against its numpy
twin (kernels/reference/lstm_cell.py) from saturated to small pre-activations, and the accuracy of
the fast float32 sigmoid and tanh behind its gates against float64 numpy.
"""

import numpy as np
import pytest

from kernel_checks import FLOATS
from minigrad.kernels import lstm_cell
from minigrad.kernels import reference as twins


@pytest.mark.parametrize("dtype", FLOATS)
def test_cell_kernels_match_numpy_twins(dtype):
    rng = np.random.default_rng(11)
    n, hidden = 7, 20
    # pre-activations from saturated to small, so sigmoid and tanh are checked over their range
    gates = (rng.standard_normal((n, 4 * hidden)) * np.logspace(-3, 2, 4 * hidden)).astype(dtype)
    # input gates of 4 distinct inputs, which the 7 sequences read in any order, some twice
    input_gates = rng.standard_normal((4, 4 * hidden)).astype(dtype)
    rows = np.array([3, 0, 0, 2, 1, 3, 3])
    c_prev = (rng.standard_normal((n, hidden)) * 3).astype(dtype)
    outputs = []
    for cell_forward in (lstm_cell.lstm_cell_forward, twins.lstm_cell_forward):
        activations, c, h = gates.copy(), np.empty_like(c_prev), np.empty_like(c_prev)
        cell_forward(activations, input_gates, rows, c_prev, c, h)
        outputs.append((activations, c, h))
    tol = dict(rtol=1e-6, atol=3e-7) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-15)
    for ours, twin in zip(*outputs):
        np.testing.assert_allclose(ours, twin, **tol)
    activations, c, _ = outputs[1]
    grad_h_out, grad_h, grad_c = (rng.standard_normal((n, hidden)).astype(dtype) for _ in range(3))
    grads = []
    for cell_backward in (lstm_cell.lstm_cell_backward, twins.lstm_cell_backward):
        dc, d_gates = grad_c.copy(), np.empty_like(gates)
        cell_backward(activations, c_prev, c, grad_h_out, grad_h, dc, d_gates)
        grads.append((dc, d_gates))
    for ours, twin in zip(*grads):
        np.testing.assert_allclose(ours, twin, **tol)


def test_float32_sigmoid_and_tanh_accuracy():
    # the fast float32 exp behind the kernel's gates, over the whole useful range and beyond
    z = np.concatenate([np.linspace(-120, 120, 4001), [-1e-6, 0.0, 1e-6]]).astype(np.float32)
    n = z.size
    gates = np.zeros((n, 4), np.float32)
    gates[:, 0] = gates[:, 2] = gates[:, 3] = z  # i = sigmoid(z), g = tanh(z), o = sigmoid(z)
    c, h = np.empty((n, 1), np.float32), np.empty((n, 1), np.float32)
    no_input = np.zeros((1, 4), np.float32), np.zeros(n, np.int64)  # one all-zero row, read by all
    lstm_cell.lstm_cell_forward(gates, *no_input, np.zeros((n, 1), np.float32), c, h)
    z64 = z.astype(np.float64)
    np.testing.assert_allclose(gates[:, 0], 1 / (1 + np.exp(-z64)), rtol=3e-7, atol=1e-37)
    np.testing.assert_allclose(gates[:, 2], np.tanh(z64), rtol=1e-6, atol=1.5e-7)
    assert gates[:, 0].min() >= 0 and gates[:, 0].max() == 1 and np.abs(gates[:, 2]).max() == 1
