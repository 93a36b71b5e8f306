"""A small GPT-style character language model built from minigrad's nn blocks.

    ids (B, T) --token_embedding--> (B, T, D) --positions--> + position vectors
        --blocks: num_layers x TransformerBlock(D, num_heads, ff_dim, causal=True)-->
        --final_norm: LayerNorm(D)--> --head: Linear(D, vocab)--> logits (B, T, vocab)

Causal attention lets position t see characters 0..t only, so the logits at position t are
a prediction of character t + 1, and one forward pass trains every position of a context at
once (teacher forcing). The default size is the one the issue names for a laptop CPU: 4 blocks
of 4 heads, 128 features, feed-forward 512, context 128 (0.85 M parameters with IMDB's ~180
characters).
"""

import numpy as np

import minigrad as mg
from minigrad import nn

DEFAULTS = dict(
    context=128,
    model_dim=128,
    num_heads=4,
    num_layers=4,
    ff_dim=512,
    dropout=0.0,
    positions="learned",
)
CONFIG_KEYS = ("vocab_size",) + tuple(DEFAULTS)
EMBEDDING_STD = 0.02


class CharTransformer(nn.Module):
    """forward(ids: (B, T) int64, caches=None) -> logits (B, T, vocab_size), T <= context.

    caches: one key/value cache per block (from `new_caches()`), for generation: the ids are
    then the next characters after those the caches already hold, and positions continue
    from there.
    """

    def __init__(
        self,
        vocab_size,
        context=128,
        model_dim=128,
        num_heads=4,
        num_layers=4,
        ff_dim=512,
        dropout=0.0,
        positions="learned",
    ):
        super().__init__()
        if positions not in ("learned", "sinusoidal"):
            raise ValueError(f"positions must be 'learned' or 'sinusoidal'; got {positions!r}")
        self.config = dict(
            vocab_size=int(vocab_size),
            context=int(context),
            model_dim=int(model_dim),
            num_heads=int(num_heads),
            num_layers=int(num_layers),
            ff_dim=int(ff_dim),
            dropout=float(dropout),
            positions=positions,
        )
        self.context = int(context)
        self.token_embedding = nn.Embedding(vocab_size, model_dim)
        if positions == "learned":
            self.positions = nn.PositionalEmbedding(context, model_dim)
        else:
            self.positions = nn.SinusoidalPositionalEncoding(model_dim, max_length=context)
        self.blocks = nn.ModuleList(
            [
                nn.TransformerBlock(model_dim, num_heads, ff_dim, dropout=dropout, causal=True)
                for _ in range(num_layers)
            ]
        )
        self.final_norm = nn.LayerNorm(model_dim)
        self.head = nn.Linear(model_dim, vocab_size)
        # Small embeddings, as GPT-2: N(0, 0.02) instead of nn.Embedding's N(0, 1). With N(0, 1) the
        # learned position vectors start as loud as the characters, and the default run ends at
        # 1.73 nats/char instead of 1.61 (README.md, the language model results).
        nn.init.normal_(self.token_embedding.weight, std=EMBEDDING_STD)
        if positions == "learned":
            nn.init.normal_(self.positions.weight, std=EMBEDDING_STD)

    def forward(self, ids, caches=None):
        ids = ids if isinstance(ids, mg.Tensor) else mg.tensor(np.asarray(ids))
        if ids.ndim != 2:
            raise ValueError(
                f"CharTransformer: expected ids of shape (batch, time); got {ids.shape}"
            )
        if caches is not None and (
            len(caches) != len(self.blocks) or len({cache_length(cache) for cache in caches}) != 1
        ):
            raise ValueError(
                "CharTransformer: expected one cache per block "
                f"({len(self.blocks)}), all of one length (from new_caches()); "
                f"got {len(caches)} holding {[cache_length(cache) for cache in caches]} positions"
            )
        offset = 0 if caches is None else cache_length(caches[0])
        if offset + ids.shape[1] > self.context:
            raise ValueError(
                f"CharTransformer: {offset} cached + {ids.shape[1]} new positions exceed the "
                f"context of {self.context}"
            )
        x = self.positions(self.token_embedding(ids), offset)
        for index, block in enumerate(self.blocks):
            x = block(x, cache=None if caches is None else caches[index])
        return self.head(self.final_norm(x))

    def loss(self, ids, targets):
        """Mean cross-entropy (nats per character) of predicting targets (B, T) from ids (B, T)."""
        logits = self(ids)
        return mg.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), np.asarray(targets).reshape(-1)
        )

    def new_caches(self):
        """Empty key/value caches, one per block, for generation (needs nn.KVCache)."""
        return [nn.KVCache() for _ in self.blocks]

    def attention_weights(self):
        """The attention weights of the last forward, per block: a list of (B, H, T, T) arrays."""
        return [block.attention.last_weights for block in self.blocks]


def state_shapes(
    vocab_size, context, model_dim, num_heads, num_layers, ff_dim, dropout=0.0, positions="learned"
):
    """The state_dict a CharTransformer of these settings has, as name -> shape, without building
    it (train.py checks a checkpoint's arrays against it before allocating a model). num_heads
    and dropout change no shape: each head takes model_dim // num_heads of the projections."""
    shapes = {"token_embedding.weight": (vocab_size, model_dim)}
    if positions == "learned":  # sinusoidal positions are computed, not stored
        shapes["positions.weight"] = (context, model_dim)
    for index in range(num_layers):
        block = f"blocks.{index}."
        for norm in ("attention_norm", "feed_forward_norm"):
            shapes[f"{block}{norm}.weight"] = shapes[f"{block}{norm}.bias"] = (model_dim,)
        for projection in ("query", "key", "value", "output"):
            shapes[f"{block}attention.{projection}_weight"] = (model_dim, model_dim)
        shapes[f"{block}feed_forward.expand.weight"] = (ff_dim, model_dim)
        shapes[f"{block}feed_forward.expand.bias"] = (ff_dim,)
        shapes[f"{block}feed_forward.project.weight"] = (model_dim, ff_dim)
        shapes[f"{block}feed_forward.project.bias"] = (model_dim,)
    shapes["final_norm.weight"] = shapes["final_norm.bias"] = (model_dim,)
    shapes["head.weight"], shapes["head.bias"] = (vocab_size, model_dim), (vocab_size,)
    return shapes


def cache_length(cache):
    """How many positions a key/value cache holds."""
    return len(cache)


def parameter_count(model):
    return sum(p.numel() for p in model.parameters())
