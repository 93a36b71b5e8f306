"""Train the textbook's IMDB sentiment classifier with minigrad and report test accuracy.

    python examples/sentiment/train.py --pool dot                # one variant, full data
    python examples/sentiment/train.py --pool all                # the four variants + results
    python examples/sentiment/train.py --quick                   # a one-minute demo on a subset
    python examples/sentiment/train.py --data aclImdb_v1.tar.gz  # where the data is
    python examples/sentiment/train.py --pool dot --seeds 0 1 2  # one run per seed, mean +- std
    python examples/sentiment/train.py --pool dot --overwrite    # replace the earlier dot run

Settings are the textbook's (docs/imdb-reference.md): Adam lr 1e-3, batch 128, 2 epochs, the first
256 tokens, gradient clipping at global norm 1.0, dev accuracy every 50 steps, the best-dev
snapshot is reloaded for the test run. Seeded: a rerun prints the same numbers.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

if __package__ in (None, ""):  # run as a script: make `examples.sentiment` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import minigrad as mg  # noqa: E402
import minigrad.onnx  # noqa: E402, F401  (mg.onnx: --export-onnx)
from examples.sentiment import data, preprocess  # noqa: E402
from examples.sentiment.heatmap import attention_svg  # noqa: E402
from examples.sentiment.model import POOLINGS, SentimentModel  # noqa: E402

TEXTBOOK_ACCURACY = {"mean": 0.86064, "additive": 0.86488, "dot": 0.86936, "mhsa": 0.86520}
EXAMPLE_SENTENCE = "this great science fiction film is really awesome"


# The bounds of the settings: past them a value is a typo, or a run that cannot fit in memory
# or time, and it is refused before anything is read or written (README, "Settings").
MAX_LR = 1.0  # Adam's steps are about lr in size: past 1 the weights only jump about
LARGEST = {
    "epochs": 1000,
    "batch_size": 4096,  # and at most the training reviews (checked once they are read)
    "max_len": 4096,  # tokens kept per review (IMDB's longest has about 2,500)
    "embedding_dim": 2048,
    "hidden_size": 2048,
    "eval_every": 10**9,
    "seed": 2**64 - 1,  # mg.manual_seed's range
}
MHSA_HEADS = 8  # SentimentModel's mhsa pooling: 8 heads over the 2 x hidden_size features


def _whole_number(low, high=None):
    """An argparse type: an integer in [low, high] (argparse turns the error into a usage
    message)."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            expected = f">= {low}" if high is None else f"from {low} to {high:,}"
            raise argparse.ArgumentTypeError(f"expected an integer {expected}, got {text!r}")
        return value

    return parse


def _non_negative_number(text):
    """An argparse type: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _learning_rate(text):
    """An argparse type: a number in (0, MAX_LR]."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 0 < value <= MAX_LR:
        raise argparse.ArgumentTypeError(
            f"expected a number > 0 and at most {MAX_LR:g}, got {text!r}"
        )
    return value


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])

    def bounded(name, low=1):
        return _whole_number(low, LARGEST[name])

    parser.add_argument("--pool", default="dot", choices=POOLINGS + ("all",))
    parser.add_argument(
        "--data",
        help="aclImdb tarball (.tar, .tar.gz, .tar.bz2, .tar.xz) or extracted folder "
        "(default: cache, else download)",
    )
    parser.add_argument("--epochs", type=bounded("epochs"), default=2)
    parser.add_argument("--batch-size", type=bounded("batch_size"), default=128)
    parser.add_argument("--lr", type=_learning_rate, default=1e-3)
    parser.add_argument(
        "--clip",
        type=_non_negative_number,
        default=1.0,
        help="max global gradient norm (0: no clipping)",
    )
    parser.add_argument("--max-len", type=bounded("max_len"), default=256)
    parser.add_argument("--embedding-dim", type=bounded("embedding_dim"), default=128)
    parser.add_argument(
        "--hidden-size", type=bounded("hidden_size"), default=128, help="per LSTM direction"
    )
    parser.add_argument(
        "--eval-every", type=bounded("eval_every"), default=50, help="steps between dev evaluations"
    )
    parser.add_argument("--seed", type=bounded("seed", 0), default=0)
    parser.add_argument(
        "--seeds",
        type=bounded("seed", 0),
        nargs="+",
        help="train once per seed (results in OUT/seed<N>/) and report mean and spread",
    )
    parser.add_argument(
        "--out", default="runs", help="folder for checkpoints, pictures and results"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="demo: 6,000 train / 1,000 dev / 1,000 test reviews, first 128 tokens",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the results of an earlier run in --out (without it such a run is refused)",
    )
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--export-onnx",
        metavar="PATH",
        help="also write the trained model as ONNX (docs/onnx.md): inputs ids (batch, time) and "
        "lengths (batch,), output logits; one --pool and one seed",
    )
    args = parser.parse_args(argv)
    if args.export_onnx is not None:
        if args.pool == "all" or (args.seeds and len(args.seeds) > 1):
            parser.error("--export-onnx writes one model: give one --pool and at most one seed")
        problem = mg.onnx.destination_problem(args.export_onnx)
        if problem:
            parser.error(f"--export-onnx: {problem}")
    if args.seeds and len(set(args.seeds)) != len(args.seeds):
        parser.error(f"--seeds: give each seed once; got {args.seeds}")
    if args.pool in ("mhsa", "all") and 2 * args.hidden_size % MHSA_HEADS:
        parser.error(
            f"--hidden-size must be a multiple of {MHSA_HEADS // 2} for the mhsa pooling "
            f"(its {MHSA_HEADS} heads share the 2 x hidden-size features); got {args.hidden_size}"
        )
    return args


# -- data ---------------------------------------------------------------------------------


def prepare_data(reviews, args, progress=True):
    """Split, tokenize and encode: (vocab, train, dev, test, raw test pairs); vocabulary from train
    only."""
    train_pairs = reviews["train"]
    dev_pairs, test_pairs = preprocess.split_dev_test(reviews["test"], seed=0)
    if args.quick:
        pick = np.random.default_rng(0)  # the same subset whatever the training seed
        train_pairs = [train_pairs[i] for i in pick.permutation(len(train_pairs))[:6000]]
        dev_pairs, test_pairs = dev_pairs[:1000], test_pairs[:1000]
    train_tokens = [
        preprocess.tokenize(text)
        for text, _ in tqdm(train_pairs, desc="tokenizing", disable=not progress)
    ]
    vocab = preprocess.build_vocab(train_tokens)
    encode = lambda pairs: preprocess.encode_dataset(pairs, vocab, args.max_len, progress=progress)  # noqa: E731
    train = encode([(tokens, label) for tokens, (_, label) in zip(train_tokens, train_pairs)])
    return vocab, train, encode(dev_pairs), encode(test_pairs), test_pairs


def data_problem(prepared, args):
    """Why the prepared data cannot give a result (a sentence), or None: a set without a review
    that holds a word of the vocabulary (the training reviews without any word), a batch
    larger than the training set, or a model and batches larger than the memory left."""
    vocab, train, dev, test, _ = prepared
    if len(vocab) <= 2:  # [pad] and [unk] only
        return f"the {len(train):,} training reviews hold no words: there is nothing to learn from"
    for name, encoded in (("dev", dev), ("test", test)):
        if not any((ids != vocab.unk_id).any() for ids, _ in encoded):
            return (
                f"none of the {len(encoded):,} {name} reviews holds a word of the vocabulary: "
                "its accuracy would mean nothing"
            )
    if args.batch_size > len(train):
        return (
            f"--batch-size {args.batch_size:,} is more than the {len(train):,} training reviews; "
            f"give at most {len(train):,}"
        )
    needed, available = memory_needed(len(vocab), train, args), mg.io._available_memory()
    if available is not None and needed > available:
        return (
            f"a model of these settings and batches of {args.batch_size:,} reviews of up to "
            f"{max(len(ids) for ids, _ in train):,} tokens need about {needed / 2**30:,.1f} GiB; "
            f"this process can take {available / 2**30:,.1f} GiB. Use a smaller --batch-size, "
            "--max-len, --embedding-dim or --hidden-size"
        )
    return None


def memory_needed(vocab_size, train, args):
    """About how many bytes training takes: the weights with their gradients and Adam's two
    moments (4 float32 copies; the pooling's weights are at most (2H)^2 x 4), and a step's
    activations and their gradients for the longest batch (per token the embedding, both LSTM
    directions' gates and states, the pooling's projections)."""
    embedding, hidden = args.embedding_dim, args.hidden_size
    weights = vocab_size * embedding + 8 * hidden * (embedding + hidden + 2)
    weights += 16 * hidden * hidden + 4 * hidden
    tokens = args.batch_size * max(len(ids) for ids, _ in train)
    return 4 * (4 * weights + 2 * tokens * (embedding + 20 * hidden))


# -- training -----------------------------------------------------------------------------


class DivergedError(ValueError):
    """The training loss (or a weight) stopped being a finite number: the run has no result."""


@mg.inference_mode()
def predict(model, encoded, batch_size=256):
    """Logits (N, classes) of the reviews [(ids, label)], in their order. The model runs in
    eval mode, under inference_mode (its kernels keep nothing for a backward), on batches of
    reviews of about the same length: sorted by length, a batch pads to its longest review,
    so little padding is computed. Longest first: the first batch's arrays are the largest,
    and the shorter batches after it reuse them (minigrad/kernels/_buffers.py). Each review's
    logits do not depend on its batch, because the model masks the padding. No reviews: an
    empty (0, classes) array."""
    if not encoded:
        return np.empty((0, model.classifier.out_features), np.float32)
    order = np.argsort([-len(ids) for ids, _ in encoded], kind="stable")
    by_length = [encoded[i] for i in order]
    logits = None
    was_training = model.training
    model.eval()
    for start, (ids, lengths, _) in zip(
        range(0, len(encoded), batch_size), preprocess.batches(by_length, batch_size)
    ):
        batch = model(mg.tensor(ids), lengths, need_weights=False).numpy()
        if logits is None:
            logits = np.empty((len(encoded), batch.shape[1]), batch.dtype)
        logits[order[start : start + len(batch)]] = batch  # back to the reviews' own order
    model.train(was_training)
    return logits


def accuracy(model, encoded, batch_size=256):
    """The fraction of reviews whose largest logit is their label's."""
    if not encoded:
        raise ValueError("accuracy: expected at least one review; got none")
    labels = np.array([label for _, label in encoded])
    correct = int((predict(model, encoded, batch_size).argmax(axis=1) == labels).sum())
    return correct / len(encoded)


def train_model(pool, vocab, train, dev, args, progress=True):
    """Train one variant; returns (model restored to its best-dev snapshot, log dict)."""
    mg.manual_seed(args.seed)
    model = SentimentModel(
        len(vocab), pool=pool, embedding_dim=args.embedding_dim, hidden_size=args.hidden_size
    )
    optimizer = mg.optim.Adam(model.parameters(), lr=args.lr)
    steps_per_epoch = -(-len(train) // args.batch_size)
    best = {"dev_accuracy": -1.0, "step": 0, "state": None}
    step, step_seconds, losses, evaluation_seconds = 0, [], [], []
    bar = tqdm(total=steps_per_epoch * args.epochs, desc=f"training {pool}", disable=not progress)

    def evaluate():
        tick = time.perf_counter()
        dev_accuracy = accuracy(model, dev)
        evaluation_seconds.append(time.perf_counter() - tick)
        if dev_accuracy > best["dev_accuracy"]:
            state = {name: value.numpy().copy() for name, value in model.state_dict().items()}
            best.update(dev_accuracy=dev_accuracy, step=step, state=state)
        bar.set_postfix(
            loss=f"{np.mean(losses[-20:]):.4f}",
            dev=f"{dev_accuracy:.4f}",
            best=f"{best['dev_accuracy']:.4f}",
        )

    started = time.perf_counter()
    for epoch in range(args.epochs):
        for ids, lengths, labels in preprocess.batches(
            train, args.batch_size, shuffle=True, seed=args.seed + epoch
        ):
            tick = time.perf_counter()
            # need_weights=False: no attention weights to show, so the mhsa model computes the
            # mean of its self-attention's outputs directly (SentimentModel.forward)
            loss = mg.cross_entropy(model(mg.tensor(ids), lengths, need_weights=False), labels)
            if not np.isfinite(loss.item()):
                raise DivergedError(
                    f"the {pool} run diverged: its training loss was {loss.item()} at step "
                    f"{step + 1}"
                )
            optimizer.zero_grad()
            loss.backward()
            if args.clip:
                mg.optim.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            step_seconds.append(time.perf_counter() - tick)
            losses.append(loss.item())
            step += 1
            bar.update()
            if step % args.eval_every == 0:
                evaluate()
        if step % args.eval_every:
            evaluate()
    bar.close()
    total_seconds = time.perf_counter() - started
    if not all(np.isfinite(array).all() for array in best["state"].values()):
        raise DivergedError(f"the {pool} run diverged: its weights hold NaN or infinite values")
    model.load_state_dict(best["state"])
    log = {
        "best_dev_accuracy": best["dev_accuracy"],
        "best_step": best["step"],
        "steps": step,
        "seconds_per_step": float(np.median(step_seconds)),
        "total_seconds": total_seconds,
        "evaluation_seconds": float(np.sum(evaluation_seconds)),
        "final_loss": float(np.mean(losses[-20:])),
    }
    return model, log


# -- inspection ---------------------------------------------------------------------------


@mg.no_grad()
def token_weights(model, vocab, token_lists):
    """Per-token weights the pooling gives each text: attention weights for additive/dot,
    the attention each token receives (averaged over heads and queries) for mhsa, and
    1/length for mean pooling."""
    if not token_lists:
        return []
    model.eval()
    encoded = [(np.array(vocab.encode(tokens), dtype=np.int64), 0) for tokens in token_lists]
    ids, lengths, _ = next(preprocess.batches(encoded, len(encoded)))
    model(mg.tensor(ids), lengths)
    model.train()
    if model.pool_name in ("additive", "dot"):
        weights = model.attention_weights()
    elif model.pool_name == "mhsa":
        weights = model.attention.last_weights.mean(axis=(1, 2))
    else:
        weights = (np.arange(ids.shape[1]) < lengths[:, None]) / lengths[:, None]
    return [w[:n].tolist() for w, n in zip(weights, lengths)]


SHORT_REVIEW = 60  # tokens: the longest test review the heatmap shows


def report_attention(model, vocab, test_pairs, out_dir, pool):
    """Print the weights of EXAMPLE_SENTENCE and draw out_dir/attention.svg: the sentence and up
    to four test reviews of 1..SHORT_REVIEW tokens (none, with a printed note, when no review is
    that short). Returns {token: weight} of the sentence. A heatmap that cannot be written is a
    printed note too: the report never costs the run its results."""
    tokens = EXAMPLE_SENTENCE.split()
    (weights,) = token_weights(model, vocab, [tokens])
    print(f'\nweights the {pool} pooling gives to "{EXAMPLE_SENTENCE}":')
    print("| token | weight |\n|---|---|")
    for token, weight in zip(tokens, weights):
        print(f"| {token} | {weight:.4f} |")
    short = [
        (tokens, label)
        for tokens, label in ((preprocess.tokenize(text), label) for text, label in test_pairs)
        if 1 <= len(tokens) <= SHORT_REVIEW
    ][:4]
    if not short:
        print(
            f"note: no test review has 1 to {SHORT_REVIEW} tokens; "
            "the heatmap shows the example sentence only"
        )
    token_lists = [tokens for tokens, _ in short]
    rows = [
        (f"{'positive' if label else 'negative'} review", tokens, weights)
        for (_, label), tokens, weights in zip(
            short, token_lists, token_weights(model, vocab, token_lists)
        )
    ]
    rows.insert(0, ("example sentence", tokens, weights))
    path = out_dir / "attention.svg"
    try:
        preprocess.write_text_atomic(
            path, attention_svg(rows, title=f"{pool} pooling: attention weights")
        )
        print(f"attention heatmap: {path}")
    except OSError as error:
        print(f"note: the attention heatmap could not be written to {path}: {error}")
    return dict(zip(tokens, weights))


# -- main ---------------------------------------------------------------------------------


RUN_FILES = ("results.json", "best.npz", "vocab.json", "attention.svg")  # in OUT/<pool>/


def run(pool, prepared, args, out_dir, progress=True):
    """Train one variant and write its RUN_FILES into out_dir; a run that diverges raises
    DivergedError before writing anything."""
    vocab, train, dev, test, test_pairs = prepared
    model, log = train_model(pool, vocab, train, dev, args, progress)
    log["test_accuracy"] = accuracy(model, test)
    out_dir.mkdir(parents=True, exist_ok=True)
    log["seed"] = args.seed
    # The numbers first: whatever fails after this (a checkpoint, a report), they are on disk.
    write_json_atomic(out_dir / "results.json", log)
    mg.save(model.state_dict(), out_dir / "best.npz")
    vocab.to_json(out_dir / "vocab.json")
    if args.export_onnx:
        export_onnx(model, args.export_onnx)
    print(
        f"\n{pool}: test accuracy {log['test_accuracy']:.4f} "
        f"(best dev {log['best_dev_accuracy']:.4f} at step {log['best_step']}), "
        f"textbook {TEXTBOOK_ACCURACY[pool]:.4f}; "
        f"{log['seconds_per_step']:.3f} s/step, {log['total_seconds']:.0f} s in all "
        f"({log['evaluation_seconds']:.0f} s of dev evaluations); checkpoint {out_dir / 'best.npz'}"
    )
    log["example_weights"] = report_attention(model, vocab, test_pairs, out_dir, pool)
    write_json_atomic(out_dir / "results.json", log)
    return log


def export_onnx(model, path):
    """The model as ONNX, batch and time dynamic: ids (B, T) int64 padded with 0, lengths (B,)."""
    ids = mg.tensor(np.array([[2, 3, 4, 5], [2, 3, 0, 0]], np.int64))
    mg.onnx.export(
        model,
        (ids, mg.tensor(np.array([4, 2], np.int64))),
        path,
        input_names=["ids", "lengths"],
        output_names=["logits"],
        dynamic_axes={"ids": {0: "batch", 1: "time"}, "lengths": {0: "batch"}, "logits": [0]},
    )
    print(f"ONNX model: {path}")


def run_folder(out, pool, seed, seeds):
    """Where one run's RUN_FILES go: OUT/<pool>, or OUT/seed<N>/<pool> with several seeds."""
    return Path(out) / pool if len(seeds) == 1 else Path(out) / f"seed{seed}" / pool


def planned_files(out, pools, seeds):
    """Every file a command writes under --out (the runs' files, then the summary's)."""
    files = [
        run_folder(out, pool, seed, seeds) / name
        for seed in seeds
        for pool in pools
        for name in RUN_FILES
    ]
    if len(pools) > 1 or len(seeds) > 1:
        files += [Path(out) / "results.json", Path(out) / "results.md"]
    return files


def write_json_atomic(path, value):
    """value as indented JSON at path, through minigrad.io.atomic_file (all or nothing)."""
    preprocess.write_text_atomic(path, json.dumps(value, indent=2))


def results_table(results, quick):
    lines = [
        "| pooling | test accuracy | textbook | best dev | s/step | total s | dev evaluations |",
        "|---|---|---|---|---|---|---|",
    ]
    for pool, log in results.items():
        lines.append(
            f"| {pool} | {log['test_accuracy']:.4f} | {TEXTBOOK_ACCURACY[pool]:.4f} "
            f"| {log['best_dev_accuracy']:.4f} | {log['seconds_per_step']:.3f} "
            f"| {log['total_seconds']:.0f} | {log['evaluation_seconds']:.0f} s |"
        )
    return _with_quick_note(lines, quick)


def summarize(runs):
    """The runs of one pooling over several seeds -> accuracies, mean and sample std."""
    accuracies = [log["test_accuracy"] for log in runs]
    return {
        "seeds": [log["seed"] for log in runs],
        "test_accuracy": accuracies,
        "mean": float(np.mean(accuracies)),
        "std": float(np.std(accuracies, ddof=1)),
        "seconds_per_step": float(np.median([log["seconds_per_step"] for log in runs])),
        "runs": runs,
    }


def seeds_table(summaries, quick):
    lines = [
        "| pooling | seeds | test accuracy per seed | mean | std | textbook |",
        "|---|---|---|---|---|---|",
    ]
    for pool, summary in summaries.items():
        per_seed = ", ".join(f"{accuracy:.4f}" for accuracy in summary["test_accuracy"])
        seeds = ", ".join(str(seed) for seed in summary["seeds"])
        lines.append(
            f"| {pool} | {seeds} | {per_seed} | {summary['mean']:.4f} | {summary['std']:.4f} | "
            f"{TEXTBOOK_ACCURACY[pool]:.4f} |"
        )
    return _with_quick_note(lines, quick)


def _with_quick_note(lines, quick):
    if quick:
        lines.append(
            "\nQUICK DEMO: a 6,000-review subset, 128 tokens; not comparable with the textbook."
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    if args.quick:
        args.max_len, args.eval_every = 128, 10
        print(
            "QUICK DEMO: 6,000 train / 1,000 dev / 1,000 test reviews, first 128 tokens. "
            "Accuracy is not comparable with the textbook; drop --quick for the real experiment."
        )
    progress = not args.no_progress
    pools = POOLINGS if args.pool == "all" else (args.pool,)
    seeds = args.seeds or [args.seed]
    earlier = [path for path in planned_files(args.out, pools, seeds) if os.path.lexists(path)]
    if args.export_onnx and os.path.lexists(args.export_onnx):
        earlier.append(Path(args.export_onnx))
    if earlier and not args.overwrite:
        shown = ", ".join(map(str, earlier[:3])) + (" ..." if len(earlier) > 3 else "")
        sys.exit(
            f"train.py: the --out folder {args.out} holds an earlier run's results ({shown}); "
            "pass --overwrite to replace them, or give another --out"
        )
    started = time.perf_counter()
    try:
        reviews = data.load_imdb(args.data, progress=progress)
    except data.DataNotFoundError as error:  # no data at all: the message lists the three ways
        sys.exit(str(error))
    except (OSError, ValueError) as error:  # a --data path that is missing, unreadable or not IMDB
        sys.exit(f"train.py: {error}")
    prepared = prepare_data(reviews, args, progress)
    problem = data_problem(prepared, args)
    if problem:
        sys.exit(f"train.py: {args.data or 'the IMDB data'}: {problem}")
    try:  # a folder that cannot be written fails now, not after the training
        Path(args.out).mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=args.out).close()
    except OSError as error:
        sys.exit(
            f"train.py: cannot write to the --out folder {args.out}: {error.strerror or error}"
        )
    print(
        f"data: {len(prepared[1])} train, {len(prepared[2])} dev, {len(prepared[3])} test reviews, "
        f"vocabulary {len(prepared[0])} ({time.perf_counter() - started:.1f} s)"
    )
    runs = {pool: [] for pool in pools}
    for seed in seeds:
        args.seed = seed
        for pool in pools:
            out = run_folder(args.out, pool, seed, seeds)
            try:
                runs[pool].append(run(pool, prepared, args, out, progress))
            except DivergedError as error:
                sys.exit(
                    f"train.py: {error}; nothing of it was written ({out} is as it was). "
                    f"Try a smaller --lr (this run's: {args.lr:g})"
                    + (", or --clip 1" if not args.clip else "")
                )
    if len(seeds) == 1:
        results = {pool: logs[0] for pool, logs in runs.items()}
        table = results_table(results, args.quick)
    else:
        results = {pool: summarize(logs) for pool, logs in runs.items()}
        table = seeds_table(results, args.quick)
    print("\n" + table)
    if args.pool == "all" or len(seeds) > 1:
        out = Path(args.out)
        write_json_atomic(out / "results.json", results)  # the numbers before the table
        preprocess.write_text_atomic(out / "results.md", table)
        print(f"results: {out / 'results.md'}, {out / 'results.json'}")
    return results


if __name__ == "__main__":
    # The script's choice for its whole process (importing minigrad leaves malloc alone): glibc
    # keeps freed arrays for the next steps instead of fresh pages (docs/API.md, "Environment").
    mg.kernels.tune_malloc()
    main()
