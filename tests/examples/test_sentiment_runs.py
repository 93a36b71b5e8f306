"""The sentiment example's command line keeps an earlier run's results (examples/sentiment/
train.py): settings out of their bounds are usage errors (`train.py: error: ...`, never a
traceback), a review set without words and a batch larger than the training set are refused
before the --out folder is touched, a diverged run writes nothing and exits non-zero, and
results already in --out are replaced only with --overwrite.

Tiny synthetic tarballs (conftest.make_imdb_tarball) and a model of 8 features.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from examples.sentiment import train

REPO = Path(__file__).resolve().parents[2]
SMALL = ["--epochs", "1", "--batch-size", "16", "--embedding-dim", "8", "--hidden-size", "8"]
SMALL += ["--lr", "0.01", "--pool", "dot", "--no-progress"]
GOOD = ["a great film", "really awesome acting", "great story , great cast", "loved it !"]
BAD = ["a boring film", "really awful acting", "boring story , bad cast", "hated it !"]


def reviews(count=20, seed=0):
    rng = np.random.default_rng(seed)

    def pick(texts):
        return [f"{rng.choice(texts)} {rng.choice(texts)}" for _ in range(count)]

    return {
        (split, label): pick(GOOD if label == "pos" else BAD)
        for split in ("train", "test")
        for label in ("pos", "neg")
    }


def files_of(folder):
    """{relative path: bytes} of every file under folder."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(Path(folder).rglob("*"))
        if path.is_file()
    }


@pytest.fixture
def earlier_run(tmp_path, make_imdb_tarball):
    """(tarball, out): a finished run of the dot pooling in out/dot."""
    tarball = make_imdb_tarball(reviews())
    out = tmp_path / "runs"
    train.main(["--data", str(tarball), "--out", str(out), *SMALL])
    assert {"dot/best.npz", "dot/results.json", "dot/attention.svg"} <= set(files_of(out))
    return tarball, out


def stopped(argv):
    """The message (or exit code) of a train.main(argv) that must stop with SystemExit."""
    with pytest.raises(SystemExit) as stop:
        train.main(argv)
    assert stop.value.code not in (0, None)
    return stop.value.code


def test_an_out_folder_with_an_earlier_runs_results_needs_overwrite(earlier_run):
    tarball, out = earlier_run
    before = files_of(out)
    message = stopped(["--data", str(tarball), "--out", str(out), *SMALL, "--seed", "7"])
    assert message.startswith(f"train.py: the --out folder {out} holds an earlier run's results")
    assert str(out / "dot" / "results.json") in message and "pass --overwrite" in message
    assert files_of(out) == before
    train.main(["--data", str(tarball), "--out", str(out), *SMALL, "--seed", "7", "--overwrite"])
    after = files_of(out)
    assert after.keys() == before.keys() and after["dot/best.npz"] != before["dot/best.npz"]


def test_another_pooling_into_the_same_out_folder_is_not_an_earlier_result(earlier_run):
    tarball, out = earlier_run
    before = files_of(out)
    train.main(["--data", str(tarball), "--out", str(out), *SMALL, "--pool", "mean"])
    after = files_of(out)
    assert {name: after[name] for name in before} == before and "mean/best.npz" in after


BAD_SETTINGS = [
    (["--lr", "1e30"], "argument --lr: expected a number > 0 and at most 1, got '1e30'"),
    (["--lr", "0"], "argument --lr: expected a number > 0 and at most 1, got '0'"),
    (["--lr", "nan"], "argument --lr: expected a number > 0 and at most 1, got 'nan'"),
    (
        ["--batch-size", "1000000000"],
        "argument --batch-size: expected an integer from 1 to 4,096, got '1000000000'",
    ),
    (
        ["--max-len", "1000000000"],
        "argument --max-len: expected an integer from 1 to 4,096, got '1000000000'",
    ),
    (
        ["--embedding-dim", "1000000000"],
        "argument --embedding-dim: expected an integer from 1 to 2,048, got '1000000000'",
    ),
    (
        ["--hidden-size", "1000000000"],
        "argument --hidden-size: expected an integer from 1 to 2,048, got '1000000000'",
    ),
    (
        ["--epochs", "1000000000000000000000"],
        "argument --epochs: expected an integer from 1 to 1,000, got '1000000000000000000000'",
    ),
    (
        ["--seed", "1180591620717411303424"],
        "argument --seed: expected an integer from 0 to 18,446,744,073,709,551,615, "
        "got '1180591620717411303424'",
    ),
    (
        ["--seeds", "1", "1180591620717411303424"],
        "argument --seeds: expected an integer from 0 to 18,446,744,073,709,551,615, "
        "got '1180591620717411303424'",
    ),
    (
        ["--pool", "mhsa", "--hidden-size", "3"],
        "--hidden-size must be a multiple of 4 for the mhsa pooling",
    ),
]


@pytest.mark.parametrize("flags, message", BAD_SETTINGS, ids=[" ".join(f) for f, _ in BAD_SETTINGS])
def test_settings_out_of_bounds_are_usage_errors_before_the_folder_is_touched(
    earlier_run, flags, message, capsys
):
    tarball, out = earlier_run
    before = files_of(out)
    code = stopped(["--data", str(tarball), "--out", str(out), *SMALL, "--overwrite", *flags])
    error = capsys.readouterr().err
    assert code == 2 and error.startswith("usage:") and message in error.splitlines()[-1]
    assert files_of(out) == before


def test_a_huge_seed_from_a_shell_is_one_line_not_a_traceback(tmp_path):
    environment = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    script = REPO / "examples" / "sentiment" / "train.py"
    result = subprocess.run(
        [sys.executable, str(script), "--seed", "1180591620717411303424", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith("train.py: error: argument --seed: ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {(split, label): [""] * 5 for split in ("train", "test") for label in ("pos", "neg")},
            "the 10 training reviews hold no words: there is nothing to learn from",
        ),
        (
            {**reviews(), ("test", "pos"): ["zebra okapi"] * 20, ("test", "neg"): ["quokka"] * 20},
            "none of the 20 dev reviews holds a word of the vocabulary: its accuracy would mean "
            "nothing",
        ),
        (reviews(count=4), "--batch-size 16 is more than the 8 training reviews; give at most 8"),
    ],
    ids=["reviews without words", "dev reviews of unknown words only", "a batch past the set"],
)
def test_data_that_can_give_no_result_is_refused_before_the_folder_is_touched(
    earlier_run, make_imdb_tarball, data, message
):
    _, out = earlier_run
    before = files_of(out)
    tarball = make_imdb_tarball(data, name="other.tar.gz")
    code = stopped(["--data", str(tarball), "--out", str(out), *SMALL, "--overwrite"])
    assert code == f"train.py: {tarball}: {message}"
    assert files_of(out) == before


def test_data_that_can_give_no_result_leaves_no_new_folder(tmp_path, make_imdb_tarball):
    empty = {(split, label): [""] * 5 for split in ("train", "test") for label in ("pos", "neg")}
    tarball = make_imdb_tarball(empty)
    stopped(["--data", str(tarball), "--out", str(tmp_path / "new"), *SMALL])
    assert not (tmp_path / "new").exists()


def test_a_diverged_run_keeps_the_earlier_files_and_exits_non_zero(earlier_run, monkeypatch):
    """A run whose loss became NaN replaced the earlier run's best.npz, results.json and
    picture, and exited 0."""
    tarball, out = earlier_run
    before = files_of(out)
    calls, cross_entropy = [], mg.cross_entropy

    def diverging(logits, labels):  # the loss of the third step is NaN, as an overflow gives
        calls.append(1)
        loss = cross_entropy(logits, labels)
        return loss * float("nan") if len(calls) >= 3 else loss

    monkeypatch.setattr(train.mg, "cross_entropy", diverging)
    message = stopped(["--data", str(tarball), "--out", str(out), *SMALL, "--overwrite"])
    assert message.startswith("train.py: the dot run diverged: its training loss was nan at step 3")
    assert f"nothing of it was written ({out / 'dot'} is as it was)" in message
    assert "a smaller --lr" in message
    assert files_of(out) == before


def test_a_diverged_run_into_a_new_folder_leaves_it_empty(tmp_path, make_imdb_tarball, monkeypatch):
    tarball = make_imdb_tarball(reviews())
    monkeypatch.setattr(train.mg, "cross_entropy", lambda logits, labels: logits.sum() * np.inf)
    message = stopped(["--data", str(tarball), "--out", str(tmp_path / "new"), *SMALL])
    assert "diverged: its training loss was" in message and "at step 1" in message
    assert files_of(tmp_path / "new") == {}


def test_a_model_and_batches_too_large_for_memory_are_refused_before_training(
    earlier_run, monkeypatch
):
    tarball, out = earlier_run
    before = files_of(out)
    monkeypatch.setattr(train.mg.io, "_available_memory", lambda: 2**30)  # a 1 GiB container
    monkeypatch.setattr(train, "train_model", lambda *args, **kwargs: pytest.fail("trained"))
    flags = ["--embedding-dim", "2048", "--hidden-size", "2048", "--overwrite"]
    message = stopped(["--data", str(tarball), "--out", str(out), *SMALL, *flags])
    assert message.startswith(f"train.py: {tarball}: a model of these settings and batches of 16")
    assert "this process can take 1.0 GiB. Use a smaller --batch-size" in message
    assert files_of(out) == before


def test_the_textbook_settings_fit_in_the_memory_estimate():
    """The default settings on IMDB (81,442 tokens, reviews cut at 256) need well under 2 GiB."""
    args = train.parse_args([])
    train_set = [(np.zeros(256, np.int64), 0)]
    assert train.memory_needed(81_442, train_set, args) < 2 * 2**30
