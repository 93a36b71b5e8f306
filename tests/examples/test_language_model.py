"""The character language model example (examples/language_model/): text and vocabulary,
a training run on made-up text that lowers the loss, cached generation = recomputing the
prefix, checkpoints, sampling, the attention grid, and the command line on a tiny tarball."""

import json
import re

import numpy as np
import pytest

import minigrad as mg
from examples.language_model import corpus, train
from examples.language_model.attention_grid import attention_grid_svg, attention_maps
from examples.language_model.generate import generate, next_id
from examples.language_model.model import CharTransformer

TINY = dict(context=16, model_dim=16, num_heads=2, num_layers=2, ff_dim=32)


def tiny_model(vocab_size=12, seed=0, **settings):
    mg.manual_seed(seed)
    return CharTransformer(vocab_size, **{**TINY, **settings})


# ============================================================ text


def test_reviews_are_cleaned_and_the_vocabulary_round_trips():
    assert corpus.clean("Great.<br /><br />Really<br/>good") == "Great.  Really good\n"
    vocabulary = corpus.Vocabulary.from_text("hello world\n")
    # 9 distinct + unknown
    assert vocabulary.characters[0] == corpus.UNKNOWN and len(vocabulary) == 10
    ids = vocabulary.encode("low hello\n")
    assert ids.dtype == np.int64 and vocabulary.decode(ids) == "low hello\n"
    assert vocabulary.encode("héllo").tolist()[1] == 0  # not in the training text
    restored = corpus.Vocabulary.from_code_points(vocabulary.code_points())
    assert restored.characters == vocabulary.characters
    big = "abc" * 3_000_000  # more than one encoding chunk
    np.testing.assert_array_equal(
        corpus.encode(corpus.Vocabulary.from_text("abc"), big, np.uint8)[-4:], [3, 1, 2, 3]
    )


def test_batches_are_windows_and_their_next_characters():
    ids = np.arange(100, dtype=np.uint16)
    inputs, targets = next(corpus.random_batches(ids, 4, 10, seed=0))
    assert inputs.shape == targets.shape == (4, 10) and inputs.dtype == np.int64
    np.testing.assert_array_equal(targets, inputs + 1)
    np.testing.assert_array_equal(np.diff(inputs, axis=1), 1)
    again = next(corpus.random_batches(ids, 4, 10, seed=0))[0]
    np.testing.assert_array_equal(inputs, again)  # the seed decides the batches
    fixed = list(corpus.evaluation_batches(ids, 3, 10, max_batches=5))
    # 9 windows fit in 100 characters
    assert [b[0].shape for b in fixed] == [(3, 10), (3, 10), (3, 10)]
    np.testing.assert_array_equal(fixed[0][0][1], np.arange(10, 20))
    with pytest.raises(ValueError, match="a context of 10 needs at least 11"):
        next(corpus.random_batches(ids[:10], 4, 10, seed=0))


# ============================================================ the model


def test_model_names_shapes_and_causality():
    model = tiny_model()
    names = dict(model.named_parameters())
    for matrix in ("query_weight", "key_weight", "value_weight", "output_weight"):
        assert names[f"blocks.1.attention.{matrix}"].shape == (16, 16)
    ids = np.random.default_rng(0).integers(0, 12, (3, 9))
    logits = model(ids)
    assert logits.shape == (3, 9, 12) and logits.dtype == np.float32
    changed = ids.copy()
    changed[:, 5:] = (changed[:, 5:] + 1) % 12
    np.testing.assert_allclose(
        model(changed).numpy()[:, :5], logits.numpy()[:, :5], rtol=1e-6, atol=1e-6
    )
    with pytest.raises(ValueError, match="exceed the context of 16"):
        model(np.zeros((1, 17), np.int64))


def test_training_on_made_up_text_lowers_the_loss():
    """A repeating pattern with one long-range dependency: the model must learn it."""
    rng = np.random.default_rng(0)
    words = ["abc", "abd", "xyz", "xyw"]
    text = "".join(rng.choice(words) + " " for _ in range(3000))
    vocabulary = corpus.Vocabulary.from_text(text)
    ids = corpus.encode(vocabulary, text, np.uint8)
    model = tiny_model(len(vocabulary))
    optimizer = mg.optim.AdamW(model.parameters(), lr=1e-2)
    batches = corpus.random_batches(ids, 16, 16, seed=0)
    fixed = list(corpus.evaluation_batches(ids, 16, 16, max_batches=2))

    def evaluation_loss():
        with mg.no_grad():
            return np.mean([model.loss(x, y).item() for x, y in fixed])

    before = evaluation_loss()
    for _ in range(60):
        x, y = next(batches)
        loss = model.loss(x, y)
        optimizer.zero_grad()
        loss.backward()
        mg.optim.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    after = evaluation_loss()
    assert before > 1.8  # about log(8) = 2.08 at the start: 7 characters and the unknown
    assert after < 0.75 * before, (before, after)
    # what is left is the choice of word (2 bits per 4 characters) and of its last letter
    assert after < 1.0, after


def test_cached_generation_gives_the_logits_of_the_whole_prefix():
    model = tiny_model(seed=3)
    model.eval()
    ids = np.random.default_rng(1).integers(0, 12, (2, 11))
    with mg.no_grad():
        full = model(ids).numpy()
        caches = model.new_caches()
        pieces = [model(ids[:, :4], caches).numpy()]  # a prompt of 4, then one character at a time
        for t in range(4, 11):
            pieces.append(model(ids[:, t : t + 1], caches).numpy())
    assert len(caches[0]) == 11
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), full, rtol=1e-5, atol=1e-5)


def test_generation_with_and_without_cache_writes_the_same_text():
    model = tiny_model(seed=4)
    vocabulary = corpus.Vocabulary.from_text("abcdefghij ")
    texts = []
    for use_cache in (True, False):
        mg.manual_seed(7)  # the same draws
        texts.append(
            generate(model, vocabulary, "abc", 10, temperature=1.0, top_k=5, use_cache=use_cache)
        )
    assert texts[0] == texts[1] and texts[0].startswith("abc") and len(texts[0]) == 13
    # past the context of 16 the cached run starts again from the last half context and goes on
    long = generate(model, vocabulary, "abc", 40, use_cache=True)
    assert len(long) == 43


def test_next_id_samples_from_the_top_k():
    logits = mg.tensor(np.array([0.0, 3.0, 1.0, 2.9, -1.0], np.float32))
    assert next_id(logits, temperature=0) == 1
    assert next_id(logits, top_k=1) == 1
    mg.manual_seed(0)
    draws = [next_id(logits, temperature=1.0, top_k=2) for _ in range(400)]
    assert set(draws) == {1, 3}
    share = draws.count(1) / len(draws)  # softmax([3, 2.9]) gives id 1 a share of 0.525
    assert 0.45 < share < 0.60
    with pytest.raises(ValueError, match="temperature must be >= 0"):
        next_id(logits, temperature=-1)


# ============================================================ checkpoints and pictures


def test_checkpoint_round_trip(tmp_path):
    model = tiny_model(seed=5, positions="sinusoidal")
    vocabulary = corpus.Vocabulary.from_text("0123456789a")
    optimizer = mg.optim.AdamW(model.parameters(), lr=1e-3)
    schedule = mg.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    loss = model.loss(np.ones((2, 5), np.int64), np.zeros((2, 5), np.int64))
    loss.backward()
    optimizer.step()
    train.save_checkpoint(tmp_path / "best.npz", model, vocabulary, optimizer, schedule, 7, 1.25)
    restored, restored_vocabulary, info = train.load_checkpoint(tmp_path / "best.npz")
    assert info == {"step": 7, "validation_loss": 1.25}
    assert (
        restored.config == model.config and restored_vocabulary.characters == vocabulary.characters
    )
    ids = np.arange(8).reshape(1, 8)
    np.testing.assert_array_equal(restored(ids).numpy(), model(ids).numpy())
    mg.save({"something": np.zeros(3)}, tmp_path / "other.npz")
    with pytest.raises(ValueError, match="not a language-model checkpoint"):
        train.load_checkpoint(tmp_path / "other.npz")


def test_attention_grid_draws_lower_triangles_only():
    model = tiny_model(seed=6)
    vocabulary = corpus.Vocabulary.from_text("the cat sat")
    characters, maps = attention_maps(model, vocabulary, "the cat")
    assert characters == "the cat" and len(maps) == 2 and maps[0].shape == (2, 7, 7)
    svg = attention_grid_svg(characters, maps, title="test")
    cells = [
        (float(x), float(y))
        for x, y in re.findall(r'<use href="#c" x="([\d.]+)" y="([\d.]+)"', svg)
    ]
    assert cells and all(x <= y for x, y in cells)  # key <= query: nothing above the diagonal
    assert svg.count("head 1") == 1 and svg.count("block 1") == 1


# ============================================================ the command line


def test_command_line_quick_run_then_generate(make_imdb_tarball, tmp_path, capsys):
    rng = np.random.default_rng(0)
    words = "the movie was good bad great plot actors film and".split()
    reviews = {
        (split, label): [
            " ".join(rng.choice(words, 60)) + ".<br /><br />The end." for _ in range(6)
        ]
        for split in ("train", "test")
        for label in ("pos", "neg")
    }
    tarball = make_imdb_tarball(reviews)
    out = tmp_path / "run"
    log = train.main(
        [
            "--data",
            str(tarball),
            "--quick",
            "--steps",
            "8",
            "--eval-every",
            "4",
            "--eval-batches",
            "2",
            "--samples",
            "1",
            "--sample-length",
            "12",
            "--out",
            str(out),
            "--no-progress",
            "--attention-prompt",
            "the plot",
        ]
    )
    assert (out / "best.npz").is_file() and (out / "attention.svg").is_file()
    assert log["total_steps"] == 8 and [v["step"] for v in log["validation"]] == [4, 8]
    assert json.loads((out / "log.json").read_text())["best_step"] in (4, 8)
    assert (
        log["samples"][0].startswith("This movie")
        and len(log["samples"][0]) == len("This movie") + 12
    )
    printed = capsys.readouterr().out
    assert "QUICK DEMO" in printed and "bits/char" in printed
    samples, svg = train.main(
        [
            "--generate",
            "The film",
            "--checkpoint",
            str(out / "best.npz"),
            "--samples",
            "2",
            "--sample-length",
            "5",
            "--out",
            str(tmp_path / "again"),
            "--no-progress",
        ]
    )
    assert len(samples) == 2 and all(s.startswith("The film") for s in samples) and svg.is_file()


def test_time_budget_fits_the_schedule_to_the_measured_pace():
    now = [100.0]
    args = train.parse_args(["--time-budget", "2", "--steps", "1000", "--warmup", "10"])
    plan = train.Plan(args, clock=lambda: now[0])
    assert plan.steps == 1000 and not plan.over(999)
    now[0] += 30.0  # 100 steps in 30 s: 0.3 s per step, 90 s left -> 300 more steps
    plan.replan(100, 0, 0.0)
    assert (
        plan.steps == 400 and plan.lr_factor(5) == 0.6 and plan.lr_factor(400) == pytest.approx(0.1)
    )
    assert not plan.over(399) and plan.over(400)
    now[0] += 90.0  # the budget is spent, whatever the step
    assert plan.over(10)
    assert train.Plan(train.parse_args([]), clock=lambda: 0.0).budget is None


def test_command_line_errors(tmp_path):
    with pytest.raises(SystemExit):
        train.parse_args(["--generate", "The"])  # no checkpoint
    with pytest.raises(SystemExit):
        train.parse_args(["--model-dim", "10", "--num-heads", "3"])
    with pytest.raises(SystemExit, match="train.py: "):
        train.main(
            ["--data", str(tmp_path / "missing.tar.gz"), "--out", str(tmp_path), "--no-progress"]
        )
