"""Tests for the teaching scripts in examples/: attention_by_hand, four_matrices,
attention_pooling, multihead_check.

Every number a script computes is compared with the same quantity worked out here with plain
numpy in float64 from the script's inputs (never with minigrad, never with the script's own
output). Each script is also run once as `python examples/<name>.py`, and the key numbers
must appear in what it prints (4 decimals).
"""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from examples import attention_by_hand, attention_pooling, four_matrices, multihead_check

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
TOLERANCE = dict(rtol=1e-5, atol=1e-6)  # float32 scripts against float64 references


# ---------------------------------------------------------------------------------------
# Plain numpy references


def softmax(scores, allowed=None):
    """Softmax over the last axis; positions where allowed is False get weight 0."""
    scores = np.asarray(scores, dtype=np.float64)
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


def self_attention(
    x, query_weight, key_weight, value_weight, output_weight, num_heads=1, allowed=None
):
    """x (T, D) -> weights (H, T, T), output (T, D), heads computed one at a time."""
    x = np.asarray(x, np.float64)
    head_dim = x.shape[1] // num_heads
    weights, contexts = [], []
    for head in range(num_heads):
        columns = slice(head * head_dim, (head + 1) * head_dim)
        queries, keys, values = (
            x @ np.asarray(w, np.float64)[:, columns]
            for w in (query_weight, key_weight, value_weight)
        )
        head_weights = softmax(queries @ keys.T / math.sqrt(head_dim), allowed)
        weights.append(head_weights)
        contexts.append(head_weights @ values)
    return np.stack(weights), np.concatenate(contexts, axis=1) @ np.asarray(
        output_weight, np.float64
    )


def run_script(name, *arguments):
    """stdout of `python examples/<name>.py ...` run from the repository root."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{name}.py"), *map(str, arguments)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def assert_printed(stdout, *values):
    """Each value appears in stdout with 4 decimals (either rounding, if it sits on the edge)."""
    for value in np.concatenate([np.ravel(v) for v in values]):
        candidates = {f"{value + shift:.4f}" for shift in (-1e-5, 0.0, 1e-5)}
        candidates = {"0.0000" if c == "-0.0000" else c for c in candidates}
        assert any(c in stdout for c in candidates), (
            f"{value:.6f} not printed (looked for {sorted(candidates)})"
        )


# ---------------------------------------------------------------------------------------
# attention_by_hand.py


@pytest.fixture(scope="module")
def by_hand():
    return attention_by_hand.main()


def by_hand_reference():
    x = attention_by_hand.EMBEDDINGS.astype(np.float64)
    queries = x @ attention_by_hand.QUERY_WEIGHT
    keys = x @ attention_by_hand.KEY_WEIGHT
    values = x @ attention_by_hand.VALUE_WEIGHT
    scores = queries @ keys.T
    weights = softmax(scores / math.sqrt(2))
    return dict(
        queries=queries,
        keys=keys,
        values=values,
        scores=scores,
        scaled_scores=scores / math.sqrt(2),
        weights=weights,
        outputs=weights @ values,
    )


def chapter_reference():
    """The chapter's example in float64: the query of "it" and everything that follows from it."""
    x = attention_by_hand.CHAPTER_EMBEDDINGS.astype(np.float64)
    asking = attention_by_hand.CHAPTER_WORDS.index("it")
    query = (x @ attention_by_hand.CHAPTER_QUERY_WEIGHT)[asking]
    keys = x @ attention_by_hand.CHAPTER_KEY_WEIGHT
    values = x @ attention_by_hand.CHAPTER_VALUE_WEIGHT
    scores = keys @ query
    weights = softmax(scores / math.sqrt(2))
    return dict(
        query=query,
        keys=keys,
        values=values,
        scores=scores,
        scaled_scores=scores / math.sqrt(2),
        weights=weights,
        output=weights @ values,
    )


def test_attention_by_hand_chapter_example(by_hand):
    chapter, reference = by_hand["chapter"], chapter_reference()
    # The chapter's numbers: q_it = [2, 0]; keys cat [3, 0], sleeps [0, 3], it [1, 1].
    assert attention_by_hand.CHAPTER_WORDS == ("cat", "sleeps", "it")
    np.testing.assert_array_equal(reference["query"], [2, 0])
    np.testing.assert_array_equal(reference["keys"], [[3, 0], [0, 3], [1, 1]])
    for name, expected in reference.items():
        np.testing.assert_allclose(chapter[name], expected, **TOLERANCE, err_msg=name)
    assert [f"{weight:.2f}" for weight in chapter["weights"]] == ["0.93", "0.01", "0.06"]
    # e^(6/sqrt 2) / (e^(6/sqrt 2) + 1 + e^(2/sqrt 2)), worked out by hand.
    cat = math.exp(6 / math.sqrt(2)) / (math.exp(6 / math.sqrt(2)) + 1 + math.exp(2 / math.sqrt(2)))
    np.testing.assert_allclose(chapter["weights"][0], cat, rtol=1e-6)


def test_attention_by_hand_steps_match_numpy(by_hand):
    reference = by_hand_reference()
    for name, expected in reference.items():
        np.testing.assert_allclose(by_hand[name], expected, **TOLERANCE, err_msg=name)
    # The integer scores are small enough to check by eye: q_i . k_j.
    np.testing.assert_array_equal(by_hand["scores"], [[2, 0, 2], [2, 2, 4], [4, 2, 6]])
    np.testing.assert_allclose(by_hand["weights"].sum(axis=1), 1.0, rtol=1e-6)


def test_attention_by_hand_module_gives_the_same_numbers(by_hand):
    reference = by_hand_reference()
    np.testing.assert_allclose(by_hand["module_weights"], reference["weights"], **TOLERANCE)
    np.testing.assert_allclose(by_hand["module_outputs"], reference["outputs"], **TOLERANCE)


def test_attention_by_hand_causal_mask_zeroes_the_future(by_hand):
    reference = by_hand_reference()
    earlier = np.tril(np.ones((3, 3), dtype=bool))
    expected = softmax(reference["scaled_scores"], earlier)
    np.testing.assert_allclose(by_hand["causal_weights"], expected, **TOLERANCE)
    assert np.all(by_hand["causal_weights"][~earlier] == 0.0)
    np.testing.assert_allclose(
        by_hand["causal_outputs"], expected @ reference["values"], **TOLERANCE
    )


def test_attention_by_hand_temperature(by_hand):
    scores = by_hand_reference()["scores"]
    for temperature, weights in by_hand["temperature_weights"].items():
        np.testing.assert_allclose(
            weights, softmax(scores / (math.sqrt(2) * temperature)), **TOLERANCE
        )
    sharp, flat = by_hand["temperature_weights"][0.5], by_hand["temperature_weights"][2.0]
    assert np.all(sharp.max(axis=1) > flat.max(axis=1))


def test_attention_by_hand_script_prints_the_numbers():
    stdout = run_script("attention_by_hand")
    chapter = chapter_reference()
    assert stdout.startswith("The chapter's example")  # printed first
    assert "weights rounded: [0.93, 0.01, 0.06]" in stdout
    assert_printed(stdout, chapter["scaled_scores"], chapter["weights"], chapter["output"])
    reference = by_hand_reference()
    assert_printed(stdout, reference["scaled_scores"], reference["weights"], reference["outputs"])
    assert "weights on future words: [0.0, 0.0, 0.0]" in stdout
    assert_printed(stdout, softmax(reference["scores"] / (math.sqrt(2) * 0.5)))


# ---------------------------------------------------------------------------------------
# four_matrices.py


def classifier_reference(parameters, x, labels):
    """The model in numpy: self-attention, mean over words, linear; -> (loss, weights (B, T, T))."""
    matrices = [parameters[f"attention.{name}"] for name in four_matrices.MATRICES]
    weights, outputs = zip(*(self_attention(sentence, *matrices) for sentence in x))
    pooled = np.stack(outputs).mean(axis=1)
    logits = (
        pooled @ parameters["classifier.weight"].T.astype(np.float64)
        + parameters["classifier.bias"]
    )
    log_probs = logits - logits.max(axis=1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(axis=1, keepdims=True))
    loss = -log_probs[np.arange(len(labels)), labels].mean()
    return loss, np.stack(weights)[:, 0]


@pytest.fixture(scope="module")
def trained():
    return four_matrices.main(images=None)


def sentence_vectors(result, words):
    return result["vectors"][[four_matrices.VOCABULARY.index(word) for word in words]][None]


def test_four_matrices_attention_weights_are_not_parameters(trained):
    assert trained["parameter_names"] == [
        "attention.query_weight",
        "attention.key_weight",
        "attention.value_weight",
        "attention.output_weight",
        "classifier.weight",
        "classifier.bias",
    ]
    # Recomputed per input: two sentences, the same matrices, different weights.
    assert not np.allclose(trained["weights_after"], trained["other_weights"], atol=0.05)


def test_four_matrices_loss_falls_and_all_four_matrices_move(trained):
    x, labels = trained["vectors"][trained["train_ids"]], trained["train_labels"]
    history = trained["history"]
    loss_before, _ = classifier_reference(trained["initial_parameters"], x, labels)
    loss_after, _ = classifier_reference(trained["final_parameters"], x, labels)
    np.testing.assert_allclose(history[0]["loss"], loss_before, rtol=1e-4)
    np.testing.assert_allclose(history[-1]["loss"], loss_after, rtol=1e-3, atol=1e-5)
    assert loss_after < 0.05 * loss_before
    assert history[-1]["accuracy"] == 1.0 and trained["held_out_accuracy"] > 0.9
    for name in four_matrices.MATRICES:
        key = f"attention.{name}"
        moved = np.linalg.norm(
            trained["final_parameters"][key].astype(np.float64) - trained["initial_parameters"][key]
        )
        assert moved > 0.5, name
        np.testing.assert_allclose(history[-1]["moved"][name], moved, rtol=1e-5)
        assert history[0]["moved"][name] == 0.0


def test_four_matrices_attention_moves_onto_the_sentiment_word(trained):
    words = four_matrices.FIXED_SENTENCE
    _, before = classifier_reference(
        trained["initial_parameters"], sentence_vectors(trained, words), [1]
    )
    _, after = classifier_reference(
        trained["final_parameters"], sentence_vectors(trained, words), [1]
    )
    np.testing.assert_allclose(trained["weights_before"], before[0], **TOLERANCE)
    np.testing.assert_allclose(trained["weights_after"], after[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        trained["history"][-1]["received"], after[0].mean(axis=0), rtol=1e-4, atol=1e-5
    )
    good = words.index("good")
    assert after[0].mean(axis=0)[good] > 0.9 > 0.3 > before[0].mean(axis=0)[good]
    _, other = classifier_reference(
        trained["final_parameters"], sentence_vectors(trained, four_matrices.OTHER_SENTENCE), [1]
    )
    np.testing.assert_allclose(trained["other_weights"], other[0], rtol=1e-4, atol=1e-5)


def test_four_matrices_graph_is_reproducible(trained):
    committed = (IMAGES / "four_matrices.dot").read_text()
    rebuilt = four_matrices.build_graph(
        four_matrices.untrained_model(), four_matrices.word_vectors()
    ).source
    assert rebuilt == committed, (
        "docs/images/four_matrices.dot is out of date (viz or SelfAttention changed?): "
        "rerun `python examples/four_matrices.py` and commit the .dot and .svg"
    )
    assert trained["graph"].source == rebuilt  # main() draws the same picture
    svg = (IMAGES / "four_matrices.svg").read_text()
    for name in four_matrices.MATRICES:
        assert f"attention.{name}" in committed and f"attention.{name}" in svg
    # The four matrices are drawn emphasised (red), the head's weights are not, and so are the
    # edges on the gradient paths from the loss to the four matrices.
    lines = committed.splitlines()
    for name in [f"attention.{n}" for n in four_matrices.MATRICES] + [
        "classifier.weight",
        "classifier.bias",
    ]:
        (line,) = [line for line in lines if f'label="{name}' in line]
        assert ("#cc0000" in line) == name.startswith("attention."), line
    assert sum("->" in line and "#cc0000" in line for line in lines) > 20


def test_four_matrices_script_prints_the_numbers(trained, tmp_path):
    stdout = run_script("four_matrices", "--images", tmp_path)
    x, labels = trained["vectors"][trained["train_ids"]], trained["train_labels"]
    loss_before, _ = classifier_reference(trained["initial_parameters"], x, labels)
    fixed_sentence = sentence_vectors(trained, four_matrices.FIXED_SENTENCE)
    _, after = classifier_reference(trained["final_parameters"], fixed_sentence, [1])
    moved = [
        np.linalg.norm(
            trained["final_parameters"][f"attention.{name}"].astype(np.float64)
            - trained["initial_parameters"][f"attention.{name}"]
        )
        for name in four_matrices.MATRICES
    ]
    assert_printed(stdout, loss_before, after[0], moved)
    # It writes the picture main() draws (test_four_matrices_graph_is_reproducible: the committed
    # one).
    assert (tmp_path / "four_matrices.dot").read_text() == trained["graph"].source
    assert (tmp_path / "four_matrices.svg").stat().st_size > 10_000


# ---------------------------------------------------------------------------------------
# attention_pooling.py


def pooling_reference():
    """name -> (scores (B, T) or None, weights (B, T), pooled (B, 3)) for the script's padded
    batch."""
    x = np.zeros((2, 4, 3))
    x[:] = attention_pooling.PADDING_VECTOR
    lengths = np.array([len(s) for s in attention_pooling.SENTENCES])
    for row, words in enumerate(attention_pooling.SENTENCES):
        x[row, : len(words)] = [attention_pooling.WORD_VECTORS[w] for w in words]
    real = np.arange(4) < lengths[:, None]
    additive = {k: v.astype(np.float64) for k, v in attention_pooling.ADDITIVE.items()}
    scores = {
        "additive": np.tanh(
            x @ additive["input_weight"] + additive["query"] @ additive["query_weight"]
        )
        @ additive["score_vector"],
        "dot": x @ attention_pooling.DOT_QUERY.astype(np.float64),
    }
    result = {"mean": (None, real / lengths[:, None])}
    for name, score in scores.items():
        result[name] = (score, softmax(score, real))
    return x, {
        name: (score, weights, np.einsum("bt,btd->bd", weights, x))
        for name, (score, weights) in result.items()
    }


@pytest.fixture(scope="module")
def pooled():
    return attention_pooling.main()


def test_attention_pooling_matches_numpy(pooled):
    x, reference = pooling_reference()
    np.testing.assert_array_equal(pooled["x"], x.astype(np.float32))
    for name, (scores, weights, vectors) in reference.items():
        np.testing.assert_allclose(pooled[name]["weights"], weights, **TOLERANCE, err_msg=name)
        np.testing.assert_allclose(pooled[name]["pooled"], vectors, **TOLERANCE, err_msg=name)
        if scores is not None:
            np.testing.assert_allclose(pooled[name]["scores"], scores, **TOLERANCE, err_msg=name)
        np.testing.assert_allclose(pooled[name]["alone"], vectors[1], **TOLERANCE, err_msg=name)
    np.testing.assert_allclose(pooled["mean"]["pooled"][0], [0.35, 0.275, 0.075], rtol=1e-6)


def test_attention_pooling_padding_gets_weight_exactly_zero(pooled):
    for name in ("mean", "additive", "dot"):
        assert np.all(pooled[name]["weights"][1, 2:] == 0.0), name


def test_attention_pooling_scores_pick_different_words(pooled):
    # The dot-product query points at "good" and away from "bad"; the additive score likes both.
    _, reference = pooling_reference()
    dot, additive = reference["dot"][1], reference["additive"][1]
    assert dot[0].argmax() == 3 and dot[1].argmax() == 0
    assert additive[0].argmax() == 3 and additive[1].argmax() == 1


def test_attention_pooling_script_prints_the_numbers():
    stdout = run_script("attention_pooling")
    _, reference = pooling_reference()
    for name, (scores, weights, vectors) in reference.items():
        assert_printed(stdout, weights, vectors)
        if scores is not None:
            assert_printed(stdout, scores[:, :2])
    assert stdout.count("weights at padded positions: [0.0, 0.0]") == 3


# ---------------------------------------------------------------------------------------
# multihead_check.py


def multihead_reference():
    """weights (B, H, T, T) and outputs (B, T, 4), one sequence at a time, each cut to its real
    tokens."""
    weights = np.zeros((2, 2, 2, 2))
    outputs = np.zeros((2, 2, 4))
    for sequence, length in enumerate(multihead_check.LENGTHS):
        allowed = np.arange(2) < length
        w, out = self_attention(
            multihead_check.TOKENS[sequence],
            *multihead_check.MATRICES.values(),
            num_heads=2,
            allowed=allowed,
        )
        weights[sequence], outputs[sequence] = w, out
    return weights, outputs


@pytest.fixture(scope="module")
def heads():
    return multihead_check.main()


def test_multihead_matches_numpy(heads):
    assert list(multihead_check.MATRICES) == [
        "query_weight",
        "key_weight",
        "value_weight",
        "output_weight",
    ]
    weights, outputs = multihead_reference()
    np.testing.assert_allclose(heads["weights"], weights, **TOLERANCE)
    np.testing.assert_allclose(heads["output"], outputs, **TOLERANCE)
    np.testing.assert_allclose(heads["by_hand_weights"], weights, **TOLERANCE)
    np.testing.assert_allclose(heads["by_hand_output"], outputs, **TOLERANCE)
    # Worked out by hand: head 0 scores 2 * (x_i . x_j) over features 0-1, scaled by 1/sqrt(2).
    self_weight = 1 / (1 + math.exp(-math.sqrt(2)))
    np.testing.assert_allclose(
        heads["weights"][1, 0],
        [[self_weight, 1 - self_weight], [1 - self_weight, self_weight]],
        rtol=1e-5,
    )
    np.testing.assert_allclose(heads["weights"][1, 1], 0.5, rtol=1e-6)


def test_multihead_padding_weights_zero_and_heads_differ(heads):
    assert np.all(heads["weights"][0, :, :, 1] == 0.0)
    np.testing.assert_allclose(heads["weights"][0, :, :, 0], 1.0, rtol=1e-6)
    assert np.abs(heads["weights"][1, 0] - heads["weights"][1, 1]).max() > 0.25


def test_multihead_script_prints_the_numbers():
    stdout = run_script("multihead_check")
    weights, outputs = multihead_reference()
    assert_printed(stdout, weights[1], outputs)
    assert "weights on padded keys: [0.0, 0.0, 0.0, 0.0]" in stdout
