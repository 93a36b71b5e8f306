"""Self-attention, the chapter's: every position attends to all others (SelfAttention, with
its KVCache for generation); pooling a sequence with a learned query is in
nn/attention_pooling.py. Both follow the conventions below, and share the checks of this file.

Conventions of the attention modules
- Inputs are batch-first: x has shape (B, T, D) = (batch, time steps, features).
- Weights are applied as x @ W, with W of shape (in, out), the way the textbook writes X W.
  (PyTorch's nn.Linear stores the transpose, (out, in), and computes x @ W^T.)
- Masks, one rule: a mask marks where attention may go, True = may attend (a real token).
  mg.masked_softmax's `mask`, scaled_dot_product_attention's bool `attn_mask` (torch's
  meaning) and the pooling modules' `mask` all read this way. The one exception keeps
  PyTorch's name and meaning, and its name says it: `key_padding_mask` (SelfAttention, as in
  torch.nn.MultiheadAttention) marks the padding, True = pad. `lengths` (B,) integers is the
  simplest way to say it: the first lengths[b] positions of row b are real, the rest padding.
- Masked positions get weight exactly 0 whatever their scores hold (NaN and inf included):
  the softmax kernels leave them out of the max and the sum, no large negative number is
  added. A row that may attend to nothing (a sequence of length 0) gets all-zero weights, so
  its pooled vector or attention output is 0 (plus the output bias, if any): no NaN, and no
  gradient flows through that row.
- Linear-like weights start Xavier-uniform (Paddle's default, which the textbook relies on);
  learned query vectors start Uniform(-0.5, 0.5) as in the textbook.
"""

import math

import numpy as np

import minigrad as mg
from minigrad.ops import lengths_to_mask
from minigrad.ops.attention import attention

from . import init
from .module import Module, Parameter, parameter_dtype

# ---------------------------------------------------------------------------------------
# Checks and masks shared by the modules below


def _check_input(name, x, size):
    if not isinstance(x, mg.Tensor):
        raise TypeError(
            f"{name}: expected a Tensor of shape (batch, time, {size}); got {type(x).__name__}"
        )
    if x.ndim != 3 or x.shape[-1] != size:
        raise ValueError(
            f"{name}: expected input of shape (batch, time, {size}); got shape {x.shape}"
        )


def _as_array(value):
    return np.asarray(value._data if isinstance(value, mg.Tensor) else value)


def _check_mask(name, mask_name, mask, batch, steps):
    mask = _as_array(mask)
    if mask.shape != (batch, steps):
        raise ValueError(
            f"{name}: expected {mask_name} of shape ({batch}, {steps}); got shape {mask.shape}"
        )
    if mask.dtype != np.bool_:
        raise TypeError(f"{name}: {mask_name} must be bool; got dtype {mask.dtype}")
    return mask


def _check_lengths(name, lengths, batch, steps):
    """lengths (B,) integers in [0, T], checked (ops.args.lengths_to_mask says what is wrong)."""
    lengths_to_mask(lengths, batch, steps, op=name)
    return _as_array(lengths).astype(np.int64)


def _pooling_mask(owner, x, lengths, mask):
    """Check a pooling input x (B, T, D) and its padding. Returns (B, T, lengths, mask): lengths
    (B,) int64 or None, mask (B, T) bool or None (at most one of them is given)."""
    if not isinstance(x, mg.Tensor) or x.ndim != 3:
        raise ValueError(
            f"{owner}: expected input of shape (batch, time, features); "
            f"got shape {getattr(x, 'shape', type(x).__name__)}"
        )
    batch, steps, _ = x.shape
    if lengths is not None and mask is not None:
        raise ValueError(f"{owner}: pass lengths or mask, not both")
    if lengths is not None:
        lengths = _check_lengths(owner, lengths, batch, steps)
    elif mask is not None:
        mask = _check_mask(owner, "mask", mask, batch, steps)
    return batch, steps, lengths, mask


def _without_junk_in_padding(x, lengths, mask, heads=1):
    """x (B * heads, T, D), or x with its padded positions set to 0 when x holds inf or NaN
    somewhere (lengths (B,) or mask (B, T), True = a real position; each row repeated for the
    heads of a (B * heads, ...) stack).

    Padding gets weight exactly 0, but 0 * inf and 0 * NaN are NaN: junk there would still
    reach the pooled vector and the gradients. A finite x (the usual case) costs one sum and
    no extra op in the graph."""
    if (lengths is None and mask is None) or np.isfinite(x._data.sum()):
        return x
    real = np.arange(x.shape[1]) < lengths[:, None] if mask is None else mask
    return x.masked_fill(mg.tensor(~np.repeat(real, heads, axis=0)[:, :, None]), 0.0)


def _read_only(array):
    """A view of the weights for `last_weights`: no copy, and writing into it raises instead
    of silently corrupting the array the backward pass still needs."""
    view = array.view()
    view.flags.writeable = False
    return view


# ---------------------------------------------------------------------------------------
# Self-attention: every position attends to every (allowed) position of the same sequence


class KVCache:
    """The keys and values a SelfAttention layer has computed so far, for generating one token
    at a time: each call appends the new positions' keys and values instead of recomputing
    those of the whole prefix.

        cache = nn.KVCache()                   # one per SelfAttention layer (per block)
        out = attention(prompt, cache=cache)   # (B, T0, D); the cache now holds T0 positions
        out = attention(token, cache=cache)    # (B, 1, D) attends to the T0 + 1 positions
        len(cache)                             # positions held; cache.reset() empties it

    keys, values: Tensors (B, H, positions, head_dim), or None while empty. Generate under
    mg.no_grad(): with gradients on, the cached tensors keep every step's graph alive.
    """

    def __init__(self):
        self.keys = self.values = None

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    def reset(self):
        self.keys = self.values = None

    def append(self, keys, values):
        """Add keys and values (B, H, T, head_dim) of T new positions; returns all of them."""
        if self.keys is not None and (
            keys.shape[:2] != self.keys.shape[:2] or keys.shape[3] != self.keys.shape[3]
        ):
            raise ValueError(
                f"KVCache: holds keys of shape {self.keys.shape} (batch, heads, positions, "
                f"head_dim); cannot append keys of shape {keys.shape}"
            )
        self.keys = keys if self.keys is None else mg.cat([self.keys, keys], dim=2)
        self.values = values if self.values is None else mg.cat([self.values, values], dim=2)
        return self.keys, self.values

    def __repr__(self):
        shape = None if self.keys is None else tuple(self.keys.shape)
        return f"KVCache(positions={len(self)}, keys={shape})"


_SHORT_NAMES = {"query": "q", "key": "k", "value": "v"}  # what mg.viz shows the projections as


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

    forward(x: (B, T, model_dim), lengths=None, key_padding_mask=None, cache=None,
    need_weights=True) -> (B, T, model_dim)
        lengths:          (B,) integers, the number of real tokens at the start of each row;
        key_padding_mask: (B, T) bool, True at PADDING positions (PyTorch's convention);
        cache:            an nn.KVCache, for generation (below);
        need_weights:     False leaves `last_weights` None; then the (B, H, T, T) weights
                          are never stored whole: in training the backward makes them again a
                          few heads at a time (the same gradients, one more Q K^T).
    Only key columns are masked (as in the textbook): every query position, padded or not,
    attends to the real tokens only; outputs at padded positions are left for the caller to
    ignore (e.g. MeanPooling with the same lengths). causal=True also forbids attending to
    later positions. A query row that may attend to nothing (a sequence of length 0) gets
    all-zero weights, so its output is 0 (or output_bias).
    Its outputs' mean over the positions, made directly: nn.self_attention_mean.

    Generation with a cache: the keys and values of x's positions are appended to the cache;
    x's queries attend to every cached position and to the new ones (with causal=True, within
    the new chunk only to the earlier ones), and the output is for x's positions only. One
    token at a time this gives what the whole prefix would give. lengths and key_padding_mask
    cannot be combined with a cache.

    fused=True (the default) computes softmax(Q K^T / sqrt(head_dim)) V as one graph node,
    ScaledDotProductAttention (mg.ops.attention; masks passed to the kernel, the heads'
    scores kept in cache). fused=False runs the textbook's steps as separate nodes (MatMul,
    Softmax, MatMul, with the heads merged into the batch axis, (B*H, T, head_dim)): the same
    numbers, slower, drawn step by step by mg.viz. After each call, `last_weights` holds the
    weights as numpy (B, H, T, positions attended), read-only.

    mg.viz draws the tensors it makes under their names in the formulas above: q, k, v (the
    projections, before the heads are split), scores (Q K^T, before the 1/sqrt(head_dim)
    scale; fused=False), weights (fused=False) and context (the heads' weighted sums).
    """

    def __init__(self, model_dim, num_heads=1, causal=False, bias=False, fused=True):
        super().__init__()
        if (
            isinstance(num_heads, bool)
            or not isinstance(num_heads, (int, np.integer))
            or num_heads < 1
            or model_dim % num_heads != 0
        ):
            raise ValueError(
                f"SelfAttention: model_dim must be divisible by num_heads (a whole number); "
                f"got model_dim={model_dim}, num_heads={num_heads}"
            )
        self.model_dim = model_dim
        self.num_heads = num_heads
        self.head_dim = model_dim // num_heads
        self.causal = causal
        self.fused = fused
        for name in ("query", "key", "value", "output"):
            setattr(
                self,
                f"{name}_weight",
                Parameter(np.empty((model_dim, model_dim), parameter_dtype())),
            )
        for name in ("query", "key", "value", "output"):
            self.register_parameter(
                f"{name}_bias", Parameter(np.empty(model_dim, parameter_dtype())) if bias else None
            )
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

    def _named_projection(self, x, name):
        """x W_Q (+ bias) named q for mg.viz (k, v for the others): the drawing says which."""
        return mg.viz.name(self._project(x, name), _SHORT_NAMES[name])

    def _padding(self, lengths, key_padding_mask, cache, batch, steps):
        """(lengths (B,) int64 or None, keys allowed (B, T) bool or None) from forward's
        arguments."""
        name = type(self).__name__
        if lengths is not None and key_padding_mask is not None:
            raise ValueError(f"{name}: pass lengths or key_padding_mask, not both")
        if cache is not None and (lengths is not None or key_padding_mask is not None):
            raise ValueError(
                f"{name}: lengths and key_padding_mask cannot be combined with a cache"
            )
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"{name}: cache must be an nn.KVCache; got {type(cache).__name__}")
        if lengths is not None:
            return _check_lengths(name, lengths, batch, steps), None
        if key_padding_mask is not None:
            return None, ~_check_mask(name, "key_padding_mask", key_padding_mask, batch, steps)
        return None, None

    def forward(self, x, lengths=None, key_padding_mask=None, cache=None, need_weights=True):
        _check_input(type(self).__name__, x, self.model_dim)
        batch, steps, _ = x.shape
        lengths, keys_allowed = self._padding(lengths, key_padding_mask, cache, batch, steps)
        self.last_weights = None  # let the kernel reuse the previous call's weights array
        if self.fused:
            context = self._fused_attention(x, lengths, keys_allowed, cache, need_weights)
        elif cache is not None:
            raise ValueError(f"{type(self).__name__}: a cache needs fused=True")
        else:
            context = self._step_by_step_attention(x, lengths, keys_allowed)
            if not need_weights:
                self.last_weights = None
        return self._project(context, "output")

    def _fused_attention(self, x, lengths, keys_allowed, cache, need_weights=True):
        """concat_h(softmax(Q_h K_h^T / sqrt(head_dim)) V_h) as one ScaledDotProductAttention
        node."""
        batch, steps, _ = x.shape

        def split_heads(y):  # (B, T, H*dh) -> (B, H, T, dh)
            return y.reshape(batch, steps, self.num_heads, self.head_dim).permute(0, 2, 1, 3)

        queries, keys, values = (
            split_heads(self._named_projection(x, name)) for name in ("query", "key", "value")
        )
        cached = 0
        if cache is not None:
            cached = len(cache)
            keys, values = cache.append(keys, values)
        context = attention(
            queries,
            keys,
            values,
            scale=1.0 / math.sqrt(self.head_dim),
            key_lengths=None if lengths is None else lengths[:, None],  # one per (batch, head)
            attn_mask=None
            if keys_allowed is None
            else keys_allowed[:, None, None, :],  # (B, 1, 1, T_key)
            causal=self.causal,
            causal_offset=cached,
            need_weights=need_weights,
        )
        if need_weights:
            context, weights = context
            self.last_weights = _read_only(weights)  # (B, H, T, positions)
        mg.viz.name(context, "context")
        return context.permute(0, 2, 1, 3).reshape(batch, steps, self.model_dim)

    def _step_by_step_attention(self, x, lengths, keys_allowed):
        """The textbook's steps, each its own node: Q K^T, masked softmax, weights V."""
        batch, steps, _ = x.shape
        heads, head_dim = self.num_heads, self.head_dim

        def split_heads(y):  # (B, T, H*dh) -> (B*H, T, dh)
            return (
                y.reshape(batch, steps, heads, head_dim)
                .permute(0, 2, 1, 3)
                .reshape(batch * heads, steps, head_dim)
            )

        queries = split_heads(self._named_projection(x, "query"))
        # junk (inf, NaN) at padded positions would reach real ones through weight 0 * junk; the
        # fused kernel never reads those keys
        values = _without_junk_in_padding(
            split_heads(self._named_projection(x, "value")), lengths, keys_allowed, heads
        )
        keys_transposed = (
            self._named_projection(x, "key")
            .reshape(batch, steps, heads, head_dim)
            .permute(0, 2, 3, 1)
            .reshape(batch * heads, head_dim, steps)
        )  # (B*H, dh, T)

        # Q K^T, one batched matmul
        scores = mg.viz.name(queries @ keys_transposed, "scores").reshape(
            batch, heads, steps, steps
        )
        weights = mg.masked_softmax(
            scores,
            None if keys_allowed is None else keys_allowed[:, None, None, :],  # (B, 1, 1, T_key)
            scale=1.0 / math.sqrt(head_dim),
            key_lengths=None if lengths is None else lengths[:, None, None],
            causal=self.causal,
            empty_rows="zero",
        )  # (B, H, T, T)
        mg.viz.name(weights, "weights")
        self.last_weights = _read_only(weights._data)

        context = weights.reshape(batch * heads, steps, steps) @ values  # (B*H, T, dh)
        mg.viz.name(context, "context")
        return (
            context.reshape(batch, heads, steps, head_dim)
            .permute(0, 2, 1, 3)
            .reshape(batch, steps, self.model_dim)
        )

    def extra_repr(self):
        return (
            f"model_dim={self.model_dim}, num_heads={self.num_heads}, causal={self.causal}, "
            f"bias={self.query_bias is not None}" + ("" if self.fused else ", fused=False")
        )


MultiHeadSelfAttention = SelfAttention  # the textbook's name for it: MultiHeadSelfAttention(256, 8)

__all__ = ["SelfAttention", "MultiHeadSelfAttention", "KVCache"]
