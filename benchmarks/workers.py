"""The one way benchmarks here time frameworks side by side: each configuration in its own
subprocess (so no two frameworks' thread pools share a process), all alive at once and
driven step by step, so that timed steps alternate between them and a change in machine
load hits all alike.

Parent:   worker = Worker([sys.executable, script, "--worker", ...]); worker.info (its ready
          message); worker.ask(request) -> answer; worker.close()
Child:    serve(ready, handle): print `ready`, then answer each request with handle(request)

Requests and answers are JSON objects, one per line on the child's stdin and stdout.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


class Worker:
    """A benchmark worker in a subprocess (see serve), driven by requests."""

    def __init__(self, command, environment=None):
        self.command = command
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, **(environment or {})},
        )
        self.info = self._answer()

    def ask(self, request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def _answer(self):
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(
                f"benchmark worker {' '.join(map(str, self.command))} exited with code "
                f"{self.process.wait()} (its error is printed above)"
            )
        return json.loads(line)

    def close(self):
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait()


def serve(ready, handle):
    """Child side: print the ready message (a dict), then one answer per request line.

    Anything else the worker prints goes to stderr, so stdout carries only the protocol."""
    protocol, sys.stdout = sys.stdout, sys.stderr
    print(json.dumps(ready), file=protocol, flush=True)
    for line in sys.stdin:
        print(json.dumps(handle(json.loads(line))), file=protocol, flush=True)


def timed(step):
    """Seconds one call of step() takes (the answer a worker gives to a timing request)."""
    start = time.perf_counter()
    step()
    return time.perf_counter() - start


def interleaved_times(requests, warmup, repeats, progress=None):
    """{name: [seconds]} for requests {name: (worker, request)} whose answers hold "seconds":
    warmup untimed answers each, then `repeats` rounds of one answer from each, in turn;
    progress({name: seconds}) after each round, if given."""
    for worker, request in requests.values():
        for _ in range(warmup):
            worker.ask(request)
    times = {name: [] for name in requests}
    for _ in range(repeats):
        for name, (worker, request) in requests.items():
            times[name].append(worker.ask(request)["seconds"])
        if progress:
            progress({name: seconds[-1] for name, seconds in times.items()})
    return times


def side_by_side_arguments(doc, rounds, why_one_thread):
    """The command line of a per-case benchmark (ops.py, losses.py, conv.py): --rounds,
    --torch-threads (default 1, for the reason given) and the internal --worker; add options to the
    parser returned."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help=f"torch.set_num_threads in the torch worker (default 1: {why_one_thread})",
    )
    parser.add_argument("--worker", choices=["minigrad", "torch"])
    return parser


def per_case_main(script, doc, cases, worker, calls_per_timing, width, rounds, why_one_thread):
    """main() of a per-case benchmark without options of its own (losses.py, conv.py): a worker
    when --worker is given (worker(framework, torch_threads)), else the parent (side_by_side)."""
    args = side_by_side_arguments(doc, rounds, why_one_thread).parse_args()
    if args.worker:
        return worker(args.worker, args.torch_threads)
    return side_by_side(script, cases, args.rounds, args.torch_threads, calls_per_timing, width)


def side_by_side(script, cases, rounds, torch_threads, calls_per_timing, width):
    """The parent of a per-case benchmark (ops.py, losses.py): a minigrad and a torch worker of
    `script` (its --worker and --torch-threads options), each case's timed calls interleaved
    between them. Prints a line per case as it goes; returns [(case, minigrad ms, torch ms)],
    per call of the case (a worker's timed call runs it calls_per_timing times)."""
    workers = {
        name: Worker(
            [sys.executable, script, "--worker", name, "--torch-threads", str(torch_threads)]
        )
        for name in ("minigrad", "torch")
    }
    results = []
    try:
        print(f"{'case':{width}s} {'minigrad ms':>12s} {'torch ms':>10s} {'torch/minigrad':>15s}")
        for case in cases:
            times = interleaved_times(
                {name: (w, {"case": case}) for name, w in workers.items()}, warmup=2, repeats=rounds
            )
            ours, theirs = (
                statistics.median(times[name]) * 1e3 / calls_per_timing
                for name in ("minigrad", "torch")
            )
            print(f"{case:{width}s} {ours:12.3f} {theirs:10.3f} {theirs / ours:15.2f}", flush=True)
            results.append((case, ours, theirs))
    finally:
        for worker in workers.values():
            worker.close()
    return results


def write_text(path, text):
    """Write a report through a temporary file, renamed into place: a failed run never leaves
    half a file where the last report (and its hand-written notes) was."""
    from minigrad.io import atomic_file

    with atomic_file(Path(path)) as file:
        file.write(text.encode("utf-8"))


def save_report(path, script, argv, table):
    """Write a benchmark's markdown `table` to path, under the command that made it."""
    command = f"python benchmarks/{Path(script).name} {' '.join(argv)}"
    write_text(path, f"`{command}`\n\n{table}")
