"""How long mg.viz.draw takes to turn a 50,000-node graph into DOT text.

    python benchmarks/viz.py                 # 50,000 drawn nodes
    python benchmarks/viz.py --nodes 200000

The graph is a recurrence h = tanh(h * w + b) inside an nn.Module, one Mul, Add and Tanh per
step, so every step draws 3 ops and 3 tensors. It is timed four ways: for scale, the engine's
own graph walk (the topological sort backward() uses) and mg.viz.trace (the graph as lists of
vertices and edges, where drawing starts); then draw() with clusters and a highlighted
parameter (so the path search runs over every edge), and draw() with the module collapsed
to one node. Rendering with `dot` is not timed: laying out 50,000 nodes takes
Graphviz itself minutes, and nobody reads such a picture; collapse= is the way to draw it.
"""

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import minigrad as mg  # noqa: E402
from minigrad import autograd, nn  # noqa: E402

NODES_PER_STEP = 6  # Mul, Add, Tanh and their three outputs


class Recurrence(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.weight = nn.Parameter(np.full(size, 0.5, np.float32))
        self.bias = nn.Parameter(np.full(size, 0.1, np.float32))

    def forward(self, h, steps):
        for _ in range(steps):
            h = (h * self.weight + self.bias).tanh()
        return h


def _edges(source):
    return sum(" -> " in line and "legend_" not in line for line in source.splitlines())


def best_of(repeats, function):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def main():
    mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=50_000, help="drawn nodes (default 50,000)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    steps = args.nodes // NODES_PER_STEP
    model = Recurrence(4)
    output = model(mg.ones(4), steps).sum()
    output.backward()

    walk, order = best_of(args.repeats, lambda: autograd.graph_nodes(output.grad_fn))
    traced, _ = best_of(args.repeats, lambda: mg.viz.trace(output))
    full, source = best_of(
        args.repeats,
        lambda: mg.viz.draw(output, params=model, show_grad=True, highlight=[model.weight]).source,
    )
    drawn = sum(1 for line in source.splitlines() if re.match(r"\s*(t|op|m)\d+ \[", line))
    collapsed, small = best_of(
        args.repeats, lambda: mg.viz.draw(output, params=model, collapse=Recurrence).source
    )

    print(
        f"graph: {len(order):,} ops, {drawn:,} drawn nodes, {_edges(source):,} edges, "
        f"{len(source) / 1e6:.1f} MB of DOT"
    )
    print(f"engine graph walk (topological sort):     {walk * 1e3:8.1f} ms")
    print(f"mg.viz.trace (vertices and edges):        {traced * 1e3:8.1f} ms")
    print(
        f"draw(...).source, highlight + show_grad:  {full * 1e3:8.1f} ms  "
        f"({full / walk:.0f}x the walk, {full / drawn * 1e6:.1f} us per node)"
    )
    print(
        f"draw(..., collapse=Recurrence).source:    {collapsed * 1e3:8.1f} ms  "
        f"({_edges(small)} edges drawn)"
    )


if __name__ == "__main__":
    main()
