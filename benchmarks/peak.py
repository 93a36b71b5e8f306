"""What the machine's cores can do: a large float32 matrix product (2048^3 by default) through
numpy's OpenBLAS on one thread and on every core, and through PyTorch when it is installed.

    python benchmarks/peak.py [--size 2048] [--repeats 5]

The training steps' achieved GFLOP/s (benchmarks/README.md) are read against these figures:
a product this large is as close to the cores' peak as these libraries get. A multiply-add
counts as 2 floating-point operations, so one product is 2 * size^3 of them. The first line
names OpenBLAS's kernels and OPENBLAS_CORETYPE (which chooses them when set): on the project's
AVX-512 machine its Haswell kernels run at half the speed of its SkylakeX ones
(benchmarks/README.md, "OpenBLAS's kernels").
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minigrad.kernels import _openblas, _threads  # noqa: E402  (OpenBLAS's threads)


def best_seconds(product, repeats):
    product()  # warm-up: threads started, pages touched
    times = []
    for _ in range(repeats):
        tick = time.perf_counter()
        product()
        times.append(time.perf_counter() - tick)
    return min(times)


def numpy_gflops(a, b, threads, repeats):
    set_threads, get_threads = _openblas.openblas_threads
    saved = get_threads()
    set_threads(threads)
    try:
        out = np.empty_like(a)
        return 2 * a.shape[0] ** 3 / best_seconds(lambda: np.matmul(a, b, out=out), repeats) / 1e9
    finally:
        set_threads(saved)


def torch_gflops(a, b, threads, repeats):
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        x, y = torch.from_numpy(a), torch.from_numpy(b)
        out = torch.empty_like(x)
        return 2 * a.shape[0] ** 3 / best_seconds(lambda: torch.mm(x, y, out=out), repeats) / 1e9
    finally:
        torch.set_num_threads(saved)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if _openblas.openblas_threads is None:
        raise SystemExit("peak.py needs numpy built with OpenBLAS (its thread count is set here)")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.size, args.size), dtype=np.float32)
    b = rng.standard_normal((args.size, args.size), dtype=np.float32)
    cores = _threads.cores()
    try:
        import torch  # noqa: F401

        has_torch = True
    except ImportError:
        has_torch = False
    chosen = os.environ.get("OPENBLAS_CORETYPE")
    print(
        f"float32 {args.size}^3 product, best of {args.repeats}, load {os.getloadavg()[0]:.1f}; "
        f"OpenBLAS's kernels {_openblas.openblas_core()} "
        + (f"(OPENBLAS_CORETYPE={chosen})" if chosen else "(its own choice)")
    )
    print("| library | threads | GFLOP/s |\n|---|---:|---:|")
    for threads in sorted({1, cores}):
        print(f"| numpy (OpenBLAS) | {threads} | {numpy_gflops(a, b, threads, args.repeats):.0f} |")
        if has_torch:
            print(f"| PyTorch | {threads} | {torch_gflops(a, b, threads, args.repeats):.0f} |")


if __name__ == "__main__":
    main()
