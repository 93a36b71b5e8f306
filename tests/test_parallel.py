"""mg.parallel.forward_backward: data parallelism over the parts of a batch, on threads.

What this file checks:
- the gradients (and the returned loss) equal those of a plain `loss_fn(*batch).backward()` in
  float64 to ~1e-10, for an MLP with cross-entropy, a small causal Transformer language model
  (examples/language_model) and an LSTM model; parts 1, 2, 3, 5, uneven cuts, more parts than
  rows, reduction "sum"; and with random shapes and part counts (Hypothesis);
- the same gradients as PyTorch's loss.backward() on the same weights (float32);
- gradients already in `.grad` are added to, as a second backward() would, in part order
  whichever part finishes first;
- repeatability: bit-identical repeats, dropout under mg.manual_seed, parts=1 identical to
  plain backward even in dropout's draws, dropout's masks independent of threading;
- a part that raises: the exception (the first in part order) propagates and no `.grad` changes;
- nesting (the inner call runs its parts on the outer part's thread), one_thread inside parts
  (`_threads.may_use_threads()`), which thread runs which part;
- tensors of the batch that require grad get their gradient through the cut;
- two user threads calling it at once, and a forked child calling it;
- the returned tensor (0-d, the loss's dtype, no graph), and every error with its message.
"""

import os
import pathlib
import subprocess
import sys
import threading
import time
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import nn
from minigrad.kernels import _openblas, _threads, batched_matmul
from examples.language_model.model import CharTransformer
from thread_helpers import run_in_threads

forward_backward = mg.parallel.forward_backward
ROOT = pathlib.Path(__file__).resolve().parents[1]

RTOL, ATOL = 1e-10, 1e-13  # float64: the parts only change the order of the sums over the batch


# -- models: build(seed) -> (model, loss_fn, make_batch(rows, rng)) -------------------------


def _mlp(seed, dtype=mg.float64, reduction="mean"):
    mg.manual_seed(seed)
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 4)).to(dtype)

    def loss_fn(x, y):
        return mg.cross_entropy(model(x), y, reduction=reduction)

    def batch(rows, rng):
        return rng.standard_normal((rows, 5)).astype(dtype), rng.integers(0, 4, rows)

    return model, loss_fn, batch


def _transformer(seed, dropout=0.0):
    mg.manual_seed(seed)
    model = CharTransformer(
        11, context=8, model_dim=16, num_heads=2, num_layers=2, ff_dim=32, dropout=dropout
    ).double()

    def batch(rows, rng):
        return rng.integers(0, 11, (rows, 6)), rng.integers(0, 11, (rows, 6))

    return model, model.loss, batch


class _LSTMRegressor(nn.Module):
    """A bidirectional LSTM over right-padded sequences, the sum of its outputs over time, a
    linear head; mean-square error against a target per sequence."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 5, batch_first=True, bidirectional=True)
        self.head = nn.Linear(10, 2)

    def loss(self, x, lengths, target):
        output, _ = self.lstm(x, lengths=lengths)
        return ((self.head(output.sum(1)) - target) ** 2).mean()


def _lstm(seed):
    mg.manual_seed(seed)
    model = _LSTMRegressor().double()

    def batch(rows, rng):
        return (
            rng.standard_normal((rows, 4, 3)),
            rng.integers(1, 5, rows),
            rng.standard_normal((rows, 2)),
        )

    return model, model.loss, batch


MODELS = {
    "mlp": _mlp,
    "transformer": _transformer,
    "lstm": _lstm,
    "mlp_sum": lambda seed: _mlp(seed, reduction="sum"),
}


# -- helpers --------------------------------------------------------------------------------


def grads(model):
    """A copy of every parameter's gradient (None where there is none), in parameter order."""
    return [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]


def plain(model, loss_fn, *batch):
    """The reference: loss_fn(*batch).backward() from no gradients; returns (loss, grads)."""
    model.zero_grad()
    loss = loss_fn(*batch)
    loss.backward()
    return loss.item(), grads(model)


def parallel(model, loss_fn, *batch, **options):
    model.zero_grad()
    loss = forward_backward(loss_fn, *batch, **options)
    return loss, grads(model)


def assert_grads_close(actual, expected, rtol=RTOL, atol=ATOL):
    assert len(actual) == len(expected)
    for index, (a, e) in enumerate(zip(actual, expected)):
        assert (a is None) == (e is None), (
            f"parameter {index}: grad {a is None and 'missing' or 'unexpected'}"
        )
        if e is not None:
            np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=f"parameter {index}")


def assert_grads_equal(actual, expected):
    assert len(actual) == len(expected)
    for index, (a, e) in enumerate(zip(actual, expected)):
        assert (a is None) == (e is None)
        if e is not None:
            assert a.dtype == e.dtype and np.array_equal(a, e), f"parameter {index} differs"


@pytest.fixture
def sequential(monkeypatch):
    """Make forward_backward run its parts one after the other on the calling thread."""
    monkeypatch.setattr(_threads, "use_two_threads", False)


# -- 1. the same gradients as plain backward --------------------------------------------------

CASES = [  # model, rows, parts
    ("mlp", 8, 1),
    ("mlp", 8, 2),
    ("mlp", 7, 3),
    ("mlp", 10, 5),
    ("mlp", 3, 5),
    ("mlp", 1, 4),
    ("transformer", 6, 2),
    ("transformer", 7, 3),
    ("transformer", 5, 5),
    ("lstm", 6, 2),
    ("lstm", 7, 3),
    ("lstm", 2, 5),
    ("mlp_sum", 8, 2),
    ("mlp_sum", 7, 3),
    ("mlp_sum", 4, 9),
]


@pytest.mark.parametrize("name, rows, parts", CASES)
def test_gradients_and_loss_equal_plain_backward(name, rows, parts):
    model, loss_fn, make_batch = MODELS[name](seed=rows * 10 + parts)
    batch = make_batch(rows, np.random.default_rng(rows + 100 * parts))
    reduction = "sum" if name.endswith("_sum") else "mean"
    expected_loss, expected = plain(model, loss_fn, *batch)
    assert all(g is not None and np.any(g != 0) for g in expected)  # every parameter takes part

    loss, actual = parallel(model, loss_fn, *batch, parts=parts, reduction=reduction)
    assert_grads_close(actual, expected)
    assert loss.shape == () and loss.dtype == mg.float64 and not loss.requires_grad
    np.testing.assert_allclose(loss.item(), expected_loss, rtol=RTOL)


@pytest.mark.parametrize("name", ["mlp", "transformer", "lstm"])
def test_the_same_whether_parts_run_on_threads_or_one_after_the_other(name, monkeypatch):
    model, loss_fn, make_batch = MODELS[name](seed=3)
    batch = make_batch(7, np.random.default_rng(3))
    loss_threads, on_threads = parallel(model, loss_fn, *batch, parts=3)
    monkeypatch.setattr(_threads, "use_two_threads", False)
    loss_serial, one_by_one = parallel(model, loss_fn, *batch, parts=3)
    assert_grads_close(on_threads, one_by_one)
    np.testing.assert_allclose(loss_threads.item(), loss_serial.item(), rtol=RTOL)


@pytest.mark.parametrize(
    "setting, parts, two", [("1", 1, False), ("3", 3, True), ("junk", None, None)]
)
def test_default_parts_follows_numba_num_threads(setting, parts, two):
    """NUMBA_NUM_THREADS=1 (how a user asks for one thread) gives one part and no second thread;
    an unreadable value falls back to the cores this process may use."""
    code = (
        "import minigrad as mg; from minigrad.kernels import _threads; "
        "print(mg.parallel.default_parts(), _threads.two_threads(), _threads.cores())"
    )
    environment = dict(os.environ, NUMBA_NUM_THREADS=setting, PYTHONPATH=str(ROOT))
    answer = subprocess.run(
        [sys.executable, "-c", code],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout.split()
    blas = _openblas.openblas_threads is not None
    if parts is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        assert int(answer[2]) == cores
    else:
        assert answer == [str(parts if blas else 1), str(two and blas), str(parts)]


def test_default_parts_is_used_and_clipped_to_the_rows():
    parts = mg.parallel.default_parts()
    assert isinstance(parts, int) and parts >= 1
    if _openblas.openblas_threads is None or not _threads.use_two_threads:
        assert parts == 1
    model, loss_fn, make_batch = _mlp(seed=8)
    batch = make_batch(5, np.random.default_rng(8))
    expected_loss, expected = plain(model, loss_fn, *batch)
    loss, actual = parallel(model, loss_fn, *batch)  # parts=None
    assert_grads_close(actual, expected)
    np.testing.assert_allclose(loss.item(), expected_loss, rtol=RTOL)


def test_parts_cut_contiguous_rows_with_the_documented_bounds():
    seen = []

    def loss_fn(x):
        seen.append(np.asarray(x)[:, 0].astype(int).tolist())
        return (x * w).sum()

    w = mg.tensor(np.ones(2), requires_grad=True)
    x = np.repeat(np.arange(7.0)[:, None], 2, axis=1)
    for parts, sizes in ((3, [2, 2, 3]), (2, [3, 4]), (5, [1, 1, 1, 2, 2]), (20, [1] * 7)):
        seen.clear()
        forward_backward(loss_fn, x, parts=parts, reduction="sum")
        bounds = [7 * k // min(parts, 7) for k in range(min(parts, 7) + 1)]
        assert sorted(seen) == [
            list(range(bounds[k], bounds[k + 1])) for k in range(len(bounds) - 1)
        ]
        assert sorted(len(rows) for rows in seen) == sorted(sizes)
    np.testing.assert_array_equal(w.grad.numpy(), 4 * np.full(2, 21.0))  # four calls, summed


def test_mean_weights_each_part_by_its_share_of_the_rows():
    # Per-row loss x_i * w: a mean over 7 rows cut 2 + 2 + 3 must still weigh every row 1/7.
    w = mg.tensor(np.array([1.0]), requires_grad=True)
    x = np.array([[1.0], [2.0], [4.0], [8.0], [16.0], [32.0], [64.0]])
    loss = forward_backward(lambda part: (part * w).mean(), x, parts=3)
    np.testing.assert_allclose(w.grad.numpy(), [127.0 / 7], rtol=1e-15)
    np.testing.assert_allclose(loss.item(), 127.0 / 7, rtol=1e-15)


# -- 2. PyTorch ---------------------------------------------------------------------------------


def _torch_copy(model, torch_model, torch):
    names = dict(torch_model.named_parameters())
    for name, parameter in model.named_parameters():
        with torch.no_grad():
            names[name].copy_(torch.from_numpy(parameter.numpy().copy()))


def test_mlp_gradients_match_torch():
    torch = pytest.importorskip("torch")
    model, loss_fn, make_batch = _mlp(seed=21, dtype=mg.float32)
    x, y = make_batch(9, np.random.default_rng(21))
    reference = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    _torch_copy(model, reference, torch)
    torch_loss = torch.nn.functional.cross_entropy(
        reference(torch.from_numpy(x)), torch.from_numpy(y)
    )
    torch_loss.backward()

    loss, actual = parallel(model, loss_fn, x, y, parts=4)
    expected = [p.grad.numpy() for p in reference.parameters()]
    assert_grads_close(actual, expected, rtol=1e-5, atol=1e-6)
    assert loss.dtype == mg.float32
    np.testing.assert_allclose(loss.item(), torch_loss.item(), rtol=1e-5)


def test_lstm_gradients_match_torch():
    torch = pytest.importorskip("torch")
    mg.manual_seed(22)
    model = _LSTMRegressor()
    rng = np.random.default_rng(22)
    x = rng.standard_normal((7, 4, 3)).astype(np.float32)
    lengths = np.array([4, 1, 3, 4, 2, 2, 3])
    target = rng.standard_normal((7, 2)).astype(np.float32)

    class Reference(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(3, 5, batch_first=True, bidirectional=True)
            self.head = torch.nn.Linear(10, 2)

    reference = Reference()
    _torch_copy(model, reference, torch)
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        torch.from_numpy(x), torch.from_numpy(lengths), batch_first=True, enforce_sorted=False
    )
    output, _ = reference.lstm(packed)
    output, _ = torch.nn.utils.rnn.pad_packed_sequence(output, batch_first=True, total_length=4)
    torch_loss = ((reference.head(output.sum(1)) - torch.from_numpy(target)) ** 2).mean()
    torch_loss.backward()

    loss, actual = parallel(model, model.loss, x, lengths, target, parts=3)
    by_name = dict(reference.named_parameters())
    expected = [by_name[name].grad.numpy() for name, _ in model.named_parameters()]
    assert_grads_close(actual, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss.item(), torch_loss.item(), rtol=1e-5)


# -- 3. random shapes ------------------------------------------------------------------------


@settings(max_examples=40)
@given(
    rows=st.integers(1, 12),
    parts=st.integers(1, 6),
    features=st.integers(1, 5),
    outputs=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_random_shapes_and_parts_match_plain_backward(rows, parts, features, outputs, seed):
    rng = np.random.default_rng(seed)
    weight = mg.tensor(rng.standard_normal((features, outputs)), requires_grad=True)
    bias = mg.tensor(rng.standard_normal(outputs), requires_grad=True)
    x, y = rng.standard_normal((rows, features)), rng.standard_normal((rows, outputs))

    def loss_fn(x, y):
        return ((mg.tanh(mg.tensor(x) @ weight + bias) - y) ** 2).mean()

    expected_loss = loss_fn(x, y)
    expected_loss.backward()
    expected = [weight.grad.numpy().copy(), bias.grad.numpy().copy()]
    weight.grad = bias.grad = None
    loss = forward_backward(loss_fn, x, y, parts=parts)
    assert_grads_close([weight.grad.numpy(), bias.grad.numpy()], expected)
    np.testing.assert_allclose(loss.item(), expected_loss.item(), rtol=RTOL)


# -- 4. accumulation -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mlp", "transformer", "lstm"])
@pytest.mark.parametrize("parts", [1, 3])
def test_adds_to_existing_gradients_like_a_second_backward(name, parts):
    model, loss_fn, make_batch = MODELS[name](seed=4)
    rng = np.random.default_rng(4)
    first, second = make_batch(6, rng), make_batch(7, rng)

    # two plain backward calls
    model.zero_grad()
    loss_fn(*first).backward()
    before = grads(model)
    loss_fn(*second).backward()
    expected = grads(model)

    # the first plain, the second through forward_backward
    model.zero_grad()
    loss_fn(*first).backward()
    assert_grads_equal(grads(model), before)
    existing = [p.grad for p in model.parameters()]
    forward_backward(loss_fn, *second, parts=parts)
    # added into, in place
    assert all(p.grad is grad for p, grad in zip(model.parameters(), existing))
    if parts == 1:
        assert_grads_equal(grads(model), expected)
    else:
        assert_grads_close(grads(model), expected)

    # and what was added is the second batch's gradient alone
    _, second_alone = plain(model, loss_fn, *second)
    assert_grads_close(
        [g - b for g, b in zip(expected, before)], second_alone, rtol=1e-9, atol=1e-12
    )


class _FinishLast(mg.Function):
    """The identity, whose backward in part 0 waits until the other parts' backward passes are
    through it: part 0 then adds its gradient to its holder last."""

    events = {}

    @staticmethod
    def forward(ctx, x, part):
        ctx.part = part
        return x.copy()

    @staticmethod
    def backward(ctx, grad):
        if ctx.part == 0:
            for event in list(_FinishLast.events.values())[1:]:
                event.wait(30)  # a guard against a hang only (the parts may run one by one)
        else:
            _FinishLast.events[ctx.part].set()
        return grad


@pytest.mark.parametrize(
    "rows, expected", [([1.0, 1e-16, 1e-16], 1.0), ([1e-16, 1e-16, 1.0], 1.0 + 2.0**-52)]
)
def test_gradients_are_added_in_part_order_whichever_part_finishes_first(rows, expected):
    # In float64, (1 + 1e-16) + 1e-16 == 1 but (1e-16 + 1e-16) + 1 == 1 + 2**-52: the sum shows
    # the order in which the parts' gradients were added to w.grad.
    threaded = _threads.two_threads()
    _FinishLast.events = {k: threading.Event() for k in range(3)}
    if not threaded:  # one after the other: part 0 cannot wait for the later ones
        for event in _FinishLast.events.values():
            event.set()
    w = mg.tensor(np.zeros(1), requires_grad=True)

    def loss_fn(x, part):
        return (x * _FinishLast.apply(w, part=int(np.asarray(part)[0]))).sum()

    forward_backward(loss_fn, np.array(rows)[:, None], np.arange(3), parts=3, reduction="sum")
    assert w.grad.numpy()[0] == expected
    # the same sums as three backward calls in part order
    reference = mg.tensor(np.zeros(1), requires_grad=True)
    for value in rows:
        (reference * value).sum().backward()
    assert reference.grad.numpy()[0] == expected


def test_two_calls_accumulate_like_two_backward_calls():
    model, loss_fn, make_batch = _lstm(seed=5)
    rng = np.random.default_rng(5)
    first, second = make_batch(5, rng), make_batch(6, rng)
    model.zero_grad()
    loss_fn(*first).backward()
    loss_fn(*second).backward()
    expected = grads(model)
    model.zero_grad()
    forward_backward(loss_fn, *first, parts=2)
    forward_backward(loss_fn, *second, parts=3)
    assert_grads_close(grads(model), expected)


# -- 5. repeatability ----------------------------------------------------------------------


@pytest.mark.parametrize("name, parts", [("mlp", 3), ("transformer", 4), ("lstm", 2)])
def test_repeated_calls_are_bit_identical(name, parts):
    model, loss_fn, make_batch = MODELS[name](seed=6)
    batch = make_batch(9, np.random.default_rng(6))
    loss1, first = parallel(model, loss_fn, *batch, parts=parts)
    for _ in range(2):
        loss2, again = parallel(model, loss_fn, *batch, parts=parts)
        assert_grads_equal(again, first)
        assert loss2.item() == loss1.item()


def test_dropout_repeats_exactly_under_manual_seed():
    model, loss_fn, make_batch = _transformer(seed=7, dropout=0.3)
    batch = make_batch(6, np.random.default_rng(7))
    runs = []
    for seed in (123, 123, 124):
        mg.manual_seed(seed)
        loss, result = parallel(model, loss_fn, *batch, parts=3)
        runs.append((loss.item(), result))
    assert runs[0][0] == runs[1][0]
    assert_grads_equal(runs[1][1], runs[0][1])
    # another seed draws other masks: dropout is really on
    assert runs[2][0] != runs[0][0]
    assert not np.allclose(runs[2][1][-1], runs[0][1][-1])
    # and without reseeding, the next call draws fresh masks (the generator moved on)
    loss_next, _ = parallel(model, loss_fn, *batch, parts=3)
    assert loss_next.item() != runs[2][0]


def test_parts_one_is_bit_identical_to_plain_backward_with_dropout():
    model, loss_fn, make_batch = _transformer(seed=8, dropout=0.25)
    batch = make_batch(5, np.random.default_rng(8))
    mg.manual_seed(99)
    expected_loss, expected = plain(model, loss_fn, *batch)
    after_plain = mg.rand(3).numpy()  # the generator stream after the plain call
    mg.manual_seed(99)
    loss, actual = parallel(model, loss_fn, *batch, parts=1)
    assert_grads_equal(actual, expected)
    assert loss.item() == expected_loss
    np.testing.assert_array_equal(mg.rand(3).numpy(), after_plain)  # the same draws were made


def test_dropout_masks_do_not_depend_on_threading(monkeypatch):
    # Each part draws from its own generator: running the parts on threads or one after the other
    # gives the same masks, hence the same gradients (to the rounding of single-threaded kernels).
    model, loss_fn, make_batch = _transformer(seed=9, dropout=0.3)
    batch = make_batch(7, np.random.default_rng(9))
    mg.manual_seed(5)
    loss_threads, on_threads = parallel(model, loss_fn, *batch, parts=3)
    monkeypatch.setattr(_threads, "use_two_threads", False)
    mg.manual_seed(5)
    loss_serial, one_by_one = parallel(model, loss_fn, *batch, parts=3)
    assert_grads_close(on_threads, one_by_one)
    np.testing.assert_allclose(loss_threads.item(), loss_serial.item(), rtol=RTOL)


def test_each_part_draws_from_its_own_spawned_generator():
    # Part k's draws are those of the k-th child spawned from minigrad's seeded generator.
    draws = {}

    def loss_fn(x):
        draws[int(np.asarray(x)[0, 0])] = mg.rand(4).numpy()
        return (x * w).sum()

    w = mg.tensor(np.ones(1), requires_grad=True)
    x = np.arange(6.0)[:, None]
    mg.manual_seed(11)
    forward_backward(loss_fn, x, parts=3)
    children = np.random.default_rng(11).spawn(3)
    for k, start in enumerate((0, 2, 4)):
        np.testing.assert_array_equal(draws[start], children[k].random(4).astype(np.float32))


# -- 6. a part that raises ----------------------------------------------------------------


class Marker(Exception):
    pass


@pytest.mark.parametrize("threads", [True, False], ids=["threads", "sequential"])
@pytest.mark.parametrize("existing", [False, True], ids=["no-grads", "with-grads"])
def test_a_failing_part_changes_no_gradient(threads, existing, monkeypatch):
    if not threads:
        monkeypatch.setattr(_threads, "use_two_threads", False)
    model, loss_fn, make_batch = _mlp(seed=10)
    x, y = make_batch(8, np.random.default_rng(10))
    x[6, 0] = 999.0  # in the second half
    extra = mg.tensor(np.ones(8), requires_grad=True)  # a batch tensor too
    ran = []

    def failing(x, y, scale):
        loss = loss_fn(x * 1.0, y) * scale.sum()
        ran.append(x.shape[0])
        if np.any(np.asarray(x) == 999.0):
            raise Marker("the marker row")
        return loss

    model.zero_grad()
    if existing:
        loss_fn(x, y).backward()
    before = grads(model)
    with pytest.raises(Marker, match="marker row"):
        forward_backward(failing, mg.tensor(x), y, extra, parts=2)
    assert sorted(ran) == [4, 4]  # both parts ran (the first one even finished its backward)
    assert_grads_equal(grads(model), before)
    assert extra.grad is None
    # and the model still trains normally afterwards
    x[6, 0] = 0.5
    expected_loss, expected = plain(model, loss_fn, x, y)
    loss, actual = parallel(model, loss_fn, x, y, parts=2)
    assert_grads_close(actual, expected)


@pytest.mark.parametrize("threads", [True, False], ids=["threads", "sequential"])
def test_the_first_part_in_part_order_is_the_exception_raised(threads, monkeypatch):
    if not threads:
        monkeypatch.setattr(_threads, "use_two_threads", False)
    second_failed = threading.Event()
    w = mg.tensor(np.ones(1), requires_grad=True)

    def loss_fn(x):
        start = int(np.asarray(x)[0, 0])
        if start == 0:
            if threads and _threads.two_threads():
                second_failed.wait(30)  # let a later part fail first in time
            raise Marker("part 0")
        if start == 3:
            second_failed.set()
            raise ValueError("part 1")
        return (x * w).sum()

    with pytest.raises(Marker, match="part 0"):
        forward_backward(loss_fn, np.arange(9.0)[:, None], parts=3)
    assert w.grad is None


def test_a_failing_later_part_is_raised_when_the_first_succeeds():
    w = mg.tensor(np.ones(1), requires_grad=True)

    def loss_fn(x):
        if np.asarray(x)[0, 0] >= 6:
            raise KeyError("last part")
        return (x * w).sum()

    with pytest.raises(KeyError, match="last part"):
        forward_backward(loss_fn, np.arange(9.0)[:, None], parts=3)
    assert w.grad is None


# -- 7. nesting and threads inside parts -------------------------------------------------


def test_nested_forward_backward_gives_the_plain_gradient():
    outer_model, outer_loss, make_outer = _mlp(seed=12, reduction="sum")
    inner_model, inner_loss, _ = _lstm(seed=13)
    rng = np.random.default_rng(12)
    x, y = make_outer(8, rng)
    seq, lengths, target = (
        rng.standard_normal((8, 4, 3)),
        rng.integers(1, 5, 8),
        rng.standard_normal((8, 2)),
    )

    def inner_sum(seq, lengths, target):
        return inner_loss(seq, lengths, target) * seq.shape[0]  # a sum over the rows

    inner_threads = []
    # both outer parts inside their inner calls at once (a part that finishes would lend its core)
    together = threading.Barrier(2, timeout=30) if _threads.two_threads() else None

    def loss_fn(x, y, seq, lengths, target):
        outer_thread = threading.get_ident()

        def recording(*part):
            inner_threads.append((outer_thread, threading.get_ident(), _threads.may_use_threads()))
            return inner_sum(*part)

        if together is not None:
            together.wait()
        inner = forward_backward(recording, seq, lengths, target, parts=2, reduction="sum")
        if together is not None:
            together.wait()
        assert inner.shape == () and not inner.requires_grad
        return outer_loss(x, y)

    _, expected_outer = plain(outer_model, outer_loss, x, y)
    _, expected_inner = plain(inner_model, inner_sum, seq, lengths, target)
    outer_model.zero_grad()
    inner_model.zero_grad()
    loss = forward_backward(loss_fn, x, y, seq, lengths, target, parts=2, reduction="sum")
    assert_grads_close(grads(outer_model), expected_outer)
    assert_grads_close(grads(inner_model), expected_inner)
    np.testing.assert_allclose(loss.item(), outer_loss(x, y).item(), rtol=RTOL)
    # 2 outer parts x 2 inner parts, each inner part on its outer part's thread
    assert len(inner_threads) == 4
    assert all(outer == inner for outer, inner, _ in inner_threads)
    if together is not None:
        assert not any(may for _, _, may in inner_threads)


def test_nested_failure_in_an_inner_part_changes_nothing():
    model, loss_fn, make_batch = _mlp(seed=14)
    x, y = make_batch(6, np.random.default_rng(14))
    x[5, 0] = 999.0

    def inner(x, y):
        if np.any(np.asarray(x) == 999.0):
            raise Marker("inner")
        return loss_fn(x, y)

    def outer(x, y):
        forward_backward(inner, x, y, parts=2)
        return loss_fn(x, y)

    with pytest.raises(Marker, match="inner"):
        forward_backward(outer, x, y, parts=2)
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("parts", [1, 2, 4])
def test_kernels_in_a_part_run_on_its_thread_alone_while_another_part_runs(parts):
    w = mg.tensor(np.ones(3), requires_grad=True)
    seen = {}
    threaded = parts > 1 and _threads.two_threads()
    together = threading.Barrier(parts, timeout=30) if threaded else None

    def loss_fn(x):
        if together is not None:
            together.wait()  # every part is running now
        seen[int(np.asarray(x)[0, 0])] = (
            threading.get_ident(),
            _threads.may_use_threads(),
            _threads.two_threads(),
        )
        if together is not None:
            together.wait()  # ... and still running while each one looked
        return (x * w).sum()

    assert _threads.may_use_threads()
    forward_backward(loss_fn, np.repeat(np.arange(8.0)[:, None], 3, axis=1), parts=parts)
    assert _threads.may_use_threads()  # back on the calling thread
    assert len(seen) == parts
    assert all(may is not threaded for _, may, _ in seen.values())
    if threaded:
        assert not any(two for _, _, two in seen.values())
        idents = [seen[start][0] for start in sorted(seen)]
        assert idents[0] == threading.get_ident()  # the first part on the calling thread
        assert threading.get_ident() not in idents[1:]  # the others on pool workers
    else:
        assert all(ident == threading.get_ident() for ident, _, _ in seen.values())


def test_the_last_part_running_gets_the_other_cores_back():
    """Once the other parts have finished, the one still running may use every thread again
    for its kernels (the cores of the finished parts would otherwise sit idle)."""
    if not _threads.two_threads():
        pytest.skip("needs two threads: numpy's OpenBLAS thread count settable and two cores")
    w = mg.tensor(np.ones(3), requires_grad=True)
    seen = {}

    def loss_fn(x):
        first = int(np.asarray(x)[0, 0]) == 0
        if first:  # wait until the other part has finished its forward and backward
            deadline = time.monotonic() + 30
            while not _threads.may_use_threads() and time.monotonic() < deadline:
                time.sleep(0.001)
        # and a big product of its own would be dealt out to two threads again (OpenBLAS's own
        # count is one while the parts run: what counts is the user's)
        seen[first] = (_threads.two_threads(), batched_matmul._worth_two_threads(1 << 24))
        return (x * w).sum()

    forward_backward(loss_fn, np.repeat(np.arange(8.0)[:, None], 3, axis=1), parts=2)
    assert seen == {True: (True, True), False: (False, False)}
    # mean weights: (0+..+7) / 2
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 28.0 / 2))


def test_without_threads_every_part_runs_on_the_calling_thread(sequential):
    seen = []
    w = mg.tensor(np.ones(1), requires_grad=True)

    def loss_fn(x):
        seen.append((threading.get_ident(), _threads.may_use_threads()))
        return (x * w).sum()

    forward_backward(loss_fn, np.arange(6.0)[:, None], parts=3, reduction="sum")
    assert seen == [(threading.get_ident(), True)] * 3
    np.testing.assert_array_equal(w.grad.numpy(), [15.0])


# -- 8. batch tensors that require grad --------------------------------------------------


@pytest.mark.parametrize("parts", [1, 2, 3, 6])
def test_batch_tensors_get_their_gradient_through_the_cut(parts):
    model, loss_fn, make_batch = _lstm(seed=15)
    seq, lengths, target = make_batch(6, np.random.default_rng(15))
    x_plain, x_parallel = mg.tensor(seq, requires_grad=True), mg.tensor(seq, requires_grad=True)
    t_plain, t_parallel = (
        mg.tensor(target, requires_grad=True),
        mg.tensor(target, requires_grad=True),
    )
    expected_loss, expected = plain(model, loss_fn, x_plain, lengths, t_plain)
    loss, actual = parallel(model, loss_fn, x_parallel, lengths, t_parallel, parts=parts)
    assert_grads_close(actual, expected)
    assert_grads_close(
        [x_parallel.grad.numpy(), t_parallel.grad.numpy()],
        [x_plain.grad.numpy(), t_plain.grad.numpy()],
    )
    # padding
    assert np.all(x_parallel.grad.numpy()[np.arange(4)[None, :] >= lengths[:, None]] == 0)
    np.testing.assert_allclose(loss.item(), expected_loss, rtol=RTOL)


@pytest.mark.parametrize("parts", [1, 2, 3])
def test_a_batch_tensor_computed_from_parameters_backpropagates_through_its_graph_once(parts):
    """An encoder's output given as the batch: the parts stop at the cut, and the summed
    gradient goes through the shared graph that made it once (two parts walking it would
    each free it)."""
    rng = np.random.default_rng(21)
    weight = mg.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    bias = mg.tensor(rng.standard_normal(2), requires_grad=True)
    x, target = rng.standard_normal((7, 3)), rng.standard_normal((7, 2))

    def loss_fn(h, target):
        return ((h.tanh() - mg.tensor(target)) ** 2).mean()

    expected_loss = loss_fn(mg.tensor(x) @ weight + bias, target)
    expected_loss.backward()
    expected = [weight.grad.numpy().copy(), bias.grad.numpy().copy()]
    weight.grad = bias.grad = None
    hidden = mg.tensor(x) @ weight + bias
    loss = forward_backward(loss_fn, hidden, target, parts=parts)
    assert_grads_close([weight.grad.numpy(), bias.grad.numpy()], expected)
    np.testing.assert_allclose(loss.item(), expected_loss.item(), rtol=RTOL)
    # a non-leaf keeps no gradient (unless retain_grad), as in backward()
    assert hidden.grad is None


def test_a_batch_tensor_with_a_graph_the_loss_does_not_use_gets_no_gradient():
    weight = mg.tensor(np.ones((2, 2)), requires_grad=True)
    other = mg.tensor(np.ones(2), requires_grad=True)
    hidden = mg.tensor(np.ones((4, 2))) @ weight
    loss = forward_backward(lambda h: other.sum(), hidden, parts=2)  # a mean that does not read h
    assert weight.grad is None
    np.testing.assert_array_equal(other.grad.numpy(), [1.0, 1.0])  # 1/2 from each of the two parts
    assert loss.item() == 2.0


def test_list_batch_arguments_become_arrays():
    model, loss_fn, make_batch = _mlp(seed=16)
    x, y = make_batch(5, np.random.default_rng(16))
    expected_loss, expected = plain(model, loss_fn, x, y)
    loss, actual = parallel(
        model, lambda x, y: loss_fn(mg.tensor(x), y), x.tolist(), y.tolist(), parts=2
    )
    assert_grads_close(actual, expected)
    np.testing.assert_allclose(loss.item(), expected_loss, rtol=RTOL)


# -- 9. two user threads at once ----------------------------------------------------------


def test_two_user_threads_at_once_give_the_sequential_results():
    setups = [_mlp(seed=17), _transformer(seed=18)]
    batches = [
        [make_batch(7, np.random.default_rng(100 * k + step)) for step in range(3)]
        for k, (_, _, make_batch) in enumerate(setups)
    ]

    def train(k, results):
        model, loss_fn, _ = setups[k]
        model.zero_grad()
        for batch in batches[k]:  # accumulate over three calls
            results.append(forward_backward(loss_fn, *batch, parts=3).item())
        results.append(grads(model))

    one_after_the_other = [[], []]
    for k in range(2):
        train(k, one_after_the_other[k])

    concurrent = [[], []]
    barrier = threading.Barrier(2, timeout=30)

    def together(k):
        barrier.wait()
        train(k, concurrent[k])

    run_in_threads(lambda: together(0), lambda: together(1))
    for k in range(2):
        assert concurrent[k][:-1] == one_after_the_other[k][:-1]
        assert_grads_equal(concurrent[k][-1], one_after_the_other[k][-1])
    assert _threads.may_use_threads()


# -- 10. the returned tensor ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [mg.float32, mg.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_returned_loss_is_a_0d_tensor_without_graph(dtype, reduction):
    model, loss_fn, make_batch = _mlp(seed=19, dtype=dtype, reduction=reduction)
    x, y = make_batch(7, np.random.default_rng(19))
    expected_loss, _ = plain(model, loss_fn, x, y)
    model.zero_grad()
    loss = forward_backward(loss_fn, x, y, parts=3, reduction=reduction)
    assert isinstance(loss, mg.Tensor)
    assert loss.shape == () and loss.ndim == 0 and loss.dtype == dtype
    assert not loss.requires_grad
    np.testing.assert_allclose(
        loss.item(), expected_loss, rtol=1e-6 if dtype == mg.float32 else RTOL
    )


def test_a_one_element_loss_of_shape_1_is_accepted():
    w = mg.tensor(np.array([2.0]), requires_grad=True)
    loss = forward_backward(
        lambda x: (x * w).sum(0), np.arange(5.0)[:, None], parts=2, reduction="sum"
    )
    assert loss.shape == () and loss.item() == 20.0
    np.testing.assert_array_equal(w.grad.numpy(), [10.0])


# -- 11. errors ------------------------------------------------------------------------------


def _loss(x):
    return (mg.tensor(x) * 2.0).sum()


ERRORS = [  # (args, kwargs, exception, words the message must contain)
    (("not callable", np.ones((2, 2))), {}, TypeError, ["callable", "str"]),
    ((_loss,), {}, TypeError, ["batch"]),
    (
        (_loss, np.ones((4, 2)), {"a": 1}),
        {},
        TypeError,
        ["argument 1", "Tensor or an array", "dict"],
    ),
    (
        (_loss, np.ones((4, 2)), [[1, 2], [3]]),
        {},
        TypeError,
        ["argument 1", "Tensor or an array", "list"],
    ),
    ((_loss, [object(), object()]), {}, TypeError, ["argument 0", "object array", "list"]),
    ((_loss, np.float64(3.0)), {}, mg.ShapeError, ["argument 0", "0-d"]),
    ((_loss, mg.tensor(3.0)), {}, mg.ShapeError, ["argument 0", "batch axis", "0-d Tensor"]),
    ((_loss, np.ones((4, 2)), np.ones(3)), {}, mg.ShapeError, ["same length", "[4, 3]"]),
    (
        (lambda x: mg.tensor(x) * 2.0, np.ones((4, 2))),
        {"parts": 2},
        mg.ShapeError,
        ["single number", "(2, 2)"],
    ),
    ((lambda x: 3.0, np.ones((4, 2))), {}, TypeError, ["return a Tensor", "float"]),
    ((lambda x: np.float64(3.0), np.ones((4, 2))), {}, TypeError, ["return a Tensor", "float64"]),
    ((_loss, np.ones((4, 2))), {"parts": 0}, ValueError, ["positive integer", "0"]),
    ((_loss, np.ones((4, 2))), {"parts": -1}, ValueError, ["positive integer", "-1"]),
    ((_loss, np.ones((4, 2))), {"parts": 1.5}, ValueError, ["positive integer", "1.5"]),
    ((_loss, np.ones((4, 2))), {"parts": 2.0}, ValueError, ["positive integer", "2.0"]),
    ((_loss, np.ones((4, 2))), {"parts": True}, ValueError, ["positive integer", "True"]),
    ((_loss, np.ones((4, 2))), {"parts": "2"}, ValueError, ["positive integer", "'2'"]),
    ((_loss, np.ones((4, 2))), {"reduction": "none"}, ValueError, ["'mean' or 'sum'", "'none'"]),
    ((_loss, np.ones((4, 2))), {"reduction": "Mean"}, ValueError, ["'mean' or 'sum'", "'Mean'"]),
]


@pytest.mark.parametrize("args, kwargs, error, words", ERRORS)
def test_errors_name_what_was_expected_and_what_was_given(args, kwargs, error, words):
    with pytest.raises(error) as info:
        forward_backward(*args, **kwargs)
    message = str(info.value)
    assert message.startswith("forward_backward:")
    for word in words:
        assert word in message, (word, message)


def test_object_arrays_are_rejected():
    # A list that numpy can only make an object array of is rejected before loss_fn sees it.
    calls = []
    w = mg.tensor(np.ones(1), requires_grad=True)

    def loss_fn(x):
        calls.append(x)
        return w.sum()

    with pytest.raises(TypeError, match="object array"):
        forward_backward(loss_fn, [object(), object()])
    with pytest.raises(TypeError, match="object array"):
        forward_backward(loss_fn, ["a", None])
    with pytest.raises(TypeError, match="object array"):
        forward_backward(loss_fn, np.array([object(), object()], dtype=object))
    assert calls == [] and w.grad is None


def test_shape_error_is_also_a_runtime_error():
    with pytest.raises(RuntimeError):
        forward_backward(_loss, np.ones((4, 2)), np.ones(3))
    assert issubclass(mg.ShapeError, RuntimeError)


def test_numpy_integer_parts_are_accepted():
    w = mg.tensor(np.ones(1), requires_grad=True)
    forward_backward(
        lambda x: (x * w).sum(), np.arange(4.0)[:, None], parts=np.int64(2), reduction="sum"
    )
    np.testing.assert_array_equal(w.grad.numpy(), [6.0])


def test_under_no_grad_raises_and_changes_nothing():
    model, loss_fn, make_batch = _mlp(seed=20)
    x, y = make_batch(4, np.random.default_rng(20))
    calls = []
    with mg.no_grad():
        with pytest.raises(RuntimeError, match="no_grad"):
            forward_backward(lambda *b: calls.append(1) or loss_fn(*b), x, y, parts=2)
        assert not mg.is_grad_enabled()
    assert calls == [] and all(p.grad is None for p in model.parameters())
    assert mg.is_grad_enabled()


def test_errors_in_loss_fn_output_change_no_gradient():
    model, loss_fn, make_batch = _mlp(seed=23)
    x, y = make_batch(6, np.random.default_rng(23))
    # a loss that forgot to reduce: (2,) per part of 2 rows (note: a part of 1 row gives (1,),
    # accepted)
    with pytest.raises(mg.ShapeError, match="single number"):
        forward_backward(
            lambda x, y: mg.cross_entropy(model(x), y, reduction="none"), x, y, parts=3
        )
    assert all(p.grad is None for p in model.parameters())


# -- 12. a forked child -------------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_forked_child_can_run_parts_on_threads():
    model, loss_fn, make_batch = _mlp(seed=24)
    x, y = make_batch(8, np.random.default_rng(24))
    expected_loss, expected = plain(model, loss_fn, x, y)
    parallel(model, loss_fn, x, y, parts=2)  # the parent's worker pool exists before the fork
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded, use of fork()"
        pid = os.fork()
    if pid == 0:  # the child: report through the pipe and the exit code, never return to pytest
        code = 1
        try:
            os.close(read_end)
            seen = []

            def recording(x, y):
                seen.append(threading.get_ident())
                return loss_fn(x, y)

            loss, actual = parallel(model, recording, x, y, parts=2)
            for a, e in zip(actual, expected):
                np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(loss.item(), expected_loss, rtol=RTOL)
            threads = len(set(seen))
            os.write(write_end, f"ok threads={threads}".encode())
            code = 0
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            try:
                os.write(write_end, f"{type(error).__name__}: {error}"[:4000].encode())
            except BaseException:
                pass
        finally:
            os._exit(code)
    os.close(write_end)
    status = None
    for _ in range(1200):  # poll for up to ~60 s, then kill: the test must not hang
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        os.close(read_end)
        pytest.fail("the forked child did not finish (hung in forward_backward?)")
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read().decode()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, report
    assert report.startswith("ok")
    if _threads.two_threads():
        assert report == "ok threads=2"
