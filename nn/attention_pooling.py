"""Attention pooling, the chapter's: one vector per sequence, (B, T, D) -> (B, D), as a
weighted average of its positions. Score modules turn (B, T, D) into one score per position,
(B, T), by matching each position against a learned query; AttentionPooling turns the scores
into weights and the weights into the pooled vector; MeanPooling is the unweighted baseline,
and self_attention_mean the mean of a SelfAttention's outputs made directly.
The conventions (batch first, x @ W, masks with True = may attend, padding weighted exactly 0)
are those of nn/attention.py, whose checks these modules share.
"""

import math

import numpy as np

import minigrad as mg

from . import init
from minigrad.ops.attention import AdditiveScore as AdditiveScoreNode, AttentionMean

from .attention import SelfAttention, _check_input, _check_lengths
from .attention import _pooling_mask, _read_only, _without_junk_in_padding
from .module import Module, Parameter, parameter_dtype

QUERY_INIT_RANGE = 0.5  # learned queries start Uniform(-0.5, 0.5), as in the textbook

# ---------------------------------------------------------------------------------------
# Scores: how well each position matches a learned query


class AdditiveScore(Module):
    """Additive (Bahdanau) score: score_t = v . tanh(x_t W + q U), one number per position.

    Parameters (no biases, as in the textbook):
        input_weight  W: (input_size, hidden_size)  Xavier-uniform
        query_weight  U: (query_size, hidden_size)  Xavier-uniform
        score_vector  v: (hidden_size,)              Xavier-uniform with the fans of a
                                                     Linear(hidden_size, 1) weight
        query         q: (query_size,)               Uniform(-0.5, 0.5), learned
    query_size and hidden_size default to input_size (256 and 256 in the textbook).

    forward(x: (B, T, input_size), lengths=None) -> scores (B, T)
        lengths (B,): score only each sequence's first lengths[b] positions, 0 past them (one
        node that never computes padding; AttentionPooling passes its lengths).
    """

    def __init__(self, input_size, query_size=None, hidden_size=None):
        super().__init__()
        self.input_size = input_size
        self.query_size = input_size if query_size is None else query_size
        self.hidden_size = input_size if hidden_size is None else hidden_size
        self.input_weight = Parameter(
            np.empty((self.input_size, self.hidden_size), parameter_dtype())
        )
        self.query_weight = Parameter(
            np.empty((self.query_size, self.hidden_size), parameter_dtype())
        )
        self.score_vector = Parameter(np.empty(self.hidden_size, parameter_dtype()))
        self.query = Parameter(np.empty(self.query_size, parameter_dtype()))
        self.reset_parameters()

    def reset_parameters(self):
        init.xavier_uniform_(self.input_weight)
        init.xavier_uniform_(self.query_weight)
        bound = math.sqrt(6.0 / (self.hidden_size + 1))  # Xavier bound of a (hidden_size, 1) weight
        init.uniform_(self.score_vector, -bound, bound)
        init.uniform_(self.query, -QUERY_INIT_RANGE, QUERY_INIT_RANGE)

    def forward(self, x, lengths=None):
        _check_input("AdditiveScore", x, self.input_size)
        query_term = self.query @ self.query_weight  # (hidden,), the same for every position
        if lengths is not None and x.dtype == query_term.dtype:
            # the lines below at the real positions only, as one node (mg.ops.attention)
            lengths = _check_lengths("AdditiveScore", lengths, x.shape[0], x.shape[1])
            return AdditiveScoreNode.apply(
                x, self.input_weight, query_term, self.score_vector, lengths=lengths
            )
        hidden = (x @ self.input_weight + query_term).tanh()  # (B, T, hidden)
        return hidden @ self.score_vector  # (B, T)

    def extra_repr(self):
        return (
            f"input_size={self.input_size}, query_size={self.query_size}, "
            f"hidden_size={self.hidden_size}"
        )


class DotProductScore(Module):
    """Dot-product score: score_t = x_t . q with a learned query, no scaling (as in the textbook).

    Parameters:
        query  q: (input_size,)  Uniform(-0.5, 0.5), learned

    forward(x: (B, T, input_size)) -> scores (B, T)
    """

    def __init__(self, input_size):
        super().__init__()
        self.input_size = input_size
        self.query = Parameter(np.empty(input_size, parameter_dtype()))
        self.reset_parameters()

    def reset_parameters(self):
        init.uniform_(self.query, -QUERY_INIT_RANGE, QUERY_INIT_RANGE)

    def forward(self, x):
        _check_input("DotProductScore", x, self.input_size)
        return x @ self.query  # (B, T)

    def extra_repr(self):
        return f"input_size={self.input_size}"


# ---------------------------------------------------------------------------------------
# Pooling: one vector per sequence


class AttentionPooling(Module):
    """Weighted average of the positions, with weights softmax(score(x)) over the real tokens.

    score: a module mapping (B, T, D) -> (B, T), e.g. AdditiveScore(D) or DotProductScore(D).

    forward(x: (B, T, D), lengths=None, mask=None) -> (B, D)
        lengths: (B,) integers, the number of real tokens at the start of each row;
        mask:    (B, T) bool, True where a position is a real token (the mg.masked_softmax
                 convention). Give one of them or neither (then every position counts).
    Padded positions get weight exactly 0. A sequence of length 0 gets all-zero weights and
    pools to the zero vector.

    After each call, `last_weights` holds the attention weights as a numpy array (B, T).
    """

    def __init__(self, score):
        super().__init__()
        if not isinstance(score, Module):
            raise TypeError(
                f"AttentionPooling: score must be a Module such as AdditiveScore or "
                f"DotProductScore; got {type(score).__name__}"
            )
        self.score = score
        self.last_weights = None

    def forward(self, x, lengths=None, mask=None):
        batch, steps, lengths, mask = _pooling_mask("AttentionPooling", x, lengths, mask)
        x = _without_junk_in_padding(x, lengths, mask)
        # the chapter's additive score skips padded positions (their scores are masked anyway)
        additive = isinstance(self.score, AdditiveScore) and lengths is not None
        scores = self.score(x, lengths) if additive else self.score(x)
        if scores.shape != (batch, steps):
            raise ValueError(
                f"AttentionPooling: the score module must return shape ({batch}, {steps}); "
                f"got {scores.shape}"
            )
        weights = mg.masked_softmax(scores, mask, key_lengths=lengths, empty_rows="zero")  # (B, T)
        self.last_weights = _read_only(weights._data)
        return (weights.unsqueeze(1) @ x).squeeze(1)  # (B, 1, T) @ (B, T, D) -> (B, D)


class MeanPooling(Module):
    """Average of the real tokens of each sequence (the pooling after self-attention).

    forward(x: (B, T, D), lengths=None, mask=None) -> (B, D), with lengths / mask as in
    AttentionPooling. A sequence of length 0 gives the zero vector (its sum, 0, divided by 1).
    """

    def forward(self, x, lengths=None, mask=None):
        _, steps, lengths, mask = _pooling_mask("MeanPooling", x, lengths, mask)
        x = _without_junk_in_padding(x, lengths, mask)
        if lengths is not None:
            mask = np.arange(steps) < lengths[:, None]
        if mask is None:
            return x.mean(dim=1)
        counts = np.maximum(mask.sum(axis=1, keepdims=True), 1)
        weights = (mask / counts).astype(x.dtype)[:, :, None]  # (B, T, 1): 1/length on real tokens
        return (x * mg.tensor(weights)).sum(dim=1)


def self_attention_mean(attention, x, lengths=None):
    """MeanPooling()(attention(x, lengths=lengths), lengths) for an nn.SelfAttention, (B, D),
    made without an output per position: the mean of a head's outputs is the weights' mean
    over the queries times V_h = x W_V,h, and W_O is linear too, so only Q and K are projected
    at every position, and the weights' mean is one node (mg.ops.attention.AttentionMean) that
    keeps only Q and K for backward. A sequence of length 0 gives 0, as MeanPooling; the same
    numbers up to float rounding; attention.last_weights stays None. A causal attention (whose
    weights' mean would need the causal mask) takes the composition."""
    if not isinstance(attention, SelfAttention):
        raise TypeError(
            "self_attention_mean: attention must be an nn.SelfAttention; "
            f"got {type(attention).__name__}"
        )
    _check_input("self_attention_mean", x, attention.model_dim)
    batch, steps, dim = x.shape
    lengths, _ = attention._padding(lengths, None, None, batch, steps)
    attention.last_weights = None
    if attention.causal:
        return MeanPooling()(attention(x, lengths=lengths, need_weights=False), lengths)
    heads, head_dim = attention.num_heads, attention.head_dim
    full = np.full(batch, steps, np.int64) if lengths is None else lengths

    def split_heads(y):  # (B, T, H*dh) -> (B, H, T, dh)
        return y.reshape(batch, steps, heads, head_dim).permute(0, 2, 1, 3)

    queries, keys = (split_heads(attention._project(x, name)) for name in ("query", "key"))
    mean = AttentionMean.apply(queries, keys, scale=1.0 / math.sqrt(head_dim), lengths=full)
    x = _without_junk_in_padding(x, lengths, None)  # weight 0 there, but 0 * NaN is NaN
    summary = mean @ x  # (B, H, T) @ (B, T, D): per head, a weighted mean of the inputs
    value_weight = attention.value_weight.reshape(dim, heads, head_dim).permute(1, 0, 2)
    context = (summary.permute(1, 0, 2) @ value_weight).permute(1, 0, 2).reshape(batch, dim)
    if attention.value_bias is not None:  # each head's weights sum to 1: its bias passes whole
        context = context + attention.value_bias
    pooled = attention._project(context, "output")
    if (full == 0).any():  # MeanPooling's zero vector for an empty sequence
        pooled = pooled * mg.tensor((full > 0).astype(pooled.dtype)[:, None])
    return pooled


# fmt: off
__all__ = [
    "AdditiveScore", "DotProductScore", "AttentionPooling", "MeanPooling", "self_attention_mean",
]
# fmt: on
