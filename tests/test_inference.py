"""The inference path: forward-only kernels (kernels.lstm.layer_inference, lstm_cell_inference,
attention_inference, layer_norm_inference) give the training kernels' forward, each Numba
kernel its numpy twin; they are chosen whenever no node is recorded, and keep nothing (peak
memory); the sentiment example's length-sorted evaluation gives each review's logits in its
own order, as the unsorted one does. inference_mode's rules for its tensors are tested in
tests/engine/test_grad_mode.py.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import kernels, nn
from minigrad.kernels import _buffers
from minigrad.kernels import attention as numba_attention
from minigrad.kernels import layer_norm as numba_layer_norm
from minigrad.kernels import lstm as lstm_kernels
from minigrad.kernels import reference
from tests.memory_checks import peak_bytes

rng = np.random.default_rng(29)


def _lstm_case(batch, hidden, distinct, directions, batch_first, dtype, longest=9):
    """A layer's arguments: input gates of `distinct` rows per direction, and positions that
    read them at random (repeats, as an embedding's tokens)."""
    lengths = rng.integers(1, longest + 1, batch)
    steps = int(lengths.max())
    rows = rng.integers(0, distinct, (batch, steps) if batch_first else (steps, batch))
    tables = [rng.standard_normal((distinct, 4 * hidden)).astype(dtype) for _ in range(directions)]
    weights_hh = [
        rng.uniform(-0.5, 0.5, (4 * hidden, hidden)).astype(dtype) for _ in range(directions)
    ]
    h0, c0 = (rng.standard_normal((directions, batch, hidden)).astype(dtype) for _ in range(2))
    return tables, rows, weights_hh, h0, c0, lengths


# -- kernels: forward-only against the training forward, Numba against numpy -----------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lstm_cell_inference_is_the_training_step_and_its_twin(dtype):
    from minigrad.kernels import lstm_cell

    n, hidden = 7, 5
    input_gates = rng.standard_normal((3, 4 * hidden)).astype(dtype)
    rows = np.array([2, 0, 2, 1, 1, 0, 2])
    hidden_gates = rng.standard_normal((n, 4 * hidden)).astype(dtype)
    c_prev = rng.standard_normal((n, hidden)).astype(dtype)
    c_expected, h_expected = np.empty_like(c_prev), np.empty_like(c_prev)
    reference.lstm_cell_forward(
        hidden_gates.copy(), input_gates, rows, c_prev, c_expected, h_expected
    )
    tolerance = 2e-6 if dtype == np.float32 else 1e-13
    for kernel in (lstm_cell.lstm_cell_inference, reference.lstm_cell_inference):
        c, h = c_prev.copy(), np.full_like(c_prev, np.nan)  # h's old values are never read
        kernel(input_gates, rows, hidden_gates, c, h)
        np.testing.assert_allclose(c, c_expected, rtol=0, atol=tolerance)
        np.testing.assert_allclose(h, h_expected, rtol=0, atol=tolerance)


@pytest.mark.parametrize(
    "batch, hidden, distinct, directions, batch_first",
    [(6, 4, 3, 2, True), (5, 7, 40, 1, False), (1, 3, 4, 2, False), (9, 2, 1, 1, True)],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_inference_gives_the_training_forward(
    batch, hidden, distinct, directions, batch_first, dtype
):
    tables, rows, weights_hh, h0, c0, lengths = _lstm_case(
        batch, hidden, distinct, directions, batch_first, dtype
    )
    arguments = (tables, rows, weights_hh, h0, c0, lengths, batch_first)
    expected = lstm_kernels.layer_forward(*arguments)[:3]
    got = lstm_kernels.layer_inference(*arguments)
    tolerance = 2e-6 if dtype == np.float32 else 1e-12
    for name, value, want in zip(("output", "h_n", "c_n"), got, expected):
        assert value.dtype == dtype and value.shape == want.shape, name
        np.testing.assert_allclose(value, want, rtol=0, atol=tolerance, err_msg=name)
    padded = np.arange(rows.shape[1 if batch_first else 0]) >= lengths[:, None]  # (B, T)
    output = got[0] if batch_first else got[0].swapaxes(0, 1)
    assert not output[padded].any()  # 0 at padded positions, as layer_forward


ATTENTION_CASES = {
    "key lengths": ((3, 4, 11, 8), 11, dict(key_lengths=rng.integers(0, 12, (3, 1)))),
    "causal": ((2, 2, 9, 4), 9, dict(causal_offset=0)),
    "causal after cached keys": ((2, 3, 4, 4), 7, dict(causal_offset=3)),
    "bool mask": ((2, 2, 5, 3), 6, dict(mask=rng.random((2, 1, 5, 6)) > 0.4)),
    "3-d": ((4, 10, 6), 10, dict(key_lengths=np.array([10, 3, 1, 7]))),
}


@pytest.mark.parametrize("case", ATTENTION_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_inference_gives_the_training_forward(case, dtype):
    query_shape, keys, settings = ATTENTION_CASES[case]
    q = rng.standard_normal(query_shape).astype(dtype)
    k = rng.standard_normal(query_shape[:-2] + (keys, query_shape[-1])).astype(dtype)
    v = rng.standard_normal(query_shape[:-2] + (keys, 5)).astype(dtype)
    expected = reference.attention_forward(q, k, v, 0.4, **settings)[0]
    tolerance = 1e-6 if dtype == np.float32 else 1e-13
    for kernel in (numba_attention.attention_inference, reference.attention_inference):
        np.testing.assert_allclose(kernel(q, k, v, 0.4, **settings), expected, atol=tolerance)


@pytest.mark.parametrize("shape", [(7, 16), (2, 3, 5), (4, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_inference_gives_the_training_forward(shape, dtype):
    x = rng.standard_normal(shape).astype(dtype)
    weight, bias = (rng.standard_normal(shape[-1]).astype(dtype) for _ in range(2))
    expected = reference.layer_norm_forward(x, weight, bias, 1e-5)[0]
    tolerance = 1e-6 if dtype == np.float32 else 1e-13
    for kernel in (numba_layer_norm.layer_norm_inference, reference.layer_norm_inference):
        for affine in ((weight, bias), (None, None)):
            want = expected if affine[0] is not None else reference.layer_norm_forward(x)[0]
            np.testing.assert_allclose(kernel(x, *affine), want, atol=tolerance)


# -- the choice: forward-only whenever no node is recorded ------------------------------------


def _refuse(name):
    def refuse(*args, **kwargs):
        raise AssertionError(f"{name} ran")

    return refuse


@pytest.mark.parametrize("how", ["no_grad", "inference_mode", "no parameter needs a gradient"])
def test_layers_run_forward_only_when_nothing_is_recorded(monkeypatch, how):
    mg.manual_seed(0)
    lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=True)
    attention = nn.SelfAttention(8, num_heads=2)
    norm = nn.LayerNorm(8)
    x = mg.randn(2, 5, 3)
    lengths = np.array([5, 2])
    # the expected values, recorded (training kernels), before those kernels are taken away
    expected = [lstm(x, lengths=lengths)[0], attention(mg.ones(2, 5, 8), lengths=lengths)]
    expected.append(norm(expected[1]))
    assert all(value.grad_fn is not None for value in expected)
    for module, name in [
        (lstm_kernels, "layer_forward"),
        (kernels, "attention_forward"),  # the kernel that writes the weights
        (kernels, "layer_norm_forward"),
    ]:
        monkeypatch.setattr(module, name, _refuse(name))
    mode = {"no_grad": mg.no_grad, "inference_mode": mg.inference_mode}.get(how)
    if mode is None:
        for module in (lstm, attention, norm):
            module.requires_grad_(False)
    with mode() if mode else mg.enable_grad():
        got = [
            lstm(x, lengths=lengths)[0],
            attention(mg.ones(2, 5, 8), lengths=lengths, need_weights=False),
        ]
        got.append(norm(got[1]))
    for value, want in zip(got, expected):
        assert value.grad_fn is None
        np.testing.assert_allclose(value.numpy(), want.numpy(), atol=1e-6)
    with pytest.raises(AssertionError, match="layer_forward ran"):  # recording: the training one
        nn.LSTM(3, 4, batch_first=True)(x, lengths=lengths)


def test_attention_without_weights_keeps_none_and_gives_the_same_output():
    mg.manual_seed(1)
    attention = nn.SelfAttention(16, num_heads=4)
    x, lengths = mg.randn(3, 12, 16), np.array([12, 7, 1])
    with mg.inference_mode():
        with_weights = attention(x, lengths=lengths).numpy()
        assert attention.last_weights.shape == (3, 4, 12, 12)
        without = attention(x, lengths=lengths, need_weights=False).numpy()
        assert attention.last_weights is None
    np.testing.assert_allclose(without, with_weights, atol=1e-6)


# -- nothing kept: peak memory ----------------------------------------------------------------


def test_lstm_inference_keeps_no_gates(monkeypatch):
    """What the inference forward allocates beyond its output and the input projection grows
    with the sequence length by one packed copy of the output (the hidden states before they
    are put in place); the training forward also keeps every step's gates and cell."""
    mg.manual_seed(2)
    batch, size = 32, 32
    lstm = nn.LSTM(size, size, batch_first=True, bidirectional=True)

    def peak(mode, steps):
        x = mg.randn(batch, steps, size)

        def forward():
            with mode():
                return lstm(x)[0]

        # an empty output-array pool: arrays earlier tests left there would not be counted
        monkeypatch.setattr(_buffers, "_pool", _buffers._Pool())
        return peak_bytes(forward)[1]

    short, long = 64, 512
    more_output = batch * (long - short) * 2 * size * 4  # float32 output (B, T, 2H)
    more_gates = 2 * batch * (long - short) * 4 * size * 4  # per direction (N, 4H)
    more_rows = 2 * batch * (long - short) * 8  # per direction the int64 row of each position
    training = peak(mg.enable_grad, long) - peak(mg.enable_grad, short)
    inference = peak(mg.inference_mode, long) - peak(mg.inference_mode, short)
    # the input projection (N, 4H) per direction is made before the loop by both
    assert training > more_output + more_gates + more_gates
    assert inference < training - more_gates  # at least the gates not kept
    # (the numpy twins' products may hold a second (N, 4H) for a moment: bias added after)
    assert inference < 2 * more_output + 1.5 * more_gates + 2 * more_rows


def test_attention_inference_keeps_no_weights():
    mg.manual_seed(3)
    batch, heads, steps, size = 16, 4, 256, 32
    attention = nn.SelfAttention(size, num_heads=heads)
    x = mg.randn(batch, steps, size)
    weights_bytes = batch * heads * steps * steps * 4

    def forward():
        with mg.inference_mode():
            return attention(x, need_weights=False)

    forward()  # the output buffers exist before measuring
    _, peak = peak_bytes(forward)
    assert peak < 0.75 * weights_bytes  # the numpy twin holds one batch entry's at a time
    q = k = v = rng.standard_normal((batch, heads, steps, size // heads)).astype(np.float32)
    _, training = peak_bytes(lambda: reference.attention_forward(q, k, v, 0.5))
    assert training > weights_bytes  # the forward that keeps them, for contrast


@pytest.mark.parametrize("masking", ["lengths", "causal", "key_padding_mask"])
def test_attention_training_without_weights_gives_the_same_gradients(masking):
    """need_weights=False while recording: the node keeps q, k, v only and its backward makes
    the weights again; the same numbers to the last bit as with the weights kept."""
    settings = {}
    if masking == "lengths":
        settings["lengths"] = np.array([12, 7, 1])
    elif masking == "key_padding_mask":
        settings["key_padding_mask"] = rng.random((3, 12)) < 0.3
        settings["key_padding_mask"][:, 0] = False  # every row attends to something
    mg.manual_seed(4)
    attention = nn.SelfAttention(16, num_heads=4, causal=masking == "causal")
    x0 = rng.standard_normal((3, 12, 16)).astype(np.float32)
    out_grad = mg.tensor(rng.standard_normal((3, 12, 16)).astype(np.float32))
    results = []
    for need_weights in (True, False):
        x = mg.tensor(x0, requires_grad=True)
        attention.zero_grad()
        out = attention(x, need_weights=need_weights, **settings)
        (out * out_grad).sum().backward()
        grads = [x.grad.numpy()] + [p.grad.numpy() for p in attention.parameters()]
        results.append((out.numpy(), grads))
    (out_kept, grads_kept), (out_again, grads_again) = results
    np.testing.assert_array_equal(out_again, out_kept)
    for again, kept in zip(grads_again, grads_kept):
        np.testing.assert_array_equal(again, kept)


def test_attention_training_without_weights_keeps_none(monkeypatch):
    """What a recorded forward allocates: the (B, H, T, T) weights with need_weights=True, far
    less without (a few heads' scores at a time; the numpy twin one batch entry's)."""
    mg.manual_seed(5)
    batch, heads, steps, size = 16, 4, 256, 32
    attention = nn.SelfAttention(size, num_heads=heads)
    x = mg.randn(batch, steps, size, requires_grad=True)
    weights_bytes = batch * heads * steps * steps * 4

    def peak(need_weights):
        # an empty output-array pool: arrays earlier forwards left there would not be counted
        monkeypatch.setattr(_buffers, "_pool", _buffers._Pool())
        return peak_bytes(lambda: attention(x, need_weights=need_weights))[1]

    assert peak(True) > weights_bytes
    assert peak(False) < 0.75 * weights_bytes


# -- the sentiment example's evaluation -------------------------------------------------------


@pytest.mark.parametrize("pool", ["dot", "mhsa", "mean"])
def test_sorted_evaluation_gives_each_review_its_own_logits(pool):
    from examples.sentiment import preprocess, train
    from examples.sentiment.model import SentimentModel

    mg.manual_seed(4)
    model = SentimentModel(50, pool=pool, embedding_dim=8, hidden_size=8, num_heads=2)
    lengths = rng.integers(1, 30, 45)
    reviews = [(rng.integers(2, 50, n), int(rng.integers(2))) for n in lengths]
    logits = train.predict(model, reviews, batch_size=8)
    assert model.training  # restored
    with mg.no_grad():  # one review at a time, in order: no batch to depend on
        alone = np.concatenate(
            [model.eval()(mg.tensor(ids[None]), np.array([len(ids)])).numpy() for ids, _ in reviews]
        )
        model.train()
        in_order = np.concatenate(  # the evaluation before sorting: batches in dataset order
            [
                model(mg.tensor(ids), batch_lengths).numpy()
                for ids, batch_lengths, _ in preprocess.batches(reviews, 8)
            ]
        )
    np.testing.assert_allclose(logits, alone, atol=2e-6)
    np.testing.assert_allclose(logits, in_order, atol=2e-6)
    labels = np.array([label for _, label in reviews])
    assert train.accuracy(model, reviews, batch_size=8) == np.mean(
        in_order.argmax(axis=1) == labels
    )


def test_evaluation_of_no_reviews():
    from examples.sentiment import train
    from examples.sentiment.model import SentimentModel

    model = SentimentModel(50, pool="dot", embedding_dim=8, hidden_size=8)
    assert train.predict(model, []).shape == (0, 2)
    with pytest.raises(ValueError, match="at least one review; got none"):
        train.accuracy(model, [])
