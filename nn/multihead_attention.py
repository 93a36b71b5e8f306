"""torch.nn.MultiheadAttention (torch keeps it in torch/nn/modules/activation.py), with PyTorch's
layout, arguments and results, for code written against torch.nn (and for loading its state
dicts); nn.Transformer and its layers (nn/transformer.py) are built on it. The chapter's own
attention is nn.SelfAttention (nn/attention.py), with the textbook's names and layout.

It is the chapter's four matrices in torch's packed form: `in_proj_weight` (3E, E) stacks
W_Q, W_K, W_V as rows [0, E), [E, 2E), [2E, 3E), each applied as x @ W^T (nn.Linear's
layout, the transpose of SelfAttention's x @ W), and `out_proj` is W_O. Given keys and
values of other sizes (kdim, vdim), the three are separate: q_proj_weight, k_proj_weight,
v_proj_weight.

Masks keep torch's meanings, which differ from the rest of this package: a bool attn_mask or
key_padding_mask marks what may NOT be attended to (True = masked); a float mask is added to
the scores. With need_weights=True (torch's default) the scores, softmax, dropout and product
are separate graph nodes, as in torch's own path that returns weights, and the weights come
back as a tensor with a graph (averaged over the heads unless average_attn_weights=False);
with need_weights=False the fused attention kernel does the work.
"""

import math

import numpy as np

import minigrad as mg
from minigrad.errors import DTypeError, ShapeError

from . import functional as F
from . import init
from .linear import Linear
from .module import Module, Parameter, parameter_dtype

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """torch.nn.MultiheadAttention: softmax(Q K^T / sqrt(E / num_heads) + mask) V per head, heads
    concatenated, then out_proj.

    forward(query (L, N, E), key (S, N, kdim), value (S, N, vdim); (N, L, E) ... with
    batch_first=True; (L, E) ... unbatched) -> (output like query, weights (N, L, S) or
    (N, num_heads, L, S), or None with need_weights=False).
    key_padding_mask: (N, S) (S unbatched), bool (True = ignore that key) or float (added).
    attn_mask: (L, S) or (N * num_heads, L, S), bool (True = not allowed) or float (added).
    is_causal: torch's hint that attn_mask is the causal mask (it must then be given); as in
    torch, with need_weights=False and no key_padding_mask the causal triangle is applied in its
    place (attn_mask's values and size are not read), otherwise attn_mask is.
    dropout: on the attention weights, in training. add_bias_kv and add_zero_attn are not
    supported (ValueError). A query whose every key is masked gets NaN weights, as in torch.
    """

    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        bias=True,
        add_bias_kv=False,
        add_zero_attn=False,
        kdim=None,
        vdim=None,
        batch_first=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        for label, value in (("embed_dim", embed_dim), ("num_heads", num_heads)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"MultiheadAttention: {label} must be an integer; got {value!r}")
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                "MultiheadAttention: embed_dim and num_heads must be > 0; "
                f"got embed_dim={embed_dim} and num_heads={num_heads}"
            )
        if embed_dim % num_heads:
            raise ValueError(
                "MultiheadAttention: embed_dim must be divisible by num_heads; "
                f"got embed_dim={embed_dim}, num_heads={num_heads}"
            )
        if add_bias_kv or add_zero_attn:
            raise ValueError(
                "MultiheadAttention: add_bias_kv and add_zero_attn are not supported by minigrad"
            )
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1]; got {dropout}")
        dtype = parameter_dtype(dtype, device, "MultiheadAttention")
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, embed_dim // num_heads
        self.kdim, self.vdim = kdim or embed_dim, vdim or embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout, self.batch_first = float(dropout), bool(batch_first)
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(np.empty((3 * embed_dim, embed_dim), dtype))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.register_parameter("in_proj_weight", None)
            self.q_proj_weight = Parameter(np.empty((embed_dim, embed_dim), dtype))
            self.k_proj_weight = Parameter(np.empty((embed_dim, self.kdim), dtype))
            self.v_proj_weight = Parameter(np.empty((embed_dim, self.vdim), dtype))
        self.register_parameter(
            "in_proj_bias", Parameter(np.zeros(3 * embed_dim, dtype)) if bias else None
        )
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        self._reset_parameters()

    def _reset_parameters(self):
        """As torch: Xavier-uniform projections (the packed (3E, E) matrix as one), zero biases."""
        for weight in (
            self.in_proj_weight,
            self.q_proj_weight,
            self.k_proj_weight,
            self.v_proj_weight,
        ):
            if weight is not None:
                init.xavier_uniform_(weight)
        for bias in (self.in_proj_bias, self.out_proj.bias):
            if bias is not None:
                init.zeros_(bias)

    def _projections(self, query, key, value):
        """q, k, v (N, length, E) from batch-first inputs."""
        E = self.embed_dim
        b = self.in_proj_bias
        biases = (None, None, None) if b is None else (b[:E], b[E : 2 * E], b[2 * E :])
        if self._qkv_same_embed_dim:
            if query is key and key is value:  # self-attention: one product, then three views
                return F.linear(query, self.in_proj_weight, b).split(E, dim=-1)
            weights = (
                self.in_proj_weight[:E],
                self.in_proj_weight[E : 2 * E],
                self.in_proj_weight[2 * E :],
            )
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        return tuple(
            F.linear(x, w, bias) for x, w, bias in zip((query, key, value), weights, biases)
        )

    def forward(
        self,
        query,
        key,
        value,
        key_padding_mask=None,
        need_weights=True,
        attn_mask=None,
        average_attn_weights=True,
        is_causal=False,
    ):
        name = "MultiheadAttention"
        for label, tensor, features in (
            ("query", query, self.embed_dim),
            ("key", key, self.kdim),
            ("value", value, self.vdim),
        ):
            if not isinstance(tensor, mg.Tensor):
                raise TypeError(f"{name}: {label} must be a Tensor; got {type(tensor).__name__}")
            if tensor.ndim not in (2, 3) or tensor.shape[-1] != features:
                raise ShapeError(
                    f"{name}: {label} must have shape (length, batch, {features}) "
                    f"(batch_first: (batch, length, {features}); unbatched: (length, {features})); "
                    f"got {tensor.shape}"
                )
            if tensor.dtype.kind != "f":
                raise DTypeError(f"{name}: {label} must be a float tensor; got {tensor.dtype}")
        if not query.ndim == key.ndim == value.ndim:
            raise ShapeError(
                f"{name}: query, key and value must all be batched (3-D) or all unbatched (2-D); "
                f"got shapes {query.shape}, {key.shape}, {value.shape}"
            )
        if is_causal and attn_mask is None:
            raise RuntimeError(
                f"{name}: is_causal is a hint that attn_mask is the causal mask; pass attn_mask too"
            )
        # torch's use of the hint
        causal = bool(is_causal) and key_padding_mask is None and not need_weights
        if causal:
            # torch still checks the dtype and dims of the mask the hint replaces
            replaced = _as_mask(attn_mask)
            if replaced.ndim not in (2, 3):
                raise ShapeError(
                    f"{name}: attn_mask must be 2-D (L, S) or 3-D (batch * num_heads, L, S); "
                    f"got shape {replaced.shape}"
                )
            attn_mask = None
        unbatched, same = query.ndim == 2, query is key and key is value
        if unbatched or not self.batch_first:  # to (batch, length, E); unbatched: a batch of one

            def batch_first(x):
                return x.unsqueeze(0) if unbatched else x.transpose(0, 1)

            query = batch_first(query)
            key, value = (query, query) if same else (batch_first(key), batch_first(value))
            if unbatched and key_padding_mask is not None:
                key_padding_mask = _as_mask(key_padding_mask)[None]
        batch, length, sources = query.shape[0], query.shape[1], key.shape[1]
        if key.shape[:2] != value.shape[:2] or key.shape[0] != batch:
            raise ShapeError(
                f"{name}: key and value must have the same length and batch as each other, "
                f"and the batch of query; got shapes {tuple(key.shape)}, "
                f"{tuple(value.shape)} for query {tuple(query.shape)} (batch first)"
            )
        mask = self._mask(
            attn_mask, key_padding_mask, batch, length, sources, query.dtype, need_weights
        )
        heads, depth = self.num_heads, self.head_dim

        def split(x, steps):  # (N, steps, E) -> (N, heads, steps, head_dim)
            return x.reshape(batch, steps, heads, depth).transpose(1, 2)

        q, k, v = self._projections(query, key, value)
        q, k, v = split(q, length), split(k, sources), split(v, sources)
        p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:  # torch's path that returns the weights: each step its own node
            scores = (q * (1.0 / math.sqrt(depth))) @ k.transpose(-2, -1)
            if mask is not None:
                scores = (
                    scores + mask
                    if mask.dtype.kind == "f"
                    else scores.masked_fill(mask, float("-inf"))
                )
            weights = F.softmax(scores, dim=-1)
            if p:
                weights = F.dropout(weights, p)
            context = weights @ v
        else:
            allowed = None if mask is None else (mask if mask.dtype.kind == "f" else ~mask)
            context = F.scaled_dot_product_attention(
                q, k, v, attn_mask=allowed, dropout_p=p, is_causal=causal
            )
        output = self.out_proj(context.transpose(1, 2).reshape(batch, length, self.embed_dim))
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)
        if unbatched:
            return output.squeeze(0), None if weights is None else weights.squeeze(0)
        return (output if self.batch_first else output.transpose(0, 1)), weights

    def _mask(self, attn_mask, key_padding_mask, batch, length, sources, dtype, need_weights):
        """One mask (N or 1, H or 1, L, S): bool, True = masked (both masks bool), or float, added
        to the scores (either float: a bool one becomes 0 / -inf of the query's dtype, as torch
        converts it). As in torch, the float mask the two make must have the query's dtype, or
        be float32 with need_weights=False (what scaled_dot_product_attention takes)."""
        masks = []
        if attn_mask is not None:
            attn_mask = _as_mask(attn_mask)
            if attn_mask.ndim == 2 and attn_mask.shape == (length, sources):
                masks.append(attn_mask[None, None])
            elif attn_mask.ndim == 3 and attn_mask.shape == (
                batch * self.num_heads,
                length,
                sources,
            ):
                masks.append(attn_mask.reshape(batch, self.num_heads, length, sources))
            else:
                raise ShapeError(
                    f"MultiheadAttention: attn_mask must have shape ({length}, {sources}) or "
                    f"({batch * self.num_heads}, {length}, {sources}) (L, S or batch * num_heads, "
                    f"L, S); got {tuple(attn_mask.shape)}"
                )
        if key_padding_mask is not None:
            key_padding_mask = _as_mask(key_padding_mask)
            if key_padding_mask.shape != (batch, sources):
                raise ShapeError(
                    f"MultiheadAttention: key_padding_mask must have shape ({batch}, {sources}) "
                    f"(batch, S); got {tuple(key_padding_mask.shape)}"
                )
            masks.append(key_padding_mask[:, None, None, :])
        if not masks:
            return None
        if all(m.dtype == np.bool_ for m in masks):
            return masks[0] if len(masks) == 1 else masks[0] | masks[1]
        added = [
            m if m.dtype.kind == "f" else np.where(m, -np.inf, 0.0).astype(dtype) for m in masks
        ]
        merged = added[0] if len(added) == 1 else added[0] + added[1]
        if merged.dtype != dtype and (need_weights or merged.dtype != np.float32):
            given = ", ".join(
                f"{name} {m.dtype}"
                for name, m in (("attn_mask", attn_mask), ("key_padding_mask", key_padding_mask))
                if m is not None
            )
            raise DTypeError(
                "MultiheadAttention: float masks must have the query's dtype "
                f"{np.dtype(dtype)}{'' if need_weights else ' or float32'} (or be bool), "
                f"as in torch; got {given}"
            )
        return merged.astype(dtype)

    def extra_repr(self):
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}, "
            f"batch_first={self.batch_first}"
        )


def _as_mask(mask):
    """A mask as numpy (bool or float): masks take no gradient here."""
    array = mask.numpy() if isinstance(mask, mg.Tensor) else np.asarray(mask)
    if array.dtype != np.bool_ and array.dtype.kind != "f":
        raise DTypeError(
            "MultiheadAttention: masks must be bool (True = masked) or float "
            f"(added to the scores); got {array.dtype}"
        )
    return array
