"""The recurrent cells of nn/rnn_cell.py (LSTMCell, GRUCell, RNNCell, and lstm_cell, the step
nn.LSTM is checked against in tests/ops/test_lstm.py): float64 gradchecks, one LSTM step by hand,
and every cell against torch's, batched and unbatched, with and without a state and a bias, in
float32 and float64 (outputs and every gradient); parameters, init and reprs as torch's.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from parity import assert_close, assert_same_parameter_grads, tolerance
from rnn_checks import H, I, compare_and_backward, parameters_replaced, twin

torch = pytest.importorskip("torch")


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
        p.numpy()[...] = 0
    cell.bias_ih.numpy()[:] = [1.0, -1.0, 0.5, 2.0]  # i, f, g, o
    h, c = cell(
        mg.tensor(np.ones((1, 1))), (mg.tensor([[0.0]]).double(), mg.tensor([[3.0]]).double())
    )
    sig = lambda z: 1 / (1 + np.exp(-z))  # noqa: E731
    c_expected = sig(-1.0) * 3.0 + sig(1.0) * np.tanh(0.5)
    np.testing.assert_allclose(c.numpy(), [[c_expected]], rtol=1e-14)
    np.testing.assert_allclose(h.numpy(), [[sig(2.0) * np.tanh(c_expected)]], rtol=1e-14)


def test_cell_matches_torch():
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
    assert_close(h1, h2, "one recurrent step", "h")
    assert_close(c1, c2, "one recurrent step", "c")


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


CELLS = {
    "LSTMCell": ("LSTMCell", {}),
    "GRUCell": ("GRUCell", {}),
    "RNNCell": ("RNNCell", {}),
    "RNNCell relu": ("RNNCell", {"nonlinearity": "relu"}),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("batch", [3, 1, None], ids=["B3", "B1", "unbatched"])
@pytest.mark.parametrize("cell", CELLS)
def test_every_cell_matches_torch(cell, batch, with_state, bias, dtype):
    name, extra = CELLS[cell]
    ours, theirs = twin(name, dtype, bias=bias, **extra)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((I,) if batch is None else (batch, I)).astype(dtype)
    states = [
        rng.standard_normal((H,) if batch is None else (batch, H)).astype(dtype)
        for _ in range(2 if name == "LSTMCell" else 1)
    ]
    our_x, their_x = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    our_s = [mg.tensor(s, requires_grad=True) for s in states]
    their_s = [torch.tensor(s, requires_grad=True) for s in states]
    if name == "LSTMCell":
        out = list(ours(our_x, tuple(our_s) if with_state else None))
        ref = list(theirs(their_x, tuple(their_s) if with_state else None))
    else:
        out = [ours(our_x, our_s[0] if with_state else None)]
        ref = [theirs(their_x, their_s[0] if with_state else None)]
    states = [(a, b, "state") for a, b in zip(our_s, their_s)] if with_state else []
    # shapes too: (H,) unbatched
    compare_and_backward(out, ref, dtype, 3, [(our_x, their_x, "x")] + states)
    assert_same_parameter_grads(ours, theirs, tolerance("recurrent", dtype))


@pytest.mark.parametrize(
    "settings",
    [{}, {"bias": False}, {"nonlinearity": "relu"}, {"bias": False, "nonlinearity": "relu"}],
)
def test_rnn_cell_parameters_init_and_repr_as_torch(settings):
    mg.manual_seed(0)
    ours, theirs = nn.RNNCell(20, 64, **settings), torch.nn.RNNCell(20, 64, **settings)
    assert [(n, p.shape) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    assert repr(ours) == repr(theirs)
    values = np.concatenate([p.numpy().ravel() for p in ours.parameters()])
    bound = 1 / np.sqrt(64)  # torch's U(-1/sqrt(H), 1/sqrt(H)) for every parameter
    assert values.dtype == np.float32 and np.abs(values).max() <= bound
    assert abs(values.std() - bound / np.sqrt(3)) < 0.03 * bound
    theirs.load_state_dict(
        {k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()}
    )
    back = nn.RNNCell(20, 64, **settings)
    back.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((2, 20)).astype(np.float32)
    assert_close(
        back(mg.tensor(x)), theirs(torch.from_numpy(x)), tolerance("recurrent", np.float32)
    )


@pytest.mark.parametrize("settings", [{}, {"bias": False}])
@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell"])
def test_cell_repr_as_torch(name, settings):
    assert repr(getattr(nn, name)(I, H, **settings)) == repr(
        getattr(torch.nn, name)(I, H, **settings)
    )


def test_lstm_cell_unbatched_matches_torch():
    ours, theirs = twin("LSTMCell", np.float64)
    x = np.random.default_rng(0).standard_normal(I)
    h, c = ours(mg.tensor(x))
    their_h, their_c = theirs(torch.from_numpy(x))
    assert_close(h, their_h, tolerance("recurrent", np.float64))
    assert_close(c, their_c, tolerance("recurrent", np.float64))


def test_rnn_cell_matches_torch():
    ours, theirs = twin("RNNCell", np.float64)
    x = np.random.default_rng(0).standard_normal((2, I))
    assert_close(
        ours(mg.tensor(x)), theirs(torch.from_numpy(x)), tolerance("recurrent", np.float64)
    )
