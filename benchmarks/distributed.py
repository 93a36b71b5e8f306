"""Data parallelism over processes against threads: the character language model's training
step (examples/language_model/model.py), the same steps on the same batches three ways.

    python benchmarks/distributed.py                                  # ~1 min on 2 quiet cores
    python benchmarks/distributed.py --steps 2 --warmup 1 --batch-size 4 --context 8 --small

1. one process, `loss.backward()` on the whole batch (each op's kernels over every core);
2. one process, `mg.parallel.forward_backward` (the batch's halves on two threads);
3. `mpiexec -n 2`: two processes of one thread each (NUMBA_NUM_THREADS=1,
   OPENBLAS_NUM_THREADS=1), each its half of the batch, DistributedDataParallel averaging the
   gradients.
Each run is a fresh process (or two) started in turn. Reported: the median time of a step, the
largest difference of its losses from run 1's (float32 sums made in another order), and, for
run 3, the time spent inside all_reduce per step (waiting for the other rank included: the
halves never finish at once) and the time of one all-reduce of the gradients alone, after a
barrier (what moving the numbers costs); each as a share of the step.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from workers import save_report

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: make `minigrad`, `nn` and `examples` importable

VOCABULARY = 65  # the size of a small character set, as the language model's corpus
RUNS = ("one process", "mg.parallel, 2 threads", "mpiexec -n 2, DDP")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="timed training steps")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--batch-size", type=int, default=32, help="the whole batch (even)")
    parser.add_argument("--context", type=int, default=128, help="characters per sequence")
    parser.add_argument("--small", action="store_true", help="a tiny model (for a smoke run)")
    parser.add_argument("--markdown", help="also write the table to this file")
    parser.add_argument("--worker", choices=("single", "parallel", "ddp"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.batch_size < 2 or args.batch_size % 2:
        parser.error(f"--batch-size must be even and >= 2; got {args.batch_size}")
    if args.steps < 1 or args.warmup < 0 or args.context < 2:
        parser.error("--steps >= 1, --warmup >= 0 and --context >= 2")
    return args


# -- one run (a worker process) ----------------------------------------------------------------


def batches(args):
    rng = np.random.default_rng(0)
    steps = args.warmup + args.steps
    ids = rng.integers(0, VOCABULARY, size=(steps, args.batch_size, args.context + 1))
    return ids[..., :-1], ids[..., 1:]


def build_model(args):
    import minigrad as mg
    from examples.language_model.model import CharTransformer

    mg.manual_seed(0)
    if args.small:
        size = dict(model_dim=16, num_heads=2, num_layers=1, ff_dim=32)
    else:  # train.py's default model
        size = dict(model_dim=128, num_heads=4, num_layers=4, ff_dim=512)
    return CharTransformer(VOCABULARY, context=args.context, **size)


def run_worker(args):
    import minigrad as mg

    mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
    model, rank, spent = build_model(args), 0, [0.0]
    rows = slice(None)
    if args.worker == "ddp":
        import minigrad.distributed as dist
        from minigrad.nn.parallel import DistributedDataParallel

        dist.init_process_group("mpi")
        rank, world = dist.get_rank(), dist.get_world_size()
        half = args.batch_size // world
        rows = slice(rank * half, (rank + 1) * half)
        all_reduce = dist.all_reduce

        def timed_all_reduce(*arguments, **settings):  # what DDP calls, timed
            start = time.perf_counter()
            all_reduce(*arguments, **settings)
            spent[0] += time.perf_counter() - start

        dist.all_reduce = timed_all_reduce
        trained = DistributedDataParallel(model)
    else:
        trained = model
    optimizer = mg.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    inputs, targets = batches(args)

    def loss_of(ids, next_ids):
        logits = trained(mg.tensor(ids))
        return mg.cross_entropy(logits.reshape(-1, VOCABULARY), mg.tensor(next_ids.reshape(-1)))

    losses, times, reduce_times = [], [], []
    for step in range(args.warmup + args.steps):
        start, spent[0] = time.perf_counter(), 0.0
        optimizer.zero_grad()
        if args.worker == "parallel":
            loss = mg.parallel.forward_backward(loss_of, inputs[step], targets[step])
        else:
            loss = loss_of(inputs[step][rows], targets[step][rows])
            loss.backward()
        mg.optim.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
            reduce_times.append(spent[0])
        losses.append(loss.item())
    result = {"step": float(np.median(times)), "losses": losses}
    if args.worker == "ddp":
        whole = mg.tensor(losses, dtype=mg.float64)
        all_reduce(whole, op=dist.ReduceOp.AVG)  # the whole batch's loss, as the other runs'
        result["losses"] = whole.tolist()
        result["all_reduce in step"] = float(np.median(reduce_times))
        gradients = mg.zeros(sum(p.numel() for p in model.parameters()))
        alone = []
        for _ in range(10):
            dist.barrier()
            start = time.perf_counter()
            all_reduce(gradients)
            alone.append(time.perf_counter() - start)
        result["all_reduce alone"] = float(np.median(alone))
        result["parameters"] = int(gradients.numel())
        dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps(result), flush=True)


# -- the driver --------------------------------------------------------------------------------


def mpiexec():
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        sys.exit("benchmarks/distributed.py: mpiexec not found: pip install 'minigrad[mpi]'")
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    root = ["--allow-run-as-root"] if "Open MPI" in version and os.geteuid() == 0 else []
    return [found, *root]


def launch(args, worker, argv):
    command = [sys.executable, str(Path(__file__).resolve()), *argv, "--worker", worker]
    environment = dict(os.environ)
    if worker == "ddp":
        command = [*mpiexec(), "-n", "2", *command]
        environment.update(NUMBA_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=REPO)
    if done.returncode != 0:
        sys.exit(f"the {worker} run failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    line = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")][-1]
    return json.loads(line.removeprefix("RESULT "))


def report(args, results):
    base = results["single"]
    lines = [
        f"Character LM step, batch {args.batch_size} x {args.context}"
        f"{' (small model)' if args.small else ''}, median of {args.steps} steps after "
        f"{args.warmup}; load average before: {os.getloadavg()[0]:.2f}",
        "",
        "| run | step (s) | vs one process | largest loss difference |",
        "|---|---|---|---|",
    ]
    for name, worker in zip(RUNS, ("single", "parallel", "ddp")):
        result = results[worker]
        gap = np.max(np.abs(np.subtract(result["losses"], base["losses"])))
        lines.append(
            f"| {name} | {result['step']:.4f} | {result['step'] / base['step']:.2f}x | {gap:.1e} |"
        )
    ddp = results["ddp"]
    lines += [
        "",
        f"mpiexec -n 2: all_reduce inside a step {ddp['all_reduce in step'] * 1e3:.1f} ms "
        f"({ddp['all_reduce in step'] / ddp['step']:.0%} of the step, waiting for the other "
        f"rank included); one all-reduce of the {ddp['parameters']:,} gradients alone "
        f"{ddp['all_reduce alone'] * 1e3:.2f} ms ({ddp['all_reduce alone'] / ddp['step']:.1%})",
    ]
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.worker:
        return run_worker(args)
    results = {worker: launch(args, worker, argv) for worker in ("single", "parallel", "ddp")}
    text = report(args, results)
    print(text)
    if args.markdown:
        save_report(args.markdown, __file__, argv, text + "\n")


if __name__ == "__main__":
    main()
