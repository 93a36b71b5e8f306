"""The attention pooling of nn/attention_pooling.py: AdditiveScore and DotProductScore (parameters
and initialisation), AttentionPooling and MeanPooling. Gradients against float64 finite
differences (mg.gradcheck) and, with the same weights, against the textbook's pooling written in
torch; padding weighted exactly 0, empty sequences pooled to 0, junk in padded positions kept
out; bad shapes named. The lengths node of AdditiveScore: test_additive_score.py;
self_attention_mean: test_attention_mean.py.
"""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from parity import tolerance


def _random(shape, seed, dtype=np.float64):
    return np.random.default_rng(seed).normal(size=shape).astype(dtype)


def _set_weights(module, dtype, seed=0):
    """Fill every parameter with fresh normal draws of `dtype` (same Parameter objects)."""
    rng = np.random.default_rng(seed)
    for parameter in module.parameters():
        parameter.data = (0.5 * rng.normal(size=parameter.shape)).astype(dtype)


# ---------------------------------------------------------------------------------------
# Parameters and initialisation


def test_additive_score_parameters_and_init():
    mg.manual_seed(0)
    score = nn.AdditiveScore(64, query_size=32, hidden_size=48)
    shapes = {name: p.shape for name, p in score.named_parameters()}
    assert shapes == {
        "input_weight": (64, 48),
        "query_weight": (32, 48),
        "score_vector": (48,),
        "query": (32,),
    }
    assert all(p.dtype == np.float32 for p in score.parameters())
    for name, bound in [
        ("input_weight", math.sqrt(6 / (64 + 48))),
        ("query_weight", math.sqrt(6 / (32 + 48))),
        ("score_vector", math.sqrt(6 / (48 + 1))),
        ("query", 0.5),
    ]:
        values = getattr(score, name).numpy()
        assert np.abs(values).max() <= bound
        assert np.abs(values).max() > 0.8 * bound  # drawn from the whole range, not a narrower one
    default = nn.AdditiveScore(16)
    assert default.input_weight.shape == default.query_weight.shape == (16, 16)


def test_dot_product_score_parameters_and_init():
    mg.manual_seed(0)
    score = nn.DotProductScore(256)
    assert [(name, p.shape) for name, p in score.named_parameters()] == [("query", (256,))]
    assert -0.5 <= score.query.numpy().min() < -0.45 and 0.45 < score.query.numpy().max() <= 0.5


def test_attention_pooling_registers_the_score_module():
    pooling = nn.AttentionPooling(nn.AdditiveScore(4))
    assert [name for name, _ in pooling.named_parameters()] == [
        "score.input_weight",
        "score.query_weight",
        "score.score_vector",
        "score.query",
    ]


# ---------------------------------------------------------------------------------------
# Gradient checks (float64 finite differences), with masks and lengths


@pytest.mark.parametrize(
    "make_score",
    [lambda: nn.AdditiveScore(3, hidden_size=4), lambda: nn.DotProductScore(3)],
    ids=["additive", "dot"],
)
def test_attention_pooling_gradcheck(make_score, gradcheck_module):
    pooling = nn.AttentionPooling(make_score())
    _set_weights(pooling, np.float64)
    x = _random((3, 4, 3), seed=1)
    gradcheck_module(pooling, x, lengths=np.array([4, 2, 0]))
    gradcheck_module(pooling, x, mask=np.array([[True, False, True, True]] * 3))
    gradcheck_module(pooling, x)


def test_additive_score_with_its_own_query_size_gradcheck(gradcheck_module):
    score = nn.AdditiveScore(3, query_size=2, hidden_size=5)
    _set_weights(score, np.float64)
    gradcheck_module(score, _random((2, 3, 3), seed=2))


def test_mean_pooling_gradcheck():
    x = _random((3, 4, 2), seed=3)
    assert mg.gradcheck(lambda x: nn.MeanPooling()(x, lengths=[4, 1, 0]), [x])
    assert mg.gradcheck(
        lambda x: nn.MeanPooling()(x, mask=np.array([[True, False, True, False]] * 3)), [x]
    )
    assert mg.gradcheck(lambda x: nn.MeanPooling()(x), [x])


# ---------------------------------------------------------------------------------------
# Against PyTorch, same weights


def _torch_pooling(torch, kind, x, mask, weights):
    """The textbook's attention pooling written in plain torch."""
    if kind == "additive":
        hidden = torch.tanh(
            x @ weights["score.input_weight"]
            + weights["score.query"] @ weights["score.query_weight"]
        )
        scores = hidden @ weights["score.score_vector"]
    else:
        scores = x @ weights["score.query"]
    scores = scores.masked_fill(~mask, -1e9)
    attention = torch.softmax(scores, dim=-1)
    return (attention.unsqueeze(1) @ x).squeeze(1), attention


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["additive", "dot"])
def test_attention_pooling_matches_torch(kind, dtype):
    torch = pytest.importorskip("torch")
    mg.manual_seed(5)
    pooling = nn.AttentionPooling(
        nn.AdditiveScore(6, hidden_size=5) if kind == "additive" else nn.DotProductScore(6)
    )
    _set_weights(pooling, dtype, seed=6)
    x_data, lengths = _random((3, 5, 6), seed=7, dtype=dtype), np.array([5, 3, 1])
    upstream = _random((3, 6), seed=8, dtype=dtype)

    x = mg.tensor(x_data, requires_grad=True)
    pooled = pooling(x, lengths=lengths)
    (pooled * mg.tensor(upstream)).sum().backward()

    x_torch = torch.tensor(x_data, requires_grad=True)
    weights = {
        name: torch.tensor(p.numpy(), requires_grad=True) for name, p in pooling.named_parameters()
    }
    mask = torch.arange(5)[None, :] < torch.tensor(lengths)[:, None]
    pooled_torch, attention_torch = _torch_pooling(torch, kind, x_torch, mask, weights)
    (pooled_torch * torch.tensor(upstream)).sum().backward()

    close = tolerance("layer", dtype)
    assert pooled.dtype == dtype
    np.testing.assert_allclose(pooled.numpy(), pooled_torch.detach().numpy(), **close)
    np.testing.assert_allclose(pooling.last_weights, attention_torch.detach().numpy(), **close)
    np.testing.assert_allclose(x.grad.numpy(), x_torch.grad.numpy(), **close)
    for name, parameter in pooling.named_parameters():
        np.testing.assert_allclose(
            parameter.grad.numpy(), weights[name].grad.numpy(), **close, err_msg=name
        )


# ---------------------------------------------------------------------------------------
# Padding: weight exactly 0, and no NaN for a sequence with no tokens


@pytest.mark.parametrize(
    "make_score",
    [lambda: nn.AdditiveScore(4), lambda: nn.DotProductScore(4)],
    ids=["additive", "dot"],
)
def test_attention_pooling_padding_gets_exactly_zero_weight(make_score):
    mg.manual_seed(12)
    pooling = nn.AttentionPooling(make_score())
    x = mg.tensor(_random((3, 5, 4), seed=13, dtype=np.float32) * 10, requires_grad=True)
    pooled = pooling(x, lengths=[5, 2, 3])
    weights = pooling.last_weights
    assert weights.shape == (3, 5) and weights.dtype == np.float32
    assert np.all(weights[1, 2:] == 0.0) and np.all(weights[2, 3:] == 0.0)
    assert np.all(weights[0] > 0) and np.all(weights[1, :2] > 0)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(
        pooled.numpy(), np.einsum("bt,btd->bd", weights, x.numpy()), rtol=1e-5, atol=1e-6
    )
    # The padding cannot influence the result: no gradient reaches it.
    pooled.sum().backward()
    assert np.all(x.grad.numpy()[1, 2:] == 0.0) and np.all(x.grad.numpy()[2, 3:] == 0.0)
    # The same through a mask (True = real token).
    pooling(x, mask=np.array([[True, True, False, True, False]] * 3))
    assert np.all(pooling.last_weights[:, [2, 4]] == 0.0)


@pytest.mark.parametrize(
    "make_score",
    [lambda: nn.AdditiveScore(4), lambda: nn.DotProductScore(4)],
    ids=["additive", "dot"],
)
def test_attention_pooling_of_an_empty_sequence_is_zero(make_score):
    mg.manual_seed(14)
    pooling = nn.AttentionPooling(make_score())
    x = mg.tensor(_random((2, 4, 4), seed=15, dtype=np.float32), requires_grad=True)
    pooled = pooling(x, lengths=[0, 3])
    pooled.sum().backward()
    assert np.all(pooling.last_weights[0] == 0.0)
    assert np.all(pooled.numpy()[0] == 0.0)
    assert np.all(np.isfinite(x.grad.numpy())) and np.all(x.grad.numpy()[0] == 0.0)
    assert all(np.all(np.isfinite(p.grad.numpy())) for p in pooling.parameters())
    # The other row is what it would be on its own.
    alone = pooling(x[1:], lengths=[3])
    np.testing.assert_allclose(pooled.numpy()[1], alone.numpy()[0], rtol=1e-6)


def test_mean_pooling_values():
    x = mg.tensor(np.arange(24, dtype=np.float32).reshape(2, 4, 3))
    # row 0: mean of its first 2 tokens (0,1,2) and (3,4,5) = (1.5, 2.5, 3.5); row 1 has no tokens
    # -> 0
    np.testing.assert_array_equal(
        nn.MeanPooling()(x, lengths=[2, 0]).numpy(), [[1.5, 2.5, 3.5], [0, 0, 0]]
    )
    # row 1 with every token: mean of 12..23 by column = (16.5, 17.5, 18.5)
    np.testing.assert_array_equal(
        nn.MeanPooling()(x, lengths=[2, 4]).numpy()[1], [16.5, 17.5, 18.5]
    )
    np.testing.assert_array_equal(nn.MeanPooling()(x).numpy(), x.numpy().mean(axis=1))
    mask = np.array([[True, False, False, True], [False] * 4])
    np.testing.assert_array_equal(
        nn.MeanPooling()(x, mask=mask).numpy(), [[4.5, 5.5, 6.5], [0, 0, 0]]
    )


# ---------------------------------------------------------------------------------------
# Junk in padded positions: no NaN out, no NaN gradients


@pytest.mark.parametrize("junk", [np.nan, np.inf, -np.inf, 1e38])
@pytest.mark.parametrize("pool", ["additive", "dot", "mean"])
def test_pooling_ignores_junk_in_padded_positions(pool, junk):
    mg.manual_seed(32)
    module = (
        nn.MeanPooling()
        if pool == "mean"
        else nn.AttentionPooling(
            nn.AdditiveScore(4) if pool == "additive" else nn.DotProductScore(4)
        )
    )
    clean = _random((3, 5, 4), seed=33, dtype=np.float32)
    lengths = np.array([5, 2, 0])
    dirty = clean.copy()
    dirty[1, 2:] = junk
    dirty[2] = junk
    results = []
    for x in (clean, dirty):
        for kwargs in ({"lengths": lengths}, {"mask": np.arange(5)[None, :] < lengths[:, None]}):
            leaf = mg.tensor(x, requires_grad=True)
            module.zero_grad()
            module(leaf, **kwargs).sum().backward()
            results.append(
                [module(leaf, **kwargs).numpy(), np.where(np.isfinite(x), leaf.grad.numpy(), 0)]
                + [p.grad.numpy().copy() for p in module.parameters()]
            )
    for clean_result, dirty_result in zip(results[:2], results[2:]):
        for a, b in zip(clean_result, dirty_result):
            assert np.all(np.isfinite(b))
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------
# Errors name what was expected and what was given


def test_bad_shapes_raise_clear_errors():
    score = nn.AdditiveScore(4)
    with pytest.raises(ValueError, match=r"\(batch, time, 4\).*\(2, 3, 5\)"):
        score(mg.zeros(2, 3, 5))
    with pytest.raises(ValueError, match=r"\(batch, time, 4\).*\(3, 4\)"):
        nn.DotProductScore(4)(mg.zeros(3, 4))
    pooling = nn.AttentionPooling(nn.DotProductScore(4))
    with pytest.raises(ValueError, match=r"\(batch, time, features\).*\(3, 4\)"):
        pooling(mg.zeros(3, 4))
    with pytest.raises(ValueError, match=r"lengths of shape \(2,\).*\(3,\)"):
        pooling(mg.zeros(2, 3, 4), lengths=[1, 2, 3])
    with pytest.raises(ValueError, match=r"\[0, 3\].*\[1, 4\]"):
        pooling(mg.zeros(2, 3, 4), lengths=[1, 4])
    with pytest.raises(TypeError, match="integers.*float"):
        pooling(mg.zeros(2, 3, 4), lengths=np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"mask of shape \(2, 3\).*\(2, 4\)"):
        pooling(mg.zeros(2, 3, 4), mask=np.ones((2, 4), dtype=bool))
    with pytest.raises(TypeError, match="mask must be bool.*int64"):
        pooling(mg.zeros(2, 3, 4), mask=np.ones((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="lengths or mask, not both"):
        pooling(mg.zeros(2, 3, 4), lengths=[1, 2], mask=np.ones((2, 3), dtype=bool))
    with pytest.raises(TypeError, match="score must be a Module.*function"):
        nn.AttentionPooling(lambda x: x)
    with pytest.raises(ValueError, match=r"MeanPooling.*lengths of shape \(2,\).*\(1,\)"):
        nn.MeanPooling()(mg.zeros(2, 3, 4), lengths=[1])
