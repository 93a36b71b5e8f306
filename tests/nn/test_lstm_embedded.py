"""nn.lstm_embedded(lstm, embedding, ids) (nn/lstm_embedded.py): lstm(embedding(ids)) with the
first layer's input projection made once per distinct id. Checked against PyTorch's
torch.nn.LSTM(torch.nn.Embedding(ids)) as a torch user writes it (the same state dicts; padded
batches through pack_padded_sequence): outputs, final states and every gradient, the
embedding's included, with the LSTM backward's steps in blocks of every size; against
minigrad's own lstm(embedding(ids)) on random batches (hypothesis); and bad input of every kind.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import nn
from minigrad.errors import ArgumentError

torch = pytest.importorskip("torch")

VOCAB, DIM, HIDDEN = 13, 5, 4


def _pair(
    dtype,
    layers=1,
    bidirectional=True,
    batch_first=True,
    bias=True,
    padding_idx=0,
    max_norm=None,
    seed=0,
):
    mg.manual_seed(seed)
    embedding = nn.Embedding(VOCAB, DIM, padding_idx=padding_idx, max_norm=max_norm, dtype=dtype)
    lstm = nn.LSTM(
        DIM,
        HIDDEN,
        layers,
        bias=bias,
        batch_first=batch_first,
        bidirectional=bidirectional,
        dtype=dtype,
    )
    torch_dtype = torch.float64 if dtype == np.float64 else torch.float32
    t_embedding = torch.nn.Embedding(VOCAB, DIM, padding_idx=padding_idx, max_norm=max_norm)
    t_lstm = torch.nn.LSTM(
        DIM, HIDDEN, layers, bias=bias, batch_first=batch_first, bidirectional=bidirectional
    )
    for ours, theirs in ((embedding, t_embedding), (lstm, t_lstm)):
        theirs.to(torch_dtype).load_state_dict(
            {k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()}
        )
    return (embedding, lstm), (t_embedding, t_lstm)


def _ids(rng, batch, steps, lengths, batch_first):
    ids = rng.integers(1, VOCAB, (batch, steps))
    ids[np.arange(steps)[None, :] >= np.asarray(lengths)[:, None]] = 0  # padding id
    ids[0, :2] = ids[0, 0]  # a repeated token
    return ids if batch_first else ids.T.copy()


CASES = {
    "bidirectional, padded": dict(lengths=[6, 2, 5, 1]),
    "one direction, padded": dict(bidirectional=False, lengths=[3, 6, 6, 2]),
    "time first": dict(batch_first=False, lengths=[6, 4, 1, 5]),
    "two layers": dict(layers=2, lengths=[6, 3, 5, 2]),
    "no lengths": dict(lengths=None),
    "no bias": dict(bias=False, lengths=[2, 6, 4, 4]),
    "no padding_idx": dict(padding_idx=None, lengths=[6, 6, 1, 3]),
    "with hx": dict(lengths=[5, 6, 2, 3], hx=True),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# the backward's blocks of steps (kernels/lstm.py, BLOCK_ROWS): all steps in one block, a
# block per step, and blocks of a few steps whose last has fewer sequences than its first
@pytest.mark.parametrize("block_rows", [2048, 1, 5], ids=["one block", "block per step", "5 rows"])
def test_matches_torch_embedding_then_lstm(case, dtype, block_rows, monkeypatch):
    monkeypatch.setattr("minigrad.kernels.lstm.BLOCK_ROWS", block_rows)
    options = dict(CASES[case])
    lengths, with_hx = options.pop("lengths"), options.pop("hx", False)
    (embedding, lstm), (t_embedding, t_lstm) = _pair(dtype, **options)
    rng = np.random.default_rng(1)
    batch, steps = 4, 6
    ids = _ids(rng, batch, steps, lengths or [steps] * batch, lstm.batch_first)
    layers = lstm.num_layers * lstm.num_directions
    hx = [rng.standard_normal((layers, batch, HIDDEN)).astype(dtype) for _ in "hc"]

    ours = nn.lstm_embedded(
        lstm, embedding, ids, tuple(mg.tensor(s) for s in hx) if with_hx else None, lengths=lengths
    )
    t_x = t_embedding(torch.from_numpy(ids))
    t_hx = tuple(torch.from_numpy(s) for s in hx) if with_hx else None
    if lengths is None:
        theirs = t_lstm(t_x, t_hx)
    else:
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            t_x, torch.tensor(lengths), batch_first=lstm.batch_first, enforce_sorted=False
        )
        t_out, t_states = t_lstm(packed, t_hx)
        t_out = torch.nn.utils.rnn.pad_packed_sequence(
            t_out, batch_first=lstm.batch_first, total_length=steps
        )[0]
        theirs = (t_out, t_states)

    weights = np.random.default_rng(2)
    ours_flat = [ours[0], *ours[1]]
    theirs_flat = [theirs[0], *theirs[1]]
    upstream = [weights.standard_normal(t.shape).astype(dtype) for t in ours_flat]
    sum((t * mg.tensor(u)).sum() for t, u in zip(ours_flat, upstream)).backward()
    sum((t * torch.from_numpy(u)).sum() for t, u in zip(theirs_flat, upstream)).backward()

    tol = dict(rtol=1e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-12)
    for name, a, b in zip(("output", "h_n", "c_n"), ours_flat, theirs_flat):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), err_msg=name, **tol)
    for module, twin in ((embedding, t_embedding), (lstm, t_lstm)):
        their_params = dict(twin.named_parameters())
        for name, p in module.named_parameters():
            np.testing.assert_allclose(
                p.grad.numpy(), their_params[name].grad.numpy(), err_msg=name, **tol
            )


def test_max_norm_renormalises_the_rows_as_torch():
    (embedding, lstm), (t_embedding, t_lstm) = _pair(np.float64, max_norm=0.5)
    ids = _ids(np.random.default_rng(3), 3, 5, [5, 2, 4], True)
    out = nn.lstm_embedded(lstm, embedding, ids, lengths=[5, 2, 4])[0]
    t_out = t_lstm(t_embedding(torch.from_numpy(ids)))[0]  # lengths only zero the padding
    np.testing.assert_allclose(embedding.weight.numpy(), t_embedding.weight.detach().numpy())
    valid = np.arange(5)[None, :] < np.array([5, 2, 4])[:, None]
    np.testing.assert_allclose(
        out.numpy()[valid][:, :HIDDEN], t_out.detach().numpy()[valid][:, :HIDDEN]
    )


@settings(max_examples=40, deadline=None)
@given(
    batch=st.integers(1, 5),
    steps=st.integers(1, 7),
    vocab_used=st.integers(1, VOCAB - 1),
    bidirectional=st.booleans(),
    batch_first=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_same_as_lstm_of_embedding(batch, steps, vocab_used, bidirectional, batch_first, seed):
    (embedding, lstm), _ = _pair(
        np.float64, bidirectional=bidirectional, batch_first=batch_first, seed=seed % 7
    )
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, steps + 1, batch)
    ids = rng.integers(0, vocab_used + 1, (batch, steps) if batch_first else (steps, batch))
    results = []
    for run in (
        lambda: lstm(embedding(mg.tensor(ids)), lengths=lengths),
        lambda: nn.lstm_embedded(lstm, embedding, ids, lengths=lengths),
    ):
        for p in list(lstm.parameters()) + [embedding.weight]:
            p.grad = None
        out, (h, c) = run()
        (out.sum() + (h * h).sum() + c.sum()).backward()
        grads = [p.grad.numpy().copy() for p in list(lstm.parameters()) + [embedding.weight]]
        results.append([out.numpy(), h.numpy(), c.numpy(), *grads])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_under_inference_mode_gives_the_recorded_numbers():
    (embedding, lstm), _ = _pair(np.float32)
    ids = _ids(np.random.default_rng(4), 4, 6, [6, 1, 3, 5], True)
    recorded = nn.lstm_embedded(lstm, embedding, ids, lengths=[6, 1, 3, 5])[0]
    with mg.inference_mode():
        fast = nn.lstm_embedded(lstm, embedding, ids, lengths=[6, 1, 3, 5])[0]
    assert fast.grad_fn is None and fast.is_inference()
    np.testing.assert_allclose(fast.numpy(), recorded.numpy(), atol=2e-6)


def test_ids_as_a_tensor_and_as_a_list():
    (embedding, lstm), _ = _pair(np.float64)
    ids = _ids(np.random.default_rng(5), 2, 4, [4, 4], True)
    want = lstm(embedding(mg.tensor(ids)))[0].numpy()
    for given_ids in (mg.tensor(ids), ids.tolist(), ids.astype(np.int32)):
        np.testing.assert_allclose(nn.lstm_embedded(lstm, embedding, given_ids)[0].numpy(), want)


BAD = {
    "not an embedding": (
        lambda e, l: nn.lstm_embedded(l, nn.Linear(DIM, DIM), [[1, 2]]),
        TypeError,
        "expected an nn.Embedding with embedding_dim=5",
    ),
    "not an lstm": (
        lambda e, l: nn.lstm_embedded(nn.GRU(DIM, HIDDEN), e, [[1, 2]]),
        TypeError,
        "expected an nn.LSTM; got GRU",
    ),
    "embedding too wide": (
        lambda e, l: nn.lstm_embedded(l, nn.Embedding(VOCAB, DIM + 1), [[1]]),
        TypeError,
        "embedding_dim=5",
    ),
    "float ids": (
        lambda e, l: nn.lstm_embedded(l, e, np.ones((2, 3))),
        mg.errors.ShapeError,
        "integer ids of shape \\(batch, time\\)",
    ),
    "1-d ids": (
        lambda e, l: nn.lstm_embedded(l, e, np.ones(3, np.int64)),
        mg.errors.ShapeError,
        "got shape \\(3,\\)",
    ),
    "3-d ids": (
        lambda e, l: nn.lstm_embedded(l, e, np.ones((2, 3, 1), np.int64)),
        mg.errors.ShapeError,
        "got shape \\(2, 3, 1\\)",
    ),
    "no steps": (
        lambda e, l: nn.lstm_embedded(l, e, np.ones((2, 0), np.int64)),
        mg.errors.ShapeError,
        "at least one",
    ),
    "id out of range": (lambda e, l: nn.lstm_embedded(l, e, [[1, VOCAB]]), IndexError, str(VOCAB)),
    "negative id": (lambda e, l: nn.lstm_embedded(l, e, [[-1, 2]]), IndexError, "-1"),
    "lengths too long": (
        lambda e, l: nn.lstm_embedded(l, e, [[1, 2]], lengths=[3]),
        ArgumentError,
        "lengths must be in \\[1, 2\\]",
    ),
    "lengths as hx": (
        lambda e, l: nn.lstm_embedded(l, e, [[1, 2]], [2]),
        TypeError,
        "pass them by name",
    ),
    "hx of the wrong shape": (
        lambda e, l: nn.lstm_embedded(l, e, [[1, 2]], (mg.zeros(2, 3, HIDDEN),) * 2),
        mg.errors.ShapeError,
        "expected h0 of shape \\(2, 1, 4\\)",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_named(case):
    call, error, message = BAD[case]
    (embedding, lstm), _ = _pair(np.float32)
    with pytest.raises(error, match=message):
        call(embedding, lstm)
