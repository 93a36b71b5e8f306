"""One LSTM layer over a right-padded batch as one graph node (nn.LSTM stacks them); its
arithmetic, forward and backward, is minigrad.kernels.lstm."""

import numpy as np

from ..kernels import lstm as lstm_kernels
from ..tensor import Function
from .registry import op


class LSTMLayer(Function):
    """Inputs: x (B, T, I) or (T, B, I), h0, c0 (D, B, H), then weight_ih (4H, I), weight_hh
    (4H, H), bias_ih, bias_hh (4H,) of the forward direction and, for D = 2, the same four
    of the reverse direction. Outputs: output (B, T, D*H) or (T, B, D*H), h_n, c_n (D, B, H).
    When no node is recorded (ctx.recording False) the forward keeps nothing for a backward
    (kernels.lstm.layer_inference).
    """

    @staticmethod
    def forward(
        ctx, x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh, *reverse, lengths, batch_first
    ):
        directions = [(weight_ih, weight_hh, bias_ih + bias_hh)]
        if reverse:
            weight_ih, weight_hh, bias_ih, bias_hh = reverse
            directions.append((weight_ih, weight_hh, bias_ih + bias_hh))
        if not ctx.recording:  # no backward will come: keep no gates
            return lstm_kernels.layer_inference(x, directions, h0, c0, lengths, batch_first)
        output, h_n, c_n, ctx.state = lstm_kernels.layer_forward(
            x, directions, h0, c0, lengths, batch_first
        )
        return output, h_n, c_n

    @staticmethod
    def backward(ctx, grad_output, grad_h_n, grad_c_n):
        grad_x, grad_h0, grad_c0, per_direction = lstm_kernels.layer_backward(
            ctx.state, grad_output, grad_h_n, grad_c_n, need_grad_x=ctx.needs_input_grad[0]
        )
        grads = [grad_x, grad_h0, grad_c0]
        for grad_weight_ih, grad_weight_hh, grad_bias in per_direction:
            grads += [
                grad_weight_ih,
                grad_weight_hh,
                grad_bias,
                grad_bias,
            ]  # bias = bias_ih + bias_hh
        return tuple(grads)


@op(method=False, public=False)
def lstm_layer(x, h0, c0, directions, lengths, batch_first):
    """One LSTM layer, one or two directions (forward first), as one graph node.

    x (B, T, I) if batch_first else (T, B, I); h0, c0 (D, B, H), D = len(directions);
    directions: per direction (weight_ih (4H, I), weight_hh (4H, H), bias_ih, bias_hh),
    the biases (4H,) or None; lengths (B,) int64 in [1, T]: sequence b is x's first
    lengths[b] steps, and the reverse direction starts at its last one. Arguments are
    checked by the caller (nn.LSTM).
    Returns output (B, T, D*H) or (T, B, D*H), 0 at padded positions, and h_n, c_n (D, B, H),
    each direction's state after its last step.
    """
    weights = []
    for weight_ih, weight_hh, bias_ih, bias_hh in directions:
        if bias_ih is None:  # bias=False: constant zeros, no gradient
            bias_ih = bias_hh = np.zeros(weight_ih.shape[0], dtype=weight_ih.dtype)
        weights += [weight_ih, weight_hh, bias_ih, bias_hh]
    return LSTMLayer.apply(x, h0, c0, *weights, lengths=lengths, batch_first=batch_first)
