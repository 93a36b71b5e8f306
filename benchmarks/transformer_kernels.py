"""The pieces of a Transformer training step, minigrad against PyTorch 2.13 CPU, one by one.

    python benchmarks/transformer_kernels.py                  # the default model's shapes
    python benchmarks/transformer_kernels.py --repeats 50 --markdown results.md

Each row times one op forward, or forward and backward, on the shapes of the default
language model (batch 32, context 128, 128 features, 4 heads, feed-forward 512): LayerNorm
(minigrad's fused kernel, torch.nn.functional.layer_norm), GELU (exact), the feed-forward
matrix products and the causal attention of one block. Each framework runs in its own
process, timed steps alternate between them (benchmarks/workers.py), the median is reported
with the machine's load average (the machine is shared).
"""

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from workers import Worker, interleaved_times, serve, write_text

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BATCH, STEPS, FEATURES, HEADS, FF = 32, 128, 128, 4, 512
CASES = (
    "layer_norm forward",
    "layer_norm forward+backward",
    "gelu forward",
    "gelu forward+backward",
    "linear 128->512 forward+backward",
    "causal attention forward+backward",
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--markdown")
    parser.add_argument("--worker", choices=("minigrad", "torch"), help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def inputs():
    rng = np.random.default_rng(0)
    return {
        "x": rng.standard_normal((BATCH, STEPS, FEATURES)).astype(np.float32),
        "hidden": rng.standard_normal((BATCH, STEPS, FF)).astype(np.float32),
        "weight": rng.standard_normal(FEATURES).astype(np.float32),
        "bias": rng.standard_normal(FEATURES).astype(np.float32),
        "linear": (rng.standard_normal((FF, FEATURES)) / np.sqrt(FEATURES)).astype(np.float32),
        "heads": rng.standard_normal((3, BATCH, HEADS, STEPS, FEATURES // HEADS)).astype(
            np.float32
        ),
    }


def minigrad_cases():
    import minigrad as mg
    from minigrad.ops.activations import gelu
    from minigrad.ops.normalization import layer_norm
    from minigrad.nn.linear import linear

    mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
    data = inputs()
    x, hidden = (
        mg.tensor(data["x"], requires_grad=True),
        mg.tensor(data["hidden"], requires_grad=True),
    )
    weight, bias = (
        mg.tensor(data["weight"], requires_grad=True),
        mg.tensor(data["bias"], requires_grad=True),
    )
    matrix = mg.tensor(data["linear"], requires_grad=True)
    mg.manual_seed(0)
    attention = mg.nn.SelfAttention(FEATURES, HEADS, causal=True)

    def backward(y):
        y.backward(mg.ones(*y.shape))

    return {
        "layer_norm forward": lambda: layer_norm(x, FEATURES, weight, bias),
        "layer_norm forward+backward": lambda: backward(layer_norm(x, FEATURES, weight, bias)),
        "gelu forward": lambda: gelu(hidden),
        "gelu forward+backward": lambda: backward(gelu(hidden)),
        "linear 128->512 forward+backward": lambda: backward(linear(x, matrix)),
        "causal attention forward+backward": lambda: backward(attention(x)),
    }


def torch_cases():
    import torch
    from torch.nn import functional as F

    data = inputs()
    leaf = lambda a: torch.tensor(a, requires_grad=True)  # noqa: E731
    x, hidden, weight, bias, matrix = (
        leaf(data[k]) for k in ("x", "hidden", "weight", "bias", "linear")
    )
    query, key, value = (leaf(h) for h in data["heads"])

    def backward(y):
        y.backward(torch.ones_like(y))

    def attention():  # the four projections and the fused causal attention, as the twin model
        q = (x @ matrix[:FEATURES].T).view(BATCH, STEPS, HEADS, -1).transpose(1, 2)
        k = (x @ matrix[FEATURES : 2 * FEATURES].T).view(BATCH, STEPS, HEADS, -1).transpose(1, 2)
        v = (
            (x @ matrix[2 * FEATURES : 3 * FEATURES].T)
            .view(BATCH, STEPS, HEADS, -1)
            .transpose(1, 2)
        )
        context = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return context.transpose(1, 2).reshape(BATCH, STEPS, FEATURES) @ matrix[3 * FEATURES :].T

    return {
        "layer_norm forward": lambda: F.layer_norm(x, (FEATURES,), weight, bias),
        "layer_norm forward+backward": lambda: backward(F.layer_norm(x, (FEATURES,), weight, bias)),
        "gelu forward": lambda: F.gelu(hidden),
        "gelu forward+backward": lambda: backward(F.gelu(hidden)),
        "linear 128->512 forward+backward": lambda: backward(F.linear(x, matrix)),
        "causal attention forward+backward": lambda: backward(attention()),
    }


def run_worker(framework):
    import time

    cases = minigrad_cases() if framework == "minigrad" else torch_cases()

    def handle(request):
        wall, cpu = time.perf_counter(), time.process_time()
        cases[request["case"]]()
        return {"seconds": time.perf_counter() - wall, "cpu": time.process_time() - cpu}

    serve({"pid": os.getpid()}, handle)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return run_worker(args.worker)
    workers = {
        name: Worker([sys.executable, __file__, "--worker", name]) for name in ("minigrad", "torch")
    }
    rows = []
    try:
        for case in CASES:
            load = os.getloadavg()[0]
            times = interleaved_times(
                {name: (worker, {"case": case}) for name, worker in workers.items()},
                args.warmup,
                args.repeats,
            )
            mine, theirs = np.median(times["minigrad"]), np.median(times["torch"])
            rows.append(
                f"| {case} | {mine * 1e3:.2f} | {theirs * 1e3:.2f} | {mine / theirs:.2f} | "
                f"{load:.1f} |"
            )
            print(rows[-1], flush=True)
    finally:
        for worker in workers.values():
            worker.close()
    table = (
        "\n".join(
            [
                f"shapes: batch {BATCH}, {STEPS} steps, {FEATURES} features, {HEADS} heads, "
                f"feed-forward {FF}; median of {args.repeats} interleaved calls, each framework in "
                "its own process",
                "",
                "| op | minigrad ms | PyTorch ms | minigrad / PyTorch | load average |",
                "|---|---|---|---|---|",
            ]
            + rows
        )
        + "\n"
    )
    print("\n" + table)
    if args.markdown:
        write_text(args.markdown, f"`python benchmarks/{Path(__file__).name}`\n\n{table}")


if __name__ == "__main__":
    main()
