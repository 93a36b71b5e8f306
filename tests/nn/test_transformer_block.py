"""Transformer modules: FeedForward, position information and TransformerBlock against PyTorch
(float32, 1e-5) and finite differences (float64 gradcheck); the causal mask seen from outside."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

MATRICES = ("query_weight", "key_weight", "value_weight", "output_weight")


def randomize(module, seed):
    """Give every parameter random values (LayerNorm's ones and zeros would hide mistakes)."""
    rng = np.random.default_rng(seed)
    for _, parameter in module.named_parameters():
        parameter.data[...] = rng.standard_normal(parameter.shape) * (
            0.5 if parameter.ndim == 1 else 0.3
        )


def torch_encoder_layer(torch, block):
    """torch.nn.TransformerEncoderLayer holding the block's weights: minigrad's x @ W matrices
    are the transposes of torch's Linear weights; torch's attention biases stay zero."""
    model_dim, ff_dim = block.model_dim, block.ff_dim
    layer = torch.nn.TransformerEncoderLayer(
        model_dim,
        block.num_heads,
        ff_dim,
        dropout=0.0,
        activation="gelu",
        batch_first=True,
        norm_first=block.norm_first,
        dtype=torch.float64,
    )
    state = {
        name: torch.from_numpy(value.numpy().astype(np.float64))
        for name, value in block.state_dict().items()
    }
    attention = block.attention
    with torch.no_grad():
        layer.self_attn.in_proj_weight.copy_(
            torch.cat([state[f"attention.{name}"].T for name in MATRICES[:3]])
        )
        layer.self_attn.in_proj_bias.zero_()
        layer.self_attn.out_proj.weight.copy_(state["attention.output_weight"].T)
        layer.self_attn.out_proj.bias.zero_()
        for mine, theirs in (
            ("feed_forward.expand", "linear1"),
            ("feed_forward.project", "linear2"),
            ("attention_norm", "norm1"),
            ("feed_forward_norm", "norm2"),
        ):
            getattr(layer, theirs).weight.copy_(state[f"{mine}.weight"])
            getattr(layer, theirs).bias.copy_(state[f"{mine}.bias"])
    assert (
        attention.query_bias is None
    )  # the block's attention has the textbook's four matrices only
    return layer


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("causal", [True, False])
def test_block_matches_torch_encoder_layer(norm_first, causal):
    torch = pytest.importorskip("torch")
    mg.manual_seed(0)
    block = nn.TransformerBlock(16, 4, 32, causal=causal, norm_first=norm_first)
    randomize(block, 1)
    layer = torch_encoder_layer(torch, block)
    x = np.random.default_rng(2).standard_normal((3, 7, 16))
    grad_out = np.random.default_rng(3).standard_normal((3, 7, 16))
    mask = (
        torch.nn.Transformer.generate_square_subsequent_mask(7, dtype=torch.float64)
        if causal
        else None
    )

    x_torch = torch.tensor(x, requires_grad=True)
    out_torch = layer(x_torch, src_mask=mask, is_causal=causal)
    out_torch.backward(torch.tensor(grad_out))
    for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-10)):
        if dtype == np.float64:
            for parameter in block.parameters():
                parameter.data = parameter.data.astype(np.float64)
        block.zero_grad()
        x_mine = mg.tensor(x.astype(dtype), requires_grad=True)
        out = block(x_mine)
        out.backward(mg.tensor(grad_out.astype(dtype)))
        assert out.dtype == dtype
        np.testing.assert_allclose(out.numpy(), out_torch.detach().numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(x_mine.grad.numpy(), x_torch.grad.numpy(), rtol=tol, atol=tol)
        query_grad = block.attention.query_weight.grad.numpy()
        torch_query_grad = layer.self_attn.in_proj_weight.grad[:16].T.numpy()
        np.testing.assert_allclose(query_grad, torch_query_grad, rtol=tol, atol=tol)
        np.testing.assert_allclose(
            block.feed_forward.expand.weight.grad.numpy(),
            layer.linear1.weight.grad.numpy(),
            rtol=tol,
            atol=tol,
        )
        np.testing.assert_allclose(
            block.attention_norm.weight.grad.numpy(),
            layer.norm1.weight.grad.numpy(),
            rtol=tol,
            atol=tol,
        )


@pytest.mark.parametrize("norm_first", [True, False])
def test_block_gradcheck_float64(norm_first):
    mg.manual_seed(0)
    block = nn.TransformerBlock(6, 2, 8, causal=True, norm_first=norm_first)
    randomize(block, 4)
    names = [name for name, _ in block.named_parameters()]
    values = [p.numpy().astype(np.float64) for p in block.parameters()]
    x = np.random.default_rng(5).standard_normal((2, 4, 6))

    assert mg.gradcheck(lambda x, *parameters: _run_with(block, parameters, x), [x, *values])


def _run_with(block, parameters, x):
    """The block's forward with its parameters replaced by the given tensors (gradcheck's
    float64 leaves), so that the check covers every weight, not only the input."""
    slots = _parameter_slots(block)
    saved = [module._parameters[name] for module, name in slots]
    for (module, name), tensor in zip(slots, parameters):
        module._parameters[name] = tensor
    try:
        return block(x)
    finally:
        for (module, name), parameter in zip(slots, saved):
            module._parameters[name] = parameter


def _parameter_slots(block):
    """(module, name) of every parameter, in named_parameters() order."""
    return [
        (module, name)
        for _, module in block.named_modules()
        for name, parameter in module._parameters.items()
        if parameter is not None
    ]


def test_causal_block_output_at_t_does_not_depend_on_later_positions():
    mg.manual_seed(0)
    block = nn.TransformerBlock(8, 2, 16, causal=True)
    x = mg.randn(1, 6, 8)
    changed = x.numpy().copy()
    changed[0, 4:] += 5.0  # change positions 4 and 5 only
    before, after = block(x).numpy(), block(mg.tensor(changed)).numpy()
    np.testing.assert_array_equal(before[0, :4], after[0, :4])
    assert np.abs(before[0, 4:] - after[0, 4:]).min() > 1e-3
    weights = block.attention.last_weights[0]  # (heads, T, T): nothing above the diagonal
    assert (np.triu(weights, k=1) == 0).all() and np.allclose(weights.sum(-1), 1)


def test_block_parameter_names_lead_to_the_four_matrices():
    model = nn.ModuleList([nn.TransformerBlock(8, 2, 16) for _ in range(3)])
    names = dict(model.named_parameters())
    for matrix in MATRICES:
        assert names[f"2.attention.{matrix}"].shape == (8, 8)
    assert [name for name in names if name.startswith("0.")] == [
        "0.attention_norm.weight",
        "0.attention_norm.bias",
        "0.attention.query_weight",
        "0.attention.key_weight",
        "0.attention.value_weight",
        "0.attention.output_weight",
        "0.feed_forward_norm.weight",
        "0.feed_forward_norm.bias",
        "0.feed_forward.expand.weight",
        "0.feed_forward.expand.bias",
        "0.feed_forward.project.weight",
        "0.feed_forward.project.bias",
    ]


def test_dropout_only_while_training():
    mg.manual_seed(0)
    block = nn.TransformerBlock(8, 2, 16, dropout=0.5)
    x = mg.randn(2, 5, 8)
    block.eval()
    np.testing.assert_array_equal(block(x).numpy(), block(x).numpy())
    block.train()
    assert not np.allclose(block(x).numpy(), block(x).numpy())


def test_feed_forward_matches_torch():
    torch = pytest.importorskip("torch")
    mg.manual_seed(0)
    feed_forward = nn.FeedForward(6, 10)
    x = np.random.default_rng(0).standard_normal((2, 3, 6)).astype(np.float32)
    reference = torch.nn.Sequential(torch.nn.Linear(6, 10), torch.nn.GELU(), torch.nn.Linear(10, 6))
    reference.load_state_dict(
        {
            key: torch.from_numpy(feed_forward.state_dict()[name].numpy().copy())
            for key, name in zip(
                reference.state_dict(),
                ["expand.weight", "expand.bias", "project.weight", "project.bias"],
            )
        }
    )
    np.testing.assert_allclose(
        feed_forward(mg.tensor(x)).numpy(),
        reference(torch.tensor(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-5,
    )


def test_block_rejects_bad_settings_and_inputs():
    with pytest.raises(ValueError, match="divisible by num_heads"):
        nn.TransformerBlock(10, 3, 16)
    with pytest.raises(ValueError, match=r"shape \(batch, time, 8\)"):
        nn.TransformerBlock(8, 2, 16)(mg.randn(2, 5, 6))


# ============================================================ positions


def test_sinusoidal_encoding_is_the_papers_formula():
    table = nn.sinusoidal_encoding(50, 6, dtype=np.float64)
    for position in (0, 1, 17, 49):
        for i in range(3):
            angle = position / 10000 ** (2 * i / 6)
            assert table[position, 2 * i] == pytest.approx(math.sin(angle), abs=1e-12)
            assert table[position, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-12)
    odd = nn.sinusoidal_encoding(4, 5)
    assert odd.shape == (4, 5) and odd.dtype == np.float32
    np.testing.assert_allclose(odd[3, 4], math.sin(3 / 10000 ** (4 / 5)), rtol=1e-6)


def test_sinusoidal_positions_are_linear_in_each_other():
    """PE[pos + k] = R_k PE[pos] with R_k a rotation per pair of features (why the paper chose it)."""
    table = nn.sinusoidal_encoding(30, 8, dtype=np.float64)
    k = 5
    for i in range(4):
        frequency = 1 / 10000 ** (2 * i / 8)
        rotation = np.array(
            [
                [math.cos(k * frequency), -math.sin(k * frequency)],
                [math.sin(k * frequency), math.cos(k * frequency)],
            ]
        )
        pairs = table[:, 2 * i : 2 * i + 2]
        np.testing.assert_allclose(pairs[:-k] @ rotation, pairs[k:], atol=1e-12)


def test_positional_modules_add_their_rows_at_an_offset():
    x = mg.zeros(2, 3, 4)
    learned = nn.PositionalEmbedding(10, 4)
    np.testing.assert_array_equal(learned(x, offset=5).numpy()[1], learned.weight.numpy()[5:8])
    fixed = nn.SinusoidalPositionalEncoding(4, max_length=10)
    np.testing.assert_allclose(fixed(x, offset=2).numpy()[0], nn.sinusoidal_encoding(10, 4)[2:5])
    assert list(fixed.parameters()) == []
    with pytest.raises(ValueError, match="positions 8..10 do not fit max_length=10"):
        learned(x, offset=8)
    # the learned rows get gradient only where they were used
    leaf = mg.randn(2, 3, 4, requires_grad=True)
    learned(leaf, offset=1).sum().backward()
    grad = learned.weight.grad.numpy()
    assert (grad[1:4] == 2).all() and (grad[0] == 0).all() and (grad[4:] == 0).all()
