"""The textbook's sentiment classifier: Embedding -> BiLSTM -> pooling -> Linear.

    ids (B, T) --Embedding(V, 128)--> (B, T, 128)
               --LSTM(128, 128, bidirectional)--> (B, T, 256), padded positions 0
               --pooling--> (B, 256)
               --Linear(256, 2)--> logits (B, 2)

Poolings (the chapter's four variants):
    mean      masked average over the real tokens (the baseline)
    additive  attention pooling with score v . tanh(X W + q U)
    dot       attention pooling with score X . q
    mhsa      8-head self-attention over the BiLSTM outputs, then masked mean

Initialisation follows the textbook's framework (Paddle): Embedding and Linear weights
Xavier-uniform, biases zero, LSTM weights Uniform(+-1/sqrt(hidden)). With PyTorch's N(0, 1)
embedding instead, the same model loses about 2 points of accuracy (docs/imdb-reference.md).
"""

from minigrad import nn

POOLINGS = ("mean", "additive", "dot", "mhsa")


class SentimentModel(nn.Module):
    def __init__(
        self,
        vocab_size,
        pool="dot",
        embedding_dim=128,
        hidden_size=128,
        num_heads=8,
        num_classes=2,
        padding_idx=0,
    ):
        super().__init__()
        if pool not in POOLINGS:
            raise ValueError(f"pool must be one of {POOLINGS}; got {pool!r}")
        self.pool_name = pool
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=padding_idx)
        self.encoder = nn.LSTM(embedding_dim, hidden_size, batch_first=True, bidirectional=True)
        features = 2 * hidden_size
        if pool == "mean":
            self.pool = nn.MeanPooling()
        elif pool == "additive":
            self.pool = nn.AttentionPooling(nn.AdditiveScore(features))
        elif pool == "dot":
            self.pool = nn.AttentionPooling(nn.DotProductScore(features))
        else:
            self.attention = nn.SelfAttention(features, num_heads=num_heads)
            self.pool = nn.MeanPooling()
        self.classifier = nn.Linear(features, num_classes)
        self._init_like_textbook(padding_idx)

    def _init_like_textbook(self, padding_idx):
        nn.init.xavier_uniform_(self.embedding.weight)
        if padding_idx is not None:
            self.embedding.weight.data[padding_idx] = 0
        nn.init.xavier_uniform_(self.classifier.weight)
        nn.init.zeros_(self.classifier.bias)

    def forward(self, ids, lengths, need_weights=True):
        """ids (B, T) int64 padded with 0, lengths (B,) -> logits (B, 2). need_weights=False
        (training and evaluation in train.py): the mhsa model makes no attention weights to
        show, and computes the mean of its self-attention's outputs directly (below)."""
        # = self.encoder(self.embedding(ids), lengths=lengths), with the LSTM's input projection
        # made once per distinct token of the batch (nn.lstm_embedded)
        x, _ = nn.lstm_embedded(self.encoder, self.embedding, ids, lengths=lengths)
        if self.pool_name == "mhsa":
            if not need_weights:
                # = self.pool(self.attention(x, lengths=lengths), lengths): the same mean, made
                # without an output per position (only Q and K are projected at every position)
                return self.classifier(nn.self_attention_mean(self.attention, x, lengths))
            x = self.attention(x, lengths=lengths)
        return self.classifier(self.pool(x, lengths))

    def attention_weights(self):
        """The pooling's weights of the last forward, (B, T) numpy, or None for mean pooling."""
        return getattr(self.pool, "last_weights", None)
