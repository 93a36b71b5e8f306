"""Twins of kernels/lstm_cell.py: one LSTM step for n sequences, forward, backward and for
inference (kernels/lstm.py runs them over sequences).

Gate order i, f, g, o (PyTorch's): columns [0:H) input gate, [H:2H) forget gate, [2H:3H) cell
candidate, [3H:4H) output gate.
"""

import numpy as np


def _sigmoid(x):
    return (np.tanh(x * 0.5) + 1) * 0.5  # no overflow for large |x|, unlike 1 / (1 + exp(-x))


def lstm_cell_forward(gates, input_gates, rows, c_prev, c_out, h_out):
    """One LSTM step for n sequences, in place.

    gates (n, 4H): in h_prev @ weight_hh.T; out: the gate activations i, f, g, o of
    gates + input_gates[rows]. input_gates (R, 4H): rows of x @ weight_ih.T + bias_ih + bias_hh
    (read only); rows (n,) int64: the row of input_gates of each sequence at this step.
    c_prev (n, H); writes c_out = f * c_prev + i * g and h_out = o * tanh(c_out).
    All arrays C-contiguous, one dtype; c_out and h_out do not overlap the inputs.
    """
    hidden = c_prev.shape[1]
    z = gates + input_gates[rows]
    gates[:, : 2 * hidden] = _sigmoid(z[:, : 2 * hidden])
    gates[:, 2 * hidden : 3 * hidden] = np.tanh(z[:, 2 * hidden : 3 * hidden])
    gates[:, 3 * hidden :] = _sigmoid(z[:, 3 * hidden :])
    i, f, g, o = (gates[:, k * hidden : (k + 1) * hidden] for k in range(4))
    c_out[...] = f * c_prev + i * g
    h_out[...] = o * np.tanh(c_out)


def lstm_cell_backward(gates, c_prev, c, grad_h_out, grad_h, grad_c, grad_gates):
    """Backward of one LSTM step for n sequences.

    gates (n, 4H) the activations i, f, g, o saved by lstm_cell_forward; c_prev, c (n, H).
    grad_h_out (n, H): dL/dh of this step from the layer's output; grad_h (n, H): dL/dh
    from the next step (through weight_hh); grad_c (n, H): in dL/dc from the next step,
    out dL/dc_prev. Writes grad_gates (n, 4H): dL/d(pre-activations) in gate order.
    """
    hidden = c.shape[1]
    i, f, g, o = (gates[:, k * hidden : (k + 1) * hidden] for k in range(4))
    tanh_c = np.tanh(c)
    dh = grad_h + grad_h_out
    dc = grad_c + dh * o * (1 - tanh_c * tanh_c)
    grad_gates[:, :hidden] = dc * g * i * (1 - i)
    grad_gates[:, hidden : 2 * hidden] = dc * c_prev * f * (1 - f)
    grad_gates[:, 2 * hidden : 3 * hidden] = dc * i * (1 - g * g)
    grad_gates[:, 3 * hidden :] = dh * tanh_c * o * (1 - o)
    grad_c[...] = dc * f


def lstm_cell_inference(input_gates, rows, hidden_gates, c, h):
    """One LSTM step for n sequences that keeps nothing for a backward: no gate is written.

    input_gates (R, 4H) and rows (n,) as in lstm_cell_forward; hidden_gates (n, 4H) =
    h_prev @ weight_hh.T (read only). c (n, H): in c_prev, out c = f * c_prev + i * g;
    h (n, H): out h = o * tanh(c) (its input values are not read, so it may be the array
    hidden_gates was computed from). All arrays C-contiguous rows, one dtype.
    """
    hidden = c.shape[1]
    z = input_gates[rows] + hidden_gates
    i, f, o = (_sigmoid(z[:, k * hidden : (k + 1) * hidden]) for k in (0, 1, 3))
    c[...] = f * c + i * np.tanh(z[:, 2 * hidden : 3 * hidden])
    h[...] = o * np.tanh(c)
