"""The sentiment example end to end, on data made here (the real IMDB is never needed)."""

import json

import numpy as np
import pytest

import minigrad as mg
from examples.sentiment import data, preprocess, train
from examples.sentiment.model import SentimentModel


# -- a task attention should solve: the label is one planted word among random ones --------

FILLER_IDS = np.arange(4, 60)  # ids 0/1 are [pad]/[unk]; 2 = "good", 3 = "bad"
GOOD, BAD = 2, 3


def planted_word_data(count, rng):
    """Sequences of 6..20 random filler words with one 'good' (label 1) or 'bad' (label 0)
    planted at a random position. Returns [(ids, label)] and the planted positions."""
    encoded, positions = [], []
    for _ in range(count):
        length = int(rng.integers(6, 21))
        ids = rng.choice(FILLER_IDS, size=length)
        label = int(rng.integers(0, 2))
        position = int(rng.integers(0, length))
        ids[position] = GOOD if label else BAD
        encoded.append((ids.astype(np.int64), label))
        positions.append(position)
    return encoded, np.array(positions)


@pytest.mark.parametrize("pool", ["dot", "additive"])
def test_attention_pooling_learns_and_points_at_the_planted_word(pool):
    rng = np.random.default_rng(1)
    train_set, _ = planted_word_data(1200, rng)
    dev_set, dev_positions = planted_word_data(300, rng)
    mg.manual_seed(0)
    model = SentimentModel(60, pool=pool, embedding_dim=16, hidden_size=16)
    optimizer = mg.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(4):
        for ids, lengths, labels in preprocess.batches(train_set, 32, shuffle=True, seed=epoch):
            loss = mg.cross_entropy(model(mg.tensor(ids), lengths), labels)
            optimizer.zero_grad()
            loss.backward()
            mg.optim.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()

    assert train.accuracy(model, dev_set) > 0.95
    ids, lengths, _ = next(preprocess.batches(dev_set, len(dev_set)))
    with mg.no_grad():
        model.eval()
        model(mg.tensor(ids), lengths)
    weights = model.attention_weights()
    assert weights.shape == ids.shape
    padded = np.arange(ids.shape[1]) >= lengths[:, None]
    assert np.all(weights[padded] == 0.0)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-5)
    hits = weights.argmax(axis=1) == dev_positions
    if pool == "dot":
        # One learned query is one direction in feature space: the model learns to look for
        # 'good' and to read its absence as negative, so only positive reviews must point at it.
        labels = np.array([label for _, label in dev_set])
        hits = hits[labels == 1]
    assert hits.mean() > 0.8, (
        f"largest weight on the planted word in only {hits.mean():.0%} of reviews"
    )


def test_every_pooling_gives_logits_and_gradients_for_every_parameter():
    ids = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
    lengths = np.array([3, 2])
    for pool in ("mean", "additive", "dot", "mhsa"):
        mg.manual_seed(0)
        model = SentimentModel(12, pool=pool, embedding_dim=8, hidden_size=8, num_heads=2)
        logits = model(mg.tensor(ids), lengths)
        assert logits.shape == (2, 2)
        mg.cross_entropy(logits, [1, 0]).backward()
        for name, parameter in model.named_parameters():
            assert parameter.grad is not None, f"{pool}: {name} got no gradient"
        # the padding row of the embedding never gets a gradient
        assert np.all(model.embedding.weight.grad.numpy()[0] == 0)


def test_model_rejects_an_unknown_pooling():
    with pytest.raises(ValueError, match="pool must be one of"):
        SentimentModel(10, pool="max")


# -- the training script on a tiny tarball in the official layout --------------------------


def tiny_reviews(rng):
    good = ["a great film", "really awesome acting", "great story , great cast", "loved it !"]
    bad = ["a boring film", "really awful acting", "boring story , bad cast", "hated it !"]
    pick = lambda texts: [str(rng.choice(texts)) + " " + str(rng.choice(texts)) for _ in range(40)]  # noqa: E731
    return {
        ("train", "pos"): pick(good),
        ("train", "neg"): pick(bad),
        ("test", "pos"): pick(good),
        ("test", "neg"): pick(bad),
    }


def test_training_script_end_to_end(tmp_path, capsys, make_imdb_tarball):
    tarball = make_imdb_tarball(tiny_reviews(np.random.default_rng(0)))
    out = tmp_path / "runs"
    args = [
        "--data",
        str(tarball),
        "--pool",
        "all",
        "--epochs",
        "5",
        "--batch-size",
        "16",
        "--embedding-dim",
        "16",
        "--hidden-size",
        "16",
        "--lr",
        "0.01",
        "--eval-every",
        "5",
        "--out",
        str(out),
        "--no-progress",
    ]
    results = train.main(args)

    assert set(results) == {"mean", "additive", "dot", "mhsa"}
    for pool, log in results.items():
        assert log["test_accuracy"] > 0.9, (pool, log)
        # the dev evaluations' own clock: part of the total, more than nothing
        assert 0 < log["evaluation_seconds"] < log["total_seconds"], (pool, log)
        for name in ("best.npz", "vocab.json", "attention.svg"):
            assert (out / pool / name).is_file()
    saved = json.loads((out / "results.json").read_text())
    assert saved["dot"]["test_accuracy"] == results["dot"]["test_accuracy"]
    assert "| dot |" in (out / "results.md").read_text()
    printed = capsys.readouterr().out
    assert "this great science fiction film is really awesome" in printed
    assert "| awesome |" in printed

    # the checkpoint and vocabulary reproduce the reported test accuracy
    vocab = preprocess.Vocab.from_json(out / "dot" / "vocab.json")
    model = SentimentModel(len(vocab), pool="dot", embedding_dim=16, hidden_size=16)
    model.load_state_dict(mg.load(out / "dot" / "best.npz"))
    _, test_pairs = preprocess.split_dev_test(
        data.load_imdb(tarball, progress=False)["test"], seed=0
    )
    test_set = preprocess.encode_dataset(test_pairs, vocab, progress=False)
    assert train.accuracy(model, test_set) == results["dot"]["test_accuracy"]


def test_training_script_reruns_give_the_same_numbers(tmp_path, make_imdb_tarball):
    tarball = make_imdb_tarball(tiny_reviews(np.random.default_rng(1)))
    args = [
        "--data",
        str(tarball),
        "--pool",
        "dot",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--embedding-dim",
        "16",
        "--hidden-size",
        "16",
        "--lr",
        "0.01",
        "--out",
        str(tmp_path / "runs"),
        "--no-progress",
    ]
    first, second = train.main(args)["dot"], train.main(args + ["--overwrite"])["dot"]
    assert first["final_loss"] == second["final_loss"]
    assert first["test_accuracy"] == second["test_accuracy"]


def test_several_seeds_give_the_runs_of_each_seed_and_their_spread(tmp_path, make_imdb_tarball):
    tarball = make_imdb_tarball(tiny_reviews(np.random.default_rng(2)))
    common = [
        "--data",
        str(tarball),
        "--pool",
        "dot",
        "--epochs",
        "1",
        "--batch-size",
        "16",
        "--embedding-dim",
        "8",
        "--hidden-size",
        "8",
        "--lr",
        "0.01",
        "--no-progress",
    ]
    summary = train.main(common + ["--seeds", "3", "5", "--out", str(tmp_path / "seeds")])["dot"]
    alone = [
        train.main(common + ["--seed", seed, "--out", str(tmp_path / f"alone{seed}")])["dot"]
        for seed in ("3", "5")
    ]
    assert summary["seeds"] == [3, 5]
    assert summary["test_accuracy"] == [log["test_accuracy"] for log in alone]
    assert [log["final_loss"] for log in summary["runs"]] == [log["final_loss"] for log in alone]
    assert alone[0]["final_loss"] != alone[1]["final_loss"]  # the seed does change the run
    assert summary["mean"] == pytest.approx(np.mean(summary["test_accuracy"]))
    assert summary["std"] == pytest.approx(np.std(summary["test_accuracy"], ddof=1))
    for seed in (3, 5):
        assert (tmp_path / "seeds" / f"seed{seed}" / "dot" / "best.npz").is_file()
    saved = json.loads((tmp_path / "seeds" / "results.json").read_text())
    assert saved["dot"]["test_accuracy"] == summary["test_accuracy"]
    assert "| dot | 3, 5 |" in (tmp_path / "seeds" / "results.md").read_text()
    with pytest.raises(SystemExit):
        train.parse_args(["--seeds", "1", "1"])


def test_missing_data_exits_with_the_three_ways(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIGRAD_DATA", str(tmp_path / "empty-cache"))

    def offline(*args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr(data, "_fetch", offline)
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--out", str(tmp_path / "runs"), "--no-progress"])
    assert "--data" in str(exit_info.value)


# -- the command line: bad arguments are usage errors, bad data one line -------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--epochs", "0"], "argument --epochs: expected an integer from 1 to 1,000, got '0'"),
        (
            ["--eval-every", "0"],
            "argument --eval-every: expected an integer from 1 to 1,000,000,000, got '0'",
        ),
        (
            ["--batch-size", "0"],
            "argument --batch-size: expected an integer from 1 to 4,096, got '0'",
        ),
        (
            ["--batch-size", "-16"],
            "argument --batch-size: expected an integer from 1 to 4,096, got '-16'",
        ),
        (["--max-len", "-1"], "argument --max-len: expected an integer from 1 to 4,096, got '-1'"),
        (
            ["--embedding-dim", "0"],
            "argument --embedding-dim: expected an integer from 1 to 2,048, got '0'",
        ),
        (
            ["--hidden-size", "-8"],
            "argument --hidden-size: expected an integer from 1 to 2,048, got '-8'",
        ),
        (["--epochs", "two"], "argument --epochs: expected an integer from 1 to 1,000, got 'two'"),
        (["--epochs", "1.5"], "argument --epochs: expected an integer from 1 to 1,000, got '1.5'"),
        (["--lr", "-0.1"], "argument --lr: expected a number > 0 and at most 1, got '-0.1'"),
        (["--clip", "nan"], "argument --clip: expected a finite number >= 0, got 'nan'"),
        (
            ["--seed", "-1"],
            "argument --seed: expected an integer from 0 to 18,446,744,073,709,551,615, got '-1'",
        ),
        (
            ["--seeds", "1", "-2"],
            "argument --seeds: expected an integer from 0 to 18,446,744,073,709,551,615, got '-2'",
        ),
    ],
)
def test_bad_arguments_are_usage_errors(argv, message, capsys, tmp_path, monkeypatch):
    # should the arguments pass, no data
    monkeypatch.setenv("MINIGRAD_DATA", str(tmp_path / "empty-cache"))
    monkeypatch.setattr(data, "_fetch", lambda *args: pytest.fail("must not download"))
    with pytest.raises(SystemExit) as exit_info:
        train.main(argv + ["--no-progress"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("usage:") and error.rstrip().endswith(message)


def test_zero_clip_is_allowed_and_the_bounds_themselves_are_taken():
    args = train.parse_args(["--clip", "0", "--lr", "1", "--seed", "0", "--epochs", "1000"])
    assert (args.clip, args.lr, args.seed, args.epochs) == (0.0, 1.0, 0, 1000)
    assert train.parse_args(["--seed", str(2**64 - 1), "--max-len", "4096"]).seed == 2**64 - 1


@pytest.mark.parametrize(
    "make, expected",
    [
        (
            lambda tmp_path: tmp_path / "nope.tar.gz",
            "IMDB data: expected a tarball (.tar, .tar.gz, .tar.bz2, .tar.xz) or "
            "a folder at {path}, but nothing is there",
        ),
        (
            lambda tmp_path: tmp_path,
            "IMDB data: expected the folder {path} to hold aclImdb/ (with train/ and test/) or to "
            "be aclImdb/ itself, but it has neither",
        ),
        (
            lambda tmp_path: _write(tmp_path / "reviews.txt", b"a great film"),
            "cannot read the IMDB archive {path}: it is corrupt, truncated or not a tar file",
        ),
    ],
)
def test_a_data_path_that_is_missing_or_not_imdb_exits_with_one_line(tmp_path, make, expected):
    path = make(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--data", str(path), "--out", str(tmp_path / "runs"), "--no-progress"])
    message = exit_info.value.code
    assert isinstance(message, str) and "\n" not in message
    assert message.startswith("train.py: " + expected.format(path=path))


def test_a_tarball_of_something_else_says_which_reviews_are_missing(tmp_path, make_imdb_tarball):
    path = make_imdb_tarball({}, extra_files={"photos/cat.txt": "meow"})
    with pytest.raises(SystemExit) as exit_info:
        train.main(["--data", str(path), "--out", str(tmp_path / "runs"), "--no-progress"])
    assert (
        exit_info.value.code
        == f"train.py: IMDB data: expected reviews under aclImdb/train/neg/ in {path}, found none"
    )


def _write(path, content):
    path.write_bytes(content)
    return path
