"""minigrad's own Transformer building blocks (nn/transformer_block.py, not the torch-named
ones): FeedForward, position information and TransformerBlock against PyTorch (float32, 1e-5)
and finite differences (float64 gradcheck); the causal mask seen from outside.

Then a sweep over nn.TransformerBlock, nn.FeedForward, nn.SelfAttention (fused and step by
step), nn.KVCache, nn.PositionalEmbedding, nn.SinusoidalPositionalEncoding /
nn.sinusoidal_encoding and the language-model example's CharTransformer:

- Parity with a hand-written PyTorch twin (same parameter names, weights loaded by name with
  load_state_dict(strict=True)): forward values, the gradient of the input and of every
  parameter, float32 (1e-5) and float64 (1e-10), odd sizes (1 head, head_dim 1, T = 1, B = 1,
  model_dim not a power of two), pre-norm and post-norm, causal and not, fused and step by step.
- The sinusoidal encoding against the paper's formula written out element by element.
- The key/value cache: one token at a time equals recomputing the whole prefix.
- Hostile inputs: a clear exception (RuntimeError / ValueError / TypeError subclass naming what
  was expected and what was given) or torch's result.
- state_dict names and a round trip through mg.save / mg.load.
"""

import math

import numpy as np
import pytest

import minigrad as mg
from layer_checks import TORCH_DTYPE
from minigrad import nn
from parity import assert_close, assert_runs_match, assert_same_parameter_grads
from parity import copy_state_to_torch, run_both, tolerance

torch = pytest.importorskip("torch")
torch.set_num_threads(1)
from examples.language_model.model import CharTransformer  # noqa: E402

MATRICES = ("query_weight", "key_weight", "value_weight", "output_weight")


def randomize(module, seed):
    """Give every parameter random values (LayerNorm's ones and zeros would hide mistakes)."""
    rng = np.random.default_rng(seed)
    for _, parameter in module.named_parameters():
        parameter.numpy()[...] = rng.standard_normal(parameter.shape) * (
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
    # the block's attention has the textbook's four matrices only
    assert attention.query_bias is None
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
                parameter.data = parameter.numpy().astype(np.float64)
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
    """PE[pos + k] = R_k PE[pos] with R_k a rotation per pair of features (why the paper chose
    it)."""
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


CLEAR_ERRORS = (RuntimeError, ValueError, TypeError)


class TorchSelfAttention(torch.nn.Module):
    """softmax(Q K^T / sqrt(head_dim)) V per head, x @ W for the four matrices, key masks and a
    causal mask; a query row that may attend to nothing gives 0 (minigrad's rule)."""

    def __init__(self, model_dim, num_heads, causal, bias=False):
        super().__init__()
        self.num_heads, self.head_dim, self.causal = num_heads, model_dim // num_heads, causal
        for name in ("query", "key", "value", "output"):
            setattr(self, f"{name}_weight", torch.nn.Parameter(torch.empty(model_dim, model_dim)))
            if bias:
                setattr(self, f"{name}_bias", torch.nn.Parameter(torch.empty(model_dim)))
        self.bias = bias

    def _project(self, x, name):
        y = x @ getattr(self, f"{name}_weight")
        return y + getattr(self, f"{name}_bias") if self.bias else y

    def forward(self, x, keys_allowed=None):
        batch, steps, model_dim = x.shape

        def heads(y):
            return y.reshape(batch, steps, self.num_heads, self.head_dim).transpose(1, 2)

        q, k, v = (heads(self._project(x, name)) for name in ("query", "key", "value"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)  # (B, H, T, T)
        allowed = torch.ones(batch, 1, steps, steps, dtype=torch.bool)
        if keys_allowed is not None:
            allowed = allowed & keys_allowed[:, None, None, :]
        if self.causal:
            allowed = allowed & torch.ones(steps, steps, dtype=torch.bool).tril()
        allowed = allowed.expand(batch, self.num_heads, steps, steps)
        any_allowed = allowed.any(-1, keepdim=True)
        scores = scores.masked_fill(~allowed, float("-inf")).masked_fill(~any_allowed, 0.0)
        weights = scores.softmax(-1) * any_allowed
        context = (weights @ v).transpose(1, 2).reshape(batch, steps, model_dim)
        return self._project(context, "output")


class TorchFeedForward(torch.nn.Module):
    def __init__(self, model_dim, ff_dim):
        super().__init__()
        self.expand, self.project = (
            torch.nn.Linear(model_dim, ff_dim),
            torch.nn.Linear(ff_dim, model_dim),
        )

    def forward(self, x):
        return self.project(torch.nn.functional.gelu(self.expand(x)))


class TorchBlock(torch.nn.Module):
    def __init__(self, model_dim, num_heads, ff_dim, causal, norm_first):
        super().__init__()
        self.norm_first = norm_first
        self.attention_norm = torch.nn.LayerNorm(model_dim)
        self.attention = TorchSelfAttention(model_dim, num_heads, causal)
        self.feed_forward_norm = torch.nn.LayerNorm(model_dim)
        self.feed_forward = TorchFeedForward(model_dim, ff_dim)

    def forward(self, x, keys_allowed=None):
        def attend(y):
            return self.attention(y, keys_allowed)

        if self.norm_first:
            x = x + attend(self.attention_norm(x))
            return x + self.feed_forward(self.feed_forward_norm(x))
        x = self.attention_norm(x + attend(x))
        return self.feed_forward_norm(x + self.feed_forward(x))


class TorchCharTransformer(torch.nn.Module):
    def __init__(self, vocab_size, context, model_dim, num_heads, num_layers, ff_dim, positions):
        super().__init__()
        self.token_embedding = torch.nn.Embedding(vocab_size, model_dim)
        self.learned = positions == "learned"
        if self.learned:
            self.positions = torch.nn.Module()
            self.positions.weight = torch.nn.Parameter(torch.empty(context, model_dim))
        else:  # the paper's formula, written out here
            pos = torch.arange(context, dtype=torch.float64)[:, None]
            i = torch.arange(model_dim, dtype=torch.float64)[None, :]
            angle = pos / 10000 ** ((i - i % 2) / model_dim)
            self.register_buffer(
                "table", torch.where(i % 2 == 0, angle.sin(), angle.cos()), persistent=False
            )
        self.blocks = torch.nn.ModuleList(
            [TorchBlock(model_dim, num_heads, ff_dim, True, True) for _ in range(num_layers)]
        )
        self.final_norm = torch.nn.LayerNorm(model_dim)
        self.head = torch.nn.Linear(model_dim, vocab_size)

    def forward(self, ids):
        steps = ids.shape[1]
        x = self.token_embedding(ids)
        x = x + (self.positions.weight[:steps] if self.learned else self.table[:steps].to(x.dtype))
        for block in self.blocks:
            x = block(x)
        return self.head(self.final_norm(x))


def randomize_sweep_parameters(module, seed, dtype=None):
    """Fresh random values in every parameter (LayerNorm's ones and zeros would hide mistakes)."""
    rng = np.random.default_rng(seed)
    for parameter in module.parameters():
        scale = 0.5 if parameter.ndim == 1 else 0.4
        parameter.numpy()[...] = rng.standard_normal(parameter.shape) * scale


# (batch, steps, model_dim, num_heads, ff_dim): one head, head_dim 1, T = 1, B = 1, odd dims
SIZES = [
    (1, 1, 1, 1, 1),
    (2, 5, 6, 6, 7),
    (3, 4, 10, 2, 3),
    (1, 7, 12, 3, 20),
    (2, 1, 5, 1, 9),
    (1, 3, 3, 3, 1),
]


def _size_id(size):
    return "B{}T{}D{}H{}F{}".format(*size)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "steps"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize("norm_first", [True, False], ids=["prenorm", "postnorm"])
@pytest.mark.parametrize("size", SIZES, ids=_size_id)
def test_block_matches_hand_written_torch(size, norm_first, causal, fused, dtype):
    batch, steps, model_dim, heads, ff_dim = size
    mg.manual_seed(0)
    block = nn.TransformerBlock(model_dim, heads, ff_dim, causal=causal, norm_first=norm_first)
    block.attention.fused = fused
    randomize_sweep_parameters(block, seed=sum(size))
    if dtype == np.float64:
        block.double()
    twin = copy_state_to_torch(
        block, TorchBlock(model_dim, heads, ff_dim, causal, norm_first), dtype
    )
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, steps, model_dim)).astype(dtype)
    grad_out = rng.standard_normal((batch, steps, model_dim)).astype(dtype)

    ours, theirs = run_both(None, [x], sides=(block, twin), upstream=grad_out)

    assert ours.out.dtype == dtype and ours.out.shape == (batch, steps, model_dim)
    assert_runs_match(ours, theirs, tolerance("transformer", dtype), names=["the input"])
    assert_same_parameter_grads(block, twin, tolerance("transformer", dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("padding", ["lengths", "key_padding_mask"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
def test_block_with_padding_matches_torch(causal, padding, dtype):
    """Padded keys (one row of length 0) in a post-norm block of 3 heads, model_dim 9."""
    mg.manual_seed(0)
    block = nn.TransformerBlock(9, 3, 5, causal=causal, norm_first=False)
    randomize_sweep_parameters(block, seed=3)
    if dtype == np.float64:
        block.double()
    twin = copy_state_to_torch(block, TorchBlock(9, 3, 5, causal, False), dtype)
    lengths = np.array([4, 1, 0])
    pad = np.arange(4)[None, :] >= lengths[:, None]
    kwargs = {"lengths": lengths} if padding == "lengths" else {"key_padding_mask": pad}
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 4, 9)).astype(dtype)
    grad_out = rng.standard_normal((3, 4, 9)).astype(dtype)
    ours, theirs = run_both(
        None,
        [x],
        sides=(lambda t: block(t, **kwargs), lambda t: twin(t, torch.tensor(~pad))),
        upstream=grad_out,
    )
    assert_runs_match(ours, theirs, tolerance("transformer", dtype), names=["the input"])
    assert_same_parameter_grads(block, twin, tolerance("transformer", dtype))


@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "full"])
@pytest.mark.parametrize(
    "size",
    [(1, 1, 1, 1), (2, 6, 5, 5), (3, 2, 14, 7), (1, 9, 6, 2)],
    ids=lambda s: "B{}T{}D{}H{}".format(*s),
)
def test_fused_and_step_by_step_self_attention_match_torch_and_each_other(size, causal, bias):
    batch, steps, model_dim, heads = size
    results = {}
    for dtype in (np.float32, np.float64):
        for fused in (True, False):
            attention = nn.SelfAttention(model_dim, heads, causal=causal, bias=bias, fused=fused)
            randomize_sweep_parameters(attention, seed=7)
            if dtype == np.float64:
                attention.double()
            twin = copy_state_to_torch(
                attention, TorchSelfAttention(model_dim, heads, causal, bias), dtype
            )
            rng = np.random.default_rng(8)
            x = rng.standard_normal((batch, steps, model_dim)).astype(dtype)
            grad_out = rng.standard_normal(x.shape).astype(dtype)
            ours, theirs = run_both(None, [x], sides=(attention, twin), upstream=grad_out)
            assert_runs_match(ours, theirs, tolerance("transformer", dtype), names=["the input"])
            assert_same_parameter_grads(attention, twin, tolerance("transformer", dtype))
            assert attention.last_weights.shape == (batch, heads, steps, steps)
            results[dtype, fused] = [ours.value, ours.grads[0], attention.last_weights.copy()] + [
                p.grad.numpy() for p in attention.parameters()
            ]
    for dtype in (np.float32, np.float64):  # the two paths: the same numbers (to rounding)
        for a, b in zip(results[dtype, True], results[dtype, False]):
            tol = 1e-5 if dtype == np.float32 else 1e-13
            np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (2, 3, 5, 7), (4, 5, 3)])
def test_feed_forward_matches_torch_with_gradients(shape, dtype):
    *lead, model_dim, ff_dim = shape
    ff = nn.FeedForward(model_dim, ff_dim)
    randomize_sweep_parameters(ff, seed=9)
    if dtype == np.float64:
        ff.double()
    twin = copy_state_to_torch(ff, TorchFeedForward(model_dim, ff_dim), dtype)
    x = np.random.default_rng(10).standard_normal((*lead, model_dim)).astype(dtype)
    leaf, torch_leaf = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ff(leaf).sum().backward()
    out = twin(torch_leaf)
    out.sum().backward()
    assert_close(ff(mg.tensor(x)).numpy(), out.detach().numpy(), tolerance("transformer", dtype))
    assert_close(leaf.grad.numpy(), torch_leaf.grad.numpy(), tolerance("transformer", dtype))
    assert_same_parameter_grads(ff, twin, tolerance("transformer", dtype))


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_char_transformer_matches_torch_twin(positions, dtype):
    """Logits, loss and the gradient of every parameter of the example's model (3 blocks,
    model_dim 10, 5 heads of 2)."""
    settings = dict(
        context=9, model_dim=10, num_heads=5, num_layers=3, ff_dim=11, positions=positions
    )
    mg.manual_seed(11)
    model = CharTransformer(13, **settings)
    randomize_sweep_parameters(model, seed=12)
    if dtype == np.float64:
        model.double()
    twin = copy_state_to_torch(model, TorchCharTransformer(13, **settings), dtype)
    rng = np.random.default_rng(13)
    ids, targets = rng.integers(0, 13, (2, 9)), rng.integers(0, 13, (2, 9))
    logits = model(ids)
    torch_logits = twin(torch.tensor(ids))
    assert_close(
        logits.numpy(), torch_logits.detach().numpy(), tolerance("transformer", dtype), "logits"
    )
    loss = model.loss(ids, targets)
    torch_loss = torch.nn.functional.cross_entropy(
        torch_logits.reshape(-1, 13), torch.tensor(targets).reshape(-1)
    )
    assert_close(loss.numpy(), torch_loss.detach().numpy(), tolerance("transformer", dtype), "loss")
    loss.backward()
    torch_loss.backward()
    assert_same_parameter_grads(model, twin, tolerance("transformer", dtype))


def _paper(position, feature, model_dim):
    i = feature // 2
    angle = position / 10000 ** (2 * i / model_dim)
    return math.sin(angle) if feature % 2 == 0 else math.cos(angle)


@pytest.mark.parametrize("model_dim", [1, 2, 3, 7, 10])
def test_sinusoidal_encoding_is_the_papers_formula_element_by_element(model_dim):
    table = nn.sinusoidal_encoding(40, model_dim, dtype=np.float64)
    expected = np.array([[_paper(p, f, model_dim) for f in range(model_dim)] for p in range(40)])
    assert table.shape == (40, model_dim) and table.dtype == np.float64
    np.testing.assert_allclose(table, expected, rtol=0, atol=1e-12)
    single = nn.sinusoidal_encoding(40, model_dim)
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sinusoidal_module_adds_rows_at_offsets_and_refuses_past_max_length(dtype):
    encoding = nn.SinusoidalPositionalEncoding(7, max_length=12)
    x = np.random.default_rng(14).standard_normal((2, 3, 7)).astype(dtype)
    for offset in (0, 1, 9):
        out = encoding(mg.tensor(x), offset=offset)
        expected = x + np.array(
            [[_paper(p, f, 7) for f in range(7)] for p in range(offset, offset + 3)]
        )
        assert out.dtype == dtype
        np.testing.assert_allclose(
            out.numpy(), expected, rtol=0, atol=tolerance("transformer", dtype)["atol"] * 10
        )
    # one step at a time continues the positions of a whole pass
    whole = encoding(mg.tensor(x)).numpy()
    steps = np.concatenate(
        [encoding(mg.tensor(x[:, t : t + 1]), offset=t).numpy() for t in range(3)], axis=1
    )
    np.testing.assert_array_equal(steps, whole)
    # a leading shape of any rank, and gradient 1 to the input
    leaf = mg.tensor(x[0], requires_grad=True)
    encoding(leaf, offset=2).sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), np.ones_like(x[0]))
    for offset, steps_ in ((10, 3), (0, 13), (12, 1), (-1, 1)):
        with pytest.raises(ValueError, match=r"do not fit max_length=12"):
            encoding(mg.zeros(1, steps_, 7, dtype=dtype), offset=offset)
    with pytest.raises(ValueError, match=r"\(\.\.\., time, 7\).*\(1, 3, 6\)"):
        encoding(mg.zeros(1, 3, 6))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_], ids=["int64", "int32", "bool"])
def test_sinusoidal_module_on_integer_input_is_not_truncated(dtype):
    encoding = nn.SinusoidalPositionalEncoding(4, max_length=5)
    try:
        out = encoding(mg.tensor(np.zeros((1, 3, 4), dtype)))
    except CLEAR_ERRORS as error:  # refusing it clearly is fine too
        assert "dtype" in str(error)
        return
    expected = torch.zeros(
        1, 3, 4, dtype=TORCH_DTYPE.get(dtype, torch.int64) if dtype != np.bool_ else torch.bool
    ) + torch.tensor(nn.sinusoidal_encoding(5, 4)[:3])
    assert out.dtype.kind == "f", out.dtype
    np.testing.assert_allclose(out.numpy(), expected.numpy(), atol=1e-6)


def test_learned_positions_offsets_gradients_and_limits():
    learned = nn.PositionalEmbedding(6, 5)
    x = np.random.default_rng(15).standard_normal((2, 2, 5)).astype(np.float32)
    for offset in (0, 3, 4, np.int64(2)):
        np.testing.assert_array_equal(
            learned(mg.tensor(x), offset=offset).numpy(),
            x + learned.weight.numpy()[offset : offset + 2],
        )
    for offset, steps in ((5, 2), (0, 7), (-1, 2)):
        with pytest.raises(ValueError, match=r"positions .* do not fit max_length=6"):
            learned(mg.zeros(1, steps, 5), offset=offset)
    with pytest.raises(ValueError, match=r"\(\.\.\., time, 5\).*\(2, 4\)"):
        learned(mg.zeros(2, 4))
    with pytest.raises(ValueError, match="max_length and model_dim must be >= 1"):
        nn.PositionalEmbedding(0, 4)


def _lm(num_layers, positions="learned", seed=16, **overrides):
    mg.manual_seed(seed)
    settings = dict(
        context=10, model_dim=6, num_heads=3, num_layers=num_layers, ff_dim=7, positions=positions
    )
    settings.update(overrides)
    model = CharTransformer(11, **settings)
    randomize_sweep_parameters(model, seed)
    model.double()
    model.eval()
    return model


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
@pytest.mark.parametrize("num_layers", [1, 2, 5])
def test_cached_token_by_token_logits_equal_recomputing_the_prefix(num_layers, positions):
    model = _lm(num_layers, positions)
    ids = np.random.default_rng(17).integers(0, 11, (3, 10))
    with mg.no_grad():
        caches = model.new_caches()
        for round_ in range(2):  # the second round after reset: the same numbers
            for t in range(10):
                step = model(ids[:, t : t + 1], caches).numpy()
                whole = model(ids[:, : t + 1]).numpy()
                np.testing.assert_allclose(
                    step[:, 0],
                    whole[:, t],
                    rtol=1e-10,
                    atol=1e-10,
                    err_msg=f"round {round_} step {t}",
                )
            assert [len(cache) for cache in caches] == [10] * num_layers
            with pytest.raises(
                ValueError, match="10 cached \\+ 1 new positions exceed the context of 10"
            ):
                model(ids[:, :1], caches)
            assert [len(cache) for cache in caches] == [10] * num_layers  # untouched by the refusal
            for cache in caches:
                cache.reset()
        # fresh caches, another batch size, a prompt of 4 then single tokens
        fresh = model.new_caches()
        pieces = [model(ids[:1, :4], fresh).numpy()] + [
            model(ids[:1, t : t + 1], fresh).numpy() for t in range(4, 10)
        ]
        np.testing.assert_allclose(
            np.concatenate(pieces, axis=1), model(ids[:1]).numpy(), rtol=1e-10, atol=1e-10
        )


def test_cache_refuses_another_batch_size_and_stays_usable():
    model = _lm(2)
    ids = np.random.default_rng(18).integers(0, 11, (2, 6))
    with mg.no_grad():
        caches = model.new_caches()
        model(ids[:, :3], caches)
        for other in (ids[:1, 3:4], np.concatenate([ids, ids])[:, 3:4]):
            with pytest.raises(
                ValueError, match=r"KVCache: holds keys of shape \(2, 3, 3, 2\).*cannot append"
            ):
                model(other, caches)
            assert [len(cache) for cache in caches] == [3, 3]
        last = model(ids[:, 3:4], caches).numpy()
    np.testing.assert_allclose(last[:, 0], model(ids[:, :4]).numpy()[:, 3], rtol=1e-10, atol=1e-10)


def test_too_few_caches_are_refused_before_any_cache_changes():
    model = _lm(3)
    ids = np.random.default_rng(19).integers(0, 11, (2, 4))
    with mg.no_grad():
        caches = model.new_caches()
        model(ids[:, :2], caches)
        with pytest.raises(ValueError, match=r"3"):  # names the number of blocks
            model(ids[:, 2:3], caches[:2])
        assert [len(cache) for cache in caches] == [2, 2, 2]


def test_cache_with_gradients_gives_the_whole_sequence_gradients():
    """Generating with gradients on (not under no_grad): the cached keys keep their graph, and
    the gradient of the token-by-token logits equals the gradient of one whole pass."""
    model = _lm(2)
    ids = np.random.default_rng(20).integers(0, 11, (2, 5))
    weights = np.random.default_rng(21).standard_normal((2, 5, 11))
    caches = model.new_caches()
    pieces = [model(ids[:, t : t + 1], caches) for t in range(5)]
    assert all(p.requires_grad for p in pieces)
    sum(((p * mg.tensor(weights[:, t : t + 1])).sum() for t, p in enumerate(pieces))).backward()
    cached_grads = {name: p.grad.numpy().copy() for name, p in model.named_parameters()}
    model.zero_grad()
    (model(ids) * mg.tensor(weights)).sum().backward()
    for name, p in model.named_parameters():
        np.testing.assert_allclose(
            cached_grads[name], p.grad.numpy(), rtol=1e-9, atol=1e-10, err_msg=name
        )


def test_cache_in_training_mode_applies_dropout_and_eval_restores_equality():
    model = _lm(2, dropout=0.5)
    ids = np.random.default_rng(22).integers(0, 11, (1, 4))
    model.train()
    with mg.no_grad():
        caches = model.new_caches()
        trained = np.concatenate(
            [model(ids[:, t : t + 1], caches).numpy() for t in range(4)], axis=1
        )
        model.eval()
        assert not np.allclose(trained, model(ids).numpy())  # dropout was on while caching
        for cache in caches:
            cache.reset()
        evaluated = np.concatenate(
            [model(ids[:, t : t + 1], caches).numpy() for t in range(4)], axis=1
        )
    np.testing.assert_allclose(evaluated, model(ids).numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("norm_first", [True, False])
def test_block_cache_in_chunks_matches_whole_causal_block(norm_first):
    mg.manual_seed(23)
    # head_dim 1
    blocks = [nn.TransformerBlock(6, 6, 5, causal=True, norm_first=norm_first) for _ in range(3)]
    for index, block in enumerate(blocks):
        randomize_sweep_parameters(block, 24 + index)
        block.double()
    x = np.random.default_rng(25).standard_normal((2, 7, 6))

    def run(chunk, caches=None):
        h = mg.tensor(chunk)
        for index, block in enumerate(blocks):
            h = block(h, cache=None if caches is None else caches[index])
        return h.numpy()

    caches = [nn.KVCache() for _ in blocks]
    pieces = [run(x[:, a:b], caches) for a, b in ((0, 3), (3, 4), (4, 7))]
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), run(x), rtol=1e-10, atol=1e-10)
    assert [len(cache) for cache in caches] == [7, 7, 7]


def test_cache_needs_the_fused_path_and_a_kvcache():
    block = nn.TransformerBlock(4, 2, 3, causal=True)
    block.attention.fused = False
    with pytest.raises(ValueError, match="a cache needs fused=True"):
        block(mg.zeros(1, 1, 4), cache=nn.KVCache())
    with pytest.raises(TypeError, match="cache must be an nn.KVCache; got list"):
        nn.TransformerBlock(4, 2, 3)(mg.zeros(1, 1, 4), cache=[])


def _block():
    mg.manual_seed(26)
    return nn.TransformerBlock(6, 2, 5, causal=True)


@pytest.mark.parametrize(
    "label, make, words",
    [
        ("wrong last dim", lambda: mg.zeros(2, 3, 5), [r"\(batch, time, 6\)", r"\(2, 3, 5\)"]),
        ("2-D", lambda: mg.zeros(3, 6), [r"\(batch, time, 6\)", r"\(3, 6\)"]),
        ("4-D", lambda: mg.zeros(1, 2, 3, 6), [r"\(batch, time, 6\)", r"\(1, 2, 3, 6\)"]),
        ("int64", lambda: mg.tensor(np.ones((2, 3, 6), np.int64)), ["float32", "int64"]),
        ("float64 into float32", lambda: mg.tensor(np.ones((2, 3, 6))), ["float32", "float64"]),
        ("bool", lambda: mg.tensor(np.ones((2, 3, 6), bool)), ["bool"]),
    ],
)
def test_block_hostile_inputs_raise_clear_errors(label, make, words):
    with pytest.raises(CLEAR_ERRORS) as info:
        _block()(make())
    for word in words:
        assert __import__("re").search(word, str(info.value)), (label, str(info.value))
    assert "TransformerBlock" in str(info.value) or "layer_norm" in str(info.value)


def test_block_numpy_input_error_says_a_tensor_is_expected():
    with pytest.raises(CLEAR_ERRORS, match="Tensor"):
        _block()(np.zeros((2, 3, 6), np.float32))


@pytest.mark.parametrize("module", ["attention", "feed_forward", "positions"])
@pytest.mark.parametrize("bad", ["int64", "float64"])
def test_parts_refuse_wrong_dtypes_clearly(module, bad):
    x = mg.tensor(np.ones((2, 3, 6), bad))
    part = {
        "attention": lambda: nn.SelfAttention(6, 3),
        "feed_forward": lambda: nn.FeedForward(6, 4),
        "positions": lambda: nn.PositionalEmbedding(5, 6),
    }[module]()
    # x + weight: torch's promotion (float64 stays float64, int64 -> float32)
    if module == "positions":
        out = part(x)
        assert out.dtype == (np.float64 if bad == "float64" else np.float32)
        return
    with pytest.raises(CLEAR_ERRORS, match=bad):
        part(x)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("shape", [(0, 3, 6), (2, 0, 6), (0, 0, 6)])
def test_block_empty_inputs_match_torch(shape, norm_first, fused):
    mg.manual_seed(27)
    block = nn.TransformerBlock(6, 2, 5, causal=True, norm_first=norm_first)
    block.attention.fused = fused
    twin = copy_state_to_torch(block, TorchBlock(6, 2, 5, True, norm_first), np.float32)
    leaf = mg.tensor(np.ones(shape, np.float32), requires_grad=True)
    out = block(leaf)
    out.sum().backward()
    torch_leaf = torch.ones(shape, requires_grad=True)
    torch_out = twin(torch_leaf)
    torch_out.sum().backward()
    assert out.shape == tuple(torch_out.shape) and leaf.grad.shape == shape
    assert_same_parameter_grads(block, twin, tolerance("transformer", np.float32))


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("norm_first", [True, False])
def test_nan_input_propagates_as_in_torch(norm_first, causal):
    block = nn.TransformerBlock(6, 2, 5, causal=causal, norm_first=norm_first)
    randomize_sweep_parameters(block, 28)
    twin = copy_state_to_torch(block, TorchBlock(6, 2, 5, causal, norm_first), np.float32)
    x = np.random.default_rng(29).standard_normal((2, 4, 6)).astype(np.float32)
    x[0, 1, 2] = np.nan
    out = block(mg.tensor(x)).numpy()
    expected = twin(torch.tensor(x)).detach().numpy()
    np.testing.assert_array_equal(np.isnan(out), np.isnan(expected))
    finite = ~np.isnan(expected)
    np.testing.assert_allclose(out[finite], expected[finite], rtol=1e-5, atol=1e-5)
    assert not np.isnan(out[1]).any()  # the other sequence is untouched


def test_long_causal_sequence_without_context_limit_matches_torch():
    """A bare causal block has no context limit: T = 700 runs and is torch's result."""
    block = nn.TransformerBlock(4, 2, 3, causal=True)
    randomize_sweep_parameters(block, 30)
    block.double()
    twin = copy_state_to_torch(block, TorchBlock(4, 2, 3, True, True), np.float64)
    x = np.random.default_rng(31).standard_normal((1, 700, 4))
    np.testing.assert_allclose(
        block(mg.tensor(x)).numpy(), twin(torch.tensor(x)).detach().numpy(), rtol=1e-10, atol=1e-10
    )


def test_char_transformer_hostile_ids():
    model = _lm(2)
    for ids, error, words in [
        (
            np.zeros((1, 11), np.int64),
            ValueError,
            "0 cached \\+ 11 new positions exceed the context of 10",
        ),
        (
            np.zeros(4, np.int64),
            ValueError,
            "expected ids of shape \\(batch, time\\); got \\(4,\\)",
        ),
        (np.zeros((1, 4)), TypeError, "integer"),
        (np.full((1, 4), 11), IndexError, "\\[0, 11\\)"),
        (np.full((1, 4), -1), IndexError, "\\[0, 11\\)"),
    ]:
        with pytest.raises(error, match=words):
            model(ids)
    assert model(np.zeros((0, 4), np.int64)).shape == (0, 4, 11)
    assert model(np.zeros((2, 0), np.int64)).shape == (2, 0, 11)


def test_head_count_given_as_a_string_is_refused():
    with pytest.raises(CLEAR_ERRORS):
        nn.SelfAttention(6, "2")


def test_fractional_head_count_is_refused_by_name():
    with pytest.raises(CLEAR_ERRORS, match="num_heads"):
        nn.SelfAttention(5, 2.5)(mg.zeros(1, 2, 5))


def test_state_dict_names_and_save_load_round_trip(tmp_path):
    model = _lm(3, seed=32)
    model.float()
    names = list(model.state_dict())
    for matrix in ("query_weight", "key_weight", "value_weight", "output_weight"):
        assert f"blocks.2.attention.{matrix}" in names
        assert model.state_dict()[f"blocks.2.attention.{matrix}"] is not None
    assert (
        model.get_parameter("blocks.2.attention.query_weight")
        is model.blocks[2].attention.query_weight
    )
    assert names[:2] == ["token_embedding.weight", "positions.weight"]
    assert names[2:14] == [
        f"blocks.0.{n}"
        for n in (
            "attention_norm.weight",
            "attention_norm.bias",
            "attention.query_weight",
            "attention.key_weight",
            "attention.value_weight",
            "attention.output_weight",
            "feed_forward_norm.weight",
            "feed_forward_norm.bias",
            "feed_forward.expand.weight",
            "feed_forward.expand.bias",
            "feed_forward.project.weight",
            "feed_forward.project.bias",
        )
    ]
    assert names[-4:] == ["final_norm.weight", "final_norm.bias", "head.weight", "head.bias"]

    mg.save(model.state_dict(), tmp_path / "lm.npz")
    loaded = mg.load(tmp_path / "lm.npz")
    assert sorted(loaded) == sorted(names)
    other = _lm(3, seed=33)
    other.float()
    ids = np.arange(8).reshape(2, 4)
    assert not np.allclose(other(ids).numpy(), model(ids).numpy())
    other.load_state_dict(loaded)
    np.testing.assert_array_equal(other(ids).numpy(), model(ids).numpy())
    for name, value in other.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), model.state_dict()[name].numpy(), err_msg=name)
        assert value.dtype == np.float32

    # the names are the twin's names: the loaded file goes into torch with from_numpy only
    twin = TorchCharTransformer(11, 10, 6, 3, 3, 7, "learned")
    twin.load_state_dict(
        {
            name: torch.from_numpy(np.asarray(getattr(v, "numpy", lambda: v)()))
            for name, v in loaded.items()
        },
        strict=True,
    )
    np.testing.assert_allclose(
        twin(torch.tensor(ids)).detach().numpy(), model(ids).numpy(), rtol=1e-5, atol=1e-5
    )

    # a sinusoidal model saves no table, and a missing / extra / misshapen key is named
    sinusoidal = _lm(2, positions="sinusoidal")
    assert not any(name.startswith("positions") for name in sinusoidal.state_dict())
    broken = dict(loaded)
    del broken["blocks.2.attention.query_weight"]
    with pytest.raises(Exception, match="blocks.2.attention.query_weight"):
        _lm(3).load_state_dict(broken)
    with pytest.raises(Exception, match="blocks.2.attention.query_weight"):
        _lm(2).load_state_dict(loaded)  # an unexpected third block
    with pytest.raises(Exception, match="blocks.0.attention.key_weight"):
        _lm(3, model_dim=9).load_state_dict(loaded)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "steps"])
@pytest.mark.parametrize("junk", [np.nan, np.inf], ids=["nan", "inf"])
@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_junk_in_padded_keys_stays_out_of_real_positions(junk, fused):
    attention = nn.SelfAttention(6, 2, causal=False, fused=fused)
    randomize_sweep_parameters(attention, 34)
    x = np.random.default_rng(35).standard_normal((2, 4, 6)).astype(np.float32)
    clean = attention(mg.tensor(x), lengths=[4, 2]).numpy()
    x[1, 2:] = junk
    dirty = attention(mg.tensor(x), lengths=[4, 2]).numpy()
    np.testing.assert_allclose(dirty[0], clean[0], rtol=1e-6, atol=1e-6)
    # the real positions
    np.testing.assert_allclose(dirty[1, :2], clean[1, :2], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_block_with_tanh_gelu_matches_torch(dtype):
    block = nn.TransformerBlock(7, 7, 4, causal=True, approximate="tanh")
    randomize_sweep_parameters(block, 36)
    if dtype == np.float64:
        block.double()
    twin = copy_state_to_torch(block, TorchBlock(7, 7, 4, True, True), dtype)
    twin.feed_forward.forward = lambda x: twin.feed_forward.project(
        torch.nn.functional.gelu(twin.feed_forward.expand(x), approximate="tanh")
    )
    x = np.random.default_rng(37).standard_normal((2, 3, 7)).astype(dtype)
    leaf, torch_leaf = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, torch_out = block(leaf), twin(torch_leaf)
    out.sum().backward()
    torch_out.sum().backward()
    assert_close(out.numpy(), torch_out.detach().numpy(), tolerance("transformer", dtype))
    assert_close(leaf.grad.numpy(), torch_leaf.grad.numpy(), tolerance("transformer", dtype))
    assert_same_parameter_grads(block, twin, tolerance("transformer", dtype))
    with pytest.raises(CLEAR_ERRORS, match="approximate"):
        nn.TransformerBlock(7, 7, 4, approximate="fast")


@pytest.mark.parametrize(
    "module",
    [lambda: nn.PositionalEmbedding(6, 4), lambda: nn.SinusoidalPositionalEncoding(4, 6)],
    ids=["learned", "sinusoidal"],
)
def test_fractional_offset_is_refused_by_name(module):
    with pytest.raises(CLEAR_ERRORS, match="offset"):
        module()(mg.zeros(1, 2, 4), offset=1.5)
