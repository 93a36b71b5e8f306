"""Threads: grad mode and module scope are per thread, gradient accumulation is safe, and two
models trained at once in two threads give the results they give one after the other."""

import threading

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from thread_helpers import run_in_threads


def test_no_grad_in_one_thread_does_not_stop_recording_in_another():
    inside, entered, recorded = threading.Event(), threading.Event(), []

    def quiet():
        with mg.no_grad():
            entered.set()
            inside.wait(5)

    def busy():
        entered.wait(5)
        x = mg.ones(3, requires_grad=True)
        for _ in range(300):
            recorded.append((x * 2).sum().requires_grad)
        inside.set()

    run_in_threads(quiet, busy)
    assert all(recorded) and len(recorded) == 300
    assert mg.is_grad_enabled()


def test_overlapping_no_grad_blocks_in_two_threads_leave_grad_mode_on():
    # A enters, then B enters, then A leaves, then B leaves: with one process-wide flag, B would
    # restore the "off" that it found when it entered, and grad mode would stay off for good.
    a_inside, b_inside, a_left = threading.Event(), threading.Event(), threading.Event()

    def first():
        with mg.no_grad():
            a_inside.set()
            b_inside.wait(5)
        a_left.set()

    def second():
        a_inside.wait(5)
        with mg.no_grad():
            b_inside.set()
            a_left.wait(5)

    run_in_threads(first, second)
    results = []
    run_in_threads(lambda: results.append(mg.is_grad_enabled()))
    assert mg.is_grad_enabled() and results == [True]


def test_gradient_accumulation_from_two_threads_adds_every_pass():
    weight = mg.ones(4, requires_grad=True)

    def passes():
        for _ in range(200):
            (weight * 1.0).sum().backward()

    run_in_threads(passes, passes)
    np.testing.assert_array_equal(weight.grad.numpy(), np.full(4, 400.0, np.float32))


def _train(seed, steps, quiet_every=0):
    """A small model and its losses; every `quiet_every` steps also run an eval pass under
    no_grad."""
    mg.manual_seed(seed)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    optimizer = mg.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(seed)
    x = mg.tensor(rng.standard_normal((16, 3)).astype(np.float32))
    y = mg.tensor(rng.integers(0, 2, 16))
    losses = []
    for step in range(steps):
        if quiet_every and step % quiet_every == 0:
            with mg.no_grad():
                model(x)
        optimizer.zero_grad()
        loss = mg.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, [p.numpy().copy() for p in model.parameters()]


def test_two_models_trained_at_once_match_training_them_one_after_the_other():
    # The seeded generator is process-wide, so each thread builds its model before the other
    # starts drawing: initialise both first (sequentially), then train concurrently.
    expected = [_train(1, 60), _train(2, 60, quiet_every=3)]
    results = {}
    models_built = threading.Lock()

    def worker(key, seed, quiet_every):
        with models_built:
            mg.manual_seed(seed)
            model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
        optimizer = mg.optim.SGD(model.parameters(), lr=0.1)
        rng = np.random.default_rng(seed)
        x = mg.tensor(rng.standard_normal((16, 3)).astype(np.float32))
        y = mg.tensor(rng.integers(0, 2, 16))
        losses = []
        for step in range(60):
            if quiet_every and step % quiet_every == 0:
                with mg.no_grad():
                    model(x)
            optimizer.zero_grad()
            loss = mg.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        results[key] = (losses, [p.numpy().copy() for p in model.parameters()])

    run_in_threads(lambda: worker("a", 1, 0), lambda: worker("b", 2, 3))
    for key, (losses, params) in zip("ab", expected):
        np.testing.assert_array_equal(results[key][0], losses)
        for got, want in zip(results[key][1], params):
            np.testing.assert_array_equal(got, want)


def test_module_scope_is_per_thread():
    from minigrad import autograd

    seen = []
    started, release = threading.Event(), threading.Event()

    class Slow(nn.Module):
        def forward(self, x):
            started.set()
            release.wait(5)
            return x * 2

    def other():
        started.wait(5)
        seen.append(autograd.module_frame())
        release.set()

    run_in_threads(lambda: Slow()(mg.ones(2, requires_grad=True)), other)
    assert seen == [None]


def test_no_grad_decorating_a_generator_holds_inside_the_generator():
    @mg.no_grad()
    def steps(x):
        for _ in range(3):
            yield (x * 2).requires_grad, mg.is_grad_enabled()

    x = mg.ones(2, requires_grad=True)
    for requires_grad, enabled in steps(x):
        assert not requires_grad and not enabled
        assert mg.is_grad_enabled()  # the caller's code between resumptions keeps its own mode
    assert (x * 2).requires_grad


def test_no_grad_generator_returns_its_value_and_passes_sent_values():
    @mg.no_grad
    def echo():
        received = yield 1
        return received * 10

    generator = echo()
    assert next(generator) == 1
    with pytest.raises(StopIteration) as stop:
        generator.send(4)
    assert stop.value.value == 40
