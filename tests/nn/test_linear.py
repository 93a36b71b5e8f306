"""nn.Linear and F.linear (nn/linear.py): torch's default initialisation and its seeding, gradient
checks in float64, values and gradients against torch, no bias, and errors that name what was
expected.
"""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F
from parity import assert_close, assert_runs_match
from parity import assert_same_parameter_grads, copy_state_to_torch, run_both


def _torch():
    return pytest.importorskip("torch")


def test_linear_init_matches_torch_default_bounds():
    mg.manual_seed(0)
    layer = nn.Linear(400, 100)
    bound = 1 / math.sqrt(400)
    assert layer.weight.shape == (100, 400) and layer.bias.shape == (100,)
    assert layer.weight.dtype == np.float32
    assert np.abs(layer.weight.numpy()).max() <= bound and np.abs(layer.bias.numpy()).max() <= bound
    # U(-b, b) has standard deviation b / sqrt(3); 40000 draws pin it to about 0.5%
    assert abs(layer.weight.numpy().std() - bound / math.sqrt(3)) < 0.01 * bound
    assert abs(layer.weight.numpy().mean()) < 0.01 * bound


def test_linear_init_repeats_under_manual_seed():
    mg.manual_seed(7)
    first = nn.Linear(5, 3)
    mg.manual_seed(7)
    second = nn.Linear(5, 3)
    np.testing.assert_array_equal(first.weight.numpy(), second.weight.numpy())
    np.testing.assert_array_equal(first.bias.numpy(), second.bias.numpy())


def test_linear_gradcheck_float64_on_batched_input():
    mg.manual_seed(1)
    layer = nn.Linear(3, 2, dtype=np.float64)
    x = mg.randn(2, 4, 3, dtype=np.float64)
    assert mg.gradcheck(lambda x, w, b: F.linear(x, w, b), [x, layer.weight, layer.bias])
    assert mg.gradcheck(lambda x, w: F.linear(x, w), [mg.randn(3, dtype=np.float64), layer.weight])


def test_linear_without_bias():
    layer = nn.Linear(3, 2, bias=False)
    assert layer.bias is None
    assert [name for name, _ in layer.named_parameters()] == ["weight"]
    x = mg.randn(4, 3)
    np.testing.assert_allclose(layer(x).numpy(), x.numpy() @ layer.weight.numpy().T, rtol=1e-6)
    assert repr(layer) == "Linear(in_features=3, out_features=2, bias=False)"


def test_linear_shape_and_dtype_errors_name_what_was_expected():
    layer = nn.Linear(3, 2)
    with pytest.raises(ValueError, match=r"in_features=3.*\(4, 5\)"):
        layer(mg.randn(4, 5))
    with pytest.raises(TypeError, match="float64.*float32"):
        layer(mg.randn(4, 3, dtype=np.float64))
    with pytest.raises(ValueError, match="in_features"):
        nn.Linear(0, 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_linear_matches_torch_values_and_grads(dtype):
    torch = _torch()
    mg.manual_seed(2)
    layer = nn.Linear(5, 3, dtype=dtype)
    reference = copy_state_to_torch(layer, torch.nn.Linear(5, 3), dtype)
    x_array = np.random.default_rng(0).standard_normal((2, 4, 5)).astype(dtype)
    upstream = np.random.default_rng(1).standard_normal((2, 4, 3)).astype(dtype)
    ours, theirs = run_both(None, [x_array], sides=(layer, reference), upstream=upstream)
    assert ours.out.shape == (2, 4, 3)
    assert_runs_match(ours, theirs, "layer", names=["x"])
    assert_same_parameter_grads(layer, reference, "layer")


@pytest.mark.parametrize(
    "x_shape, out_features, bias, needs",
    [
        ((5,), 3, True, (True, True, True)),  # 1-D input
        ((2, 4, 5), 3, False, (True, True)),
        ((4096, 32), 64, True, (True, True, True)),  # big enough for the two-thread path
        ((3, 8), 600, True, (False, True, True)),  # more columns than rows; x needs no grad
        ((6, 8), 4, True, (True, False, False)),  # frozen weight and bias
        ((0, 5), 3, True, (True, True, True)),  # no rows: zero gradients for weight and bias
        ((2, 3, 0, 5), 3, True, (True, True, True)),
    ],
)
def test_functional_linear_matches_torch(x_shape, out_features, bias, needs):
    """F.linear as a torch user calls it, one graph node (Linear), gradients of every input that
    asks for one; the weight gradient comes out C-contiguous (the optimizer's layout)."""
    torch = _torch()
    rng = np.random.default_rng(len(x_shape) * 1000 + out_features)
    arrays = [
        rng.standard_normal(x_shape).astype(np.float32),
        rng.standard_normal((out_features, x_shape[-1])).astype(np.float32),
        rng.standard_normal(out_features).astype(np.float32),
    ][: 3 if bias else 2]
    ours = [mg.tensor(a, requires_grad=need) for a, need in zip(arrays, needs)]
    theirs = [torch.tensor(a, requires_grad=need) for a, need in zip(arrays, needs)]
    y, y_torch = F.linear(*ours), torch.nn.functional.linear(*theirs)
    assert y.grad_fn.name == "Linear" and y.shape == tuple(y_torch.shape)
    upstream = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(upstream)
    y_torch.backward(torch.from_numpy(upstream))
    assert_close(y, y_torch, "linear", "output", same_dtype=True)
    for mine, reference, need in zip(ours, theirs, needs):
        if not need:
            assert mine.grad is None
            continue
        assert mine.grad.shape == mine.shape
        assert_close(mine.grad, reference.grad, "linear gradient", "gradient", same_dtype=True)
    if needs[1]:
        assert ours[1].grad.numpy().flags.c_contiguous


def test_functional_linear_errors_and_in_place_changes():
    x, weight = mg.randn(4, 3, requires_grad=True), mg.randn(2, 3, requires_grad=True)
    with pytest.raises(
        ValueError,
        match=r"linear: bias must have shape \(2,\) and dtype float32; got \(3,\) float32",
    ):
        F.linear(x, weight, mg.randn(3))
    with pytest.raises(
        ValueError,
        match=r"linear: bias must have shape \(2,\) and dtype float32; got \(2,\) float64",
    ):
        F.linear(x, weight, mg.randn(2, dtype=np.float64))
    with pytest.raises(
        ValueError, match=r"weight must have shape \(out_features, in_features\); got \(3,\)"
    ):
        F.linear(x, mg.randn(3))
    y = F.linear(x, weight)
    with mg.no_grad():
        weight.add_(1.0)  # backward needs the weight as it was
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()
    integer = F.linear(mg.tensor(np.arange(6).reshape(2, 3)), mg.tensor(np.ones((4, 3), np.int64)))
    np.testing.assert_array_equal(
        integer.numpy(), np.arange(6).reshape(2, 3) @ np.ones((3, 4), np.int64)
    )
