"""nn.GRU, nn.GRUCell and nn.RNN against torch's: the same state dict in both, every
layout (sequence-first, batch-first, bidirectional, two layers, no bias), padded batches with
lengths against pack_padded_sequence, an initial state; outputs, final states and every
gradient; a float64 gradcheck; bad input named."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from parity import assert_same_parameter_grads

I, H, B, T = 3, 4, 3, 5
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
    np.testing.assert_allclose(out.numpy(), reference.detach().numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(h_n.numpy(), reference_h.detach().numpy(), rtol=1e-12, atol=1e-13)
    grad, grad_h = rng.standard_normal(out.shape), rng.standard_normal(h_n.shape)
    ((out * mg.tensor(grad)).sum() + (h_n * mg.tensor(grad_h)).sum()).backward()
    (
        (reference * torch.from_numpy(grad)).sum() + (reference_h * torch.from_numpy(grad_h)).sum()
    ).backward()
    np.testing.assert_allclose(our_x.grad.numpy(), their_x.grad.numpy(), rtol=1e-10, atol=1e-12)
    if with_state:
        np.testing.assert_allclose(
            our_h0.grad.numpy(), their_h0.grad.numpy(), rtol=1e-10, atol=1e-12
        )
    assert_same_parameter_grads(ours, theirs, dict(rtol=1e-10, atol=1e-12))


def test_gru_float32_and_the_cell_match_torch():
    torch, ours, theirs = _pair({"batch_first": True}, dtype=np.float32)
    x = np.random.default_rng(1).standard_normal((B, T, I)).astype(np.float32)
    np.testing.assert_allclose(
        ours(mg.tensor(x))[0].numpy(),
        theirs(torch.from_numpy(x))[0].detach().numpy(),
        rtol=1e-5,
        atol=1e-6,
    )
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
    np.testing.assert_allclose(
        cell(mg.tensor(step), mg.tensor(h)).numpy(),
        their_cell(torch.from_numpy(step), torch.from_numpy(h)).detach().numpy(),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        cell(mg.tensor(step[0])).numpy(),
        their_cell(torch.from_numpy(step[0])).detach().numpy(),
        rtol=1e-12,
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
def test_unbatched_gradcheck_two_layers_bidirectional(name, settings):
    mg.manual_seed(1)
    layer = getattr(nn, name)(
        2, 3, 2, bidirectional=True, batch_first=True, dtype=np.float64, **settings
    )
    rng = np.random.default_rng(8)
    x, h0 = rng.standard_normal((4, 2)), rng.standard_normal((4, 3))

    def run(
        x, h0
    ):  # the parameters' gradients are checked against torch's (tests/nn/test_rnn_data_sweep.py)
        output, h_n = layer(x, hx=h0)
        assert output.shape == (4, 6) and h_n.shape == (4, 3)
        return mg.cat([output.reshape(-1), h_n.reshape(-1)])

    assert mg.gradcheck(run, [x, h0])


@pytest.mark.parametrize("batch", [(3,), ()], ids=["batched", "unbatched"])
@pytest.mark.parametrize(
    "name, settings", [("GRUCell", {}), ("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"})]
)
def test_cells_gradcheck(name, settings, batch):
    mg.manual_seed(2)
    cell = getattr(nn, name)(I, H, dtype=np.float64, **settings)
    rng = np.random.default_rng(9)
    assert mg.gradcheck(
        cell, [rng.standard_normal(batch + (I,)), rng.standard_normal(batch + (H,))]
    )


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda g: g(mg.randn(5, 3, 2, dtype=mg.float64)),
            ValueError,
            r"input of shape \(time, batch, input_size\) or unbatched \(time, input_size\), with input_size=3",
        ),
        (
            lambda g: g(mg.randn(5, 2, dtype=mg.float64)),
            ValueError,
            r"input_size=3; got shape \(5, 2\)",
        ),
        (
            lambda g: g(mg.randn(5, 3, dtype=mg.float64), hx=mg.zeros(1, 1, 4, dtype=mg.float64)),
            ValueError,
            r"expected hx of shape \(1, 4\) .* for unbatched input of shape \(5, 3\); got shape \(1, 1, 4\)",
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


# -- packed sequences (torch's way of giving lengths), for LSTM and GRU -------------------------


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
    np.testing.assert_allclose(
        out.data.numpy(), reference.data.detach().numpy(), rtol=1e-12, atol=1e-13
    )
    padded, lengths = rnn.pad_packed_sequence(
        out, batch_first=batch_first, padding_value=-2.0, total_length=T + 1
    )
    their_padded, their_lengths = torch_rnn.pad_packed_sequence(
        reference, batch_first=batch_first, padding_value=-2.0, total_length=T + 1
    )
    np.testing.assert_allclose(
        padded.numpy(), their_padded.detach().numpy(), rtol=1e-12, atol=1e-13
    )
    np.testing.assert_array_equal(lengths.numpy(), their_lengths.numpy())
    h_n, their_h_n = (state[0], their_state[0]) if name == "LSTM" else (state, their_state)
    np.testing.assert_allclose(h_n.numpy(), their_h_n.detach().numpy(), rtol=1e-12, atol=1e-13)
    grad = np.random.default_rng(7).standard_normal(padded.shape)
    ((padded * mg.tensor(grad)).sum() + h_n.sum()).backward()
    ((their_padded * torch.from_numpy(grad)).sum() + their_h_n.sum()).backward()
    np.testing.assert_allclose(our_x.grad.numpy(), their_x.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_pack_sequence_and_bad_packing():
    rnn = nn.utils.rnn
    packed = rnn.pack_sequence([mg.ones(3, 2), mg.ones(1, 2) * 2])
    assert packed.batch_sizes.numpy().tolist() == [2, 1, 1]
    assert packed.data.numpy()[:, 0].tolist() == [1, 2, 1, 1]
    state = mg.zeros(1, 2, H, dtype=mg.float64)
    output, h_n = nn.GRU(2, H, dtype=np.float64)(
        rnn.pack_sequence([mg.ones(3, 2, dtype=mg.float64), mg.ones(1, 2, dtype=mg.float64)]), state
    )
    assert isinstance(output, rnn.PackedSequence) and h_n.shape == (
        1,
        2,
        H,
    )  # the state as second argument
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
        np.testing.assert_allclose(out.numpy(), torch_out.detach().numpy(), rtol=1e-10, atol=1e-12)
