"""Convolution and pooling, forward + backward: minigrad vs PyTorch, side by side.

    python benchmarks/conv.py              # every case, median of 9 interleaved rounds
    python benchmarks/conv.py --rounds 3

Each framework runs in its own worker process (benchmarks/workers.py); the timed calls alternate
between them, so a change in machine load hits both alike. One timed call runs a case 3 times
(forward and backward of every input, float32); torch runs on one thread unless --torch-threads says
otherwise. minigrad's convolution is numpy: an im2col copy and one OpenBLAS product each way
(minigrad/ops/conv.py); its pooling runs on Numba kernels (minigrad/kernels/pooling.py). The ratio
column is torch time / minigrad time: above 1, minigrad is faster.
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from workers import per_case_main, serve, timed  # noqa: E402

CALLS_PER_TIMING = 3

# name -> (input shape, weight shape or None, call(F, x, weight, bias))
CASES = {
    "conv2d (32, 3, 32, 32) 16x3x3 pad 1": (
        (32, 3, 32, 32),
        (16, 3, 3, 3),
        lambda F, x, w, b: F.conv2d(x, w, b, padding=1),
    ),
    "conv2d (32, 16, 32, 32) 32x3x3 pad 1": (
        (32, 16, 32, 32),
        (32, 16, 3, 3),
        lambda F, x, w, b: F.conv2d(x, w, b, padding=1),
    ),
    "conv2d (32, 32, 16, 16) 64x3x3 stride 2": (
        (32, 32, 16, 16),
        (64, 32, 3, 3),
        lambda F, x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
    ),
    "conv2d depthwise (32, 64, 16, 16) 3x3": (
        (32, 64, 16, 16),
        (64, 1, 3, 3),
        lambda F, x, w, b: F.conv2d(x, w, b, padding=1, groups=64),
    ),
    "conv1d TextCNN (64, 128, 200) 100x5": (
        (64, 128, 200),
        (100, 128, 5),
        lambda F, x, w, b: F.conv1d(x, w, b),
    ),
    "max_pool2d (32, 32, 32, 32) 2": (
        (32, 32, 32, 32),
        None,
        lambda F, x, w, b: F.max_pool2d(x, 2),
    ),
    "avg_pool2d (32, 32, 32, 32) 3 stride 2 pad 1": (
        (32, 32, 32, 32),
        None,
        lambda F, x, w, b: F.avg_pool2d(x, 3, 2, 1),
    ),
    "adaptive_avg_pool2d (32, 128, 8, 8) to 1": (
        (32, 128, 8, 8),
        None,
        lambda F, x, w, b: F.adaptive_avg_pool2d(x, 1),
    ),
    "adaptive_max_pool1d (64, 100, 196) to 1": (
        (64, 100, 196),
        None,
        lambda F, x, w, b: F.adaptive_max_pool1d(x, 1),
    ),
}


def worker(framework, threads):
    if framework == "torch":
        import torch

        torch.set_num_threads(threads)
        F, leaf = torch.nn.functional, lambda array: torch.tensor(array, requires_grad=True)
    else:
        import minigrad as mg
        import minigrad.nn.functional as F

        mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
        leaf = lambda array: mg.tensor(array, requires_grad=True)  # noqa: E731

    def handle(request):
        input_shape, weight_shape, call = CASES[request["case"]]
        rng = np.random.default_rng(0)
        x = leaf(rng.standard_normal(input_shape).astype(np.float32))
        weight = bias = None
        if weight_shape is not None:
            weight = leaf(rng.standard_normal(weight_shape).astype(np.float32) * 0.1)
            bias = leaf(rng.standard_normal(weight_shape[0]).astype(np.float32))

        def step():
            for _ in range(CALLS_PER_TIMING):
                call(F, x, weight, bias).sum().backward()

        return {"seconds": timed(step)}

    serve({"framework": framework}, handle)


def main():
    per_case_main(
        __file__,
        __doc__,
        CASES,
        worker,
        CALLS_PER_TIMING,
        46,
        rounds=9,
        why_one_thread="minigrad's numpy work is on one thread but for the OpenBLAS products",
    )


if __name__ == "__main__":
    main()
