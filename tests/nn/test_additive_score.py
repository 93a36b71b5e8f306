"""nn.AdditiveScore given lengths: the chapter's additive score over each sequence's real
positions only, as one node (what AttentionPooling passes it). Checked against the textbook's
formula written in torch (scores and every gradient, float64), against float64 finite
differences, against the composition without lengths, and with odd and bad input."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def make(input_size=6, query_size=None, hidden_size=5, dtype=np.float64, seed=0):
    mg.manual_seed(seed)
    score = nn.AdditiveScore(input_size, query_size=query_size, hidden_size=hidden_size)
    rng = np.random.default_rng(seed)
    for parameter in score.parameters():
        parameter.data = (0.5 * rng.normal(size=parameter.shape)).astype(dtype)
    return score


def batch(shape=(4, 7, 6), lengths=(7, 3, 1, 0), dtype=np.float64, seed=1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=shape).astype(dtype), np.array(lengths)


def real_positions(lengths, steps):
    return np.arange(steps) < np.asarray(lengths)[:, None]


@pytest.mark.parametrize("query_size, hidden_size", [(None, 5), (3, 8)])
def test_scores_and_every_gradient_match_torch(query_size, hidden_size):
    torch = pytest.importorskip("torch")
    score = make(query_size=query_size, hidden_size=hidden_size)
    x_data, lengths = batch()
    upstream = np.random.default_rng(2).normal(size=(4, 7))

    x = mg.tensor(x_data, requires_grad=True)
    scores = score(x, lengths)
    (scores * mg.tensor(upstream)).sum().backward()

    params = {n: torch.tensor(p.numpy(), requires_grad=True) for n, p in score.named_parameters()}
    x_torch = torch.tensor(x_data, requires_grad=True)
    hidden = torch.tanh(x_torch @ params["input_weight"] + params["query"] @ params["query_weight"])
    real = torch.tensor(real_positions(lengths, 7))
    scores_torch = torch.where(real, hidden @ params["score_vector"], 0.0)
    (scores_torch * torch.tensor(upstream)).sum().backward()

    np.testing.assert_allclose(
        scores.numpy(), scores_torch.detach().numpy(), rtol=1e-12, atol=1e-13
    )
    assert (scores.numpy()[~real_positions(lengths, 7)] == 0).all()
    np.testing.assert_allclose(x.grad.numpy(), x_torch.grad.numpy(), rtol=1e-12, atol=1e-13)
    for name, parameter in score.named_parameters():
        np.testing.assert_allclose(
            parameter.grad.numpy(), params[name].grad.numpy(), rtol=1e-12, atol=1e-13, err_msg=name
        )


def test_gradcheck_through_the_node():
    """Finite differences in float64 with respect to x and the node's four inputs (the query
    term q U arrives as its bias), lengths including 0."""
    score = make(hidden_size=4)
    x, lengths = batch((3, 4, 6), (4, 2, 0))
    assert mg.gradcheck(lambda x: score(x, lengths), [x])
    rng = np.random.default_rng(4)
    weight, bias, vector = rng.normal(size=(6, 4)), rng.normal(size=4), rng.normal(size=4)
    assert mg.gradcheck(
        lambda *inputs: mg.ops.attention.AdditiveScore.apply(*inputs, lengths=lengths),
        [x, weight, bias, vector],
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_node_gives_the_compositions_scores_at_real_positions(dtype):
    score = make(dtype=dtype)
    x_data, lengths = batch(dtype=dtype)
    upstream = np.where(real_positions(lengths, 7), np.random.default_rng(3).normal(size=(4, 7)), 0)
    results = []
    for given in (lengths, None):  # the node, then the composition
        for parameter in score.parameters():
            parameter.grad = None
        x = mg.tensor(x_data, requires_grad=True)
        scores = score(x, given)
        (scores * mg.tensor(upstream.astype(dtype))).sum().backward()
        assert scores.dtype == dtype
        grads = [x.grad.numpy()] + [p.grad.numpy() for p in score.parameters()]
        results.append((np.where(real_positions(lengths, 7), scores.numpy(), 0), grads))
    tolerance = dict(rtol=1e-12, atol=1e-13) if dtype == np.float64 else dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(results[0][0], results[1][0], **tolerance)
    for ours, composed in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(ours, composed, **tolerance)


def test_attention_pooling_with_lengths_equals_it_with_the_same_mask():
    """lengths take the node; a mask takes the composition: the same pooled vectors and
    gradients."""
    pooling = nn.AttentionPooling(make())
    x_data, lengths = batch()
    results = []
    for padding in (dict(lengths=lengths), dict(mask=real_positions(lengths, 7))):
        for parameter in pooling.parameters():
            parameter.grad = None
        x = mg.tensor(x_data, requires_grad=True)
        pooled = pooling(x, **padding)
        (pooled * pooled).sum().backward()
        results.append(
            [pooled.numpy(), pooling.last_weights.copy(), x.grad.numpy()]
            + [p.grad.numpy() for p in pooling.parameters()]
        )
    for ours, composed in zip(*results):
        np.testing.assert_allclose(ours, composed, rtol=1e-12, atol=1e-13)
    assert (results[0][0][3] == 0).all()  # an empty sequence pools to zero


def test_junk_in_padding_does_not_reach_the_scores_or_gradients():
    score = make()
    x_data, lengths = batch()
    clean_x = mg.tensor(x_data, requires_grad=True)
    clean = score(clean_x, lengths)
    clean.sum().backward()
    junk = x_data.copy()
    junk[~real_positions(lengths, 7)] = np.nan
    x = mg.tensor(junk, requires_grad=True)
    for parameter in score.parameters():
        parameter.grad = None
    scores = score(x, lengths)
    scores.sum().backward()
    np.testing.assert_array_equal(scores.numpy(), clean.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), clean_x.grad.numpy())
    assert all(np.isfinite(p.grad.numpy()).all() for p in score.parameters())


@pytest.mark.parametrize("mode", [mg.no_grad, mg.inference_mode])
def test_without_a_graph_the_same_scores(mode):
    score = make(dtype=np.float32)
    x_data, lengths = batch(dtype=np.float32)
    expected = score(mg.tensor(x_data), lengths).numpy()
    with mode():
        scores = score(mg.tensor(x_data), lengths)
    assert not scores.requires_grad
    np.testing.assert_array_equal(scores.numpy(), expected)


def test_an_input_of_another_dtype_is_refused_as_without_lengths():
    """float64 input, float32 parameters: matmul's error, with lengths or without (as torch)."""
    score = make(dtype=np.float32)
    x_data, lengths = batch()
    for given in (lengths, None):
        with pytest.raises(mg.errors.DTypeError, match="same dtype; got float64 and float32"):
            score(mg.tensor(x_data), given)


@pytest.mark.parametrize(
    "lengths, words",
    [
        ([7, 3, 1], r"\(4,\)"),
        ([7, 3, 1, 8], "8"),
        ([7, 3, 1, -1], "-1"),
        ([[7, 3, 1, 0]], r"\(4,\)"),
    ],
)
def test_bad_lengths_are_refused_naming_them(lengths, words):
    score = make()
    x_data, _ = batch()
    with pytest.raises((ValueError, TypeError), match=words):
        score(mg.tensor(x_data), np.array(lengths))


def test_the_sentiment_models_additive_pooling_uses_the_node():
    """A whole model step: the node in the graph, and the same loss as the composition."""
    from examples.sentiment.model import SentimentModel

    mg.manual_seed(0)
    model = SentimentModel(50, pool="additive", embedding_dim=8, hidden_size=4)
    rng = np.random.default_rng(0)
    ids, lengths = rng.integers(1, 50, (3, 6)), np.array([6, 2, 4])
    ids[np.arange(6) >= lengths[:, None]] = 0
    logits = model(mg.tensor(ids), lengths, need_weights=False)
    names = [node.name for node in mg.autograd.graph_nodes(logits._node)]
    assert "AdditiveScore" in names
    composed = type(model.pool.score).forward
    try:
        type(model.pool.score).forward = lambda self, x, lengths=None: composed(self, x)
        expected = model(mg.tensor(ids), lengths, need_weights=False)
    finally:
        type(model.pool.score).forward = composed
    np.testing.assert_allclose(logits.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
