"""Twins of kernels/additive_score.py: additive attention's scores, vector . tanh(x @ weight +
bias) at each real position, forward and backward."""

import numpy as np

from .._checks import check_additive_score


def _real_positions(x, lengths):
    """(B, T, 1) bool: True where t < lengths[b]."""
    return (np.arange(x.shape[1]) < lengths[:, None])[:, :, None]


def additive_score_forward(x, weight, bias, vector, lengths):
    """(scores (B, T), hidden (B, T, K)): hidden = tanh(x @ weight + bias) and scores =
    hidden @ vector at the positions t < lengths[b]; scores are 0 past each length and hidden
    is undefined there (what additive_score_backward reads). Positions at or past a length
    are never read."""
    lengths = check_additive_score(x, weight, bias, vector, lengths, "additive_score_forward")
    real = _real_positions(x, lengths)
    hidden = np.tanh(np.where(real, x, 0) @ weight + bias)
    return np.where(real[..., 0], hidden @ vector, 0).astype(x.dtype), hidden


def additive_score_backward(x, weight, vector, hidden, grad, lengths):
    """(grad_x, grad_weight, grad_bias, grad_vector) of additive_score_forward, given hidden
    (its second result) and grad (B, T); grad_x is 0 past each length, and nothing there is
    read (d pre-activation = grad * vector * (1 - hidden^2))."""
    lengths = check_additive_score(x, weight, vector, vector, lengths, "additive_score_backward")
    real = _real_positions(x, lengths)
    grad = np.where(real[..., 0], np.asarray(grad, dtype=x.dtype), 0)[..., None]  # (B, T, 1)
    hidden = np.where(real, hidden, 0)
    grad_pre = grad * vector * (1 - hidden * hidden)  # (B, T, K), 0 past each length
    x = np.where(real, x, 0).reshape(-1, x.shape[2])
    return (
        grad_pre @ weight.T,
        x.T @ grad_pre.reshape(-1, weight.shape[1]),
        grad_pre.sum(axis=(0, 1)),
        (grad * hidden).sum(axis=(0, 1)),
    )
