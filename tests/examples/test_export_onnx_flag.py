"""--export-onnx PATH of both examples' train.py (examples/sentiment/train.py,
examples/language_model/train.py): a run writes the trained model as ONNX, which onnxruntime runs
with the checkpoint's numbers at another batch size and length; a path that cannot be written,
or a flag that cannot go with the others, is a usage error before any data is read or model
built, and an ONNX file already there needs --overwrite."""

import numpy as np
import pytest

import minigrad as mg
from examples.language_model import train as lm_train
from examples.language_model.train import load_checkpoint
from examples.sentiment import train as sentiment_train
from examples.sentiment.model import SentimentModel

# the small runs of tests/examples/test_language_model_runs.py and test_sentiment_runs.py
FAST = ["--quick", "--eval-batches", "1", "--samples", "1", "--sample-length", "6", "--no-progress"]
FAST += ["--steps", "4", "--eval-every", "2"]
SMALL = ["--epochs", "1", "--batch-size", "16", "--embedding-dim", "8", "--hidden-size", "8"]
SMALL += ["--lr", "0.01", "--pool", "dot", "--no-progress"]


def reviews(count=20):
    rng = np.random.default_rng(0)
    good, bad = ["a great film", "loved it !"], ["a boring film", "hated it !"]
    return {
        (split, label): [f"{rng.choice(good if label == 'pos' else bad)} ." for _ in range(count)]
        for split in ("train", "test")
        for label in ("pos", "neg")
    }


pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def run_onnx(path, feeds):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


@pytest.fixture
def lm_tarball(tmp_path):
    from conftest import write_lm_tarball

    return write_lm_tarball(tmp_path / "tiny.tar.gz")


def test_the_language_model_run_writes_its_best_model_as_onnx(lm_tarball, tmp_path):
    out, path = tmp_path / "run", tmp_path / "lm.onnx"
    lm_train.main([str(a) for a in ["--data", lm_tarball, "--out", out, *FAST]]
                  + ["--export-onnx", str(path)])  # fmt: skip
    model, _, _ = load_checkpoint(out / "best.npz")
    ids = np.random.default_rng(1).integers(0, model.config["vocab_size"], (3, 11))
    with mg.no_grad():
        expected = model(mg.tensor(ids)).numpy()
    np.testing.assert_allclose(run_onnx(path, {"ids": ids}), expected, rtol=1e-5, atol=1e-5)
    again = [str(a) for a in ["--data", lm_tarball, "--out", tmp_path / "other", *FAST]]
    with pytest.raises(SystemExit) as stop:  # the file of the first run is kept
        lm_train.main(again + ["--export-onnx", str(path)])
    assert "--overwrite" in str(stop.value.code) and str(path) in str(stop.value.code)


def test_the_sentiment_run_writes_its_model_as_onnx(tmp_path, make_imdb_tarball):
    tarball, out, path = make_imdb_tarball(reviews()), tmp_path / "runs", tmp_path / "s.onnx"
    sentiment_train.main(
        ["--data", str(tarball), "--out", str(out), *SMALL, "--export-onnx", str(path)]
    )
    state = mg.load(out / "dot" / "best.npz")
    vocab_size = state["embedding.weight"].shape[0]
    model = SentimentModel(vocab_size, pool="dot", embedding_dim=8, hidden_size=8)
    model.load_state_dict(state)
    model.eval()
    rng = np.random.default_rng(2)
    ids, lengths = rng.integers(1, vocab_size, (5, 9)), np.array([9, 3, 5, 1, 7])
    ids[np.arange(9)[None, :] >= lengths[:, None]] = 0
    with mg.no_grad():
        expected = model(mg.tensor(ids), mg.tensor(lengths)).numpy()
    got = run_onnx(path, {"ids": ids, "lengths": lengths})
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def bad_paths(tmp_path):
    return [
        (str(tmp_path / "missing" / "m.onnx"), "does not exist"),
        (str(tmp_path), "is a folder"),
    ]


@pytest.mark.parametrize("which", ["sentiment", "language model"])
def test_a_path_that_cannot_be_written_is_a_usage_error_before_anything_runs(
    which, tmp_path, capsys, monkeypatch
):
    script = sentiment_train if which == "sentiment" else lm_train

    def refuse(*args, **kwargs):
        raise AssertionError("data was read: the bad path was not caught before")

    monkeypatch.setattr(script, "prepare_data", refuse)
    for path, message in bad_paths(tmp_path):
        with pytest.raises(SystemExit) as stop:
            script.main(["--out", str(tmp_path / "out"), "--export-onnx", path])
        error = capsys.readouterr().err
        assert stop.value.code == 2 and "--export-onnx" in error and message in error, error
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "flags, message",
    [(["--pool", "all"], "one --pool"), (["--seeds", "1", "2"], "at most one seed")],
)
def test_the_sentiment_flag_refuses_several_models(flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        sentiment_train.parse_args(flags + ["--export-onnx", str(tmp_path / "m.onnx")])
    assert stop.value.code == 2 and message in capsys.readouterr().err
