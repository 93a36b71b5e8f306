"""The character language model of examples/language_model/model.py written in PyTorch.

Same modules under the same names (blocks.2.attention.query_weight ...), the same maths
(pre-norm blocks, exact GELU, causal attention, x @ W for the four attention matrices), so a
minigrad state dict loads into it with torch.from_numpy and nothing else. Attention runs as a
PyTorch user would write it today, F.scaled_dot_product_attention(is_causal=True) (a fused
kernel); attention="explicit" spells out softmax(Q K^T / sqrt(d) + causal mask) V instead.
"""

import math

import torch
from torch import nn
from torch.nn import functional as F

ATTENTION = ("sdpa", "explicit")


class TorchSelfAttention(nn.Module):
    def __init__(self, model_dim, num_heads, attention="sdpa"):
        super().__init__()
        self.num_heads, self.head_dim, self.attention = num_heads, model_dim // num_heads, attention
        for name in ("query", "key", "value", "output"):
            setattr(self, f"{name}_weight", nn.Parameter(torch.empty(model_dim, model_dim)))

    def forward(self, x):
        batch, steps, model_dim = x.shape

        def heads(y):  # (B, T, D) -> (B, H, T, dh)
            return y.view(batch, steps, self.num_heads, self.head_dim).transpose(1, 2)

        query, key, value = (
            heads(x @ self.query_weight),
            heads(x @ self.key_weight),
            heads(x @ self.value_weight),
        )
        if self.attention == "sdpa":
            context = F.scaled_dot_product_attention(query, key, value, is_causal=True)
        else:
            scores = query @ key.transpose(-1, -2) / math.sqrt(self.head_dim)
            later = torch.ones(steps, steps, dtype=torch.bool, device=x.device).triu(1)
            context = scores.masked_fill(later, float("-inf")).softmax(-1) @ value
        return context.transpose(1, 2).reshape(batch, steps, model_dim) @ self.output_weight


class TorchFeedForward(nn.Module):
    def __init__(self, model_dim, ff_dim):
        super().__init__()
        self.expand, self.project = nn.Linear(model_dim, ff_dim), nn.Linear(ff_dim, model_dim)

    def forward(self, x):
        return self.project(F.gelu(self.expand(x)))


class TorchBlock(nn.Module):
    def __init__(self, model_dim, num_heads, ff_dim, attention="sdpa"):
        super().__init__()
        self.attention_norm = nn.LayerNorm(model_dim)
        self.attention = TorchSelfAttention(model_dim, num_heads, attention)
        self.feed_forward_norm = nn.LayerNorm(model_dim)
        self.feed_forward = TorchFeedForward(model_dim, ff_dim)

    def forward(self, x):
        x = x + self.attention(self.attention_norm(x))
        return x + self.feed_forward(self.feed_forward_norm(x))


class TorchCharTransformer(nn.Module):
    """forward(ids (B, T) int64) -> logits (B, T, vocab_size); learned positions only."""

    def __init__(
        self,
        vocab_size,
        context=128,
        model_dim=128,
        num_heads=4,
        num_layers=4,
        ff_dim=512,
        attention="sdpa",
    ):
        super().__init__()
        if attention not in ATTENTION:
            raise ValueError(f"attention must be one of {ATTENTION}; got {attention!r}")
        self.token_embedding = nn.Embedding(vocab_size, model_dim)
        self.positions = nn.Module()
        self.positions.weight = nn.Parameter(torch.empty(context, model_dim))
        self.blocks = nn.ModuleList(
            [TorchBlock(model_dim, num_heads, ff_dim, attention) for _ in range(num_layers)]
        )
        self.final_norm = nn.LayerNorm(model_dim)
        self.head = nn.Linear(model_dim, vocab_size)

    def forward(self, ids):
        x = self.token_embedding(ids) + self.positions.weight[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.final_norm(x))

    def loss(self, ids, targets):
        logits = self(ids)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def from_minigrad(state, config, attention="sdpa"):
    """A TorchCharTransformer holding the weights of a minigrad state dict (name -> numpy array);
    config: the minigrad model's config dict."""
    if config.get("positions", "learned") != "learned" or config.get("dropout", 0.0):
        raise ValueError("the PyTorch twin has learned positions and no dropout")
    model = TorchCharTransformer(
        config["vocab_size"],
        config["context"],
        config["model_dim"],
        config["num_heads"],
        config["num_layers"],
        config["ff_dim"],
        attention,
    )
    model.load_state_dict({name: torch.from_numpy(value.copy()) for name, value in state.items()})
    return model
