"""`examples/language_model/train.py --generate` on damaged checkpoints and hostile prompts.

Each damage is made by hand on the parts of a real checkpoint (a 2-step run of a tiny model,
trained once for the module): a missing or extra block key, a wrong shape, text or integer
weights, settings stored as floats, a vocabulary holding no character or of the wrong rank, a bad
step or loss, NaN weights. What must happen for each: `train.py: ...` naming the file and the
problem, a non-zero exit, no traceback, and no model built (CharTransformer is made to fail here,
so a check that comes after building it would show). A prompt of bytes that are not UTF-8 gets a
message too, in process and from a real command line.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
from conftest import write_imdb_tarball
from examples.language_model import corpus, train
from examples.language_model.generate import NonFiniteLogits, next_id
from examples.language_model.model import CharTransformer, state_shapes

REPO = Path(__file__).resolve().parents[2]
WORDS = "This movie was the good bad great plot actors film and".split()
TINY = ["--context", "16", "--model-dim", "8", "--num-heads", "2", "--num-layers", "2"]
SAMPLE = ["--samples", "1", "--sample-length", "4", "--no-progress"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """best.npz of a 2-step run of a 2-block model of 8 features on a tiny tarball."""
    folder = tmp_path_factory.mktemp("trained")
    rng = np.random.default_rng(0)
    reviews = {
        (split, label): [" ".join(rng.choice(WORDS, 40)) + "." for _ in range(3)]
        for split in ("train", "test")
        for label in ("pos", "neg")
    }
    data = write_imdb_tarball(folder / "tiny.tar.gz", reviews)
    argv = ["--data", data, "--out", folder / "run", *TINY, "--ff-dim", "16", "--steps", "2"]
    argv += ["--eval-every", "1", "--eval-batches", "1", "--batch-size", "4", "--samples", "0"]
    train.main([str(arg) for arg in [*argv, "--no-progress"]])
    return folder / "run" / "best.npz"


def parts_of(path):
    """The checkpoint at `path` as plain nested dicts of numpy arrays and Python numbers (how
    save_checkpoint writes it), whatever form mg.load gives the settings in."""
    loaded = mg.load(path)
    return {
        "model": {key: np.array(value) for key, value in loaded["model"].items()},
        "config": {key: np.asarray(loaded[f"config.{key}"]).item() for key in train.CONFIG_KEYS},
        "vocabulary": np.array(loaded["vocabulary"]),
        "step": int(np.asarray(loaded["step"])),
        "validation_loss": float(np.asarray(loaded["validation_loss"])),
    }


def set_weight(key, change):
    def damage(parts):
        parts["model"][key] = change(parts["model"][key])

    return damage


def pop_weight(key):
    return lambda parts: parts["model"].pop(key)


def set_entry(path, value):
    """Replace parts[path[0]][path[1]]... by value (a callable gets the old value)."""

    def damage(parts):
        holder = parts
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = value(holder[path[-1]]) if callable(value) else value

    return damage


def with_nan(array):
    array = array.copy()
    array.flat[0] = np.nan
    return array


DAMAGES = {  # name -> (damage, words the message must hold)
    "a missing block key": (pop_weight("blocks.1.attention.query_weight"), "missing keys"),
    "an extra block key": (
        set_weight("blocks.0.attention.query_weight", lambda w: w),  # and one more below
        "unexpected keys",
    ),
    "a block more than num_layers": (
        set_entry(("config", "num_layers"), 1),
        "unexpected keys blocks.1.",
    ),
    "a wrong shape": (
        set_weight("blocks.1.feed_forward.expand.weight", lambda w: w.T.copy()),
        "expected shape (16, 8)",
    ),
    "a text weight": (
        set_weight("blocks.0.attention.key_weight", lambda w: np.full(w.shape, "x")),
        "expected a floating-point numeric array",
    ),
    "an integer weight": (
        set_weight("final_norm.bias", lambda w: w.astype(np.int64)),
        "expected a floating-point numeric array",
    ),
    "a setting stored as a float": (set_entry(("config", "model_dim"), 8.0), "config.model_dim"),
    "a fractional number of heads": (set_entry(("config", "num_heads"), 2.5), "config.num_heads"),
    "a huge vocab_size": (set_entry(("config", "vocab_size"), 10**30), "config.vocab_size"),
    "num_heads not dividing model_dim": (set_entry(("config", "num_heads"), 3), "divisible"),
    "positions neither 0 nor 1": (set_entry(("config", "positions"), 7), "config.positions"),
    "a dropout of 2": (set_entry(("config", "dropout"), 2.0), "config.dropout"),
    "a code point of 2**40": (
        set_entry(("vocabulary",), lambda v: np.concatenate([v, [2**40]])),
        "not the code point of a character",
    ),
    "a surrogate code point": (
        set_entry(("vocabulary",), lambda v: np.concatenate([v[:-1], [0xD800]])),
        "not the code point of a character",
    ),
    "a 2-D vocabulary": (set_entry(("vocabulary",), lambda v: v.reshape(1, -1)), "1-D"),
    "a text vocabulary": (
        set_entry(("vocabulary",), lambda v: np.array([chr(c) for c in v])),
        "integer code points",
    ),
    "a vocabulary out of order": (
        set_entry(("vocabulary",), lambda v: np.concatenate([v[:1], v[:0:-1]])),
        "increasing order",
    ),
    "a step of text": (set_entry(("step",), "four"), "step is"),
    "a negative step": (set_entry(("step",), -3), "step is"),
    "a step of two numbers": (set_entry(("step",), np.array([1, 2])), "step is"),
    "a NaN validation loss": (set_entry(("validation_loss",), float("nan")), "validation_loss"),
    "NaN weights": (set_weight("head.weight", with_nan), "model.head.weight holds NaN"),
    "infinite weights": (
        set_weight("token_embedding.weight", lambda w: np.full_like(w, np.inf)),
        "holds NaN or infinite",
    ),
}


def damaged(checkpoint, tmp_path, name):
    parts = parts_of(checkpoint)
    change, expected = DAMAGES[name]
    change(parts)
    if name == "an extra block key":
        parts["model"]["blocks.0.attention.extra_weight"] = np.zeros((8, 8), np.float32)
    path = tmp_path / "damaged.npz"
    mg.save(parts, path)
    return path, expected


def generate_argv(path, out, prompt="This", *flags):
    return ["--generate", prompt, "--checkpoint", str(path), "--out", str(out), *SAMPLE, *flags]


def refused(argv, capsys):
    """train.main(argv) must stop with its own message: SystemExit with a string (any other
    exception would be a traceback). Returns the message."""
    with pytest.raises(SystemExit) as stop:
        train.main(argv)
    assert isinstance(stop.value.code, str), f"exit code {stop.value.code!r}, no message"
    return stop.value.code


@pytest.fixture
def no_model(monkeypatch):
    """Building a CharTransformer fails: a test using it shows the checks come before."""

    def refuse(*args, **kwargs):
        raise AssertionError("a model was built from a checkpoint that is not valid")

    monkeypatch.setattr(train, "CharTransformer", refuse)


def test_the_undamaged_parts_load_and_generate(checkpoint, tmp_path):
    """The control for every damage below: the parts as they are make a working checkpoint."""
    path = tmp_path / "same.npz"
    mg.save(parts_of(checkpoint), path)
    samples, _ = train.main(generate_argv(path, tmp_path / "out"))
    assert samples[0].startswith("This") and len(samples[0]) == 8


@pytest.mark.parametrize("name", list(DAMAGES))
def test_generate_refuses_a_damaged_checkpoint_before_building_the_model(
    name, checkpoint, tmp_path, capsys, no_model
):
    path, expected = damaged(checkpoint, tmp_path, name)
    message = refused(generate_argv(path, tmp_path / "out"), capsys)
    assert message.startswith("train.py: ") and str(path) in message, message
    assert expected in message, message


@pytest.mark.filterwarnings("ignore:overflow encountered", "ignore:invalid value encountered")
def test_finite_weights_whose_logits_overflow_stop_with_a_message(checkpoint, tmp_path, capsys):
    parts = parts_of(checkpoint)
    parts["model"]["head.weight"] = np.full_like(parts["model"]["head.weight"], 3e38)
    path = tmp_path / "loud.npz"
    mg.save(parts, path)
    message = refused(generate_argv(path, tmp_path / "out"), capsys)
    assert message.startswith(f"train.py: {path}: ") and "not finite" in message, message


def test_next_id_refuses_non_finite_logits_and_takes_the_greedy_limit_of_tiny_temperatures():
    with pytest.raises(NonFiniteLogits, match="not finite"):
        next_id(np.array([0.0, np.nan, 1.0], np.float32))
    assert next_id(np.array([0.0, 3.0, 1.0], np.float32), temperature=1e-320) == 1


@pytest.mark.parametrize(
    "prompt, expected",
    [
        ("caf\udcff", "byte 4 (0xff) is not UTF-8"),  # b"caf\xff" through surrogateescape
        ("\ud800abc", "character 1 is a lone surrogate (U+D800)"),
    ],
)
@pytest.mark.parametrize("flag", ["--generate", "--attention-prompt"])
def test_a_prompt_that_is_not_text_is_refused_by_name(
    flag, prompt, expected, checkpoint, tmp_path, capsys
):
    if flag == "--generate":
        argv = generate_argv(checkpoint, tmp_path / "out", prompt)
    else:
        argv = generate_argv(checkpoint, tmp_path / "out", "This", flag, prompt)
    message = refused(argv, capsys)
    assert message.startswith(f"train.py: the {flag} prompt") and expected in message, message


def test_prompt_characters_outside_the_vocabulary_are_named_and_read_as_unknown(
    checkpoint, tmp_path, capsys
):
    samples, _ = train.main(generate_argv(checkpoint, tmp_path / "out", "Zq😀"))
    assert samples[0].startswith(corpus.UNKNOWN * 3) and len(samples[0]) == 7
    assert "'Zq😀'" in capsys.readouterr().err


def run_script(args):
    """train.py in a fresh process, arguments as bytes (as a shell passes them)."""
    return subprocess.run(
        [sys.executable, str(REPO / "examples" / "language_model" / "train.py"), *args],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO), LC_ALL="C.UTF-8"),
        capture_output=True,
        timeout=300,
    )


def test_from_a_shell_prompt_bytes_and_nan_weights_get_a_message_not_a_traceback(
    checkpoint, tmp_path
):
    result = run_script(
        [b"--generate", b"caf\xff", b"--checkpoint", bytes(checkpoint), b"--out", bytes(tmp_path)]
    )
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 1 and "Traceback" not in stderr, stderr[-800:]
    assert "train.py: the --generate prompt" in stderr and "0xff" in stderr, stderr
    path, _ = damaged(checkpoint, tmp_path, "NaN weights")
    result = run_script(["--generate", "This", "--checkpoint", str(path), "--out", str(tmp_path)])
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 1 and "Traceback" not in stderr, stderr[-800:]
    assert stderr.startswith(f"train.py: {path}") and "NaN" in stderr, stderr


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
@pytest.mark.parametrize("num_layers", [1, 3])
def test_state_shapes_is_the_state_dict_of_the_model(positions, num_layers):
    config = dict(vocab_size=7, context=5, model_dim=8, num_heads=2, num_layers=num_layers)
    config.update(ff_dim=12, positions=positions)
    model = CharTransformer(**config)
    shapes = {key: tuple(value.shape) for key, value in model.state_dict().items()}
    assert state_shapes(**config) == shapes


def test_a_vocabulary_round_trips_through_its_code_points():
    vocabulary = corpus.Vocabulary.from_text("héllo wörld 😀")
    again = corpus.Vocabulary.from_code_points(vocabulary.code_points())
    assert again.characters == vocabulary.characters
