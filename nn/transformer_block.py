"""The chapter's Transformer block, with the textbook's names and layout: FeedForward, position
information, residual, TransformerBlock (torch's nn.Transformer and its layers: nn/transformer.py;
LayerNorm: nn/normalization.py).

A Transformer block (Vaswani et al., 2017, "Attention Is All You Need") adds two things to
the residual stream x of shape (B, T, model_dim): what self-attention gathers from the other
positions, then what a position-wise feed-forward network computes from each position alone.
Each sub-layer sees a layer-normalised copy of the stream (pre-norm, as GPT-2 and most models
since; it trains without a learning-rate warm-up being critical):

    x = x + dropout(attention(attention_norm(x)))       # SelfAttention: W_Q, W_K, W_V, W_O
    x = x + feed_forward(feed_forward_norm(x))          # Linear, GELU, Linear, dropout

norm_first=False gives the original post-norm block, x = norm(x + sublayer(x)).

Self-attention has no notion of order, so position information is added to the token
embeddings once, before the first block: a learned table (PositionalEmbedding, GPT's choice)
or the fixed sines and cosines of the Transformer paper (SinusoidalPositionalEncoding).
"""

import math

import numpy as np

import minigrad as mg
from minigrad.errors import ShapeError

from . import init
from .activation import GELU
from .attention import SelfAttention
from .dropout import Dropout
from .linear import Linear
from .module import Module, Parameter, parameter_dtype
from .normalization import LayerNorm


class FeedForward(Module):
    """The position-wise feed-forward network of a Transformer block:

        expand: Linear(model_dim, ff_dim) -> GELU -> project: Linear(ff_dim, model_dim) -> dropout

    forward(x: (..., model_dim)) -> (..., model_dim)
    """

    def __init__(self, model_dim, ff_dim, dropout=0.0, approximate="none"):
        super().__init__()
        self.expand = Linear(model_dim, ff_dim)
        self.activation = GELU(approximate)
        self.project = Linear(ff_dim, model_dim)
        self.dropout = Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.project(self.activation(self.expand(x))))


# ---------------------------------------------------------------------------------------
# Position information


def _check_positions(name, x, offset, max_length, model_dim):
    """The input's number of steps, after checking x (a Tensor (..., T, model_dim)) and
    offset (an integer: positions offset..offset+T-1 must fit max_length)."""
    if not isinstance(x, mg.Tensor):
        raise TypeError(
            f"{name}: expected a Tensor of shape (..., time, {model_dim}); got {type(x).__name__}"
        )
    if x.ndim < 2 or x.shape[-1] != model_dim:
        raise ShapeError(f"{name}: expected input of shape (..., time, {model_dim}); got {x.shape}")
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise TypeError(
            f"{name}: offset must be an integer (the position of the first step); got {offset!r}"
        )
    steps = x.shape[-2]
    if offset < 0 or offset + steps > max_length:
        raise ValueError(
            f"{name}: positions {offset}..{offset + steps - 1} do not fit max_length={max_length} "
            f"(input of {steps} steps at offset {offset})"
        )
    return steps


class PositionalEmbedding(Module):
    """Learned position vectors, added to the input: x + weight[offset : offset + T].

    weight: (max_length, model_dim), N(0, 1) as nn.Embedding. offset is the position of the
    first step of x (the length of the prefix already processed, when generating with a cache).

    forward(x: (..., T, model_dim), offset=0) -> (..., T, model_dim)
    """

    def __init__(self, max_length, model_dim, dtype=None):
        super().__init__()
        if max_length < 1 or model_dim < 1:
            raise ValueError(
                f"PositionalEmbedding: max_length and model_dim must be >= 1; "
                f"got {max_length} and {model_dim}"
            )
        self.max_length, self.model_dim = int(max_length), int(model_dim)
        self.weight = Parameter(np.empty((self.max_length, self.model_dim), parameter_dtype(dtype)))
        init.normal_(self.weight)

    def forward(self, x, offset=0):
        steps = _check_positions("PositionalEmbedding", x, offset, self.max_length, self.model_dim)
        return x + self.weight[offset : offset + steps]

    def extra_repr(self):
        return f"{self.max_length}, {self.model_dim}"


def sinusoidal_encoding(length, model_dim, dtype=np.float32):
    """The fixed position vectors of the Transformer paper as a numpy array (length, model_dim):

        PE[pos, 2i] = sin(pos / 10000^(2i / model_dim)),  PE[pos, 2i + 1] = cos(pos / 10000^(2i /
        model_dim))

    Each pair of features is a rotation at its own frequency, so PE[pos + k] is a linear
    function of PE[pos] for every offset k. An odd model_dim leaves its last feature a sine.
    """
    if length < 0 or model_dim < 1:
        raise ValueError(
            "sinusoidal_encoding: expected length >= 0 and model_dim >= 1; "
            f"got {length} and {model_dim}"
        )
    positions = np.arange(length, dtype=np.float64)[:, None]
    # 1 / 10000^(2i/d)
    frequencies = np.exp(-math.log(10000.0) * np.arange(0, model_dim, 2) / model_dim)
    angles = positions * frequencies  # (length, ceil(model_dim / 2))
    table = np.empty((length, model_dim))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles[:, : model_dim // 2])
    return table.astype(dtype)


class SinusoidalPositionalEncoding(Module):
    """The Transformer paper's fixed position vectors (sinusoidal_encoding), added to the input:
    x + PE[offset : offset + T]. No parameters: nothing to learn, nothing in the state dict.

    forward(x: (..., T, model_dim), offset=0) -> (..., T, model_dim)
    """

    def __init__(self, model_dim, max_length=4096):
        super().__init__()
        self.model_dim, self.max_length = int(model_dim), int(max_length)
        self._tables = {}  # dtype -> (max_length, model_dim) array, made on first use

    def forward(self, x, offset=0):
        steps = _check_positions(
            "SinusoidalPositionalEncoding", x, offset, self.max_length, self.model_dim
        )
        # an int or bool x is promoted, as in torch
        dtype = x.dtype if x.dtype.kind == "f" else parameter_dtype()
        if dtype not in self._tables:
            self._tables[dtype] = sinusoidal_encoding(self.max_length, self.model_dim, dtype)
        return x + mg.tensor(self._tables[dtype][offset : offset + steps])

    def extra_repr(self):
        return f"{self.model_dim}, max_length={self.max_length}"


# ---------------------------------------------------------------------------------------
# The block


def residual(x, sublayer, norm, norm_first):
    """One residual connection of a Transformer layer: x + sublayer(norm(x)) with norm_first
    (pre-norm), else norm(x + sublayer(x)) (post-norm, the 2017 paper's)."""
    return x + sublayer(norm(x)) if norm_first else norm(x + sublayer(x))


class TransformerBlock(Module):
    """One Transformer block: self-attention and a feed-forward network, each with a residual
    connection and a LayerNorm (pre-norm by default; see the top of this file).

        attention_norm     LayerNorm(model_dim)
        attention          SelfAttention(model_dim, num_heads, causal): query_weight, key_weight,
                           value_weight, output_weight, each (model_dim, model_dim), used as x @ W
        feed_forward_norm  LayerNorm(model_dim)
        feed_forward       FeedForward(model_dim, ff_dim, dropout): expand, project (nn.Linear)

    causal=True lets position t attend to positions 0..t only (a language model).
    dropout applies to the attention output and to the feed-forward output.

    forward(x: (B, T, model_dim), lengths=None, key_padding_mask=None, cache=None) -> (B, T,
    model_dim)
        lengths / key_padding_mask: padding, as in SelfAttention; cache: SelfAttention's key/value
        cache for generation (the keys and values of earlier positions), when given.
    """

    def __init__(
        self,
        model_dim,
        num_heads,
        ff_dim,
        dropout=0.0,
        causal=False,
        norm_first=True,
        approximate="none",
    ):
        super().__init__()
        self.model_dim, self.num_heads, self.ff_dim = int(model_dim), int(num_heads), int(ff_dim)
        self.causal, self.norm_first = bool(causal), bool(norm_first)
        self.attention_norm = LayerNorm(model_dim)
        self.attention = SelfAttention(model_dim, num_heads, causal=causal)
        self.attention_dropout = Dropout(dropout)
        self.feed_forward_norm = LayerNorm(model_dim)
        self.feed_forward = FeedForward(model_dim, ff_dim, dropout, approximate)

    def _attend(self, x, lengths, key_padding_mask, cache):
        padding = {"lengths": lengths, "key_padding_mask": key_padding_mask}
        if cache is not None:
            padding["cache"] = cache
        return self.attention_dropout(self.attention(x, **padding))

    def forward(self, x, lengths=None, key_padding_mask=None, cache=None):
        if not isinstance(x, mg.Tensor):
            raise TypeError(
                f"TransformerBlock: expected a Tensor of shape (batch, time, {self.model_dim}); "
                f"got {type(x).__name__}"
            )
        if x.ndim != 3 or x.shape[-1] != self.model_dim:
            raise ShapeError(
                f"TransformerBlock: expected input of shape (batch, time, {self.model_dim}); "
                f"got {x.shape}"
            )
        x = residual(
            x,
            lambda y: self._attend(y, lengths, key_padding_mask, cache),
            self.attention_norm,
            self.norm_first,
        )
        return residual(x, self.feed_forward, self.feed_forward_norm, self.norm_first)

    def extra_repr(self):
        return (
            f"model_dim={self.model_dim}, num_heads={self.num_heads}, ff_dim={self.ff_dim}, "
            f"causal={self.causal}, norm_first={self.norm_first}"
        )


# fmt: off
__all__ = [
    "FeedForward", "PositionalEmbedding", "SinusoidalPositionalEncoding",
    "sinusoidal_encoding", "TransformerBlock",
]
# fmt: on
