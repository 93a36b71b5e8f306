"""nn.GRU and nn.GRUCell against torch.nn.GRU / GRUCell: the same state dict in both, every
layout (sequence-first, batch-first, bidirectional, two layers, no bias), padded batches with
lengths against pack_padded_sequence, an initial state; outputs, final states and every
gradient; a float64 gradcheck; bad input named."""

import numpy as np
import pytest

import minigrad as mg
import nn

I, H, B, T = 3, 4, 3, 5
LENGTHS = np.array([5, 2, 4])
CASES = {
    "seq-first": {},
    "batch-first": {"batch_first": True},
    "bidirectional, two layers": {"bidirectional": True, "num_layers": 2},
    "no bias, batch-first, bidirectional": {"bias": False, "batch_first": True, "bidirectional": True},
}


def _pair(settings, dtype=np.float64):
    torch = pytest.importorskip("torch")
    ours = nn.GRU(I, H, **settings, dtype=dtype)
    theirs = torch.nn.GRU(I, H, **settings, dtype=getattr(torch, np.dtype(dtype).name))
    theirs.load_state_dict({name: torch.from_numpy(value.numpy().copy()) for name, value in ours.state_dict().items()})
    return torch, ours, theirs


@pytest.mark.parametrize("with_lengths", [False, True], ids=["full", "padded"])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero state", "given state"])
@pytest.mark.parametrize("case", CASES)
def test_gru_matches_torch_outputs_states_and_gradients(case, with_lengths, with_state):
    settings = CASES[case]
    torch, ours, theirs = _pair(settings)
    first = settings.get("batch_first", False)
    rng = np.random.default_rng(len(case))
    x = rng.standard_normal((B, T, I) if first else (T, B, I))
    h0 = rng.standard_normal((ours.num_layers * ours.num_directions, B, H))
    our_x, their_x = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    our_h0, their_h0 = mg.tensor(h0, requires_grad=True), torch.tensor(h0, requires_grad=True)
    out, h_n = ours(our_x, lengths=LENGTHS if with_lengths else None, hx=our_h0 if with_state else None)
    source = their_x
    if with_lengths:
        source = torch.nn.utils.rnn.pack_padded_sequence(their_x, torch.tensor(LENGTHS), batch_first=first,
                                                         enforce_sorted=False)
    reference, reference_h = theirs(source, their_h0 if with_state else None)
    if with_lengths:
        reference, _ = torch.nn.utils.rnn.pad_packed_sequence(reference, batch_first=first, total_length=T)
    np.testing.assert_allclose(out.numpy(), reference.detach().numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(h_n.numpy(), reference_h.detach().numpy(), rtol=1e-12, atol=1e-13)
    grad, grad_h = rng.standard_normal(out.shape), rng.standard_normal(h_n.shape)
    ((out * mg.tensor(grad)).sum() + (h_n * mg.tensor(grad_h)).sum()).backward()
    ((reference * torch.from_numpy(grad)).sum() + (reference_h * torch.from_numpy(grad_h)).sum()).backward()
    np.testing.assert_allclose(our_x.grad.numpy(), their_x.grad.numpy(), rtol=1e-10, atol=1e-12)
    if with_state:
        np.testing.assert_allclose(our_h0.grad.numpy(), their_h0.grad.numpy(), rtol=1e-10, atol=1e-12)
    torch_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), torch_params[name].grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)


def test_gru_float32_and_the_cell_match_torch():
    torch, ours, theirs = _pair({"batch_first": True}, dtype=np.float32)
    x = np.random.default_rng(1).standard_normal((B, T, I)).astype(np.float32)
    np.testing.assert_allclose(ours(mg.tensor(x))[0].numpy(), theirs(torch.from_numpy(x))[0].detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    cell, their_cell = nn.GRUCell(I, H, dtype=np.float64), torch.nn.GRUCell(I, H, dtype=torch.float64)
    their_cell.load_state_dict({name: torch.from_numpy(v.numpy().copy()) for name, v in cell.state_dict().items()})
    step, h = np.random.default_rng(2).standard_normal((2, I)), np.random.default_rng(3).standard_normal((2, H))
    np.testing.assert_allclose(cell(mg.tensor(step), mg.tensor(h)).numpy(),
                               their_cell(torch.from_numpy(step), torch.from_numpy(h)).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(cell(mg.tensor(step[0])).numpy(), their_cell(torch.from_numpy(step[0])).detach().numpy(),
                               rtol=1e-12)  # unbatched, zero state


def test_gru_gradcheck_float64():
    mg.manual_seed(0)
    gru = nn.GRU(2, 3, bidirectional=True, dtype=np.float64)
    x = np.random.default_rng(4).standard_normal((4, 2, 2))
    weights = mg.tensor(np.random.default_rng(5).standard_normal((4, 2, 6)))
    assert mg.gradcheck(lambda inputs: (gru(inputs, lengths=np.array([4, 3]))[0] * weights).sum(), [mg.tensor(x)])


@pytest.mark.parametrize("call, error, message", [
    (lambda g: g(mg.randn(5, 3, 2, dtype=mg.float64)), ValueError, r"input of shape \(time, batch, input_size\) with input_size=3"),
    (lambda g: g(mg.randn(5, 3, 3)), TypeError, "input dtype float32 does not match the parameters' dtype float64"),
    (lambda g: g(mg.randn(5, 3, 3, dtype=mg.float64), lengths=[5, 6, 1]), ValueError, r"lengths must be in \[1, 5\]"),
    (lambda g: g(mg.randn(5, 3, 3, dtype=mg.float64), hx=mg.zeros(2, 3, 4, dtype=mg.float64)), ValueError,
     r"expected hx of shape \(1, 3, 4\)"),
    (lambda g: g(mg.randn(0, 3, 3, dtype=mg.float64)), ValueError, "at least one time step"),
])
def test_gru_bad_input_names_what_was_expected(call, error, message):
    with pytest.raises(error, match=message):
        call(nn.GRU(I, H, dtype=np.float64))
    with pytest.raises(ValueError, match="must be >= 1"):
        nn.GRU(I, 0)
