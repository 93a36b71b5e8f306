"""What the op tests of tests/ops/ share: their inputs and their two kinds of check.

check_gradient(fn, *arrays) gradchecks fn in float64 against central differences;
check_against_torch(mg_fn, torch_fn, arrays, dtype) runs both on the same arrays through the
parity harness (tests/parity.py) and compares the outputs and the gradients of a weighted sum;
assert_clear_error(call, error, fragment) checks the error of a bad argument.
rand, away_from_zero and values draw the inputs; FAST is the hypothesis budget of the op sweeps.
"""

import math

import numpy as np
import pytest
from hypothesis import settings

import minigrad as mg
from parity import assert_runs_match, run_both, tolerance

FAST = settings(max_examples=15, deadline=None)


def rand(*shape, low=-2.0, high=2.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def away_from_zero(*shape, seed=0):
    """Values in [-2, -0.2] u [0.2, 2]: |x|, relu and friends are smooth there."""
    values = rand(*shape, low=0.2, high=2.0, seed=seed)
    signs = np.where(np.random.default_rng(seed + 100).random(shape) < 0.5, -1.0, 1.0)
    return values * signs


def check_gradient(fn, *arrays):
    """gradcheck fn on float64 copies of arrays (it raises with the worst element on failure)."""
    assert mg.gradcheck(fn, [np.asarray(a, dtype=np.float64) for a in arrays])


def value(fn, *arrays):
    return fn(*[mg.tensor(np.asarray(a, dtype=np.float64)) for a in arrays]).numpy()


inf, nan = math.inf, math.nan


def check_against_torch(mg_fn, torch_fn, arrays, dtype, grad=True, gradients="elementwise"):
    """mg_fn and torch_fn on the same arrays: the same output, and the same gradients of a
    weighted sum of it (weights make every element count), within TOLERANCES["elementwise"] of
    the output's dtype and TOLERANCES[gradients] of dtype."""
    ours, theirs = run_both(
        lambda fn, *leaves: fn(*leaves),
        arrays,
        sides=(mg_fn, torch_fn),
        upstream=lambda shape: np.random.default_rng(0).uniform(0.5, 1.5, shape),
        grad=grad,
    )
    output_dtype = str(theirs.out.dtype).replace("torch.", "")
    assert_runs_match(
        ours, theirs, tolerance("elementwise", output_dtype), gradients=tolerance(gradients, dtype)
    )


def assert_clear_error(call, error, fragment):
    """call() raises error with fragment in its message (what was expected and what was given);
    minigrad's errors are RuntimeErrors too (as torch raises them), TypeError aside."""
    with pytest.raises(error) as raised:
        call()
    assert fragment in str(raised.value)
    assert isinstance(raised.value, RuntimeError) or error is TypeError


def values(low, high, shape, dtype, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


def np_softmax(x, axis):
    """softmax along axis in numpy (the reference of the softmax and cross-entropy tests)."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
