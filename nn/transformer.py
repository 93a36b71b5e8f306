"""torch.nn.modules.transformer: nn.TransformerEncoderLayer, nn.TransformerEncoder, their decoder
twins and nn.Transformer with PyTorch's layout, arguments and results, for code written against
torch.nn (and for loading its state dicts). Each layer's attention is an nn.MultiheadAttention
(nn/multihead_attention.py), so masks keep torch's meanings: a bool mask marks what may NOT be
attended to (True = masked), a float mask is added to the scores. The chapter's own Transformer
block is nn.TransformerBlock (nn/transformer_block.py), with the textbook's names and layout.
"""

import copy
import warnings

import numpy as np

import minigrad as mg
from minigrad.errors import ArgumentError, ShapeError
from minigrad.ops import check_device

from . import functional as F
from . import init
from .activation import GELU, ReLU
from .containers import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module, parameter_dtype
from .multihead_attention import MultiheadAttention, _as_mask
from .normalization import LayerNorm
from .transformer_block import residual

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class _TransformerLayer(Module):
    """What TransformerEncoderLayer (norms = 2) and TransformerDecoderLayer (norms = 3, with
    multihead_attn) share: torch's arguments, and the parts in torch's order under torch's names."""

    norms = None

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
        layer = "TransformerEncoderLayer" if self.norms == 2 else "TransformerDecoderLayer"
        dtype = parameter_dtype(dtype, device, layer)
        if isinstance(activation, str) and activation not in ACTIVATIONS:
            raise ArgumentError(
                f"{layer}: activation must be 'relu', 'gelu' or a function; got {activation!r}"
            )
        if not isinstance(activation, str) and not callable(activation):
            raise TypeError(
                f"{layer}: activation must be 'relu', 'gelu' or a function; "
                f"got {type(activation).__name__}"
            )
        factory = dict(device=device, dtype=dtype)
        attention = dict(dropout=dropout, bias=bias, batch_first=batch_first, **factory)
        for name in ("self_attn", "multihead_attn")[: self.norms - 1]:
            setattr(self, name, MultiheadAttention(d_model, nhead, **attention))
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = bool(norm_first)
        for k in range(1, self.norms + 1):
            setattr(self, f"norm{k}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        for k in range(1, self.norms + 1):
            setattr(self, f"dropout{k}", Dropout(dropout))
        self.activation = ACTIVATIONS[activation] if isinstance(activation, str) else activation


class TransformerEncoderLayer(_TransformerLayer):
    """torch.nn.TransformerEncoderLayer: self_attn (MultiheadAttention), then linear1 ->
    activation -> dropout -> linear2, each with dropout, a residual connection and a LayerNorm
    (norm1, norm2): post-norm by default, as torch (norm_first=True for pre-norm). torch's
    names, so state dicts move both ways. activation: "relu", "gelu" or a function.

    forward(src (S, N, E), or (N, S, E) with batch_first, or (S, E); src_mask=None,
    src_key_padding_mask=None, is_causal=False) -> same shape; the masks as in
    MultiheadAttention.
    """

    norms = 2

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
                "enable_nested_tensor is True, but self.use_nested_tensor is False because "
                f"{why_not}",
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


class TransformerDecoderLayer(_TransformerLayer):
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

    norms = 3

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
            padding, is_causal = memory_key_padding_mask, memory_is_causal
            attended = _attention(self.multihead_attn, x, memory, memory_mask, padding, is_causal)
            return self.dropout2(attended)

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
        dtype = parameter_dtype(dtype, device, "Transformer")
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
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype),
            )
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(d_model, nhead, **settings),
                num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype),
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
                f"Transformer: src and tgt must have the same batch size (axis {batch_axis}); "
                f"got shapes {src.shape} and {tgt.shape}"
            )
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(
                f"Transformer: src and tgt must have d_model={self.d_model} features; "
                f"got shapes {src.shape} and {tgt.shape}"
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
        Python's bool): True above the diagonal, as torch gives it (True = masked in
        nn.Transformer's masks)."""
        if isinstance(sz, bool) or not isinstance(sz, (int, np.integer)) or sz < 0:
            raise ArgumentError(
                f"generate_square_subsequent_mask: sz must be an integer >= 0; got {sz!r}"
            )
        check_device(device, "generate_square_subsequent_mask")
        later = np.triu(np.ones((int(sz), int(sz)), np.bool_), k=1)
        if dtype is not None and np.dtype(dtype) == np.bool_:
            return mg.tensor(later)
        return mg.tensor(np.where(later, -np.inf, 0).astype(parameter_dtype(dtype)))


def _attention(attention, x, source, mask, padding, is_causal):
    """attention(x, source, source)'s output with need_weights=False (the fused kernel)."""
    settings = dict(attn_mask=mask, key_padding_mask=padding, is_causal=is_causal)
    return attention(x, source, source, need_weights=False, **settings)[0]


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
        return (
            f"{name}.self_attn.batch_first was not True"
            "(use batch_first for better inference performance)"
        )
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


# fmt: off
__all__ = [
    "TransformerEncoderLayer", "TransformerEncoder",
    "TransformerDecoderLayer", "TransformerDecoder", "Transformer",
]
# fmt: on
