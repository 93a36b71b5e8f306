"""nn.self_attention_mean: the mean of the self-attention's outputs over each
sequence's real positions, made without an output per position. Checked against the textbook's
formula written in torch (outputs and every gradient, float64), against float64 finite
differences, against MeanPooling after forward, and with odd and bad input."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.ops.attention import AttentionMean


def make(model_dim=12, heads=3, bias=False, dtype=mg.float64, seed=0):
    mg.manual_seed(seed)
    attention = nn.SelfAttention(model_dim, num_heads=heads, bias=bias).to(dtype)
    if bias:
        rng = np.random.default_rng(seed)
        for name in ("query", "key", "value", "output"):
            getattr(attention, f"{name}_bias").data[...] = rng.standard_normal(model_dim)
    return attention


def torch_mean(torch, attention, x, lengths):
    """The textbook's MHSA then masked mean, step by step in torch: (pooled, parameters, x)."""
    names = [name for name, _ in attention.named_parameters()]
    params = {
        name: torch.tensor(p.numpy(), requires_grad=True)
        for name, p in attention.named_parameters()
    }
    x = torch.tensor(x, requires_grad=True)
    batch, steps, dim = x.shape
    heads, head_dim = attention.num_heads, attention.head_dim

    def project(y, name):
        out = y @ params[f"{name}_weight"]
        return out + params[f"{name}_bias"] if f"{name}_bias" in params else out

    def split(y):
        return y.reshape(batch, steps, heads, head_dim).permute(0, 2, 1, 3)

    q, k, v = (split(project(x, name)) for name in ("query", "key", "value"))
    scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim)
    real = torch.arange(steps)[None, :] < torch.tensor(lengths)[:, None]  # (B, T)
    scores = scores.masked_fill(~real[:, None, None, :], -math.inf)
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1))  # a length-0 row: all 0
    out = project((weights @ v).permute(0, 2, 1, 3).reshape(batch, steps, dim), "output")
    counts = real.sum(dim=1, keepdim=True).clamp(min=1)
    pooled = (out * real[:, :, None]).sum(dim=1) / counts
    return pooled, [params[name] for name in names], x


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("lengths", [[7, 3, 1, 5], [7, 7, 7, 7], [0, 7, 2, 0]])
def test_self_attention_mean_is_torchs_mhsa_then_mean_with_its_gradients(bias, lengths):
    torch = pytest.importorskip("torch")
    attention = make(bias=bias)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 7, 12))
    upstream = rng.standard_normal((4, 12))
    lengths = np.array(lengths)

    ours_x = mg.tensor(x, requires_grad=True)
    ours = nn.self_attention_mean(attention, ours_x, lengths)
    (ours * mg.tensor(upstream)).sum().backward()

    theirs, parameters, theirs_x = torch_mean(torch, attention, x, lengths)
    (theirs * torch.tensor(upstream)).sum().backward()

    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-9, atol=1e-12)
    for (name, p), reference in zip(attention.named_parameters(), parameters):
        np.testing.assert_allclose(
            p.grad.numpy(), reference.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name
        )
    assert attention.last_weights is None


def test_attention_mean_matches_finite_differences():
    rng = np.random.default_rng(2)
    q, k = rng.standard_normal((2, 2, 5, 3)), rng.standard_normal((2, 2, 5, 3))
    lengths = np.array([5, 3])
    assert mg.gradcheck(
        lambda q, k: AttentionMean.apply(q, k, scale=0.6, lengths=lengths), [q, k], atol=1e-7
    )


def test_self_attention_mean_matches_finite_differences():
    attention = make(model_dim=6, heads=2, bias=True)
    x = np.random.default_rng(3).standard_normal((3, 4, 6))
    lengths = np.array([4, 2, 1])
    assert mg.gradcheck(lambda x: nn.self_attention_mean(attention, x, lengths), [x], atol=1e-7)


@pytest.mark.parametrize("lengths", [None, np.array([5, 2, 0])])
def test_float32_is_mean_pooling_after_forward(lengths):
    attention = make(model_dim=16, heads=4, bias=True, dtype=mg.float32)
    x = mg.tensor(np.random.default_rng(4).standard_normal((3, 5, 16)).astype(np.float32))
    got = nn.self_attention_mean(attention, x, lengths)
    expected = nn.MeanPooling()(attention(x, lengths=lengths), lengths)
    assert got.dtype == mg.float32 and got.shape == (3, 16)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    if lengths is not None:
        assert (got.numpy()[2] == 0).all()  # a sequence of length 0 pools to 0, biases too


def test_causal_attention_takes_the_composition():
    mg.manual_seed(5)
    attention = nn.SelfAttention(8, num_heads=2, causal=True).double()
    x = mg.tensor(np.random.default_rng(5).standard_normal((2, 6, 8)))
    lengths = np.array([6, 3])
    expected = nn.MeanPooling()(attention(x, lengths=lengths), lengths)
    np.testing.assert_allclose(
        nn.self_attention_mean(attention, x, lengths).numpy(), expected.numpy(), rtol=1e-12
    )


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # junk projected
def test_junk_in_padded_positions_changes_nothing():
    attention = make()
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 5, 12))
    lengths = np.array([5, 2])
    clean = nn.self_attention_mean(attention, mg.tensor(x), lengths).numpy()
    x[1, 2:] = np.nan
    x[1, 3] = np.inf
    junk = mg.tensor(x, requires_grad=True)
    got = nn.self_attention_mean(attention, junk, lengths)
    got.sum().backward()
    np.testing.assert_allclose(got.numpy(), clean, rtol=1e-12)
    assert np.isfinite(junk.grad.numpy()).all() and (junk.grad.numpy()[1, 2:] == 0).all()


@pytest.mark.parametrize(
    "x, lengths, error, words",
    [
        (np.zeros((2, 5, 12)), np.array([5, 6]), ValueError, "lengths"),
        (np.zeros((2, 5, 12)), np.array([5]), ValueError, "lengths"),
        (np.zeros((2, 5, 7)), None, ValueError, "12"),
        (np.zeros((5, 12)), None, ValueError, "shape"),
    ],
)
def test_bad_input_is_refused_naming_it(x, lengths, error, words):
    with pytest.raises(error, match=words):
        nn.self_attention_mean(make(), mg.tensor(x), lengths)


def test_sentiment_model_pools_the_same_with_and_without_weights():
    from examples.sentiment.model import SentimentModel

    mg.manual_seed(7)
    model = SentimentModel(40, pool="mhsa", embedding_dim=8, hidden_size=8, num_heads=2)
    rng = np.random.default_rng(7)
    lengths = np.array([9, 4, 1, 6])
    ids = np.zeros((4, 9), np.int64)
    for row, n in enumerate(lengths):
        ids[row, :n] = rng.integers(1, 40, n)
    labels = mg.tensor(rng.integers(0, 2, 4))
    results = []
    for need_weights in (True, False):
        model.zero_grad()
        logits = model(mg.tensor(ids), lengths, need_weights=need_weights)
        mg.cross_entropy(logits, labels).backward()
        results.append((logits.numpy(), [p.grad.numpy().copy() for p in model.parameters()]))
    (with_weights, grads_with), (without, grads_without) = results
    np.testing.assert_allclose(without, with_weights, rtol=1e-5, atol=1e-6)
    for a, b in zip(grads_without, grads_with):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_only_a_self_attention_is_taken():
    with pytest.raises(TypeError, match="nn.SelfAttention; got Linear"):
        nn.self_attention_mean(nn.Linear(4, 4), mg.zeros(1, 2, 4))
