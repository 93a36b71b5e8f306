"""Activations (gelu, silu, leaky_relu, elu, softplus): values and gradients against PyTorch in
float32 and float64, float64 gradchecks, the GELU kernels against their numpy twin."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import nn
from minigrad.kernels import gelu as numba_gelu
from minigrad.kernels import reference
from minigrad.kernels._numba_threads import PARALLEL_MIN_SIZE
from minigrad.ops.activations import elu, gelu, leaky_relu, silu, softplus
from parity import assert_close

few = settings(max_examples=25, deadline=None)  # no wall-clock limits (first calls compile)

# name -> (minigrad call, torch call given torch.nn.functional), with non-default settings too
CASES = {
    "gelu": (lambda x: gelu(x), lambda F, x: F.gelu(x)),
    "gelu_tanh": (
        lambda x: gelu(x, approximate="tanh"),
        lambda F, x: F.gelu(x, approximate="tanh"),
    ),
    "silu": (silu, lambda F, x: F.silu(x)),
    "leaky_relu": (leaky_relu, lambda F, x: F.leaky_relu(x)),
    "leaky_relu_0.2": (lambda x: leaky_relu(x, 0.2), lambda F, x: F.leaky_relu(x, 0.2)),
    "elu": (elu, lambda F, x: F.elu(x)),
    "elu_alpha_0.5": (lambda x: elu(x, alpha=0.5), lambda F, x: F.elu(x, alpha=0.5)),
    "softplus": (softplus, lambda F, x: F.softplus(x)),
    "softplus_beta_2_threshold_5": (
        lambda x: softplus(x, beta=2.0, threshold=5.0),
        lambda F, x: F.softplus(x, beta=2.0, threshold=5.0),
    ),
    "mish": (nn.functional.mish, lambda F, x: F.mish(x)),
    "hardtanh": (nn.functional.hardtanh, lambda F, x: F.hardtanh(x)),
    "hardtanh_-2_3": (
        lambda x: nn.functional.hardtanh(x, -2.0, 3.0),
        lambda F, x: F.hardtanh(x, -2.0, 3.0),
    ),
    "relu6": (nn.functional.relu6, lambda F, x: F.relu6(x)),
    "logsigmoid": (nn.functional.logsigmoid, lambda F, x: F.logsigmoid(x)),
    "softsign": (nn.functional.softsign, lambda F, x: F.softsign(x)),
    "modules": (
        lambda x: nn.Softsign()(nn.LogSigmoid()(nn.ReLU6()(nn.Hardtanh(-5.0, 5.0)(nn.Mish()(x))))),
        lambda F, x: F.softsign(F.logsigmoid(F.relu6(F.hardtanh(F.mish(x), -5.0, 5.0)))),
    ),
}


def inputs(seed, shape, dtype, spread):
    """Normal values times `spread`, plus exact zeros and the thresholds' neighbourhoods."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * spread
    flat = x.reshape(-1)
    specials = [0.0, -0.0, 1e-8, -1e-8, 2.5, 10.0, 20.0, 25.0, -30.0, -100.0]
    flat[: min(len(specials), flat.size)] = specials[: flat.size]
    return x.astype(dtype)


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (0, 3), (4, 5), (3, 7, 11)])
def test_matches_torch_values_and_gradients(name, dtype, shape):
    torch = pytest.importorskip("torch")
    mine, theirs = CASES[name]
    x = inputs(len(name), shape, dtype, spread=4.0)
    grad_y = inputs(7, shape, dtype, spread=1.0)
    leaf = mg.tensor(x, requires_grad=True)
    y = mine(leaf)
    y.backward(mg.tensor(grad_y))
    torch_leaf = torch.tensor(x, requires_grad=True)
    torch_y = theirs(torch.nn.functional, torch_leaf)
    torch_y.backward(torch.tensor(grad_y))
    assert y.dtype == dtype and y.shape == shape and leaf.grad.dtype == dtype
    assert_close(y, torch_y, "activations", "output")
    assert_close(leaf.grad, torch_leaf.grad, "activations", "gradient")


@few
@given(
    seed=st.integers(0, 2**16),
    name=st.sampled_from(sorted(CASES)),
    spread=st.sampled_from([0.1, 1.0, 8.0]),
    dtype=st.sampled_from([np.float32, np.float64]),
    size=st.integers(1, 3000),
)
def test_matches_torch_over_random_values(seed, name, spread, dtype, size):
    torch = pytest.importorskip("torch")
    mine, theirs = CASES[name]
    x = (np.random.default_rng(seed).standard_normal(size) * spread).astype(dtype)
    leaf = mg.tensor(x, requires_grad=True)
    mine(leaf).sum().backward()
    torch_leaf = torch.tensor(x, requires_grad=True)
    torch_y = theirs(torch.nn.functional, torch_leaf)
    torch_y.sum().backward()
    assert_close(mine(mg.tensor(x)), torch_y, "activations", "output")
    assert_close(leaf.grad, torch_leaf.grad, "activations", "gradient")


@pytest.mark.parametrize("name", CASES)
def test_gradcheck_float64(name):
    x = inputs(3, (4, 6), np.float64, spread=3.0)
    # no finite difference across a kink (relu-like ops at 0)
    x = np.where(np.abs(x) < 1e-3, 0.5, x)
    # keep away from softplus's switch to the identity (beta x = threshold: 20, or 5 with beta 2)
    x = np.where((np.abs(x - 20) < 1e-3) | (np.abs(x * 2 - 5) < 1e-3), 1.0, x)
    x = np.where(np.abs(np.abs(x) - 1) < 1e-3, 0.5, x)  # nor across hardtanh's corners at -1 and 1
    assert mg.gradcheck(CASES[name][0], [x])


# ============================================================ GELU kernels against the twin


@few
@given(
    seed=st.integers(0, 2**16),
    size=st.sampled_from([1, 5, 511, 512, 513, 4000, PARALLEL_MIN_SIZE + 77]),
    dtype=st.sampled_from([np.float32, np.float64]),
    approximate=st.sampled_from(["none", "tanh"]),
)
def test_gelu_kernels_match_twin(seed, size, dtype, approximate):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(size) * 5).astype(dtype)
    grad_y = rng.standard_normal(size).astype(dtype)
    # float32: the vectorised erf (Abramowitz & Stegun 7.1.26) is within 1.5e-7 of erf. It is
    # compared with the twin evaluated in float64: the twin's float32 tanh form loses digits
    # where tanh(u) is near -1 (1 + tanh(u) cancels), which the kernel avoids.
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    wide_x, wide_grad = x.astype(np.float64), grad_y.astype(np.float64)
    got = numba_gelu.gelu_forward(x, approximate)
    assert got.dtype == dtype and reference.gelu_forward(x, approximate).dtype == dtype
    np.testing.assert_allclose(got, reference.gelu_forward(wide_x, approximate), **tol)
    got = numba_gelu.gelu_backward(x, grad_y, approximate)
    assert got.dtype == dtype and reference.gelu_backward(x, grad_y, approximate).dtype == dtype
    np.testing.assert_allclose(got, reference.gelu_backward(wide_x, wide_grad, approximate), **tol)


def test_gelu_twin_matches_math_erf_and_tails():
    x = np.array([-40.0, -8.0, -1.0, -1e-20, 0.0, 0.5, 3.0, 40.0])
    moderate = x[2:]  # where 1 + erf has no cancellation
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in moderate])
    np.testing.assert_allclose(reference.gelu_forward(moderate), exact, rtol=1e-15, atol=1e-300)
    tail = -8 * 0.5 * math.erfc(8 / math.sqrt(2))  # -8 Phi(-8) = -5.0e-15
    for module in (numba_gelu, reference):
        for dtype in (np.float32, np.float64):
            y = module.gelu_forward(x.astype(dtype))
            assert y[0] == 0 and y[-1] == 40 and np.isfinite(y).all()
            # Phi is taken from the small tail, so there is no cancellation to 0; float32's erf
            # formula is accurate to 1.5e-7 absolute, 2% relative this far out
            rtol = {np.float64: 1e-12, np.float32: 2e-2 if module is numba_gelu else 1e-6}[dtype]
            np.testing.assert_allclose(y[1], tail, rtol=rtol)


def test_gelu_kernels_propagate_nan_and_reject_bad_arguments():
    x = np.array([np.nan, 1.0], np.float32)
    for module in (numba_gelu,):
        assert np.isnan(module.gelu_forward(x)[0]) and module.gelu_forward(x)[1] > 0.8
        with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
            module.gelu_forward(x, "erf")
        with pytest.raises(TypeError, match="float32 or float64"):
            module.gelu_forward(np.arange(3))


# ============================================================ errors and modules

# torch takes integer tensors for these
INTEGER_OK = {"hardtanh", "hardtanh_-2_3", "relu6", "softsign"}


@pytest.mark.parametrize("name", sorted(set(CASES) - INTEGER_OK))
def test_integer_inputs_are_rejected(name):
    with pytest.raises(TypeError, match="float32 or float64 tensor; got dtype int64"):
        CASES[name][0](mg.tensor([1, 2, 3]))


@pytest.mark.parametrize("name", sorted(INTEGER_OK))
def test_integer_inputs_where_torch_takes_them(name):
    torch = pytest.importorskip("torch")
    ids = np.array([-7, -1, 0, 2, 9])
    ours, theirs = (
        CASES[name][0](mg.tensor(ids)),
        CASES[name][1](torch.nn.functional, torch.tensor(ids)),
    )
    assert ours.dtype == theirs.numpy().dtype
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)


def test_gelu_rejects_unknown_approximation():
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'; got 'fast'"):
        gelu(mg.randn(3), approximate="fast")
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        nn.GELU("fast")


def test_gelu_module():
    x = mg.randn(2, 3)
    np.testing.assert_array_equal(nn.GELU()(x).numpy(), gelu(x).numpy())
    np.testing.assert_array_equal(nn.GELU("tanh")(x).numpy(), gelu(x, approximate="tanh").numpy())
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"


@pytest.mark.parametrize(
    "shape, slopes",
    [((4, 3), 3), ((2, 3, 5), 3), ((5,), 1), ((2, 3, 4, 4), 1), ((), 1), ((2, 4, 3, 3), 4)],
)
def test_prelu_matches_torch_values_and_gradients_of_input_and_slopes(shape, slopes):
    torch = pytest.importorskip("torch")
    x = inputs(5, shape, np.float64, spread=2.0)
    weight = np.random.default_rng(6).uniform(0.1, 0.5, slopes)
    ours, our_weight = mg.tensor(x, requires_grad=True), mg.tensor(weight, requires_grad=True)
    theirs, their_weight = (
        torch.tensor(x, requires_grad=True),
        torch.tensor(weight, requires_grad=True),
    )
    out, reference = (
        nn.functional.prelu(ours, our_weight),
        torch.nn.functional.prelu(theirs, their_weight),
    )
    grad = inputs(7, shape, np.float64, spread=1.0)
    out.backward(mg.tensor(grad))
    reference.backward(torch.tensor(grad))
    np.testing.assert_allclose(out.numpy(), reference.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        our_weight.grad.numpy(), their_weight.grad.numpy(), rtol=1e-10, atol=1e-12
    )


def test_prelu_module_and_bad_slopes():
    torch = pytest.importorskip("torch")
    layer = nn.PReLU(3)
    assert layer.weight.numpy().tolist() == [0.25] * 3 and list(layer.state_dict()) == list(
        torch.nn.PReLU(3).state_dict()
    )
    assert layer(mg.tensor([[-4.0, 2.0, -1.0]])).numpy().tolist() == [[-1.0, 2.0, -0.25]]
    with pytest.raises(
        ValueError, match="3 slopes need an input with 3 channels in dim 1; got input of shape"
    ):
        layer(mg.ones(2, 4))
    with pytest.raises(ValueError, match="num_parameters must be an integer >= 1; got 0"):
        nn.PReLU(0)
    with pytest.raises(ValueError, match="weight must be 1-D"):
        nn.functional.prelu(mg.ones(2, 3), mg.ones(1, 3))
