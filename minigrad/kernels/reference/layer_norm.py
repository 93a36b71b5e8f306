"""Twins of kernels/layer_norm.py: layer normalisation over the last axis, forward, backward
and for inference."""

import numpy as np


def layer_norm_forward(x, weight=None, bias=None, eps=1e-5):
    """Normalise each row of x (..., D) over its last axis: y = (x - mean) * rstd * weight + bias.

    mean and the biased variance var are taken over the D features of a row and
    rstd = 1 / sqrt(var + eps). weight and bias are (D,) or None (then 1 and 0).
    Returns (y (..., D), mean (...,), rstd (...,)), all of x's dtype; backward needs
    mean and rstd.
    """
    # the statistics in float64, as the kernel's: float32 rows far from 0 (1e6 + noise) keep
    # their spread (tests/ops/test_normalization.py)
    mean = x.mean(axis=-1, keepdims=True, dtype=np.float64)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    y = centred * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y.astype(x.dtype, copy=False), mean[..., 0].astype(x.dtype), rstd[..., 0].astype(x.dtype)


def layer_norm_inference(x, weight=None, bias=None, eps=1e-5):
    """layer_norm_forward's y alone, for when no backward follows (no mean or rstd kept)."""
    return layer_norm_forward(x, weight, bias, eps)[0]


def layer_norm_backward(grad_y, x, mean, rstd, weight=None):
    """Gradients of layer_norm_forward: (grad_x (..., D), grad_weight (D,), grad_bias (D,)).

    With xhat = (x - mean) * rstd and g = grad_y * weight (weight None: ones),
    grad_x = rstd * (g - mean(g) - xhat * mean(g * xhat)) over each row;
    grad_weight = sum of grad_y * xhat and grad_bias = sum of grad_y over all rows
    (what a (D,) weight and bias get; the caller drops them when there are none).
    """
    xhat = (x - mean[..., None]) * rstd[..., None]
    g = grad_y if weight is None else grad_y * weight
    grad_x = rstd[..., None] * (
        g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True)
    )
    rows = grad_y.reshape(-1, grad_y.shape[-1])
    grad_weight = (rows * xhat.reshape(rows.shape)).sum(axis=0)
    return (
        grad_x.astype(x.dtype, copy=False),
        grad_weight.astype(x.dtype),
        rows.sum(axis=0).astype(x.dtype),
    )
