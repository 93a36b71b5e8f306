"""A sweep of nn.LSTM / nn.GRU / nn.RNN, their cells, nn.utils.rnn and minigrad.utils.data
against PyTorch, written the way a PyTorch user writes the code: torch twins built from the
same state dict, outputs, final states and every gradient compared (float32 to 1e-5, float64
to 1e-10), hostile inputs checked for the exception class torch code catches. Tests marked
xfail(strict=True) pin a real difference from PyTorch."""

import collections

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.utils.data import (
    ConcatDataset,
    DataLoader,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)
from parity import assert_close, assert_same_parameter_grads, copy_state_to_torch, plain

torch = pytest.importorskip("torch")
torch.set_num_threads(1)
import torch.utils.data  # noqa: E402

I, H = 3, 4
TOL = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-10)}
TORCH_DTYPE = {np.float32: torch.float32, np.float64: torch.float64}


def _twin(name, dtype, input_size=I, hidden_size=H, **settings):
    ours = getattr(nn, name)(input_size, hidden_size, **settings, dtype=dtype)
    theirs = getattr(torch.nn, name)(input_size, hidden_size, **settings, dtype=TORCH_DTYPE[dtype])
    copy_state_to_torch(ours, theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    return ours, theirs


def _loss(tensors, lib, seed):
    rng = np.random.default_rng(seed)
    total = 0
    for t in tensors:
        w = rng.standard_normal(tuple(t.shape)).astype(
            t.numpy().dtype
            if lib is mg
            else {torch.float32: np.float32, torch.float64: np.float64}[t.dtype]
        )
        total = total + (t * lib.tensor(w)).sum()
    return total


def _compare_and_backward(results, their_results, dtype, seed, leaves):
    """Each minigrad result against its torch twin, then one weighted loss of them all backward on
    each side, and the gradients of `leaves` ((minigrad tensor, torch tensor, name) each) compared."""
    for position, (ours, theirs) in enumerate(zip(results, their_results)):
        assert_close(ours, theirs, TOL[dtype], f"result {position}")
    _loss(results, mg, seed).backward()
    _loss(their_results, torch, seed).backward()
    for ours, theirs, name in leaves:
        assert_close(ours.grad, theirs.grad, TOL[dtype], f"{name}.grad")


# ============================================================ full-layer twins

MODULES = {
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
    """x's shape and each state's: batched in the layer's layout, or torch's unbatched (batch None)."""
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
@pytest.mark.parametrize("module", MODULES)
def test_layer_matches_torch(module, layout, size, with_state, dtype):
    name, extra = MODULES[module]
    settings = {**LAYOUTS[layout], **extra}
    ours, theirs = _twin(name, dtype, **settings)
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
    _compare_and_backward(
        [out] + finals, [ref] + their_finals, dtype, 4, [(our_x, their_x, "x")] + states
    )
    assert_same_parameter_grads(ours, theirs, TOL[dtype])


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_dropout_between_layers_in_eval_matches_torch(name):
    ours, theirs = _twin(name, np.float64, num_layers=3, dropout=0.5)
    ours.eval(), theirs.eval()
    x = np.random.default_rng(0).standard_normal((4, 2, I))
    assert_close(ours(mg.tensor(x))[0], theirs(torch.from_numpy(x))[0], TOL[np.float64])


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_unbatched_input_matches_torch(name):
    ours, theirs = _twin(name, np.float64, num_layers=2, bidirectional=True)
    x = np.random.default_rng(0).standard_normal((4, I))
    out, ref = ours(mg.tensor(x))[0], theirs(torch.from_numpy(x))[0]
    assert_close(out, ref, TOL[np.float64])


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
    ours, theirs = _twin("LSTM", np.float64)
    parameters = list(ours.parameters())
    values = [p.data.copy() for p in parameters]
    assert ours.flatten_parameters() is None and theirs.flatten_parameters() is None
    assert all(a is b for a, b in zip(ours.parameters(), parameters))
    assert len(list(ours.parameters())) == len(parameters)
    for p, value in zip(ours.parameters(), values):
        np.testing.assert_array_equal(p.data, value)
    x = np.random.default_rng(5).standard_normal((4, 2, I))
    out, (h, c) = ours(mg.tensor(x))
    their_out, (their_h, their_c) = theirs(torch.from_numpy(x))
    for mine, reference in ((out, their_out), (h, their_h), (c, their_c)):
        assert_close(mine, reference, TOL[np.float64])


# ============================================================ packed sequences

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
    ours, theirs = _twin(name, dtype, num_layers=2, bidirectional=True, batch_first=batch_first)
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
    assert_close(packed.data, their_packed.data, TOL[dtype], "packed.data")
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
    assert_close(out.data, ref.data, TOL[dtype], "out.data")
    for a, b in zip(finals, their_finals):
        assert_close(a, b, TOL[dtype], "final state")
    padded, lengths = rnn.pad_packed_sequence(
        out, batch_first=batch_first, padding_value=-3.0, total_length=7
    )
    their_padded, their_lengths = their_rnn.pad_packed_sequence(
        ref, batch_first=batch_first, padding_value=-3.0, total_length=7
    )
    assert_close(padded, their_padded, TOL[dtype], "padded")
    np.testing.assert_array_equal(lengths.numpy(), their_lengths.numpy())
    assert lengths.dtype == mg.int64
    short, _ = rnn.pad_packed_sequence(out, batch_first=batch_first)
    their_short, _ = their_rnn.pad_packed_sequence(ref, batch_first=batch_first)
    assert_close(short, their_short, TOL[dtype], "padded to the longest")
    (_loss([padded] + finals, mg, 5) + _loss([short], mg, 6)).backward()
    (_loss([their_padded] + their_finals, torch, 5) + _loss([their_short], torch, 6)).backward()
    assert_close(our_x.grad, their_x.grad, TOL[dtype], "x.grad")
    for a, b in zip(our_s, their_s):
        assert_close(a.grad, b.grad, TOL[dtype], "state grad")
    assert_same_parameter_grads(ours, theirs, TOL[dtype])


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
    assert_close(packed.data, their_packed.data, TOL[np.float64])
    padded, lengths = rnn.pad_packed_sequence(packed, batch_first=True, padding_value=9.0)
    their_padded, their_lengths = their_rnn.pad_packed_sequence(
        their_packed, batch_first=True, padding_value=9.0
    )
    assert_close(padded, their_padded, TOL[np.float64])
    np.testing.assert_array_equal(lengths.numpy(), their_lengths.numpy())
    _loss([padded, packed.data], mg, 1).backward()
    _loss([their_padded, their_packed.data], torch, 1).backward()
    for a, b in zip(ours, theirs):
        assert_close(a.grad, b.grad, TOL[np.float64])


def test_packed_sequence_rebuilt_from_its_fields():
    rnn = nn.utils.rnn
    packed = rnn.pack_padded_sequence(mg.ones(4, 3, 2), [4, 2, 3], enforce_sorted=False)
    doubled = rnn.PackedSequence(
        packed.data * 2, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices
    )
    padded, _ = rnn.pad_packed_sequence(doubled)
    assert padded.numpy()[0].tolist() == [[2, 2]] * 3


FIELDS = {  # batch_sizes, sorted_indices (None: the sequences are in sorted order), unsorted_indices given
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
    assert_close(ours.data, theirs.data, TOL[dtype], "data")
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
    assert_close(padded, their_padded, TOL[dtype], "padded")
    np.testing.assert_array_equal(lengths.numpy(), their_lengths.numpy())
    lstm, their_lstm = _twin("LSTM", dtype)
    out, (h_n, c_n) = lstm(ours, (our_h0, mg.zeros_like(our_h0)))
    ref, (their_h, their_c) = their_lstm(theirs, (their_h0, torch.zeros_like(their_h0)))
    _compare_and_backward(
        [padded, out.data, h_n, c_n],
        [their_padded, ref.data, their_h, their_c],
        dtype,
        22,
        [(our_data, their_data, "data"), (our_h0, their_h0, "h0")],
    )
    assert_same_parameter_grads(lstm, their_lstm, TOL[dtype])


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
        rnn.pad_packed_sequence(ours)[0], their_rnn.pad_packed_sequence(theirs)[0], TOL[np.float64]
    )
    np.testing.assert_array_equal(ours.sorted_indices.numpy(), [1, 2, 0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_a_layer_mapped_over_packed_data_matches_torch(name, dtype):
    # torch's idiom: PackedSequence(f(packed.data), packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
    rnn, their_rnn = nn.utils.rnn, torch.nn.utils.rnn
    linear, their_linear = (
        nn.Linear(2, I, dtype=dtype),
        torch.nn.Linear(2, I, dtype=TORCH_DTYPE[dtype]),
    )
    their_linear.load_state_dict(
        {k: torch.from_numpy(v.numpy().copy()) for k, v in linear.state_dict().items()}
    )
    layer, their_layer = _twin(name, dtype, bidirectional=True, batch_first=True)
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
    _compare_and_backward(
        [padded] + finals, [their_padded] + their_finals, dtype, 25, [(our_x, their_x, "x")]
    )
    assert_same_parameter_grads(linear, their_linear, TOL[dtype])
    assert_same_parameter_grads(layer, their_layer, TOL[dtype])


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


# ============================================================ cells

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
def test_cell_matches_torch(cell, batch, with_state, bias, dtype):
    name, extra = CELLS[cell]
    ours, theirs = _twin(name, dtype, bias=bias, **extra)
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
    _compare_and_backward(
        out, ref, dtype, 3, [(our_x, their_x, "x")] + states
    )  # shapes too: (H,) unbatched
    assert_same_parameter_grads(ours, theirs, TOL[dtype])


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
    assert_close(back(mg.tensor(x)), theirs(torch.from_numpy(x)), TOL[np.float32])


@pytest.mark.parametrize("settings", [{}, {"bias": False}])
@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell"])
def test_cell_repr_as_torch(name, settings):
    assert repr(getattr(nn, name)(I, H, **settings)) == repr(
        getattr(torch.nn, name)(I, H, **settings)
    )


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


def test_lstm_cell_unbatched_matches_torch():
    ours, theirs = _twin("LSTMCell", np.float64)
    x = np.random.default_rng(0).standard_normal(I)
    h, c = ours(mg.tensor(x))
    their_h, their_c = theirs(torch.from_numpy(x))
    assert_close(h, their_h, TOL[np.float64])
    assert_close(c, their_c, TOL[np.float64])


def test_rnn_cell_matches_torch():
    ours, theirs = _twin("RNNCell", np.float64)
    x = np.random.default_rng(0).standard_normal((2, I))
    assert_close(ours(mg.tensor(x)), theirs(torch.from_numpy(x)), TOL[np.float64])


# ============================================================ hostile inputs


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
# the ones where minigrad's exception is not of the class torch raises (so `except <torch's class>` misses it)


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


def test_gru_positional_state_is_named_in_the_error():
    gru = nn.GRU(I, H)
    with pytest.raises(Exception, match="GRU.*hx"):
        gru(mg.zeros(5, 2, 3), mg.zeros(1, 2, 4))
    with pytest.raises(Exception, match="GRU.*hx"):
        gru(mg.zeros(5, 3), mg.zeros(1, 4))  # unbatched


# torch checks none of these (its PackedSequence takes any fields and fails later, if at all), or
# fails with an unrelated error (AttributeError, IndexError): minigrad names what was expected
UNCHECKED_BY_TORCH = {
    "unbatched input with lengths": (
        lambda: nn.GRU(I, H)(mg.zeros(5, 3), [5]),
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
        nn.LSTM(2, H)(mg.zeros(5, 3, 2), [6, 2, 1])


# ============================================================ data utilities

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10, dtype=np.int64) % 3


@pytest.mark.parametrize(
    "settings",
    [
        dict(batch_size=3),
        dict(batch_size=3, drop_last=True),
        dict(batch_size=10),
        dict(batch_size=11, drop_last=True),
        dict(batch_size=None),
    ],
)
def test_loader_over_a_list_matches_torch_and_repeats(settings):
    data = [(X[i], int(Y[i]), {"k": float(i)}) for i in range(10)]
    ours, theirs = DataLoader(data, **settings), torch.utils.data.DataLoader(data, **settings)
    assert len(ours) == len(theirs)
    first = [plain(b) for b in ours]
    assert first == [plain(b) for b in theirs]
    assert [plain(b) for b in ours] == first  # a second epoch, the same batches


Pair = collections.namedtuple("Pair", "a b")
SAMPLES = {
    "nested dict": [{"x": {"y": np.float32(i) * np.ones(2, np.float32)}, "n": i} for i in range(4)],
    "namedtuple of lists": [Pair([i, i + 1], (float(i), True)) for i in range(4)],
    "numpy float32 scalars": [np.float32(i) / 2 for i in range(4)],
    "numpy int32 scalars": [np.int32(i) for i in range(4)],
    "0-d float32 arrays": [np.array(i, dtype=np.float32) for i in range(4)],
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_default_collate_matches_torch(kind):
    batch = SAMPLES[kind]
    assert plain(default_collate(batch)) == plain(torch.utils.data.default_collate(batch))


def test_shuffle_with_a_seeded_generator_is_deterministic():
    data = TensorDataset(mg.tensor(X), mg.tensor(Y))

    def epochs(seed):
        loader = DataLoader(
            data,
            batch_size=4,
            shuffle=True,
            drop_last=True,
            generator=mg.Generator().manual_seed(seed),
        )
        return [[b[0].numpy()[:, 0].tolist() for b in loader] for _ in range(2)]

    a, b = epochs(3), epochs(3)
    assert a == b
    assert a[0] != a[1]  # a fresh order each epoch
    assert all(len(e) == 2 and all(len(batch) == 4 for batch in e) for e in a)
    assert len(set(sum(a[0], []))) == 8
    assert epochs(4) != a


def test_sampler_and_batch_sampler_objects():
    class Reverse:
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n - 1, -1, -1))

        def __len__(self):
            return self.n

    data = list(range(10))
    for kwargs in (
        dict(sampler=Reverse(10), batch_size=4),
        dict(batch_sampler=[[1, 2], [9], [0, 0, 0]]),
    ):
        ours, theirs = DataLoader(data, **kwargs), torch.utils.data.DataLoader(data, **kwargs)
        assert len(ours) == len(theirs)
        assert [plain(b) for b in ours] == [plain(b) for b in theirs]
    assert len(DataLoader(data, batch_size=4, num_workers=0)) == 3


def test_torch_samplers_are_importable():
    from minigrad.utils.data import BatchSampler, RandomSampler, SequentialSampler  # noqa: F401

    loader = DataLoader(
        list(range(5)), batch_sampler=BatchSampler(SequentialSampler(range(5)), 2, False)
    )
    assert [b.numpy().tolist() for b in loader] == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize(
    "lengths", [[0.1, 0.2, 0.7], [0.5, 0.5], [0.3, 0.3, 0.4], [1 / 3] * 3, [0.25] * 4]
)
@pytest.mark.parametrize("size", [7, 10])
def test_random_split_fractions_match_torch_sizes_and_repeat(lengths, size):
    ours = random_split(range(size), lengths, generator=mg.Generator().manual_seed(0))
    theirs = torch.utils.data.random_split(range(size), lengths)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    again = random_split(range(size), lengths, generator=mg.Generator().manual_seed(0))
    assert [list(s) for s in ours] == [list(s) for s in again]
    assert sorted(sum((list(s) for s in ours), [])) == list(range(size))


def test_subset_and_concat_negative_indices_match_torch():
    ours_ds = TensorDataset(mg.tensor(X), mg.tensor(Y))
    theirs_ds = torch.utils.data.TensorDataset(torch.tensor(X), torch.tensor(Y))
    ours = [Subset(ours_ds, [7, 2, 5]), ConcatDataset([ours_ds, Subset(ours_ds, [1, 0])])]
    theirs = [
        torch.utils.data.Subset(theirs_ds, [7, 2, 5]),
        torch.utils.data.ConcatDataset([theirs_ds, torch.utils.data.Subset(theirs_ds, [1, 0])]),
    ]
    for a, b in zip(ours, theirs):
        assert len(a) == len(b)
        for i in range(-len(b), len(b)):
            assert plain(a[i]) == plain(b[i]), i
        for i in (len(b), -len(b) - 1):
            with pytest.raises((IndexError, ValueError)):
                b[i]
            with pytest.raises((IndexError, ValueError)):
                a[i]
