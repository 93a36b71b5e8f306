"""nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerEncoder, their decoder
twins and nn.Transformer with PyTorch's layout, arguments and results, for code written
against torch.nn (and for loading its state dicts). The chapter's own Transformer block is
nn.TransformerBlock (nn/transformer.py), with the textbook's names and layout.

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

import copy
import math
import warnings

import numpy as np

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from minigrad.ops import check_device

from . import functional as F
from . import init
from .containers import ModuleList
from .layers import GELU, Dropout, ReLU
from .linear import Linear
from .module import Module, Parameter, parameter_dtype
from .transformer import LayerNorm, residual


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
                f"MultiheadAttention: embed_dim and num_heads must be > 0; got embed_dim={embed_dim} "
                f"and num_heads={num_heads}"
            )
        if embed_dim % num_heads:
            raise ValueError(
                f"MultiheadAttention: embed_dim must be divisible by num_heads; got embed_dim="
                f"{embed_dim}, num_heads={num_heads}"
            )
        if add_bias_kv or add_zero_attn:
            raise ValueError(
                "MultiheadAttention: add_bias_kv and add_zero_attn are not supported by minigrad"
            )
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"MultiheadAttention: dropout must be in [0, 1]; got {dropout}")
        check_device(device, "MultiheadAttention")
        dtype = parameter_dtype(dtype)
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
                    f"{name}: {label} must have shape (length, batch, {features}) (batch_first: "
                    f"(batch, length, {features}); unbatched: (length, {features})); got {tensor.shape}"
                )
            if tensor.dtype.kind != "f":
                raise DTypeError(f"{name}: {label} must be a float tensor; got {tensor.dtype}")
        if not query.ndim == key.ndim == value.ndim:
            raise ShapeError(
                f"{name}: query, key and value must all be batched (3-D) or all unbatched (2-D); got "
                f"shapes {query.shape}, {key.shape}, {value.shape}"
            )
        if is_causal and attn_mask is None:
            raise RuntimeError(
                f"{name}: is_causal is a hint that attn_mask is the causal mask; pass attn_mask too"
            )
        causal = (
            bool(is_causal) and key_padding_mask is None and not need_weights
        )  # torch's use of the hint
        if causal:
            replaced = _as_mask(
                attn_mask
            )  # torch still checks the dtype and dims of the mask the hint replaces
            if replaced.ndim not in (2, 3):
                raise ShapeError(
                    f"{name}: attn_mask must be 2-D (L, S) or 3-D (batch * num_heads, L, S); got "
                    f"shape {replaced.shape}"
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
                f"{name}: key and value must have the same length and batch as each other, and the "
                f"batch of query; got shapes {tuple(key.shape)}, {tuple(value.shape)} for query "
                f"{tuple(query.shape)} (batch first)"
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
                    f"({batch * self.num_heads}, {length}, {sources}) (L, S or batch * num_heads, L, S); "
                    f"got {tuple(attn_mask.shape)}"
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
                f"MultiheadAttention: float masks must have the query's dtype {np.dtype(dtype)}"
                f"{'' if need_weights else ' or float32'} (or be bool), as in torch; got {given}"
            )
        return merged.astype(dtype)

    def extra_repr(self):
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}, "
            f"batch_first={self.batch_first}"
        )


ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class TransformerEncoderLayer(Module):
    """torch.nn.TransformerEncoderLayer: self_attn (MultiheadAttention), then linear1 ->
    activation -> dropout -> linear2, each with dropout, a residual connection and a LayerNorm
    (norm1, norm2): post-norm by default, as torch (norm_first=True for pre-norm). torch's
    names, so state dicts move both ways. activation: "relu", "gelu" or a function.

    forward(src (S, N, E), or (N, S, E) with batch_first, or (S, E); src_mask=None,
    src_key_padding_mask=None, is_causal=False) -> same shape; the masks as in
    MultiheadAttention.
    """

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation="relu",
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        _build_layer(
            self,
            "TransformerEncoderLayer",
            d_model,
            nhead,
            dim_feedforward,
            dropout,
            activation,
            layer_norm_eps,
            batch_first,
            norm_first,
            bias,
            device,
            dtype,
            norms=2,
        )

    def _attend(self, x, mask, padding, is_causal):
        return self.dropout1(_attention(self.self_attn, x, x, mask, padding, is_causal))

    def _feed_forward(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = residual(
            src,
            lambda y: self._attend(y, src_mask, src_key_padding_mask, is_causal),
            self.norm1,
            self.norm_first,
        )
        return residual(x, self._feed_forward, self.norm2, self.norm_first)


class TransformerEncoder(Module):
    """torch.nn.TransformerEncoder: num_layers copies of encoder_layer (`layers.0`, `layers.1`
    ..., each with its own parameters), then `norm` if given.

    forward(src, mask=None, src_key_padding_mask=None, is_causal=None) -> same shape as src.
    is_causal=None: True when mask is generate_square_subsequent_mask(S), as torch detects it.

    torch's inference fast path, as far as a user sees it: with enable_nested_tensor (the
    default) and a layer it suits (post-norm, batch_first, biases, relu or gelu, one eps, an
    even number of heads; else torch's warning), a batched src with src_key_padding_mask (padding
    at the ends of the rows, unless mask_check=False) and no mask, in eval mode and with no
    gradient to record, torch packs the real tokens into a nested tensor and unpacks the result
    with zeros: the output at padded positions is 0 (then `norm`). The real tokens' vectors are
    the same either way; minigrad computes them as usual and writes the zeros.
    """

    def __init__(
        self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True
    ):
        super().__init__()
        self.layers = _copies("TransformerEncoder", "encoder_layer", encoder_layer, num_layers)
        self.num_layers = len(self.layers)
        self.norm = norm
        self.enable_nested_tensor = bool(enable_nested_tensor)
        self.mask_check = bool(mask_check)
        why_not = _why_no_fast_path(encoder_layer)
        if self.enable_nested_tensor and why_not:
            warnings.warn(
                f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why_not}",
                stacklevel=2,
            )
        self.use_nested_tensor = self.enable_nested_tensor and not why_not

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        output = src
        is_causal = _causal_hint(mask, is_causal, src, self.layers)
        for layer in self.layers:
            output = layer(
                output,
                src_mask=mask,
                src_key_padding_mask=src_key_padding_mask,
                is_causal=is_causal,
            )
        padded = self._padded_by_fast_path(src, mask, src_key_padding_mask)
        if padded is not None:
            output = output.masked_fill(mg.tensor(padded[..., None]), 0.0)
        return output if self.norm is None else self.norm(output)

    def _padded_by_fast_path(self, src, mask, padding):
        """The (N, S) bool array of the positions torch's fast path would zero, or None when it
        would not take that path (see the class docstring)."""
        if not (
            self.use_nested_tensor
            and self.layers
            and not self.layers[0].training
            and padding is not None
            and mask is None
            and isinstance(src, mg.Tensor)
            and src.ndim == 3
        ):
            return None
        if mg.is_grad_enabled() and (
            src.requires_grad or any(p.requires_grad for p in self.layers[0].parameters())
        ):
            return None
        padded = _as_mask(padding)
        padded = padded if padded.dtype == np.bool_ else padded != 0
        if padded.shape != src.shape[:2]:
            return None  # the layers have refused it already
        if self.mask_check and (np.diff(padded.astype(np.int8), axis=1) < 0).any():
            return None  # a real token after padding: torch's mask check declines the path
        return padded


class TransformerDecoderLayer(Module):
    """torch.nn.TransformerDecoderLayer: self-attention over the target (self_attn), attention
    from the target to the encoder's output `memory` (multihead_attn, cross-attention), then
    linear1 -> activation -> dropout -> linear2; each with dropout, a residual connection and a
    LayerNorm (norm1, norm2, norm3), post-norm by default (norm_first=True for pre-norm).
    torch's names, so state dicts move both ways.

    forward(tgt (T, N, E) or (N, T, E) with batch_first or (T, E); memory (S, N, E) ... alike;
    tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None,
    tgt_is_causal=False, memory_is_causal=False) -> same shape as tgt; the masks as in
    MultiheadAttention (tgt_mask: nn.Transformer.generate_square_subsequent_mask(T) for a
    decoder that must not see later targets).
    """

    def __init__(
        self,
        d_model,
        nhead,
        dim_feedforward=2048,
        dropout=0.1,
        activation="relu",
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        _build_layer(
            self,
            "TransformerDecoderLayer",
            d_model,
            nhead,
            dim_feedforward,
            dropout,
            activation,
            layer_norm_eps,
            batch_first,
            norm_first,
            bias,
            device,
            dtype,
            norms=3,
        )

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=False,
        memory_is_causal=False,
    ):
        def attend_to_itself(x):
            return self.dropout1(
                _attention(self.self_attn, x, x, tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            )

        def attend_to_memory(x):
            return self.dropout2(
                _attention(
                    self.multihead_attn,
                    x,
                    memory,
                    memory_mask,
                    memory_key_padding_mask,
                    memory_is_causal,
                )
            )

        def feed_forward(x):
            return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

        x = residual(tgt, attend_to_itself, self.norm1, self.norm_first)
        x = residual(x, attend_to_memory, self.norm2, self.norm_first)
        return residual(x, feed_forward, self.norm3, self.norm_first)


class TransformerDecoder(Module):
    """torch.nn.TransformerDecoder: num_layers copies of decoder_layer (`layers.0` ..., each with
    its own parameters), then `norm` if given.

    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False) -> tgt's shape.
    tgt_is_causal=None: True when tgt_mask is generate_square_subsequent_mask(T), as in torch.
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _copies("TransformerDecoder", "decoder_layer", decoder_layer, num_layers)
        self.num_layers = len(self.layers)
        self.norm = norm

    def forward(
        self,
        tgt,
        memory,
        tgt_mask=None,
        memory_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        output = tgt
        tgt_is_causal = _causal_hint(tgt_mask, tgt_is_causal, tgt, self.layers)
        for layer in self.layers:
            output = layer(
                output,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=tgt_is_causal,
                memory_is_causal=bool(memory_is_causal),
            )
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """torch.nn.Transformer, the encoder-decoder of "Attention Is All You Need" (Vaswani et al.,
    2017): `encoder` (num_encoder_layers TransformerEncoderLayers and a LayerNorm) reads src,
    `decoder` (num_decoder_layers TransformerDecoderLayers and a LayerNorm) reads tgt and
    attends to the encoder's output. Every matrix parameter starts Xavier-uniform, as torch's.
    custom_encoder / custom_decoder replace the stacks. No embeddings and no output layer:
    they are the user's, as in torch.

    forward(src (S, N, E), tgt (T, N, E) (batch first with batch_first=True; unbatched (S, E),
    (T, E)); src_mask, tgt_mask, memory_mask, src_key_padding_mask, tgt_key_padding_mask,
    memory_key_padding_mask, src_is_causal, tgt_is_causal, memory_is_causal) -> tgt's shape.
    """

    def __init__(
        self,
        d_model=512,
        nhead=8,
        num_encoder_layers=6,
        num_decoder_layers=6,
        dim_feedforward=2048,
        dropout=0.1,
        activation="relu",
        custom_encoder=None,
        custom_decoder=None,
        layer_norm_eps=1e-5,
        batch_first=False,
        norm_first=False,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        settings = dict(
            dim_feedforward=dim_feedforward,
            dropout=dropout,
            activation=activation,
            layer_norm_eps=layer_norm_eps,
            batch_first=batch_first,
            norm_first=norm_first,
            bias=bias,
            device=device,
            dtype=dtype,
        )
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(d_model, nhead, **settings),
                num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype),
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(d_model, nhead, **settings),
                num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype),
            )
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = int(d_model), int(nhead), bool(batch_first)

    def forward(
        self,
        src,
        tgt,
        src_mask=None,
        tgt_mask=None,
        memory_mask=None,
        src_key_padding_mask=None,
        tgt_key_padding_mask=None,
        memory_key_padding_mask=None,
        src_is_causal=None,
        tgt_is_causal=None,
        memory_is_causal=False,
    ):
        for name, x in (("src", src), ("tgt", tgt)):
            if not isinstance(x, mg.Tensor):
                raise TypeError(f"Transformer: {name} must be a Tensor; got {type(x).__name__}")
        batch_axis = 0 if self.batch_first else 1
        if src.ndim == 3 and (tgt.ndim != 3 or src.shape[batch_axis] != tgt.shape[batch_axis]):
            raise ShapeError(
                f"Transformer: src and tgt must have the same batch size (axis {batch_axis}); got shapes "
                f"{src.shape} and {tgt.shape}"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(
                f"Transformer: src and tgt must have d_model={self.d_model} features; got shapes "
                f"{src.shape} and {tgt.shape}"
            )
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) float mask: 0 on and below the diagonal, -inf above it (position i may attend
        to positions <= i), as torch's; added to the scores. With dtype=bool (mg.bool or
        Python's bool): True above the diagonal, as torch gives it (True = masked in nn.Transformer's
        masks)."""
        if isinstance(sz, bool) or not isinstance(sz, (int, np.integer)) or sz < 0:
            raise ArgumentError(
                f"generate_square_subsequent_mask: sz must be an integer >= 0; got {sz!r}"
            )
        check_device(device, "generate_square_subsequent_mask")
        later = np.triu(np.ones((int(sz), int(sz)), np.bool_), k=1)
        if dtype is not None and np.dtype(dtype) == np.bool_:
            return mg.tensor(later)
        return mg.tensor(np.where(later, -np.inf, 0).astype(parameter_dtype(dtype)))


def _build_layer(
    layer,
    name,
    d_model,
    nhead,
    dim_feedforward,
    dropout,
    activation,
    layer_norm_eps,
    batch_first,
    norm_first,
    bias,
    device,
    dtype,
    norms,
):
    """The parts of an encoder (norms=2) or decoder (norms=3, with multihead_attn) layer, in
    torch's order and under torch's names."""
    if isinstance(activation, str) and activation not in ACTIVATIONS:
        raise ArgumentError(
            f"{name}: activation must be 'relu', 'gelu' or a function; got {activation!r}"
        )
    if not isinstance(activation, str) and not callable(activation):
        raise TypeError(
            f"{name}: activation must be 'relu', 'gelu' or a function; got {type(activation).__name__}"
        )
    for attention in ("self_attn", "multihead_attn")[: norms - 1]:
        setattr(
            layer,
            attention,
            MultiheadAttention(
                d_model,
                nhead,
                dropout=dropout,
                bias=bias,
                batch_first=batch_first,
                device=device,
                dtype=dtype,
            ),
        )
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
    layer.norm_first = bool(norm_first)
    for k in range(1, norms + 1):
        setattr(layer, f"norm{k}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
    for k in range(1, norms + 1):
        setattr(layer, f"dropout{k}", Dropout(dropout))
    layer.activation = ACTIVATIONS[activation] if isinstance(activation, str) else activation


def _attention(attention, x, source, mask, padding, is_causal):
    """attention(x, source, source)'s output with need_weights=False (the fused kernel)."""
    return attention(
        x,
        source,
        source,
        attn_mask=mask,
        key_padding_mask=padding,
        need_weights=False,
        is_causal=is_causal,
    )[0]


def _causal_hint(mask, is_causal, x, layers):
    """is_causal for the layers of a TransformerEncoder or TransformerDecoder, as torch reads it:
    as given, or for None, whether mask is exactly the (T, T) causal mask for the length T of x
    (generate_square_subsequent_mask(T), float or bool), so that the layers may apply the
    triangle instead."""
    if is_causal is not None or mask is None or getattr(x, "ndim", 0) == 0:
        return bool(is_causal)
    batch_first = bool(layers) and getattr(
        getattr(layers[0], "self_attn", None), "batch_first", False
    )
    length = x.shape[1 if batch_first and x.ndim == 3 else 0]
    mask = _as_mask(mask)
    later = np.triu(np.ones((length, length), np.bool_), k=1)  # -inf, or True for a bool mask
    return np.array_equal(mask, np.where(later, -np.inf, 0.0).astype(mask.dtype))


def _why_no_fast_path(layer):
    """Why torch's TransformerEncoder would not take its nested-tensor path with this layer
    ('' when it would): torch's own conditions, in its order and words."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not layer.self_attn.batch_first:
        return f"{name}.self_attn.batch_first was not True(use batch_first for better inference performance)"
    if layer.self_attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if layer.activation not in (F.relu, F.gelu) and not isinstance(layer.activation, (ReLU, GELU)):
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


def _copies(name, argument, layer, num_layers):
    """ModuleList of num_layers deep copies of layer (each with its own parameters)."""
    if not isinstance(layer, Module):
        raise TypeError(f"{name}: {argument} must be a Module; got {type(layer).__name__}")
    if (
        isinstance(num_layers, bool)
        or not isinstance(num_layers, (int, np.integer))
        or num_layers < 0
    ):
        raise TypeError(f"{name}: num_layers must be an integer >= 0; got {num_layers!r}")
    return ModuleList([copy.deepcopy(layer) for _ in range(int(num_layers))])


def _as_mask(mask):
    """A mask as numpy (bool or float): masks take no gradient here."""
    array = mask.numpy() if isinstance(mask, mg.Tensor) else np.asarray(mask)
    if array.dtype != np.bool_ and array.dtype.kind != "f":
        raise DTypeError(
            f"MultiheadAttention: masks must be bool (True = masked) or float (added to the "
            f"scores); got {array.dtype}"
        )
    return array


__all__ = [
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "Transformer",
]
