"""The recurrent layers (nn/rnn.py) and nn.utils.rnn's packed sequences; the cells are in
tests/nn/test_rnn_cell.py, the fused LSTM layer against unrolled cells in tests/ops/test_lstm.py
and its kernels in tests/kernels/test_lstm*.py.

First nn.LSTM: finite differences, against PyTorch, padding, errors. Then nn.GRU and nn.RNN
against torch's: the same state dict in both, every layout
(sequence-first, batch-first, bidirectional, two layers, no bias), padded batches with lengths
against pack_padded_sequence, an initial state; outputs, final states and every gradient; a
float64 gradcheck; bad input named. Last a sweep of all three layers and nn.utils.rnn against
PyTorch, written the way a PyTorch user writes the code: torch twins built
from the same state dict, outputs, final states and every gradient compared (float32 to 1e-5,
float64 to 1e-10); packed sequences built every way torch builds them; hostile inputs checked
for the exception class torch code catches. Tests marked xfail(strict=True) pin a real
difference from PyTorch.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from parity import (
    assert_close,
    assert_same_parameter_grads,
    copy_state_to_torch,
    tolerance,
    torch_dtype,
)
from rnn_checks import (
    H,
    I,
    compare_and_backward,
    parameters_replaced,
    random_inputs,
    twin,
    weighted_loss,
    weighted_sum,
)

torch = pytest.importorskip("torch")
torch.set_num_threads(1)
import torch.utils.data  # noqa: E402

FLOATS = (np.float32, np.float64)


# ============================================================ LSTM


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
    output, _ = lstm(x, lengths=lengths)
    output.sum().backward()
    for b, length in enumerate(lengths):
        assert (output.numpy()[b, length:] == 0).all()
        assert (x.grad.numpy()[b, length:] == 0).all()
        assert (np.abs(output.numpy()[b, :length]) > 0).all()


def test_lengths_all_full_equals_no_lengths():
    mg.manual_seed(5)
    lstm = nn.LSTM(3, 4, bidirectional=True)
    x = mg.tensor(np.random.default_rng(5).standard_normal((5, 2, 3)).astype(np.float32))
    out_none, (h_none, _) = lstm(x)
    out_full, (h_full, _) = lstm(x, lengths=mg.tensor([5, 5]))
    np.testing.assert_array_equal(out_none.numpy(), out_full.numpy())
    np.testing.assert_array_equal(h_none.numpy(), h_full.numpy())


# ============================================================ against PyTorch


def torchtwin(torch, lstm):
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
    twin = torchtwin(torch, lstm)
    rng = np.random.default_rng(7)
    steps, batch = 7, 4
    x_data = random_inputs(
        rng, (batch, steps, 5) if batch_first else (steps, batch, 5), lengths, batch_first, dtype
    )

    x = mg.tensor(x_data, requires_grad=True)
    output, (h_n, c_n) = lstm(x, lengths=lengths)
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

    for ours, theirs in [(output, output_t), (h_n, h_t), (c_n, c_t)]:
        assert_close(ours, theirs, "lstm layer")
    assert_close(x.grad, xt.grad, "lstm layer", "x.grad")
    assert_same_parameter_grads(lstm, twin, "lstm layer")


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
    assert_close(output, output_t, "recurrent, many steps", "output")
    assert_close(x.grad, xt.grad, "recurrent, many steps", "x.grad")
    for (name, parameter), theirs in zip(lstm.named_parameters(), twin.parameters()):
        assert_close(parameter.grad, theirs.grad, "recurrent, many steps", name)


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
    np.testing.assert_array_equal(lstm(x)[0].numpy(), back(x)[0].numpy())
    assert_close(back(x)[0], twin(torch.from_numpy(x.numpy()))[0], "state dict round trip")


def test_init_like_torch():
    mg.manual_seed(10)
    lstm = nn.LSTM(20, 64, bidirectional=True)
    bound = 1 / np.sqrt(64)
    values = np.concatenate([p.numpy().ravel() for p in lstm.parameters()])
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
        lstm(x, lengths=[6, 2])
    with pytest.raises(ValueError, match=r"lengths must be in \[1, 5\].*min 0"):
        lstm(x, lengths=[0, 2])
    with pytest.raises(ValueError, match=r"lengths of shape \(batch=2,\).*\(3,\)"):
        lstm(x, lengths=[1, 2, 3])
    with pytest.raises(TypeError, match="lengths must be integers"):
        lstm(x, lengths=[1.5, 2.0])  # whole-number floats are taken, as torch casts them
    with pytest.raises(ValueError, match=r"h0 of shape \(1, 2, 4\)"):
        lstm(x, hx=(mg.zeros(2, 2, 4), mg.zeros(2, 2, 4)))
    state = (mg.ones(1, 2, 4), mg.ones(1, 2, 4))  # positional, as in torch: the same as hx=
    assert_close(lstm(x, state)[0], lstm(x, hx=state)[0], 0)
    with pytest.raises(ValueError, match="input_size, hidden_size and num_layers must be >= 1"):
        nn.LSTM(3, 0)
    with pytest.raises(ValueError, match=r"input_size=3.*\(2, 4\)"):
        nn.LSTMCell(3, 4)(mg.zeros(2, 4))
    with pytest.raises(
        ValueError, match=r"c of shape \(hidden_size=4,\) for input of shape \(3,\); got \(1, 4\)"
    ):
        nn.LSTMCell(3, 4)(mg.zeros(3), (mg.zeros(4), mg.zeros(1, 4)))
    # torch raises too
    with pytest.raises(ValueError, match=r"at least one time step.*\(2, 0, 3\)"):
        lstm(mg.zeros(2, 0, 3))


@pytest.mark.parametrize("bidirectional", [False, True])
def test_a_batch_of_no_sequences_gives_empty_outputs_as_torch(bidirectional):
    # torch.nn.LSTM(3, 4, batch_first=True, bidirectional=True) on (0, 5, 3): output (0, 5, 8),
    # h_n and c_n (2, 0, 4), and backward gives x an empty gradient
    lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=bidirectional)
    directions = 2 if bidirectional else 1
    x = mg.zeros(0, 5, 3, requires_grad=True)
    output, (h_n, c_n) = lstm(x, lengths=np.zeros(0, np.int64))
    assert output.shape == (0, 5, 4 * directions) and h_n.shape == c_n.shape == (directions, 0, 4)
    (output.sum() + h_n.sum() + c_n.sum()).backward()
    assert x.grad.shape == (0, 5, 3)
    assert all((p.grad.numpy() == 0).all() for p in lstm.parameters())


# ============================================================ GRU and RNN

B, T = 3, 5


LENGTHS = np.array([5, 2, 4])


CASES = {
    "seq-first": {},
    "batch-first": {"batch_first": True},
    "bidirectional, two layers": {"bidirectional": True, "num_layers": 2},
    "no bias, batch-first, bidirectional": {
        "bias": False,
        "batch_first": True,
        "bidirectional": True,
    },
}


def _pair(settings, dtype=np.float64, name="GRU"):
    torch = pytest.importorskip("torch")
    ours = getattr(nn, name)(I, H, **settings, dtype=dtype)
    theirs = getattr(torch.nn, name)(I, H, **settings, dtype=getattr(torch, np.dtype(dtype).name))
    theirs.load_state_dict(
        {name: torch.from_numpy(value.numpy().copy()) for name, value in ours.state_dict().items()}
    )
    return torch, ours, theirs


MODULES = {"GRU": ("GRU", {}), "RNN": ("RNN", {}), "RNN relu": ("RNN", {"nonlinearity": "relu"})}


@pytest.mark.parametrize("with_lengths", [False, True], ids=["full", "padded"])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero state", "given state"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("module", MODULES)
def test_gru_and_rnn_match_torch_outputs_states_and_gradients(
    module, case, with_lengths, with_state
):
    name, extra = MODULES[module]
    settings = {**CASES[case], **extra}
    torch, ours, theirs = _pair(settings, name=name)
    first = settings.get("batch_first", False)
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal((B, T, I) if first else (T, B, I))
    h0 = rng.standard_normal((ours.num_layers * ours.num_directions, B, H))
    our_x, their_x = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    our_h0, their_h0 = mg.tensor(h0, requires_grad=True), torch.tensor(h0, requires_grad=True)
    out, h_n = ours(
        our_x, lengths=LENGTHS if with_lengths else None, hx=our_h0 if with_state else None
    )
    source = their_x
    if with_lengths:
        source = torch.nn.utils.rnn.pack_padded_sequence(
            their_x, torch.tensor(LENGTHS), batch_first=first, enforce_sorted=False
        )
    reference, reference_h = theirs(source, their_h0 if with_state else None)
    if with_lengths:
        reference, _ = torch.nn.utils.rnn.pad_packed_sequence(
            reference, batch_first=first, total_length=T
        )
    assert_close(out, reference, "recurrent, one pass", "output")
    assert_close(h_n, reference_h, "recurrent, one pass", "h_n")
    grad, grad_h = rng.standard_normal(out.shape), rng.standard_normal(h_n.shape)
    ((out * mg.tensor(grad)).sum() + (h_n * mg.tensor(grad_h)).sum()).backward()
    (
        (reference * torch.from_numpy(grad)).sum() + (reference_h * torch.from_numpy(grad_h)).sum()
    ).backward()
    assert_close(our_x.grad, their_x.grad, "recurrent, many steps", "x.grad")
    if with_state:
        assert_close(our_h0.grad, their_h0.grad, "recurrent, many steps", "h0.grad")
    assert_same_parameter_grads(ours, theirs, "recurrent, many steps")


def test_gru_float32_and_the_cell_match_torch():
    torch, ours, theirs = _pair({"batch_first": True}, dtype=np.float32)
    x = np.random.default_rng(1).standard_normal((B, T, I)).astype(np.float32)
    assert_close(ours(mg.tensor(x))[0], theirs(torch.from_numpy(x))[0], "recurrent, one pass")
    cell, their_cell = (
        nn.GRUCell(I, H, dtype=np.float64),
        torch.nn.GRUCell(I, H, dtype=torch.float64),
    )
    their_cell.load_state_dict(
        {name: torch.from_numpy(v.numpy().copy()) for name, v in cell.state_dict().items()}
    )
    step, h = (
        np.random.default_rng(2).standard_normal((2, I)),
        np.random.default_rng(3).standard_normal((2, H)),
    )
    assert_close(
        cell(mg.tensor(step), mg.tensor(h)),
        their_cell(torch.from_numpy(step), torch.from_numpy(h)),
        "one recurrent step",
    )
    assert_close(
        cell(mg.tensor(step[0])), their_cell(torch.from_numpy(step[0])), "one recurrent step"
    )  # unbatched, zero state


def test_gru_gradcheck_float64():
    mg.manual_seed(0)
    gru = nn.GRU(2, 3, bidirectional=True, dtype=np.float64)
    x = np.random.default_rng(4).standard_normal((4, 2, 2))
    weights = mg.tensor(np.random.default_rng(5).standard_normal((4, 2, 6)))
    assert mg.gradcheck(
        lambda inputs: (gru(inputs, lengths=np.array([4, 3]))[0] * weights).sum(), [mg.tensor(x)]
    )


@pytest.mark.parametrize(
    "name, settings", [("GRU", {}), ("RNN", {}), ("RNN", {"nonlinearity": "relu"})]
)
def test_gru_and_rnn_unbatched_gradcheck_two_layers_bidirectional(name, settings):
    mg.manual_seed(1)
    layer = getattr(nn, name)(
        2, 3, 2, bidirectional=True, batch_first=True, dtype=np.float64, **settings
    )
    rng = np.random.default_rng(8)
    x, h0 = rng.standard_normal((4, 2)), rng.standard_normal((4, 3))

    def run(x, h0):  # the parameters' gradients are checked against torch's (the sweep below)
        output, h_n = layer(x, hx=h0)
        assert output.shape == (4, 6) and h_n.shape == (4, 3)
        return mg.cat([output.reshape(-1), h_n.reshape(-1)])

    assert mg.gradcheck(run, [x, h0])


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda g: g(mg.randn(5, 3, 2, dtype=mg.float64)),
            ValueError,
            r"input of shape \(time, batch, input_size\) or unbatched \(time, input_size\), with "
            r"input_size=3",
        ),
        (
            lambda g: g(mg.randn(5, 2, dtype=mg.float64)),
            ValueError,
            r"input_size=3; got shape \(5, 2\)",
        ),
        (
            lambda g: g(mg.randn(5, 3, dtype=mg.float64), hx=mg.zeros(1, 1, 4, dtype=mg.float64)),
            ValueError,
            r"expected hx of shape \(1, 4\) .* for unbatched input of shape \(5, 3\); "
            r"got shape \(1, 1, 4\)",
        ),
        (
            lambda g: g(mg.randn(5, 3, dtype=mg.float64), lengths=[5]),
            ValueError,
            "lengths are for a padded batch",
        ),
        (
            lambda g: g(mg.randn(5, 3, 3)),
            TypeError,
            "input dtype float32 does not match the parameters' dtype float64",
        ),
        (
            lambda g: g(mg.randn(5, 3, 3, dtype=mg.float64), lengths=[5, 6, 1]),
            ValueError,
            r"lengths must be in \[1, 5\]",
        ),
        (
            lambda g: g(
                mg.randn(5, 3, 3, dtype=mg.float64), hx=mg.zeros(2, 3, 4, dtype=mg.float64)
            ),
            ValueError,
            r"expected hx of shape \(1, 3, 4\)",
        ),
        (lambda g: g(mg.randn(0, 3, 3, dtype=mg.float64)), ValueError, "at least one time step"),
    ],
)
def test_gru_bad_input_names_what_was_expected(call, error, message):
    with pytest.raises(error, match=message):
        call(nn.GRU(I, H, dtype=np.float64))
    with pytest.raises(ValueError, match="must be >= 1"):
        nn.GRU(I, 0)
    with pytest.raises(ValueError, match="nonlinearity must be 'tanh' or 'relu'; got 'sigmoid'"):
        nn.RNN(I, H, nonlinearity="sigmoid")


def test_pack_sequence_and_bad_packing():
    rnn = nn.utils.rnn
    packed = rnn.pack_sequence([mg.ones(3, 2), mg.ones(1, 2) * 2])
    assert packed.batch_sizes.numpy().tolist() == [2, 1, 1]
    assert packed.data.numpy()[:, 0].tolist() == [1, 2, 1, 1]
    state = mg.zeros(1, 2, H, dtype=mg.float64)
    output, h_n = nn.GRU(2, H, dtype=np.float64)(
        rnn.pack_sequence([mg.ones(3, 2, dtype=mg.float64), mg.ones(1, 2, dtype=mg.float64)]), state
    )
    # the state as second argument
    assert isinstance(output, rnn.PackedSequence) and h_n.shape == (1, 2, H)
    with pytest.raises(
        ValueError, match=r"decreasing order when enforce_sorted=True; got \[1, 3\]"
    ):
        rnn.pack_sequence([mg.ones(1, 2), mg.ones(3, 2)])
    with pytest.raises(ValueError, match=r"lengths must be in \[1, 5\]"):
        rnn.pack_padded_sequence(mg.ones(5, 3, 2), [5, 0, 2])
    with pytest.raises(ValueError, match=r"lengths must be 3 integers"):
        rnn.pack_padded_sequence(mg.ones(5, 3, 2), [5, 2])
    with pytest.raises(ValueError, match="total_length=2 is shorter than the longest sequence"):
        rnn.pad_packed_sequence(packed, total_length=2)
    with pytest.raises(TypeError, match="expected a PackedSequence; got Tensor"):
        rnn.pad_packed_sequence(mg.ones(3, 2))


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_packed_sequences_through_lstm_and_gru_match_torch(name, batch_first):
    torch = pytest.importorskip("torch")
    rnn, torch_rnn = nn.utils.rnn, torch.nn.utils.rnn
    ours = getattr(nn, name)(I, H, batch_first=batch_first, bidirectional=True, dtype=np.float64)
    theirs = getattr(torch.nn, name)(
        I, H, batch_first=batch_first, bidirectional=True, dtype=torch.float64
    )
    theirs.load_state_dict(
        {key: torch.from_numpy(v.numpy().copy()) for key, v in ours.state_dict().items()}
    )
    x = np.random.default_rng(6).standard_normal((B, T, I) if batch_first else (T, B, I))
    our_x, their_x = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    packed = rnn.pack_padded_sequence(our_x, LENGTHS, batch_first=batch_first, enforce_sorted=False)
    their_packed = torch_rnn.pack_padded_sequence(
        their_x, torch.tensor(LENGTHS), batch_first=batch_first, enforce_sorted=False
    )
    for field in ("data", "batch_sizes", "sorted_indices", "unsorted_indices"):
        np.testing.assert_array_equal(
            getattr(packed, field).numpy(), getattr(their_packed, field).detach().numpy()
        )
    out, state = ours(packed)
    reference, their_state = theirs(their_packed)
    assert_close(out.data, reference.data, "recurrent, one pass", "out.data")
    padded, lengths = rnn.pad_packed_sequence(
        out, batch_first=batch_first, padding_value=-2.0, total_length=T + 1
    )
    their_padded, their_lengths = torch_rnn.pad_packed_sequence(
        reference, batch_first=batch_first, padding_value=-2.0, total_length=T + 1
    )
    assert_close(padded, their_padded, "recurrent, one pass", "padded")
    np.testing.assert_array_equal(lengths.numpy(), their_lengths.numpy())
    h_n, their_h_n = (state[0], their_state[0]) if name == "LSTM" else (state, their_state)
    assert_close(h_n, their_h_n, "recurrent, one pass", "h_n")
    grad = np.random.default_rng(7).standard_normal(padded.shape)
    ((padded * mg.tensor(grad)).sum() + h_n.sum()).backward()
    ((their_padded * torch.from_numpy(grad)).sum() + their_h_n.sum()).backward()
    assert_close(our_x.grad, their_x.grad, "recurrent, many steps", "x.grad")


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_dropout_between_layers_while_training_matches_torch_at_p_1(name):
    """dropout=1 zeroes every layer's output but the last's while training (deterministic, so
    torch's result to compare with): the last layer then sees only zeros. In eval: no dropout."""
    torch = pytest.importorskip("torch")
    ours = getattr(nn, name)(3, 4, 2, dropout=1.0)
    theirs = getattr(torch.nn, name)(3, 4, 2, dropout=1.0).double()
    ours.double()
    theirs.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in ours.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 2, 3))
    for training in (True, False):
        ours.train(training), theirs.train(training)
        out = ours(mg.tensor(x))[0]
        torch_out = theirs(torch.tensor(x))[0]
        assert_close(out, torch_out, "recurrent, many steps")


LAYERS = {
    "LSTM": ("LSTM", {}),
    "GRU": ("GRU", {}),
    "RNN": ("RNN", {}),
    "RNN relu": ("RNN", {"nonlinearity": "relu"}),
}


LAYOUTS = {
    "1 layer": dict(num_layers=1),
    "2 layers bidir batch_first": dict(num_layers=2, bidirectional=True, batch_first=True),
    "3 layers batch_first no bias": dict(num_layers=3, batch_first=True, bias=False),
    "3 layers bidir seq-first": dict(num_layers=3, bidirectional=True),
    "1 layer bidir batch_first no bias": dict(
        num_layers=1, bidirectional=True, batch_first=True, bias=False
    ),
}


SIZES = {
    "T5 B3": (5, 3),
    "T1 B3": (1, 3),
    "T4 B1": (4, 1),
    "T1 B1": (1, 1),
    "T5 unbatched": (5, None),
    "T1 unbatched": (1, None),
}  # torch's (time, input_size), batch_first or not


def _input_and_state_shapes(settings, steps, batch):
    """x's shape and each state's: batched in the layer's layout, or torch's unbatched (batch
    None)."""
    layers = settings["num_layers"] * (2 if settings.get("bidirectional") else 1)
    if batch is None:
        return (steps, I), (layers, H)
    return ((batch, steps, I) if settings.get("batch_first") else (steps, batch, I)), (
        layers,
        batch,
        H,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero state", "given state"])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("module", LAYERS)
def test_layer_matches_torch(module, layout, size, with_state, dtype):
    name, extra = LAYERS[module]
    settings = {**LAYOUTS[layout], **extra}
    ours, theirs = twin(name, dtype, **settings)
    x_shape, state_shape = _input_and_state_shapes(settings, *SIZES[size])
    rng = np.random.default_rng(3)
    x = rng.standard_normal(x_shape).astype(dtype)
    states = [
        rng.standard_normal(state_shape).astype(dtype) for _ in range(2 if name == "LSTM" else 1)
    ]
    our_x, their_x = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    our_s = [mg.tensor(s, requires_grad=True) for s in states]
    their_s = [torch.tensor(s, requires_grad=True) for s in states]
    if name == "LSTM":
        out, (h_n, c_n) = ours(our_x, hx=tuple(our_s) if with_state else None)
        ref, (their_h, their_c) = theirs(their_x, tuple(their_s) if with_state else None)
        finals, their_finals = [h_n, c_n], [their_h, their_c]
    else:
        out, h_n = ours(our_x, hx=our_s[0] if with_state else None)
        ref, their_h = theirs(their_x, their_s[0] if with_state else None)
        finals, their_finals = [h_n], [their_h]
    states = [(a, b, "state") for a, b in zip(our_s, their_s)] if with_state else []
    compare_and_backward(
        [out] + finals, [ref] + their_finals, dtype, 4, [(our_x, their_x, "x")] + states
    )
    assert_same_parameter_grads(ours, theirs, tolerance("recurrent", dtype))


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_dropout_between_layers_in_eval_matches_torch(name):
    ours, theirs = twin(name, np.float64, num_layers=3, dropout=0.5)
    ours.eval(), theirs.eval()
    x = np.random.default_rng(0).standard_normal((4, 2, I))
    assert_close(
        ours(mg.tensor(x))[0], theirs(torch.from_numpy(x))[0], tolerance("recurrent", np.float64)
    )


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_unbatched_input_matches_torch(name):
    ours, theirs = twin(name, np.float64, num_layers=2, bidirectional=True)
    x = np.random.default_rng(0).standard_normal((4, I))
    out, ref = ours(mg.tensor(x))[0], theirs(torch.from_numpy(x))[0]
    assert_close(out, ref, tolerance("recurrent", np.float64))


def test_lstm_proj_size_is_refused_by_name():
    # torch supports proj_size for LSTM; minigrad does not, and must say so clearly
    with pytest.raises(TypeError, match="proj_size"):
        nn.LSTM(I, H, proj_size=2)


def test_positional_bias_and_batch_first_as_in_torch():
    ours = nn.LSTM(I, H, 1, False, True)
    theirs = torch.nn.LSTM(I, H, 1, False, True)
    assert list(ours.state_dict()) == list(theirs.state_dict()) and ours.batch_first


def test_flatten_parameters_changes_nothing_as_in_torch():
    # torch packs the weights for cuDNN; on the CPU, as in minigrad, it is a no-op returning None
    ours, theirs = twin("LSTM", np.float64)
    parameters = list(ours.parameters())
    values = [p.numpy().copy() for p in parameters]
    assert ours.flatten_parameters() is None and theirs.flatten_parameters() is None
    assert all(a is b for a, b in zip(ours.parameters(), parameters))
    assert len(list(ours.parameters())) == len(parameters)
    for p, value in zip(ours.parameters(), values):
        np.testing.assert_array_equal(p.numpy(), value)
    x = np.random.default_rng(5).standard_normal((4, 2, I))
    out, (h, c) = ours(mg.tensor(x))
    their_out, (their_h, their_c) = theirs(torch.from_numpy(x))
    for mine, reference in ((out, their_out), (h, their_h), (c, their_c)):
        assert_close(mine, reference, tolerance("recurrent", np.float64))


PACK_CASES = {
    "sorted list": dict(lengths=[5, 4, 2], enforce_sorted=True, as_tensor=False),
    "sorted tensor": dict(lengths=[5, 5, 1], enforce_sorted=True, as_tensor=True),
    "unsorted tensor": dict(lengths=[2, 5, 3], enforce_sorted=False, as_tensor=True),
    "unsorted list, padded longer": dict(
        lengths=[1, 3, 4], enforce_sorted=False, as_tensor=False
    ),  # T=5 > max 4
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("case", PACK_CASES)
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_packed_matches_torch(name, case, batch_first, dtype):
    c = PACK_CASES[case]
    rnn, their_rnn = nn.utils.rnn, torch.nn.utils.rnn
    ours, theirs = twin(name, dtype, num_layers=2, bidirectional=True, batch_first=batch_first)
    steps, batch = 5, 3
    rng = np.random.default_rng(11)
    x = rng.standard_normal((batch, steps, I) if batch_first else (steps, batch, I)).astype(dtype)
    states = [
        rng.standard_normal((4, batch, H)).astype(dtype) for _ in range(2 if name == "LSTM" else 1)
    ]
    our_x, their_x = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    our_s = [mg.tensor(s, requires_grad=True) for s in states]
    their_s = [torch.tensor(s, requires_grad=True) for s in states]
    our_len = mg.tensor(c["lengths"]) if c["as_tensor"] else c["lengths"]
    their_len = torch.tensor(c["lengths"]) if c["as_tensor"] else c["lengths"]
    packed = rnn.pack_padded_sequence(
        our_x, our_len, batch_first=batch_first, enforce_sorted=c["enforce_sorted"]
    )
    their_packed = their_rnn.pack_padded_sequence(
        their_x, their_len, batch_first=batch_first, enforce_sorted=c["enforce_sorted"]
    )
    assert_close(packed.data, their_packed.data, tolerance("recurrent", dtype), "packed.data")
    np.testing.assert_array_equal(packed.batch_sizes.numpy(), their_packed.batch_sizes.numpy())
    if c["enforce_sorted"]:
        assert their_packed.sorted_indices is None  # torch; minigrad's may be the identity
    else:
        np.testing.assert_array_equal(
            packed.sorted_indices.numpy(), their_packed.sorted_indices.numpy()
        )
        np.testing.assert_array_equal(
            packed.unsorted_indices.numpy(), their_packed.unsorted_indices.numpy()
        )
    state = tuple(our_s) if name == "LSTM" else our_s[0]
    their_state = tuple(their_s) if name == "LSTM" else their_s[0]
    out, final = ours(packed, state)
    ref, their_final = theirs(their_packed, their_state)
    finals = list(final) if name == "LSTM" else [final]
    their_finals = list(their_final) if name == "LSTM" else [their_final]
    assert_close(out.data, ref.data, tolerance("recurrent", dtype), "out.data")
    for a, b in zip(finals, their_finals):
        assert_close(a, b, tolerance("recurrent", dtype), "final state")
    padded, lengths = rnn.pad_packed_sequence(
        out, batch_first=batch_first, padding_value=-3.0, total_length=7
    )
    their_padded, their_lengths = their_rnn.pad_packed_sequence(
        ref, batch_first=batch_first, padding_value=-3.0, total_length=7
    )
    assert_close(padded, their_padded, tolerance("recurrent", dtype), "padded")
    np.testing.assert_array_equal(lengths.numpy(), their_lengths.numpy())
    assert lengths.dtype == mg.int64
    short, _ = rnn.pad_packed_sequence(out, batch_first=batch_first)
    their_short, _ = their_rnn.pad_packed_sequence(ref, batch_first=batch_first)
    assert_close(short, their_short, tolerance("recurrent", dtype), "padded to the longest")
    (weighted_sum([padded] + finals, mg, 5) + weighted_sum([short], mg, 6)).backward()
    (
        weighted_sum([their_padded] + their_finals, torch, 5)
        + weighted_sum([their_short], torch, 6)
    ).backward()
    assert_close(our_x.grad, their_x.grad, tolerance("recurrent", dtype), "x.grad")
    for a, b in zip(our_s, their_s):
        assert_close(a.grad, b.grad, tolerance("recurrent", dtype), "state grad")
    assert_same_parameter_grads(ours, theirs, tolerance("recurrent", dtype))


JUNK = {"NaN": np.nan, "inf": np.inf, "-inf": -np.inf}
JUNK_LAYERS = {
    "one layer": dict(),
    "two layers, bidirectional": dict(num_layers=2, bidirectional=True),
    "three layers": dict(num_layers=3),
}


@pytest.mark.parametrize("junk", JUNK)
@pytest.mark.parametrize("given", ["lengths", "packed"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["time first", "batch first"])
@pytest.mark.parametrize("layers", JUNK_LAYERS)
@pytest.mark.parametrize("name", ["GRU", "RNN", "LSTM"])
def test_junk_in_the_padding_reaches_no_output_and_no_gradient(
    name, layers, batch_first, given, junk
):
    """A padded batch whose positions past each length hold NaN or inf (what a buffer reused for
    padding may hold), given with lengths= or as a PackedSequence: outputs, final states and every
    gradient are torch's with pack_padded_sequence, all finite, the input's 0 at the padding."""
    rnn, their_rnn = nn.utils.rnn, torch.nn.utils.rnn
    ours, theirs = twin(name, np.float64, batch_first=batch_first, **JUNK_LAYERS[layers])
    lengths, steps = [4, 2, 1], 4
    x = np.random.default_rng(12).standard_normal((len(lengths), steps, I))
    x[np.arange(steps)[None, :] >= np.array(lengths)[:, None]] = JUNK[junk]
    x = x if batch_first else x.transpose(1, 0, 2).copy()
    our_x, their_x = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)

    def packed(library, x):
        return library.pack_padded_sequence(
            x, lengths, batch_first=batch_first, enforce_sorted=False
        )

    their_out, their_final = theirs(packed(their_rnn, their_x))
    their_out = their_rnn.pad_packed_sequence(
        their_out, batch_first=batch_first, total_length=steps
    )[0]
    if given == "packed":
        out, final = ours(packed(rnn, our_x))
        out = rnn.pad_packed_sequence(out, batch_first=batch_first, total_length=steps)[0]
    else:
        out, final = ours(our_x, lengths=lengths)
    finals = list(final) if name == "LSTM" else [final]
    their_finals = list(their_final) if name == "LSTM" else [their_final]
    compare_and_backward(
        [out, *finals], [their_out, *their_finals], np.float64, 13, [(our_x, their_x, "x")]
    )
    assert_same_parameter_grads(ours, theirs, tolerance("recurrent", np.float64))
    for parameter_name, parameter in ours.named_parameters():
        assert np.isfinite(parameter.grad.numpy()).all(), parameter_name
    assert np.isfinite(our_x.grad.numpy()).all()


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_sequence_round_trip_and_gradients(enforce_sorted):
    rnn, their_rnn = nn.utils.rnn, torch.nn.utils.rnn
    arrays = [
        np.random.default_rng(k).standard_normal((n, 2))
        for k, n in enumerate((4, 3, 1) if enforce_sorted else (2, 4, 1))
    ]
    ours = [mg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    packed = rnn.pack_sequence(ours, enforce_sorted=enforce_sorted)
    their_packed = their_rnn.pack_sequence(theirs, enforce_sorted=enforce_sorted)
    assert_close(packed.data, their_packed.data, tolerance("recurrent", np.float64))
    padded, lengths = rnn.pad_packed_sequence(packed, batch_first=True, padding_value=9.0)
    their_padded, their_lengths = their_rnn.pad_packed_sequence(
        their_packed, batch_first=True, padding_value=9.0
    )
    assert_close(padded, their_padded, tolerance("recurrent", np.float64))
    np.testing.assert_array_equal(lengths.numpy(), their_lengths.numpy())
    weighted_sum([padded, packed.data], mg, 1).backward()
    weighted_sum([their_padded, their_packed.data], torch, 1).backward()
    for a, b in zip(ours, theirs):
        assert_close(a.grad, b.grad, tolerance("recurrent", np.float64))


def test_packed_sequence_rebuilt_from_its_fields():
    rnn = nn.utils.rnn
    packed = rnn.pack_padded_sequence(mg.ones(4, 3, 2), [4, 2, 3], enforce_sorted=False)
    doubled = rnn.PackedSequence(
        packed.data * 2, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
    )
    padded, _ = rnn.pad_packed_sequence(doubled)
    assert padded.numpy()[0].tolist() == [[2, 2]] * 3


# batch_sizes, sorted_indices (None: the sequences are in sorted order), unsorted_indices given
FIELDS = {
    "both indices": ([3, 2, 2, 1], [1, 2, 0], True),
    "ties in a non-stable order": ([3, 3, 1], [2, 0, 1], True),
    "sorted_indices only": ([4, 2, 1], [3, 0, 2, 1], False),
    "no indices": ([2, 2, 1, 1], None, False),
    "one sequence": ([1, 1, 1], [0], True),
}


CONSTRUCTORS = {
    "positional": lambda cls, data, sizes, order, inverse: cls(data, sizes, order, inverse),
    "keywords": lambda cls, data, sizes, order, inverse: cls(
        data=data, batch_sizes=sizes, sorted_indices=order, unsorted_indices=inverse
    ),
    "the pair (data, batch_sizes)": lambda cls, data, sizes, order, inverse: cls(
        (data, sizes), sorted_indices=order, unsorted_indices=inverse
    ),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("constructor", CONSTRUCTORS)
@pytest.mark.parametrize("fields", FIELDS)
def test_packed_sequence_from_fields_matches_torch(fields, constructor, dtype):
    sizes, order, with_inverse = FIELDS[fields]
    build = CONSTRUCTORS[constructor]
    rng = np.random.default_rng(21)
    data = rng.standard_normal((sum(sizes), I)).astype(dtype)
    h0 = rng.standard_normal((1, sizes[0], H)).astype(dtype)
    inverse = None if order is None or not with_inverse else np.argsort(order)
    our_data, their_data = (
        mg.tensor(data, requires_grad=True),
        torch.tensor(data, requires_grad=True),
    )
    our_h0, their_h0 = mg.tensor(h0, requires_grad=True), torch.tensor(h0, requires_grad=True)
    ours = build(
        nn.utils.rnn.PackedSequence,
        our_data,
        mg.tensor(sizes),
        *(None if a is None else mg.tensor(a) for a in (order, inverse)),
    )
    theirs = build(
        torch.nn.utils.rnn.PackedSequence,
        their_data,
        torch.tensor(sizes),
        *(None if a is None else torch.tensor(a) for a in (order, inverse)),
    )
    assert_close(ours.data, theirs.data, tolerance("recurrent", dtype), "data")
    np.testing.assert_array_equal(ours.batch_sizes.numpy(), theirs.batch_sizes.numpy())
    if order is not None:  # torch keeps None; minigrad gives the identity
        np.testing.assert_array_equal(ours.sorted_indices.numpy(), theirs.sorted_indices.numpy())
        np.testing.assert_array_equal(
            ours.unsorted_indices.numpy(), theirs.unsorted_indices.numpy()
        )
    padded, lengths = nn.utils.rnn.pad_packed_sequence(ours, batch_first=True, padding_value=-1.0)
    their_padded, their_lengths = torch.nn.utils.rnn.pad_packed_sequence(
        theirs, batch_first=True, padding_value=-1.0
    )
    assert_close(padded, their_padded, tolerance("recurrent", dtype), "padded")
    np.testing.assert_array_equal(lengths.numpy(), their_lengths.numpy())
    lstm, their_lstm = twin("LSTM", dtype)
    out, (h_n, c_n) = lstm(ours, (our_h0, mg.zeros_like(our_h0)))
    ref, (their_h, their_c) = their_lstm(theirs, (their_h0, torch.zeros_like(their_h0)))
    compare_and_backward(
        [padded, out.data, h_n, c_n],
        [their_padded, ref.data, their_h, their_c],
        dtype,
        22,
        [(our_data, their_data, "data"), (our_h0, their_h0, "h0")],
    )
    assert_same_parameter_grads(lstm, their_lstm, tolerance("recurrent", dtype))


def test_packed_sequence_from_unsorted_indices_alone_matches_torch():
    # torch keeps sorted_indices None then, yet undoes the order on the way out; minigrad takes
    # sorted_indices as its inverse (the same padded batch; torch would not reorder an hx)
    rnn, their_rnn = nn.utils.rnn, torch.nn.utils.rnn
    data = np.random.default_rng(23).standard_normal((6, 2))
    ours = rnn.PackedSequence(
        mg.tensor(data, requires_grad=True), [3, 2, 1], unsorted_indices=[2, 0, 1]
    )
    theirs = their_rnn.PackedSequence(
        torch.tensor(data), torch.tensor([3, 2, 1]), unsorted_indices=torch.tensor([2, 0, 1])
    )
    assert_close(
        rnn.pad_packed_sequence(ours)[0],
        their_rnn.pad_packed_sequence(theirs)[0],
        tolerance("recurrent", np.float64),
    )
    np.testing.assert_array_equal(ours.sorted_indices.numpy(), [1, 2, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_a_layer_mapped_over_packed_data_matches_torch(name, dtype):
    # torch's idiom: PackedSequence(f(packed.data), packed.batch_sizes, packed.sorted_indices,
    # packed.unsorted_indices)
    rnn, their_rnn = nn.utils.rnn, torch.nn.utils.rnn
    linear, their_linear = (
        nn.Linear(2, I, dtype=dtype),
        torch.nn.Linear(2, I, dtype=torch_dtype(dtype)),
    )
    their_linear.load_state_dict(
        {k: torch.from_numpy(v.numpy().copy()) for k, v in linear.state_dict().items()}
    )
    layer, their_layer = twin(name, dtype, bidirectional=True, batch_first=True)
    x = np.random.default_rng(24).standard_normal((4, 6, 2)).astype(dtype)
    our_x, their_x = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    lengths = [3, 6, 1, 4]
    packed = rnn.pack_padded_sequence(our_x, lengths, batch_first=True, enforce_sorted=False)
    their_packed = their_rnn.pack_padded_sequence(
        their_x, lengths, batch_first=True, enforce_sorted=False
    )
    mapped = rnn.PackedSequence(
        linear(packed.data).tanh(),
        packed.batch_sizes,
        packed.sorted_indices,
        packed.unsorted_indices,
    )
    their_mapped = their_rnn.PackedSequence(
        their_linear(their_packed.data).tanh(),
        their_packed.batch_sizes,
        their_packed.sorted_indices,
        their_packed.unsorted_indices,
    )
    out, final = layer(mapped)
    ref, their_final = their_layer(their_mapped)
    finals = list(final) if name == "LSTM" else [final]
    their_finals = list(their_final) if name == "LSTM" else [their_final]
    padded, _ = rnn.pad_packed_sequence(out, batch_first=True)
    their_padded, _ = their_rnn.pad_packed_sequence(ref, batch_first=True)
    compare_and_backward(
        [padded] + finals, [their_padded] + their_finals, dtype, 25, [(our_x, their_x, "x")]
    )
    assert_same_parameter_grads(linear, their_linear, tolerance("recurrent", dtype))
    assert_same_parameter_grads(layer, their_layer, tolerance("recurrent", dtype))


def test_packed_sequence_unpacks_as_torch_namedtuple():
    rnn, their_rnn = nn.utils.rnn, torch.nn.utils.rnn
    x = np.random.default_rng(0).standard_normal((4, 3, 2))
    ours = rnn.pack_padded_sequence(mg.tensor(x), [2, 4, 3], enforce_sorted=False)
    theirs = their_rnn.pack_padded_sequence(
        torch.from_numpy(x), torch.tensor([2, 4, 3]), enforce_sorted=False
    )
    assert len(ours) == len(theirs) == 4
    for mine, their in zip(ours, theirs):
        np.testing.assert_array_equal(mine.numpy(), their.numpy())
    data, batch_sizes, _, _ = ours
    np.testing.assert_array_equal(ours[0].numpy(), data.numpy())
    np.testing.assert_array_equal(ours[-3].numpy(), batch_sizes.numpy())
    assert [t.numpy().tolist() for t in ours[2:]] == [t.numpy().tolist() for t in theirs[2:]]


def test_float_lengths_are_cast_as_torch():
    packed = nn.utils.rnn.pack_padded_sequence(mg.ones(5, 3, 2), mg.tensor([5.0, 2.0, 1.0]))
    assert packed.batch_sizes.numpy().tolist() == [3, 2, 1, 1, 1]


def test_pad_sequence_of_integers_with_a_float_padding_value():
    seqs = [np.array([1, 2, 3]), np.array([4])]
    out = nn.utils.rnn.pad_sequence(
        [mg.tensor(s) for s in seqs], batch_first=True, padding_value=-1, padding_side="left"
    )
    ref = torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(s) for s in seqs], batch_first=True, padding_value=-1, padding_side="left"
    )
    assert out.dtype == mg.int64 and out.numpy().tolist() == ref.numpy().tolist()


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"nonlinearity": "relu"},
        {"num_layers": 2, "bias": False},
        {"batch_first": True, "bidirectional": True, "dropout": 0.5},
    ],
)
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_layer_repr_as_torch(name, settings):
    if name != "RNN" and "nonlinearity" in settings:
        pytest.skip("only RNN has a nonlinearity")
    assert repr(getattr(nn, name)(I, H, **settings)) == repr(
        getattr(torch.nn, name)(I, H, **settings)
    )


def _lstm():
    return nn.LSTM(I, H, batch_first=True), torch.nn.LSTM(I, H, batch_first=True)


def _gru():
    return nn.GRU(I, H), torch.nn.GRU(I, H)


HOSTILE = {
    # name: (minigrad call, torch call, words minigrad's message must hold)
    "LSTM wrong input size": (
        lambda: _lstm()[0](mg.zeros(2, 5, 4)),
        lambda: _lstm()[1](torch.zeros(2, 5, 4)),
        ["input_size=3", "(2, 5, 4)"],
    ),
    "GRU wrong input size": (
        lambda: _gru()[0](mg.zeros(5, 2, 4)),
        lambda: _gru()[1](torch.zeros(5, 2, 4)),
        ["input_size=3", "(5, 2, 4)"],
    ),
    "LSTM float64 input": (
        lambda: _lstm()[0](mg.zeros(2, 5, 3, dtype=mg.float64)),
        lambda: _lstm()[1](torch.zeros(2, 5, 3, dtype=torch.float64)),
        ["float64", "float32"],
    ),
    "GRU int input": (
        lambda: _gru()[0](mg.zeros(5, 2, 3, dtype=mg.int64)),
        lambda: _gru()[1](torch.zeros(5, 2, 3, dtype=torch.int64)),
        ["int64", "float32"],
    ),
    "LSTM h0 wrong shape": (
        lambda: _lstm()[0](mg.zeros(2, 5, 3), hx=(mg.zeros(2, 2, 4), mg.zeros(2, 2, 4))),
        lambda: _lstm()[1](torch.zeros(2, 5, 3), (torch.zeros(2, 2, 4), torch.zeros(2, 2, 4))),
        ["(1, 2, 4)", "(2, 2, 4)"],
    ),
    "GRU h0 wrong shape": (
        lambda: _gru()[0](mg.zeros(5, 2, 3), hx=mg.zeros(1, 3, 4)),
        lambda: _gru()[1](torch.zeros(5, 2, 3), torch.zeros(1, 3, 4)),
        ["(1, 2, 4)", "(1, 3, 4)"],
    ),
    "LSTM no time steps": (
        lambda: _lstm()[0](mg.zeros(2, 0, 3)),
        lambda: _lstm()[1](torch.zeros(2, 0, 3)),
        ["time step", "(2, 0, 3)"],
    ),
    "LSTMCell wrong input size": (
        lambda: nn.LSTMCell(I, H)(mg.zeros(2, 4)),
        lambda: torch.nn.LSTMCell(I, H)(torch.zeros(2, 4)),
        ["input_size=3", "(2, 4)"],
    ),
    "GRUCell state of another batch": (
        lambda: nn.GRUCell(I, H)(mg.zeros(2, 3), mg.zeros(3, 4)),
        lambda: torch.nn.GRUCell(I, H)(torch.zeros(2, 3), torch.zeros(3, 4)),
        ["batch=2", "(3, 4)"],
    ),
    "pack a length of 0": (
        lambda: nn.utils.rnn.pack_padded_sequence(mg.zeros(5, 3, 2), [5, 2, 0]),
        lambda: torch.nn.utils.rnn.pack_padded_sequence(torch.zeros(5, 3, 2), [5, 2, 0]),
        ["[1, 5]", "[5, 2, 0]"],
    ),
    "pack unsorted with enforce_sorted": (
        lambda: nn.utils.rnn.pack_padded_sequence(mg.zeros(5, 3, 2), [2, 5, 1]),
        lambda: torch.nn.utils.rnn.pack_padded_sequence(torch.zeros(5, 3, 2), [2, 5, 1]),
        ["enforce_sorted", "[2, 5, 1]"],
    ),
    "pack lengths of another batch": (
        lambda: nn.utils.rnn.pack_padded_sequence(mg.zeros(5, 3, 2), [5, 2]),
        lambda: torch.nn.utils.rnn.pack_padded_sequence(torch.zeros(5, 3, 2), [5, 2]),
        ["3", "(2,)"],
    ),
    "pad_sequence of nothing": (
        lambda: nn.utils.rnn.pad_sequence([]),
        lambda: torch.nn.utils.rnn.pad_sequence([]),
        ["no sequences"],
    ),
    "pad_packed total_length too short": (
        lambda: nn.utils.rnn.pad_packed_sequence(
            nn.utils.rnn.pack_padded_sequence(mg.zeros(5, 3, 2), [5, 2, 1]), total_length=2
        ),
        lambda: torch.nn.utils.rnn.pad_packed_sequence(
            torch.nn.utils.rnn.pack_padded_sequence(torch.zeros(5, 3, 2), [5, 2, 1]), total_length=2
        ),
        ["total_length=2", "5"],
    ),
    # torch's unbatched input (time, input_size) and states (num_layers * num_directions, hidden)
    "LSTM batched input, unbatched state": (
        lambda: _lstm()[0](mg.zeros(2, 5, 3), hx=(mg.zeros(1, 4), mg.zeros(1, 4))),
        lambda: _lstm()[1](torch.zeros(2, 5, 3), (torch.zeros(1, 4), torch.zeros(1, 4))),
        ["(1, 2, 4)", "(1, 4)"],
    ),
    "LSTM unbatched input, batched state": (
        lambda: _lstm()[0](mg.zeros(5, 3), hx=(mg.zeros(1, 1, 4), mg.zeros(1, 1, 4))),
        lambda: _lstm()[1](torch.zeros(5, 3), (torch.zeros(1, 1, 4), torch.zeros(1, 1, 4))),
        ["unbatched", "(1, 4)", "(1, 1, 4)"],
    ),
    "LSTM unbatched input, one state batched": (
        lambda: _lstm()[0](mg.zeros(5, 3), hx=(mg.zeros(1, 4), mg.zeros(1, 1, 4))),
        lambda: _lstm()[1](torch.zeros(5, 3), (torch.zeros(1, 4), torch.zeros(1, 1, 4))),
        ["c0", "(1, 1, 4)"],
    ),
    "GRU batched input, unbatched state": (
        lambda: _gru()[0](mg.zeros(5, 2, 3), hx=mg.zeros(1, 4)),
        lambda: _gru()[1](torch.zeros(5, 2, 3), torch.zeros(1, 4)),
        ["(1, 2, 4)", "(1, 4)"],
    ),
    "GRU unbatched input, batched state": (
        lambda: _gru()[0](mg.zeros(5, 3), hx=mg.zeros(1, 1, 4)),
        lambda: _gru()[1](torch.zeros(5, 3), torch.zeros(1, 1, 4)),
        ["unbatched", "(1, 4)", "(1, 1, 4)"],
    ),
    "RNN unbatched state of another depth": (
        lambda: nn.RNN(I, H, 2, bidirectional=True)(mg.zeros(5, 3), hx=mg.zeros(2, 4)),
        lambda: torch.nn.RNN(I, H, 2, bidirectional=True)(torch.zeros(5, 3), torch.zeros(2, 4)),
        ["(4, 4)", "(2, 4)"],
    ),
    "RNN unbatched state of another dtype": (
        lambda: nn.RNN(I, H)(mg.zeros(5, 3), hx=mg.zeros(1, 4, dtype=mg.float64)),
        lambda: torch.nn.RNN(I, H)(torch.zeros(5, 3), torch.zeros(1, 4, dtype=torch.float64)),
        ["float32", "float64"],
    ),
    "LSTM unbatched wrong input size": (
        lambda: _lstm()[0](mg.zeros(5, 4)),
        lambda: _lstm()[1](torch.zeros(5, 4)),
        ["input_size=3", "(5, 4)"],
    ),
    "GRU 1-D input": (
        lambda: _gru()[0](mg.zeros(3)),
        lambda: _gru()[1](torch.zeros(3)),
        ["(time, batch, input_size)", "(time, input_size)", "(3,)"],
    ),
    "LSTM 4-D input": (
        lambda: _lstm()[0](mg.zeros(2, 5, 1, 3)),
        lambda: _lstm()[1](torch.zeros(2, 5, 1, 3)),
        ["(batch, time, input_size)", "(2, 5, 1, 3)"],
    ),
    "LSTM unbatched, no time steps": (
        lambda: _lstm()[0](mg.zeros(0, 3)),
        lambda: _lstm()[1](torch.zeros(0, 3)),
        ["time step", "(0, 3)"],
    ),
    "RNNCell wrong input size": (
        lambda: nn.RNNCell(I, H)(mg.zeros(2, 4)),
        lambda: torch.nn.RNNCell(I, H)(torch.zeros(2, 4)),
        ["input_size=3", "(2, 4)"],
    ),
    "RNNCell 3-D input": (
        lambda: nn.RNNCell(I, H)(mg.zeros(2, 1, 3)),
        lambda: torch.nn.RNNCell(I, H)(torch.zeros(2, 1, 3)),
        ["(batch, input_size=3)", "(2, 1, 3)"],
    ),
    "RNNCell float64 input": (
        lambda: nn.RNNCell(I, H)(mg.zeros(2, 3, dtype=mg.float64)),
        lambda: torch.nn.RNNCell(I, H)(torch.zeros(2, 3, dtype=torch.float64)),
        ["float64", "float32"],
    ),
    "RNNCell float64 state": (
        lambda: nn.RNNCell(I, H)(mg.zeros(2, 3), mg.zeros(2, 4, dtype=mg.float64)),
        lambda: torch.nn.RNNCell(I, H)(torch.zeros(2, 3), torch.zeros(2, 4, dtype=torch.float64)),
        ["h dtype float64", "float32"],
    ),
    "RNNCell unbatched state of another size": (
        lambda: nn.RNNCell(I, H)(mg.zeros(3), mg.zeros(5)),
        lambda: torch.nn.RNNCell(I, H)(torch.zeros(3), torch.zeros(5)),
        ["(hidden_size=4,)", "(5,)"],
    ),
    "LSTMCell unbatched input, batched state": (
        lambda: nn.LSTMCell(I, H)(mg.zeros(3), (mg.zeros(2, 4), mg.zeros(2, 4))),
        lambda: torch.nn.LSTMCell(I, H)(torch.zeros(3), (torch.zeros(2, 4), torch.zeros(2, 4))),
        ["(hidden_size=4,)", "(3,)", "(2, 4)"],
    ),
    "GRUCell batched input, unbatched state": (
        lambda: nn.GRUCell(I, H)(mg.zeros(2, 3), mg.zeros(4)),
        lambda: torch.nn.GRUCell(I, H)(torch.zeros(2, 3), torch.zeros(4)),
        ["batch=2", "(4,)"],
    ),
    "LSTMCell state not a pair": (
        lambda: nn.LSTMCell(I, H)(mg.zeros(2, 3), mg.zeros(2, 4)),
        lambda: torch.nn.LSTMCell(I, H)(torch.zeros(2, 3), torch.zeros(2, 4)),
        ["pair (h, c)", "Tensor"],
    ),
    "RNN unknown nonlinearity": (
        lambda: nn.RNN(I, H, nonlinearity="gelu"),
        lambda: torch.nn.RNN(I, H, nonlinearity="gelu"),
        ["'tanh' or 'relu'", "'gelu'"],
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_input_raises_the_class_torch_code_catches(case):
    ours, theirs, _ = HOSTILE[case]
    with pytest.raises(Exception) as torch_error:
        theirs()
    with pytest.raises(torch_error.type):
        ours()


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_input_message_names_expected_and_given(case):
    ours, _, words = HOSTILE[case]
    with pytest.raises(Exception) as error:
        ours()
    for word in words:
        assert word in str(error.value), (word, str(error.value))


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("batched", [True, False])
def test_the_state_is_the_second_positional_argument_as_in_torch(name, batched):
    """`rnn(x, hx)`, as every torch RNN program calls it: the same numbers as torch's layer."""
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(nn, name)(I, H), getattr(torch.nn, name)(I, H).double()
    ours = ours.to(mg.float64)
    copy_state_to_torch(ours, theirs, np.float64)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 2, I) if batched else (5, I))
    states = [rng.standard_normal((1, 2, H) if batched else (1, H)) for _ in range(2)]
    our_hx = tuple(mg.tensor(v) for v in states) if name == "LSTM" else mg.tensor(states[0])
    their_hx = tuple(torch.tensor(v) for v in states) if name == "LSTM" else torch.tensor(states[0])
    (out, final), (their_out, their_final) = (
        ours(mg.tensor(x), our_hx),
        theirs(torch.tensor(x), their_hx),
    )
    assert_close(out, their_out)
    for a, b in zip(*(f if isinstance(f, tuple) else (f,) for f in (final, their_final))):
        assert_close(a, b)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_lengths_given_where_the_state_goes_are_named_in_the_error(name):
    with pytest.raises(TypeError, match=rf"{name}.forward.*second argument is the initial state"):
        getattr(nn, name)(I, H)(mg.zeros(5, 2, I), [5, 3])


# torch checks none of these (its PackedSequence takes any fields and fails later, if at all), or
# fails with an unrelated error (AttributeError, IndexError): minigrad names what was expected
UNCHECKED_BY_TORCH = {
    "unbatched input with lengths": (
        lambda: nn.GRU(I, H)(mg.zeros(5, 3), lengths=[5]),
        ValueError,
        ["lengths", "unbatched", "(5, 3)"],
    ),
    "LSTM state of three": (
        lambda: _lstm()[0](mg.zeros(2, 5, 3), hx=(mg.zeros(1, 2, 4),) * 3),
        TypeError,
        ["pair (h0, c0)", "tuple of length 3"],
    ),
    "LSTM state a tensor": (
        lambda: _lstm()[0](mg.zeros(5, 3), hx=mg.zeros(1, 4)),
        TypeError,
        ["pair (h0, c0)", "Tensor"],
    ),
    "GRU state a tuple": (
        lambda: _gru()[0](mg.zeros(5, 2, 3), hx=(mg.zeros(1, 2, 4),)),
        TypeError,
        ["hx must be a Tensor", "tuple"],
    ),
    "RNNCell state a list": (
        lambda: nn.RNNCell(I, H)(mg.zeros(2, 3), [0.0] * 4),
        TypeError,
        ["h must be a Tensor", "list"],
    ),
    "RNNCell unknown nonlinearity": (
        lambda: nn.RNNCell(I, H, nonlinearity="gelu"),
        ValueError,
        ["'tanh' or 'relu'", "'gelu'"],
    ),
    "RNNCell no hidden units": (lambda: nn.RNNCell(I, 0), ValueError, [">= 1", "0"]),
    "PackedSequence of a list": (
        lambda: nn.utils.rnn.PackedSequence([1.0, 2.0], [1, 1]),
        TypeError,
        ["data must be a Tensor", "list"],
    ),
    "PackedSequence without batch_sizes": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(3, 2)),
        TypeError,
        ["(data, batch_sizes)", "Tensor"],
    ),
    "PackedSequence of a triple": (
        lambda: nn.utils.rnn.PackedSequence((mg.ones(3, 2), [2, 1], None)),
        TypeError,
        ["(data, batch_sizes)", "tuple"],
    ),
    "PackedSequence of 0-d data": (
        lambda: nn.utils.rnn.PackedSequence(mg.tensor(1.0), [1]),
        ValueError,
        ["first axis of steps", "()"],
    ),
    "float batch_sizes": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(3, 2), [2.0, 1.0]),
        TypeError,
        ["batch_sizes must be an integer", "float64"],
    ),
    "2-D batch_sizes": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(3, 2), [[2, 1]]),
        ValueError,
        ["1-D batch_sizes", "(1, 2)"],
    ),
    "no batch_sizes": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(0, 2), np.zeros(0, np.int64)),
        ValueError,
        ["1-D batch_sizes, one per step", "(0,)"],
    ),
    "increasing batch_sizes": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(3, 2), [1, 2]),
        ValueError,
        ["non-increasing", "[1, 2]"],
    ),
    "a batch size of 0": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(2, 2), [2, 0]),
        ValueError,
        [">= 1", "[2, 0]"],
    ),
    "batch_sizes not adding up to data": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(5, 2), [2, 2]),
        ValueError,
        ["add up to 4 rows", "data has 5"],
    ),
    "sorted_indices of another batch": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(5, 2), [3, 2], [0, 1]),
        ValueError,
        ["sorted_indices", "3 sequences", "[0, 1]"],
    ),
    "sorted_indices with a repeat": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(5, 2), [3, 2], [0, 0, 1]),
        ValueError,
        ["permutation of 0..2", "[0, 0, 1]"],
    ),
    "float sorted_indices": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(5, 2), [3, 2], mg.tensor([0.0, 1.0, 2.0])),
        TypeError,
        ["sorted_indices must be an integer", "float32"],
    ),
    "unsorted_indices not the inverse": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(5, 2), [3, 2], [1, 2, 0], [1, 2, 0]),
        ValueError,
        ["inverse", "[2, 0, 1]", "got [1, 2, 0]"],
    ),
    "unsorted_indices alone, out of range": (
        lambda: nn.utils.rnn.PackedSequence(mg.ones(5, 2), [3, 2], unsorted_indices=[0, 5, 1]),
        ValueError,
        ["unsorted_indices", "permutation of 0..2", "[0, 5, 1]"],
    ),
}


@pytest.mark.parametrize("case", UNCHECKED_BY_TORCH)
def test_bad_states_cells_and_packed_fields_name_expected_and_given(case):
    call, error, words = UNCHECKED_BY_TORCH[case]
    with pytest.raises(error) as raised:
        call()
    assert isinstance(raised.value, RuntimeError) or error is TypeError  # what torch code catches
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


def test_lengths_longer_than_the_sequence_are_refused():
    # torch packs them silently (reading past the batch); minigrad refuses, naming both
    with pytest.raises(ValueError, match=r"\[1, 5\].*\[6, 2, 1\]"):
        nn.utils.rnn.pack_padded_sequence(mg.zeros(5, 3, 2), [6, 2, 1])
    with pytest.raises(ValueError, match=r"\[1, 5\].*max 6"):
        nn.LSTM(2, H)(mg.zeros(5, 3, 2), lengths=[6, 2, 1])
