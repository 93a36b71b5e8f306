"""The character language model (examples/language_model/): minigrad against its PyTorch twin.

    python benchmarks/language_model.py                          # ~25 min on 2 quiet cores
    python benchmarks/language_model.py --steps 300 --parts training,speed,memory
    python benchmarks/language_model.py --parts speed --repeats 20 --torch-attention sdpa,explicit

The twin (benchmarks/torch_language_model.py) starts from minigrad's initial weights (copied
by name) and trains on the same batches with the recipe of train.py's default run: AdamW
(lr 3e-3, weight decay 0.01), clipping at norm 1.0, 100 warm-up steps then cosine decay to
0.1 lr at step 1000 (the same Python function sets both learning rates). Each framework runs
in its own process; all are alive at once and driven in turn (benchmarks/workers.py), so a
change in machine load hits them alike. Parts:

1. training: --steps steps on the real text (1000: train.py's default run), --chunk steps
   at a time in turn; the loss of every step from both and their largest difference (float32
   sums in another order make the two runs drift apart slowly); the validation loss (20
   batches of held-out text, as train.py) every --eval-every steps; each one's time;
2. speed: --repeats interleaved steps on one fixed batch; the ratio minigrad / PyTorch
   (below 1: minigrad is faster);
3. memory: peak resident memory (VmHWM) of each process after its training steps;
4. generation: characters per second after "This movie", minigrad with and without its
   key/value cache, PyTorch without one (the twin has none).
The load average is printed along the way: the machine is shared.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from workers import Worker, interleaved_times, save_report, serve, timed

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: make `minigrad`, `nn` and `examples` importable
from examples.language_model import corpus  # noqa: E402  (numpy only: imports neither framework)

EVALUATION_BATCHES = 20  # as train.py: 20 x 32 x 128 characters of held-out text
RECIPE = dict(
    lr=3e-3,
    weight_decay=0.01,
    warmup=100,
    total_steps=1000,
    min_ratio=0.1,
    clip=1.0,
    batch_size=32,
    seed=0,
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", help="IMDB tarball or folder (default: the examples' cache folder, else download)"
    )
    parser.add_argument("--parts", default="training,speed,memory,generation")
    parser.add_argument(
        "--steps", type=int, default=1000, help="training steps (train.py's default run: 1000)"
    )
    parser.add_argument(
        "--eval-every", type=int, default=100, help="validation loss every this many steps"
    )
    parser.add_argument("--chunk", type=int, default=10, help="steps each framework takes in turn")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps on the fixed batch")
    parser.add_argument(
        "--repeats", type=int, default=10, help="timed steps on the fixed batch, interleaved"
    )
    parser.add_argument("--generate", type=int, default=200, help="characters to generate")
    parser.add_argument("--torch-attention", default="sdpa", help="comma-separated: sdpa, explicit")
    parser.add_argument(
        "--threads",
        choices=("default", "1"),
        default="default",
        help="1: every framework on one thread (OpenBLAS, Numba, torch.set_num_threads)",
    )
    parser.add_argument(
        "--single-blas",
        action="store_true",
        help="also time minigrad with OpenBLAS on one thread (OPENBLAS_NUM_THREADS=1)",
    )
    parser.add_argument("--markdown", help="also write the report to this file")
    # internal: the workers
    parser.add_argument("--worker", choices=("minigrad", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--attention", default="sdpa", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def lr_factor(step):
    """The schedule of train.py's default run (the same function drives both frameworks)."""
    if step < RECIPE["warmup"]:
        return (step + 1) / RECIPE["warmup"]
    progress = min(1.0, (step - RECIPE["warmup"]) / (RECIPE["total_steps"] - RECIPE["warmup"]))
    return RECIPE["min_ratio"] + (1 - RECIPE["min_ratio"]) * 0.5 * (1 + np.cos(np.pi * progress))


def memory_mib():
    """(current RSS, peak RSS) of this process in MiB."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


# -- the two frameworks, each in its own process ------------------------------------------


class MinigradRunner:
    def __init__(self, state, config):
        import minigrad as mg
        from examples.language_model.model import CharTransformer

        mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
        self.mg = mg
        self.model = CharTransformer(**config)
        self.model.load_state_dict(state)
        self.parameters = list(self.model.parameters())
        self.optimizer = mg.optim.AdamW(
            self.parameters, lr=RECIPE["lr"], weight_decay=RECIPE["weight_decay"]
        )
        self.schedule = mg.optim.lr_scheduler.LambdaLR(self.optimizer, lr_factor)

    def validation_loss(self, batches):
        with self.mg.no_grad():
            return float(
                np.mean([self.model.loss(inputs, targets).item() for inputs, targets in batches])
            )

    def step(self, inputs, targets):
        self.optimizer.zero_grad()
        loss = self.mg.parallel.forward_backward(self.model.loss, inputs, targets)  # as train.py
        self.mg.optim.clip_grad_norm_(self.parameters, RECIPE["clip"])
        self.optimizer.step()
        self.schedule.step()
        return loss.item()

    def generate(self, vocabulary, length, use_cache):
        from examples.language_model.generate import generate

        self.mg.manual_seed(0)
        return generate(
            self.model,
            vocabulary,
            "This movie",
            length,
            temperature=1.0,
            top_k=None,
            use_cache=use_cache,
        )

    def threads(self):
        from minigrad.kernels import _numba_threads

        return _numba_threads.thread_summary()


class TorchRunner:
    def __init__(self, state, config, attention, threads="default"):
        import torch
        from torch_language_model import from_minigrad

        self.torch = torch
        if threads != "default":
            torch.set_num_threads(int(threads))
        self.model = from_minigrad(state, config, attention)
        self.parameters = list(self.model.parameters())
        self.optimizer = torch.optim.AdamW(
            self.parameters, lr=RECIPE["lr"], weight_decay=RECIPE["weight_decay"]
        )
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lr_factor)

    def validation_loss(self, batches):
        torch = self.torch
        with torch.no_grad():
            return float(
                np.mean(
                    [
                        self.model.loss(torch.from_numpy(inputs), torch.from_numpy(targets)).item()
                        for inputs, targets in batches
                    ]
                )
            )

    def step(self, inputs, targets):
        torch = self.torch
        loss = self.model.loss(torch.from_numpy(inputs), torch.from_numpy(targets))
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.parameters, RECIPE["clip"])
        self.optimizer.step()
        self.schedule.step()
        return loss.item()

    def generate(self, vocabulary, length, use_cache):
        """Sampling without a cache: the model over the whole text so far for every character."""
        torch = self.torch
        torch.manual_seed(0)
        self.model.eval()
        ids = list(vocabulary.encode("This movie"))
        with torch.no_grad():
            for _ in range(length):
                logits = self.model(torch.tensor([ids[-self.model.positions.weight.shape[0] :]]))[
                    0, -1
                ]
                ids.append(int(torch.multinomial(logits.softmax(-1), 1)))
        self.model.train()
        return vocabulary.decode(ids)

    def threads(self):
        return f"torch {self.torch.get_num_threads()}"


def run_worker(args):
    workdir = Path(args.workdir)
    saved = np.load(workdir / "data.npz")
    config = {
        key: saved[f"config_{key}"].item()
        for key in (
            "vocab_size",
            "context",
            "model_dim",
            "num_heads",
            "num_layers",
            "ff_dim",
            "dropout",
            "positions",
        )
    }
    state = {key[len("state_") :]: saved[key] for key in saved.files if key.startswith("state_")}
    vocabulary = corpus.Vocabulary.from_code_points(saved["vocabulary"])
    tick = time.perf_counter()
    runner = (
        MinigradRunner(state, config)
        if args.worker == "minigrad"
        else TorchRunner(state, config, args.attention, args.threads)
    )
    setup = time.perf_counter() - tick
    batches = corpus.random_batches(
        saved["train_ids"], RECIPE["batch_size"], config["context"], RECIPE["seed"]
    )
    fixed = next(
        corpus.random_batches(
            saved["train_ids"], RECIPE["batch_size"], config["context"], seed=12345
        )
    )
    validation = list(
        corpus.evaluation_batches(
            saved["validation_ids"], RECIPE["batch_size"], config["context"], EVALUATION_BATCHES
        )
    )
    rss_before = memory_mib()[0]

    def handle(request):
        if request["op"] == "train":
            losses, seconds = [], []
            for _ in range(request["steps"]):
                inputs, targets = next(batches)
                tick = time.perf_counter()
                losses.append(runner.step(inputs, targets))
                seconds.append(time.perf_counter() - tick)
            return {"losses": losses, "seconds": seconds, "load": os.getloadavg()[0]}
        if request["op"] == "validate":
            tick = time.perf_counter()
            return {
                "loss": runner.validation_loss(validation),
                "seconds": time.perf_counter() - tick,
            }
        if request["op"] == "time":
            return {"seconds": timed(lambda: runner.step(*fixed))}
        if request["op"] == "memory":
            rss, peak = memory_mib()
            return {"rss_before": rss_before, "rss": rss, "peak": peak}
        if request["op"] == "generate":
            tick = time.perf_counter()
            text = runner.generate(vocabulary, request["length"], request["cache"])
            return {"seconds": time.perf_counter() - tick, "text": text}
        raise ValueError(f"unknown request {request!r}")

    serve({"setup": setup, "threads": runner.threads()}, handle)


# -- the parent -----------------------------------------------------------------------------


def prepare(args, workdir):
    """Text, vocabulary and minigrad's initial weights (seed 0) into workdir/data.npz."""
    import minigrad as mg
    from examples.language_model.model import DEFAULTS, CharTransformer

    train_text, validation_text = corpus.load_texts(args.data, progress=False)
    vocabulary = corpus.Vocabulary.from_text(train_text)
    train_ids = corpus.encode(vocabulary, train_text, np.uint16)
    validation_ids = corpus.encode(vocabulary, validation_text, np.uint16)
    mg.manual_seed(RECIPE["seed"])
    model = CharTransformer(len(vocabulary), **DEFAULTS)
    arrays = {f"state_{name}": value.numpy() for name, value in model.state_dict().items()}
    arrays.update({f"config_{key}": np.asarray(value) for key, value in model.config.items()})
    np.savez(
        Path(workdir) / "data.npz",
        train_ids=train_ids,
        validation_ids=validation_ids,
        vocabulary=vocabulary.code_points(),
        **arrays,
    )
    parameters = sum(p.numel() for p in model.parameters())
    return (
        f"{len(train_ids):,} characters of IMDB train reviews, {len(vocabulary)} distinct; "
        f"{parameters:,} parameters"
    )


def start_workers(args, workdir):
    """The worker processes: minigrad (and with --single-blas minigrad with one OpenBLAS thread),
    PyTorch with each --torch-attention. --threads 1 puts every framework on one thread."""
    command = [
        sys.executable,
        __file__,
        "--workdir",
        workdir,
        "--threads",
        args.threads,
        "--worker",
    ]
    one = {"OPENBLAS_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"} if args.threads == "1" else {}
    workers = {"minigrad": Worker(command + ["minigrad"], one)}
    if args.single_blas:  # OpenBLAS on one thread (Numba's threads unchanged)
        workers["minigrad, OpenBLAS 1 thread"] = Worker(
            command + ["minigrad"], {"OPENBLAS_NUM_THREADS": "1"}
        )
    for attention in args.torch_attention.split(","):
        workers[f"torch ({attention})"] = Worker(command + ["torch", "--attention", attention], one)
    return workers


def training_run(args, workers):
    """Train every worker --steps steps, --chunk at a time in turn, with the validation loss every
    --eval-every steps: {name: losses, seconds (per step), validation [(step, loss, seconds)]}."""
    runs = {name: {"losses": [], "seconds": [], "validation": [], "loads": []} for name in workers}
    for done in range(0, args.steps, args.chunk):
        steps = min(args.chunk, args.steps - done)
        for name, worker in workers.items():
            answer = worker.ask({"op": "train", "steps": steps})
            run = runs[name]
            run["losses"] += answer["losses"]
            run["seconds"] += answer["seconds"]
            run["loads"].append(answer["load"])
            if (done + steps) % args.eval_every == 0 or done + steps == args.steps:
                answer = worker.ask({"op": "validate"})
                run["validation"].append((done + steps, answer["loss"], answer["seconds"]))
        line = ", ".join(
            f"{name} {np.mean(run['seconds'][-steps:]):.3f} s/step loss {run['losses'][-1]:.4f}"
            + (
                f" validation {run['validation'][-1][1]:.4f}"
                if run["validation"] and run["validation"][-1][0] == done + steps
                else ""
            )
            for name, run in runs.items()
        )
        print(f"step {done + steps}: {line} (load {os.getloadavg()[0]:.1f})", flush=True)
    return runs


def report(args, source, workers, runs, fixed_times, memory, generation):
    lines = [f"data: {source}", f"load average at the end: {os.getloadavg()[0]:.1f} (2 cores)", ""]
    names = list(workers)
    if runs:
        mine = np.array(runs["minigrad"]["losses"])
        spans = [n for n in (100, 300, 1000) if n < args.steps] + [args.steps]
        lines += [
            f"training: {args.steps} steps of train.py's default recipe, "
            f"same initial weights, same batches (steps taken {args.chunk} at a time in turn); "
            "loss difference |minigrad - PyTorch| per step",
            "",
            "| PyTorch twin | "
            + " | ".join(f"largest, steps 1-{n}" for n in spans)
            + " | loss at step 1 (minigrad, torch) |",
            "|---|" + "---|" * (len(spans) + 1),
        ]
        for name in [n for n in names if n.startswith("torch")]:
            difference = np.abs(mine - np.array(runs[name]["losses"]))
            lines.append(
                f"| {name} | "
                + " | ".join(f"{difference[:n].max():.2e}" for n in spans)
                + f" | {mine[0]:.6f}, {runs[name]['losses'][0]:.6f} |"
            )
        lines += [
            "",
            "| framework | validation loss nats/char (bits/char) at "
            + ", ".join(f"step {step}" for step, _, _ in runs["minigrad"]["validation"])
            + " | training time s (steps + validations) | median s/step |",
            "|---|---|---|---|",
        ]
        for name in names:
            run = runs[name]
            values = ", ".join(
                f"{loss:.4f} ({loss / np.log(2):.3f})" for _, loss, _ in run["validation"]
            )
            total = sum(run["seconds"]) + sum(seconds for _, _, seconds in run["validation"])
            lines.append(f"| {name} | {values} | {total:.0f} | {np.median(run['seconds']):.3f} |")
        lines.append("")
    lines += [
        "speed: seconds per training step (forward, backward, clipping, AdamW), batch 32 x 128, "
        f"on one fixed batch, {args.repeats} steps interleaved",
        "",
        "| framework | threads | median s/step | min - max | time / minigrad's | peak RSS MiB "
        "| RSS before step 1 MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    base = np.median(fixed_times["minigrad"]) if fixed_times else None
    for name in names:
        fixed = (
            (
                f"{np.median(fixed_times[name]):.3f} | {min(fixed_times[name]):.3f} - "
                f"{max(fixed_times[name]):.3f} | {np.median(fixed_times[name]) / base:.2f}"
            )
            if fixed_times
            else "- | - | -"
        )
        peak = (
            f"{memory[name]['peak']:.0f} | {memory[name]['rss_before']:.0f}" if memory else "- | -"
        )
        lines.append(f"| {name} | {workers[name].info['threads']} | {fixed} | {peak} |")
    if fixed_times:
        lines += [
            "",
            "minigrad / PyTorch step time: "
            + ", ".join(
                f"{np.median(fixed_times['minigrad']) / np.median(fixed_times[name]):.2f} ({name})"
                for name in names
                if name.startswith("torch")
            ),
        ]
    if generation:
        lines += [
            "",
            f'generation: {args.generate} characters after "This movie" '
            "(batch 1, sampling from the full softmax)",
            "",
            "| framework | cache | seconds | characters/s |",
            "|---|---|---|---|",
        ]
        for (name, cache), seconds in generation.items():
            lines.append(
                f"| {name} | {'yes' if cache else 'no'} | {seconds:.2f} | "
                f"{args.generate / seconds:.0f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return run_worker(args)
    parts = set(args.parts.split(","))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="minigrad-lm-bench-") as workdir:
        source = prepare(args, workdir)
        print(
            f"{source} ({time.perf_counter() - started:.0f} s); load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        workers = start_workers(args, workdir)
        try:
            runs = training_run(args, workers) if "training" in parts else None
            fixed_times = None
            if "speed" in parts:
                requests = {name: (worker, {"op": "time"}) for name, worker in workers.items()}
                fixed_times = interleaved_times(
                    requests,
                    args.warmup,
                    args.repeats,
                    progress=lambda seconds: print(
                        "fixed batch: "
                        + ", ".join(f"{n} {s:.3f} s" for n, s in seconds.items())
                        + f" (load {os.getloadavg()[0]:.1f})",
                        flush=True,
                    ),
                )
            memory = (
                {name: worker.ask({"op": "memory"}) for name, worker in workers.items()}
                if "memory" in parts
                else None
            )
            generation = {}
            if "generation" in parts:
                for name, worker in workers.items():
                    for cache in (True, False) if name == "minigrad" else (False,):
                        generation[(name, cache)] = worker.ask(
                            {"op": "generate", "length": args.generate, "cache": cache}
                        )["seconds"]
        finally:
            for worker_process in workers.values():
                worker_process.close()
    table = report(args, source, workers, runs, fixed_times, memory, generation)
    print("\n" + table + f"\n({time.perf_counter() - started:.0f} s in all)")
    if args.markdown:
        save_report(args.markdown, __file__, argv or sys.argv[1:], table)


if __name__ == "__main__":
    main()
