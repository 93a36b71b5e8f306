"""Attention: pool a sequence with a learned query, or let every position attend to all others.

Conventions used throughout this file
- Inputs are batch-first: x has shape (B, T, D) = (batch, time steps, features).
- Weights are applied as x @ W, with W of shape (in, out), the way the textbook writes X W.
  (PyTorch's nn.Linear stores the transpose, (out, in), and computes x @ W^T.)
- Padding: `lengths` (B,) integers says how many leading positions of each row are real
  tokens; the positions after them are padding. Their scores get -1e9 before the softmax
  (`mg.masked_softmax`), so their attention weight is exactly 0.
- A row that may attend to nothing (a sequence of length 0) gets all-zero weights, so its
  pooled vector or attention output is 0 (plus the output bias, if any): no NaN, and no
  gradient flows through that row.
- Linear-like weights start Xavier-uniform (Paddle's default, which the textbook relies on);
  learned query vectors start Uniform(-0.5, 0.5) as in the textbook.

Score modules turn (B, T, D) into one score per position, (B, T); AttentionPooling turns the
scores into weights and the weights into one vector per sequence, (B, D).
"""

import math

import numpy as np

import minigrad as mg

from . import init
from .module import Module, Parameter

QUERY_INIT_RANGE = 0.5  # learned queries start Uniform(-0.5, 0.5), as in the textbook


# ---------------------------------------------------------------------------------------
# Checks and masks shared by the modules below


def _check_input(name, x, size):
    if not isinstance(x, mg.Tensor):
        raise TypeError(f"{name}: expected a Tensor of shape (batch, time, {size}); got {type(x).__name__}")
    if x.ndim != 3 or x.shape[-1] != size:
        raise ValueError(f"{name}: expected input of shape (batch, time, {size}); got shape {x.shape}")


def _as_array(value):
    return np.asarray(value.data if isinstance(value, mg.Tensor) else value)


def _lengths_to_mask(name, lengths, batch, steps):
    """lengths (B,) integers in [0, T] -> bool (B, T), True at the real tokens."""
    lengths = _as_array(lengths)
    if lengths.shape != (batch,):
        raise ValueError(f"{name}: expected lengths of shape ({batch},) for a batch of {batch}; "
                         f"got shape {lengths.shape}")
    if not np.issubdtype(lengths.dtype, np.integer):
        raise TypeError(f"{name}: lengths must be integers; got dtype {lengths.dtype}")
    if lengths.size and (lengths.min() < 0 or lengths.max() > steps):
        raise ValueError(f"{name}: lengths must lie in [0, {steps}] for inputs of {steps} steps; "
                         f"got values in [{lengths.min()}, {lengths.max()}]")
    return np.arange(steps) < lengths[:, None]


def _check_mask(name, mask_name, mask, batch, steps):
    mask = _as_array(mask)
    if mask.shape != (batch, steps):
        raise ValueError(f"{name}: expected {mask_name} of shape ({batch}, {steps}); got shape {mask.shape}")
    if mask.dtype != np.bool_:
        raise TypeError(f"{name}: {mask_name} must be bool; got dtype {mask.dtype}")
    return mask


def _zero_rows_without_keys(weights, allowed):
    """Set the weights of rows where `allowed` is all False to exactly 0.

    masked_softmax would give such a row some distribution over the masked positions; a
    sequence with no tokens should contribute nothing instead. Adds no op to the graph when
    every row has at least one allowed position (the usual case).
    """
    if allowed is None:
        return weights
    empty = ~allowed.any(axis=-1, keepdims=True)
    return weights.masked_fill(empty, 0.0) if empty.any() else weights


def _pooling_mask(owner, x, lengths, mask):
    """Check a pooling input x (B, T, D) and turn `lengths` or `mask` into a (B, T) bool mask
    (None when neither is given). Returns (B, T, mask)."""
    if not isinstance(x, mg.Tensor) or x.ndim != 3:
        raise ValueError(f"{owner}: expected input of shape (batch, time, features); "
                         f"got shape {getattr(x, 'shape', type(x).__name__)}")
    batch, steps, _ = x.shape
    if lengths is not None and mask is not None:
        raise ValueError(f"{owner}: pass lengths or mask, not both")
    if lengths is not None:
        mask = _lengths_to_mask(owner, lengths, batch, steps)
    elif mask is not None:
        mask = _check_mask(owner, "mask", mask, batch, steps)
    return batch, steps, mask


def _read_only(array):
    """A view of the weights for `last_weights`: no copy, and writing into it raises instead
    of silently corrupting the array the backward pass still needs."""
    view = array.view()
    view.flags.writeable = False
    return view


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

    forward(x: (B, T, input_size)) -> scores (B, T)
    """

    def __init__(self, input_size, query_size=None, hidden_size=None):
        super().__init__()
        self.input_size = input_size
        self.query_size = input_size if query_size is None else query_size
        self.hidden_size = input_size if hidden_size is None else hidden_size
        self.input_weight = Parameter(np.empty((self.input_size, self.hidden_size), np.float32))
        self.query_weight = Parameter(np.empty((self.query_size, self.hidden_size), np.float32))
        self.score_vector = Parameter(np.empty(self.hidden_size, np.float32))
        self.query = Parameter(np.empty(self.query_size, np.float32))
        self.reset_parameters()

    def reset_parameters(self):
        init.xavier_uniform_(self.input_weight)
        init.xavier_uniform_(self.query_weight)
        bound = math.sqrt(6.0 / (self.hidden_size + 1))  # Xavier bound of a (hidden_size, 1) weight
        init.uniform_(self.score_vector, -bound, bound)
        init.uniform_(self.query, -QUERY_INIT_RANGE, QUERY_INIT_RANGE)

    def forward(self, x):
        _check_input("AdditiveScore", x, self.input_size)
        query_term = self.query @ self.query_weight  # (hidden,), the same for every position
        hidden = (x @ self.input_weight + query_term).tanh()  # (B, T, hidden)
        return hidden @ self.score_vector  # (B, T)

    def extra_repr(self):
        return f"input_size={self.input_size}, query_size={self.query_size}, hidden_size={self.hidden_size}"


class DotProductScore(Module):
    """Dot-product score: score_t = x_t . q with a learned query, no scaling (as in the textbook).

    Parameters:
        query  q: (input_size,)  Uniform(-0.5, 0.5), learned

    forward(x: (B, T, input_size)) -> scores (B, T)
    """

    def __init__(self, input_size):
        super().__init__()
        self.input_size = input_size
        self.query = Parameter(np.empty(input_size, np.float32))
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
            raise TypeError(f"AttentionPooling: score must be a Module such as AdditiveScore or "
                            f"DotProductScore; got {type(score).__name__}")
        self.score = score
        self.last_weights = None

    def forward(self, x, lengths=None, mask=None):
        batch, steps, mask = _pooling_mask("AttentionPooling", x, lengths, mask)
        scores = self.score(x)
        if scores.shape != (batch, steps):
            raise ValueError(f"AttentionPooling: the score module must return shape ({batch}, {steps}); "
                             f"got {scores.shape}")
        weights = _zero_rows_without_keys(mg.masked_softmax(scores, mask), mask)  # (B, T)
        self.last_weights = _read_only(weights.data)
        return (weights.unsqueeze(1) @ x).squeeze(1)  # (B, 1, T) @ (B, T, D) -> (B, D)


class MeanPooling(Module):
    """Average of the real tokens of each sequence (the pooling after self-attention).

    forward(x: (B, T, D), lengths=None, mask=None) -> (B, D), with lengths / mask as in
    AttentionPooling. A sequence of length 0 gives the zero vector (its sum, 0, divided by 1).
    """

    def forward(self, x, lengths=None, mask=None):
        _, _, mask = _pooling_mask("MeanPooling", x, lengths, mask)
        if mask is None:
            return x.mean(dim=1)
        counts = np.maximum(mask.sum(axis=1, keepdims=True), 1)
        weights = (mask / counts).astype(x.dtype)[:, :, None]  # (B, T, 1): 1/length on real tokens
        return (x * mg.tensor(weights)).sum(dim=1)


# ---------------------------------------------------------------------------------------
# Self-attention: every position attends to every (allowed) position of the same sequence


class SelfAttention(Module):
    """(Multi-head) scaled dot-product self-attention with the four matrices W_Q, W_K, W_V, W_O.

        Q = x W_Q,  K = x W_K,  V = x W_V                     (B, T, model_dim) each
        split each into num_heads heads of head_dim = model_dim / num_heads
        weights = softmax(Q_h K_h^T / sqrt(head_dim))  per head, over the keys   (B, H, T, T)
        out = concat_h(weights_h V_h) W_O                     (B, T, model_dim)

    Parameters, each (model_dim, model_dim), used as x @ W, Xavier-uniform:
        query_weight, key_weight, value_weight, output_weight
    With bias=True also query_bias, key_bias, value_bias, output_bias (model_dim,), zeros;
    the textbook uses none (bias=False), and then these attributes are None.

    forward(x: (B, T, model_dim), lengths=None, key_padding_mask=None) -> (B, T, model_dim)
        lengths:          (B,) integers, the number of real tokens at the start of each row;
        key_padding_mask: (B, T) bool, True at PADDING positions (PyTorch's convention).
    Only key columns are masked (as in the textbook): every query position, padded or not,
    attends to the real tokens only; outputs at padded positions are left for the caller to
    ignore (e.g. MeanPooling with the same lengths). causal=True also forbids attending to
    later positions. A query row that may attend to nothing (a sequence of length 0) gets
    all-zero weights, so its output is 0 (or output_bias).

    The heads are merged into the batch axis, (B*H, T, head_dim), so all heads' scores are one
    batched matmul. After each call, `last_weights` holds the weights as numpy (B, H, T, T).
    """

    def __init__(self, model_dim, num_heads=1, causal=False, bias=False):
        super().__init__()
        if num_heads < 1 or model_dim % num_heads != 0:
            raise ValueError(f"SelfAttention: model_dim must be divisible by num_heads; got model_dim="
                             f"{model_dim}, num_heads={num_heads}")
        self.model_dim = model_dim
        self.num_heads = num_heads
        self.head_dim = model_dim // num_heads
        self.causal = causal
        for name in ("query", "key", "value", "output"):
            setattr(self, f"{name}_weight", Parameter(np.empty((model_dim, model_dim), np.float32)))
        for name in ("query", "key", "value", "output"):
            self.register_parameter(f"{name}_bias", Parameter(np.empty(model_dim, np.float32)) if bias else None)
        self.last_weights = None
        self.reset_parameters()

    def reset_parameters(self):
        for name in ("query", "key", "value", "output"):
            init.xavier_uniform_(getattr(self, f"{name}_weight"))
            if getattr(self, f"{name}_bias") is not None:
                init.zeros_(getattr(self, f"{name}_bias"))

    def _project(self, x, name):
        y = x @ getattr(self, f"{name}_weight")
        bias = getattr(self, f"{name}_bias")
        return y if bias is None else y + bias

    def _allowed(self, lengths, key_padding_mask, batch, steps):
        """Bool mask broadcastable to (B, H, T_query, T_key), True where attending is allowed; or None."""
        name = type(self).__name__
        if lengths is not None and key_padding_mask is not None:
            raise ValueError(f"{name}: pass lengths or key_padding_mask, not both")
        keys = None
        if lengths is not None:
            keys = _lengths_to_mask(name, lengths, batch, steps)
        elif key_padding_mask is not None:
            keys = ~_check_mask(name, "key_padding_mask", key_padding_mask, batch, steps)
        allowed = None if keys is None else keys[:, None, None, :]  # (B, 1, 1, T_key)
        if self.causal:
            earlier = np.tril(np.ones((steps, steps), dtype=bool))  # query t sees keys 0..t
            allowed = earlier if allowed is None else allowed & earlier
        return allowed

    def forward(self, x, lengths=None, key_padding_mask=None):
        _check_input(type(self).__name__, x, self.model_dim)
        batch, steps, _ = x.shape
        heads, head_dim = self.num_heads, self.head_dim
        allowed = self._allowed(lengths, key_padding_mask, batch, steps)

        def split_heads(y):  # (B, T, H*dh) -> (B*H, T, dh)
            return y.reshape(batch, steps, heads, head_dim).permute(0, 2, 1, 3).reshape(batch * heads, steps, head_dim)

        queries = split_heads(self._project(x, "query"))
        values = split_heads(self._project(x, "value"))
        keys_transposed = (self._project(x, "key").reshape(batch, steps, heads, head_dim)
                           .permute(0, 2, 3, 1).reshape(batch * heads, head_dim, steps))  # (B*H, dh, T)

        scores = (queries @ keys_transposed).reshape(batch, heads, steps, steps)  # Q K^T, one batched matmul
        weights = mg.masked_softmax(scores, allowed, scale=1.0 / math.sqrt(head_dim))
        weights = _zero_rows_without_keys(weights, allowed)  # (B, H, T, T)
        self.last_weights = _read_only(weights.data)

        context = weights.reshape(batch * heads, steps, steps) @ values  # (B*H, T, dh)
        merged = context.reshape(batch, heads, steps, head_dim).permute(0, 2, 1, 3).reshape(batch, steps, self.model_dim)
        return self._project(merged, "output")

    def extra_repr(self):
        return (f"model_dim={self.model_dim}, num_heads={self.num_heads}, causal={self.causal}, "
                f"bias={self.query_bias is not None}")


class MultiHeadSelfAttention(SelfAttention):
    """SelfAttention with the number of heads spelled out (8 heads of 32 in the textbook's MHSA).

    MultiHeadSelfAttention(model_dim, num_heads, causal=False, bias=False); everything else,
    parameters and forward included, is SelfAttention's.
    """

    def __init__(self, model_dim, num_heads, causal=False, bias=False):
        super().__init__(model_dim, num_heads=num_heads, causal=causal, bias=bias)


__all__ = ["AdditiveScore", "DotProductScore", "AttentionPooling", "MeanPooling", "SelfAttention",
           "MultiHeadSelfAttention"]
