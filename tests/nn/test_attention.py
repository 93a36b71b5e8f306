"""Tests for nn/attention.py: (multi-head) self-attention, its key/value cache and fused path.

Gradients are checked against float64 finite differences (mg.gradcheck) and against PyTorch
(values and gradients with the same weights); the self-attention example is worked out by hand.
The scores and pooling of nn/attention_pooling.py are in test_attention_pooling.py.
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


def test_self_attention_parameters_and_init():
    mg.manual_seed(0)
    attention = nn.MultiHeadSelfAttention(256, 8)  # the textbook's MHSA: 8 heads of 32
    assert isinstance(attention, nn.SelfAttention)
    assert attention.head_dim == 32
    assert [(name, p.shape) for name, p in attention.named_parameters()] == [
        ("query_weight", (256, 256)),
        ("key_weight", (256, 256)),
        ("value_weight", (256, 256)),
        ("output_weight", (256, 256)),
    ]
    assert attention.query_bias is None and attention.output_bias is None
    bound = math.sqrt(6 / 512)
    for parameter in attention.parameters():
        assert bound * 0.99 < np.abs(parameter.numpy()).max() <= bound
    with_bias = nn.SelfAttention(8, bias=True)
    assert [name for name, _ in with_bias.named_parameters()][4:] == [
        "query_bias",
        "key_bias",
        "value_bias",
        "output_bias",
    ]
    assert all(
        np.all(getattr(with_bias, f"{n}_bias").numpy() == 0)
        for n in ("query", "key", "value", "output")
    )
    assert nn.MultiHeadSelfAttention is nn.SelfAttention  # a plain alias
    assert repr(attention) == "SelfAttention(model_dim=256, num_heads=8, causal=False, bias=False)"


# ---------------------------------------------------------------------------------------
# The self-attention example by hand


def test_self_attention_by_hand():
    # Three tokens with model_dim 2, one head (head_dim 2, so scores are divided by sqrt(2)).
    x = mg.tensor(
        np.array(
            [
                [
                    [1.0, 0.0],  # token 1
                    [0.0, 1.0],  # token 2
                    [1.0, 1.0],
                ]
            ]
        )
    )  # token 3; float64, shape (1, 3, 2)
    attention = nn.SelfAttention(2, num_heads=1)
    attention.load_state_dict(
        {
            "query_weight": np.array([[0.0, 1.0], [1.0, 0.0]]),  # swaps the two features
            "key_weight": np.array([[1.0, 0.0], [0.0, 2.0]]),  # doubles the second feature
            "value_weight": np.array([[1.0, 0.0], [1.0, 2.0]]),
            "output_weight": np.array([[1.0, 0.0], [0.0, 0.5]]),  # halves the second feature
        }
    )
    for parameter in attention.parameters():
        parameter.data = parameter.numpy().astype(np.float64)

    # Q = X W_Q: (1,0)->(0,1), (0,1)->(1,0), (1,1)->(1,1)
    # K = X W_K: (1,0)->(1,0), (0,1)->(0,2), (1,1)->(1,2)
    # V = X W_V: (1,0)->(1,0), (0,1)->(1,2), (1,1)->(1+1, 0+2) = (2,2)
    q, k, v = (
        x.numpy()[0] @ attention.query_weight.numpy(),
        x.numpy()[0] @ attention.key_weight.numpy(),
        x.numpy()[0] @ attention.value_weight.numpy(),
    )
    np.testing.assert_array_equal(q, [[0, 1], [1, 0], [1, 1]])
    np.testing.assert_array_equal(k, [[1, 0], [0, 2], [1, 2]])
    np.testing.assert_array_equal(v, [[1, 0], [1, 2], [2, 2]])
    # Q K^T, row i = query i against keys 1, 2, 3:
    #   q1=(0,1): 0*1+1*0 = 0, 0*0+1*2 = 2, 0*1+1*2 = 2
    #   q2=(1,0): 1, 0, 1
    #   q3=(1,1): 1, 2, 3
    # divided by sqrt(2) = 1.41421: [0, 1.41421, 1.41421], [0.70711, 0, 0.70711], [0.70711, 1.41421,
    # 2.12132]
    np.testing.assert_allclose(
        q @ k.T / math.sqrt(2),
        [[0, 1.41421, 1.41421], [0.70711, 0, 0.70711], [0.70711, 1.41421, 2.12132]],
        atol=1e-5,
    )

    out = attention(x)

    # softmax, with e^0.70711 = 2.02811, e^1.41421 = 4.11325, e^2.12132 = 8.34214:
    #   row 1: [1, 4.11325, 4.11325] / 9.22650       = [0.10838, 0.44581, 0.44581]
    #   row 2: [2.02811, 1, 2.02811] / 5.05623       = [0.40111, 0.19778, 0.40111]
    #   row 3: [2.02811, 4.11325, 8.34214] / 14.48351 = [0.14003, 0.28400, 0.57598]
    weights = np.array(
        [[0.10838, 0.44581, 0.44581], [0.40111, 0.19778, 0.40111], [0.14003, 0.28400, 0.57598]]
    )
    np.testing.assert_allclose(attention.last_weights[0, 0], weights, atol=1e-5)
    # context = weights @ V, V rows (1,0), (1,2), (2,2):
    #   row 1: first 0.10838 + 0.44581 + 2*0.44581 = 1.44581, second 2*0.44581 + 2*0.44581 = 1.78323
    #   row 2: 0.40111 + 0.19778 + 2*0.40111 = 1.40111,       2*0.19778 + 2*0.40111 = 1.19778
    #   row 3: 0.14003 + 0.28400 + 2*0.57598 = 1.57598,       2*0.28400 + 2*0.57598 = 1.71995
    # output = context @ W_O halves the second column: (1.44581, 0.89162), (1.40111, 0.59889),
    # (1.57598, 0.85997)
    np.testing.assert_allclose(
        out.numpy()[0], [[1.44581, 0.89162], [1.40111, 0.59889], [1.57598, 0.85997]], atol=2e-5
    )

    # Backprop reaches all four matrices; one plain SGD step moves all four.
    out.sum().backward()
    before = {name: p.numpy().copy() for name, p in attention.named_parameters()}
    learning_rate = 0.1
    for name, parameter in attention.named_parameters():
        assert parameter.grad is not None, name
        assert np.abs(parameter.grad.numpy()).min() > 0.05, (name, parameter.grad.numpy())
        parameter.data -= learning_rate * parameter.grad.numpy()
    for name, parameter in attention.named_parameters():
        assert np.all(parameter.numpy() != before[name]), name
    # d(sum of outputs)/d W_O[i, j] = sum of column i of the context (the same for both j):
    # column 1: 1.44581 + 1.40111 + 1.57598 = 4.42290, column 2: 1.78323 + 1.19778 + 1.71995 =
    # 4.70096
    np.testing.assert_allclose(
        attention.output_weight.grad.numpy(), [[4.42290, 4.42290], [4.70096, 4.70096]], atol=2e-5
    )


# ---------------------------------------------------------------------------------------
# Gradient checks (float64 finite differences), with masks and lengths


@pytest.mark.parametrize(
    "num_heads, causal, bias", [(1, False, False), (2, True, False), (2, False, True)]
)
def test_self_attention_gradcheck(num_heads, causal, bias, gradcheck_module):
    attention = nn.SelfAttention(4, num_heads=num_heads, causal=causal, bias=bias)
    _set_weights(attention, np.float64)
    x = _random((3, 3, 4), seed=4)
    gradcheck_module(attention, x, lengths=[3, 1, 0])
    gradcheck_module(attention, x, key_padding_mask=np.array([[False, True, False]] * 3))


# ---------------------------------------------------------------------------------------
# Against PyTorch, same weights


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "causal, bias, padding",
    [
        (False, False, "lengths"),
        (True, False, "key_padding_mask"),
        (True, True, "lengths"),
        (False, True, None),
    ],
)
def test_multi_head_self_attention_matches_torch(causal, bias, padding, dtype):
    torch = pytest.importorskip("torch")
    batch, steps, model_dim, num_heads = 3, 5, 8, 4
    attention = nn.MultiHeadSelfAttention(model_dim, num_heads, causal=causal, bias=bias)
    _set_weights(attention, dtype, seed=9)
    x_data = _random((batch, steps, model_dim), seed=10, dtype=dtype)
    upstream = _random((batch, steps, model_dim), seed=11, dtype=dtype)
    lengths = np.array([5, 2, 4])
    # True at padding (torch's convention)
    padding_mask = np.arange(steps)[None, :] >= lengths[:, None]

    x = mg.tensor(x_data, requires_grad=True)
    kwargs = (
        {"lengths": lengths}
        if padding == "lengths"
        else {"key_padding_mask": padding_mask}
        if padding
        else {}
    )
    out = attention(x, **kwargs)
    (out * mg.tensor(upstream)).sum().backward()

    # torch computes x @ W^T with in_proj_weight = [W_q; W_k; W_v] stacked by rows, so each
    # of our (in, out) matrices goes in transposed.
    reference = torch.nn.MultiheadAttention(model_dim, num_heads, bias=bias, batch_first=True)
    reference = reference.to(torch.float64 if dtype == np.float64 else torch.float32)
    with torch.no_grad():
        reference.in_proj_weight.copy_(
            torch.from_numpy(
                np.concatenate(
                    [
                        attention.query_weight.numpy().T,
                        attention.key_weight.numpy().T,
                        attention.value_weight.numpy().T,
                    ]
                )
            )
        )
        reference.out_proj.weight.copy_(torch.from_numpy(attention.output_weight.numpy().T.copy()))
        if bias:
            reference.in_proj_bias.copy_(
                torch.from_numpy(
                    np.concatenate(
                        [
                            attention.query_bias.numpy(),
                            attention.key_bias.numpy(),
                            attention.value_bias.numpy(),
                        ]
                    )
                )
            )
            reference.out_proj.bias.copy_(torch.from_numpy(attention.output_bias.numpy()))
    x_torch = torch.tensor(x_data, requires_grad=True)
    causal_mask = (
        torch.triu(torch.ones(steps, steps, dtype=torch.bool), diagonal=1) if causal else None
    )
    out_torch, weights_torch = reference(
        x_torch,
        x_torch,
        x_torch,
        key_padding_mask=torch.from_numpy(padding_mask) if padding else None,
        attn_mask=causal_mask,
        need_weights=True,
        average_attn_weights=False,
    )
    (out_torch * torch.tensor(upstream)).sum().backward()

    close = tolerance("layer", dtype)
    assert out.dtype == dtype and attention.last_weights.shape == (batch, num_heads, steps, steps)
    np.testing.assert_allclose(out.numpy(), out_torch.detach().numpy(), **close)
    np.testing.assert_allclose(attention.last_weights, weights_torch.detach().numpy(), **close)
    np.testing.assert_allclose(x.grad.numpy(), x_torch.grad.numpy(), **close)
    in_grad = reference.in_proj_weight.grad.numpy()
    for index, name in enumerate(["query", "key", "value"]):
        np.testing.assert_allclose(
            getattr(attention, f"{name}_weight").grad.numpy(),
            in_grad[index * model_dim : (index + 1) * model_dim].T,
            err_msg=name,
            **close,
        )
        if bias:
            np.testing.assert_allclose(
                getattr(attention, f"{name}_bias").grad.numpy(),
                reference.in_proj_bias.grad.numpy()[index * model_dim : (index + 1) * model_dim],
                err_msg=name,
                **close,
            )
    np.testing.assert_allclose(
        attention.output_weight.grad.numpy(), reference.out_proj.weight.grad.numpy().T, **close
    )
    if bias:
        np.testing.assert_allclose(
            attention.output_bias.grad.numpy(), reference.out_proj.bias.grad.numpy(), **close
        )


# ---------------------------------------------------------------------------------------
# Padding: weight exactly 0, and no NaN for a sequence with no tokens


@pytest.mark.parametrize("causal", [False, True])
def test_self_attention_padding_gets_exactly_zero_weight(causal):
    mg.manual_seed(16)
    attention = nn.SelfAttention(8, num_heads=2, causal=causal)
    x = mg.tensor(_random((2, 5, 8), seed=17, dtype=np.float32) * 10)
    attention(x, lengths=[5, 3])
    weights = attention.last_weights
    assert weights.shape == (2, 2, 5, 5) and weights.dtype == np.float32
    assert np.all(weights[1, :, :, 3:] == 0.0)  # padded keys, for every head and every query
    if causal:
        assert np.all(weights[:, :, np.triu_indices(5, 1)[0], np.triu_indices(5, 1)[1]] == 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-6)
    # key_padding_mask (True = padding) is the same as lengths
    attention(x, key_padding_mask=np.array([[False] * 5, [False] * 3 + [True] * 2]))
    np.testing.assert_array_equal(attention.last_weights, weights)


@pytest.mark.parametrize("bias", [False, True])
def test_self_attention_of_an_empty_sequence_has_no_nan(bias):
    mg.manual_seed(18)
    attention = nn.SelfAttention(4, num_heads=2, bias=bias)
    if bias:
        attention.output_bias.numpy()[...] = [1, 2, 3, 4]
    x = mg.tensor(_random((2, 3, 4), seed=19, dtype=np.float32), requires_grad=True)
    out = attention(x, lengths=[3, 0])
    out.sum().backward()
    assert np.all(attention.last_weights[1] == 0.0)
    # an empty row attends to nothing: its output is 0 @ W_O (+ output_bias)
    np.testing.assert_array_equal(
        out.numpy()[1], np.broadcast_to([1, 2, 3, 4] if bias else 0, (3, 4))
    )
    assert np.all(np.isfinite(x.grad.numpy())) and np.all(x.grad.numpy()[1] == 0.0)
    assert all(np.all(np.isfinite(p.grad.numpy())) for p in attention.parameters())
    alone = attention(x[:1], lengths=[3])
    np.testing.assert_allclose(out.numpy()[0], alone.numpy()[0], rtol=1e-6)


# ---------------------------------------------------------------------------------------
# Errors name what was expected and what was given


def test_bad_shapes_raise_clear_errors():
    with pytest.raises(ValueError, match="divisible by num_heads.*model_dim=10, num_heads=4"):
        nn.MultiHeadSelfAttention(10, 4)
    attention = nn.SelfAttention(8, num_heads=2)
    with pytest.raises(ValueError, match=r"\(batch, time, 8\).*\(2, 3, 6\)"):
        attention(mg.zeros(2, 3, 6))
    with pytest.raises(ValueError, match=r"key_padding_mask of shape \(2, 3\).*\(3, 2\)"):
        attention(mg.zeros(2, 3, 8), key_padding_mask=np.zeros((3, 2), dtype=bool))
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, 3\].*\[-1, 2\]"):
        attention(mg.zeros(2, 3, 8), lengths=[-1, 2])


# ---------------------------------------------------------------------------------------
# scaled_dot_product_attention against torch.nn.functional's, values and gradients


def test_two_graphs_alive_at_once_keep_their_own_weights():
    # the kernel reuses the weights array of an earlier call only once nothing refers to it
    rng = np.random.default_rng(23)
    attention_layer = nn.SelfAttention(8, num_heads=2)
    _set_weights(attention_layer, np.float64, seed=24)
    first, second = rng.normal(size=(2, 2, 5, 8))
    grads = []
    for x in (first, second):  # one at a time
        leaf = mg.tensor(x, requires_grad=True)
        attention_layer(leaf).sum().backward()
        grads.append(leaf.grad.numpy().copy())
    leaves = [mg.tensor(x, requires_grad=True) for x in (first, second)]
    losses = [attention_layer(leaf).sum() for leaf in leaves]  # both graphs alive
    for loss in reversed(losses):
        loss.backward()
    for leaf, grad in zip(leaves, grads):
        np.testing.assert_allclose(leaf.grad.numpy(), grad, rtol=1e-12)


# ---------------------------------------------------------------------------------------
# The fused path and the textbook's steps agree


@pytest.mark.parametrize(
    "causal, bias, padding",
    [
        (False, False, "lengths"),
        (True, False, "key_padding_mask"),
        (True, True, None),
        (False, True, "lengths"),
    ],
)
def test_fused_and_step_by_step_self_attention_agree(causal, bias, padding):
    fused = nn.SelfAttention(8, num_heads=4, causal=causal, bias=bias)
    steps = nn.SelfAttention(8, num_heads=4, causal=causal, bias=bias, fused=False)
    _set_weights(fused, np.float64, seed=25)
    # the same numbers: parameters are drawn in the same order
    _set_weights(steps, np.float64, seed=25)
    x = _random((3, 6, 8), seed=26)
    lengths = np.array([6, 0, 3])
    kwargs = (
        {"lengths": lengths}
        if padding == "lengths"
        else {"key_padding_mask": np.arange(6)[None, :] >= lengths[:, None]}
        if padding
        else {}
    )
    results = []
    for module in (fused, steps):
        leaf = mg.tensor(x, requires_grad=True)
        out = module(leaf, **kwargs)
        (out * mg.tensor(_random(out.shape, seed=27))).sum().backward()
        results.append(
            (
                out.numpy(),
                module.last_weights,
                leaf.grad.numpy(),
                [p.grad.numpy() for p in module.parameters()],
            )
        )
    (out_a, weights_a, grad_a, params_a), (out_b, weights_b, grad_b, params_b) = results
    np.testing.assert_allclose(out_a, out_b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(weights_a, weights_b, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(grad_a, grad_b, rtol=1e-12, atol=1e-14)
    for a, b in zip(params_a, params_b):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert repr(steps).endswith("fused=False)")


def test_fused_self_attention_is_one_named_node():
    attention_layer = nn.SelfAttention(4, num_heads=2, causal=True)
    out = attention_layer(mg.randn(1, 3, 4, requires_grad=True))
    context = out.grad_fn.inputs[0]  # output projection: context @ W_O
    names = set()
    stack = [out.grad_fn]
    while stack:
        node = stack.pop()
        names.add(node.name)
        stack.extend(t.grad_fn for t in node.inputs if t.grad_fn is not None)
    assert "ScaledDotProductAttention" in names and "Softmax" not in names, names
    assert context.shape == (1, 3, 4)


# ---------------------------------------------------------------------------------------
# Key/value cache: one token at a time gives what the whole prefix gives


@pytest.mark.parametrize("num_heads", [1, 4])
@pytest.mark.parametrize("causal", [True, False])
def test_cached_generation_equals_recomputing_the_prefix(num_heads, causal):
    attention_layer = nn.SelfAttention(8, num_heads=num_heads, causal=causal, bias=True)
    _set_weights(attention_layer, np.float64, seed=28)
    x = _random((2, 7, 8), seed=29)
    cache = nn.KVCache()
    with mg.no_grad():
        # a prompt of 3, then one at a time
        pieces = [attention_layer(mg.tensor(x[:, :3]), cache=cache)]
        assert len(cache) == 3
        for t in range(3, 7):
            pieces.append(attention_layer(mg.tensor(x[:, t : t + 1]), cache=cache))
            assert len(cache) == t + 1 and attention_layer.last_weights.shape == (
                2,
                num_heads,
                1,
                t + 1,
            )
        cached = np.concatenate([p.numpy() for p in pieces], axis=1)
        for t in range(1, 8):  # recompute each prefix from scratch: its last output is that step's
            whole = attention_layer(mg.tensor(x[:, :t])).numpy()
            if causal:
                np.testing.assert_allclose(
                    cached[:, t - 1], whole[:, t - 1], rtol=1e-10, atol=1e-10
                )
        if causal:
            np.testing.assert_allclose(cached, whole, rtol=1e-10, atol=1e-10)
        else:  # without the causal mask each chunk sees the prefix cached so far (and itself)
            np.testing.assert_allclose(
                cached[:, :3], attention_layer(mg.tensor(x[:, :3])).numpy(), rtol=1e-10
            )
            np.testing.assert_allclose(cached[:, 6], whole[:, 6], rtol=1e-10, atol=1e-10)
    cache.reset()
    assert len(cache) == 0 and cache.keys is None


def test_cache_in_chunks_matches_the_whole_sequence_with_gradients():
    attention_layer = nn.SelfAttention(6, num_heads=2, causal=True)
    _set_weights(attention_layer, np.float64, seed=30)
    x = _random((1, 5, 6), seed=31)
    cache = nn.KVCache()
    chunks = [
        attention_layer(mg.tensor(x[:, :2]), cache=cache),
        attention_layer(mg.tensor(x[:, 2:]), cache=cache),
    ]
    np.testing.assert_allclose(
        np.concatenate([c.numpy() for c in chunks], axis=1),
        attention_layer(mg.tensor(x)).numpy(),
        rtol=1e-12,
    )
    assert mg.gradcheck(lambda x: attention_layer(x, cache=nn.KVCache()), [x])


def test_cache_errors():
    attention_layer = nn.SelfAttention(4, num_heads=2)
    cache = nn.KVCache()
    attention_layer(mg.zeros(2, 3, 4), cache=cache)
    with pytest.raises(
        ValueError, match=r"KVCache: holds keys of shape \(2, 2, 3, 2\).*\(1, 2, 1, 2\)"
    ):
        attention_layer(mg.zeros(1, 1, 4), cache=cache)
    with pytest.raises(ValueError, match="cannot be combined with a cache"):
        attention_layer(mg.zeros(2, 1, 4), lengths=[1, 1], cache=cache)
    with pytest.raises(TypeError, match="cache must be an nn.KVCache"):
        attention_layer(mg.zeros(2, 1, 4), cache={})
    with pytest.raises(ValueError, match="a cache needs fused=True"):
        nn.SelfAttention(4, fused=False)(mg.zeros(2, 1, 4), cache=nn.KVCache())


# ---------------------------------------------------------------------------------------
# Junk in padded positions: no NaN out, no NaN gradients


def test_self_attention_ignores_junk_in_padded_keys():
    attention_layer = nn.SelfAttention(4, num_heads=2)
    _set_weights(attention_layer, np.float64, seed=34)
    x = _random((2, 4, 4), seed=35)
    dirty = x.copy()
    dirty[1, 2:] = np.nan
    out_clean = attention_layer(mg.tensor(x), lengths=[4, 2]).numpy()
    out_dirty = attention_layer(mg.tensor(dirty), lengths=[4, 2]).numpy()
    np.testing.assert_array_equal(out_dirty[:, :2], out_clean[:, :2])  # the real positions
    np.testing.assert_array_equal(out_dirty[0], out_clean[0])


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize(
    "shape, lengths", [((2, 0, 8), [0, 0]), ((0, 3, 8), np.zeros(0, np.int64)), ((0, 0, 8), None)]
)
def test_zero_size_batches_and_sequences(shape, lengths, fused):
    # issue 14: attention on length-0 input with lengths crashed ("cannot reshape array of size 0")
    modules = [
        nn.SelfAttention(8, num_heads=2, causal=True, fused=fused),
        nn.MeanPooling(),
        nn.AttentionPooling(nn.AdditiveScore(8)),
        nn.AttentionPooling(nn.DotProductScore(8)),
    ]
    for module in modules:
        x = mg.tensor(np.ones(shape, np.float32), requires_grad=True)
        out = module(x) if lengths is None else module(x, lengths)
        out.sum().backward()
        assert out.shape == (shape if isinstance(module, nn.SelfAttention) else (shape[0], 8))
        assert np.all(out.numpy() == 0) and x.grad.shape == shape
