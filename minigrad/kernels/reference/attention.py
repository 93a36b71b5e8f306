"""Twins of kernels/attention.py: scaled dot-product attention (masks, key lengths, causal
limits, dropout) forward, backward and for inference, and the key stops the masks come to."""

import numpy as np

from .softmax import softmax_backward, softmax_forward


def attention_key_stops(batch, queries, keys, key_lengths=None, causal_offset=None):
    """int64 of shape batch + (queries,): query i of matrix n may attend only to keys
    j < stops[n, i].

    key_lengths: integers in [0, keys] broadcastable to `batch` (a shape), or None: matrix n
    has key_lengths[n] keys. causal_offset: an int or None: query i sees keys j <= i +
    causal_offset (0: the usual causal mask; the number of cached keys when the queries are
    the last positions of the sequence).
    """
    stops = np.full(tuple(batch) + (queries,), keys, np.int64)
    if key_lengths is not None:
        stops = np.minimum(stops, np.asarray(key_lengths, np.int64)[..., None])
    if causal_offset is not None:
        stops = np.minimum(stops, np.arange(1, queries + 1) + int(causal_offset))
    return np.maximum(stops, 0)


def _drop_past_lengths(k, v, key_lengths):
    """k and v with the keys at or past each matrix's length set to 0."""
    if key_lengths is None:
        return k, v
    real = (np.arange(k.shape[-2]) < np.asarray(key_lengths)[..., None])[..., None]
    return np.where(real, k, 0).astype(k.dtype, copy=False), np.where(real, v, 0).astype(
        v.dtype, copy=False
    )


def attention_forward(
    q, k, v, scale, key_lengths=None, causal_offset=None, mask=None, keep=None, keep_scale=1.0
):
    """(out, weights): weights = softmax(q @ k^T * scale) over the keys each query may attend
    to, out = (weights * keep * keep_scale) @ v (no dropout when keep is None).

    q (..., L, E), k (..., S, E), v (..., S, Ev) with the same batch dims (...), one float
    dtype; out (..., L, Ev), weights (..., L, S). A query may attend to key j where j <
    attention_key_stops(...) and mask (bool, broadcastable to (..., L, S), True = may attend;
    None: everywhere) is True. A query that may attend to no key gets all-zero weights (and
    output 0), as in torch's scaled_dot_product_attention. Keys and values at or past a
    matrix's key_lengths are never read: whatever they hold (NaN, inf) changes nothing.
    keep: bool (..., L, S), the weights the dropout keeps, or None.
    """
    k, v = _drop_past_lengths(k, v, key_lengths)
    stops = attention_key_stops(q.shape[:-2], q.shape[-2], k.shape[-2], key_lengths, causal_offset)
    scores = np.matmul(q, np.swapaxes(k, -1, -2))
    weights = softmax_forward(scores, scale, mask, stops, empty_value=0.0)
    dropped = weights if keep is None else weights * keep * weights.dtype.type(keep_scale)
    return np.matmul(dropped, v), weights


def attention_inference(q, k, v, scale, key_lengths=None, causal_offset=None, mask=None):
    """attention_forward's out (no dropout) without keeping its (..., L, S) weights whole: the
    matrices are taken one entry of the first batch dim at a time."""
    if q.ndim == 2:
        return attention_forward(q, k, v, scale, key_lengths, causal_offset, mask)[0]
    batch, queries, keys = q.shape[:-2], q.shape[-2], k.shape[-2]
    lengths = None if key_lengths is None else np.broadcast_to(key_lengths, batch)
    masks = None if mask is None else np.broadcast_to(mask, batch + (queries, keys))
    out = np.empty(batch + (queries, v.shape[-1]), q.dtype)
    for n in range(batch[0]):
        out[n] = attention_forward(
            q[n],
            k[n],
            v[n],
            scale,
            None if lengths is None else lengths[n],
            causal_offset,
            None if masks is None else masks[n],
        )[0]
    return out


def attention_backward(
    q,
    k,
    v,
    weights,
    grad_out,
    scale,
    key_lengths=None,
    causal_offset=None,
    mask=None,
    keep=None,
    keep_scale=1.0,
):
    """(grad_q, grad_k, grad_v) of attention_forward with the same arguments, given its
    weights (None: made again by attention_forward; then keep must be None) and grad_out
    (..., L, Ev)."""
    if weights is None:
        if keep is not None:
            raise ValueError("attention_backward: weights=None (made again) needs keep=None")
        weights = attention_forward(q, k, v, scale, key_lengths, causal_offset, mask)[1]
    k, v = _drop_past_lengths(k, v, key_lengths)
    stops = attention_key_stops(q.shape[:-2], q.shape[-2], k.shape[-2], key_lengths, causal_offset)
    dropout = 1 if keep is None else keep * weights.dtype.type(keep_scale)
    grad_v = np.matmul(np.swapaxes(weights * dropout, -1, -2), grad_out)
    grad_weights = np.matmul(grad_out, np.swapaxes(v, -1, -2)) * dropout
    grad_scores = softmax_backward(weights, grad_weights, scale, mask, stops)
    return (
        np.matmul(grad_scores, k),
        np.matmul(np.swapaxes(grad_scores, -1, -2), q),
        grad_v.astype(v.dtype),
    )
