"""The tensor ops of issue 11, forward + backward: minigrad vs PyTorch, side by side.

    python benchmarks/ops.py               # every case, median of 15 interleaved rounds
    python benchmarks/ops.py --rounds 5 --markdown ops.md

Each framework runs in its own worker process (benchmarks/workers.py); the timed calls
alternate between them, so a change in machine load hits both alike. One timed call runs a
case 10 times: the op on float32 inputs that require grad, then backward of the sum of its
(float) output. torch runs on one thread unless --torch-threads says otherwise. The ratio
column is torch time / minigrad time: above 1, minigrad is faster. No op has a speed target;
the table is there to show that none is a Python loop over elements.
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from workers import serve, side_by_side, side_by_side_arguments, timed, write_text  # noqa: E402

CALLS_PER_TIMING = 10
ROWS = (256, 1024)
HEADS = (8, 4, 128, 64)  # batch, heads, positions, head size

# name -> (input shapes, call(B, *inputs)); B is the framework module, inputs require grad
CASES = {
    "erf (256, 1024)": ([ROWS], lambda B, x: x.erf()),
    "sin (256, 1024)": ([ROWS], lambda B, x: x.sin()),
    "clamp(x, low, high) (256, 1024)": (
        [ROWS, ROWS[1:], ROWS[1:]],
        lambda B, x, lo, hi: B.clamp(x, lo - 1, hi + 1),
    ),
    "maximum (256, 1024)": ([ROWS, ROWS], lambda B, a, b: B.maximum(a, b)),
    "std(dim=1) (256, 1024)": ([ROWS], lambda B, x: x.std(1)),
    "logsumexp(dim=1) (256, 1024)": ([ROWS], lambda B, x: x.logsumexp(1)),
    "norm(dim=1) (256, 1024)": ([ROWS], lambda B, x: x.norm(dim=1)),
    "amax(dim=1) (256, 1024)": ([ROWS], lambda B, x: x.amax(1)),
    "max(dim=1) (256, 1024)": ([ROWS], lambda B, x: x.max(1).values),
    "prod(dim=1) (256, 16)": ([(256, 16)], lambda B, x: x.prod(1)),
    "cumsum(dim=1) (256, 1024)": ([ROWS], lambda B, x: x.cumsum(1)),
    "split + cat (256, 1024)": ([ROWS], lambda B, x: B.cat(x.split(100, 1)[::-1], 1)),
    "repeat_interleave(2, 0) (256, 1024)": ([ROWS], lambda B, x: x.repeat_interleave(2, 0)),
    "tril (8, 4, 128, 128)": ([HEADS[:3] + (128,)], lambda B, x: x.tril()),
    "x[1, :, [0, 2]] (8, 512, 64)": ([(8, 512, 64)], lambda B, x: x[1, :, [0, 2]]),
    "index_select (256, 1024)": ([ROWS], lambda B, x: x.index_select(0, B.arange(0, 256, 3))),
    "sort(dim=1) (256, 1024)": ([ROWS], lambda B, x: x.sort(1).values),
    "topk(10, dim=1) (256, 1024)": ([ROWS], lambda B, x: x.topk(10, 1).values),
    "einsum bhqd,bhkd->bhqk": ([HEADS, HEADS], lambda B, q, k: B.einsum("bhqd,bhkd->bhqk", q, k)),
    "einsum bhqk,bhkd->bhqd": (
        [HEADS[:3] + (128,), HEADS],
        lambda B, p, v: B.einsum("bhqk,bhkd->bhqd", p, v),
    ),
    "bmm (32, 128, 64) @ (32, 64, 128)": (
        [(32, 128, 64), (32, 64, 128)],
        lambda B, a, b: B.bmm(a, b),
    ),
}


def worker(framework, threads):
    if framework == "torch":
        import torch

        torch.set_num_threads(threads)
        module, tensor = torch, torch.tensor
    else:
        import minigrad as mg

        mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
        module, tensor = mg, mg.tensor

    def handle(request):
        shapes, call = CASES[request["case"]]
        rng = np.random.default_rng(0)
        inputs = [tensor(rng.standard_normal(shape).astype(np.float32)) for shape in shapes]
        for x in inputs:
            x.requires_grad_(True)

        def step():
            for _ in range(CALLS_PER_TIMING):
                call(module, *inputs).sum().backward()
                for x in inputs:
                    x.grad = None

        return {"seconds": timed(step)}

    serve({"framework": framework}, handle)


def main():
    parser = side_by_side_arguments(
        __doc__,
        15,
        "on a shared 2-core machine torch's spinning OpenMP pool otherwise measures the load, not "
        "the op",
    )
    parser.add_argument("--markdown", help="also write the table to this file")
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.torch_threads)
    rows = [
        "| op (forward + backward, float32) | minigrad ms | torch ms | torch / minigrad |",
        "|---|---|---|---|",
    ]
    for case, ours, theirs in side_by_side(
        __file__, CASES, args.rounds, args.torch_threads, CALLS_PER_TIMING, 40
    ):
        rows.append(f"| {case} | {ours:.3f} | {theirs:.3f} | {theirs / ours:.2f} |")
    if args.markdown:
        write_text(args.markdown, "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
