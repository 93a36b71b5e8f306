"""A parity sweep of the Transformer-related API against PyTorch, written as a PyTorch user writes
code: the torch-layout Transformer modules (nn/transformer.py), MultiheadAttention, and what a
Transformer's training uses with them: optimizers and schedules, gradient clipping, Dropout in
eval, train()/eval() and parameter order; plus hostile inputs (wrong shapes, dtypes, empty
batches, bad masks), where minigrad must raise what torch code catches with a message that names
what was expected and what was given, or give torch's result where torch succeeds. (The
sweep's LayerNorm cases are in test_normalization.py, its GELU cases in test_activation.py, its
F.scaled_dot_product_attention cases in tests/ops/test_attention.py, its Embedding cases in
test_embedding.py and tests/ops/test_lookup.py.)

Every comparison copies the parameters by name (minigrad state_dict -> torch) and compares the
forward values and the gradients of one scalar (a random weighting of the output, so that gradients
through LayerNorm are not trivially 0). The few tests marked xfail(strict=True) are known
differences from torch, each with its reason (README, "Coming from PyTorch").
"""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

import minigrad as mg  # noqa: E402
import minigrad.nn.functional as F  # noqa: E402
from layer_checks import TF, copy_to_torch, weighting  # noqa: E402
from minigrad import nn  # noqa: E402
from parity import assert_close, assert_same_parameter_grads  # noqa: E402
from parity import raises_like_torch, tolerance, torch_dtype  # noqa: E402

# =====================================================================================
# LayerNorm


# =====================================================================================
# GELU


# =====================================================================================
# TransformerEncoderLayer / TransformerEncoder / TransformerDecoderLayer / Transformer

D_MODEL, NHEAD, FF, SEQ, BATCH, TGT = 8, 2, 16, 5, 3, 4


def _gelu_callable_ours(x):
    return F.gelu(x, approximate="tanh")


def _gelu_callable_theirs(x):
    return TF.gelu(x, approximate="tanh")


ACTIVATIONS = {
    "relu": ("relu", "relu"),
    "gelu": ("gelu", "gelu"),
    "callable": (_gelu_callable_ours, _gelu_callable_theirs),
    "F.relu": (F.relu, TF.relu),
}


def _masks(kind, length, sources, dtype, batch=BATCH, nhead=NHEAD):
    """(ours, theirs) attn masks of a kind; None for 'none'."""
    rng = np.random.default_rng(7)
    if kind == "none":
        return None, None
    if kind == "causal_float":
        m = np.triu(np.full((length, sources), -np.inf, dtype), k=1)
    elif kind == "causal_bool":
        m = np.triu(np.ones((length, sources), bool), k=1)
    elif kind == "random_float":
        m = rng.standard_normal((length, sources)).astype(dtype)
    elif kind == "random_bool":
        m = rng.random((length, sources)) < 0.3
        m[:, 0] = False
    elif kind == "per_head_bool":
        m = rng.random((batch * nhead, length, sources)) < 0.3
        m[..., 0] = False
    elif kind == "per_head_float":
        m = rng.standard_normal((batch * nhead, length, sources)).astype(dtype)
    else:
        raise AssertionError(kind)
    return mg.tensor(m), torch.from_numpy(m.copy())


def _padding(kind, batch, sources, dtype):
    if kind == "none":
        return None, None
    m = np.zeros((batch, sources), bool)
    m[0, sources - 2 :] = True
    m[-1, 1:] = True
    if kind == "float":
        m = np.where(m, -np.inf, 0.0).astype(dtype)
    elif kind == "float_finite":
        m = np.where(m, -1e4, 0.5).astype(dtype)
    return mg.tensor(m), torch.from_numpy(m.copy())


def _layout(x, batch_first):
    """(S, N, E) array -> the layout the module takes."""
    return np.ascontiguousarray(x.transpose(1, 0, 2)) if batch_first else x


def _run_pair(ours, theirs, arrays, call_ours, call_theirs, dtype, train=True, check_inputs=True):
    """Run both on the same arrays, compare the outputs and the gradients of sum(out * w)."""
    ours.train(train)
    theirs.train(train)
    xs_m = [mg.tensor(a, requires_grad=True) for a in arrays]
    xs_t = [torch.tensor(a, requires_grad=True) for a in arrays]
    ym, yt = call_ours(*xs_m), call_theirs(*xs_t)
    assert_close(ym, yt, tolerance("transformer", dtype), "output")
    w = weighting(tuple(yt.shape), dtype)
    (ym * mg.tensor(w)).sum().backward()
    (yt * torch.from_numpy(w)).sum().backward()
    if check_inputs:
        for a, b in zip(xs_m, xs_t):
            assert_close(a.grad, b.grad, tolerance("transformer gradient", dtype), "input grad")
    assert_same_parameter_grads(ours, theirs, tolerance("transformer gradient", dtype))
    return ym, yt


ENC_CASES = [
    # batch_first, norm_first, activation, src_mask kind, padding kind, is_causal, dtype
    (False, False, "relu", "none", "none", False, np.float32),
    (True, False, "relu", "none", "none", False, np.float32),
    (False, True, "gelu", "none", "none", False, np.float32),
    (True, True, "gelu", "causal_float", "none", False, np.float32),
    (True, True, "gelu", "causal_float", "none", True, np.float32),
    (False, False, "relu", "causal_bool", "none", True, np.float32),
    (True, False, "callable", "random_float", "bool", False, np.float32),
    (False, True, "F.relu", "random_bool", "bool", False, np.float32),
    (True, False, "relu", "none", "bool", False, np.float32),
    (True, False, "relu", "none", "float", False, np.float32),
    (False, True, "gelu", "none", "float_finite", False, np.float32),
    (True, True, "relu", "per_head_bool", "none", False, np.float32),
    (False, False, "gelu", "per_head_float", "bool", False, np.float32),
    (True, False, "gelu", "causal_float", "bool", True, np.float64),
    (False, True, "relu", "random_bool", "float", False, np.float64),
    (True, True, "callable", "none", "none", False, np.float64),
]


def _encoder_layer_pair(bf, nf, act, dtype, seed=0, bias=True, eps=1e-5):
    a_ours, a_theirs = ACTIVATIONS[act]
    mg.manual_seed(seed)
    ours = nn.TransformerEncoderLayer(
        D_MODEL,
        NHEAD,
        FF,
        dropout=0.0,
        activation=a_ours,
        batch_first=bf,
        norm_first=nf,
        dtype=dtype,
        bias=bias,
        layer_norm_eps=eps,
    )
    theirs = torch.nn.TransformerEncoderLayer(
        D_MODEL,
        NHEAD,
        FF,
        dropout=0.0,
        activation=a_theirs,
        batch_first=bf,
        norm_first=nf,
        dtype=torch_dtype(dtype),
        bias=bias,
        layer_norm_eps=eps,
    )
    copy_to_torch(ours, theirs, randomize=0.5, seed=seed)
    return ours, theirs


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("bf,nf,act,mask,pad,causal,dtype", ENC_CASES)
def test_encoder_layer_matches_torch(bf, nf, act, mask, pad, causal, dtype, train):
    ours, theirs = _encoder_layer_pair(bf, nf, act, dtype)
    x = _layout(np.random.default_rng(2).standard_normal((SEQ, BATCH, D_MODEL)).astype(dtype), bf)
    mm, mt = _masks(mask, SEQ, SEQ, dtype)
    pm, pt = _padding(pad, BATCH, SEQ, dtype)
    _run_pair(
        ours,
        theirs,
        [x],
        lambda s: ours(s, src_mask=mm, src_key_padding_mask=pm, is_causal=causal),
        lambda s: theirs(s, src_mask=mt, src_key_padding_mask=pt, is_causal=causal),
        dtype,
        train=train,
    )


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("unbatched", [False, True])
def test_encoder_layer_bias_and_unbatched_match_torch(bias, unbatched):
    ours, theirs = _encoder_layer_pair(True, False, "relu", np.float64, bias=bias, eps=1e-3)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    shape = (SEQ, D_MODEL) if unbatched else (BATCH, SEQ, D_MODEL)
    x = np.random.default_rng(2).standard_normal(shape)
    _run_pair(ours, theirs, [x], ours, theirs, np.float64)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("bf", [False, True])
@pytest.mark.parametrize("final_norm", [False, True])
@pytest.mark.parametrize(
    "causal_arg,mask_kind",
    [
        (None, "causal_float"),
        (True, "causal_float"),
        (False, "causal_float"),
        (None, "none"),
        (False, "none"),
        (None, "causal_bool"),
        (None, "random_float"),
    ],
)
def test_encoder_stack_matches_torch(bf, final_norm, causal_arg, mask_kind):
    # (True, "none") raises in both: test_is_causal_without_mask_raises
    dtype = np.float64
    ours_layer, theirs_layer = _encoder_layer_pair(bf, False, "gelu", dtype)
    ours = nn.TransformerEncoder(
        ours_layer,
        2,
        norm=nn.LayerNorm(D_MODEL, dtype=dtype) if final_norm else None,
        enable_nested_tensor=False,
    )
    theirs = torch.nn.TransformerEncoder(
        theirs_layer,
        2,
        norm=torch.nn.LayerNorm(D_MODEL, dtype=torch.float64) if final_norm else None,
        enable_nested_tensor=False,
    )
    copy_to_torch(ours, theirs, randomize=0.4, seed=5)
    x = _layout(np.random.default_rng(2).standard_normal((SEQ, BATCH, D_MODEL)), bf)
    mm, mt = _masks(mask_kind, SEQ, SEQ, dtype)
    pm, pt = _padding("bool", BATCH, SEQ, dtype)
    _run_pair(
        ours,
        theirs,
        [x],
        lambda s: ours(s, mask=mm, src_key_padding_mask=pm, is_causal=causal_arg),
        lambda s: theirs(s, mask=mt, src_key_padding_mask=pt, is_causal=causal_arg),
        dtype,
    )


def _causal_float(n, dtype=np.float32):
    return np.triu(np.full((n, n), -np.inf, dtype), k=1)


def _causal_but_one(n):
    mask = _causal_float(n)
    mask[0, -1] = 0.0
    return mask


CAUSAL_DETECTION_MASKS = {
    "causal float": _causal_float,
    "causal float64": lambda n: _causal_float(n, np.float64),
    "causal bool": lambda n: np.triu(np.ones((n, n), bool), k=1),
    "causal but one": _causal_but_one,
    "zeros": lambda n: np.zeros((n, n), np.float32),
    "causal per head": lambda n: np.repeat(_causal_float(n)[None], BATCH * NHEAD, axis=0),
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kind", list(CAUSAL_DETECTION_MASKS))
@pytest.mark.parametrize("stack", ["encoder", "decoder"])
def test_is_causal_none_is_detected_from_the_mask_as_torch(monkeypatch, stack, kind, batch_first):
    """TransformerEncoder(is_causal=None) / TransformerDecoder(tgt_is_causal=None): the layers get
    is_causal=True exactly when torch's detection says so (the mask is the (T, T) causal mask), and
    then the fused kernel applies the triangle: no mask reaches scaled_dot_product_attention."""
    from torch.nn.modules.transformer import _detect_is_causal_mask

    length = SEQ if stack == "encoder" else TGT
    mask = CAUSAL_DETECTION_MASKS[kind](length)
    expected = _detect_is_causal_mask(torch.from_numpy(mask), None, length)
    self_attention_calls = []
    sdpa = F.scaled_dot_product_attention

    def recording(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kwargs):
        if len(self_attention_calls) == 0:  # the first layer's self-attention
            self_attention_calls.append((attn_mask is None, is_causal))
        return sdpa(
            q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, **kwargs
        )

    monkeypatch.setattr(F, "scaled_dot_product_attention", recording)
    layout = (BATCH, length, D_MODEL) if batch_first else (length, BATCH, D_MODEL)
    mask = mg.tensor(mask)
    if stack == "encoder":
        layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=batch_first)
        nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)(mg.randn(*layout), mask=mask)
    else:
        layer = nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=batch_first)
        memory = mg.randn(*((BATCH, SEQ, D_MODEL) if batch_first else (SEQ, BATCH, D_MODEL)))
        nn.TransformerDecoder(layer, 1)(mg.randn(*layout), memory, tgt_mask=mask)
    assert self_attention_calls == [(expected, expected)]


@pytest.mark.parametrize("flag", [True, False])
def test_encoder_enable_nested_tensor_and_mask_check_accepted(flag):
    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=flag, mask_check=flag)
    assert enc(mg.randn(2, 3, D_MODEL)).shape == (2, 3, D_MODEL)


def test_encoder_copies_are_independent():
    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0)
    enc = nn.TransformerEncoder(layer, 3)
    ids = {id(p) for p in enc.parameters()}
    assert len(ids) == 3 * len(list(layer.parameters()))
    assert not ids & {id(p) for p in layer.parameters()}
    before = enc.layers[1].linear1.weight.numpy().copy()
    with mg.no_grad():
        enc.layers[0].linear1.weight.mul_(2.0)
        layer.linear1.weight.mul_(3.0)
    np.testing.assert_array_equal(enc.layers[1].linear1.weight.numpy(), before)
    # like torch: the copies start equal (deep copies of one layer)
    np.testing.assert_array_equal(
        enc.layers[1].linear1.weight.numpy(), enc.layers[2].linear1.weight.numpy()
    )
    tenc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF), 3)
    assert list(enc.state_dict()) == list(tenc.state_dict())
    assert [n for n, _ in enc.named_parameters()] == [n for n, _ in tenc.named_parameters()]


DEC_CASES = [
    # batch_first, norm_first, activation, tgt_mask kind, memory_mask kind, tgt pad, memory pad,
    # tgt_is_causal, dtype
    (False, False, "relu", "none", "none", "none", "none", False, np.float32),
    (True, True, "gelu", "causal_float", "none", "none", "none", True, np.float32),
    (False, False, "callable", "causal_bool", "random_float", "bool", "bool", False, np.float32),
    (True, False, "relu", "causal_float", "random_bool", "float", "bool", True, np.float64),
    (False, True, "gelu", "none", "none", "bool", "float", False, np.float64),
]


def _decoder_layer_pair(bf, nf, act, dtype, seed=0):
    a_ours, a_theirs = ACTIVATIONS[act]
    ours = nn.TransformerDecoderLayer(
        D_MODEL,
        NHEAD,
        FF,
        dropout=0.0,
        activation=a_ours,
        batch_first=bf,
        norm_first=nf,
        dtype=dtype,
    )
    theirs = torch.nn.TransformerDecoderLayer(
        D_MODEL,
        NHEAD,
        FF,
        dropout=0.0,
        activation=a_theirs,
        batch_first=bf,
        norm_first=nf,
        dtype=torch_dtype(dtype),
    )
    copy_to_torch(ours, theirs, randomize=0.5, seed=seed)
    return ours, theirs


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("stack", [False, True])
@pytest.mark.parametrize("bf,nf,act,tmask,mmask,tpad,mpad,causal,dtype", DEC_CASES)
def test_decoder_matches_torch(bf, nf, act, tmask, mmask, tpad, mpad, causal, dtype, stack):
    ours, theirs = _decoder_layer_pair(bf, nf, act, dtype)
    if stack:
        ours = nn.TransformerDecoder(ours, 2, norm=nn.LayerNorm(D_MODEL, dtype=dtype))
        theirs = torch.nn.TransformerDecoder(
            theirs, 2, norm=torch.nn.LayerNorm(D_MODEL, dtype=torch_dtype(dtype))
        )
        copy_to_torch(ours, theirs, randomize=0.4, seed=3)
    rng = np.random.default_rng(4)
    tgt = _layout(rng.standard_normal((TGT, BATCH, D_MODEL)).astype(dtype), bf)
    memory = _layout(rng.standard_normal((SEQ, BATCH, D_MODEL)).astype(dtype), bf)
    tm_m, tm_t = _masks(tmask, TGT, TGT, dtype)
    mm_m, mm_t = _masks(mmask, TGT, SEQ, dtype)
    tp_m, tp_t = _padding(tpad, BATCH, TGT, dtype)
    mp_m, mp_t = _padding(mpad, BATCH, SEQ, dtype)
    kw = dict(tgt_is_causal=causal)

    def call(module, m):
        return lambda t, mem: module(
            t,
            mem,
            tgt_mask=m[0],
            memory_mask=m[1],
            tgt_key_padding_mask=m[2],
            memory_key_padding_mask=m[3],
            **kw,
        )

    _run_pair(
        ours,
        theirs,
        [tgt, memory],
        call(ours, (tm_m, mm_m, tp_m, mp_m)),
        call(theirs, (tm_t, mm_t, tp_t, mp_t)),
        dtype,
    )


TRANSFORMER_CASES = [
    # batch_first, norm_first, activation, with causal tgt mask, paddings, dtype, unbatched
    (False, False, "relu", False, False, np.float32, False),
    (True, False, "gelu", True, True, np.float32, False),
    (False, True, "callable", True, True, np.float64, False),
    (True, True, "relu", True, False, np.float64, True),
]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("bf,nf,act,causal,pads,dtype,unbatched", TRANSFORMER_CASES)
def test_transformer_matches_torch(bf, nf, act, causal, pads, dtype, unbatched):
    a_ours, a_theirs = ACTIVATIONS[act]
    ours = nn.Transformer(
        D_MODEL,
        NHEAD,
        2,
        2,
        FF,
        dropout=0.0,
        activation=a_ours,
        batch_first=bf,
        norm_first=nf,
        dtype=dtype,
    )
    theirs = torch.nn.Transformer(
        D_MODEL,
        NHEAD,
        2,
        2,
        FF,
        dropout=0.0,
        activation=a_theirs,
        batch_first=bf,
        norm_first=nf,
        dtype=torch_dtype(dtype),
    )
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    copy_to_torch(ours, theirs, randomize=0.4, seed=9)
    rng = np.random.default_rng(4)
    src = _layout(rng.standard_normal((SEQ, BATCH, D_MODEL)).astype(dtype), bf)
    tgt = _layout(rng.standard_normal((TGT, BATCH, D_MODEL)).astype(dtype), bf)
    if unbatched:
        src, tgt = src[0], tgt[0]
    kw_m, kw_t = {}, {}
    if causal:
        kw_m["tgt_mask"] = nn.Transformer.generate_square_subsequent_mask(TGT, dtype=dtype)
        kw_t["tgt_mask"] = torch.nn.Transformer.generate_square_subsequent_mask(
            TGT, dtype=torch_dtype(dtype)
        )
        kw_m["tgt_is_causal"] = kw_t["tgt_is_causal"] = True
    if pads and not unbatched:
        kw_m["src_key_padding_mask"], kw_t["src_key_padding_mask"] = _padding(
            "bool", BATCH, SEQ, dtype
        )
        kw_m["memory_key_padding_mask"], kw_t["memory_key_padding_mask"] = _padding(
            "bool", BATCH, SEQ, dtype
        )
        kw_m["tgt_key_padding_mask"], kw_t["tgt_key_padding_mask"] = _padding(
            "bool", BATCH, TGT, dtype
        )
    _run_pair(
        ours,
        theirs,
        [src, tgt],
        lambda s, t: ours(s, t, **kw_m),
        lambda s, t: theirs(s, t, **kw_t),
        dtype,
    )


@pytest.mark.parametrize("sz", [0, 1, 2, 5])
@pytest.mark.parametrize("dtype", [None, np.float32, np.float64])
def test_generate_square_subsequent_mask_matches_torch(sz, dtype):
    ours = nn.Transformer.generate_square_subsequent_mask(
        sz, **({} if dtype is None else {"dtype": dtype})
    )
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(
        sz, **({} if dtype is None else {"dtype": torch_dtype(dtype)})
    )
    assert ours.dtype == np.dtype(str(theirs.dtype).replace("torch.", ""))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert not ours.requires_grad
    # also reachable from an instance, as in torch
    assert np.array_equal(
        nn.Transformer(D_MODEL, NHEAD, 1, 1, FF).generate_square_subsequent_mask(sz).numpy(),
        torch.nn.Transformer.generate_square_subsequent_mask(sz).numpy(),
    )


def test_generate_square_subsequent_mask_bool_dtype_matches_torch():
    ours = nn.Transformer.generate_square_subsequent_mask(3, dtype=mg.bool)
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.bool)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_transformer_layers_default_dropout_and_train_eval_propagate():
    ours, theirs = (
        nn.Transformer(D_MODEL, NHEAD, 1, 1, FF),
        torch.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF),
    )
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    ours.eval()
    assert all(not m.training for m in ours.modules())
    ours.train()
    assert all(m.training for m in ours.modules())
    ours.encoder.layers[0].train(False)
    assert all(not m.training for m in ours.encoder.layers[0].modules())
    assert ours.decoder.training and ours.training
    assert ours.encoder.layers[0].dropout.p == theirs.encoder.layers[0].dropout.p == 0.1


@pytest.mark.filterwarnings("ignore")
def test_transformer_eval_mode_dropout_is_identity():
    """dropout=0.5 in eval(): the same output as torch's in eval (dropout off), twice in a row."""
    ours, theirs = _encoder_layer_pair(True, False, "relu", np.float64)
    ours2 = nn.TransformerEncoderLayer(
        D_MODEL, NHEAD, FF, dropout=0.5, batch_first=True, dtype=np.float64
    )
    ours2.load_state_dict(ours.state_dict())
    ours2.eval()
    theirs.eval()
    x = np.random.default_rng(0).standard_normal((BATCH, SEQ, D_MODEL))
    a = ours2(mg.tensor(x)).numpy()
    b = ours2(mg.tensor(x)).numpy()
    np.testing.assert_array_equal(a, b)
    with torch.no_grad():
        np.testing.assert_allclose(a, theirs(torch.tensor(x)).numpy(), rtol=1e-10, atol=1e-10)


def test_is_causal_without_mask_raises():
    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0)
    tlayer = torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0)
    raises_like_torch(
        lambda: layer(mg.randn(SEQ, BATCH, D_MODEL), is_causal=True),
        lambda: tlayer(torch.randn(SEQ, BATCH, D_MODEL), is_causal=True),
        ("attn_mask",),
    )


@pytest.mark.parametrize("shape", [(SEQ, 0, D_MODEL), (0, BATCH, D_MODEL)])
def test_encoder_layer_empty_inputs_match_torch(shape):
    ours, theirs = _encoder_layer_pair(False, False, "relu", np.float32)
    xm, xt = mg.zeros(*shape, requires_grad=True), torch.zeros(*shape, requires_grad=True)
    ym, yt = ours(xm), theirs(xt)
    assert ym.shape == tuple(yt.shape)
    ym.sum().backward()
    yt.sum().backward()
    assert xm.grad is not None and xm.grad.shape == tuple(xt.grad.shape)
    assert_same_parameter_grads(ours, theirs, dict(rtol=1e-5, atol=1e-6))


def _enc_pair_plain():
    return (
        nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0),
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0),
    )


# label, call(module, framework) -> result, words the message must name. Expected: both raise.
ENC_HOSTILE = [
    (
        "src_mask of wrong shape",
        lambda m, T: m(T.zeros(SEQ, BATCH, D_MODEL), src_mask=T.zeros(4, 4)),
        ("(4, 4)",),
    ),
    (
        "3-D src_mask of wrong batch",
        lambda m, T: m(T.zeros(SEQ, BATCH, D_MODEL), src_mask=T.zeros(3, SEQ, SEQ)),
        ("(3, 5, 5)",),
    ),
    (
        "1-D src_mask",
        lambda m, T: m(T.zeros(SEQ, BATCH, D_MODEL), src_mask=T.zeros(SEQ)),
        ("(5,)",),
    ),
    (
        "4-D src_mask",
        lambda m, T: m(T.zeros(SEQ, BATCH, D_MODEL), src_mask=T.zeros(BATCH, NHEAD, SEQ, SEQ)),
        ("(3, 2, 5, 5)",),
    ),
    (
        "padding mask transposed",
        lambda m, T: m(
            T.zeros(SEQ, BATCH, D_MODEL), src_key_padding_mask=T.zeros(SEQ, BATCH, dtype=T.bool)
        ),
        ("(5, 3)",),
    ),
    (
        "int64 src_mask",
        lambda m, T: m(T.zeros(SEQ, BATCH, D_MODEL), src_mask=T.zeros(SEQ, SEQ, dtype=T.int64)),
        ("int64",),
    ),
    (
        "int64 padding mask",
        lambda m, T: m(
            T.zeros(SEQ, BATCH, D_MODEL), src_key_padding_mask=T.zeros(BATCH, SEQ, dtype=T.int64)
        ),
        ("int64",),
    ),
    ("wrong d_model", lambda m, T: m(T.zeros(SEQ, BATCH, D_MODEL - 1)), ("7",)),
    ("4-D input", lambda m, T: m(T.zeros(2, SEQ, BATCH, D_MODEL)), ("(2, 5, 3, 8)",)),
    ("int64 input", lambda m, T: m(T.zeros(SEQ, BATCH, D_MODEL, dtype=T.int64)), ("int64",)),
    (
        "float64 input to float32 layer",
        lambda m, T: m(T.zeros(SEQ, BATCH, D_MODEL, dtype=T.float64)),
        ("float64", "float32"),
    ),
    (
        "float64 mask with float32 input",
        lambda m, T: m(T.zeros(SEQ, BATCH, D_MODEL), src_mask=T.zeros(SEQ, SEQ, dtype=T.float64)),
        ("float64",),
    ),
]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("label,call,words", ENC_HOSTILE, ids=[c[0] for c in ENC_HOSTILE])
def test_encoder_layer_hostile_inputs_raise(label, call, words):
    """torch raises (RuntimeError or AssertionError); minigrad raises a RuntimeError (what torch
    code
    catches for shape/dtype mistakes) naming the offending shape or dtype."""
    ours, theirs = _enc_pair_plain()
    raises_like_torch(
        lambda: call(ours, mg), lambda: call(theirs, torch), words, expected=RuntimeError
    )


MASK_DTYPES = ["none", "bool", "float32", "float64"]


def _raises(call):
    try:
        call()
    except Exception:
        return True
    return False


def _same_outcome_as_torch(ours_call, torch_call, kinds, dtype):
    """torch raises: ours raises a RuntimeError naming a mask's float dtype that is not the query's;
    else the same values."""
    if _raises(torch_call):
        words = [
            kind for kind in kinds if kind.startswith("float") and kind != np.dtype(dtype).name
        ]
        raises_like_torch(ours_call, torch_call, words[:1], expected=RuntimeError)
    else:
        assert_close(ours_call(), torch_call(), tolerance("transformer", dtype))


def _mask_of(kind, shape, T, seed):
    """A mask of shape in a dtype kind for framework T: bool (True = masked) or small floats."""
    rng = np.random.default_rng(seed)
    if kind == "none":
        return None
    if kind == "bool":
        masked = rng.random(shape) < 0.3
        masked[..., 0] = False  # every query keeps a key
        return T.tensor(masked)
    return T.tensor(rng.standard_normal(shape).astype(kind))


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("need", [False, True])
@pytest.mark.parametrize("padding", MASK_DTYPES)
@pytest.mark.parametrize("attn", MASK_DTYPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_multihead_attention_mask_dtypes_as_torch(dtype, attn, padding, need):
    """torch: the float mask that attn_mask and key_padding_mask make (a bool one taken as the
    query's dtype) must have the query's dtype, or be float32 with need_weights=False."""
    ours, theirs = _mha_pair(dict(batch_first=True), dtype)
    x = np.random.default_rng(4).standard_normal((N, L, E)).astype(dtype)

    def call(module, T):
        xs = T.tensor(x)
        return module(
            xs,
            xs,
            xs,
            attn_mask=_mask_of(attn, (L, L), T, 1),
            key_padding_mask=_mask_of(padding, (N, L), T, 2),
            need_weights=need,
        )[0]

    _same_outcome_as_torch(
        lambda: call(ours, mg), lambda: call(theirs, torch), (attn, padding), dtype
    )


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("padding", MASK_DTYPES)
@pytest.mark.parametrize("src_mask", MASK_DTYPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_encoder_layer_mask_dtypes_as_torch(dtype, src_mask, padding):
    ours, theirs = _encoder_layer_pair(True, False, "relu", dtype)
    x = np.random.default_rng(4).standard_normal((BATCH, SEQ, D_MODEL)).astype(dtype)

    def call(module, T):
        return module(
            T.tensor(x),
            src_mask=_mask_of(src_mask, (SEQ, SEQ), T, 1),
            src_key_padding_mask=_mask_of(padding, (BATCH, SEQ), T, 2),
        )

    _same_outcome_as_torch(
        lambda: call(ours, mg), lambda: call(theirs, torch), (src_mask, padding), dtype
    )


@pytest.mark.parametrize("mask", MASK_DTYPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sdpa_mask_dtypes_as_torch(dtype, mask):
    """torch.nn.functional's meaning: bool True = may attend; a float mask is float32 or has the
    query's dtype."""
    q = np.random.default_rng(0).standard_normal((2, 4, 8)).astype(dtype)

    def call(T, sdpa):
        allowed = _mask_of(mask, (4, 4), T, 1)
        allowed = ~allowed if mask == "bool" else allowed
        return sdpa(T.tensor(q), T.tensor(q), T.tensor(q), attn_mask=allowed)

    _same_outcome_as_torch(
        lambda: call(mg, F.scaled_dot_product_attention),
        lambda: call(torch, TF.scaled_dot_product_attention),
        (mask,),
        dtype,
    )


def test_sdpa_float32_mask_with_float64_inputs_gets_its_gradient_as_torch():
    rng = np.random.default_rng(0)
    q, mask = rng.standard_normal((2, 4, 8)), rng.standard_normal((4, 4)).astype(np.float32)
    qm, mm = mg.tensor(q, requires_grad=True), mg.tensor(mask, requires_grad=True)
    qt, mt = torch.tensor(q, requires_grad=True), torch.tensor(mask, requires_grad=True)
    ym, yt = (
        F.scaled_dot_product_attention(qm, qm, qm, attn_mask=mm),
        TF.scaled_dot_product_attention(qt, qt, qt, attn_mask=mt),
    )
    assert ym.dtype == np.float64
    w = weighting(tuple(yt.shape), np.float64)
    (ym * mg.tensor(w)).sum().backward()
    (yt * torch.from_numpy(w)).sum().backward()
    assert_close(ym, yt, tolerance("transformer", np.float64))
    assert_close(qm.grad, qt.grad, tolerance("transformer gradient", np.float64), "query grad")
    assert mm.grad.dtype == np.float32
    assert_close(mm.grad, mt.grad, tolerance("transformer gradient", np.float32), "mask grad")


def test_bad_activation_raises_like_torch():
    raises_like_torch(
        lambda: nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation="tanh"),
        lambda: torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation="tanh"),
        ("tanh",),
    )


def test_bad_activation_is_clear():
    with pytest.raises(ValueError, match="'relu', 'gelu'.*'tanh'"):
        nn.TransformerEncoderLayer(D_MODEL, NHEAD, activation="tanh")
    with pytest.raises(ValueError, match="'relu', 'gelu'.*'tanh'"):
        nn.TransformerDecoderLayer(D_MODEL, NHEAD, activation="tanh")


def test_transformer_hostile_inputs_raise_like_torch():
    ours, theirs = (
        nn.Transformer(D_MODEL, NHEAD, 1, 1, FF),
        torch.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF),
    )
    raises_like_torch(
        lambda: ours(mg.zeros(SEQ, 3, D_MODEL), mg.zeros(TGT, 2, D_MODEL)),
        lambda: theirs(torch.zeros(SEQ, 3, D_MODEL), torch.zeros(TGT, 2, D_MODEL)),
        ("3", "2"),
    )
    raises_like_torch(
        lambda: ours(mg.zeros(SEQ, 3, 7), mg.zeros(TGT, 3, D_MODEL)),
        lambda: theirs(torch.zeros(SEQ, 3, 7), torch.zeros(TGT, 3, D_MODEL)),
        ("8", "7"),
    )
    raises_like_torch(
        lambda: ours(mg.zeros(SEQ, 3, D_MODEL), mg.zeros(TGT, 3, D_MODEL), tgt_is_causal=True),
        lambda: theirs(
            torch.zeros(SEQ, 3, D_MODEL), torch.zeros(TGT, 3, D_MODEL), tgt_is_causal=True
        ),
        ("attn_mask",),
    )


def test_generate_square_subsequent_mask_negative_raises_like_torch():
    raises_like_torch(
        lambda: nn.Transformer.generate_square_subsequent_mask(-1),
        lambda: torch.nn.Transformer.generate_square_subsequent_mask(-1),
        ("-1",),
    )


def _stack_pair(layer_settings=None, stack_settings=None, heads=NHEAD):
    settings = dict(dropout=0.0, batch_first=True, **(layer_settings or {}))
    ours = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(D_MODEL, heads, FF, **settings), 2, **(stack_settings or {})
    )
    theirs = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(D_MODEL, heads, FF, **settings),
        2,
        **(stack_settings or {}),
    )
    copy_to_torch(ours, theirs, randomize=0.4)
    return ours, theirs


def _left_padded():
    pad = np.zeros((BATCH, SEQ), bool)
    pad[0, 3:] = True
    return pad


# How each setting decides torch's nested-tensor inference path (zeros at padded positions) or
# not; every case compares all positions, padded ones too.
FAST_PATH_CASES = {
    "eval, no_grad": {},
    "a row all padding": dict(
        pad=lambda: np.array([[False] * 2 + [True] * (SEQ - 2), [True] * SEQ, [False] * SEQ])
    ),
    "float padding mask": dict(float_mask=True),
    "final norm": dict(stack=dict(norm=True)),
    "gelu": dict(layer=dict(activation="gelu")),
    "grad enabled, parameters frozen": dict(grad=True, frozen=True),
    # torch declines its path: the computed vectors at padded positions, as everywhere else
    "grad enabled": dict(grad=True),
    "training": dict(train=True),
    "padding not at the end": dict(
        pad=lambda: np.array([[True, False, False, False, False]] + [[False] * SEQ] * 2)
    ),
    "padding not at the end, mask_check=False": dict(
        pad=lambda: np.array([[False, True, True, True, True], [False] * SEQ, [False] * SEQ]),
        stack=dict(mask_check=False),
    ),
    "no padding mask": dict(pad=lambda: None),
    "src_mask too": dict(src_mask=True),
    "enable_nested_tensor=False": dict(stack=dict(enable_nested_tensor=False)),
    "norm_first": dict(layer=dict(norm_first=True)),
    "odd number of heads": dict(heads=1),
}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("label", list(FAST_PATH_CASES))
def test_encoder_inference_fast_path_matches_torch_everywhere(label):
    case = FAST_PATH_CASES[label]
    stack = dict(case.get("stack", {}))
    norms = (
        (nn.LayerNorm(D_MODEL), torch.nn.LayerNorm(D_MODEL))
        if stack.pop("norm", False)
        else (None, None)
    )
    ours, theirs = _stack_pair(case.get("layer"), stack, case.get("heads", NHEAD))
    ours.norm, theirs.norm = norms
    if norms[0] is not None:
        copy_to_torch(ours.norm, theirs.norm, randomize=0.4, seed=1)
    for model in (ours, theirs):
        model.train(case.get("train", False))
        if case.get("frozen"):
            model.requires_grad_(False)
    x = np.random.default_rng(0).standard_normal((BATCH, SEQ, D_MODEL)).astype(np.float32)
    pad = case.get("pad", _left_padded)()
    if pad is not None and case.get("float_mask"):
        pad = np.where(pad, -np.inf, 0.0).astype(np.float32)
    src_mask = (
        np.triu(np.full((SEQ, SEQ), -np.inf, np.float32), 1) if case.get("src_mask") else None
    )

    def run(model, framework, grad_mode):
        def as_tensor(a):
            return None if a is None else framework.tensor(a)

        with grad_mode():
            y = model(
                framework.tensor(x), mask=as_tensor(src_mask), src_key_padding_mask=as_tensor(pad)
            )
        return y.detach().numpy()

    ym = run(ours, mg, mg.enable_grad if case.get("grad") else mg.no_grad)
    yt = run(theirs, torch, torch.enable_grad if case.get("grad") else torch.no_grad)
    # off the fast path, a row with every key padded is NaN in both
    finite = np.isfinite(yt).all(axis=-1)
    np.testing.assert_array_equal(np.isfinite(ym).all(axis=-1), finite)
    np.testing.assert_allclose(ym[finite], yt[finite], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "layer_settings",
    [
        dict(norm_first=True),
        dict(batch_first=False),
        dict(bias=False),
        dict(activation=lambda x: x),
        dict(batch_first=True),
    ],
    ids=["norm_first", "not batch_first", "bias=False", "own activation", "eligible (batch_first)"],
)
def test_encoder_warns_as_torch_when_its_layer_has_no_fast_path(layer_settings):
    import warnings

    def messages(framework):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            framework.nn.TransformerEncoder(
                framework.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, **layer_settings), 2
            )
        return [str(w.message) for w in caught if "enable_nested_tensor" in str(w.message)]

    assert messages(mg) == messages(torch)


# =====================================================================================
# MultiheadAttention

E, H, L, S, N = 8, 2, 4, 6, 3

MHA_CASES = [
    # settings, attn_mask kind, key_padding kind, need_weights, average, self-attention, dtype
    (dict(), "none", "none", True, True, True, np.float32),
    (dict(batch_first=True), "none", "none", True, False, True, np.float32),
    (dict(), "random_float", "none", True, True, False, np.float32),
    (dict(batch_first=True), "random_bool", "bool", True, False, False, np.float32),
    (dict(), "per_head_bool", "float", True, True, False, np.float32),
    (dict(batch_first=True), "per_head_float", "bool", False, True, False, np.float32),
    (dict(), "random_bool", "float_finite", False, True, False, np.float64),
    (dict(kdim=5, vdim=3), "none", "bool", True, True, False, np.float32),
    (
        dict(kdim=5, vdim=3, batch_first=True),
        "random_float",
        "none",
        False,
        True,
        False,
        np.float64,
    ),
    (dict(bias=False), "random_bool", "none", True, False, False, np.float32),
    (dict(bias=False, batch_first=True), "none", "bool", True, True, True, np.float64),
    (dict(kdim=E, vdim=5), "per_head_bool", "none", True, False, False, np.float64),
]


def _mha_pair(settings, dtype, seed=0):
    ours = nn.MultiheadAttention(E, H, dtype=dtype, **settings)
    theirs = torch.nn.MultiheadAttention(E, H, dtype=torch_dtype(dtype), **settings)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    copy_to_torch(ours, theirs, randomize=0.5, seed=seed)
    return ours, theirs


@pytest.mark.parametrize("settings,mask,pad,need,avg,same,dtype", MHA_CASES)
def test_multihead_attention_matches_torch(settings, mask, pad, need, avg, same, dtype):
    ours, theirs = _mha_pair(settings, dtype)
    bf = settings.get("batch_first", False)
    rng = np.random.default_rng(5)
    kdim, vdim = settings.get("kdim", E), settings.get("vdim", E)
    sources = L if same else S
    q = _layout(rng.standard_normal((L, N, E)).astype(dtype), bf)
    k = _layout(rng.standard_normal((sources, N, kdim)).astype(dtype), bf)
    v = _layout(rng.standard_normal((sources, N, vdim)).astype(dtype), bf)
    mm, mt = _masks(mask, L, sources, dtype, batch=N, nhead=H)
    pm, pt = _padding(pad, N, sources, dtype)
    xs_m = [mg.tensor(a, requires_grad=True) for a in (q, k, v)]
    xs_t = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    if same:
        xs_m, xs_t = xs_m[:1] * 3, xs_t[:1] * 3
    om, wm = ours(
        *xs_m, key_padding_mask=pm, need_weights=need, attn_mask=mm, average_attn_weights=avg
    )
    ot, wt = theirs(
        *xs_t, key_padding_mask=pt, need_weights=need, attn_mask=mt, average_attn_weights=avg
    )
    assert_close(om, ot, tolerance("transformer", dtype), "output")
    assert (wm is None) == (wt is None)
    if wt is not None:
        assert_close(wm, wt, tolerance("transformer", dtype), "weights")
    w = weighting(tuple(ot.shape), dtype)
    loss_m = (om * mg.tensor(w)).sum() + (
        0 if wm is None else (wm * mg.tensor(weighting(wt.shape, dtype, 9))).sum()
    )
    loss_t = (ot * torch.from_numpy(w)).sum() + (
        0 if wt is None else (wt * torch.from_numpy(weighting(wt.shape, dtype, 9))).sum()
    )
    loss_m.backward()
    loss_t.backward()
    for a, b in zip(xs_m[:1] if same else xs_m, xs_t[:1] if same else xs_t):
        assert_close(a.grad, b.grad, tolerance("transformer gradient", dtype), "input grad")
    assert_same_parameter_grads(ours, theirs, tolerance("transformer gradient", dtype))


@pytest.mark.parametrize("need", [True, False])
def test_multihead_attention_unbatched_matches_torch(need):
    ours, theirs = _mha_pair({}, np.float64)
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((L, E)), rng.standard_normal((S, E))
    pad = np.zeros(S, bool)
    pad[-2:] = True
    om, wm = ours(
        mg.tensor(q), mg.tensor(k), mg.tensor(k), key_padding_mask=mg.tensor(pad), need_weights=need
    )
    ot, wt = theirs(
        torch.tensor(q),
        torch.tensor(k),
        torch.tensor(k),
        key_padding_mask=torch.tensor(pad),
        need_weights=need,
    )
    assert_close(om, ot, tolerance("transformer", np.float64))
    if need:
        assert_close(wm, wt, tolerance("transformer", np.float64))


@pytest.mark.parametrize("need", [True, False])
def test_multihead_attention_is_causal_with_mask_matches_torch(need):
    ours, theirs = _mha_pair(dict(batch_first=True), np.float64)
    x = np.random.default_rng(1).standard_normal((N, L, E))
    cm = nn.Transformer.generate_square_subsequent_mask(L, dtype=np.float64)
    ct = torch.nn.Transformer.generate_square_subsequent_mask(L, dtype=torch.float64)
    xm, xt = mg.tensor(x), torch.tensor(x)
    om, wm = ours(xm, xm, xm, attn_mask=cm, is_causal=True, need_weights=need)
    ot, wt = theirs(xt, xt, xt, attn_mask=ct, is_causal=True, need_weights=need)
    assert_close(om, ot, tolerance("transformer", np.float64))
    if need:
        assert_close(wm, wt, tolerance("transformer", np.float64))


# settings, attn_mask kind, key_padding_mask kind, need_weights, dtype. With is_causal=True torch
# applies the causal triangle in attn_mask's place when no weights are returned and there is no
# padding mask, and attn_mask otherwise: the random masks (a wrong hint) tell the two apart.
MHA_HINT_CASES = [
    (dict(batch_first=True), "causal_float", "none", False, np.float64),
    (dict(), "causal_bool", "none", False, np.float32),
    (dict(batch_first=True), "random_bool", "none", False, np.float64),
    (dict(), "random_float", "none", False, np.float32),
    (dict(batch_first=True), "per_head_bool", "none", False, np.float64),
    (dict(), "random_bool", "none", True, np.float64),
    (dict(batch_first=True), "random_float", "none", True, np.float32),
    (dict(), "random_bool", "bool", False, np.float64),
    (dict(batch_first=True), "random_float", "float", False, np.float32),
    (dict(), "random_float", "bool", True, np.float64),
    (dict(kdim=5, vdim=3), "random_bool", "none", False, np.float64),
]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("settings,mask,pad,need,dtype", MHA_HINT_CASES)
def test_multihead_attention_is_causal_hint_follows_torch(settings, mask, pad, need, dtype):
    """Training mode (torch's path for every call that records gradients): values and gradients."""
    ours, theirs = _mha_pair(settings, dtype)
    bf = settings.get("batch_first", False)
    rng = np.random.default_rng(3)
    q = _layout(rng.standard_normal((L, N, E)).astype(dtype), bf)
    k = _layout(rng.standard_normal((L, N, settings.get("kdim", E))).astype(dtype), bf)
    v = _layout(rng.standard_normal((L, N, settings.get("vdim", E))).astype(dtype), bf)
    mm, mt = _masks(mask, L, L, dtype, batch=N, nhead=H)
    pm, pt = _padding(pad, N, L, dtype)
    arrays = [q] if "kdim" not in settings else [q, k, v]

    def call(module, padding, attn_mask):
        def run(*xs):
            query, key, value = xs * 3 if len(xs) == 1 else xs
            return module(
                query,
                key,
                value,
                key_padding_mask=padding,
                attn_mask=attn_mask,
                need_weights=need,
                is_causal=True,
            )[0]

        return run

    _run_pair(ours, theirs, arrays, call(ours, pm, mm), call(theirs, pt, mt), dtype)


@pytest.mark.parametrize("need", [False, True])
def test_multihead_attention_is_causal_hint_skips_the_mask_size_as_torch(need):
    """The mask the hint replaces is not read (torch accepts a (2, 2) mask for 4 queries there)."""
    ours, theirs = _mha_pair(dict(batch_first=True), np.float64)
    x = np.random.default_rng(1).standard_normal((N, L, E))
    small = np.zeros((2, 2), bool)

    def ours_call():
        return ours(
            mg.tensor(x),
            mg.tensor(x),
            mg.tensor(x),
            attn_mask=mg.tensor(small),
            need_weights=need,
            is_causal=True,
        )[0]

    def theirs_call():
        return theirs(
            torch.tensor(x),
            torch.tensor(x),
            torch.tensor(x),
            attn_mask=torch.tensor(small),
            need_weights=need,
            is_causal=True,
        )[0]

    if need:
        raises_like_torch(ours_call, theirs_call, ("(2, 2)",))
    else:
        assert_close(ours_call(), theirs_call(), tolerance("transformer", np.float64))


@pytest.mark.xfail(
    strict=True,
    reason="a wrong is_causal hint in torch's inference fast path (eval, no grad, "
    "batch_first self-attention, bool mask): torch applies attn_mask there and "
    "the triangle in training; minigrad applies the triangle in both",
)
def test_multihead_attention_wrong_hint_in_torch_fast_path():
    ours, theirs = _mha_pair(dict(batch_first=True), np.float32)
    ours.eval()
    theirs.eval()
    x = np.random.default_rng(1).standard_normal((N, L, E)).astype(np.float32)
    mm, mt = _masks("random_bool", L, L, np.float32)
    with torch.no_grad():
        yt = theirs(*[torch.tensor(x)] * 3, attn_mask=mt, need_weights=False, is_causal=True)[0]
    with mg.no_grad():
        ym = ours(*[mg.tensor(x)] * 3, attn_mask=mm, need_weights=False, is_causal=True)[0]
    assert_close(ym, yt, tolerance("transformer", np.float32))


@pytest.mark.parametrize("need", [True, False])
def test_multihead_attention_fully_masked_query_matches_torch(need):
    """A query row whose every key is masked: torch gives NaN (the docstring promises the same)."""
    ours, theirs = _mha_pair({}, np.float64)
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((L, N, E)), rng.standard_normal((S, N, E))
    mask = np.zeros((L, S), bool)
    mask[1] = True
    om, wm = ours(
        mg.tensor(q), mg.tensor(k), mg.tensor(k), attn_mask=mg.tensor(mask), need_weights=need
    )
    ot, wt = theirs(
        torch.tensor(q),
        torch.tensor(k),
        torch.tensor(k),
        attn_mask=torch.tensor(mask),
        need_weights=need,
    )
    np.testing.assert_array_equal(np.isnan(om.numpy()), np.isnan(ot.detach().numpy()))
    ok = ~np.isnan(ot.detach().numpy())
    np.testing.assert_allclose(om.numpy()[ok], ot.detach().numpy()[ok], rtol=1e-10, atol=1e-10)


def test_multihead_attention_eval_fast_path_matches_torch():
    """eval() + no_grad + batch_first self-attention: torch's fused fast path."""
    ours, theirs = _mha_pair(dict(batch_first=True), np.float32)
    ours.eval()
    theirs.eval()
    x = np.random.default_rng(1).standard_normal((N, L, E)).astype(np.float32)
    pad = np.zeros((N, L), bool)
    pad[0, 2:] = True
    with torch.no_grad():
        xt = torch.tensor(x)
        ot, wt = theirs(xt, xt, xt, key_padding_mask=torch.tensor(pad), need_weights=False)
    xm = mg.tensor(x)
    with mg.no_grad():
        om, wm = ours(xm, xm, xm, key_padding_mask=mg.tensor(pad), need_weights=False)
    assert wm is None and wt is None
    np.testing.assert_allclose(om.numpy(), ot.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("flag", ["add_bias_kv", "add_zero_attn"])
def test_multihead_attention_unsupported_flags_are_named(flag):
    torch.nn.MultiheadAttention(E, H, **{flag: True})  # torch has them
    with pytest.raises(ValueError, match=flag):
        nn.MultiheadAttention(E, H, **{flag: True})


def test_multihead_attention_attributes_match_torch():
    for settings in (
        dict(),
        dict(kdim=5, vdim=3),
        dict(batch_first=True, dropout=0.25, bias=False),
    ):
        ours, theirs = (
            nn.MultiheadAttention(E, H, **settings),
            torch.nn.MultiheadAttention(E, H, **settings),
        )
        for name in (
            "embed_dim",
            "num_heads",
            "head_dim",
            "kdim",
            "vdim",
            "dropout",
            "batch_first",
            "_qkv_same_embed_dim",
        ):
            assert getattr(ours, name) == getattr(theirs, name), name
        assert list(ours.state_dict()) == list(theirs.state_dict())
        for name, p in theirs.state_dict().items():
            assert ours.state_dict()[name].shape == tuple(p.shape), name


def _mha_plain():
    return nn.MultiheadAttention(E, H), torch.nn.MultiheadAttention(E, H)


MHA_HOSTILE = [
    (
        "query of wrong embed dim",
        lambda m, T: m(T.zeros(L, N, E - 1), T.zeros(S, N, E), T.zeros(S, N, E)),
        ("7",),
    ),
    (
        "key and value of different lengths",
        lambda m, T: m(T.zeros(L, N, E), T.zeros(S, N, E), T.zeros(S - 1, N, E)),
        ("(3, 6, 8)", "(3, 5, 8)"),
    ),
    (
        "key of another batch",
        lambda m, T: m(T.zeros(L, N, E), T.zeros(S, N + 1, E), T.zeros(S, N + 1, E)),
        ("4",),
    ),
    (
        "2-D attn_mask of wrong shape",
        lambda m, T: m(
            T.zeros(L, N, E), T.zeros(S, N, E), T.zeros(S, N, E), attn_mask=T.zeros(S, L)
        ),
        ("(6, 4)",),
    ),
    (
        "3-D attn_mask of wrong batch",
        lambda m, T: m(
            T.zeros(L, N, E), T.zeros(S, N, E), T.zeros(S, N, E), attn_mask=T.zeros(N, L, S)
        ),
        ("(3, 4, 6)",),
    ),
    (
        "key_padding_mask of wrong shape",
        lambda m, T: m(
            T.zeros(L, N, E),
            T.zeros(S, N, E),
            T.zeros(S, N, E),
            key_padding_mask=T.zeros(N, L, dtype=T.bool),
        ),
        ("(3, 4)",),
    ),
    (
        "int attn_mask",
        lambda m, T: m(
            T.zeros(L, N, E),
            T.zeros(S, N, E),
            T.zeros(S, N, E),
            attn_mask=T.zeros(L, S, dtype=T.int64),
        ),
        ("int64",),
    ),
    (
        "mixed batched/unbatched",
        lambda m, T: m(T.zeros(L, N, E), T.zeros(S, E), T.zeros(S, E)),
        ("(6, 8)",),
    ),
    (
        "int64 query",
        lambda m, T: m(T.zeros(L, N, E, dtype=T.int64), T.zeros(S, N, E), T.zeros(S, N, E)),
        ("int64",),
    ),
    (
        "is_causal without attn_mask",
        lambda m, T: m(T.zeros(L, N, E), T.zeros(S, N, E), T.zeros(S, N, E), is_causal=True),
        ("attn_mask",),
    ),
]


@pytest.mark.parametrize("label,call,words", MHA_HOSTILE, ids=[c[0] for c in MHA_HOSTILE])
def test_multihead_attention_hostile_inputs_raise(label, call, words):
    ours, theirs = _mha_plain()
    raises_like_torch(
        lambda: call(ours, mg), lambda: call(theirs, torch), words, expected=RuntimeError
    )


@pytest.mark.parametrize("embed_dim,num_heads", [(8, 3), (0, 1), (8, 0)])
def test_multihead_attention_bad_sizes_raise(embed_dim, num_heads):
    with pytest.raises(Exception):
        torch.nn.MultiheadAttention(embed_dim, num_heads)
    with pytest.raises(ValueError, match=f"embed_dim.*{embed_dim}|num_heads.*{num_heads}"):
        nn.MultiheadAttention(embed_dim, num_heads)


def test_multihead_attention_empty_batch_matches_torch():
    ours, theirs = _mha_pair(dict(batch_first=True), np.float32)
    xm, xt = mg.zeros(0, L, E, requires_grad=True), torch.zeros(0, L, E, requires_grad=True)
    om, wm = ours(xm, xm, xm)
    ot, wt = theirs(xt, xt, xt)
    assert om.shape == tuple(ot.shape) and wm.shape == tuple(wt.shape)
    om.sum().backward()
    ot.sum().backward()
    assert_same_parameter_grads(ours, theirs, dict(rtol=1e-6, atol=1e-6))


# =====================================================================================
# F.scaled_dot_product_attention


# =====================================================================================
# Optimizers and schedules: 20 steps on a small model, parameters after each step


def _small_models(dtype=np.float64, seed=0):
    ours = nn.Sequential(
        nn.Linear(4, 8, dtype=dtype),
        nn.GELU(),
        nn.LayerNorm(8, dtype=dtype),
        nn.Linear(8, 2, dtype=dtype),
    )
    theirs = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2)
    ).to(torch_dtype(dtype))
    copy_to_torch(ours, theirs, randomize=0.5, seed=seed)
    return ours, theirs


def _data(dtype=np.float64):
    rng = np.random.default_rng(3)
    return rng.standard_normal((16, 4)).astype(dtype), rng.standard_normal((16, 2)).astype(dtype)


def _groups(model, grouped):
    if not grouped:
        return model.parameters()
    params = list(model.parameters())
    return [
        {"params": [p for p in params if p.ndim >= 2], "weight_decay": 0.05},
        {"params": [p for p in params if p.ndim < 2], "lr": 0.02},
    ]


OPTIMIZERS = {
    "SGD": lambda O, p: O.SGD(p, lr=0.1),
    "SGD-momentum-nesterov-wd": lambda O, p: O.SGD(
        p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2
    ),
    "SGD-momentum-dampening": lambda O, p: O.SGD(p, lr=0.05, momentum=0.8, dampening=0.3),
    "SGD-maximize": lambda O, p: O.SGD(p, lr=0.01, momentum=0.5, maximize=True),
    "Adam": lambda O, p: O.Adam(p, lr=1e-2),
    "Adam-wd-amsgrad": lambda O, p: O.Adam(p, lr=1e-2, weight_decay=0.1, amsgrad=True),
    "Adam-maximize": lambda O, p: O.Adam(p, lr=1e-2, betas=(0.5, 0.9), maximize=True),
    "AdamW": lambda O, p: O.AdamW(p, lr=1e-2),
    "AdamW-custom": lambda O, p: O.AdamW(
        p, lr=3e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.3, amsgrad=True
    ),
}

SCHEDULES = {
    "none": None,
    "LambdaLR": lambda S, o: S.LambdaLR(o, lambda step: 0.9**step),
    "LambdaLR-warmup": lambda S, o: S.LambdaLR(o, lambda step: min(1.0, (step + 1) / 5)),
    "CosineAnnealingLR": lambda S, o: S.CosineAnnealingLR(
        o, T_max=8, eta_min=1e-4
    ),  # 20 steps: past T_max
    "LinearLR": lambda S, o: S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=6),
    "LinearLR-decay": lambda S, o: S.LinearLR(o, start_factor=1.0, end_factor=0.05, total_iters=30),
    "SequentialLR": lambda S, o: S.SequentialLR(
        o,
        [S.LinearLR(o, start_factor=0.1, total_iters=5), S.CosineAnnealingLR(o, T_max=15)],
        milestones=[5],
    ),
    "OneCycleLR": lambda S, o: S.OneCycleLR(o, max_lr=0.05, total_steps=20),
    "OneCycleLR-3phase-linear": lambda S, o: S.OneCycleLR(
        o,
        max_lr=[0.05, 0.08] if len(o.param_groups) == 2 else 0.05,
        total_steps=25,
        pct_start=0.25,
        anneal_strategy="linear",
        three_phase=True,
        div_factor=10,
        final_div_factor=100,
    ),
    "OneCycleLR-epochs": lambda S, o: S.OneCycleLR(
        o, max_lr=0.03, epochs=4, steps_per_epoch=5, cycle_momentum=False
    ),
}

OPT_SCHED_CASES = (
    [(o, s, False) for o in ("SGD", "Adam", "AdamW") for s in SCHEDULES]
    + [(o, "none", False) for o in OPTIMIZERS if o not in ("SGD", "Adam", "AdamW")]
    + [
        ("SGD-momentum-nesterov-wd", "OneCycleLR", False),
        ("AdamW-custom", "SequentialLR", False),
        ("AdamW", "OneCycleLR-3phase-linear", True),
        ("SGD-momentum-dampening", "LambdaLR", True),
        ("Adam-wd-amsgrad", "CosineAnnealingLR", True),
        ("AdamW", "SequentialLR", True),
    ]
)


def _training(framework, model, opt, sched, steps, data, clip=None):
    x, y = data
    X, Y = framework.tensor(x), framework.tensor(y)
    params, lrs = [], []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(X) - Y) ** 2).mean()
        loss.backward()
        if clip is not None:
            clip(model.parameters())
        opt.step()
        if sched is not None:
            sched.step()
        params.append([np.array(p.detach().numpy(), copy=True) for p in model.parameters()])
        lrs.append([g["lr"] for g in opt.param_groups])
    return params, lrs


def _setup(opt_name, sched_name, grouped):
    ours_m, theirs_m = _small_models()
    ours_o = OPTIMIZERS[opt_name](mg.optim, _groups(ours_m, grouped))
    theirs_o = OPTIMIZERS[opt_name](torch.optim, _groups(theirs_m, grouped))
    make = SCHEDULES[sched_name]
    ours_s = None if make is None else make(mg.optim.lr_scheduler, ours_o)
    theirs_s = None if make is None else make(torch.optim.lr_scheduler, theirs_o)
    return ours_m, theirs_m, ours_o, theirs_o, ours_s, theirs_s


def _compare_runs(ours, theirs):
    (pm, lm), (pt, lt) = ours, theirs
    for step, (a, b, la, lb) in enumerate(zip(pm, pt, lm, lt)):
        np.testing.assert_allclose(
            la, lb, rtol=1e-12, atol=1e-15, err_msg=f"lr after step {step + 1}"
        )
        for i, (u, v) in enumerate(zip(a, b)):
            np.testing.assert_allclose(
                u, v, rtol=1e-9, atol=1e-10, err_msg=f"parameter {i} after step {step + 1}"
            )


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("opt_name,sched_name,grouped", OPT_SCHED_CASES)
def test_optimizer_and_schedule_match_torch(opt_name, sched_name, grouped):
    ours_m, theirs_m, ours_o, theirs_o, ours_s, theirs_s = _setup(opt_name, sched_name, grouped)
    np.testing.assert_allclose(
        [g["lr"] for g in ours_o.param_groups],
        [g["lr"] for g in theirs_o.param_groups],
        rtol=1e-12,
        err_msg="lr after the schedule's construction",
    )
    steps = 20
    _compare_runs(
        _training(mg, ours_m, ours_o, ours_s, steps, _data()),
        _training(torch, theirs_m, theirs_o, theirs_s, steps, _data()),
    )
    if ours_s is not None:
        np.testing.assert_allclose(ours_s.get_last_lr(), theirs_s.get_last_lr(), rtol=1e-12)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    "opt_name,sched_name,grouped",
    [
        ("AdamW", "OneCycleLR", False),
        ("Adam-wd-amsgrad", "CosineAnnealingLR", True),
        ("SGD-momentum-nesterov-wd", "SequentialLR", False),
        ("AdamW-custom", "LinearLR", True),
        ("SGD", "LambdaLR", False),
    ],
)
def test_optimizer_and_schedule_state_dict_round_trip(opt_name, sched_name, grouped, tmp_path):
    """10 steps, a checkpoint through mg.save/mg.load, a fresh model/optimizer/schedule loaded
    from it,
    10 more steps: the same as torch's 20 uninterrupted steps."""
    ours_m, theirs_m, ours_o, theirs_o, ours_s, theirs_s = _setup(opt_name, sched_name, grouped)
    data = _data()
    first = _training(mg, ours_m, ours_o, ours_s, 10, data)
    path = str(tmp_path / "ckpt.npz")
    mg.save(
        {
            "model": ours_m.state_dict(),
            "optim": ours_o.state_dict(),
            "schedule": ours_s.state_dict(),
        },
        path,
    )
    ckpt = mg.load(path)
    fresh_m, _ = _small_models(seed=99)
    fresh_o = OPTIMIZERS[opt_name](mg.optim, _groups(fresh_m, grouped))
    fresh_s = SCHEDULES[sched_name](mg.optim.lr_scheduler, fresh_o)
    fresh_m.load_state_dict(ckpt["model"])
    fresh_o.load_state_dict(ckpt["optim"])
    fresh_s.load_state_dict(ckpt["schedule"])
    second = _training(mg, fresh_m, fresh_o, fresh_s, 10, data)
    reference = _training(torch, theirs_m, theirs_o, theirs_s, 20, data)
    _compare_runs((first[0] + second[0], first[1] + second[1]), reference)
    np.testing.assert_allclose(fresh_s.get_last_lr(), theirs_s.get_last_lr(), rtol=1e-12)


@pytest.mark.filterwarnings("ignore")
def test_optimizer_state_access_matches_torch():
    ours_m, theirs_m, ours_o, theirs_o, _, _ = _setup("AdamW", "none", False)
    _training(mg, ours_m, ours_o, None, 3, _data())
    _training(torch, theirs_m, theirs_o, None, 3, _data())
    for p, q in zip(ours_m.parameters(), theirs_m.parameters()):
        for key in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_allclose(
                np.asarray(
                    ours_o.state[p][key].numpy()
                    if hasattr(ours_o.state[p][key], "numpy")
                    else ours_o.state[p][key]
                ),
                theirs_o.state[q][key].numpy(),
                rtol=1e-9,
                atol=1e-12,
            )
        assert float(
            np.asarray(getattr(ours_o.state[p]["step"], "numpy", lambda: ours_o.state[p]["step"])())
        ) == float(theirs_o.state[q]["step"])
    assert ours_o.defaults["lr"] == theirs_o.defaults["lr"]
    assert ours_o.defaults["weight_decay"] == theirs_o.defaults["weight_decay"]


@pytest.mark.filterwarnings("ignore")
def test_onecycle_cycles_momentum_like_torch():
    ours_m, theirs_m, ours_o, theirs_o, ours_s, theirs_s = _setup(
        "SGD-momentum-nesterov-wd", "OneCycleLR", False
    )
    x, y = _data()
    for step in range(20):
        for fw, m, o, s in ((mg, ours_m, ours_o, ours_s), (torch, theirs_m, theirs_o, theirs_s)):
            o.zero_grad()
            ((m(fw.tensor(x)) - fw.tensor(y)) ** 2).mean().backward()
            o.step()
            s.step() if step < 19 else None
        assert ours_o.param_groups[0]["momentum"] == pytest.approx(
            theirs_o.param_groups[0]["momentum"], rel=1e-12
        )
    ours_a = _setup("Adam", "OneCycleLR", False)
    assert ours_a[2].param_groups[0]["betas"][0] == pytest.approx(
        ours_a[3].param_groups[0]["betas"][0], rel=1e-12
    )


def test_onecycle_step_past_total_raises_like_torch():
    ours_m, theirs_m = _small_models()
    o1 = mg.optim.SGD(ours_m.parameters(), lr=0.1)
    o2 = torch.optim.SGD(theirs_m.parameters(), lr=0.1)
    s1 = mg.optim.lr_scheduler.OneCycleLR(o1, max_lr=0.1, total_steps=3)
    s2 = torch.optim.lr_scheduler.OneCycleLR(o2, max_lr=0.1, total_steps=3)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(6):
            s2_err = None
            try:
                s2.step()
            except Exception as e:  # torch raises on the step that goes past total_steps
                s2_err = e
            if s2_err is not None:
                with pytest.raises(type(s2_err), match="total"):
                    s1.step()
                return
            s1.step()
    raise AssertionError("torch did not raise")


OPT_HOSTILE = [
    ("negative lr", lambda O, p: O.SGD(p, lr=-0.1)),
    ("negative momentum", lambda O, p: O.SGD(p, lr=0.1, momentum=-0.5)),
    ("nesterov without momentum", lambda O, p: O.SGD(p, lr=0.1, nesterov=True)),
    ("beta of 1", lambda O, p: O.Adam(p, betas=(1.0, 0.999))),
    ("negative eps", lambda O, p: O.AdamW(p, eps=-1e-8)),
    ("negative weight decay", lambda O, p: O.Adam(p, weight_decay=-1.0)),
    ("empty parameter list", lambda O, p: O.Adam([])),
]


@pytest.mark.parametrize("label,make", OPT_HOSTILE, ids=[c[0] for c in OPT_HOSTILE])
def test_optimizer_bad_settings_raise_like_torch(label, make):
    ours_m, theirs_m = _small_models()
    raises_like_torch(
        lambda: make(mg.optim, ours_m.parameters()),
        lambda: make(torch.optim, theirs_m.parameters()),
    )


# =====================================================================================
# clip_grad_norm_ / clip_grad_value_


def _grad_pairs(scale=1.0, special=None, dtype=np.float32):
    rng = np.random.default_rng(8)
    shapes = [(3, 4), (4,), (2, 2, 2)]
    ours, theirs = [], []
    for i, shape in enumerate(shapes):
        g = (rng.standard_normal(shape) * scale).astype(dtype)
        if special is not None and i == 1:
            g[0] = special
        p = nn.Parameter(mg.zeros(*shape, dtype=dtype))
        p.grad = mg.tensor(g.copy())
        q = torch.nn.Parameter(torch.zeros(shape, dtype=torch_dtype(dtype)))
        q.grad = torch.tensor(g.copy())
        ours.append(p)
        theirs.append(q)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2, 2.0, float("inf"), "inf", 1, 3.0, 0.5])
@pytest.mark.parametrize("max_norm", [0.5, 1e6, 0.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clip_grad_norm_matches_torch(norm_type, max_norm, dtype):
    ours, theirs = _grad_pairs(dtype=dtype)
    total_m = nn.utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type)
    total_t = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    assert total_m.shape == () and total_m.dtype == np.dtype(dtype)
    clipped = tolerance("clip_grad_norm", dtype)
    assert_close(total_m, total_t, dict(rtol=clipped["rtol"], atol=0), "the total norm")
    for p, q in zip(ours, theirs):
        assert_close(p.grad, q.grad, clipped, "a clipped gradient")


def test_clip_grad_norm_single_tensor_none_grads_and_empty_like_torch():
    ours, theirs = _grad_pairs()
    np.testing.assert_allclose(
        nn.utils.clip_grad_norm_(ours[0], 1.0).item(),
        torch.nn.utils.clip_grad_norm_(theirs[0], 1.0).item(),
        rtol=1e-6,
    )
    ours[1].grad, theirs[1].grad = None, None
    np.testing.assert_allclose(
        nn.utils.clip_grad_norm_(ours, 0.1).item(),
        torch.nn.utils.clip_grad_norm_(theirs, 0.1).item(),
        rtol=1e-6,
    )
    assert ours[1].grad is None
    assert (
        nn.utils.clip_grad_norm_([], 1.0).item()
        == torch.nn.utils.clip_grad_norm_([], 1.0).item()
        == 0.0
    )
    p = nn.Parameter(mg.zeros(3))
    assert nn.utils.clip_grad_norm_([p], 1.0).item() == 0.0  # no grad at all


@pytest.mark.parametrize(
    "special,norm_type",
    [
        (np.nan, 2.0),
        (np.inf, 2.0),
        (-np.inf, 2.0),
        (np.inf, float("inf")),
        (-np.inf, float("inf")),
        (np.nan, float("inf")),
    ],
)  # a NaN in a later parameter than the first: the inf norm is NaN too
def test_clip_grad_norm_error_if_nonfinite_raises_like_torch(special, norm_type):
    ours, theirs = _grad_pairs(special=special)
    raises_like_torch(
        lambda: nn.utils.clip_grad_norm_(ours, 1.0, norm_type=norm_type, error_if_nonfinite=True),
        lambda: torch.nn.utils.clip_grad_norm_(
            theirs, 1.0, norm_type=norm_type, error_if_nonfinite=True
        ),
        ("error_if_nonfinite",),
    )


@pytest.mark.parametrize(
    "special,norm_type",
    [(np.nan, 2.0), (np.inf, 2.0), (-np.inf, float("inf")), (np.inf, 1.0), (np.nan, float("inf"))],
)
def test_clip_grad_norm_nonfinite_without_error_matches_torch(special, norm_type):
    ours, theirs = _grad_pairs(special=special)
    total_m = nn.utils.clip_grad_norm_(ours, 1.0, norm_type=norm_type)
    total_t = torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type=norm_type)
    np.testing.assert_array_equal(total_m.numpy(), total_t.numpy())
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


@pytest.mark.parametrize("clip_value", [0.0, 0.3, 1e6, 2])
def test_clip_grad_value_matches_torch(clip_value):
    ours, theirs = _grad_pairs(special=np.inf)
    assert nn.utils.clip_grad_value_(ours, clip_value) is None
    torch.nn.utils.clip_grad_value_(theirs, clip_value)
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


def test_clip_grad_value_nan_kept_like_torch():
    ours, theirs = _grad_pairs(special=np.nan)
    nn.utils.clip_grad_value_(ours, 0.5)
    torch.nn.utils.clip_grad_value_(theirs, 0.5)
    for p, q in zip(ours, theirs):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())


@pytest.mark.filterwarnings("ignore")
def test_training_with_clipping_matches_torch():
    ours_m, theirs_m, ours_o, theirs_o, ours_s, theirs_s = _setup("AdamW", "OneCycleLR", False)
    _compare_runs(
        _training(
            mg,
            ours_m,
            ours_o,
            ours_s,
            20,
            _data(),
            clip=lambda ps: nn.utils.clip_grad_norm_(ps, 0.05),
        ),
        _training(
            torch,
            theirs_m,
            theirs_o,
            theirs_s,
            20,
            _data(),
            clip=lambda ps: torch.nn.utils.clip_grad_norm_(ps, 0.05),
        ),
    )


def test_clip_grad_norm_bad_norm_type_raises():
    ours, theirs = _grad_pairs()
    with pytest.raises(Exception):
        torch.nn.utils.clip_grad_norm_(theirs, 1.0, norm_type="fro2")
    with pytest.raises(ValueError, match="norm_type"):
        nn.utils.clip_grad_norm_(ours, 1.0, norm_type="fro2")


# =====================================================================================
# Dropout in eval, train()/eval(), parameter order


@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 1.0])
def test_dropout_eval_is_identity_like_torch(p):
    x = np.random.default_rng(0).standard_normal((4, 5)).astype(np.float32)
    ours, theirs = nn.Dropout(p), torch.nn.Dropout(p)
    ours.eval()
    theirs.eval()
    xm, xt = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ym, yt = ours(xm), theirs(xt)
    np.testing.assert_array_equal(ym.numpy(), yt.detach().numpy())
    ym.sum().backward()
    yt.sum().backward()
    np.testing.assert_array_equal(xm.grad.numpy(), xt.grad.numpy())
    np.testing.assert_array_equal(F.dropout(mg.tensor(x), p, training=False).numpy(), x)
    assert repr(ours) == repr(theirs)


def test_dropout_train_statistics_and_extremes():
    x = mg.ones(200, 200)
    y = nn.Dropout(0.25)(x).numpy()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02
    np.testing.assert_array_equal(
        nn.Dropout(1.0)(x).numpy(), torch.nn.Dropout(1.0)(torch.ones(200, 200)).numpy()
    )
    np.testing.assert_array_equal(nn.Dropout(0.0)(x).numpy(), np.ones((200, 200), np.float32))


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_bad_p_raises_like_torch(p):
    raises_like_torch(lambda: nn.Dropout(p), lambda: torch.nn.Dropout(p), (str(p),))


def _lm(N_, dtype=None):
    """The same small language model written for torch.nn and for minigrad.nn."""

    class LM(N_.Module):
        def __init__(self):
            super().__init__()
            self.tok = N_.Embedding(11, D_MODEL, padding_idx=0)
            self.pos = N_.Parameter((torch.zeros if N_ is torch.nn else mg.zeros)(1, 6, D_MODEL))
            layer = N_.TransformerEncoderLayer(
                D_MODEL,
                NHEAD,
                FF,
                dropout=0.1,
                batch_first=True,
                norm_first=True,
                activation="gelu",
            )
            self.encoder = N_.TransformerEncoder(
                layer, 2, norm=N_.LayerNorm(D_MODEL), enable_nested_tensor=False
            )
            self.heads = N_.ModuleDict(
                {
                    "lm": N_.Linear(D_MODEL, 11, bias=False),
                    "cls": N_.Sequential(N_.Dropout(0.2), N_.Linear(D_MODEL, 2)),
                }
            )
            self.extra = N_.ModuleList(
                [
                    N_.LayerNorm(D_MODEL, bias=False),
                    N_.MultiheadAttention(D_MODEL, NHEAD, kdim=5, vdim=3),
                ]
            )

        def forward(self, ids, causal):
            h = self.tok(ids) + self.pos[:, : ids.shape[1]]
            h = self.encoder(h, mask=causal, is_causal=True)
            return self.heads["lm"](h)

    return LM()


def test_named_parameters_buffers_and_modules_order_match_torch():
    ours, theirs = _lm(nn), _lm(torch.nn)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == [n for n, _ in theirs.named_children()]


def test_train_eval_propagation_matches_torch():
    ours, theirs = _lm(nn), _lm(torch.nn)
    for mode in ("eval", "train", "eval"):
        assert getattr(ours, mode)() is ours
        getattr(theirs, mode)()
        assert [m.training for m in ours.modules()] == [m.training for m in theirs.modules()]
    ours.train(False)
    theirs.train(False)
    ours.heads.train()
    theirs.heads.train()
    assert [m.training for m in ours.modules()] == [m.training for m in theirs.modules()]
    with pytest.raises(Exception):
        theirs.train("yes")
    with pytest.raises(ValueError):
        ours.train("yes")


@pytest.mark.filterwarnings("ignore")
def test_language_model_training_step_matches_torch():
    """A user's model with Embedding(padding_idx), a learned position Parameter, a pre-norm causal
    encoder and a head: outputs and gradients in train mode (dropout off via eval-free p=0 copy)."""
    ours, theirs = _lm(nn), _lm(torch.nn)
    copy_to_torch(ours, theirs, randomize=0.5, seed=4)
    for module in list(ours.modules()) + list(theirs.modules()):
        if isinstance(module, (nn.Dropout, torch.nn.Dropout)):
            module.p = 0.0
        if isinstance(module, (nn.MultiheadAttention, torch.nn.MultiheadAttention)):
            module.dropout = 0.0
    ids = np.array([[1, 4, 7, 0, 0], [3, 3, 9, 10, 2]])
    cm, ct = (
        nn.Transformer.generate_square_subsequent_mask(5),
        torch.nn.Transformer.generate_square_subsequent_mask(5),
    )
    ym, yt = ours(mg.tensor(ids), cm), theirs(torch.tensor(ids), ct)
    assert_close(ym, yt, tolerance("transformer", np.float32))
    targets = np.array([[4, 7, 0, 0, 0], [3, 9, 10, 2, 1]])
    lm = F.cross_entropy(ym.reshape(-1, 11), mg.tensor(targets.reshape(-1)), ignore_index=0)
    lt = TF.cross_entropy(yt.reshape(-1, 11), torch.tensor(targets.reshape(-1)), ignore_index=0)
    np.testing.assert_allclose(lm.item(), lt.item(), rtol=1e-5)
    lm.backward()
    lt.backward()
    tp = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        if tp[name].grad is None:
            assert p.grad is None or not p.grad.numpy().any(), name
            continue
        np.testing.assert_allclose(
            p.grad.numpy(), tp[name].grad.numpy(), rtol=1e-4, atol=2e-5, err_msg=name
        )


@pytest.mark.filterwarnings("ignore")
def test_activation_module_with_parameters_is_registered_like_torch():
    """activation may be any callable; torch registers a Module activation (PReLU's weight is in the
    state dict as 'activation.weight')."""
    ours = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, activation=nn.PReLU())
    theirs = torch.nn.TransformerEncoderLayer(
        D_MODEL, NHEAD, FF, dropout=0.0, activation=torch.nn.PReLU()
    )
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    copy_to_torch(ours, theirs, randomize=0.5)
    x = np.random.default_rng(0).standard_normal((SEQ, BATCH, D_MODEL)).astype(np.float32)
    _run_pair(ours, theirs, [x], ours, theirs, np.float32)


@pytest.mark.filterwarnings("ignore")
def test_transformer_custom_encoder_decoder_match_torch():
    enc_m = nn.TransformerEncoder(nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0), 1)
    dec_m = nn.TransformerDecoder(nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0), 1)
    enc_t = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0), 1
    )
    dec_t = torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0), 1
    )
    ours = nn.Transformer(D_MODEL, NHEAD, custom_encoder=enc_m, custom_decoder=dec_m, dropout=0.0)
    theirs = torch.nn.Transformer(
        D_MODEL, NHEAD, custom_encoder=enc_t, custom_decoder=dec_t, dropout=0.0
    )
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    copy_to_torch(ours, theirs, randomize=0.4)
    rng = np.random.default_rng(0)
    src = rng.standard_normal((SEQ, BATCH, D_MODEL)).astype(np.float32)
    tgt = rng.standard_normal((TGT, BATCH, D_MODEL)).astype(np.float32)
    _run_pair(ours, theirs, [src, tgt], ours, theirs, np.float32)


def test_deepcopy_and_state_dict_from_torch_round_trip():
    """torch -> minigrad: a torch state dict converted with .numpy() loads and gives torch's
    output."""
    theirs = torch.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=True)
    ours = nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, batch_first=True)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    clone = copy.deepcopy(ours)
    rng = np.random.default_rng(0)
    tgt = rng.standard_normal((BATCH, TGT, D_MODEL)).astype(np.float32)
    mem = rng.standard_normal((BATCH, SEQ, D_MODEL)).astype(np.float32)
    yt = theirs(torch.tensor(tgt), torch.tensor(mem))
    for m in (ours, clone):
        assert_close(m(mg.tensor(tgt), mg.tensor(mem)), yt, tolerance("transformer", np.float32))
    assert not {id(p) for p in clone.parameters()} & {id(p) for p in ours.parameters()}


# =====================================================================================
# More corners found while sweeping


@pytest.mark.parametrize("opt_name", ["SGD-momentum-nesterov-wd", "Adam", "AdamW"])
def test_optimizer_step_with_closure_matches_torch(opt_name):
    ours_m, theirs_m = _small_models()
    ours_o = OPTIMIZERS[opt_name](mg.optim, ours_m.parameters())
    theirs_o = OPTIMIZERS[opt_name](torch.optim, theirs_m.parameters())
    x, y = _data()

    def closure(fw, model, opt):
        def run():
            opt.zero_grad()
            loss = ((model(fw.tensor(x)) - fw.tensor(y)) ** 2).mean()
            loss.backward()
            return loss

        return run

    for _ in range(3):
        lm = ours_o.step(closure(mg, ours_m, ours_o))
        lt = theirs_o.step(closure(torch, theirs_m, theirs_o))
        np.testing.assert_allclose(lm.item(), lt.item(), rtol=1e-10)
    for p, q in zip(ours_m.parameters(), theirs_m.parameters()):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(
    "make",
    [
        lambda S, o: S.LambdaLR(o, lambda s: 0.5**s, last_epoch=-1),
        lambda S, o: S.CosineAnnealingLR(o, T_max=5, last_epoch=-1),
        lambda S, o: S.LinearLR(o, start_factor=0.5, total_iters=3, last_epoch=-1),
        lambda S, o: S.OneCycleLR(o, max_lr=0.1, total_steps=10, last_epoch=-1),
        lambda S, o: S.SequentialLR(
            o,
            [S.LinearLR(o, start_factor=0.5, total_iters=2), S.CosineAnnealingLR(o, 4)],
            milestones=[2],
            last_epoch=-1,
        ),
    ],
    ids=["LambdaLR", "CosineAnnealingLR", "LinearLR", "OneCycleLR", "SequentialLR"],
)
def test_scheduler_accepts_last_epoch_like_torch(make):
    ours_m, theirs_m = _small_models()
    ours_o = mg.optim.SGD(ours_m.parameters(), lr=0.1, momentum=0.9)
    theirs_o = torch.optim.SGD(theirs_m.parameters(), lr=0.1, momentum=0.9)
    ours_s, theirs_s = make(mg.optim.lr_scheduler, ours_o), make(torch.optim.lr_scheduler, theirs_o)
    np.testing.assert_allclose(ours_s.get_last_lr(), theirs_s.get_last_lr(), rtol=1e-12)


@pytest.mark.filterwarnings("ignore")
def test_adam_decoupled_weight_decay_matches_torch():
    ours_m, theirs_m = _small_models()
    ours_o = mg.optim.Adam(
        ours_m.parameters(), lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True
    )
    theirs_o = torch.optim.Adam(
        theirs_m.parameters(), lr=1e-2, weight_decay=0.1, decoupled_weight_decay=True
    )
    _compare_runs(
        _training(mg, ours_m, ours_o, None, 5, _data()),
        _training(torch, theirs_m, theirs_o, None, 5, _data()),
    )


def test_zero_grad_sets_none_like_torch():
    ours_m, theirs_m = _small_models()
    ours_o, theirs_o = mg.optim.Adam(ours_m.parameters()), torch.optim.Adam(theirs_m.parameters())
    _training(mg, ours_m, ours_o, None, 1, _data())
    _training(torch, theirs_m, theirs_o, None, 1, _data())
    ours_o.zero_grad()
    theirs_o.zero_grad()
    assert [p.grad is None for p in ours_m.parameters()] == [
        p.grad is None for p in theirs_m.parameters()
    ]


def test_functional_layer_norm_wrong_weight_raises_like_torch():
    raises_like_torch(
        lambda: F.layer_norm(mg.zeros(2, 8), (8,), mg.ones(7)),
        lambda: TF.layer_norm(torch.zeros(2, 8), (8,), torch.ones(7)),
        ("(7,)", "(8,)"),
    )


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("pad_kind", ["bool", "float"])
@pytest.mark.parametrize("with_causal", [False, True])
def test_encoder_layer_fully_padded_sequence_matches_torch(pad_kind, with_causal):
    """A sequence of the batch whose every position is padding (torch's SDPA path: no NaN)."""
    ours, theirs = _encoder_layer_pair(False, False, "relu", np.float32)
    x = np.random.default_rng(0).standard_normal((SEQ, BATCH, D_MODEL)).astype(np.float32)
    pad = np.zeros((BATCH, SEQ), bool)
    pad[1] = True
    if pad_kind == "float":
        pad = np.where(pad, -np.inf, 0.0).astype(np.float32)
    causal = np.triu(np.ones((SEQ, SEQ), bool), 1) if with_causal else None
    _run_pair(
        ours,
        theirs,
        [x],
        lambda s: ours(
            s,
            src_mask=None if causal is None else mg.tensor(causal),
            src_key_padding_mask=mg.tensor(pad),
        ),
        lambda s: theirs(
            s,
            src_mask=None if causal is None else torch.tensor(causal),
            src_key_padding_mask=torch.tensor(pad),
        ),
        np.float32,
    )


@pytest.mark.parametrize("avg", [True, False])
def test_multihead_attention_unbatched_weights_shape_matches_torch(avg):
    ours, theirs = _mha_pair({}, np.float64)
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((L, E)), rng.standard_normal((S, E))
    mask = rng.random((H, L, S)) < 0.3
    mask[..., 0] = False
    om, wm = ours(
        mg.tensor(q),
        mg.tensor(k),
        mg.tensor(k),
        attn_mask=mg.tensor(mask),
        average_attn_weights=avg,
    )
    ot, wt = theirs(
        torch.tensor(q),
        torch.tensor(k),
        torch.tensor(k),
        attn_mask=torch.tensor(mask),
        average_attn_weights=avg,
    )
    assert_close(om, ot, tolerance("transformer", np.float64))
    assert_close(wm, wt, tolerance("transformer", np.float64))


@pytest.mark.parametrize("dtype_call", ["double", "float"])
def test_module_dtype_conversion_matches_torch(dtype_call):
    ours, theirs = _encoder_layer_pair(True, True, "gelu", np.float32)
    getattr(ours, dtype_call)()
    getattr(theirs, dtype_call)()
    dtype = np.float64 if dtype_call == "double" else np.float32
    assert all(p.dtype == np.dtype(dtype) for p in ours.parameters())
    x = np.random.default_rng(0).standard_normal((BATCH, SEQ, D_MODEL)).astype(dtype)
    _run_pair(ours, theirs, [x], ours, theirs, dtype)


@pytest.mark.filterwarnings("ignore")
def test_batch_first_layer_on_transposed_input_matches_torch():
    ours, theirs = _encoder_layer_pair(True, False, "relu", np.float32)
    x = np.random.default_rng(0).standard_normal((SEQ, BATCH, D_MODEL)).astype(np.float32)
    _run_pair(
        ours,
        theirs,
        [x],
        lambda s: ours(s.transpose(0, 1)),
        lambda s: theirs(s.transpose(0, 1)),
        np.float32,
    )
