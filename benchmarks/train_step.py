"""One training step of the IMDB sentiment model: minigrad against PyTorch 2.13 CPU, in one run.

    python benchmarks/train_step.py                       # dot model, ~10 min on 2 quiet cores
    python benchmarks/train_step.py --pool mhsa --skip-memory --minigrad-threads default,1
    python benchmarks/train_step.py --steps 100 --profile 3 --markdown results.md

A step is what examples/sentiment/train.py does per batch: forward, cross-entropy, backward,
clip_grad_norm_(1.0), Adam step (lr 1e-3). Batch 128, padded to 256 tokens. The reviews are
the real IMDB train split (tokenized and encoded by examples/sentiment/data.py, vocabulary
~81k) when the archive is found, else synthetic random ids of the same shapes; the output
says which. PyTorch runs the same model (benchmarks/torch_sentiment.py) on its fast path,
with minigrad's initial weights copied in.

The run, in order:
1. equivalence: both models, same weights, same batch: the losses and gradients must agree;
2. speed: every configuration in its own subprocess, all alive at once, their steps on one
   fixed batch interleaved (benchmarks/workers.py): --warmup steps each, then --repeats
   rounds of one step each; the median per configuration. The first step (Numba compiling
   or loading its cache) is reported on its own;
3. memory: each framework in its own subprocess trains --steps steps on shuffled real
   batches; peak resident memory (VmHWM), and minigrad's RSS at step steps/3 and at the end
   (the graph of each step must be freed, so it must not grow).
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
from examples.sentiment import data, preprocess  # noqa: E402  (numpy only: imports neither framework)

POOLINGS = ("mean", "additive", "dot", "mhsa")
SYNTHETIC_VOCAB, SYNTHETIC_REVIEWS = 81_000, 25_000


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", default="dot", choices=POOLINGS)
    parser.add_argument(
        "--data",
        help="IMDB tarball or folder (default: the examples' cache folder, "
        "~/.cache/minigrad/imdb, if the data is there)",
    )
    parser.add_argument(
        "--synthetic", action="store_true", help="random ids even if the real data is there"
    )
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--max-len", type=int, default=256)
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps after the first one")
    parser.add_argument(
        "--repeats",
        type=int,
        default=10,
        help="timed steps per configuration, interleaved (the median is reported)",
    )
    parser.add_argument("--steps", type=int, default=300, help="steps of the memory run")
    parser.add_argument(
        "--full-length",
        action="store_true",
        help="time a batch whose reviews all have max-len tokens (no padding to skip)",
    )
    parser.add_argument(
        "--cold-start",
        action="store_true",
        help="also time minigrad's first step with an empty Numba cache (compiling every kernel)",
    )
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument(
        "--train-threads",
        default="default",
        help="threads of both frameworks in the memory run (e.g. 1 on a busy machine)",
    )
    parser.add_argument(
        "--torch-threads",
        default="default,1",
        help="comma-separated torch.set_num_threads values to time ('default': leave it)",
    )
    parser.add_argument(
        "--minigrad-threads",
        default="default",
        help="comma-separated thread counts for minigrad "
        "(NUMBA_NUM_THREADS and OPENBLAS_NUM_THREADS; 'default': leave them)",
    )
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also cProfile N minigrad steps and print the top functions by cumulative time",
    )
    parser.add_argument("--markdown", help="also write the results table to this file")
    # internal: the subprocesses
    parser.add_argument("--worker", choices=("time", "train"), help=argparse.SUPPRESS)
    parser.add_argument("--framework", choices=("minigrad", "torch"), help=argparse.SUPPRESS)
    parser.add_argument("--threads", default="default", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# -- data ----------------------------------------------------------------------------------


def prepare_data(args):
    """[(ids, label)] for the train split (real or synthetic) and a description of the source."""
    reviews = None
    if not args.synthetic and (args.data is None or Path(args.data).exists()):
        try:  # never downloads: without data the benchmark says so and uses synthetic ids
            reviews = data.load_imdb(args.data, download=False, progress=False)["train"]
        except data.DataNotFoundError:
            pass
    if reviews is not None:
        tokens = [preprocess.tokenize(text) for text, _ in reviews]
        vocab = preprocess.build_vocab(tokens)
        encoded = preprocess.encode_dataset(
            [(t, label) for t, (_, label) in zip(tokens, reviews)],
            vocab,
            args.max_len,
            progress=False,
        )
        source = Path(args.data).name if args.data else "the cache folder"
        return encoded, len(vocab), f"real IMDB train split ({source}), vocabulary {len(vocab):,}"
    # Review lengths roughly like IMDB's (median ~220 tokens), cut at max_len.
    rng = np.random.default_rng(0)
    lengths = np.clip(rng.lognormal(5.4, 0.6, SYNTHETIC_REVIEWS).astype(int), 5, args.max_len)
    encoded = [(rng.integers(2, SYNTHETIC_VOCAB, n), int(rng.integers(2))) for n in lengths]
    why = "--synthetic" if args.synthetic else f"no data at {args.data or 'the cache folder'}"
    return encoded, SYNTHETIC_VOCAB, f"SYNTHETIC random ids ({why}), vocabulary {SYNTHETIC_VOCAB:,}"


def save_dataset(path, encoded, vocab_size):
    lengths = np.array([len(ids) for ids, _ in encoded])
    np.savez(
        path,
        ids=np.concatenate([ids for ids, _ in encoded]),
        lengths=lengths,
        labels=np.array([label for _, label in encoded]),
        vocab_size=vocab_size,
    )


def load_dataset(path):
    saved = np.load(path)
    ends = np.cumsum(saved["lengths"])
    encoded = [
        (ids, int(label)) for ids, label in zip(np.split(saved["ids"], ends[:-1]), saved["labels"])
    ]
    return encoded, int(saved["vocab_size"])


def timing_batch(encoded, batch_size, max_len, full_length=False):
    """The first shuffled batch, padded to exactly max_len tokens; with full_length, only reviews
    of max_len tokens."""
    if full_length:
        encoded = [(ids, label) for ids, label in encoded if len(ids) == max_len]
    ids, lengths, labels = next(preprocess.batches(encoded, batch_size, shuffle=True, seed=0))
    padded = np.zeros((len(ids), max_len), dtype=np.int64)
    padded[:, : ids.shape[1]] = ids
    return padded, lengths, labels


def training_batches(encoded, batch_size):
    """Shuffled batches forever, a new order each epoch (as train.py)."""
    epoch = 0
    while True:
        yield from preprocess.batches(encoded, batch_size, shuffle=True, seed=epoch)
        epoch += 1


# -- the two frameworks --------------------------------------------------------------------


class MinigradRunner:
    def __init__(self, vocab_size, pool, state):
        import minigrad as mg
        from examples.sentiment.model import SentimentModel

        mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
        self.mg = mg
        self.model = SentimentModel(vocab_size, pool=pool)
        self.model.load_state_dict(state)
        self.parameters = list(self.model.parameters())
        self.optimizer = mg.optim.Adam(self.parameters, lr=1e-3)

    def loss(self, ids, lengths, labels):
        logits = self.model(self.mg.tensor(ids), lengths, need_weights=False)  # as train.py
        return self.mg.cross_entropy(logits, labels)

    def step(self, ids, lengths, labels):
        loss = self.loss(ids, lengths, labels)
        self.optimizer.zero_grad()
        loss.backward()
        self.mg.optim.clip_grad_norm_(self.parameters, 1.0)
        self.optimizer.step()
        return loss.item()

    def gradients(self):
        return {name: p.grad.numpy().copy() for name, p in self.model.named_parameters()}

    @staticmethod
    def threads():
        from minigrad.kernels import _numba_threads

        return _numba_threads.thread_summary()


class TorchRunner:
    def __init__(self, vocab_size, pool, state, threads="default"):
        import torch
        from torch_sentiment import TorchSentimentModel, load_minigrad_state

        if threads != "default":
            torch.set_num_threads(int(threads))
        self.torch = torch
        self.model = TorchSentimentModel(vocab_size, pool=pool)
        load_minigrad_state(self.model, state)
        self.parameters = list(self.model.parameters())
        self.optimizer = torch.optim.Adam(self.parameters, lr=1e-3)

    def loss(self, ids, lengths, labels):
        torch = self.torch
        logits = self.model(torch.from_numpy(ids), torch.from_numpy(lengths))
        return torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels))

    def step(self, ids, lengths, labels):
        loss = self.loss(ids, lengths, labels)
        self.optimizer.zero_grad()
        loss.backward()
        self.torch.nn.utils.clip_grad_norm_(self.parameters, 1.0)
        self.optimizer.step()
        return loss.item()

    def gradients(self):
        return {name: p.grad.numpy() for name, p in self.model.named_parameters()}

    def threads(self):
        return (
            f"torch {self.torch.get_num_threads()} (interop {self.torch.get_num_interop_threads()})"
        )


def make_runner(framework, workdir, pool, threads="default"):
    vocab_size = int(np.load(Path(workdir) / "dataset.npz")["vocab_size"])
    state = dict(np.load(Path(workdir) / "state.npz"))
    if framework == "minigrad":
        return MinigradRunner(vocab_size, pool, state)
    return TorchRunner(vocab_size, pool, state, threads)


# -- measurements --------------------------------------------------------------------------


def memory_mib():
    """(current RSS, peak RSS) of this process in MiB."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


def check_equivalence(workdir, pool, batch):
    """Same weights, same batch: loss and gradient differences between the two models."""
    # minigrad first: it sets up its thread pool
    minigrad_model = make_runner("minigrad", workdir, pool)
    torch_model = make_runner("torch", workdir, pool)
    from torch_sentiment import torch_name

    losses, grads = [], []
    for runner in (minigrad_model, torch_model):
        loss = runner.loss(*batch)
        loss.backward()
        losses.append(loss.item())
        grads.append(runner.gradients())
    grads[0] = {torch_name(name): grad for name, grad in grads[0].items()}
    worst = max(
        grads[1],
        key=lambda name: (
            np.abs(grads[0][name] - grads[1][name]).max() / (np.abs(grads[1][name]).max() + 1e-30)
        ),
    )
    relative = np.abs(grads[0][worst] - grads[1][worst]).max() / np.abs(grads[1][worst]).max()
    norms = [
        np.sqrt(sum(float(np.sum(g.astype(np.float64) ** 2)) for g in grad.values()))
        for grad in grads
    ]
    return {
        "minigrad_loss": losses[0],
        "torch_loss": losses[1],
        "loss_difference": abs(losses[0] - losses[1]),
        "worst_gradient": worst,
        "worst_gradient_relative_difference": float(relative),
        "minigrad_grad_norm": norms[0],
        "torch_grad_norm": norms[1],
    }


def time_worker(args):
    """Serve timing requests: {"step": 1} -> seconds of one step on the fixed batch;
    {"profile": N} -> cProfile of N steps, printed to stderr."""
    tick = time.perf_counter()
    runner = make_runner(args.framework, args.workdir, args.pool, args.threads)
    setup = time.perf_counter() - tick
    batch = tuple(
        np.load(Path(args.workdir) / "batch.npz")[key] for key in ("ids", "lengths", "labels")
    )

    def handle(request):
        if "profile" in request:
            profile_steps(runner, batch, request["profile"])
            return {}
        return {"seconds": timed(lambda: runner.step(*batch))}

    serve({"setup": setup, "threads": runner.threads()}, handle)


def profile_steps(runner, batch, steps):
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        runner.step(*batch)
    profiler.disable()
    print(f"\ncProfile of {steps} minigrad steps, top 15 by cumulative time:", file=sys.stderr)
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(15)


def train_worker(args):
    """Serve one request {"steps": N}: N training steps on shuffled batches; RSS along the way
    and the peak."""
    serve({}, lambda request: train(args, request["steps"]))


def train(args, steps):
    encoded, _ = load_dataset(Path(args.workdir) / "dataset.npz")
    runner = make_runner(args.framework, args.workdir, args.pool, args.threads)
    rss_before, _ = memory_mib()
    rss, losses, seconds = [], [], []
    for step, batch in zip(range(steps), training_batches(encoded, args.batch_size)):
        tick = time.perf_counter()
        losses.append(runner.step(*batch))
        seconds.append(time.perf_counter() - tick)
        rss.append(memory_mib()[0])
    third = max(steps // 3, 1)
    return {
        "rss_before": rss_before,
        "peak": memory_mib()[1],
        "rss_at_third": rss[third - 1],
        "rss_at_end": rss[-1],
        "third": third,
        "max_rss_after_third": max(rss[third - 1 :]),
        "median_step": float(np.median(seconds)),
        "first_loss": float(np.mean(losses[:10])),
        "last_loss": float(np.mean(losses[-10:])),
        "threads": runner.threads(),
    }


def start_worker(kind, framework, args, workdir, threads="default", environment=None):
    """This file as a worker subprocess (benchmarks/workers.py) of the given kind."""
    return Worker(
        [
            sys.executable,
            __file__,
            "--worker",
            kind,
            "--framework",
            framework,
            "--workdir",
            workdir,
            "--pool",
            args.pool,
            "--threads",
            threads,
            "--batch-size",
            str(args.batch_size),
        ],
        environment,
    )


def thread_settings(threads):
    """(torch threads, environment) for a thread count, "default" leaving both frameworks alone."""
    if threads == "default":
        return "default", {}
    return threads, {"NUMBA_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads}


def timing_configurations(args):
    """(name, framework, torch threads, environment) of every timed configuration."""
    configurations = []
    for threads in args.minigrad_threads.split(","):
        environment = thread_settings(threads)[1]
        configurations.append(
            (
                "minigrad" if threads == "default" else f"minigrad, {threads} thread(s)",
                "minigrad",
                "default",
                environment,
            )
        )
    for threads in args.torch_threads.split(","):
        configurations.append(
            (
                "torch" if threads == "default" else f"torch, set_num_threads({threads})",
                "torch",
                threads,
                {},
            )
        )
    return configurations


def time_all(args, workdir):
    """Every configuration in its own worker, all alive at once; --warmup steps each, then
    --repeats rounds of one step each, interleaved. Returns {name: result}."""
    configurations = timing_configurations(args)
    cache = tempfile.TemporaryDirectory(prefix="numba-cache-") if args.cold_start else None
    if cache:
        configurations.append(
            ("minigrad, empty Numba cache", "minigrad", "default", {"NUMBA_CACHE_DIR": cache.name})
        )
    workers, loads = {}, [os.getloadavg()[0]]
    try:
        for name, framework, threads, environment in configurations:
            workers[name] = start_worker("time", framework, args, workdir, threads, environment)
        first = {name: worker.ask({"step": 1})["seconds"] for name, worker in workers.items()}

        def progress(seconds):
            loads.append(os.getloadavg()[0])
            print(
                ", ".join(f"{name} {value:.3f} s" for name, value in seconds.items())
                + f" (load {loads[-1]:.1f})",
                flush=True,
            )

        times = interleaved_times(
            {name: (worker, {"step": 1}) for name, worker in workers.items()},
            args.warmup,
            args.repeats,
            progress,
        )
        if args.profile:
            workers["minigrad"].ask({"profile": args.profile})
    finally:
        for worker in workers.values():
            worker.close()
        if cache:
            cache.cleanup()
    return {
        name: {
            "setup": workers[name].info["setup"],
            "threads": workers[name].info["threads"],
            "first_step": first[name],
            "median": float(np.median(seconds)),
            "min": min(seconds),
            "max": max(seconds),
            "load": f"{min(loads):.1f} - {max(loads):.1f}",
        }
        for name, seconds in times.items()
    }


# -- report --------------------------------------------------------------------------------


def report(args, source, batch, check, timings, memory):
    lines = [
        f"pool {args.pool}, batch {args.batch_size} x {batch[0].shape[1]} tokens "
        f"(mean length {batch[1].mean():.0f}); data: {source}",
        "",
        f"equivalence (same weights, same batch): loss minigrad {check['minigrad_loss']:.6f}, "
        f"torch {check['torch_loss']:.6f} (difference {check['loss_difference']:.1e}); "
        f"gradient norm {check['minigrad_grad_norm']:.5f} vs {check['torch_grad_norm']:.5f}; "
        f"largest relative gradient difference {check['worst_gradient_relative_difference']:.1e} "
        f"({check['worst_gradient']})",
        "",
        f"speed: median of {args.repeats} steps after {args.warmup} warm-up steps, each "
        "configuration in its own process, the configurations' steps interleaved",
        "",
        "| framework | threads | s/step (median) | min - max | import + build s | first step s "
        "| torch s / minigrad s | load avg |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in timings.items():
        lines.append(
            f"| {name} | {r['threads']} | {r['median']:.3f} "
            f"| {r['min']:.3f} - {r['max']:.3f} | {r['setup']:.1f} | {r['first_step']:.2f} "
            f"| {r['median'] / timings['minigrad']['median']:.2f} | {r['load']} |"
        )
    if memory:
        third, mine = memory["minigrad"]["third"], memory["minigrad"]
        lines += [
            "",
            f"memory: {args.steps} training steps on shuffled batches, each framework in its own "
            f"process (threads: {args.train_threads})",
            "",
            "| framework | RSS before step 1 MiB | peak RSS MiB | peak - before | RSS at step "
            f"{third} | RSS at step {args.steps} | s/step | loss, first 10 -> last 10 steps |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for name, r in memory.items():
            lines.append(
                f"| {name} | {r['rss_before']:.0f} | {r['peak']:.0f} "
                f"| {r['peak'] - r['rss_before']:.0f} | {r['rss_at_third']:.0f} "
                f"| {r['rss_at_end']:.0f} | {r['median_step']:.3f} "
                f"| {r['first_loss']:.4f} -> {r['last_loss']:.4f} |"
            )
        lines += [
            "",
            f"peak RSS minigrad / torch: {mine['peak'] / memory['torch']['peak']:.2f}; "
            f"minigrad RSS from step {third} to {args.steps}: "
            f"{mine['rss_at_end'] - mine['rss_at_third']:+.0f} MiB "
            f"(highest after step {third}: {mine['max_rss_after_third']:.0f} MiB)",
        ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return (time_worker if args.worker == "time" else train_worker)(args)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="minigrad-bench-") as workdir:
        encoded, vocab_size, source = prepare_data(args)
        print(
            f"data: {source}, {len(encoded):,} reviews ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        save_dataset(Path(workdir) / "dataset.npz", encoded, vocab_size)
        batch = timing_batch(encoded, args.batch_size, args.max_len, args.full_length)
        np.savez(Path(workdir) / "batch.npz", ids=batch[0], lengths=batch[1], labels=batch[2])

        import minigrad as mg
        from examples.sentiment.model import SentimentModel

        mg.manual_seed(0)
        state = SentimentModel(vocab_size, pool=args.pool).state_dict()
        np.savez(
            Path(workdir) / "state.npz", **{name: value.numpy() for name, value in state.items()}
        )
        check = check_equivalence(workdir, args.pool, batch)
        print(
            f"loss minigrad {check['minigrad_loss']:.6f}, torch {check['torch_loss']:.6f}, "
            f"difference {check['loss_difference']:.1e}",
            flush=True,
        )

        timings = time_all(args, workdir)
        memory = None
        if not args.skip_memory:
            threads, environment = thread_settings(args.train_threads)
            memory = {}
            for framework in ("minigrad", "torch"):  # one after the other: peak memory, not speed
                worker = start_worker("train", framework, args, workdir, threads, environment)
                memory[framework] = worker.ask({"steps": args.steps})
                worker.close()
    table = report(args, source, batch, check, timings, memory)
    print("\n" + table + f"\n({time.perf_counter() - started:.0f} s in all)")
    if args.markdown:
        save_report(args.markdown, __file__, argv or sys.argv[1:], table)


if __name__ == "__main__":
    main()
