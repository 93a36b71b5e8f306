"""Draw the computation graph of one Transformer block in training, with the paths along which
backprop reaches the four attention matrices W_Q, W_K, W_V and W_O highlighted.

    python examples/language_model/block_graph.py

writes docs/images/transformer_block_graph.svg (and the .dot text it is drawn from): a
one-block character model (8 features, 2 heads, feed-forward 16) on 5 characters, its
cross-entropy loss and backward(). The ops are grouped by module; the feed-forward network
is collapsed into one box (Linear, GELU, Linear: nothing new there), the attention is drawn
op by op. Red edges lead from the loss to blocks.0.attention.query_weight, key_weight,
value_weight and output_weight; every tensor shows the norm of its gradient. Seeded, so a
rerun writes the same DOT text.
"""

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `examples.*` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

import minigrad as mg  # noqa: E402
from minigrad import nn  # noqa: E402
from examples.language_model.model import CharTransformer  # noqa: E402

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
MATRICES = ("query_weight", "key_weight", "value_weight", "output_weight")


def block_graph():
    """A one-block model on 5 characters, loss, backward -> its graph (graphviz.Digraph)."""
    mg.manual_seed(0)
    model = CharTransformer(
        vocab_size=6, context=8, model_dim=8, num_heads=2, num_layers=1, ff_dim=16
    )
    ids = np.array([[1, 2, 3, 4, 5]])
    targets = np.array([[2, 3, 4, 5, 1]])
    loss = model.loss(ids, targets)
    loss.name = "loss"
    loss.backward()
    attention = model.blocks[0].attention
    return mg.viz.draw(
        loss,
        params=model,
        show_grad=True,
        collapse=nn.FeedForward,
        highlight=[getattr(attention, name) for name in MATRICES],
    )


def main():
    IMAGES.mkdir(parents=True, exist_ok=True)
    graph = block_graph()
    with mg.io.atomic_file(IMAGES / "transformer_block_graph.dot") as file:
        file.write(graph.source.encode("utf-8"))
    written = mg.viz.render(graph, IMAGES / "transformer_block_graph.svg")
    print(f"wrote {written}")


if __name__ == "__main__":
    main()
