"""A dev evaluation of the IMDB sentiment model: minigrad's inference path against an earlier
minigrad and PyTorch 2.13 CPU, in one run.

    python benchmarks/inference.py                         # dot and mhsa, 12,500 dev reviews
    python benchmarks/inference.py --before 8008d2f        # also minigrad as of that commit
    python benchmarks/inference.py --pool dot --reviews 2560 --repeats 3 --markdown out.md

An evaluation is what examples/sentiment/train.py does every 50 steps: the logits of every dev
review, batch 256, and the accuracy. minigrad's `train.accuracy` runs under inference_mode on
reviews sorted by length (examples/sentiment/train.py, `predict`), its kernels keeping nothing
for a backward. `--before REV` also runs the `train.accuracy` of that commit (its tree exported
with `git archive` into a temporary folder, the repository untouched): before this inference
path it evaluated under no_grad, in the dev set's order, through the training kernels.
PyTorch runs benchmarks/torch_sentiment.py's model (its fast path, no packing) twice: as
benchmarks/torch_reference.py evaluates (no_grad, the dev set's order) and like minigrad now
(inference_mode, sorted by length, logits put back in order).

The dev reviews are the real ones (the examples' data loader: --data, else $MINIGRAD_DATA or
the cache folder; vocabulary from the train split) when the data is there, else synthetic
random ids with IMDB-like lengths. Every configuration loads the same weights: a fixed-seed
model, trained --train-steps steps first (by minigrad, in this process) so that its predictions
are not near ties. Each configuration runs in a worker process of its own, all alive at once,
their evaluations interleaved (benchmarks/workers.py): --warmup untimed each, then --repeats
rounds; the median is reported, with the accuracy each one computed, how many of its
predictions differ from minigrad's, and its peak resident memory (VmHWM).
"""

import argparse
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from workers import Worker, interleaved_times, save_report, serve, timed

REPO = Path(__file__).resolve().parents[1]
# the tree whose minigrad and examples a worker imports: this one, or --before's exported tree
TREE = Path(sys.argv[sys.argv.index("--tree") + 1]) if "--tree" in sys.argv else REPO
sys.path.insert(0, str(TREE))  # run as a script: make `minigrad`, `nn` and `examples` importable
from examples.sentiment import data, preprocess  # noqa: E402  (numpy only: imports neither framework)
from train_step import load_dataset, memory_mib, save_dataset  # noqa: E402

# train_step put this repository first on the path: the tree's minigrad must win
sys.path.insert(0, str(TREE))


def _layers_of_the_tree():
    """Make `minigrad.nn` the tree's nn/ folder. An install maps that name to its own nn/
    (pyproject.toml), which a tree on sys.path does not change: without this an exported tree's
    engine would run this repository's layers."""
    import importlib.util

    init = TREE / "nn" / "__init__.py"
    if TREE == REPO or not init.exists():
        return
    spec = importlib.util.spec_from_file_location(
        "minigrad.nn", init, submodule_search_locations=[str(init.parent)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["minigrad.nn"] = module
    spec.loader.exec_module(module)


_layers_of_the_tree()

SYNTHETIC_VOCAB, SYNTHETIC_REVIEWS = 81_000, 12_500


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", default="dot,mhsa", help="comma-separated poolings")
    parser.add_argument("--data", help="IMDB tarball or folder (default: the cache folder)")
    parser.add_argument("--synthetic", action="store_true", help="random ids even with data")
    parser.add_argument("--reviews", type=int, default=12_500, help="dev reviews evaluated")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--train-steps", type=int, default=0, help="minigrad steps first")
    parser.add_argument("--before", help="a commit whose minigrad is also timed (git archive)")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", help="also write the results table to this file")
    # internal: the workers
    parser.add_argument(
        "--worker", choices=("minigrad", "minigrad-unsorted", "torch", "torch-sorted")
    )
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# -- data and weights ------------------------------------------------------------------------


def prepare_data(args):
    """(train [(ids, label)], dev [(ids, label)], vocabulary size, description)."""
    reviews = None
    if not args.synthetic:
        try:  # never downloads
            reviews = data.load_imdb(args.data, download=False, progress=False)
        except data.DataNotFoundError:
            pass
    if reviews is not None:
        from examples.sentiment import train

        defaults = train.parse_args([])
        vocab, train_set, dev, _, _ = train.prepare_data(reviews, defaults, progress=False)
        return train_set, dev, len(vocab), f"real IMDB dev split, vocabulary {len(vocab):,}"
    rng = np.random.default_rng(0)  # lengths roughly like IMDB's (median ~200 tokens), cut at 256
    lengths = np.clip(rng.lognormal(5.2, 0.6, 2 * SYNTHETIC_REVIEWS).astype(int), 5, 256)
    encoded = [(rng.integers(2, SYNTHETIC_VOCAB, n), int(rng.integers(2))) for n in lengths]
    why = "--synthetic" if args.synthetic else "no IMDB data found"
    return (
        encoded[:SYNTHETIC_REVIEWS],
        encoded[SYNTHETIC_REVIEWS:],
        SYNTHETIC_VOCAB,
        f"SYNTHETIC random ids ({why}), vocabulary {SYNTHETIC_VOCAB:,}",
    )


def starting_state(pool, vocab_size, train_set, steps, batch_size):
    """The fixed-seed model's weights after `steps` Adam steps on shuffled train batches."""
    import minigrad as mg
    from examples.sentiment.model import SentimentModel

    mg.manual_seed(0)
    model = SentimentModel(vocab_size, pool=pool)
    optimizer = mg.optim.Adam(model.parameters(), lr=1e-3)
    batches = preprocess.batches(train_set, batch_size, shuffle=True, seed=0)
    for _, (ids, lengths, labels) in zip(range(steps), batches):
        loss = mg.cross_entropy(model(mg.tensor(ids), lengths, need_weights=False), labels)
        optimizer.zero_grad()
        loss.backward()
        mg.optim.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return {name: value.numpy() for name, value in model.state_dict().items()}


# -- workers ---------------------------------------------------------------------------------


def minigrad_evaluator(pool, vocab_size, state, batch_size, sorted_by_length):
    """The evaluation of the tree's examples/sentiment/train.py (predict, sorted by length), or,
    in a tree from before predict() or when not sorted_by_length, what accuracy() did then."""
    from examples.sentiment import train
    from examples.sentiment.model import SentimentModel

    model = SentimentModel(vocab_size, pool=pool)
    model.load_state_dict(state)
    if sorted_by_length and hasattr(train, "predict"):
        return lambda encoded: train.predict(model, encoded, batch_size)
    return lambda encoded: _logits_in_dataset_order(model, encoded, batch_size)


def _logits_in_dataset_order(model, encoded, batch_size):
    """Before predict() existed: what train.accuracy computed (no_grad, the dev set's order)."""
    import minigrad as mg

    model.eval()
    with mg.no_grad():
        return np.concatenate(
            [
                model(mg.tensor(ids), lengths).numpy()
                for ids, lengths, _ in preprocess.batches(encoded, batch_size)
            ]
        )


def torch_evaluator(pool, vocab_size, state, batch_size, by_length):
    import torch
    from torch_sentiment import TorchSentimentModel, load_minigrad_state

    model = TorchSentimentModel(vocab_size, pool=pool)
    load_minigrad_state(model, state)
    model.eval()

    def evaluate(encoded):
        order = (
            np.argsort([len(ids) for ids, _ in encoded], kind="stable")
            if by_length
            else np.arange(len(encoded))
        )
        logits = np.empty((len(encoded), 2), np.float32)
        mode = torch.inference_mode() if by_length else torch.no_grad()
        with mode:
            batches = preprocess.batches([encoded[i] for i in order], batch_size)
            for start, (ids, lengths, _) in zip(range(0, len(encoded), batch_size), batches):
                out = model(torch.from_numpy(ids), torch.from_numpy(lengths)).numpy()
                logits[order[start : start + len(out)]] = out
        return logits

    return evaluate


def worker(args):
    workdir = Path(args.workdir)
    encoded, vocab_size = load_dataset(workdir / "dev.npz")
    pools = args.pool.split(",")
    evaluators = {}
    if args.worker.startswith("minigrad"):
        import minigrad as mg

        mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
    for pool in pools:
        state = dict(np.load(workdir / f"state-{pool}.npz"))
        if args.worker.startswith("minigrad"):
            evaluators[pool] = minigrad_evaluator(
                pool, vocab_size, state, args.batch_size, args.worker == "minigrad"
            )
        else:
            evaluators[pool] = torch_evaluator(
                pool, vocab_size, state, args.batch_size, args.worker == "torch-sorted"
            )

    def handle(request):
        result = {}
        seconds = timed(lambda: result.update(logits=evaluators[request["pool"]](encoded)))
        predictions = result["logits"].argmax(axis=1)
        labels = np.array([label for _, label in encoded])
        return {
            "seconds": seconds,
            "correct": int((predictions == labels).sum()),
            "predictions": predictions.tolist(),
            "peak_mib": memory_mib()[1],
        }

    serve({}, handle)


# -- the parent ------------------------------------------------------------------------------


def export_tree(revision, folder):
    """The repository's files at `revision`, written into folder (git archive; no checkout)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", revision],
        capture_output=True,
        check=True,
    ).stdout
    with tempfile.TemporaryFile() as file:
        file.write(archive)
        file.seek(0)
        with tarfile.open(fileobj=file) as tar:
            tar.extractall(folder, filter="data")
    return folder


def start(kind, args, workdir, tree=REPO):
    """This script as a worker of `kind`, importing minigrad and the examples from `tree`."""
    command = [sys.executable, __file__, "--worker", kind, "--workdir", workdir, "--tree", tree]
    return Worker(
        [
            str(part)
            for part in command + ["--pool", args.pool, "--batch-size", str(args.batch_size)]
        ]
    )


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    started = time.perf_counter()
    train_set, dev, vocab_size, source = prepare_data(args)
    dev = dev[: args.reviews]
    lengths = np.array([len(ids) for ids, _ in dev])
    print(f"data: {source}; {len(dev):,} dev reviews, mean length {lengths.mean():.0f}", flush=True)
    pools = args.pool.split(",")
    with tempfile.TemporaryDirectory(prefix="minigrad-inference-") as workdir:
        save_dataset(Path(workdir) / "dev.npz", dev, vocab_size)
        for pool in pools:
            state = starting_state(pool, vocab_size, train_set, args.train_steps, args.batch_size)
            np.savez(Path(workdir) / f"state-{pool}.npz", **state)
        workers = {}
        try:
            workers["minigrad"] = start("minigrad", args, workdir)
            workers["minigrad, no_grad, dev order"] = start("minigrad-unsorted", args, workdir)
            if args.before:
                tree = export_tree(args.before, Path(workdir) / "before")
                workers[f"minigrad {args.before}"] = start("minigrad", args, workdir, tree)
            workers["torch, no_grad, dev order"] = start("torch", args, workdir)
            workers["torch, inference_mode, sorted"] = start("torch-sorted", args, workdir)
            results = {}
            for pool in pools:
                answers = {name: [] for name in workers}

                def note(request_pool=pool):
                    return {name: (w, {"pool": request_pool}) for name, w in workers.items()}

                times = interleaved_times(note(), args.warmup, args.repeats)
                for name, w in workers.items():  # one more answer each: predictions and memory
                    answers[name] = w.ask({"pool": pool})
                results[pool] = (times, answers)
                print(
                    f"{pool}: " + ", ".join(f"{n} {np.median(t):.2f} s" for n, t in times.items()),
                    flush=True,
                )
        finally:
            for w in workers.values():
                w.close()
    table = report(args, source, len(dev), results)
    print("\n" + table + f"\n({time.perf_counter() - started:.0f} s in all)")
    if args.markdown:
        save_report(args.markdown, __file__, argv or sys.argv[1:], table)


def report(args, source, reviews, results):
    lines = [
        f"{reviews:,} dev reviews, batch {args.batch_size}; data: {source}; weights: fixed seed, "
        f"{args.train_steps} training steps; median of {args.repeats} evaluations, interleaved",
        "",
        "| pooling | configuration | s per evaluation | / minigrad | accuracy | predictions "
        "unlike minigrad's | peak RSS MiB |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for pool, (times, answers) in results.items():
        ours = float(np.median(times["minigrad"]))
        mine = np.array(answers["minigrad"]["predictions"])
        for name, seconds in times.items():
            answer = answers[name]
            differ = int((np.array(answer["predictions"]) != mine).sum())
            lines.append(
                f"| {pool} | {name} | {np.median(seconds):.2f} | {np.median(seconds) / ours:.2f} "
                f"| {answer['correct'] / reviews:.4f} | {differ} | {answer['peak_mib']:.0f} |"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
