"""See how backprop reaches the four self-attention matrices W_Q, W_K, W_V and W_O.

    python examples/attention_graph.py

writes two pictures (and the DOT text they are drawn from) into docs/images/:

- attention_graph.svg: one self-attention layer on 3 tokens of 4 features, a squared-error
  loss, and backward() (run by mg.viz.replay, which notes the gradient the walk sends every
  tensor). The tensors carry the layer's own names (q, k, v, scores, weights, context) and
  their gradient with its sign: the leaves' (the tokens and the four matrices, what
  backward() keeps in .grad) and the ones in between. The scaling by 1/sqrt(4) is its own
  step before the Softmax, and the Reshape/Permute chains that split and merge the heads are
  folded into the edges they make (fold_views=True). The red edges are the paths along which
  the gradient flows from the loss back to query_weight, key_weight, value_weight and
  output_weight. The 3x3 attention weights (softmax(Q K^T / sqrt(4))) are printed in their
  node.
- sentiment_graph.svg: the IMDB sentiment model (Embedding -> bidirectional LSTM ->
  attention pooling -> Linear) on a batch of 2 short reviews, grouped by module, with the
  LSTM collapsed into one box: its hundreds of ops would otherwise fill the picture.

Both are seeded, so a rerun writes the same DOT text (tests/viz/test_drawing.py checks the
committed files against a fresh run).
"""

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `examples.sentiment` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
from minigrad import nn  # noqa: E402

IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"
ATTENTION_MATRICES = ("query_weight", "key_weight", "value_weight", "output_weight")


def attention_graph():
    """One self-attention layer on 3 tokens, forward, loss, backward -> its graph
    (graphviz.Digraph)."""
    mg.manual_seed(0)
    # the textbook's steps as separate nodes, for the picture
    attention = nn.SelfAttention(4, fused=False)
    tokens = mg.randn(1, 3, 4)  # (batch, tokens, features)
    tokens.name = "tokens"
    tokens.requires_grad_()  # in a real model they come from an embedding, which learns too
    target = mg.randn(1, 3, 4)
    target.name = "target"
    output = attention(tokens)
    loss = ((output - target) ** 2).mean()
    loss.name = "loss"
    matrices = [getattr(attention, name) for name in ATTENTION_MATRICES]
    steps = mg.viz.replay(loss, params=attention, highlight=matrices)  # = loss.backward()
    return mg.viz.draw(
        loss,
        params=attention,
        show_grad=steps,
        show_values=True,
        fold_views=True,
        highlight=matrices,
    )


def sentiment_graph():
    """The sentiment model on 2 short reviews, LSTM collapsed -> its module-level graph."""
    from examples.sentiment.model import SentimentModel

    mg.manual_seed(0)
    model = SentimentModel(vocab_size=20, pool="dot", embedding_dim=8, hidden_size=8)
    ids = mg.tensor(np.array([[3, 7, 1, 9, 4, 2], [5, 8, 6, 2, 0, 0]], dtype=np.int64))
    lengths = np.array([6, 4])
    labels = mg.tensor(np.array([1, 0], dtype=np.int64))
    loss = mg.cross_entropy(model(ids, lengths), labels)
    loss.name = "loss"
    loss.backward()
    return mg.viz.draw(loss, params=model, collapse=nn.LSTM, show_grad=True)


def main():
    IMAGES.mkdir(parents=True, exist_ok=True)
    for name, build in (("attention_graph", attention_graph), ("sentiment_graph", sentiment_graph)):
        graph = build()
        (IMAGES / f"{name}.dot").write_text(graph.source)
        written = mg.viz.render(graph, IMAGES / f"{name}.svg")
        drawn = [
            line
            for line in graph.source.splitlines()
            if " [label=" in line and "legend_" not in line
        ]
        print(f"wrote {written} ({len(drawn)} nodes)")


if __name__ == "__main__":
    main()
