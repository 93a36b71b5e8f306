"""Ops for neural networks: softmax family, cross-entropy, dropout. The row-wise work runs in
kernels (one pass per row each way); these Functions only move the softmax dim last."""

import numpy as np

from .. import kernels
from ..dtypes import to_array as _to_array
from ..random import generator
from ..tensor import Function, Tensor
from .args import bool_mask as _bool_mask, normalize_dim as _dim
from .elementwise import mul

# Added to masked scores before softmax. The textbook uses -1e9; -1e30 also swamps every real
# score in float64 (s - 1e30 == -1e30 exactly), so a fully masked row is uniform in both dtypes.
MASKED_SCORE = -1e30


def _last(x, dim):
    """Move `dim` to the end (a contiguous copy only when it is not already last)."""
    return x if dim == x.ndim - 1 else np.ascontiguousarray(np.moveaxis(x, dim, -1))


def _back(y, dim):
    return y if dim == y.ndim - 1 else np.moveaxis(y, -1, dim)


class Softmax(Function):
    """y = softmax(x * scale + additive_mask) along `dim`; dx = scale * y * (dy - sum(dy * y)).

    dead_rows (bool, broadcastable to x with `dim` of size 1): rows whose every position is
    masked. Their output does not depend on x (every score became MASKED_SCORE), so their
    gradient is 0, not what the formula above gives for a uniform row.
    """

    @staticmethod
    def forward(ctx, x, dim, scale=1.0, additive_mask=None, dead_rows=None):
        y = kernels.softmax_forward(_last(x, dim), scale, additive_mask)
        ctx.save_for_backward(y)
        ctx.dim, ctx.scale, ctx.dead_rows = dim, scale, dead_rows
        return _back(y, dim)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        grad_x = _back(kernels.softmax_backward(y, _last(grad, ctx.dim), ctx.scale), ctx.dim)
        if ctx.dead_rows is not None:
            grad_x = np.where(ctx.dead_rows, 0, grad_x).astype(grad_x.dtype, copy=False)
        return grad_x


class LogSoftmax(Function):
    """y = x - logsumexp(x) along `dim`; dx = dy - softmax(x) * sum(dy)."""

    @staticmethod
    def forward(ctx, x, dim):
        y = kernels.log_softmax_forward(_last(x, dim))
        ctx.save_for_backward(y)
        ctx.dim = dim
        return _back(y, dim)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return _back(kernels.log_softmax_backward(y, _last(grad, ctx.dim)), ctx.dim)


def softmax(x, dim=-1):
    return Softmax.apply(x, dim=_dim(dim, x.ndim))


def log_softmax(x, dim=-1):
    return LogSoftmax.apply(x, dim=_dim(dim, x.ndim))


def masked_softmax(scores, mask=None, scale=1.0):
    """softmax(scores * scale) over the last dim, where positions with mask == False get weight 0.

    mask: bool, broadcastable to scores (True = may attend). Masked scores get MASKED_SCORE
    (-1e30) added before the softmax, so their weights are exactly 0; a row with every
    position masked comes out uniform (all its scores become equal), never NaN, and passes no
    gradient back (its output does not depend on its scores). Forward and backward are one
    kernel pass each.
    """
    additive = dead_rows = None
    if mask is not None:
        mask = _bool_mask(mask, "masked_softmax")
        try:
            np.broadcast_shapes(mask.shape, scores.shape)
        except ValueError:
            raise ValueError(f"masked_softmax: mask of shape {mask.shape} does not broadcast to scores "
                             f"of shape {scores.shape}") from None
        additive = np.where(mask, 0, MASKED_SCORE).astype(scores.dtype)
        dead = ~mask.any(axis=-1, keepdims=True)
        dead_rows = dead if dead.any() else None
    return Softmax.apply(scores, dim=scores.ndim - 1, scale=float(scale), additive_mask=additive,
                         dead_rows=dead_rows)


class CrossEntropy(Function):
    @staticmethod
    def forward(ctx, logits, target, ignore_index):
        loss, probs, count = kernels.cross_entropy_forward(logits, target, ignore_index)
        ctx.save_for_backward(probs)
        ctx.target, ctx.ignore_index, ctx.count = target, ignore_index, count
        return loss

    @staticmethod
    def backward(ctx, grad):
        (probs,) = ctx.saved
        return kernels.cross_entropy_backward(probs, ctx.target, ctx.ignore_index, ctx.count, grad)


def cross_entropy(logits, target, ignore_index=-100):
    """Mean of -log softmax(logits)[target] over the rows whose target != ignore_index.

    logits: (N, C) float; target: (N,) integer class ids. Returns a 0-d tensor (0.0 when every
    row is ignored, where torch gives NaN).
    """
    target = _to_array(target)
    if logits.ndim != 2:
        raise ValueError(f"cross_entropy: logits must have shape (N, C); got {logits.shape}")
    if target.shape != logits.shape[:1]:
        raise ValueError(f"cross_entropy: target must have shape ({logits.shape[0]},) to match logits "
                         f"{logits.shape}; got {target.shape}")
    if not np.issubdtype(target.dtype, np.integer):
        raise TypeError(f"cross_entropy: target must hold integer class ids; got dtype {target.dtype}")
    return CrossEntropy.apply(logits, target=target.astype(np.int64, copy=False), ignore_index=int(ignore_index))


def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1-p) (identity when not training)."""
    if not 0 <= p < 1:
        raise ValueError(f"dropout: p must be in [0, 1); got {p}")
    if not training or p == 0:
        return x
    keep = generator().random(x.shape) >= p
    return mul(x, Tensor._wrap((keep / (1 - p)).astype(x.dtype)))
