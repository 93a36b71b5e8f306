"""The sentiment model of examples/sentiment/model.py written in PyTorch, for the benchmarks only.

    ids (B, T) --Embedding(V, 128, padding_idx=0)--> (B, T, 128)
               --BiLSTM(128 -> 2 x 128), padded outputs 0--> (B, T, 256)
               --pooling (mean | additive | dot | mhsa)--> (B, 256)
               --Linear(256, 2)--> logits (B, 2)

PyTorch runs on its fast CPU path (docs/imdb-reference.md): no pack_padded_sequence (whose LSTM
backward costs 9-10 s per step on this CPU). The forward direction is a plain unidirectional
nn.LSTM over the padded batch; it is causal, so its outputs at real tokens never see padding.
The backward direction is a second nn.LSTM over each sequence reversed within its own length
(a gather), reversed back the same way. Outputs at padded positions are set to 0. On the real
tokens this gives exactly what a packed bidirectional LSTM gives.

Parameter names and layouts are minigrad's, so `load_minigrad_state` copies a minigrad state
dict with one explicit renaming: minigrad's `encoder.<name>` / `encoder.<name>_reverse` (the
nn.LSTM names) become `encoder.forward_lstm.<name>` / `encoder.backward_lstm.<name>`.
"""

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

POOLINGS = ("mean", "additive", "dot", "mhsa")
QUERY_INIT_RANGE = 0.5  # learned queries start Uniform(-0.5, 0.5), as in the textbook


def real_token_mask(lengths, steps):
    """lengths (B,) -> bool (B, T), True at the real tokens."""
    return torch.arange(steps, device=lengths.device)[None, :] < lengths[:, None]


class ReversingBiLSTM(nn.Module):
    """Bidirectional LSTM over padded batches without packing (see the module docstring).

    forward(x (B, T, input_size), lengths (B,)) -> (B, T, 2 * hidden_size), 0 at padded positions.
    """

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.forward_lstm = nn.LSTM(input_size, hidden_size, batch_first=True)
        self.backward_lstm = nn.LSTM(input_size, hidden_size, batch_first=True)

    def forward(self, x, lengths):
        steps = x.shape[1]
        positions = torch.arange(steps)
        mask = real_token_mask(lengths, steps)
        # Position t of a row of length n reads position n-1-t; padded positions stay put. The
        # map is its own inverse, so the same index also reverses the outputs back.
        reverse = torch.where(mask, lengths[:, None] - 1 - positions, positions)  # (B, T)
        forward_out, _ = self.forward_lstm(x)
        reversed_in = x.gather(1, reverse[:, :, None].expand(-1, -1, x.shape[2]))
        reversed_out, _ = self.backward_lstm(reversed_in)
        backward_out = reversed_out.gather(
            1, reverse[:, :, None].expand(-1, -1, reversed_out.shape[2])
        )
        return torch.cat([forward_out, backward_out], dim=2) * mask[:, :, None]


class DotProductScore(nn.Module):
    """score_t = x_t . query, no scaling. query: (input_size,)."""

    def __init__(self, input_size):
        super().__init__()
        self.query = nn.Parameter(
            torch.empty(input_size).uniform_(-QUERY_INIT_RANGE, QUERY_INIT_RANGE)
        )

    def forward(self, x):
        return x @ self.query


class AdditiveScore(nn.Module):
    """score_t = v . tanh(x_t W + q U); weights used as x @ W (minigrad's layout), no biases."""

    def __init__(self, input_size):
        super().__init__()
        self.input_weight = nn.Parameter(
            nn.init.xavier_uniform_(torch.empty(input_size, input_size))
        )
        self.query_weight = nn.Parameter(
            nn.init.xavier_uniform_(torch.empty(input_size, input_size))
        )
        bound = math.sqrt(6.0 / (input_size + 1))
        self.score_vector = nn.Parameter(torch.empty(input_size).uniform_(-bound, bound))
        self.query = nn.Parameter(
            torch.empty(input_size).uniform_(-QUERY_INIT_RANGE, QUERY_INIT_RANGE)
        )

    def forward(self, x):
        return (
            torch.tanh(x @ self.input_weight + self.query @ self.query_weight) @ self.score_vector
        )


class AttentionPooling(nn.Module):
    """softmax over the real tokens of score(x) (padding gets -1e9), then the weighted sum."""

    def __init__(self, score):
        super().__init__()
        self.score = score

    def forward(self, x, lengths):
        scores = self.score(x).masked_fill(~real_token_mask(lengths, x.shape[1]), -1e9)
        weights = torch.softmax(scores, dim=1)
        return (weights.unsqueeze(1) @ x).squeeze(1)


class MeanPooling(nn.Module):
    def forward(self, x, lengths):
        mask = real_token_mask(lengths, x.shape[1]).to(x.dtype)
        return (x * mask[:, :, None]).sum(dim=1) / lengths[:, None].to(x.dtype)


class SelfAttention(nn.Module):
    """Multi-head self-attention, no biases, weights used as x @ W; only padded keys are masked.

    Uses F.scaled_dot_product_attention, PyTorch's fastest CPU kernel for it.
    """

    def __init__(self, model_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        for name in ("query", "key", "value", "output"):
            weight = nn.init.xavier_uniform_(torch.empty(model_dim, model_dim))
            setattr(self, f"{name}_weight", nn.Parameter(weight))

    def forward(self, x, lengths):
        batch, steps, model_dim = x.shape

        def split_heads(y):  # (B, T, D) -> (B, H, T, D / H)
            return y.reshape(batch, steps, self.num_heads, -1).transpose(1, 2)

        queries, keys, values = (
            split_heads(x @ weight)
            for weight in (self.query_weight, self.key_weight, self.value_weight)
        )
        allowed = real_token_mask(lengths, steps)[:, None, None, :]  # (B, 1, 1, T_key)
        context = F.scaled_dot_product_attention(queries, keys, values, attn_mask=allowed)
        return context.transpose(1, 2).reshape(batch, steps, model_dim) @ self.output_weight


class TorchSentimentModel(nn.Module):
    """SentimentModel in PyTorch; forward(ids (B, T) int64, lengths (B,) int64) -> logits (B, 2)."""

    def __init__(
        self, vocab_size, pool="dot", embedding_dim=128, hidden_size=128, num_heads=8, num_classes=2
    ):
        super().__init__()
        if pool not in POOLINGS:
            raise ValueError(f"pool must be one of {POOLINGS}; got {pool!r}")
        self.pool_name = pool
        features = 2 * hidden_size
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.encoder = ReversingBiLSTM(embedding_dim, hidden_size)
        if pool == "mean":
            self.pool = MeanPooling()
        elif pool == "additive":
            self.pool = AttentionPooling(AdditiveScore(features))
        elif pool == "dot":
            self.pool = AttentionPooling(DotProductScore(features))
        else:
            self.attention = SelfAttention(features, num_heads)
            self.pool = MeanPooling()
        self.classifier = nn.Linear(features, num_classes)
        # The textbook's (Paddle's) initialisation, as in the minigrad model; the LSTMs keep
        # PyTorch's default, which is already Uniform(+-1/sqrt(hidden)).
        with torch.no_grad():
            nn.init.xavier_uniform_(self.embedding.weight)
            self.embedding.weight[0] = 0
            nn.init.xavier_uniform_(self.classifier.weight)
            nn.init.zeros_(self.classifier.bias)

    def forward(self, ids, lengths):
        x = self.encoder(self.embedding(ids), lengths)
        if self.pool_name == "mhsa":
            x = self.attention(x, lengths)
        return self.classifier(self.pool(x, lengths))


def torch_name(minigrad_name):
    """minigrad parameter name -> this model's name (only the encoder's names differ)."""
    if not minigrad_name.startswith("encoder."):
        return minigrad_name
    name = minigrad_name[len("encoder.") :]
    if name.endswith("_reverse"):
        return "encoder.backward_lstm." + name[: -len("_reverse")]
    return "encoder.forward_lstm." + name


def load_minigrad_state(model, state):
    """Copy a minigrad state dict as numpy arrays ({name: array}) into `model`; every name must
    match."""
    converted = {
        torch_name(name): torch.from_numpy(np.array(value, dtype=np.float32))
        for name, value in state.items()
    }
    expected = set(model.state_dict())
    if set(converted) != expected:
        raise ValueError(
            f"state dict names do not match: missing {sorted(expected - set(converted))}, "
            f"unexpected {sorted(set(converted) - expected)}"
        )
    model.load_state_dict(converted)
