"""The language model's command line keeps an earlier run's results (examples/language_model/
train.py): settings out of their bounds are usage errors (never a traceback), settings whose
model and batches would not fit in memory are refused before a model is built, a run that
diverges stops with a message (an earlier run's files stay when it saved nothing), and results
already in --out are replaced only with --overwrite.

All data is made here, a few hundred characters; a run is a few steps of a 2-block model.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import write_lm_tarball
from examples.language_model import train

REPO = Path(__file__).resolve().parents[2]
FAST = ["--quick", "--eval-batches", "1", "--samples", "1", "--sample-length", "6", "--no-progress"]
FAST += ["--steps", "4", "--eval-every", "2"]


@pytest.fixture
def tarball(tmp_path):
    return write_lm_tarball(tmp_path / "tiny.tar.gz")


def main(argv):
    return train.main([str(arg) for arg in argv])


def files_of(folder):
    return {path.name: path.read_bytes() for path in sorted(Path(folder).iterdir())}


@pytest.fixture
def earlier_run(tarball, tmp_path):
    out = tmp_path / "run"
    main(["--data", tarball, "--out", out, *FAST])
    assert set(files_of(out)) == {"best.npz", "log.json", "attention.svg"}
    return out


def stopped(argv):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code not in (0, None)
    return stop.value.code


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a model was built: the bad setting was not caught before it")

    monkeypatch.setattr(train, "CharTransformer", refuse)


def test_an_out_folder_with_an_earlier_runs_results_needs_overwrite(earlier_run, tarball):
    before = files_of(earlier_run)
    message = stopped(["--data", tarball, "--out", earlier_run, *FAST, "--seed", "3"])
    assert message.startswith(f"train.py: the --out folder {earlier_run} holds an earlier run's")
    assert str(earlier_run / "best.npz") in message and "pass --overwrite" in message
    assert files_of(earlier_run) == before
    main(["--data", tarball, "--out", earlier_run, *FAST, "--seed", "3", "--overwrite"])
    assert files_of(earlier_run)["best.npz"] != before["best.npz"]


BAD_SETTINGS = [
    (["--seed", "1180591620717411303424"], "--seed must be an integer from 0 to 18,446,744,"),
    (["--seed", "-1"], "--seed must be an integer from 0 to 18,446,744,073,709,551,615; got -1"),
    (["--lr", "1e30"], "--lr must be a number > 0 and at most 1; got 1e+30"),
    (["--lr", "0"], "--lr must be a number > 0 and at most 1; got 0.0"),
    (["--steps", "100000000000000000000"], "--steps must be an integer from 1 to 10,000,000"),
    (["--batch-size", "1000000000"], "--batch-size must be an integer from 1 to 4,096"),
    (["--context", "1000000000"], "--context must be an integer from 1 to 4,096"),
    (["--model-dim", "1000000000", "--num-heads", "1"], "--model-dim must be an integer from 1"),
    (["--num-layers", "1000000000"], "--num-layers must be an integer from 1 to 64"),
    (["--ff-dim", "1000000000"], "--ff-dim must be an integer from 1 to 16,384"),
    (["--eval-batches", "1000000000"], "--eval-batches must be an integer from 1 to 10,000"),
    (["--warmup", "100000000000000000000000"], "--warmup must be an integer from 0 to 10,000"),
    (["--samples", "1000000000"], "--samples must be an integer from 0 to 100; got 1000000000"),
    (["--sample-length", "1000000000"], "--sample-length must be an integer from 1 to 100,000"),
    (["--top-k", "100000000000000000000000"], "--top-k must be an integer from 1 to 1,114,112"),
    (["--time-budget", "1e308"], "--time-budget must be a number of minutes > 0 and at most"),
    (["--weight-decay", "1e308"], "--weight-decay must be a number >= 0 with --lr x --weight-"),
    (["--weight-decay", "nan"], "--weight-decay must be a number >= 0 with --lr x --weight-"),
]


@pytest.mark.parametrize("flags, message", BAD_SETTINGS, ids=[" ".join(f) for f, _ in BAD_SETTINGS])
def test_settings_out_of_bounds_are_usage_errors_before_the_folder_is_touched(
    earlier_run, tarball, flags, message, capsys, no_model
):
    before = files_of(earlier_run)
    code = stopped(["--data", tarball, "--out", earlier_run, *FAST, "--overwrite", *flags])
    error = capsys.readouterr().err
    assert code == 2 and error.startswith("usage:") and message in error.splitlines()[-1], error
    assert files_of(earlier_run) == before


def test_a_huge_seed_from_a_shell_is_one_line_not_a_traceback(tmp_path):
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "examples" / "language_model" / "train.py"),
            "--seed",
            "1180591620717411303424",
            "--out",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=path),
        timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].startswith("train.py: error: --seed must be ")
    assert not (tmp_path / "run").exists()


def test_a_model_and_batches_too_large_for_memory_are_refused_before_building_one(
    earlier_run, tarball, monkeypatch, no_model
):
    before = files_of(earlier_run)
    monkeypatch.setattr(train.mg.io, "_available_memory", lambda: 2**30)  # a 1 GiB container
    flags = ["--model-dim", "1024", "--num-heads", "4", "--batch-size", "512", "--overwrite"]
    message = stopped(["--data", tarball, "--out", earlier_run, *FAST, *flags])
    assert message.startswith("train.py: a model of these settings and batches of 512 contexts ")
    assert "this process can take 1.0 GiB. Use a smaller --batch-size" in message
    assert files_of(earlier_run) == before


def test_the_memory_estimate_counts_weights_state_and_activations():
    config = dict(
        vocab_size=10, context=8, model_dim=4, num_heads=2, num_layers=1, ff_dim=16, dropout=0.0
    )
    weights = sum(np.prod(shape) for shape in train.state_shapes(**config).values())
    activations = 3 * 8 * (12 * 4 + 3 * 16 + 2 * 2 * 8 + 3 * 10)
    assert train.memory_needed(config, batch_size=3) == 4 * (4 * weights + activations)


def nan_losses_from(step, monkeypatch):
    """Make the training loss NaN from `step` on, as a learning rate far too large does."""
    forward_backward, calls = train.mg.parallel.forward_backward, []

    def diverging(loss, *batch):
        calls.append(1)
        value = forward_backward(loss, *batch)
        return value * float("nan") if len(calls) >= step else value

    monkeypatch.setattr(train.mg.parallel, "forward_backward", diverging)


def test_a_run_that_diverges_before_its_first_checkpoint_keeps_the_earlier_files(
    earlier_run, tarball, monkeypatch
):
    before = files_of(earlier_run)
    nan_losses_from(1, monkeypatch)
    message = stopped(["--data", tarball, "--out", earlier_run, *FAST, "--overwrite"])
    assert message.startswith("train.py: the training loss became nan at step 1: the run diverged")
    assert f"no checkpoint was saved and {earlier_run} is as it was" in message
    assert files_of(earlier_run) == before


def test_a_run_that_diverges_after_a_checkpoint_ends_from_it_and_exits_non_zero(
    tarball, tmp_path, monkeypatch
):
    out = tmp_path / "run"
    nan_losses_from(3, monkeypatch)  # steps 1 and 2 finite, the checkpoint of step 2 saved
    message = stopped(["--data", tarball, "--out", out, *FAST])
    assert message.startswith("train.py: the training loss became nan at step 3: the run diverged")
    assert f"{out / 'best.npz'} holds its best, from step 2" in message
    log = json.loads((out / "log.json").read_text())
    assert (log["diverged_at"], log["best_step"], log["total_steps"]) == (3, 2, 3)
    assert train.load_checkpoint(out / "best.npz")[2]["step"] == 2
