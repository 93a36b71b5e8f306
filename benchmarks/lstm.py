"""LSTM layer: minigrad against PyTorch 2.13 CPU, in one run.

    python benchmarks/lstm.py                        # all cases: table to stdout and to
                                                     # benchmarks/README-lstm.md
    python benchmarks/lstm.py --repeats 5 --no-packed

Cases (batch 128, length 256, input 128, hidden 128, float32, batch_first):
- bidirectional, forward + backward (sum of the outputs), all sequences 256 long:
  minigrad vs PyTorch's fast path (a padded tensor, no packing);
- the same with right-padded sequences of random lengths 64..256: minigrad with
  `lengths=` (it skips padded steps) vs PyTorch without packing (computes all 256
  steps; its reverse direction would also need each sequence flipped within its
  length to be correct, not done here) and PyTorch with pack_padded_sequence (what
  gives the same numbers as minigrad; PyTorch's slow path on CPU);
- unidirectional, forward only under no_grad.

Each framework runs in its own subprocess and they get their steps alternately
(benchmarks/workers.py), so a change in machine load hits both alike. Reported: the
median of --repeats steps after --warmup steps. Threads: the defaults of each framework,
printed with the table. minigrad runs each LSTM layer on two threads (its two
directions, or two halves of the batch for one direction), each with single-threaded
OpenBLAS (minigrad/kernels/_threads.py, run_tasks); the rest of minigrad uses
OpenBLAS's own threads. PyTorch uses its intra-op threads.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from workers import Worker, interleaved_times, serve, timed, write_text

REPO = Path(__file__).resolve().parents[1]
BATCH, STEPS, INPUT, HIDDEN = 128, 256, 128, 128

CASES = {
    "bi_train": "bidirectional, forward+backward, all lengths 256",
    "bi_train_lengths": "bidirectional, forward+backward, lengths 64..256",
    "uni_forward": "unidirectional, forward only (no_grad)",
}


def batch_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, STEPS, INPUT)).astype(np.float32)
    lengths = rng.integers(64, STEPS + 1, BATCH)
    lengths[0] = STEPS
    return x, lengths


# -- workers ---------------------------------------------------------------------------------


class MinigradWorker:
    def __init__(self):
        sys.path.insert(0, str(REPO))
        import minigrad as mg
        from minigrad import nn

        mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
        self.mg = mg
        mg.manual_seed(0)
        self.bi = nn.LSTM(INPUT, HIDDEN, batch_first=True, bidirectional=True)
        self.uni = nn.LSTM(INPUT, HIDDEN, batch_first=True)
        x, self.lengths = batch_data()
        self.x = mg.tensor(x, requires_grad=True)

    def run(self, case):
        if case == "uni_forward":
            with self.mg.no_grad():
                self.uni(self.x)
            return
        output, _ = self.bi(self.x, lengths=self.lengths if case == "bi_train_lengths" else None)
        output.sum().backward()

    def threads(self):
        from minigrad.kernels import _numba_threads, _threads

        if _threads.use_two_threads:
            layer = (
                "each LSTM layer on 2 threads (the 2 directions, or 2 halves of the batch) "
                "x 1 OpenBLAS thread"
            )
        else:
            layer = "LSTM directions one after the other"
        return f"{_numba_threads.thread_summary()}; {layer}"


class TorchWorker:
    def __init__(self):
        import torch

        self.torch = torch
        torch.manual_seed(0)
        self.bi = torch.nn.LSTM(INPUT, HIDDEN, batch_first=True, bidirectional=True)
        self.uni = torch.nn.LSTM(INPUT, HIDDEN, batch_first=True)
        x, lengths = batch_data()
        self.x = torch.from_numpy(x).requires_grad_()
        self.lengths = torch.from_numpy(lengths)

    def run(self, case):
        torch = self.torch
        if case == "uni_forward":
            with torch.no_grad():
                self.uni(self.x)
            return
        if case == "bi_train_packed":
            packed = torch.nn.utils.rnn.pack_padded_sequence(
                self.x, self.lengths, batch_first=True, enforce_sorted=False
            )
            output, _ = self.bi(packed)
            output, _ = torch.nn.utils.rnn.pad_packed_sequence(
                output, batch_first=True, total_length=STEPS
            )
        else:  # bi_train and bi_train_lengths: the padded batch, no packing (the fast path)
            output, _ = self.bi(self.x)
        output.sum().backward()

    def threads(self):
        return (
            f"torch {self.torch.get_num_threads()} (interop {self.torch.get_num_interop_threads()})"
        )


def worker_main(framework):
    """Serve the parent: one timed step of the requested case per request."""
    worker = MinigradWorker() if framework == "minigrad" else TorchWorker()
    serve(
        {"threads": worker.threads()},
        lambda request: {"seconds": timed(lambda: worker.run(request["case"]))},
    )


# -- the run ---------------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--packed-repeats", type=int, default=2, help="PyTorch with packing is slow: fewer steps"
    )
    parser.add_argument(
        "--no-packed", action="store_true", help="skip PyTorch with pack_padded_sequence"
    )
    parser.add_argument("--markdown", default=str(REPO / "benchmarks" / "README-lstm.md"))
    parser.add_argument("--worker", choices=("minigrad", "torch"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args.worker)

    started, load_before = time.perf_counter(), os.getloadavg()[0]
    workers = {
        name: Worker([sys.executable, __file__, "--worker", name]) for name in ("minigrad", "torch")
    }
    try:
        times = {}
        for case in CASES:
            times.update(
                interleaved_times(
                    {
                        (framework, case): (worker, {"case": case})
                        for framework, worker in workers.items()
                    },
                    args.warmup,
                    args.repeats,
                )
            )
        if not args.no_packed:
            times.update(
                interleaved_times(
                    {("torch", "bi_train_packed"): (workers["torch"], {"case": "bi_train_packed"})},
                    1,
                    args.packed_repeats,
                )
            )
    finally:
        for worker in workers.values():
            worker.close()
    median = {pair: float(np.median(values)) for pair, values in times.items()}

    lines = [
        f"LSTM layer, batch {BATCH}, length {STEPS}, input {INPUT}, hidden {HIDDEN}, float32, "
        f"batch_first; median of {args.repeats} steps after {args.warmup} warm-up steps, the two "
        "frameworks alternating.",
        "",
        "| case | minigrad (ms) | PyTorch (ms) | PyTorch / minigrad |",
        "|---|---:|---:|---:|",
    ]
    for case, title in CASES.items():
        ours, theirs = median[("minigrad", case)], median[("torch", case)]
        lines.append(
            f"| {title} | {ours * 1e3:.0f} | {theirs * 1e3:.0f} | **{theirs / ours:.2f}** |"
        )
    if ("torch", "bi_train_packed") in median:
        theirs, ours = (
            median[("torch", "bi_train_packed")],
            median[("minigrad", "bi_train_lengths")],
        )
        lines.append(
            "| bidirectional, forward+backward, lengths 64..256, PyTorch with pack_padded_sequence "
            f"(median of {args.packed_repeats}) | {ours * 1e3:.0f} | {theirs * 1e3:.0f} "
            f"| **{theirs / ours:.2f}** |"
        )
    lines += [
        "",
        "PyTorch without packing computes all 256 steps of every sequence; "
        "minigrad with `lengths` skips the padded steps (same results as PyTorch with packing).",
        "",
        f"Threads: minigrad: {workers['minigrad'].info['threads']}. PyTorch: "
        f"{workers['torch'].info['threads']}.",
        f"Machine: {os.cpu_count()} cores; 1-minute load average {load_before:.2f} before "
        f"the run and {os.getloadavg()[0]:.2f} after (other work on the machine slows both). "
        f"Total run {time.perf_counter() - started:.0f} s.",
    ]
    table = "\n".join(lines)
    print(table)
    if args.markdown:  # the table replaces the old one; hand-written notes after it stay
        path = Path(args.markdown)
        notes = path.read_text().partition("\n## Notes")[1:] if path.exists() else ()
        write_text(
            path,
            "# LSTM benchmark (`python benchmarks/lstm.py`)\n\n"
            "The latest run, as the command writes it; earlier runs are in the notes. "
            "The summary is\n[README.md](README.md).\n\n" + table + "\n" + "".join(notes),
        )


if __name__ == "__main__":
    main()
