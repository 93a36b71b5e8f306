"""What the recurrent tests share: tests/nn/test_rnn.py (the layers, nn/rnn.py),
tests/nn/test_rnn_cell.py (the cells, nn/rnn_cell.py) and tests/ops/test_lstm.py (the fused LSTM
layer, minigrad/ops/lstm.py).

I and H are the input and hidden sizes of the layers the tables build; twin(name, dtype, ...)
builds a layer or cell and its torch twin with the same state dict; compare_and_backward compares
results and gradients with torch's (TOLERANCES["recurrent"]); parameters_replaced, random_inputs,
weighted_loss and weighted_sum serve the gradchecks and the comparisons with unrolled cells.
"""

import contextlib

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from parity import assert_close, copy_state_to_torch, tolerance, torch_dtype

I, H = 3, 4


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


def twin(name, dtype, input_size=I, hidden_size=H, **settings):
    """nn.<name> and torch.nn.<name> of the same settings in dtype, holding the same state."""
    torch = pytest.importorskip("torch")
    ours = getattr(nn, name)(input_size, hidden_size, **settings, dtype=dtype)
    theirs = getattr(torch.nn, name)(input_size, hidden_size, **settings, dtype=torch_dtype(dtype))
    copy_state_to_torch(ours, theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    return ours, theirs


def weighted_sum(tensors, lib, seed):
    """sum of the tensors of lib (minigrad or torch) times random weights drawn from seed."""
    rng = np.random.default_rng(seed)
    total = 0
    for t in tensors:
        weights = rng.standard_normal(tuple(t.shape)).astype(str(t.dtype).replace("torch.", ""))
        total = total + (t * lib.tensor(weights)).sum()
    return total


def compare_and_backward(results, their_results, dtype, seed, leaves):
    """Each minigrad result against its torch twin, then one weighted loss of them all backward on
    each side, and the gradients of `leaves` ((minigrad tensor, torch tensor, name) each)
    compared, within TOLERANCES["recurrent"]."""
    torch = pytest.importorskip("torch")
    close = tolerance("recurrent", dtype)
    for position, (ours, theirs) in enumerate(zip(results, their_results)):
        assert_close(ours, theirs, close, f"result {position}")
    weighted_sum(results, mg, seed).backward()
    weighted_sum(their_results, torch, seed).backward()
    for ours, theirs, name in leaves:
        assert_close(ours.grad, theirs.grad, close, f"{name}.grad")
