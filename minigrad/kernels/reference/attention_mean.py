"""Twins of kernels/attention_mean.py: the mean over the queries of each sequence's attention
weights (what the sentiment model's pooling reports), forward and backward."""

import numpy as np

from .._checks import check_attention_mean


def _weights_of_sequence(q, k, n, scale):
    """softmax(q k^T * scale) of one sequence's first n positions: q, k (H, T, E) -> (H, n, n)."""
    scores = np.matmul(q[:, :n], np.swapaxes(k[:, :n], -1, -2)) * q.dtype.type(scale)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def attention_mean_forward(q, k, scale, lengths):
    """mean (B, H, T): mean[b, h, j] = (1 / L) sum_{i < L} softmax(q[b, h] k[b, h]^T * scale)[i, j]
    over keys j < L, L = lengths[b]; 0 for j >= L and for L = 0. q, k (B, H, T, E) of one
    float dtype; positions at or past a length are never read."""
    lengths = check_attention_mean(q, k, lengths, "attention_mean_forward")
    mean = np.zeros(q.shape[:3], q.dtype)
    for b, n in enumerate(lengths.tolist()):
        if n:
            mean[b, :, :n] = _weights_of_sequence(q[b], k[b], n, scale).mean(axis=1)
    return mean


def attention_mean_backward(q, k, grad, scale, lengths):
    """(grad_q, grad_k) of attention_mean_forward(q, k, scale, lengths), given grad (B, H, T):
    with w the weights and g = grad[b] / L, d scores = scale * w * (g - w @ g); 0 past each
    length."""
    lengths = check_attention_mean(q, k, lengths, "attention_mean_backward")
    grad = np.asarray(grad, dtype=q.dtype)
    grad_q, grad_k = np.zeros_like(q), np.zeros_like(k)
    for b, n in enumerate(lengths.tolist()):
        if n:
            weights = _weights_of_sequence(q[b], k[b], n, scale)
            g = grad[b, :, None, :n] / n  # (H, 1, n): the same for every query row
            grad_scores = weights * (g - (weights * g).sum(axis=-1, keepdims=True))
            grad_scores *= q.dtype.type(scale)
            grad_q[b, :, :n] = np.matmul(grad_scores, k[b, :, :n])
            grad_k[b, :, :n] = np.matmul(np.swapaxes(grad_scores, -1, -2), q[b, :, :n])
    return grad_q, grad_k
