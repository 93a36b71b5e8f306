"""Loss functions and pad, forward + backward: minigrad vs PyTorch, side by side.

    python benchmarks/losses.py            # every case, median of 15 interleaved rounds
    python benchmarks/losses.py --rounds 5

Each framework runs in its own worker process (benchmarks/workers.py); the timed calls alternate
between them, so a change in machine load hits both alike. One timed call runs a case 10 times
(forward and backward, float32); torch runs on one thread unless --torch-threads says otherwise
(minigrad's ops here are numpy, one thread, apart from its Numba kernels). The ratio column is torch
time / minigrad time: above 1, minigrad is faster. The plain cross-entropy case is the fused kernel
every training example uses; the others run the general path (log_softmax + NLLLoss node, ...).
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from workers import per_case_main, serve, timed  # noqa: E402

CALLS_PER_TIMING = 10

# name -> (input shape, call(F, x, arrays)) where arrays holds the other operands as numpy arrays
CASES = {
    "cross_entropy (128, 2) plain": ((128, 2), lambda F, x, a: F.cross_entropy(x, a["ids"])),
    "cross_entropy (4096, 512) plain": ((4096, 512), lambda F, x, a: F.cross_entropy(x, a["ids"])),
    "cross_entropy (4096, 512) smoothing 0.1": (
        (4096, 512),
        lambda F, x, a: F.cross_entropy(x, a["ids"], label_smoothing=0.1),
    ),
    "cross_entropy (32, 512, 64) ignore_index": (
        (32, 512, 64),
        lambda F, x, a: F.cross_entropy(x, a["ids"], ignore_index=0),
    ),
    "nll_loss (4096, 512) weighted": (
        (4096, 512),
        lambda F, x, a: F.nll_loss(x, a["ids"], a["weight"]),
    ),
    "bce_with_logits (4096, 512) pos_weight": (
        (4096, 512),
        lambda F, x, a: F.binary_cross_entropy_with_logits(
            x, a["probabilities"], pos_weight=a["weight"]
        ),
    ),
    "mse_loss (4096, 512)": ((4096, 512), lambda F, x, a: F.mse_loss(x, a["probabilities"])),
    "pad reflect (32, 64, 256)": (
        (32, 64, 256),
        lambda F, x, a: F.pad(x, (3, 3), mode="reflect").sum(),
    ),
}


def operands(shape, seed=0):
    """The input, and the other operands: class ids (along dim 1), probabilities of the input's
    shape, weights of the last dim's size (the class weights of the 2-d cases, pos_weight)."""
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal(shape).astype(np.float32),
        {
            "ids": rng.integers(0, shape[1], shape[:1] + shape[2:]),
            "probabilities": rng.random(shape).astype(np.float32),
            "weight": rng.uniform(0.5, 2.0, shape[-1]).astype(np.float32),
        },
    )


def worker(framework, threads):
    if framework == "torch":
        import torch

        torch.set_num_threads(threads)
        F, tensor, constant = torch.nn.functional, torch.tensor, torch.from_numpy
    else:
        import minigrad as mg
        import minigrad.nn.functional as F

        mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
        tensor, constant = mg.tensor, mg.tensor

    def handle(request):
        shape, call = CASES[request["case"]]
        x_array, arrays = operands(tuple(shape))
        others = {key: constant(value) for key, value in arrays.items()}
        x = tensor(x_array)
        x.requires_grad_(True)

        def step():
            for _ in range(CALLS_PER_TIMING):
                call(F, x, others).backward()
                x.grad = None

        return {"seconds": timed(step)}

    serve({"framework": framework}, handle)


def main():
    per_case_main(
        __file__,
        __doc__,
        CASES,
        worker,
        CALLS_PER_TIMING,
        44,
        rounds=15,
        why_one_thread="on a shared 2-core machine torch's spinning OpenMP pool otherwise measures "
        "the load, not the loss",
    )


if __name__ == "__main__":
    main()
