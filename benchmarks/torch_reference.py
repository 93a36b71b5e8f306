"""The IMDB experiment trained by PyTorch 2.13 CPU from minigrad's starting point: is a gap in
accuracy the seed's luck, or minigrad's doing?

    python benchmarks/torch_reference.py --pool dot --seeds 0 1 2 --out runs/torch-reference

For each seed this does what `examples/sentiment/train.py --pool POOL --seed SEED` does, with
PyTorch in place of minigrad: same data, tokenizer, vocabulary and dev/test split
(examples/sentiment/preprocess.py), the initial weights of minigrad's model for that seed
(copied in), the same shuffled batches, Adam lr 1e-3, clipping at global norm 1.0, dev accuracy
every 50 steps, best-dev snapshot tested. Only the arithmetic differs (float32 sums in another
order), so the two runs start identical and drift apart slowly. Comparing the test accuracies
seed by seed separates the implementation from the noise of the seed.

PyTorch runs the model of benchmarks/torch_sentiment.py (its fast path: no packing). Prints one
line per seed and writes results.json (a list of dicts) to --out.
"""

import argparse
import json
import sys
import time
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
import minigrad as mg  # noqa: E402  (before torch: see README, "Threads")
from examples.sentiment import data, preprocess, train  # noqa: E402
from examples.sentiment.model import POOLINGS, SentimentModel  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", default="dot", choices=POOLINGS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--data", help="IMDB tarball or folder (default: the examples' cache folder)"
    )
    parser.add_argument("--out", default="runs/torch-reference")
    parser.add_argument(
        "--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)"
    )
    return parser.parse_args(argv)


def accuracy(torch, model, encoded, batch_size=256):
    model.eval()
    correct = 0
    with torch.no_grad():
        for ids, lengths, labels in preprocess.batches(encoded, batch_size):
            logits = model(torch.from_numpy(ids), torch.from_numpy(lengths))
            correct += int((logits.argmax(dim=1).numpy() == labels).sum())
    model.train()
    return correct / len(encoded)


def train_seed(pool, seed, vocab, train_set, dev, test, defaults):
    """One run with train.py's recipe (`defaults`: its parsed default arguments)."""
    import torch
    from torch_sentiment import TorchSentimentModel, load_minigrad_state

    mg.manual_seed(seed)  # minigrad's starting point for this seed, as train_model makes it
    start = SentimentModel(
        len(vocab),
        pool=pool,
        embedding_dim=defaults.embedding_dim,
        hidden_size=defaults.hidden_size,
    )
    model = TorchSentimentModel(
        len(vocab),
        pool=pool,
        embedding_dim=defaults.embedding_dim,
        hidden_size=defaults.hidden_size,
    )
    load_minigrad_state(model, {name: value.numpy() for name, value in start.state_dict().items()})
    optimizer = torch.optim.Adam(model.parameters(), lr=defaults.lr)
    best = {"dev_accuracy": -1.0, "step": 0, "state": None}
    step, started = 0, time.perf_counter()

    def evaluate():
        dev_accuracy = accuracy(torch, model, dev)
        if dev_accuracy > best["dev_accuracy"]:
            state = {name: value.clone() for name, value in model.state_dict().items()}
            best.update(dev_accuracy=dev_accuracy, step=step, state=state)

    for epoch in range(defaults.epochs):
        batches = preprocess.batches(
            train_set, defaults.batch_size, shuffle=True, seed=seed + epoch
        )
        for ids, lengths, labels in batches:
            loss = torch.nn.functional.cross_entropy(
                model(torch.from_numpy(ids), torch.from_numpy(lengths)), torch.from_numpy(labels)
            )
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), defaults.clip)
            optimizer.step()
            step += 1
            if step % defaults.eval_every == 0:
                evaluate()
        if step % defaults.eval_every:
            evaluate()
    model.load_state_dict(best["state"])
    return {
        "framework": f"torch {torch.__version__}",
        "pool": pool,
        "seed": seed,
        "test_accuracy": accuracy(torch, model, test),
        "best_dev_accuracy": best["dev_accuracy"],
        "best_step": best["step"],
        "total_seconds": time.perf_counter() - started,
    }


def main(argv=None):
    args = parse_args(argv)
    mg.kernels.tune_malloc()  # freed arrays kept for reuse, as train.py asks
    defaults = train.parse_args([])
    reviews = data.load_imdb(args.data, download=False, progress=False)
    vocab, train_set, dev, test, _ = train.prepare_data(reviews, defaults, progress=False)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    results = []
    for seed in args.seeds:
        result = train_seed(args.pool, seed, vocab, train_set, dev, test, defaults)
        results.append(result)
        print(
            f"{args.pool} seed {seed}: torch test accuracy {result['test_accuracy']:.4f} "
            f"(best dev {result['best_dev_accuracy']:.4f} at step {result['best_step']}), "
            f"{result['total_seconds']:.0f} s",
            flush=True,
        )
        preprocess.write_text_atomic(out / "results.json", json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
