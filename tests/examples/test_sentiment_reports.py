"""The sentiment example after training: the results are written before anything that can fail.

Tiny synthetic tarballs (conftest.make_imdb_tarball) and a model of 8 features; what is checked
is what happens after the training: the attention report when no test review is short enough
for the heatmap, a heatmap or checkpoint that cannot be written, and an --out folder that would
only fail once the training is done (refused before it instead).
"""

import json

import numpy as np
import pytest

import minigrad as mg
from examples.sentiment import preprocess, train
from examples.sentiment.model import SentimentModel

SMALL = ["--epochs", "1", "--batch-size", "16", "--embedding-dim", "8", "--hidden-size", "8"]
SMALL += ["--lr", "0.01", "--no-progress"]
WORDS = ["a great film", "really awesome acting", "a boring film", "really awful acting"]


def reviews(rng, words_per_review, count=20):
    """count reviews per folder, each of about words_per_review tokens."""

    def pick():
        return [
            " ".join(str(rng.choice(WORDS)) for _ in range(words_per_review // 3 + 1))
            for _ in range(count)
        ]

    return {(split, label): pick() for split in ("train", "test") for label in ("pos", "neg")}


@pytest.mark.parametrize("pool", ["dot", "all"])
def test_no_short_test_review_still_writes_the_results_and_ends_cleanly(
    pool, tmp_path, capsys, make_imdb_tarball
):
    tarball = make_imdb_tarball(reviews(np.random.default_rng(0), 70))
    out = tmp_path / "runs"
    results = train.main(["--data", str(tarball), "--pool", pool, "--out", str(out), *SMALL])
    printed = capsys.readouterr().out
    assert "note: no test review has 1 to 60 tokens" in printed
    pools = ["mean", "additive", "dot", "mhsa"] if pool == "all" else [pool]
    assert list(results) == pools
    for name in pools:
        saved = json.loads((out / name / "results.json").read_text())
        assert saved["test_accuracy"] == results[name]["test_accuracy"]
        assert set(saved["example_weights"]) == set(train.EXAMPLE_SENTENCE.split())
        assert (out / name / "attention.svg").is_file()
    if pool == "all":
        saved = json.loads((out / "results.json").read_text())
        assert {name: log["test_accuracy"] for name, log in saved.items()} == {
            name: log["test_accuracy"] for name, log in results.items()
        }


def test_the_heatmap_shows_only_reviews_of_1_to_60_tokens(tmp_path, capsys):
    vocab = preprocess.build_vocab([["great", "film", "boring"]])
    mg.manual_seed(0)
    model = SentimentModel(len(vocab), pool="dot", embedding_dim=8, hidden_size=8)
    test_pairs = [("", 1), (" ".join(["great"] * 61), 0), ("great film", 1)]
    weights = train.report_attention(model, vocab, test_pairs, tmp_path, "dot")
    assert "note: no test review" not in capsys.readouterr().out
    assert set(weights) == set(train.EXAMPLE_SENTENCE.split())
    svg = (tmp_path / "attention.svg").read_text()
    assert svg.count("positive review") == 1 and "negative review" not in svg  # "great film"


def test_a_heatmap_that_cannot_be_written_keeps_the_results(
    tmp_path, capsys, make_imdb_tarball, monkeypatch
):
    tarball = make_imdb_tarball(reviews(np.random.default_rng(2), 9))
    out = tmp_path / "runs"
    real_write = preprocess.write_text_atomic

    def fail_for_pictures(path, text):
        if str(path).endswith(".svg"):
            raise OSError(28, "No space left on device")
        return real_write(path, text)

    monkeypatch.setattr(preprocess, "write_text_atomic", fail_for_pictures)
    results = train.main(["--data", str(tarball), "--pool", "all", "--out", str(out), *SMALL])
    assert "the attention heatmap could not be written" in capsys.readouterr().out
    saved = json.loads((out / "results.json").read_text())
    assert saved["mhsa"]["test_accuracy"] == results["mhsa"]["test_accuracy"]


def test_a_failing_checkpoint_write_keeps_the_runs_numbers(
    tmp_path, make_imdb_tarball, monkeypatch
):
    tarball = make_imdb_tarball(reviews(np.random.default_rng(3), 9))
    out = tmp_path / "runs"

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(train.mg, "save", full_disk)
    with pytest.raises(OSError):
        train.main(["--data", str(tarball), "--pool", "dot", "--out", str(out), *SMALL])
    saved = json.loads((out / "dot" / "results.json").read_text())
    assert 0 <= saved["test_accuracy"] <= 1 and saved["steps"] >= 1


def test_an_out_folder_that_is_a_file_is_refused_before_training(
    tmp_path, make_imdb_tarball, monkeypatch
):
    tarball = make_imdb_tarball(reviews(np.random.default_rng(5), 9))
    (tmp_path / "taken").write_text("a file")
    monkeypatch.setattr(train, "train_model", lambda *args, **kwargs: 1 / 0)
    with pytest.raises(SystemExit) as stop:
        train.main(["--data", str(tarball), "--out", str(tmp_path / "taken"), *SMALL])
    assert isinstance(stop.value.code, str) and "--out" in stop.value.code
