"""nn.LSTMCell and nn.LSTM: finite differences, the fused layer against unrolled cells and
against PyTorch, padding, errors, and the step kernels against their numpy twins."""

import contextlib

import numpy as np
import pytest

import minigrad as mg
from minigrad import kernels, nn
from minigrad.kernels import _runtime
from minigrad.kernels import lstm as lstm_kernels
from minigrad.kernels import reference as twins
from parity import assert_same_parameter_grads

FLOATS = (np.float32, np.float64)


@contextlib.contextmanager
def parameters_replaced(module, tensors):
    """Run `module` with its parameters (in named_parameters order) replaced by `tensors`."""
    names = [name for name, _ in module.named_parameters()]
    saved = dict(module._parameters)
    module._parameters.update(zip(names, tensors))
    try:
        yield
    finally:
        module._parameters.clear()
        module._parameters.update(saved)


def random_inputs(rng, shape, lengths, batch_first, dtype):
    """A right-padded batch: random values at real positions, garbage (99) at padded ones."""
    x = rng.standard_normal(shape).astype(dtype)
    if lengths is not None:
        for b, length in enumerate(lengths):
            if batch_first:
                x[b, length:] = 99
            else:
                x[length:, b] = 99
    return x


def weighted_loss(outputs, rng):
    """sum of every output times fixed random weights, so each element's gradient is checked."""
    total = 0
    for out in outputs:
        total = total + (out * mg.tensor(rng.standard_normal(out.shape).astype(out.dtype))).sum()
    return total


# ============================================================ LSTMCell, the reference


@pytest.mark.parametrize("batch", [(4,), ()], ids=["batched", "unbatched"])
def test_cell_gradcheck(batch):
    mg.manual_seed(0)
    cell = nn.LSTMCell(3, 2, dtype=np.float64)
    rng = np.random.default_rng(0)
    x, h, c = (
        rng.standard_normal(batch + (3,)),
        rng.standard_normal(batch + (2,)),
        rng.standard_normal(batch + (2,)),
    )

    def step(x, h, c, *params):
        with parameters_replaced(cell, params):
            h1, c1 = cell(x, (h, c))
        return mg.cat([h1, c1], dim=-1)

    assert mg.gradcheck(step, [x, h, c, *cell.parameters()])


def test_cell_step_by_hand():
    # H = 1, I = 1, weights 0 except the biases: the gates are sigmoid(b) / tanh(b)
    cell = nn.LSTMCell(1, 1, dtype=np.float64)
    for p in cell.parameters():
        p.data[...] = 0
    cell.bias_ih.data[:] = [1.0, -1.0, 0.5, 2.0]  # i, f, g, o
    h, c = cell(
        mg.tensor(np.ones((1, 1))), (mg.tensor([[0.0]]).double(), mg.tensor([[3.0]]).double())
    )
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    c_expected = sig(-1.0) * 3.0 + sig(1.0) * np.tanh(0.5)
    np.testing.assert_allclose(c.data, [[c_expected]], rtol=1e-14)
    np.testing.assert_allclose(h.data, [[sig(2.0) * np.tanh(c_expected)]], rtol=1e-14)


def test_cell_matches_torch():
    torch = pytest.importorskip("torch")
    mg.manual_seed(1)
    cell = nn.LSTMCell(3, 4, dtype=np.float64)
    reference = torch.nn.LSTMCell(3, 4).double()
    reference.load_state_dict(
        {k: torch.from_numpy(np.asarray(v)) for k, v in cell.state_dict().items()}
    )
    rng = np.random.default_rng(1)
    x, h, c = (rng.standard_normal(s) for s in [(2, 3), (2, 4), (2, 4)])
    h1, c1 = cell(mg.tensor(x), (mg.tensor(h), mg.tensor(c)))
    h2, c2 = reference(torch.from_numpy(x), (torch.from_numpy(h), torch.from_numpy(c)))
    np.testing.assert_allclose(h1.data, h2.detach().numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(c1.data, c2.detach().numpy(), rtol=1e-12, atol=1e-14)


# ============================================================ fused LSTM vs unrolled cells


def unrolled_lstm(lstm, x, lengths, h0, c0):
    """What nn.LSTM computes, written as a Python loop of lstm_cell steps (the slow reference).

    Finished sequences keep their state (mg.where on a per-sequence mask); the reverse
    direction waits at its initial state until it reaches each sequence's last real step.
    """
    if lstm.batch_first:
        x = x.transpose(0, 1)  # work time-major
    steps, batch = x.shape[0], x.shape[1]
    lengths = np.full(batch, steps) if lengths is None else np.asarray(lengths)
    directions = lstm.num_directions
    h_n, c_n = [], []
    for layer in range(lstm.num_layers):
        outputs = []
        for d, suffix in enumerate(lstm._suffixes(layer)):
            weights = [
                getattr(lstm, f"{name}{suffix}")
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            ]
            h, c = h0[layer * directions + d], c0[layer * directions + d]
            out = [None] * steps
            for t in range(steps) if d == 0 else reversed(range(steps)):
                running = mg.tensor((t < lengths)[:, None])
                h_new, c_new = nn.rnn_cell.lstm_cell(x[t], (h, c), *weights)
                h, c = mg.where(running, h_new, h), mg.where(running, c_new, c)
                out[t] = mg.where(running, h, mg.zeros_like(h))
            outputs.append(mg.stack(out, dim=0))
            h_n.append(h)
            c_n.append(c)
        x = mg.cat(outputs, dim=2) if directions == 2 else outputs[0]
    output = x.transpose(0, 1) if lstm.batch_first else x
    return output, (mg.stack(h_n, dim=0), mg.stack(c_n, dim=0))


@pytest.mark.parametrize(
    "layers, bidirectional, batch_first, lengths",
    [
        (1, False, True, None),
        (1, False, False, [5, 2, 4]),
        (1, True, True, [3, 5, 1]),
        (2, True, False, [5, 3, 5]),
        (2, False, True, [1, 4, 2]),
    ],
)
def test_fused_matches_unrolled_cells(layers, bidirectional, batch_first, lengths):
    mg.manual_seed(2)
    lstm = nn.LSTM(
        3, 4, layers, batch_first=batch_first, bidirectional=bidirectional, dtype=np.float64
    )
    rng = np.random.default_rng(2)
    shape = (3, 5, 3) if batch_first else (5, 3, 3)
    states = (layers * lstm.num_directions, 3, 4)
    x_data = random_inputs(rng, shape, lengths, batch_first, np.float64)
    h0_data, c0_data = rng.standard_normal(states), rng.standard_normal(states)
    results = []
    for run in ("fused", "unrolled"):
        x, h0, c0 = (mg.tensor(a, requires_grad=True) for a in (x_data, h0_data, c0_data))
        lstm.zero_grad()
        if run == "fused":
            output, (h_n, c_n) = lstm(x, lengths, hx=(h0, c0))
        else:
            output, (h_n, c_n) = unrolled_lstm(lstm, x, lengths, h0, c0)
        weighted_loss([output, h_n, c_n], np.random.default_rng(3)).backward()
        grads = [x.grad.data, h0.grad.data, c0.grad.data] + [p.grad.data for p in lstm.parameters()]
        results.append(([output.data, h_n.data, c_n.data], grads))
    (values, grads), (expected_values, expected_grads) = results
    for value, expected in zip(values + grads, expected_values + expected_grads):
        np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12)


def test_fused_gradcheck_bidirectional_with_lengths():
    mg.manual_seed(3)
    lstm = nn.LSTM(2, 2, batch_first=True, bidirectional=True, dtype=np.float64)
    rng = np.random.default_rng(3)
    lengths = np.array([4, 1, 3])
    x = random_inputs(rng, (3, 4, 2), lengths, True, np.float64)
    h0, c0 = rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 3, 2))

    def run(x, h0, c0, *params):
        with parameters_replaced(lstm, params):
            output, (h_n, c_n) = lstm(x, lengths, hx=(h0, c0))
        return mg.cat([output.reshape(-1), h_n.reshape(-1), c_n.reshape(-1)])

    assert mg.gradcheck(run, [x, h0, c0, *lstm.parameters()])


@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_gradcheck_two_layers_bidirectional(batch_first):
    # torch's unbatched input (T, I) with states (num_layers * D, H): batch_first does not apply
    mg.manual_seed(15)
    lstm = nn.LSTM(2, 2, 2, batch_first=batch_first, bidirectional=True, dtype=np.float64)
    rng = np.random.default_rng(15)
    x, h0, c0 = (
        rng.standard_normal((3, 2)),
        rng.standard_normal((4, 2)),
        rng.standard_normal((4, 2)),
    )

    def run(x, h0, c0, *params):
        with parameters_replaced(lstm, params):
            output, (h_n, c_n) = lstm(x, hx=(h0, c0))
        assert output.shape == (3, 4) and h_n.shape == c_n.shape == (4, 2)
        return mg.cat([output.reshape(-1), h_n.reshape(-1), c_n.reshape(-1)])

    assert mg.gradcheck(run, [x, h0, c0, *lstm.parameters()])


def test_padded_positions_output_zero_and_get_no_gradient():
    mg.manual_seed(4)
    lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=True)
    lengths = [6, 2, 4]
    x = mg.tensor(
        random_inputs(np.random.default_rng(4), (3, 6, 3), lengths, True, np.float32),
        requires_grad=True,
    )
    output, _ = lstm(x, lengths)
    output.sum().backward()
    for b, length in enumerate(lengths):
        assert (output.data[b, length:] == 0).all()
        assert (x.grad.data[b, length:] == 0).all()
        assert (np.abs(output.data[b, :length]) > 0).all()


def test_lengths_all_full_equals_no_lengths():
    mg.manual_seed(5)
    lstm = nn.LSTM(3, 4, bidirectional=True)
    x = mg.tensor(np.random.default_rng(5).standard_normal((5, 2, 3)).astype(np.float32))
    out_none, (h_none, _) = lstm(x)
    out_full, (h_full, _) = lstm(x, mg.tensor([5, 5]))
    np.testing.assert_array_equal(out_none.data, out_full.data)
    np.testing.assert_array_equal(h_none.data, h_full.data)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_two_threads_match_one(bidirectional):
    # two threads: the two directions, or two halves of the batch for one direction
    mg.manual_seed(6)
    lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=bidirectional)
    x_data = np.random.default_rng(6).standard_normal((5, 6, 3)).astype(np.float32)
    results = []
    previous = _runtime.use_two_threads
    try:
        for parallel in (False, True):
            _runtime.use_two_threads = parallel
            lstm.zero_grad()
            x = mg.tensor(x_data, requires_grad=True)
            output, (h_n, c_n) = lstm(x, [6, 2, 3, 6, 1])
            weighted_loss([output, h_n, c_n], np.random.default_rng(7)).backward()
            results.append(
                [output.data, h_n.data, c_n.data, x.grad.data]
                + [p.grad.data for p in lstm.parameters()]
            )
    finally:
        _runtime.use_two_threads = previous
    for one, two in zip(*results):  # the weight gradients add up the halves in another order
        np.testing.assert_allclose(one, two, rtol=1e-6, atol=1e-7)


def test_input_without_grad_gives_the_same_parameter_gradients():
    # backward skips dL/dx when x does not require grad (another GEMM per step)
    mg.manual_seed(12)
    lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=True, dtype=np.float64)
    x_data = np.random.default_rng(12).standard_normal((3, 5, 3))
    grads = []
    for requires_grad in (True, False):
        lstm.zero_grad()
        output, (h_n, c_n) = lstm(mg.tensor(x_data, requires_grad=requires_grad), [5, 3, 4])
        weighted_loss([output, h_n, c_n], np.random.default_rng(13)).backward()
        grads.append([p.grad.data for p in lstm.parameters()])
    for with_x, without_x in zip(*grads):
        np.testing.assert_allclose(with_x, without_x, rtol=1e-13, atol=1e-15)


# ============================================================ against PyTorch


def torch_twin(torch, lstm):
    twin = torch.nn.LSTM(
        lstm.input_size,
        lstm.hidden_size,
        lstm.num_layers,
        batch_first=lstm.batch_first,
        bidirectional=lstm.bidirectional,
    )
    twin = twin.double() if lstm.weight_ih_l0.dtype == np.float64 else twin
    twin.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in lstm.state_dict().items()})
    return twin


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "layers, bidirectional, batch_first, lengths",
    [
        (1, False, True, None),
        (1, True, True, None),
        (1, False, True, [7, 3, 5, 1]),
        (1, True, True, [2, 7, 7, 4]),
        (1, True, False, [6, 1, 3, 5]),
        (2, True, True, [7, 2, 5, 6]),
    ],
)
def test_matches_torch(dtype, layers, bidirectional, batch_first, lengths):
    torch = pytest.importorskip("torch")
    mg.manual_seed(7)
    lstm = nn.LSTM(5, 6, layers, batch_first=batch_first, bidirectional=bidirectional, dtype=dtype)
    twin = torch_twin(torch, lstm)
    rng = np.random.default_rng(7)
    steps, batch = 7, 4
    x_data = random_inputs(
        rng, (batch, steps, 5) if batch_first else (steps, batch, 5), lengths, batch_first, dtype
    )

    x = mg.tensor(x_data, requires_grad=True)
    output, (h_n, c_n) = lstm(x, lengths)
    weighted_loss([output, h_n, c_n], np.random.default_rng(8)).backward()

    xt = torch.from_numpy(x_data).requires_grad_()
    if lengths is None:
        output_t, (h_t, c_t) = twin(xt)
    else:
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            xt, torch.tensor(lengths), batch_first=batch_first, enforce_sorted=False
        )
        packed_output, (h_t, c_t) = twin(packed)
        output_t, _ = torch.nn.utils.rnn.pad_packed_sequence(
            packed_output, batch_first=batch_first, total_length=steps
        )
    rng = np.random.default_rng(8)
    loss_t = sum(
        (t * torch.from_numpy(rng.standard_normal(t.shape).astype(dtype))).sum()
        for t in (output_t, h_t, c_t)
    )
    loss_t.backward()

    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-10)
    for ours, theirs in [(output, output_t), (h_n, h_t), (c_n, c_t)]:
        np.testing.assert_allclose(ours.data, theirs.detach().numpy(), **tol)
    np.testing.assert_allclose(x.grad.data, xt.grad.numpy(), **tol)
    assert_same_parameter_grads(lstm, twin, tol)


def test_without_bias_matches_torch():
    torch = pytest.importorskip("torch")
    mg.manual_seed(14)
    lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=True, bias=False, dtype=np.float64)
    assert [name for name, _ in lstm.named_parameters()] == [
        "weight_ih_l0",
        "weight_hh_l0",
        "weight_ih_l0_reverse",
        "weight_hh_l0_reverse",
    ]
    twin = torch.nn.LSTM(3, 4, batch_first=True, bidirectional=True, bias=False).double()
    twin.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in lstm.state_dict().items()})
    x_data = np.random.default_rng(14).standard_normal((2, 5, 3))
    x = mg.tensor(x_data, requires_grad=True)
    output, (h_n, _) = lstm(x)
    (output.sum() + h_n.sum()).backward()
    xt = torch.from_numpy(x_data).requires_grad_()
    output_t, (h_t, _) = twin(xt)
    (output_t.sum() + h_t.sum()).backward()
    np.testing.assert_allclose(output.data, output_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad.data, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    for (name, parameter), theirs in zip(lstm.named_parameters(), twin.parameters()):
        np.testing.assert_allclose(
            parameter.grad.data, theirs.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name
        )


def test_state_dict_round_trip_through_torch():
    torch = pytest.importorskip("torch")
    mg.manual_seed(9)
    lstm = nn.LSTM(3, 4, 2, batch_first=True, bidirectional=True)
    expected_names = [
        f"{kind}_{group}_l{layer}{suffix}"
        for layer in range(2)
        for suffix in ("", "_reverse")
        for kind, group in (("weight", "ih"), ("weight", "hh"), ("bias", "ih"), ("bias", "hh"))
    ]
    assert list(lstm.state_dict()) == expected_names
    twin = torch.nn.LSTM(3, 4, 2, batch_first=True, bidirectional=True)
    assert list(twin.state_dict()) == expected_names
    assert (
        repr(lstm) == repr(twin) == "LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)"
    )
    assert repr(nn.LSTM(3, 4, bias=False)) == repr(torch.nn.LSTM(3, 4, bias=False))
    twin.load_state_dict({k: torch.from_numpy(np.asarray(v)) for k, v in lstm.state_dict().items()})
    back = nn.LSTM(3, 4, 2, batch_first=True, bidirectional=True)
    back.load_state_dict({k: v.detach().numpy() for k, v in twin.state_dict().items()})
    x = mg.tensor(np.random.default_rng(9).standard_normal((2, 5, 3)).astype(np.float32))
    np.testing.assert_array_equal(lstm(x)[0].data, back(x)[0].data)
    np.testing.assert_allclose(
        back(x)[0].data, twin(torch.from_numpy(x.data))[0].detach().numpy(), atol=1e-6
    )


def test_init_like_torch():
    mg.manual_seed(10)
    lstm = nn.LSTM(20, 64, bidirectional=True)
    bound = 1 / np.sqrt(64)
    values = np.concatenate([p.data.ravel() for p in lstm.parameters()])
    assert values.dtype == np.float32 and np.abs(values).max() <= bound
    assert abs(values.std() - bound / np.sqrt(3)) < 0.02 * bound  # U(-a, a) has std a / sqrt(3)
    assert [p.shape for p in lstm.parameters()] == [(256, 20), (256, 64), (256,), (256,)] * 2


# ============================================================ errors


def test_bad_inputs_raise_clear_errors():
    lstm = nn.LSTM(3, 4, batch_first=True)
    x = mg.zeros(2, 5, 3)
    with pytest.raises(ValueError, match=r"input_size=3.*\(2, 5, 4\)"):
        lstm(mg.zeros(2, 5, 4))
    with pytest.raises(
        ValueError, match=r"\(batch, time, input_size\) or unbatched \(time, input_size\).*\(3,\)"
    ):
        lstm(mg.zeros(3))
    with pytest.raises(
        ValueError, match=r"h0 of shape \(1, 4\).*unbatched input of shape \(5, 3\).*\(1, 1, 4\)"
    ):
        lstm(mg.zeros(5, 3), hx=(mg.zeros(1, 1, 4), mg.zeros(1, 1, 4)))
    with pytest.raises(TypeError, match=r"hx as the pair \(h0, c0\); got Tensor"):
        lstm(x, hx=mg.zeros(1, 2, 4))
    with pytest.raises(TypeError, match="float64 does not match.*float32"):
        lstm(mg.zeros(2, 5, 3, dtype=np.float64))
    with pytest.raises(ValueError, match=r"lengths must be in \[1, 5\].*max 6"):
        lstm(x, [6, 2])
    with pytest.raises(ValueError, match=r"lengths must be in \[1, 5\].*min 0"):
        lstm(x, [0, 2])
    with pytest.raises(ValueError, match=r"lengths of shape \(batch=2,\).*\(3,\)"):
        lstm(x, [1, 2, 3])
    with pytest.raises(TypeError, match="lengths must be integers"):
        lstm(x, [1.5, 2.0])  # whole-number floats are taken, as torch casts them
    with pytest.raises(ValueError, match=r"h0 of shape \(1, 2, 4\)"):
        lstm(x, hx=(mg.zeros(2, 2, 4), mg.zeros(2, 2, 4)))
    with pytest.raises(TypeError, match="hx=\\(h0, c0\\)"):
        lstm(x, (mg.zeros(1, 2, 4), mg.zeros(1, 2, 4)))
    with pytest.raises(ValueError, match="input_size, hidden_size and num_layers must be >= 1"):
        nn.LSTM(3, 0)
    with pytest.raises(ValueError, match=r"input_size=3.*\(2, 4\)"):
        nn.LSTMCell(3, 4)(mg.zeros(2, 4))
    with pytest.raises(
        ValueError, match=r"c of shape \(hidden_size=4,\) for input of shape \(3,\); got \(1, 4\)"
    ):
        nn.LSTMCell(3, 4)(mg.zeros(3), (mg.zeros(4), mg.zeros(1, 4)))
    with pytest.raises(
        ValueError, match=r"at least one time step.*\(2, 0, 3\)"
    ):  # torch raises too
        lstm(mg.zeros(2, 0, 3))


@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_batch_of_no_sequences_gives_empty_outputs_as_torch(bidirectional):
    # torch.nn.LSTM(3, 4, batch_first=True, bidirectional=True) on (0, 5, 3): output (0, 5, 8),
    # h_n and c_n (2, 0, 4), and backward gives x an empty gradient
    lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=bidirectional)
    directions = 2 if bidirectional else 1
    x = mg.zeros(0, 5, 3, requires_grad=True)
    output, (h_n, c_n) = lstm(x, np.zeros(0, np.int64))
    assert output.shape == (0, 5, 4 * directions) and h_n.shape == c_n.shape == (directions, 0, 4)
    (output.sum() + h_n.sum() + c_n.sum()).backward()
    assert x.grad.shape == (0, 5, 3)
    assert all((p.grad.data == 0).all() for p in lstm.parameters())


# ============================================================ kernels


def test_packed_layout_by_hand():
    layout = lstm_kernels.PackedLayout(np.array([2, 3, 1]), reverse=False)
    np.testing.assert_array_equal(layout.order, [1, 0, 2])
    np.testing.assert_array_equal(layout.batch_sizes, [3, 2, 1])
    np.testing.assert_array_equal(layout.rows, [1, 0, 2, 1, 0, 1])
    np.testing.assert_array_equal(layout.times, [0, 0, 0, 1, 1, 2])
    np.testing.assert_array_equal(layout.last, [5, 4, 2])
    assert layout.steps == [(0, 3, None), (3, 2, 0), (5, 1, 3)]
    reverse = lstm_kernels.PackedLayout(np.array([2, 3, 1]), reverse=True)
    np.testing.assert_array_equal(reverse.rows, [1, 0, 2, 1, 0, 1])
    np.testing.assert_array_equal(reverse.times, [2, 1, 0, 1, 0, 0])


numba_only = pytest.mark.skipif(
    kernels.BACKEND != "numba", reason="the numba backend's pass tests the Numba kernels"
)


@numba_only
@pytest.mark.parametrize("dtype", FLOATS)
def test_cell_kernels_match_numpy_twins(dtype):
    from minigrad.kernels import lstm_cell

    rng = np.random.default_rng(11)
    n, hidden = 7, 20
    # pre-activations from saturated to small, so sigmoid and tanh are checked over their range
    gates = (rng.standard_normal((n, 4 * hidden)) * np.logspace(-3, 2, 4 * hidden)).astype(dtype)
    bias = rng.standard_normal(4 * hidden).astype(dtype)
    c_prev = (rng.standard_normal((n, hidden)) * 3).astype(dtype)
    outputs = []
    for cell_forward in (lstm_cell.lstm_cell_forward, twins.lstm_cell_forward):
        activations, c, h = gates.copy(), np.empty_like(c_prev), np.empty_like(c_prev)
        cell_forward(activations, bias, c_prev, c, h)
        outputs.append((activations, c, h))
    tol = dict(rtol=1e-6, atol=3e-7) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-15)
    for ours, twin in zip(*outputs):
        np.testing.assert_allclose(ours, twin, **tol)
    activations, c, _ = outputs[1]
    grad_h_out, grad_h, grad_c = (rng.standard_normal((n, hidden)).astype(dtype) for _ in range(3))
    grads = []
    for cell_backward in (lstm_cell.lstm_cell_backward, twins.lstm_cell_backward):
        dc, d_gates = grad_c.copy(), np.empty_like(gates)
        cell_backward(activations, c_prev, c, grad_h_out, grad_h, dc, d_gates)
        grads.append((dc, d_gates))
    for ours, twin in zip(*grads):
        np.testing.assert_allclose(ours, twin, **tol)


@numba_only
def test_float32_sigmoid_and_tanh_accuracy():
    from minigrad.kernels import lstm_cell

    # the fast float32 exp behind the kernel's gates, over the whole useful range and beyond
    z = np.concatenate([np.linspace(-120, 120, 4001), [-1e-6, 0.0, 1e-6]]).astype(np.float32)
    n = z.size
    gates = np.zeros((n, 4), np.float32)
    gates[:, 0] = gates[:, 2] = gates[:, 3] = z  # i = sigmoid(z), g = tanh(z), o = sigmoid(z)
    c, h = np.empty((n, 1), np.float32), np.empty((n, 1), np.float32)
    lstm_cell.lstm_cell_forward(gates, np.zeros(4, np.float32), np.zeros((n, 1), np.float32), c, h)
    z64 = z.astype(np.float64)
    np.testing.assert_allclose(gates[:, 0], 1 / (1 + np.exp(-z64)), rtol=3e-7, atol=1e-37)
    np.testing.assert_allclose(gates[:, 2], np.tanh(z64), rtol=1e-6, atol=1.5e-7)
    assert gates[:, 0].min() >= 0 and gates[:, 0].max() == 1 and np.abs(gates[:, 2]).max() == 1
