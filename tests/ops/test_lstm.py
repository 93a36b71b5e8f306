"""The fused LSTM layer of minigrad/ops/lstm.py (lstm_layer: the input projection, then one
LSTMRecurrence node), through nn.LSTM: against a Python loop of lstm_cell steps in float64 (every
layout, lengths, outputs, final states and every gradient), a float64 gradcheck with lengths, two
threads against one, and the same parameter gradients when the input needs none.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.kernels import _threads
from rnn_checks import parameters_replaced, random_inputs, weighted_loss


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
            output, (h_n, c_n) = lstm(x, (h0, c0), lengths=lengths)
        else:
            output, (h_n, c_n) = unrolled_lstm(lstm, x, lengths, h0, c0)
        weighted_loss([output, h_n, c_n], np.random.default_rng(3)).backward()
        grads = [x.grad.numpy(), h0.grad.numpy(), c0.grad.numpy()] + [
            p.grad.numpy() for p in lstm.parameters()
        ]
        results.append(([output.numpy(), h_n.numpy(), c_n.numpy()], grads))
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
            output, (h_n, c_n) = lstm(x, (h0, c0), lengths=lengths)
        return mg.cat([output.reshape(-1), h_n.reshape(-1), c_n.reshape(-1)])

    assert mg.gradcheck(run, [x, h0, c0, *lstm.parameters()])


@pytest.mark.parametrize("bidirectional", [True, False])
def test_two_threads_match_one(bidirectional):
    # two threads: the two directions, or two halves of the batch for one direction
    mg.manual_seed(6)
    lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=bidirectional)
    x_data = np.random.default_rng(6).standard_normal((5, 6, 3)).astype(np.float32)
    results = []
    previous = _threads.use_two_threads
    try:
        for parallel in (False, True):
            _threads.use_two_threads = parallel
            lstm.zero_grad()
            x = mg.tensor(x_data, requires_grad=True)
            output, (h_n, c_n) = lstm(x, lengths=[6, 2, 3, 6, 1])
            weighted_loss([output, h_n, c_n], np.random.default_rng(7)).backward()
            results.append(
                [output.numpy(), h_n.numpy(), c_n.numpy(), x.grad.numpy()]
                + [p.grad.numpy() for p in lstm.parameters()]
            )
    finally:
        _threads.use_two_threads = previous
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
        output, (h_n, c_n) = lstm(mg.tensor(x_data, requires_grad=requires_grad), lengths=[5, 3, 4])
        weighted_loss([output, h_n, c_n], np.random.default_rng(13)).backward()
        grads.append([p.grad.numpy() for p in lstm.parameters()])
    for with_x, without_x in zip(*grads):
        np.testing.assert_allclose(with_x, without_x, rtol=1e-13, atol=1e-15)
