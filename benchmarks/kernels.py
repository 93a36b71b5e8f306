"""Kernel speed: minigrad's Numba kernels vs their numpy twins vs PyTorch (when importable).

    python benchmarks/kernels.py              # every case, then the cold-start compile times
    python benchmarks/kernels.py --no-compile # skip the cold-start part (it takes ~1 min)
    python benchmarks/kernels.py --budget 0 --no-compile  # one timed call each: a quick check

Each case is timed as the median of several calls after one warm-up call; ratios
above 1 mean the Numba kernel is faster. The Numba and numpy columns call
minigrad.kernels.<file>.<name> and minigrad.kernels.reference.<name> directly.
The torch column is the closest PyTorch equivalent, noted per case (autograd
where PyTorch has no single kernel to call).

Cold start: a fresh process imports minigrad.kernels and calls every kernel once
(serial and parallel sizes), first with an empty Numba cache (NUMBA_CACHE_DIR set
to a new folder), then again with the cache that run filled.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from minigrad.kernels import (  # noqa: E402
    adam,
    attention,
    batched_matmul,
    cross_entropy,
    embedding,
    reference,
    softmax,
)

# Start Numba's thread pool before torch loads its own OpenMP runtime (otherwise Numba runs on
# one thread, see kernels/_numba_threads.configure_threads).
softmax.softmax_forward(np.zeros((512, 128), np.float32))

try:
    import torch
except ImportError:
    torch = None

F32 = np.float32


def median_ms(function, budget_s=1.5, max_calls=50):
    """Median ms of calls after a warm-up: budget_s seconds of them, at least 3 (0: one)."""
    function()  # warm-up: compilation, page faults of first allocations, other pools going idle
    times = []
    start = time.perf_counter()
    least = 3 if budget_s > 0 else 1
    while len(times) < max_calls and (len(times) < least or time.perf_counter() - start < budget_s):
        t = time.perf_counter()
        function()
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e3


# ---------------------------------------------------------------- cases
# Each returns (name, numba_fn, numpy_fn, torch_fn or None, torch note).


def case_matmul_2d(rng):
    a, b = rng.standard_normal((128, 512), dtype=F32), rng.standard_normal((512, 1024), dtype=F32)
    tfn = None
    if torch:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        tfn = lambda: ta @ tb  # noqa: E731
    yield (
        "matmul 128x512 @ 512x1024",
        lambda: batched_matmul.matmul(a, b),
        lambda: reference.matmul(a, b),
        tfn,
        "torch.matmul",
    )


def case_attention_matmuls(rng):
    q = rng.standard_normal((1024, 256, 32), dtype=F32)
    k_t = rng.standard_normal((1024, 32, 256), dtype=F32)
    grad = rng.standard_normal((1024, 256, 256), dtype=F32)
    tq = tk = tg = None
    if torch:
        tq, tk, tg = torch.from_numpy(q), torch.from_numpy(k_t), torch.from_numpy(grad)
    yield (
        "bmm 1024 x 256x32 @ 32x256",
        lambda: batched_matmul.matmul(q, k_t),
        lambda: reference.matmul(q, k_t),
        (lambda: torch.matmul(tq, tk)) if torch else None,
        "torch.matmul",
    )
    yield (
        "  grad_a: g @ b^T",
        lambda: batched_matmul.matmul_grad_a(grad, k_t),
        lambda: reference.matmul_grad_a(grad, k_t),
        (lambda: torch.matmul(tg, tk.transpose(-1, -2))) if torch else None,
        "torch.matmul",
    )
    yield (
        "  grad_b: a^T @ g",
        lambda: batched_matmul.matmul_grad_b(q, grad),
        lambda: reference.matmul_grad_b(q, grad),
        (lambda: torch.matmul(tq.transpose(-1, -2), tg)) if torch else None,
        "torch.matmul",
    )


def case_masked_softmax(rng):
    batch, heads, length, scale = 128, 8, 256, 1 / np.sqrt(32)
    scores = rng.standard_normal((batch, heads, length, length), dtype=F32)
    lengths = rng.integers(1, length + 1, batch)
    # True = keep
    mask = (np.arange(length)[None, :] < lengths[:, None]).reshape(batch, 1, 1, length)
    grad = rng.standard_normal(scores.shape, dtype=F32)

    def run(module, key_stop=None, mask=mask):
        empty = np.empty(scores.shape[:-1], bool)
        y = module.softmax_forward(scores, scale, mask, key_stop, 0.0, empty)
        return module.softmax_backward(y, grad, scale, mask, key_stop, empty)

    # row i may attend to keys 0..i: per-row limits, no (L, L) mask
    causal = np.arange(1, length + 1)
    torch_mask = torch_causal = None
    if torch:
        ts, tgrad = torch.from_numpy(scores), torch.from_numpy(grad)
        torch_mask = torch.from_numpy(~mask)
        torch_causal = torch.ones(length, length, dtype=torch.bool).triu(1)

        def autograd(masked_out):
            x = ts.detach().requires_grad_()
            torch.softmax((x * scale).masked_fill(masked_out, float("-inf")), dim=-1).backward(
                tgrad
            )
            return x.grad

    yield (
        "masked softmax fwd+bwd (1024,256,256)",
        lambda: run(softmax),
        lambda: run(reference),
        (lambda: autograd(torch_mask)) if torch else None,
        "autograd softmax(masked_fill(x*s, -inf))",
    )
    yield (
        "  causal (per-row key limits)",
        lambda: run(softmax, causal, None),
        lambda: run(reference, causal, None),
        (lambda: autograd(torch_causal)) if torch else None,
        "autograd softmax(masked_fill(x*s, -inf))",
    )


def case_attention(rng):
    """The MHSA layer's attention: 128 reviews, 8 heads of 32, 256 tokens, IMDB-like lengths."""
    batch, heads, length, depth = 128, 8, 256, 32
    q, k, v, grad = (
        rng.standard_normal((batch, heads, length, depth), dtype=F32) for _ in range(4)
    )
    lengths = np.clip(rng.lognormal(5.4, 0.6, batch).astype(int), 5, length)
    scale = 1 / np.sqrt(depth)

    def run(module):
        out, weights = module.attention_forward(q, k, v, scale, lengths[:, None])
        return module.attention_backward(q, k, v, weights, grad, scale, lengths[:, None])

    def steps():  # the same with the step-by-step kernels (what fused=False runs)
        mask = (np.arange(length) < lengths[:, None])[:, None, None, :]
        scores = batched_matmul.matmul(q, k.transpose(0, 1, 3, 2))
        empty = np.empty(scores.shape[:-1], bool)
        weights = softmax.softmax_forward(scores, scale, mask, None, 0.0, empty)
        batched_matmul.matmul(weights, v)
        grad_weights = batched_matmul.matmul_grad_a(grad, v)
        batched_matmul.matmul_grad_b(weights, grad)
        grad_scores = softmax.softmax_backward(weights, grad_weights, scale, mask, None, empty)
        batched_matmul.matmul(grad_scores, k)
        batched_matmul.matmul_grad_b(grad_scores, q)

    tfn = None
    if torch:
        tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
        tmask, tgrad = (
            torch.from_numpy((np.arange(length) < lengths[:, None])[:, None, None, :]),
            torch.from_numpy(grad),
        )

        def tfn():
            leaves = [t.detach().requires_grad_() for t in (tq, tk, tv)]
            torch.nn.functional.scaled_dot_product_attention(*leaves, attn_mask=tmask).backward(
                tgrad
            )

    yield (
        "attention fwd+bwd (128,8,256,32), lengths",
        lambda: run(attention),
        lambda: run(reference),
        tfn,
        "F.scaled_dot_product_attention + backward",
    )
    yield (
        "  the same in separate kernels (fused=False)",
        steps,
        lambda: run(reference),
        tfn,
        "F.scaled_dot_product_attention + backward",
    )


def case_cross_entropy(rng):
    for rows, classes in ((128, 2), (4096, 1000)):
        logits = rng.standard_normal((rows, classes), dtype=F32)
        target = rng.integers(0, classes, rows)

        def run(module, logits=logits, target=target):
            loss, probs, count = module.cross_entropy_forward(logits, target)
            return module.cross_entropy_backward(probs, target, -100, count, 1.0)

        tfn = None
        if torch:
            tl, tt = torch.from_numpy(logits), torch.from_numpy(target)

            def tfn(tl=tl, tt=tt):
                x = tl.detach().requires_grad_()
                torch.nn.functional.cross_entropy(x, tt).backward()
                return x.grad

        yield (
            f"cross-entropy fwd+bwd ({rows}, {classes})",
            lambda run=run: run(cross_entropy),
            lambda run=run: run(reference),
            tfn,
            "autograd F.cross_entropy",
        )


def case_adam(rng):
    size = 1 << 20
    param, grad = rng.standard_normal(size, dtype=F32), rng.standard_normal(size, dtype=F32)
    states = {
        name: [param.copy(), np.zeros(size, F32), np.zeros(size, F32)]
        for name in ("numba", "numpy")
    }
    steps = {"numba": 0, "numpy": 0}

    def run(module, name):
        steps[name] += 1
        p, m, v = states[name]
        module.adam_update(p, grad, m, v, steps[name], 1e-3, 0.9, 0.999, 1e-8, 0.0)

    tfn = None
    if torch:
        tparam = torch.from_numpy(param.copy()).requires_grad_()
        tparam.grad = torch.from_numpy(grad)
        optimizer = torch.optim.Adam([tparam], lr=1e-3)
        tfn = optimizer.step
    yield (
        "adam update, 1M float32 params",
        lambda: run(adam, "numba"),
        lambda: run(reference, "numpy"),
        tfn,
        "torch.optim.Adam.step (defaults)",
    )


def case_embedding(rng):
    rows, dim = 80_000, 128
    indices = rng.integers(0, rows, (128, 256))
    grad = rng.standard_normal((128, 256, dim), dtype=F32)
    tfn = None
    if torch:
        ti, tg = torch.from_numpy(indices), torch.from_numpy(grad)
        tfn = lambda: torch.ops.aten.embedding_dense_backward(tg, ti, rows, -1, False)  # noqa: E731
    yield (
        "embedding backward 128x256 -> 80000x128",
        lambda: embedding.embedding_backward(indices, grad, rows),
        lambda: reference.embedding_backward(indices, grad, rows),
        tfn,
        "aten.embedding_dense_backward",
    )


CASES = [
    case_matmul_2d,
    case_attention_matmuls,
    case_masked_softmax,
    case_attention,
    case_cross_entropy,
    case_adam,
    case_embedding,
]


def run_cases(budget_s):
    rng = np.random.default_rng(0)
    header = (
        f"{'case':42s} {'numba ms':>9s} {'numpy ms':>9s} {'torch ms':>9s} "
        f"{'numpy/numba':>12s} {'torch/numba':>12s}"
    )
    print(header)
    print("-" * len(header))
    notes = {}
    for case in CASES:
        for name, numba_fn, numpy_fn, torch_fn, note in case(rng):
            t_numba = median_ms(numba_fn, budget_s)
            t_numpy = median_ms(numpy_fn, budget_s)
            t_torch = median_ms(torch_fn, budget_s) if torch_fn else float("nan")
            notes[name.strip()] = note
            print(
                f"{name:42s} {t_numba:9.3f} {t_numpy:9.3f} {t_torch:9.3f} "
                f"{t_numpy / t_numba:12.2f} {t_torch / t_numba:12.2f}",
                flush=True,
            )
    if torch:
        print("\ntorch column: " + "; ".join(sorted(set(notes.values()))))


# ---------------------------------------------------------------- cold start

COMPILE_PROBE = """
import json, sys, time
start = time.perf_counter()
import numpy as np
import minigrad.kernels as k
imported = time.perf_counter()
rng = np.random.default_rng(0)
for dtype in [np.dtype(name) for name in sys.argv[1].split(",")]:
    for rows in (4, 1024):  # serial, then parallel drivers (1024 x 128 >= PARALLEL_MIN_SIZE)
        x = rng.standard_normal((rows, 128)).astype(dtype)
        target = rng.integers(0, 128, rows)
        y = k.softmax_forward(x, 0.5, np.ones((1, 128), bool), np.arange(1, rows + 1))
        k.softmax_backward(y, x, 0.5, np.ones((1, 128), bool), np.arange(1, rows + 1))
        q = x.reshape(rows // 4, 4, 8, 16)
        out, weights = k.attention_forward(q, q, q, 0.25, np.full(rows // 4, 8)[:, None], 0)
        k.attention_backward(q, q, q, weights, out, 0.25, np.full(rows // 4, 8)[:, None], 0)
        k.log_softmax_backward(k.log_softmax_forward(x), x)
        loss, probs, count = k.cross_entropy_forward(x, target)
        k.cross_entropy_backward(probs, target, -100, count, 1.0)
        moments = (np.zeros_like(x), np.zeros_like(x))
        k.adam_update(x.copy(), x, *moments, 1, 1e-3, 0.9, 0.999, 1e-8, 0.0)
        k.embedding_backward(target, x, 128)
        k.matmul(np.ones((rows * 16, 2, 2), dtype), np.ones((2, 2), dtype))
print(json.dumps({"import_s": imported - start, "total_s": time.perf_counter() - start}))
"""


def cold_start():
    print(
        "\ncold start: fresh process, import minigrad.kernels + first call of every kernel "
        "(serial and parallel variants)"
    )
    with tempfile.TemporaryDirectory(prefix="minigrad-bench-cache-") as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(ROOT))
        env.pop("MINIGRAD_KERNELS", None)
        for dtypes in ("float32", "float32,float64"):
            for state in ("empty cache", "warm cache"):
                output = subprocess.run(
                    [sys.executable, "-c", COMPILE_PROBE, dtypes],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                report = json.loads(output.strip().splitlines()[-1])
                print(
                    f"  {dtypes:16s} {state:12s} total {report['total_s']:6.2f} s "
                    f"(of which import {report['import_s']:.2f} s)",
                    flush=True,
                )
            for child in Path(cache).iterdir():  # empty the cache again for the next dtype set
                shutil.rmtree(child)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--no-compile", action="store_true", help="skip the cold-start compile timing"
    )
    parser.add_argument("--budget", type=float, default=1.5, help="seconds of timed calls per case")
    args = parser.parse_args()
    from minigrad.kernels import tune_malloc

    tune_malloc()  # freed arrays kept for reuse, as train.py asks
    import numba

    from minigrad.kernels._numba_threads import thread_summary

    torch_threads = f" ({torch.get_num_threads()} threads)" if torch else ""
    print(
        f"numpy {np.__version__}, numba {numba.__version__} ({thread_summary()}), torch "
        f"{torch.__version__ if torch else 'not installed'}{torch_threads}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}\n"
    )
    run_cases(args.budget)
    print(f"\nload average after the cases: {os.getloadavg()[0]:.2f}")
    if not args.no_compile:
        cold_start()


if __name__ == "__main__":
    main()
