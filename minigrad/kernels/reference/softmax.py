"""Twins of kernels/softmax.py: softmax over the allowed keys of each row and log-softmax, each
with its backward."""

import numpy as np


def _allowed_keys(shape, mask, key_stop):
    """bool array of `shape`: True where a row may attend to a key (see softmax_forward)."""
    allowed = (
        np.ones(shape, np.bool_)
        if mask is None
        else np.broadcast_to(np.asarray(mask, np.bool_), shape)
    )
    if key_stop is not None:
        allowed = allowed & (np.arange(shape[-1]) < np.asarray(key_stop)[..., None])
    return allowed


def softmax_forward(x, scale=1.0, mask=None, key_stop=None, empty_value=np.nan, empty=None):
    """y = softmax of x * scale along the last axis over the allowed keys of each row, exactly
    0 at the other keys whatever x holds there.

    Key j of a row is allowed where `mask` (bool, broadcastable to x, True = may attend; None:
    every key) is True and j < key_stop (integers broadcastable to x.shape[:-1]; None: no
    limit), so a causal mask or sequence lengths need no (..., L, L) array. A row with no
    allowed score above -inf (and no NaN) is filled with empty_value; if `empty` (a bool
    array of shape x.shape[:-1]) is given, it receives True for those rows and False for the
    others. A NaN or +inf score at an allowed key makes the row's allowed weights NaN, as in
    torch.
    """
    allowed = _allowed_keys(x.shape, mask, key_stop)
    z = np.where(allowed, x * x.dtype.type(scale), -np.inf)
    top = (
        z.max(axis=-1, keepdims=True)
        if x.shape[-1]
        else np.full(x.shape[:-1] + (1,), -np.inf, x.dtype)
    )
    empty_rows = ~(top[..., 0] > -np.inf) & ~np.isnan(z).any(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        e = np.exp(z - np.where(empty_rows[..., None], 0, top))
        y = e / e.sum(axis=-1, keepdims=True)
    if empty is not None:
        empty[...] = empty_rows
    y = np.where(empty_rows[..., None], empty_value, np.where(allowed, y, 0))
    return y.astype(x.dtype, copy=False)


def softmax_backward(y, grad_y, scale=1.0, mask=None, key_stop=None, empty=None):
    """Gradient w.r.t. x of softmax_forward(x, scale, mask, key_stop): at the allowed keys
    scale * y * (grad_y - sum(grad_y * y)) with the sum over the allowed keys; exactly 0 at
    the others and in the rows marked `empty` (their output does not depend on x). A row that
    forward filled with NaN and that is not marked gets NaN, as torch's softmax gradient."""
    allowed = _allowed_keys(y.shape, mask, key_stop)
    if empty is not None:
        allowed = allowed & ~np.asarray(empty, np.bool_)[..., None]
    grad_y = np.where(allowed, grad_y, 0)
    dot = (grad_y * y).sum(axis=-1, keepdims=True)
    return np.where(allowed, y.dtype.type(scale) * y * (grad_y - dot), 0).astype(
        y.dtype, copy=False
    )


def log_softmax_forward(x):
    """y = x - logsumexp(x) along the last axis (max-shifted, so stable)."""
    if x.size == 0:
        return x.copy()
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def log_softmax_backward(y, grad_y):
    """Gradient w.r.t. x of y = log_softmax(x): grad_y - exp(y) * sum(grad_y)."""
    return grad_y - np.exp(y) * grad_y.sum(axis=-1, keepdims=True)
