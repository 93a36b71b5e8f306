"""A hostile sweep of the character language model example (examples/language_model/) and of
minigrad's save/load as its user meets them: odd command-line flags, hostile or odd data,
damaged and lying checkpoints, interrupted writes, read-only folders, and generation at the
edges of the context.

What counts as good behaviour here: the command line stops with a message of its own
(`train.py: ...` via sys.exit, or argparse's `error:` with exit code 2) that names what was
expected and what was given, before any training is wasted; never a traceback, a hang, or a
lost or stale file.

All data is made here, a few hundred characters; each training run takes a few steps of a
2-block model (about a second once Numba's kernels are compiled).
"""

import math
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from conftest import write_imdb_tarball
from examples.language_model import corpus, train
from examples.language_model.generate import generate
from examples.language_model.model import CharTransformer

REPO = Path(__file__).resolve().parents[2]
TRAIN_SCRIPT = REPO / "examples" / "language_model" / "train.py"
WORDS = "This movie was the good bad great plot actors film and".split()
# a few steps of a small model, validation on one batch, one short sample
FAST = ["--quick", "--eval-batches", "1", "--samples", "1", "--sample-length", "6", "--no-progress"]


def tiny_reviews(seed=0, per_folder=4, words=60):
    rng = np.random.default_rng(seed)
    return {
        (split, label): [
            " ".join(rng.choice(WORDS, words)) + ".<br />The end." for _ in range(per_folder)
        ]
        for split in ("train", "test")
        for label in ("pos", "neg")
    }


@pytest.fixture
def tarball(tmp_path):
    return write_imdb_tarball(tmp_path / "tiny.tar.gz", tiny_reviews())


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A best.npz of a 4-step --quick run on a tiny tarball (trained once for the module)."""
    folder = tmp_path_factory.mktemp("trained")
    data = write_imdb_tarball(folder / "tiny.tar.gz", tiny_reviews())
    main(
        [
            "--data",
            str(data),
            "--out",
            str(folder / "run"),
            "--steps",
            "4",
            "--eval-every",
            "2",
            "--quick",
            "--eval-batches",
            "1",
            "--samples",
            "0",
            "--no-progress",
        ]
    )
    return folder / "run" / "best.npz"


def main(argv):
    """train.main with every argument as a string (as from a shell)."""
    return train.main([str(arg) for arg in argv])


def clean_exit(argv, capsys):
    """train.main(argv) must stop with a message of its own (SystemExit with a non-zero code),
    not with any other exception (a traceback). Returns the message."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    code = stop.value.code
    assert code not in (0, None), f"exited with code {code!r}"
    return code if isinstance(code, str) else capsys.readouterr().err


def run_script(args, timeout, prefix=()):
    """The training script in a fresh process; None when it ran past `timeout` seconds (it is
    killed then)."""
    environment = dict(os.environ, PYTHONPATH=str(REPO))
    try:
        return subprocess.run(
            [*prefix, sys.executable, str(TRAIN_SCRIPT), *map(str, args)],
            cwd=REPO,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None


@pytest.fixture
def no_training(monkeypatch):
    """Makes a training step raise: a test using it checks that a bad setting stops the run
    before the first step (when nothing is lost yet)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a training step ran: the bad setting was not caught before training")

    monkeypatch.setattr(train.mg.parallel, "forward_backward", refuse)


# ============================================================ flags


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--time-budget", "0"], "--time-budget"),
        (["--time-budget", "-3"], "--time-budget"),
        (["--steps", "0"], "--steps"),
        (["--steps", "-5"], "--steps"),
        (["--batch-size", "0"], "--batch-size"),
        (["--context", "0"], "--context"),
        (["--eval-every", "0"], "--eval-every"),
        (["--num-heads", "0"], "--num-heads"),
        (["--time-budget", "soon"], "--time-budget"),
    ],
)
def test_out_of_range_numbers_are_refused_by_the_parser(flags, named, capsys):
    with pytest.raises(SystemExit) as stop:
        train.parse_args(flags)
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert named in error and flags[1] in error.replace(".0", ""), error


@pytest.mark.parametrize("budget", ["nan", "inf"])
def test_a_time_budget_of_nan_or_inf_is_refused_or_harmless(budget):
    try:
        args = train.parse_args(["--time-budget", budget, "--steps", "100", "--warmup", "10"])
    except SystemExit as stop:
        assert stop.code == 2
        return
    now = [0.0]
    plan = train.Plan(args, clock=lambda: now[0])
    now[0] = 30.0
    plan.replan(100, 0, 0.0)  # what the first evaluation does
    assert plan.steps >= 100


def test_quick_keeps_flags_the_user_set_to_other_values():
    args = train.parse_args(["--quick", "--steps", "7", "--context", "32", "--lr", "0.01"])
    assert (args.steps, args.context, args.lr) == (7, 32, 0.01)
    # the rest of the demo's
    assert (args.model_dim, args.num_layers, args.eval_every) == (64, 2, 100)


def test_quick_keeps_flags_the_user_set_even_to_the_default_value():
    args = train.parse_args(["--quick", "--steps", "1000", "--context", "128"])
    assert (args.steps, args.context) == (1000, 128)


@pytest.mark.parametrize(
    "flags",
    [["--temperature", "-1"], ["--temperature", "nan"], ["--top-k", "0"], ["--top-k", "-3"]],
)
def test_sampling_settings_are_checked_before_training(
    flags, tarball, tmp_path, capsys, no_training
):
    message = clean_exit(
        ["--data", tarball, "--out", tmp_path / "run", *FAST, "--steps", "2", *flags], capsys
    )
    assert flags[0] in message and flags[1] in message, message


def test_a_top_k_larger_than_the_vocabulary_samples_from_all_of_it(checkpoint, tmp_path):
    samples, _ = main(
        [
            "--generate",
            "This",
            "--checkpoint",
            checkpoint,
            "--top-k",
            "100000",
            "--out",
            tmp_path,
            "--samples",
            "2",
            "--sample-length",
            "20",
            "--no-progress",
        ]
    )
    assert all(s.startswith("This") and len(s) == 24 for s in samples)


@pytest.mark.parametrize("case", ["context longer than the text", "empty reviews"])
def test_a_context_longer_than_the_text_is_a_clean_error(case, tmp_path, capsys, no_training):
    if case == "empty reviews":
        data = write_imdb_tarball(tmp_path / "empty.tar.gz", {key: [""] for key in tiny_reviews()})
        flags = []
    else:
        data = write_imdb_tarball(tmp_path / "tiny.tar.gz", tiny_reviews())
        flags = ["--context", "4000"]
    message = clean_exit(
        ["--data", data, "--out", tmp_path / "run", *FAST, "--steps", "2", *flags], capsys
    )
    assert message.startswith("train.py: ") and "context" in message, message


def test_a_validation_text_shorter_than_the_context_is_refused_before_training(
    tmp_path, capsys, no_training
):
    long = " ".join(["the movie was good and the plot was great"] * 20)
    data = write_imdb_tarball(
        tmp_path / "short.tar.gz",
        {
            ("train", "pos"): [long],
            ("train", "neg"): [long],
            ("test", "pos"): ["ok"],
            ("test", "neg"): ["no"],
        },
    )
    message = clean_exit(
        ["--data", data, "--out", tmp_path / "run", *FAST, "--steps", "30", "--eval-every", "20"],
        capsys,
    )
    assert "validation" in message and "64" in message, message


def test_an_out_path_that_is_a_file_is_a_clean_error(tarball, tmp_path, capsys):
    (tmp_path / "taken").write_text("not a folder")
    message = clean_exit(
        ["--data", tarball, "--out", tmp_path / "taken", *FAST, "--steps", "2"], capsys
    )
    assert "--out" in message or "folder" in message, message


# ============================================================ data


def member(name, kind=tarfile.REGTYPE, payload=b"text", linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    if kind == tarfile.REGTYPE:
        info.size = len(payload)
        return info, payload
    return info, None


@pytest.mark.parametrize(
    "extra, expected",
    [
        (member("aclImdb/train/pos/../../../evil.txt"), "'..' path component"),
        (member("/tmp/evil_absolute.txt"), "absolute path"),
        (
            member("aclImdb/train/pos/99_9.txt", tarfile.SYMTYPE, linkname="/etc/passwd"),
            "is a symlink",
        ),
        (
            member(
                "aclImdb/train/pos/98_9.txt", tarfile.SYMTYPE, linkname="../../../../outside.txt"
            ),
            "is a symlink",
        ),
        (
            member("aclImdb/train/pos/97_9.txt", tarfile.LNKTYPE, linkname="/etc/passwd"),
            "is a hardlink",
        ),
        (member("aclImdb/train/pos/96_9.txt", payload=b"caf\xe9 \xff\xfe"), "is not valid UTF-8"),
    ],
)
def test_hostile_tarballs_stop_the_command_line_with_a_message(extra, expected, tmp_path, capsys):
    data = write_imdb_tarball(tmp_path / "hostile.tar.gz", tiny_reviews(), extra_members=[extra])
    message = clean_exit(["--data", data, "--out", tmp_path / "run", *FAST], capsys)
    assert message.startswith("train.py: ") and expected in message and str(data) in message, (
        message
    )
    assert not (tmp_path / "run" / "best.npz").exists()
    assert (
        not Path("/tmp/evil_absolute.txt").exists() and not (tmp_path.parent / "evil.txt").exists()
    )


@pytest.mark.parametrize("damage", ["truncated", "flipped bytes", "not a tarball", "empty file"])
def test_damaged_tarballs_stop_the_command_line_with_a_message(damage, tarball, tmp_path, capsys):
    raw = bytearray(tarball.read_bytes())
    if damage == "truncated":
        raw = raw[: len(raw) // 2]
    elif damage == "flipped bytes":
        raw[len(raw) // 2 : len(raw) // 2 + 16] = bytes(
            b ^ 0xFF for b in raw[len(raw) // 2 : len(raw) // 2 + 16]
        )
    elif damage == "not a tarball":
        raw = bytearray(b"These are my notes about movies, not an archive.\n" * 20)
    else:
        raw = bytearray()
    tarball.write_bytes(bytes(raw))
    message = clean_exit(["--data", tarball, "--out", tmp_path / "run", *FAST], capsys)
    assert message.startswith("train.py: ") and str(tarball) in message and "expected" in message, (
        message
    )


@pytest.mark.parametrize(
    "layout", ["empty folder", "other files", "train only", "no reviews", "missing"]
)
def test_folders_without_the_imdb_layout_stop_with_a_message(layout, tmp_path, capsys):
    root = tmp_path / "data"
    if layout != "missing":
        root.mkdir()
    if layout == "other files":
        (root / "notes.txt").write_text("hello")
    if layout == "train only":
        (root / "aclImdb" / "train" / "pos").mkdir(parents=True)
        (root / "aclImdb" / "train" / "pos" / "0_9.txt").write_text("good")
    if layout == "no reviews":
        for split in ("train", "test"):
            for label in ("pos", "neg"):
                (root / "aclImdb" / split / label).mkdir(parents=True)
    message = clean_exit(["--data", root, "--out", tmp_path / "run", *FAST], capsys)
    assert message.startswith("train.py: ") and str(root) in message and "expected" in message, (
        message
    )


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_data_that_is_not_a_regular_file_is_refused_without_hanging(special, tmp_path):
    if special == "fifo":
        path = tmp_path / "aclImdb_v1.tar.gz"
        os.mkfifo(path)
    else:
        path = Path(special)
        if not path.exists():
            pytest.skip(f"no {special} here")
    result = run_script(["--data", path, "--out", tmp_path / "run", *FAST], timeout=20)
    assert result is not None, f"--data {path} hung (killed after 20 s)"
    assert (
        result.returncode != 0
        and "train.py: " in result.stderr
        and "Traceback" not in result.stderr
    )


def test_a_text_with_more_distinct_characters_than_uint16_holds_keeps_its_ids(tmp_path):
    many = "".join(chr(code) for code in range(0x21, 0x21 + 72_000) if not 0xD800 <= code < 0xE000)
    data = write_imdb_tarball(
        tmp_path / "wide.tar.gz",
        {
            ("train", "pos"): [many],
            ("train", "neg"): ["abc"],
            ("test", "pos"): ["abc"],
            ("test", "neg"): ["abc"],
        },
    )
    args = train.parse_args(["--data", str(data)])
    try:
        vocabulary, train_ids, _ = train.prepare_data(args, progress=False)
    except ValueError as error:  # refusing, with the count, is fine too
        assert "distinct" in str(error) or "characters" in str(error)
        return
    text, _ = corpus.load_texts(data, progress=False)
    assert len(vocabulary) > 65_536
    assert vocabulary.decode(train_ids) == text


# ============================================================ checkpoints


def flattened(tree, prefix=""):
    """A loaded checkpoint as one flat dict, nested keys joined with dots ("model.head.weight")."""
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flattened(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def tampered(checkpoint, tmp_path, change):
    flat = flattened(mg.load(checkpoint))
    change(flat)
    path = tmp_path / "tampered.npz"
    mg.save(flat, path)
    return path


@pytest.mark.parametrize(
    "damage, expected",
    [
        ("truncated", "not a valid .npz archive"),
        ("empty", "not an .npz archive"),
        ("pickled objects", "pickled Python objects"),
        ("a plain pickle", "not an .npz archive"),
        ("a .npy file", "not an .npz archive"),
        ("missing", "no such file"),
        ("a folder", "is a folder"),
    ],
)
def test_damaged_checkpoint_files_are_refused_naming_the_file(
    damage, expected, checkpoint, tmp_path
):
    import pickle

    path = tmp_path / "best.npz"
    if damage == "truncated":
        path.write_bytes(checkpoint.read_bytes()[: checkpoint.stat().st_size // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "pickled objects":
        with open(path, "wb") as file:
            np.savez(file, vocabulary=np.array([{"a": 1}], dtype=object))
    elif damage == "a plain pickle":
        path.write_bytes(pickle.dumps({"model": [1, 2, 3]}))
    elif damage == "a .npy file":
        with open(path, "wb") as file:
            np.save(file, np.zeros(3))
    elif damage == "a folder":
        path.mkdir()
    with pytest.raises((ValueError, OSError)) as error:
        train.load_checkpoint(path)
    assert expected in str(error.value) and str(path) in str(error.value)


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda f: f.update({"config.model_dim": 32}), "expected shape"),
        (lambda f: f.update({"config.vocab_size": 50}), "expected shape"),
        (lambda f: f.update({"config.num_layers": 1}), "unexpected keys"),
        (
            lambda f: f.update({"model.head.weight": f["model.head.weight"].T.copy()}),
            "expected shape",
        ),
        (
            lambda f: f.update({"model.head.weight": f["model.head.weight"].astype(np.complex64)}),
            "numeric",
        ),
        (
            lambda f: f.update({"model.head.bias": np.array(["x"] * f["model.head.bias"].size)}),
            "numeric",
        ),
        (lambda f: f.pop("model.head.weight"), "missing keys"),
        (lambda f: f.update({"model.extra.weight": np.zeros(3)}), "unexpected keys"),
        (lambda f: f.pop("config.context"), "not a language-model checkpoint"),
        (lambda f: f.pop("vocabulary"), "not a language-model checkpoint"),
    ],
)
def test_checkpoints_with_wrong_arrays_are_refused_with_what_was_expected(
    change, expected, checkpoint, tmp_path
):
    path = tampered(checkpoint, tmp_path, change)
    with pytest.raises((ValueError, RuntimeError)) as error:
        train.load_checkpoint(path)
    assert expected in str(error.value), error.value


def test_arrays_of_another_float_dtype_are_cast_on_load(checkpoint, tmp_path):
    path = tampered(
        checkpoint,
        tmp_path,
        lambda f: f.update(
            {k: v.astype(np.float64) for k, v in f.items() if k.startswith("model.")}
        ),
    )
    model, _, _ = train.load_checkpoint(path)
    original, _, _ = train.load_checkpoint(checkpoint)
    assert all(p.dtype == np.float32 for p in model.parameters())
    ids = np.arange(6).reshape(1, 6)
    np.testing.assert_array_equal(model(ids).numpy(), original(ids).numpy())


def test_a_checkpoint_state_dict_reloads_into_a_fresh_model_through_mg_load(checkpoint):
    loaded = mg.load(checkpoint)
    config = {
        key: loaded["config"][key]  # Python ints, as saved
        for key in ("vocab_size", "context", "model_dim", "num_heads", "num_layers", "ff_dim")
    }
    model = CharTransformer(**config)
    assert model.load_state_dict(loaded["model"]) == ([], [])
    reference, _, _ = train.load_checkpoint(checkpoint)
    ids = np.arange(5).reshape(1, 5)
    np.testing.assert_array_equal(model(ids).numpy(), reference(ids).numpy())


@pytest.mark.parametrize(
    "change",
    [
        lambda f: f.update({"vocabulary": f["vocabulary"][:5]}),
        lambda f: f.update(
            {"vocabulary": np.concatenate([f["vocabulary"][:-1], f["vocabulary"][1:2]])}
        ),
    ],
)
def test_a_vocabulary_that_does_not_fit_the_model_is_refused_on_load(change, checkpoint, tmp_path):
    path = tampered(checkpoint, tmp_path, change)
    try:
        model, vocabulary, _ = train.load_checkpoint(path)
    except ValueError as error:
        assert "vocabulary" in str(error) and str(path) in str(error)
        return
    mg.manual_seed(0)
    # must not fail deep inside
    generate(model, vocabulary, "This", 30, temperature=1.0, top_k=None)
    assert len(vocabulary) == model.config["vocab_size"]


@pytest.mark.parametrize("key", ["step", "validation_loss"])
def test_a_checkpoint_without_its_step_or_loss_is_refused_by_name(key, checkpoint, tmp_path):
    path = tampered(checkpoint, tmp_path, lambda f: f.pop(key))
    with pytest.raises(ValueError, match="not a language-model checkpoint") as error:
        train.load_checkpoint(path)
    assert key in str(error.value)


def test_a_config_claiming_a_huge_model_is_refused_before_allocating(checkpoint, tmp_path):
    path = tampered(checkpoint, tmp_path, lambda f: f.update({"config.context": 10**12}))
    with pytest.raises(ValueError) as error:
        train.load_checkpoint(path)
    assert str(path) in str(error.value) and "context" in str(error.value)


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_generate_with_a_bad_checkpoint_is_a_clean_error(damage, checkpoint, tmp_path, capsys):
    path = tmp_path / "best.npz"
    if damage == "truncated":
        path.write_bytes(checkpoint.read_bytes()[:200])
    message = clean_exit(
        ["--generate", "This", "--checkpoint", path, "--out", tmp_path / "out", "--no-progress"],
        capsys,
    )
    assert message.startswith("train.py: ") and str(path) in message


def test_generate_takes_the_model_size_from_the_checkpoint_not_the_flags(checkpoint, tmp_path):
    samples, svg = main(
        [
            "--generate",
            "This",
            "--checkpoint",
            checkpoint,
            "--model-dim",
            "32",
            "--num-layers",
            "5",
            "--context",
            "8",
            "--out",
            tmp_path,
            "--samples",
            "1",
            "--sample-length",
            "70",
            "--no-progress",
            "--temperature",
            "0",
        ]
    )
    assert samples[0].startswith("This") and len(samples[0]) == 74 and svg.is_file()


def test_generate_with_the_same_seed_writes_the_same_samples(checkpoint, tmp_path):
    runs = [
        main(
            [
                "--generate",
                "The",
                "--checkpoint",
                checkpoint,
                "--out",
                tmp_path / str(i),
                "--seed",
                "3",
                "--samples",
                "2",
                "--sample-length",
                "15",
                "--no-progress",
            ]
        )[0]
        for i in range(2)
    ]
    assert runs[0] == runs[1]


def test_an_interrupted_checkpoint_write_keeps_the_previous_best(tarball, tmp_path, monkeypatch):
    """Ctrl-C (or any failure) in the middle of writing the second best.npz: the first one must
    survive whole, and no temporary file is left in the run folder."""
    out = tmp_path / "run"
    saves = []
    real_save_checkpoint, real_write_array = train.save_checkpoint, np.lib.format.write_array

    def counting_save_checkpoint(path, model, vocabulary, optimizer, schedule, step, loss):
        saves.append(step)
        return real_save_checkpoint(path, model, vocabulary, optimizer, schedule, step, loss)

    def write_then_interrupt(file, array, **options):
        real_write_array(file, array, **options)
        if len(saves) >= 2:  # half of the second checkpoint is on disk
            raise KeyboardInterrupt

    monkeypatch.setattr(train, "save_checkpoint", counting_save_checkpoint)
    monkeypatch.setattr(np.lib.format, "write_array", write_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        main(
            ["--data", str(tarball), "--out", str(out), *FAST, "--steps", "8", "--eval-every", "1"]
        )
    monkeypatch.undo()
    assert len(saves) == 2
    assert os.listdir(out) == ["best.npz"]
    model, vocabulary, info = train.load_checkpoint(out / "best.npz")
    assert info["step"] == saves[0] and len(vocabulary) == model.config["vocab_size"]


def _read_only_mount_works(folder):
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    probe = subprocess.run(
        [
            "unshare",
            "-m",
            "sh",
            "-c",
            'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && ! touch "$0/probe" '
            "2>/dev/null",
            str(folder),
        ],
        capture_output=True,
        timeout=20,
    )
    return probe.returncode == 0


def test_a_read_only_out_folder_is_refused_before_training(tarball, tmp_path):
    """A real read-only file system (a read-only bind mount in a private mount namespace): chmod
    does not stop root, and the tests may run as root."""
    out = tmp_path / "read_only"
    out.mkdir()
    if not _read_only_mount_works(out):
        pytest.skip("cannot make a read-only mount here (needs unshare -m and mount)")
    prefix = [
        "unshare",
        "-m",
        "sh",
        "-c",
        'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && shift && exec "$@"',
        str(out),
        "--",
    ]
    result = run_script(
        ["--data", tarball, "--out", out, *FAST, "--steps", "40", "--eval-every", "20"],
        timeout=120,
        prefix=prefix,
    )
    assert result is not None, "the run hung"
    assert result.returncode != 0 and not (out / "best.npz").exists()
    assert "Traceback" not in result.stderr, result.stderr[-600:]
    assert "validation loss" not in result.stdout  # stopped before training, not after
    assert str(out) in result.stderr


def test_a_run_that_saves_no_checkpoint_says_why(tarball, tmp_path, capsys):
    # a run that diverges: tests/examples/test_language_model_runs.py
    argv = ["--data", str(tarball), "--out", str(tmp_path / "run"), *FAST, "--time-budget", "1e-9"]
    try:
        log = main(argv)
    except SystemExit as stop:
        assert isinstance(stop.code, str) and stop.code.startswith("train.py: ")
        return
    assert math.isfinite(log["best_validation_loss"])


def test_a_diverged_run_does_not_present_an_older_runs_checkpoint_as_its_own(
    tarball, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "run"
    main(["--data", str(tarball), "--out", str(out), *FAST, "--steps", "2", "--eval-every", "1"])
    old_step = train.load_checkpoint(out / "best.npz")[2]["step"]
    forward_backward = train.mg.parallel.forward_backward
    monkeypatch.setattr(  # every loss NaN, as a learning rate far too large gives
        train.mg.parallel,
        "forward_backward",
        lambda loss, *batch: forward_backward(loss, *batch) * float("nan"),
    )
    argv = ["--data", str(tarball), "--out", str(out), *FAST, "--model-dim", "32", "--overwrite"]
    try:
        log = main([*argv, "--steps", "4", "--eval-every", "2"])
    except SystemExit as stop:
        assert isinstance(stop.code, str) and "train.py: " in stop.code
        return
    assert log["config"]["model_dim"] == 32, (
        f"samples and config came from the older run's step-{old_step} model"
    )


# ============================================================ generation


def small_model(context, seed=0, vocab_size=12):
    mg.manual_seed(seed)
    return CharTransformer(
        vocab_size, context=context, model_dim=8, num_heads=2, num_layers=2, ff_dim=16
    )


VOCABULARY = corpus.Vocabulary.from_text("abcdefghij ")


@pytest.mark.parametrize(
    "context, prompt, length",
    [(8, "abc", 5), (8, "a", 7), (16, "abcdefgh", 8), (16, "", 10), (8, "abcdefgh", 1)],
)
def test_greedy_generation_is_the_same_with_and_without_the_cache_within_the_context(
    context, prompt, length
):
    model = small_model(context)
    texts = [
        generate(model, VOCABULARY, prompt, length, temperature=0, use_cache=use)
        for use in (True, False)
    ]
    assert texts[0] == texts[1]


@pytest.mark.parametrize("context", [2, 3, 4, 16])
@pytest.mark.parametrize("use_cache", [True, False])
def test_generation_runs_far_past_the_context(context, use_cache):
    model = small_model(context)
    text = generate(
        model,
        VOCABULARY,
        "abcdefghij" * 3,
        3 * context + 5,
        temperature=1.0,
        top_k=3,
        use_cache=use_cache,
    )
    assert text.startswith("abcdefghij" * 3) and len(text) == 30 + 3 * context + 5


def test_cached_generation_with_a_context_of_one():
    model = small_model(1)
    text = generate(model, VOCABULARY, "abc", 6, temperature=0, use_cache=True)
    assert text == generate(model, VOCABULARY, "abc", 6, temperature=0, use_cache=False)


def test_a_cache_fed_past_the_context_is_refused_with_the_numbers():
    model = small_model(6)
    model.eval()
    caches = model.new_caches()
    with mg.no_grad():
        model(np.zeros((1, 4), np.int64), caches)
        model(np.zeros((1, 2), np.int64), caches)
        assert len(caches[0]) == 6
        with pytest.raises(
            ValueError, match="6 cached \\+ 1 new positions exceed the context of 6"
        ):
            model(np.zeros((1, 1), np.int64), caches)
    assert len(caches[0]) == 6  # the refused call added nothing


def test_an_empty_prompt_and_zero_length_generate_sensibly():
    model = small_model(8)
    assert generate(model, VOCABULARY, "abc", 0) == "abc"
    text = generate(model, VOCABULARY, "", 5, temperature=0)
    assert len(text) == 6  # the newline it starts from, then 5 characters


def test_prompt_characters_outside_the_vocabulary_are_kept_or_named(checkpoint, tmp_path, capsys):
    prompt = "Zé😀"
    samples, _ = main(
        [
            "--generate",
            prompt,
            "--checkpoint",
            str(checkpoint),
            "--out",
            str(tmp_path),
            "--samples",
            "1",
            "--sample-length",
            "5",
            "--no-progress",
        ]
    )
    printed = capsys.readouterr()
    assert samples[0].startswith(prompt) or "😀" in printed.out + printed.err
