"""Every benchmark in benchmarks/ runs to the end with the smallest settings, on synthetic ids or
a tiny IMDB tarball (never the real data), and what it reports agrees between the frameworks:
the same loss, the same predictions. A benchmark nobody runs breaks unnoticed (lstm.py once
passed lengths where forward takes hx); these runs time nothing, and no speed is asserted.
Each writes its tables under tmp_path, never into benchmarks/.
"""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import write_imdb_tarball

pytest.importorskip("torch")  # every benchmark compares with PyTorch

REPO = Path(__file__).resolve().parents[1]


def run(script, *args):
    """stdout of `python benchmarks/<script> args` (its exit code 0, else its output shown)."""
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / script), *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def numbers(text, pattern):
    return [float(value) for value in re.findall(pattern, text)]


@pytest.fixture(scope="module")
def tiny_imdb(tmp_path_factory):
    rng = np.random.default_rng(0)
    words = "the movie was good bad great plot actors film and".split()
    reviews = {
        (split, label): [" ".join(rng.choice(words, 60)) + "." for _ in range(40)]
        for split in ("train", "test")
        for label in ("pos", "neg")
    }
    return write_imdb_tarball(tmp_path_factory.mktemp("imdb") / "tiny.tar.gz", reviews)


def table_rows(path):
    """The rows of the markdown table(s) in path, header and rule lines left out."""
    lines = [line for line in Path(path).read_text().splitlines() if line.startswith("|")]
    return [line for line in lines if not line.startswith("|---")][1:]


@pytest.mark.parametrize(
    "script, args, rows",
    [
        ("ops.py", ["--rounds", "1"], 10),
        ("transformer_kernels.py", ["--warmup", "0", "--repeats", "1"], 5),
    ],
)
def test_op_benchmarks_write_their_tables(script, args, rows, tmp_path):
    out = tmp_path / "table.md"
    run(script, *args, "--markdown", out)
    written = table_rows(out)
    assert len(written) >= rows, written
    for row in written:  # every timing a positive number
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert any(re.fullmatch(r"\d+\.\d+", cell) and float(cell) > 0 for cell in cells), row


@pytest.mark.parametrize("script", ["losses.py", "conv.py"])
def test_loss_and_convolution_benchmarks_time_both_frameworks(script):
    out = run(script, "--rounds", "1")
    ratios = numbers(out, r"(?m)\s(\d+\.\d+)\s*$")  # the torch/minigrad column, every case
    assert len(ratios) >= 3 and all(ratio > 0 for ratio in ratios), out


def test_kernel_benchmark_times_each_kernel_and_its_twin():
    out = run("kernels.py", "--budget", "0", "--no-compile")
    for name in ("matmul", "masked softmax", "attention fwd+bwd", "adam update", "embedding"):
        assert name in out, out
    assert "torch column:" in out


def test_peak_and_viz_benchmarks():
    out = run("peak.py", "--size", "128", "--repeats", "1")
    assert len(numbers(out, r"\| (\d+) \|\n")) >= 2, out  # GFLOP/s of numpy and of PyTorch
    out = run("viz.py", "--nodes", "500", "--repeats", "1")
    assert "mg.viz.trace" in out and "draw(" in out, out


def test_distributed_benchmark_gives_one_process_losses_three_ways(tmp_path):
    pytest.importorskip("mpi4py")
    args = ["--steps", "2", "--warmup", "1", "--batch-size", "4", "--context", "8", "--small"]
    out = run("distributed.py", *args, "--markdown", tmp_path / "distributed.md")
    gaps = numbers(out, r"x \| ([0-9.e+-]+) \|")  # each run's largest loss difference
    assert len(gaps) == 3 and max(gaps) < 1e-5, out
    assert "of the step, waiting for the other rank included" in out
    assert len(table_rows(tmp_path / "distributed.md")) == 3


def test_lstm_benchmark_writes_its_table_where_told(tmp_path):
    out = tmp_path / "lstm.md"
    out.write_text("# old\n\n## Notes\n\nkept by hand\n")
    run("lstm.py", "--repeats", "1", "--warmup", "0", "--no-packed", "--markdown", out)
    text = out.read_text()
    assert text.endswith("## Notes\n\nkept by hand\n")  # the notes after the table stay
    assert len(table_rows(out)) == 3, text  # the three cases


def test_train_step_benchmark_starts_both_frameworks_from_the_same_loss(tmp_path):
    out = run(
        "train_step.py",
        "--synthetic",
        "--pool",
        "mhsa",  # the LSTM and both attentions' code (the inference benchmark runs dot too)
        "--batch-size",
        "8",
        "--max-len",
        "32",
        "--warmup",
        "0",
        "--repeats",
        "1",
        "--steps",
        "3",
        "--torch-threads",
        "default",
        "--minigrad-threads",
        "default",
        "--markdown",
        tmp_path / "step.md",
    )
    (difference,) = numbers(out, r"\(difference ([0-9.e+-]+)\)")
    (gradients,) = numbers(out, r"largest relative gradient difference ([0-9.e+-]+)")
    assert difference < 1e-5 and gradients < 1e-3, out
    assert "peak RSS minigrad / torch" in out and (tmp_path / "step.md").exists()


def test_inference_benchmark_gives_the_same_predictions_in_every_configuration(tmp_path):
    out = tmp_path / "inference.md"
    run(
        "inference.py",
        "--synthetic",
        "--pool",
        "dot,mhsa",
        "--reviews",
        "48",
        "--batch-size",
        "16",
        "--train-steps",
        "1",
        "--warmup",
        "0",
        "--repeats",
        "1",
        "--markdown",
        out,
    )
    rows = [[cell.strip() for cell in row.strip("|").split("|")] for row in table_rows(out)]
    assert len(rows) == 8, rows  # 2 poolings x (minigrad sorted and not, torch sorted and not)
    for pooling in ("dot", "mhsa"):
        accuracies = {row[4] for row in rows if row[0] == pooling}
        assert len(accuracies) == 1, rows  # one accuracy: the same predictions
    assert all(row[5] == "0" for row in rows), rows  # predictions unlike minigrad's


def test_language_model_benchmark_on_a_tiny_corpus(tiny_imdb, tmp_path):
    out = run(
        "language_model.py",
        "--data",
        tiny_imdb,
        "--steps",
        "4",
        "--eval-every",
        "2",
        "--chunk",
        "2",
        "--warmup",
        "0",
        "--repeats",
        "1",
        "--generate",
        "5",
        "--markdown",
        tmp_path / "lm.md",
    )
    assert "minigrad / PyTorch step time" in out and "characters/s" in out, out


def test_torch_reference_run_on_a_tiny_dataset(tiny_imdb, tmp_path):
    import json

    run("torch_reference.py", "--pool", "dot", "--data", tiny_imdb, "--out", tmp_path)
    (result,) = json.loads((tmp_path / "results.json").read_text())
    assert result["pool"] == "dot" and 0 <= result["test_accuracy"] <= 1, result
