"""Scaled dot-product attention, with torch's semantics: one node forward and backward.

    weights = softmax(query @ key^T * scale) over the keys each query may attend to
    out     = dropout(weights) @ value

`scaled_dot_product_attention` is torch.nn.functional's (same arguments, same results);
`attention` is the same op with what the layers need besides: sequence lengths and a causal
mask that starts after cached keys, both passed to the kernel instead of as (L, S) masks,
and the weights for drawing. The work is kernels.attention_forward / attention_backward:
the scores of a few heads at a time stay in cache, and the (..., L, S) weights are written
once and read once (the step-by-step composition passes over four such arrays eleven
times). A float mask, which torch lets take a gradient, goes through the step-by-step ops.
"""

import math

import numpy as np

from .. import kernels
from ..errors import ArgumentError, DTypeError, ShapeError
from ..random import generator
from ..engine import Function, Tensor
from .args import as_array, check_broadcasts_to, key_stops, shape_of
from .join import repeat_interleave
from .matmul import matmul
from .dropout import dropout
from .softmax import Softmax
from .shape import transpose
from .registry import op


class ScaledDotProductAttention(Function):
    """out = dropout(softmax(q k^T * scale over the allowed keys)) @ v, in one node.

    q (..., L, E), k (..., S, E), v (..., S, Ev) with the same batch dims; out (..., L, Ev).
    A query may attend to key j where `mask` (bool, broadcastable to (..., L, S)) is True,
    j < key_lengths (integers broadcastable to the batch dims) and, with causal, j <= i +
    causal_offset for query i. A query with no such key gets weights 0 and output 0. keep:
    the weights dropout keeps (bool (..., L, S)) or None; the kept ones are scaled by
    1 / (1 - dropout_p). Outputs: out and the weights (..., L, S) (after masking, before
    dropout), which take no gradient. Without dropout and with need_weights False, the weights
    are never stored whole (kernels.attention_inference) and the second output is an empty
    array; a recorded node then keeps q, k, v only, and its backward makes the weights of a few
    heads at a time again (one more q k^T and softmax, instead of a (..., L, S) array kept from
    forward to backward: 256 MiB for the sentiment model's 8 heads over 128 x 256 tokens).

    backward: d v = dropped^T @ d out; d weights = d out @ v^T (times the dropout mask);
    d scores = scale * weights * (d weights - sum(d weights * weights)); d q = d scores @ k;
    d k = d scores^T @ q.
    """

    @staticmethod
    def forward(
        ctx,
        q,
        k,
        v,
        scale,
        causal=False,
        dropout_p=None,
        causal_offset=None,
        mask=None,
        key_lengths=None,
        keep=None,
        need_weights=True,
    ):
        causal_offset = (causal_offset or 0) if causal else None
        if not (need_weights or keep is not None):  # no weights kept
            out = kernels.attention_inference(q, k, v, scale, key_lengths, causal_offset, mask)
            if ctx.recording:  # backward makes the weights again (kernels.attention_backward)
                ctx.save_for_backward(q, k, v, None)
                ctx.scale = scale
                ctx.settings = dict(key_lengths=key_lengths, causal_offset=causal_offset, mask=mask)
            return out, np.empty(0, q.dtype)
        keep_scale = 0.0 if dropout_p == 1 else 1.0 / (1.0 - (dropout_p or 0.0))
        settings = dict(
            key_lengths=key_lengths,
            causal_offset=causal_offset,
            mask=mask,
            keep=keep,
            keep_scale=keep_scale,
        )
        out, weights = kernels.attention_forward(q, k, v, scale, **settings)
        ctx.save_for_backward(q, k, v, weights)
        ctx.scale, ctx.settings = scale, settings
        return out, weights

    @staticmethod
    def backward(ctx, grad, _weights_grad):
        q, k, v, weights = ctx.saved
        return kernels.attention_backward(q, k, v, weights, grad, ctx.scale, **ctx.settings)


class AttentionMean(Function):
    """The attention weights' mean over each sequence's queries, in one node:
    mean[b, h, j] = (1 / L) sum_{i < L} softmax(q[b, h] k[b, h]^T * scale)[i, j], over the
    first L = lengths[b] queries and keys (0 for j >= L and for L = 0). q, k (B, H, T, E) ->
    (B, H, T). mean @ v is then the mean of the attention's outputs over the sequence, made
    without an output per position (kernels.attention_mean); nothing but q and k is kept for
    backward, which makes each sequence's weights again."""

    @staticmethod
    def forward(ctx, q, k, scale, lengths):
        ctx.save_for_backward(q, k)
        ctx.scale, ctx.lengths = scale, lengths
        return kernels.attention_mean_forward(q, k, scale, lengths)

    @staticmethod
    def backward(ctx, grad):
        q, k = ctx.saved
        return kernels.attention_mean_backward(q, k, grad, ctx.scale, ctx.lengths)


class AdditiveScore(Function):
    """The additive score of attention pooling over each sequence's real positions, in one node:
    scores[b, t] = tanh(x[b, t] @ weight + bias) @ vector for t < lengths[b], 0 past. x (B, T, D),
    weight (D, K), bias and vector (K,) -> (B, T). Padded positions are never computed
    (kernels.additive_score); tanh(...) is kept for backward."""

    @staticmethod
    def forward(ctx, x, weight, bias, vector, lengths):
        scores, hidden = kernels.additive_score_forward(x, weight, bias, vector, lengths)
        ctx.save_for_backward(x, weight, vector, hidden)
        ctx.lengths = lengths
        return scores

    @staticmethod
    def backward(ctx, grad):
        x, weight, vector, hidden = ctx.saved
        return kernels.additive_score_backward(x, weight, vector, hidden, grad, ctx.lengths)


def _check_inputs(op, query, key, value):
    for name, tensor in (("query", query), ("key", key), ("value", value)):
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor; got {type(tensor).__name__}")
        if tensor.ndim < 2:
            raise ShapeError(
                f"{op}: {name} must have shape (..., length, features); got {tensor.shape}"
            )
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(
            f"{op}: expected query (..., L, E), key (..., S, E), value (..., S, Ev); "
            f"got shapes {query.shape}, {key.shape}, {value.shape}"
        )
    if not query.dtype == key.dtype == value.dtype or query.dtype.kind != "f":
        raise DTypeError(
            f"{op}: query, key and value must be float tensors of one dtype; "
            f"got {query.dtype}, {key.dtype}, {value.dtype}"
        )
    try:
        return np.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except ValueError:
        raise ShapeError(
            f"{op}: the batch dims of query {query.shape}, key {key.shape} and value {value.shape} "
            f"cannot be broadcast together"
        ) from None


def _expand(tensor, batch):
    """tensor with its batch dims expanded to `batch` (the backward walk sums the gradient back)."""
    shape = batch + tensor.shape[-2:]
    return tensor if tensor.shape == shape else tensor.expand(*shape)


def attention(
    query,
    key,
    value,
    *,
    scale=None,
    attn_mask=None,
    key_lengths=None,
    causal=False,
    causal_offset=0,
    dropout_p=0.0,
    need_weights=False,
    op="attention",
):
    """scaled_dot_product_attention with two more ways to mask and the weights on request.

    key_lengths: integers >= 0 broadcastable to the batch dims: the queries of a batch entry
                 attend only to its first key_lengths keys (padding; no (..., L, S) mask built).
    causal, causal_offset: query i attends only to keys j <= i + causal_offset; the offset is
                 the number of keys before the first query (cached positions), 0 otherwise.
    need_weights: also return the attention weights as a numpy array (..., L, S) (after
                 masking, before dropout); rows with no key to attend to are all 0.
    The masks combine: a key must pass every one given. Returns out, or (out, weights).
    """
    batch = _check_inputs(op, query, key, value)
    length, keys, features = query.shape[-2], key.shape[-2], query.shape[-1]
    scale = (1.0 / math.sqrt(features) if features else 1.0) if scale is None else float(scale)
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1]; got {dropout_p}")
    if key_lengths is not None:
        key_lengths = key_stops(key_lengths, batch, op, f"the batch dims {batch}")
    mask = None
    if attn_mask is not None:
        check_broadcasts_to(
            op,
            "attn_mask",
            shape_of(attn_mask),
            batch + (length, keys),
            f"{batch + (length, keys)} (batch dims, L = {length} queries, S = {keys} keys)",
        )
        mask = as_array(attn_mask)
        if mask.dtype != np.bool_:
            if mask.dtype.kind != "f":
                raise DTypeError(
                    f"{op}: attn_mask must be bool (True = take part) or float "
                    f"(added to the scores); got {mask.dtype}"
                )
            # torch takes float32 or the query's dtype (the mask is added to scores of that
            # dtype); an array is cast
            if isinstance(attn_mask, Tensor) and mask.dtype not in (query.dtype, np.float32):
                raise DTypeError(
                    f"{op}: a float attn_mask must be float32 or have the dtype of query "
                    f"({query.dtype}); got {mask.dtype}"
                )
            return _with_float_mask(
                query,
                key,
                value,
                attn_mask,
                scale,
                key_lengths,
                causal,
                causal_offset,
                dropout_p,
                need_weights,
                batch,
            )
    query, key, value = (_expand(t, batch) for t in (query, key, value))
    keep = None
    if dropout_p > 0:
        keep = generator().random(batch + (length, keys), dtype=np.float32) >= dropout_p
    out, weights = ScaledDotProductAttention.apply(
        query,
        key,
        value,
        scale=scale,
        causal=bool(causal),
        dropout_p=dropout_p or None,
        causal_offset=int(causal_offset) if causal and causal_offset else None,
        mask=mask,
        key_lengths=key_lengths,
        keep=keep,
        need_weights=bool(need_weights),
    )
    return (out, weights._data) if need_weights else out


def _with_float_mask(
    query,
    key,
    value,
    attn_mask,
    scale,
    key_lengths,
    causal,
    causal_offset,
    dropout_p,
    need_weights,
    batch,
):
    """attention with a float mask added to the scores, step by step (the mask may take a
    gradient)."""
    scores = matmul(query, transpose(key, -2, -1)) * scale + attn_mask
    # per row of scores: the keys j < limits it may attend to (the fused kernel's rule). Every
    # row counts as masked (limits of S keys at most), so a row of -inf gets weights 0, as in torch
    limits = kernels.attention_key_stops(
        batch, query.shape[-2], key.shape[-2], key_lengths, int(causal_offset) if causal else None
    )
    weights = Softmax.apply(
        scores, dim=scores.ndim - 1, key_stop=limits, empty_rows="zero", causal=bool(causal)
    )
    dropped = (
        weights * 0.0 if dropout_p == 1 else dropout(weights, dropout_p) if dropout_p else weights
    )
    out = matmul(dropped, value)
    return (out, weights._data) if need_weights else out


def _shared_heads(query, key, value):
    """key and value with each of their heads repeated for a group of query heads (grouped-query
    attention, torch's enable_gqa=True): query (..., Hq, L, E), key and value (..., Hkv, S, .)
    with Hq a multiple of Hkv; query heads k*g .. k*g + g-1 (g = Hq / Hkv) share head k."""
    if not all(isinstance(t, Tensor) and t.ndim >= 3 for t in (query, key, value)):
        raise ShapeError(
            "scaled_dot_product_attention: enable_gqa=True needs query, key and value with a "
            "heads dim, (..., H, L, E); got shapes "
            + ", ".join(str(getattr(t, "shape", type(t).__name__)) for t in (query, key, value))
        )
    heads, shared = query.shape[-3], key.shape[-3]
    if value.shape[-3] != shared or shared == 0 or heads % shared:
        raise ShapeError(
            "scaled_dot_product_attention: with enable_gqa=True the heads "
            f"(dim -3) of key and value must be equal and divide the query's {heads}; "
            f"got {shared} and {value.shape[-3]}"
        )
    if heads == shared:
        return key, value
    return repeat_interleave(key, heads // shared, dim=-3), repeat_interleave(
        value, heads // shared, dim=-3
    )


@op(method=False, public=False)
def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """torch.nn.functional.scaled_dot_product_attention: softmax(query key^T * scale + mask)
    @ value.

    query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev); the batch dims
    broadcast. scale defaults to 1 / sqrt(E). attn_mask, broadcastable to (..., L, S): bool,
    True = the query may attend to that key (torch's meaning), or float, added to the scores
    (it may require grad). is_causal: query i attends to keys j <= i only (the top-left
    triangle, as in torch); it is the mask, so attn_mask must then be None (torch raises
    too). dropout_p: the chance of dropping each weight (pass 0 when not training, as with
    torch). A query that may attend to no key gets output 0 (torch's CPU kernels do the same).
    enable_gqa: key and value may have fewer heads (dim -3) than query, each shared by a group
    of query heads (torch 2.5+).
    """
    if is_causal and attn_mask is not None:
        raise ArgumentError(
            "scaled_dot_product_attention: pass attn_mask or is_causal=True, not both "
            "(as in torch); to combine them, put the causal triangle into attn_mask"
        )
    if enable_gqa:
        key, value = _shared_heads(query, key, value)
    return attention(
        query,
        key,
        value,
        scale=scale,
        attn_mask=attn_mask,
        causal=is_causal,
        dropout_p=dropout_p,
        op="scaled_dot_product_attention",
    )
