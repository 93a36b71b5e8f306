"""The softmax family: softmax, log_softmax and masked_softmax (the masks and lengths of
attention). The row-wise work runs in kernels (one pass per row each way); these Functions
only move the softmax dim last."""

import numpy as np

from .. import kernels
from ..errors import ArgumentError, ShapeError
from ..engine import Function, Tensor
from .args import bool_mask, key_stops, normalize_dim
from .piecewise import where
from .registry import op


def _last(x, dim):
    """Move `dim` to the end (a contiguous copy only when it is not already last)."""
    return x if dim == x.ndim - 1 else np.ascontiguousarray(np.moveaxis(x, dim, -1))


def _back(y, dim):
    return y if dim == y.ndim - 1 else np.moveaxis(y, -1, dim)


def _empty_value(empty_rows, length):
    """What a row with no allowed position holds: NaN (None, as torch.softmax gives for a row
    of -inf), 1/L ("uniform") or 0 ("zero", as torch's scaled_dot_product_attention)."""
    if empty_rows == "uniform":
        return 1.0 / length if length else 0.0
    return 0.0 if empty_rows == "zero" else np.nan


class Softmax(Function):
    """y = softmax(x * scale) along `dim` over the allowed positions, exactly 0 at the others;
    dx = scale * y * (dy - sum(dy * y)) at the allowed positions, 0 elsewhere.

    With dim last, position j of a row is allowed where `mask` (bool, broadcastable to x) is
    True and j < key_stop (integers broadcastable to x's rows); None allows every position.
    A row with no allowed position (or only -inf scores) is filled as `empty_rows` says
    (_empty_value) and passes no gradient back: its output does not depend on x. Plain softmax
    (empty_rows None) fills such a row with NaN and, as torch's, passes NaN back through it.
    `causal` only labels the node in drawings (key_stop already holds the causal limit).
    create_graph=True differentiates `composite`, the same softmax in recorded ops.
    """

    higher_order = "composite"

    @staticmethod
    def forward(ctx, x, dim, scale=1.0, mask=None, key_stop=None, empty_rows=None, causal=False):
        x = _last(x, dim)
        empty = np.empty(x.shape[:-1], np.bool_)
        y = kernels.softmax_forward(
            x, scale, mask, key_stop, _empty_value(empty_rows, x.shape[-1]), empty
        )
        ctx.save_for_backward(y)
        ctx.dim, ctx.scale, ctx.mask, ctx.key_stop = dim, scale, mask, key_stop
        # a NaN row is not skipped backward: its NaN weights make its gradient NaN, as in torch
        ctx.empty = empty if empty_rows else None
        ctx.fill = _empty_value(empty_rows, x.shape[-1])
        return _back(y, dim)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        grad_x = kernels.softmax_backward(
            y, _last(grad, ctx.dim), ctx.scale, ctx.mask, ctx.key_stop, ctx.empty
        )
        return _back(grad_x, ctx.dim)

    @staticmethod
    def composite(ctx, x):
        scores = x.movedim(ctx.dim, -1) * ctx.scale
        allowed = _allowed(ctx.mask, ctx.key_stop, scores.shape)
        if allowed is None:
            weights = (scores - scores._data.max(-1, keepdims=True)).exp()
            return (weights / weights.sum(-1, keepdim=True)).movedim(-1, ctx.dim)
        scores = where(allowed, scores, 0)  # no inf or NaN from the positions left out
        top = np.where(allowed, scores._data, -np.inf).max(-1, keepdims=True)
        weights = where(allowed, (scores - np.where(np.isfinite(top), top, 0)).exp(), 0)
        total = weights.sum(-1, keepdim=True)
        y = weights / where(total._data > 0, total, 1)
        if ctx.empty is not None:
            y = where(ctx.empty[..., None], np.asarray(ctx.fill, y.dtype), y)
        return y.movedim(-1, ctx.dim)


def _allowed(mask, key_stop, shape):
    """Where a row may attend (bool, broadcast to shape), or None when it may everywhere."""
    allowed = None if mask is None else np.broadcast_to(mask, shape)
    if key_stop is not None:
        before = np.arange(shape[-1]) < np.asarray(key_stop)[..., None]
        allowed = before if allowed is None else allowed & before
    return None if allowed is None else np.broadcast_to(allowed, shape)


class LogSoftmax(Function):
    """y = x - logsumexp(x) along `dim`; dx = dy - softmax(x) * sum(dy)."""

    higher_order = "composite"

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

    @staticmethod
    def composite(ctx, x):
        shifted = x - x._data.max(ctx.dim, keepdims=True)
        return shifted - shifted.exp().sum(ctx.dim, keepdim=True).log()


@op
def softmax(x, dim=-1):
    if x.ndim == 0:  # torch: a 0-d tensor is a row of one (softmax 1)
        return Softmax.apply(x.reshape(1), dim=normalize_dim(dim, 0)).reshape(())
    return Softmax.apply(x, dim=normalize_dim(dim, x.ndim))


@op
def log_softmax(x, dim=-1):
    if x.ndim == 0:
        return LogSoftmax.apply(x.reshape(1), dim=normalize_dim(dim, 0)).reshape(())
    return LogSoftmax.apply(x, dim=normalize_dim(dim, x.ndim))


@op(method=False)
def masked_softmax(
    scores, mask=None, scale=1.0, *, key_lengths=None, causal=False, empty_rows="uniform"
):
    """softmax(scores * scale) over the last dim, over the positions each row may attend to;
    every other position gets weight exactly 0, whatever its score holds (NaN and inf too).

    mask:        bool, broadcastable to scores; True = may attend (torch's attn_mask meaning).
    key_lengths: integers >= 0, broadcastable to scores.shape[:-1] (one per row): a row may
                 attend only to its first key_lengths positions (sequence lengths, without
                 building a mask). For scores (B, H, T, T) and lengths (B,): lengths[:, None, None].
    causal:      row i (counted along dim -2) may attend only to positions j <= i.
    Given together, a position must pass all of them. A row that may attend to nothing (or
    whose allowed scores are all -inf) comes out uniform (1/L; empty_rows="zero": all 0),
    never NaN, and passes no gradient back: its output does not depend on its scores.
    Without any mask this is softmax(scores * scale), NaN for a row of -inf as in torch; a
    NaN or +inf score at an allowed position makes its row NaN, as in torch. Forward and
    backward are one kernel pass each; the masks are
    passed to the kernel, so no (..., L, L) array is built for lengths or causality.
    """
    if not isinstance(scores, Tensor):
        raise TypeError(f"masked_softmax: scores must be a Tensor; got {type(scores).__name__}")
    if empty_rows not in ("uniform", "zero"):
        raise ArgumentError(
            f"masked_softmax: empty_rows must be 'uniform' or 'zero'; got {empty_rows!r}"
        )
    if mask is not None:
        mask = bool_mask(mask, "masked_softmax", scores.shape)
    key_stop = None
    if key_lengths is not None:
        key_stop = key_stops(
            key_lengths,
            scores.shape[:-1],
            "masked_softmax",
            f"the rows {scores.shape[:-1]} of scores of shape {scores.shape}",
            refuse=scores.ndim == 0,
        )
    if causal:
        if scores.ndim < 2:
            raise ShapeError(
                f"masked_softmax: causal=True needs scores of shape (..., L, S); got {scores.shape}"
            )
        earlier = np.arange(1, scores.shape[-2] + 1)  # row i may attend to positions 0..i
        key_stop = earlier if key_stop is None else np.minimum(key_stop, earlier)
    masked = mask is not None or key_stop is not None  # without masks: plain softmax, drawn as such
    return Softmax.apply(
        scores,
        dim=scores.ndim - 1,
        scale=float(scale),
        mask=mask,
        key_stop=key_stop,
        empty_rows=empty_rows if masked else None,
        causal=bool(causal),
    )
