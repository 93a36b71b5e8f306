"""nn.MultiheadAttention against torch.nn.MultiheadAttention: the same state dict loaded into
both, the same inputs, every layout (sequence-first, batch-first, unbatched), every mask kind
(bool and float attn_mask, 2-D and 3-D, key_padding_mask, both at once), need_weights on and
off, weights averaged or per head, separate kdim/vdim, no bias; outputs and every gradient
to float32 rounding, and float64 gradcheck."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import ShapeError
from minigrad import nn
from parity import assert_same_parameter_grads

E, HEADS, L, S, N = 8, 2, 5, 6, 3


def _torch():
    return pytest.importorskip("torch")


def _pair(seed=0, dtype=np.float32, **settings):
    """An nn.MultiheadAttention and a torch one holding the same (random) parameters."""
    torch = _torch()
    mg.manual_seed(seed)
    ours = nn.MultiheadAttention(E, HEADS, dtype=dtype, **settings)
    rng = np.random.default_rng(seed)
    for p in ours.parameters():  # random biases too, so that a wrong bias slice shows
        p.numpy()[...] = rng.standard_normal(p.shape).astype(dtype) * 0.5
    theirs = torch.nn.MultiheadAttention(
        E, HEADS, dtype=getattr(torch, np.dtype(dtype).name), **settings
    )
    theirs.load_state_dict(
        {name: torch.from_numpy(value.numpy().copy()) for name, value in ours.state_dict().items()}
    )
    return ours, theirs


def _inputs(shapes, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for shape in shapes]


def _run(module, framework, arrays, same, **kwargs):
    """Call module on tensors made from arrays (one tensor for all three when same)."""
    tensors = [framework.tensor(a, requires_grad=True) for a in arrays]
    if same:
        tensors = tensors[:1] * 3
    out, weights = module(*tensors, **kwargs)
    return tensors, out, weights


def _compare(settings, shapes, kwargs, same=False, seed=0, rtol=2e-5, atol=2e-6):
    torch = _torch()
    ours, theirs = _pair(seed, **settings)
    arrays = _inputs(shapes, seed + 1)
    our_inputs, out, weights = _run(ours, mg, arrays, same, **kwargs)
    torch_kwargs = {
        k: (torch.from_numpy(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()
    }
    their_inputs, reference, reference_weights = _run(theirs, torch, arrays, same, **torch_kwargs)
    np.testing.assert_allclose(out.numpy(), reference.detach().numpy(), rtol=rtol, atol=atol)
    assert (weights is None) == (reference_weights is None)
    if weights is not None:
        assert weights.shape == tuple(reference_weights.shape)
        np.testing.assert_allclose(
            weights.numpy(), reference_weights.detach().numpy(), rtol=rtol, atol=atol
        )
    grad = _inputs([out.shape], seed + 2)[0]
    loss = (out * mg.tensor(grad)).sum() + (weights.sum() * 0.5 if weights is not None else 0)
    torch_loss = (reference * torch.from_numpy(grad)).sum() + (
        reference_weights.sum() * 0.5 if reference_weights is not None else 0
    )
    loss.backward()
    torch_loss.backward()
    for ours_t, theirs_t in zip(our_inputs[: 1 if same else 3], their_inputs[: 1 if same else 3]):
        np.testing.assert_allclose(ours_t.grad.numpy(), theirs_t.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_same_parameter_grads(ours, theirs, dict(rtol=1e-4, atol=1e-5))


rng = np.random.default_rng(42)
CAUSAL_BOOL = np.triu(np.ones((L, L), bool), k=1)  # True = masked, torch's meaning
PADDING = np.zeros((N, S), bool)
PADDING[0, 4:] = True
PADDING[2, 1:] = True
FLOAT_MASK = rng.standard_normal((L, S)).astype(np.float32)
PER_HEAD = rng.random((N * HEADS, L, S)) < 0.3
PER_HEAD[:, :, 0] = False  # every query keeps a key

CASES = {
    "self, seq-first": ({}, [(L, N, E)], {}, True),
    "self, batch-first": ({"batch_first": True}, [(N, L, E)], {}, True),
    "cross, seq-first": ({}, [(L, N, E), (S, N, E), (S, N, E)], {}, False),
    "cross, batch-first, per-head weights": (
        {"batch_first": True},
        [(N, L, E), (N, S, E), (N, S, E)],
        {"average_attn_weights": False},
        False,
    ),
    "unbatched": ({}, [(L, E), (S, E), (S, E)], {}, False),
    "causal bool mask": ({"batch_first": True}, [(N, L, E)], {"attn_mask": CAUSAL_BOOL}, True),
    "causal with is_causal": (
        {"batch_first": True},
        [(N, L, E)],
        {"attn_mask": CAUSAL_BOOL, "is_causal": True},
        True,
    ),
    "float mask": ({}, [(L, N, E), (S, N, E), (S, N, E)], {"attn_mask": FLOAT_MASK}, False),
    "3-D bool mask": ({}, [(L, N, E), (S, N, E), (S, N, E)], {"attn_mask": PER_HEAD}, False),
    "key padding": (
        {"batch_first": True},
        [(N, L, E), (N, S, E), (N, S, E)],
        {"key_padding_mask": PADDING},
        False,
    ),
    "key padding and float mask": (
        {"batch_first": True},
        [(N, L, E), (N, S, E), (N, S, E)],
        {"key_padding_mask": PADDING, "attn_mask": FLOAT_MASK},
        False,
    ),
    "key padding and 3-D mask, no weights": (
        {},
        [(L, N, E), (S, N, E), (S, N, E)],
        {"key_padding_mask": PADDING, "attn_mask": PER_HEAD, "need_weights": False},
        False,
    ),
    "no weights (fused kernel)": (
        {"batch_first": True},
        [(N, L, E)],
        {"need_weights": False},
        True,
    ),
    "no weights, causal": (
        {"batch_first": True},
        [(N, L, E)],
        {"need_weights": False, "attn_mask": CAUSAL_BOOL},
        True,
    ),
    "kdim and vdim": (
        {"kdim": 5, "vdim": 3, "batch_first": True},
        [(N, L, E), (N, S, 5), (N, S, 3)],
        {},
        False,
    ),
    "no bias": ({"bias": False}, [(L, N, E), (S, N, E), (S, N, E)], {}, False),
}


# torch's, for the mixed case
@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")
@pytest.mark.parametrize("case", CASES)
def test_matches_torch_outputs_weights_and_gradients(case):
    settings, shapes, kwargs, same = CASES[case]
    _compare(settings, shapes, kwargs, same=same)


def test_parameter_names_and_shapes_are_torchs():
    torch = _torch()
    for settings in ({}, {"kdim": 5, "vdim": 3}, {"bias": False}):
        ours = nn.MultiheadAttention(E, HEADS, **settings)
        theirs = torch.nn.MultiheadAttention(E, HEADS, **settings)
        assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
            k: tuple(v.shape) for k, v in theirs.state_dict().items()
        }
    fresh = nn.MultiheadAttention(16, 4)
    bound = np.sqrt(6 / (16 + 48))  # Xavier-uniform over the packed (3E, E) matrix, as torch
    assert (
        np.abs(fresh.in_proj_weight.numpy()).max() <= bound
        and fresh.in_proj_weight.numpy().std() > bound / 3
    )
    assert not fresh.in_proj_bias.numpy().any() and not fresh.out_proj.bias.numpy().any()


def test_dropout_acts_in_training_only():
    module = nn.MultiheadAttention(E, HEADS, dropout=0.5, batch_first=True)
    x = mg.tensor(_inputs([(N, L, E)], 3)[0])
    module.eval()
    first, _ = module(x, x, x)
    second, _ = module(x, x, x)
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    module.train()
    mg.manual_seed(0)
    dropped, weights = module(x, x, x)
    assert not np.allclose(dropped.numpy(), first.numpy())
    assert (weights.numpy() == 0).any()  # the returned weights are the dropped ones, as torch's


def test_gradcheck_float64():
    module = nn.MultiheadAttention(4, 2, batch_first=True, dtype=np.float64)
    q, k = (
        mg.tensor(a, requires_grad=True) for a in _inputs([(2, 3, 4), (2, 4, 4)], 5, np.float64)
    )
    mask = np.array([[False, False, True, True], [False, False, False, False]])

    def f(query, key):
        out, weights = module(query, key, key, key_padding_mask=mask)
        return out.sum() + (weights * weights).sum()

    assert mg.gradcheck(f, (q, k))


def test_a_query_with_every_key_masked_gets_nan_as_in_torch():
    torch = _torch()
    ours, theirs = _pair(batch_first=True)
    x = _inputs([(1, L, E)], 7)[0]
    mask = np.zeros((L, L), bool)
    mask[2] = True
    out, _ = ours(mg.tensor(x), mg.tensor(x), mg.tensor(x), attn_mask=mask)
    reference, _ = theirs(
        torch.from_numpy(x),
        torch.from_numpy(x),
        torch.from_numpy(x),
        attn_mask=torch.from_numpy(mask),
    )
    np.testing.assert_array_equal(np.isnan(out.numpy()), np.isnan(reference.detach().numpy()))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda m, x: m(x, x, x, attn_mask=np.zeros((2, 2), bool)),
            mg.errors.ShapeError,
            r"attn_mask must have shape \(5, 5\) or \(6, 5, 5\)",
        ),
        (
            lambda m, x: m(x, x, x, key_padding_mask=np.zeros((3, 4), bool)),
            mg.errors.ShapeError,
            r"key_padding_mask must have shape \(3, 5\)",
        ),
        (
            lambda m, x: m(x, x, x, attn_mask=np.zeros((5, 5), np.int64)),
            mg.errors.DTypeError,
            "masks must be bool .* or float .*; got int64",
        ),
        (
            lambda m, x: m(x, x, x, is_causal=True),
            RuntimeError,
            "is_causal is a hint .* pass attn_mask too",
        ),
        (
            lambda m, x: m(x[:, :, :4], x, x),
            mg.errors.ShapeError,
            r"query must have shape \(length, batch, 8\)",
        ),
        (
            lambda m, x: m(x, x[0], x[0]),
            mg.errors.ShapeError,
            r"must all be batched \(3-D\) or all unbatched",
        ),
        (
            lambda m, x: m(x, x[:, :2], x),
            mg.errors.ShapeError,
            "key and value must have the same length and batch",
        ),
        (
            lambda m, x: m(np.zeros((5, 3, 8)), x, x),
            TypeError,
            "query must be a Tensor; got ndarray",
        ),
    ],
)
def test_bad_calls_name_what_was_expected(call, error, message):
    module = nn.MultiheadAttention(E, HEADS)
    x = mg.tensor(_inputs([(L, N, E)], 0)[0])
    with pytest.raises(error, match=message):
        call(module, x)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"embed_dim": 10, "num_heads": 3}, "embed_dim must be divisible by num_heads"),
        (
            {"embed_dim": 8, "num_heads": 2, "add_bias_kv": True},
            "add_bias_kv and add_zero_attn are not supported",
        ),
        ({"embed_dim": 8, "num_heads": 2, "dropout": 1.5}, r"dropout must be in \[0, 1\]"),
        ({"embed_dim": 8, "num_heads": 2, "device": "cuda"}, "CPU only"),
        ({"embed_dim": 8.0, "num_heads": 2}, "embed_dim must be an integer; got 8.0"),
    ],
)
def test_bad_settings_are_refused(settings, message):
    with pytest.raises((TypeError, ValueError), match=message):
        nn.MultiheadAttention(**settings)
    with pytest.raises(TypeError, match=r"num_layers must be an integer >= 0; got 2.5"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2.5)


# -- TransformerEncoderLayer and TransformerEncoder, torch's names and results -----------------


def _encoder_pair(make, seed=0):
    torch = _torch()
    mg.manual_seed(seed)
    ours, theirs = make(nn), make(torch.nn)
    rng = np.random.default_rng(seed)
    for p in ours.parameters():
        p.numpy()[...] = (rng.standard_normal(p.shape) * 0.3).astype(p.dtype)
    state = ours.state_dict()
    assert set(state) == set(theirs.state_dict())
    theirs.load_state_dict(
        {name: torch.from_numpy(value.numpy().copy()) for name, value in state.items()}
    )
    return ours, theirs


# nn.Transformer.generate_square_subsequent_mask
CAUSAL_FLOAT = np.triu(np.full((L, L), -np.inf, np.float32), k=1)
ENCODERS = {
    "post-norm relu, seq-first": (
        lambda nn_: nn_.TransformerEncoderLayer(E, HEADS, 16, dropout=0.0),
        (L, N, E),
        {},
    ),
    "pre-norm gelu, batch-first, causal": (
        lambda nn_: nn_.TransformerEncoderLayer(
            E, HEADS, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        ),
        (N, L, E),
        {"src_mask": CAUSAL_FLOAT, "is_causal": True},
    ),
    "padding, no bias": (
        lambda nn_: nn_.TransformerEncoderLayer(
            E, HEADS, 12, dropout=0.0, batch_first=True, bias=False
        ),
        (N, L, E),
        {"src_key_padding_mask": PADDING[:, :L]},
    ),
    "two layers and a norm": (
        lambda nn_: nn_.TransformerEncoder(
            nn_.TransformerEncoderLayer(E, HEADS, 16, dropout=0.0, batch_first=True),
            2,
            norm=nn_.LayerNorm(E),
        ),
        (N, L, E),
        {"mask": CAUSAL_FLOAT, "src_key_padding_mask": PADDING[:, :L]},
    ),
}


# torch's notes on nested tensors and mixed mask types
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", ENCODERS)
def test_encoder_layers_match_torch(case):
    torch = _torch()
    make, shape, kwargs = ENCODERS[case]
    ours, theirs = _encoder_pair(make)
    x = _inputs([shape], 4)[0]
    ours_x, theirs_x = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    torch_kwargs = {
        k: (torch.from_numpy(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()
    }
    out, reference = ours(ours_x, **kwargs), theirs(theirs_x, **torch_kwargs)
    np.testing.assert_allclose(out.numpy(), reference.detach().numpy(), rtol=1e-4, atol=1e-5)
    grad = _inputs([shape], 5)[0]
    (out * mg.tensor(grad)).sum().backward()
    (reference * torch.from_numpy(grad)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_same_parameter_grads(ours, theirs, dict(rtol=1e-4, atol=1e-5))


def test_encoder_copies_are_independent_and_bad_activations_are_refused():
    layer = nn.TransformerEncoderLayer(E, HEADS, 16)
    encoder = nn.TransformerEncoder(layer, 3)
    weights = [m.self_attn.in_proj_weight for m in encoder.layers]
    assert len({id(w) for w in weights}) == 3 and all(
        w is not layer.self_attn.in_proj_weight for w in weights
    )
    assert len(list(encoder.parameters())) == 3 * len(list(layer.parameters()))
    with pytest.raises(
        ValueError, match="activation must be 'relu', 'gelu' or a function; got 'tanh'"
    ):
        nn.TransformerEncoderLayer(E, HEADS, activation="tanh")
    custom = nn.TransformerEncoderLayer(
        E, HEADS, 16, dropout=0.0, bias=False, activation=lambda x: x * 0.0
    )
    x = mg.tensor(_inputs([(L, N, E)], 6)[0])
    np.testing.assert_allclose(
        custom(x).numpy(),
        custom.norm2(custom.norm1(x + custom._attend(x, None, None, False))).numpy(),
        rtol=1e-6,
    )  # a zero feed-forward leaves the attention half


# -- TransformerDecoderLayer, TransformerDecoder and nn.Transformer --------------------------

T = 4  # target length (the source has L positions)
CAUSAL_TARGET = np.triu(np.full((T, T), -np.inf, np.float32), k=1)
TARGET_PADDING = np.zeros((N, T), bool)
TARGET_PADDING[1, 3:] = True
DECODERS = {
    "post-norm relu, seq-first": (
        lambda nn_: nn_.TransformerDecoderLayer(E, HEADS, 16, dropout=0.0),
        (T, N, E),
        (L, N, E),
        {},
    ),
    "pre-norm gelu, batch-first, causal": (
        lambda nn_: nn_.TransformerDecoderLayer(
            E, HEADS, 16, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        ),
        (N, T, E),
        (N, L, E),
        {"tgt_mask": CAUSAL_TARGET, "tgt_is_causal": True},
    ),
    "both paddings and a memory mask, no bias": (
        lambda nn_: nn_.TransformerDecoderLayer(
            E, HEADS, 12, dropout=0.0, batch_first=True, bias=False
        ),
        (N, T, E),
        (N, L, E),
        {
            "tgt_key_padding_mask": TARGET_PADDING,
            "memory_key_padding_mask": PADDING[:, :L],
            "memory_mask": FLOAT_MASK[:T, :L],
        },
    ),
    "unbatched": (
        lambda nn_: nn_.TransformerDecoderLayer(E, HEADS, 16, dropout=0.0),
        (T, E),
        (L, E),
        {"tgt_mask": CAUSAL_TARGET},
    ),
    "two layers and a norm": (
        lambda nn_: nn_.TransformerDecoder(
            nn_.TransformerDecoderLayer(E, HEADS, 16, dropout=0.0, batch_first=True),
            2,
            norm=nn_.LayerNorm(E),
        ),
        (N, T, E),
        (N, L, E),
        {"tgt_mask": CAUSAL_TARGET, "tgt_key_padding_mask": TARGET_PADDING},
    ),
    "nn.Transformer, seq-first": (
        lambda nn_: nn_.Transformer(E, HEADS, 2, 2, 16, dropout=0.0),
        (L, N, E),
        (T, N, E),
        {
            "tgt_mask": CAUSAL_TARGET,
            "src_key_padding_mask": PADDING[:, :L],
            "memory_key_padding_mask": PADDING[:, :L],
        },
    ),
    "nn.Transformer, pre-norm, batch-first": (
        lambda nn_: nn_.Transformer(
            E, HEADS, 1, 2, 12, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        ),
        (N, L, E),
        (N, T, E),
        {"tgt_mask": CAUSAL_TARGET},
    ),
}


# torch's notes on nested tensors and mixed mask types
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("case", DECODERS)
def test_decoders_and_the_transformer_match_torch(case):
    """Outputs and the gradients of both inputs and of every parameter; nn.Transformer takes
    (src, tgt), the decoders (tgt, memory)."""
    torch = _torch()
    make, first_shape, second_shape, kwargs = DECODERS[case]
    ours, theirs = _encoder_pair(make)
    arrays = _inputs([first_shape, second_shape], 7)
    our_inputs = [mg.tensor(a, requires_grad=True) for a in arrays]
    their_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    torch_kwargs = {
        k: (torch.from_numpy(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()
    }
    out, reference = ours(*our_inputs, **kwargs), theirs(*their_inputs, **torch_kwargs)
    np.testing.assert_allclose(out.numpy(), reference.detach().numpy(), rtol=1e-4, atol=1e-5)
    grad = _inputs([out.shape], 8)[0]
    (out * mg.tensor(grad)).sum().backward()
    (reference * torch.from_numpy(grad)).sum().backward()
    for ours_x, theirs_x in zip(our_inputs, their_inputs):
        np.testing.assert_allclose(ours_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_same_parameter_grads(ours, theirs, dict(rtol=1e-4, atol=1e-5))


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch's note on nested tensors
def test_transformer_names_init_and_causal_mask_are_torchs():
    torch = _torch()
    ours, theirs = nn.Transformer(E, HEADS, 2, 3, 16), torch.nn.Transformer(E, HEADS, 2, 3, 16)
    assert [(name, p.shape) for name, p in ours.named_parameters()] == [
        (name, tuple(p.shape)) for name, p in theirs.named_parameters()
    ]
    bound = np.sqrt(6 / (E + 3 * E))  # xavier_uniform_ of in_proj_weight (3E, E)
    weight = ours.decoder.layers[2].multihead_attn.in_proj_weight.numpy()
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.8 * bound
    assert not np.array_equal(weight, ours.decoder.layers[1].multihead_attn.in_proj_weight.numpy())
    for size in (0, 1, 5):
        np.testing.assert_array_equal(
            nn.Transformer.generate_square_subsequent_mask(size).numpy(),
            torch.nn.Transformer.generate_square_subsequent_mask(size).numpy(),
        )
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=mg.float64).dtype == mg.float64


def test_transformer_refuses_mismatched_inputs():
    model = nn.Transformer(E, HEADS, 1, 1, 16, batch_first=True)
    with pytest.raises(
        ShapeError,
        match=r"src and tgt must have the same batch size \(axis 0\); "
        r"got shapes \(3, 5, 8\) and \(2, 4, 8\)",
    ):
        model(mg.zeros(3, 5, E), mg.zeros(2, 4, E))
    with pytest.raises(ShapeError, match="src and tgt must have d_model=8 features"):
        model(mg.zeros(3, 5, E), mg.zeros(3, 4, 6))
    with pytest.raises(TypeError, match="tgt must be a Tensor; got ndarray"):
        model(mg.zeros(3, 5, E), np.zeros((3, 4, E)))
    with pytest.raises(ValueError, match="sz must be an integer >= 0; got -1"):
        nn.Transformer.generate_square_subsequent_mask(-1)
    with pytest.raises(
        TypeError, match="TransformerDecoder: decoder_layer must be a Module; got str"
    ):
        nn.TransformerDecoder("layer", 2)
    with pytest.raises(
        ValueError, match="TransformerDecoderLayer: activation must be 'relu', 'gelu' or a function"
    ):
        nn.TransformerDecoderLayer(E, HEADS, activation="elu")
