"""Panel 4 of the attention lab: a sentiment checkpoint reads a review.

Tiny checkpoints are written here the way examples/sentiment/train.py writes them (mg.save of
the state dict, Vocab.to_json); the lab's label, probability and token weights are compared
with the same model computed in numpy float64 from the saved file (LSTM gates i, f, g, o).
"""

import numpy as np
import pytest

import minigrad as mg
from examples.lab import trained
from examples.lab.api import Lab
from examples.lab.inputs import LabInputError
from examples.sentiment import preprocess
from examples.sentiment.model import SentimentModel

WORDS = ["the", "movie", "was", "good", "bad", "great", "plot", "awful"]


def softmax(scores):
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_direction(x, w_ih, w_hh, b_ih, b_hh):
    hidden = np.zeros(w_hh.shape[1])
    cell = np.zeros(w_hh.shape[1])
    outputs = []
    for x_t in x:
        i, f, g, o = np.split(x_t @ w_ih.T + b_ih + hidden @ w_hh.T + b_hh, 4)
        cell = sigmoid(f) * cell + sigmoid(i) * np.tanh(g)
        hidden = sigmoid(o) * np.tanh(cell)
        outputs.append(hidden)
    return np.stack(outputs)


def sentiment_reference(state, ids, pool):
    """(probabilities (2,), token weights (T,)) of examples/sentiment/model.py for one review."""
    p = {name: np.asarray(value, np.float64) for name, value in state.items()}
    x = p["embedding.weight"][ids]
    forward = lstm_direction(
        x, *(p[f"encoder.{n}_l0"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    )
    backward = lstm_direction(
        x[::-1],
        *(p[f"encoder.{n}_l0_reverse"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")),
    )[::-1]
    h = np.concatenate([forward, backward], axis=1)  # (T, 2 hidden)
    if pool == "dot":
        weights = softmax(h @ p["pool.score.query"])
        pooled = weights @ h
    elif pool == "additive":
        hidden = np.tanh(
            h @ p["pool.score.input_weight"] + p["pool.score.query"] @ p["pool.score.query_weight"]
        )
        weights = softmax(hidden @ p["pool.score.score_vector"])
        pooled = weights @ h
    elif pool == "mhsa":
        heads, head_dim = 8, h.shape[1] // 8
        q, k, v = (h @ p[f"attention.{n}_weight"] for n in ("query", "key", "value"))
        head_weights, contexts = [], []
        for head in range(heads):
            columns = slice(head * head_dim, (head + 1) * head_dim)
            w = softmax(q[:, columns] @ k[:, columns].T / np.sqrt(head_dim))
            head_weights.append(w)
            contexts.append(w @ v[:, columns])
        pooled = (np.concatenate(contexts, axis=1) @ p["attention.output_weight"]).mean(axis=0)
        weights = np.stack(head_weights).mean(axis=(0, 1))
    else:
        weights = np.full(len(ids), 1 / len(ids))
        pooled = h.mean(axis=0)
    return softmax(pooled @ p["classifier.weight"].T + p["classifier.bias"]), weights


def write_checkpoint(runs, pool, seed=0):
    """A small random model of the given pooling, saved as train.py saves one."""
    vocab = preprocess.build_vocab([WORDS])
    mg.manual_seed(seed)
    model = SentimentModel(len(vocab), pool=pool, embedding_dim=6, hidden_size=8)
    # larger weights than the initialisation: weights far from uniform
    for parameter in model.parameters():
        parameter.numpy()[...] *= 3
    folder = runs / pool
    folder.mkdir(parents=True, exist_ok=True)
    mg.save(model.state_dict(), folder / "best.npz")
    vocab.to_json(folder / "vocab.json")
    return vocab


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    for seed, pool in enumerate(("dot", "additive", "mhsa", "mean")):
        write_checkpoint(runs, pool, seed)
    return runs


def test_status_without_checkpoints_says_which_command_makes_one(tmp_path):
    status = Lab(runs=tmp_path / "runs").call("/api/model/status", {})
    assert status["checkpoints"] == []
    assert "python examples/sentiment/train.py --quick --pool dot" in status["message"]
    with pytest.raises(
        LabInputError, match="no checkpoint for the dot pooling.*train.py --quick --pool dot"
    ):
        Lab(runs=tmp_path / "runs").call(
            "/api/model/predict", {"model": "dot", "text": "good movie"}
        )


@pytest.mark.parametrize("pool", ["dot", "additive", "mhsa", "mean"])
def test_prediction_matches_numpy(runs, pool):
    lab = Lab(runs=runs)
    assert lab.call("/api/model/status", {})["checkpoints"] == ["mean", "additive", "dot", "mhsa"]
    text = "The movie was GOOD, the plot... awful!! Zebras."
    answer = lab.call("/api/model/predict", {"model": pool, "text": text})
    tokens = [
        "the",
        "movie",
        "was",
        "good",
        ",",
        "the",
        "plot",
        ".",
        ".",
        ".",
        "awful",
        "!",
        "!",
        "zebras",
        ".",
    ]
    assert answer["tokens"] == tokens and answer["tokens_read"] == answer["tokens_total"] == len(
        tokens
    )
    vocab = preprocess.Vocab.from_json(runs / pool / "vocab.json")
    assert answer["known"] == [token in vocab.stoi for token in tokens]
    probabilities, weights = sentiment_reference(
        np.load(runs / pool / "best.npz"), vocab.encode(tokens), pool
    )
    np.testing.assert_allclose(answer["probability_positive"], probabilities[1], rtol=1e-4)
    assert answer["label"] == ("positive" if probabilities[1] > 0.5 else "negative")
    np.testing.assert_allclose(answer["probability"], probabilities.max(), rtol=1e-4)
    np.testing.assert_allclose(answer["weights"], weights, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(sum(answer["weights"]), 1.0, rtol=1e-5)
    if pool != "mean":
        assert max(answer["weights"]) > 1.5 / len(tokens)  # not uniform: the numbers test something


def test_long_reviews_are_read_up_to_the_token_cap(runs):
    text = " ".join(["good"] * 300)
    answer = Lab(runs=runs).call("/api/model/predict", {"model": "dot", "text": text})
    assert answer["tokens_read"] == trained.MAX_TOKENS == 256 and answer["tokens_total"] == 300
    assert len(answer["tokens"]) == len(answer["weights"]) == 256


def test_a_changed_checkpoint_is_reloaded(tmp_path):
    runs = tmp_path / "runs"
    write_checkpoint(runs, "dot", seed=1)
    lab = Lab(runs=runs)
    first = lab.call("/api/model/predict", {"model": "dot", "text": "good movie"})
    write_checkpoint(runs, "dot", seed=2)
    second = lab.call("/api/model/predict", {"model": "dot", "text": "good movie"})
    probabilities, _ = sentiment_reference(
        np.load(runs / "dot" / "best.npz"),
        preprocess.Vocab.from_json(runs / "dot" / "vocab.json").encode(["good", "movie"]),
        "dot",
    )
    assert first["probability_positive"] != second["probability_positive"]
    np.testing.assert_allclose(second["probability_positive"], probabilities[1], rtol=1e-4)


BAD_REVIEWS = [
    ({"model": "dot", "text": "x" * 5001}, "review: at most 5,000 characters; got 5,001"),
    ({"model": "dot", "text": "   "}, "review: expected some text"),
    ({"model": "dot", "text": 42}, "review: expected text"),
    ({"model": "dot"}, "review: expected text"),
    ({"model": "dot", "text": "<br /><br />"}, "review: no words in it"),  # IMDB line breaks only
    ({"model": "lstm", "text": "good"}, "model: expected one of mean, additive, dot, mhsa"),
]


@pytest.mark.parametrize("request_, message", BAD_REVIEWS)
def test_bad_reviews_say_what_was_expected(runs, request_, message):
    with pytest.raises(LabInputError) as caught:
        Lab(runs=runs).call("/api/model/predict", request_)
    assert message in str(caught.value)


def test_a_broken_checkpoint_gives_a_message(tmp_path):
    runs = tmp_path / "runs"
    write_checkpoint(runs, "dot")
    # does not fit the model
    preprocess.Vocab(["[pad]", "[unk]", "only"]).to_json(runs / "dot" / "vocab.json")
    with pytest.raises(
        LabInputError, match="could not load the dot model.*vocab.json has 3 tokens"
    ):
        Lab(runs=runs).call("/api/model/predict", {"model": "dot", "text": "good"})
    (runs / "dot" / "best.npz").write_bytes(b"not an archive")
    with pytest.raises(LabInputError, match="could not load the dot model"):
        Lab(runs=runs).call("/api/model/predict", {"model": "dot", "text": "good"})
