"""One LSTM layer over a right-padded batch (nn.LSTM stacks them), in two parts:

- the input projection, ordinary ops: every gate's x-part x_t @ weight_ih.T + bias_ih + bias_hh
  depends on no earlier step, so it is one product over all positions before the loop. When
  the inputs are rows of a table (an embedding: many positions hold the same token), the
  product is made once per distinct row;
- the recurrence, one graph node (LSTMRecurrence): per step h_{t-1} @ weight_hh.T plus the
  x-part of the position, then the gates (minigrad.kernels.lstm).
"""

import numpy as np

from ..kernels import lstm as lstm_kernels
from ..engine import Function
from .matmul import Linear
from .registry import op


class LSTMRecurrence(Function):
    """Inputs: h0, c0 (D, B, H); per direction its input gates (R, 4H) (rows of
    x @ weight_ih.T + bias_ih + bias_hh); then per direction weight_hh (4H, H). rows (B, T) or
    (T, B) int64: the row of the input gates at each position (not read where padded).
    Outputs: output (B, T, D*H) or (T, B, D*H), h_n, c_n (D, B, H).
    When no node is recorded (ctx.recording False) the forward keeps nothing for a backward
    (kernels.lstm.layer_inference).
    """

    @staticmethod
    def forward(ctx, h0, c0, *tables_and_weights, rows, lengths, batch_first):
        directions = len(tables_and_weights) // 2
        tables, weights_hh = tables_and_weights[:directions], tables_and_weights[directions:]
        tables = [np.ascontiguousarray(table) for table in tables]
        if not ctx.recording:  # no backward will come: keep no gates
            return lstm_kernels.layer_inference(
                tables, rows, weights_hh, h0, c0, lengths, batch_first
            )
        output, h_n, c_n, ctx.state = lstm_kernels.layer_forward(
            tables, rows, weights_hh, h0, c0, lengths, batch_first
        )
        return output, h_n, c_n

    @staticmethod
    def backward(ctx, grad_output, grad_h_n, grad_c_n):
        grad_tables, grad_h0, grad_c0, grad_weights_hh = lstm_kernels.layer_backward(
            ctx.state, grad_output, grad_h_n, grad_c_n
        )
        return (grad_h0, grad_c0, *grad_tables, *grad_weights_hh)


def _rows_of(x, lengths, batch_first):
    """x (B, T, I) or (T, B, I) as the table form: (x_rows (N, I), rows (B, T) or (T, B)), the
    rows being only the valid positions (all of them, a free reshape, when nothing is padded)."""
    steps = x.shape[1] if batch_first else x.shape[0]
    flat = x.reshape(x.shape[0] * x.shape[1], x.shape[2])
    if np.all(lengths == steps):
        return flat, np.arange(flat.shape[0]).reshape(x.shape[:2])
    valid = np.arange(steps)[None, :] < lengths[:, None]  # (B, T)
    valid = valid if batch_first else valid.T
    rows = np.zeros(x.shape[:2], dtype=np.int64)
    rows[valid] = np.arange(int(valid.sum()))
    return flat[np.flatnonzero(valid)], rows


@op(method=False, public=False)
def lstm_layer(x, h0, c0, directions, lengths, batch_first, rows=None):
    """One LSTM layer, one or two directions (forward first).

    x (B, T, I) if batch_first else (T, B, I); or, with rows, a table x (R, I) and rows (B, T)
    or (T, B) int64 saying which row of it each position holds (nn.lstm_embedded).
    h0, c0 (D, B, H), D = len(directions); directions: per direction (weight_ih (4H, I),
    weight_hh (4H, H), bias_ih, bias_hh), the biases (4H,) or None; lengths (B,) int64 in
    [1, T]: sequence b is its first lengths[b] steps, and the reverse direction starts at its
    last one. Arguments are checked by the caller (nn.LSTM).
    Returns output (B, T, D*H) or (T, B, D*H), 0 at padded positions, and h_n, c_n (D, B, H),
    each direction's state after its last step.
    """
    if rows is None:
        x, rows = _rows_of(x, lengths, batch_first)
    tables, weights_hh = [], []
    for weight_ih, weight_hh, bias_ih, bias_hh in directions:
        # (R, 4H): the x-part of every gate, one product (one graph node, bias added in place)
        if bias_ih is None:
            tables.append(Linear.apply(x, weight_ih))
        else:
            tables.append(Linear.apply(x, weight_ih, bias_ih + bias_hh))
        weights_hh.append(weight_hh)
    return LSTMRecurrence.apply(
        h0, c0, *tables, *weights_hh, rows=rows, lengths=lengths, batch_first=batch_first
    )
