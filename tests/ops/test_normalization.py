"""Layer normalisation: the Numba kernels against their numpy twins, the op and nn.LayerNorm
against PyTorch (float32, 1e-5) and against finite differences (float64 gradcheck)."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import nn
from minigrad.kernels import layer_norm as numba_layer_norm
from minigrad.kernels import reference
from minigrad.ops.normalization import layer_norm

few = settings(max_examples=20, deadline=None)  # no wall-clock limits (first calls compile)


def random_rows(seed, shape, dtype, shift=1.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 3 + shift).astype(dtype)


# ============================================================ the numpy twin against the formula


def test_twin_matches_the_textbook_formula_and_its_jacobian():
    x = random_rows(0, (3, 6), np.float64)
    weight, bias = random_rows(1, 6, np.float64), random_rows(2, 6, np.float64)
    y, mean, rstd = reference.layer_norm_forward(x, weight, bias, 1e-5)
    np.testing.assert_allclose(mean, x.mean(1), rtol=1e-14)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(x.var(1) + 1e-5), rtol=1e-14)
    np.testing.assert_allclose(
        y,
        (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * weight + bias,
        rtol=1e-13,
    )
    # backward of row 0 against the Jacobian by central differences
    grad_y = random_rows(3, (3, 6), np.float64)
    grad_x, grad_weight, grad_bias = reference.layer_norm_backward(grad_y, x, mean, rstd, weight)
    numeric = np.zeros(6)
    for j in range(6):
        step = np.zeros_like(x)
        step[0, j] = 1e-6
        plus = reference.layer_norm_forward(x + step, weight, bias)[0]
        minus = reference.layer_norm_forward(x - step, weight, bias)[0]
        numeric[j] = np.sum((plus - minus) * grad_y) / 2e-6
    np.testing.assert_allclose(grad_x[0], numeric, rtol=1e-6, atol=1e-8)
    xhat = (x - mean[:, None]) * rstd[:, None]
    np.testing.assert_allclose(grad_weight, (grad_y * xhat).sum(0), rtol=1e-13)
    np.testing.assert_allclose(grad_bias, grad_y.sum(0), rtol=1e-13)


# ============================================================ Numba kernels against the twin


@few
@given(
    seed=st.integers(0, 2**16),
    lead=st.sampled_from([(1,), (5,), (2, 3), (0,), (700,)]),
    width=st.sampled_from([1, 2, 7, 128, 130]),
    dtype=st.sampled_from([np.float32, np.float64]),
    affine=st.booleans(),
)
def test_kernels_match_twin(seed, lead, width, dtype, affine):
    shape = lead + (width,)
    x = random_rows(seed, shape, np.float64, shift=0.0)
    # rows of standard deviation 3 around 1: no row so flat that float32 rounding dominates
    if width > 1:
        x = (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True) * 3 + 1
    x = x.astype(dtype)
    weight = random_rows(seed + 1, width, dtype) if affine else None
    bias = random_rows(seed + 2, width, dtype) if affine else None
    grad_y = random_rows(seed + 3, shape, dtype, shift=0.0)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-11)
    got = numba_layer_norm.layer_norm_forward(x, weight, bias, 1e-5)
    want = reference.layer_norm_forward(x, weight, bias, 1e-5)
    for a, b in zip(got, want):
        assert a.dtype == dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, **tol)
    got = numba_layer_norm.layer_norm_backward(grad_y, x, want[1], want[2], weight)
    want = reference.layer_norm_backward(grad_y, x, want[1], want[2], weight)
    for a, b in zip(got, want):
        assert a.dtype == dtype and a.shape == b.shape
        # sums over 700 rows: compare relative to their size
        scale = max(1.0, float(np.abs(b).max(initial=0)))
        np.testing.assert_allclose(a / scale, b / scale, **tol)


def test_parallel_path_matches_serial_path():
    # above the threshold, not a multiple of the chunk count
    rows = numba_layer_norm.PARALLEL_MIN_SIZE // 64 + 37
    x = random_rows(0, (rows, 64), np.float64)
    weight, bias = random_rows(1, 64, np.float64), random_rows(2, 64, np.float64)
    grad_y = random_rows(3, (rows, 64), np.float64)
    y, mean, rstd = numba_layer_norm.layer_norm_forward(x, weight, bias)
    serial = np.empty_like(x), np.empty(rows), np.empty(rows)
    numba_layer_norm._forward_rows(x, weight, bias, 1e-5, 1 / 64, *serial, 0, rows)
    for a, b in zip((y, mean, rstd), serial):
        np.testing.assert_array_equal(a, b)
    grad_x, grad_weight, grad_bias = numba_layer_norm.layer_norm_backward(
        grad_y, x, mean, rstd, weight
    )
    serial_x, serial_weight, serial_bias = np.empty_like(x), np.zeros(64), np.zeros(64)
    numba_layer_norm._backward_rows(
        grad_y, x, mean, rstd, weight, 1 / 64, serial_x, serial_weight, serial_bias, 0, rows
    )
    np.testing.assert_array_equal(grad_x, serial_x)
    np.testing.assert_allclose(grad_weight, serial_weight, rtol=1e-12)  # summed in another order
    np.testing.assert_allclose(grad_bias, serial_bias, rtol=1e-12)


def test_constant_rows_normalise_to_bias_without_nan():
    x = np.full((4, 8), 3.5, np.float32)
    bias = np.arange(8, dtype=np.float32)
    for module in (numba_layer_norm, reference):
        y, _, rstd = module.layer_norm_forward(x, np.ones(8, np.float32), bias, 1e-5)
        np.testing.assert_allclose(y, np.broadcast_to(bias, (4, 8)), atol=1e-6)
        np.testing.assert_allclose(rstd, 1 / np.sqrt(1e-5), rtol=1e-5)


def test_kernels_reject_bad_arguments():
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(TypeError, match="float32 or float64"):
        numba_layer_norm.layer_norm_forward(x.astype(np.int64))
    with pytest.raises(ValueError, match=r"weight of shape \(4,\)"):
        numba_layer_norm.layer_norm_forward(x, np.ones(3, np.float32))
    with pytest.raises(ValueError, match="grad_y of x's shape"):
        numba_layer_norm.layer_norm_backward(
            np.zeros((2, 3), np.float32), x, np.zeros(2), np.ones(2)
        )


# ============================================================ the op against PyTorch

torch_cases = [
    ((2, 5, 16), (16,), True),
    ((3, 7), (7,), False),
    ((2, 3, 4, 5), (4, 5), True),
    ((6,), (6,), True),
]


@pytest.mark.parametrize("shape, normalized_shape, affine", torch_cases)
def test_layer_norm_matches_torch_float32(shape, normalized_shape, affine):
    torch = pytest.importorskip("torch")
    x = random_rows(0, shape, np.float32)
    weight = random_rows(1, normalized_shape, np.float32) if affine else None
    bias = random_rows(2, normalized_shape, np.float32) if affine else None
    grad_y = random_rows(3, shape, np.float32, shift=0.0)

    leaves = [
        mg.tensor(a, requires_grad=True) if a is not None else None for a in (x, weight, bias)
    ]
    y = layer_norm(leaves[0], normalized_shape, leaves[1], leaves[2], eps=1e-5)
    y.backward(mg.tensor(grad_y))
    torch_leaves = [
        torch.tensor(a, requires_grad=True) if a is not None else None for a in (x, weight, bias)
    ]
    y_torch = torch.nn.functional.layer_norm(
        torch_leaves[0], normalized_shape, torch_leaves[1], torch_leaves[2], eps=1e-5
    )
    y_torch.backward(torch.tensor(grad_y))

    assert y.dtype == np.float32 and y.shape == shape
    np.testing.assert_allclose(y.numpy(), y_torch.detach().numpy(), rtol=1e-5, atol=1e-5)
    for mine, theirs in zip(leaves, torch_leaves):
        if mine is not None:
            assert mine.grad.dtype == np.float32
            np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, normalized_shape, affine", torch_cases)
def test_layer_norm_gradcheck_float64(shape, normalized_shape, affine):
    x = random_rows(4, shape, np.float64)
    if not affine:
        assert mg.gradcheck(lambda x: layer_norm(x, normalized_shape, eps=1e-5), [x])
        return
    weight, bias = (
        random_rows(5, normalized_shape, np.float64),
        random_rows(6, normalized_shape, np.float64),
    )
    assert mg.gradcheck(
        lambda x, w, b: layer_norm(x, normalized_shape, w, b, eps=1e-5), [x, weight, bias]
    )


def test_weight_without_bias_and_bias_without_weight_match_torch():
    torch = pytest.importorskip("torch")
    x = random_rows(7, (4, 6), np.float64)
    parameter = random_rows(8, 6, np.float64)
    for use_weight in (True, False):
        mine_x, mine_p = mg.tensor(x, requires_grad=True), mg.tensor(parameter, requires_grad=True)
        theirs_x, theirs_p = (
            torch.tensor(x, requires_grad=True),
            torch.tensor(parameter, requires_grad=True),
        )
        args = (mine_p, None) if use_weight else (None, mine_p)
        torch_args = (theirs_p, None) if use_weight else (None, theirs_p)
        (layer_norm(mine_x, 6, *args) ** 2).sum().backward()
        (torch.nn.functional.layer_norm(theirs_x, (6,), *torch_args) ** 2).sum().backward()
        np.testing.assert_allclose(
            mine_x.grad.numpy(), theirs_x.grad.numpy(), rtol=1e-10, atol=1e-12
        )
        np.testing.assert_allclose(
            mine_p.grad.numpy(), theirs_p.grad.numpy(), rtol=1e-10, atol=1e-12
        )


def test_layer_norm_is_one_node_in_the_graph():
    x = mg.randn(2, 3, 8, requires_grad=True)
    norm = nn.LayerNorm(8)
    y = norm(x)
    assert y.grad_fn.name == "LayerNorm"
    assert [t is u for t, u in zip(y.grad_fn.inputs, (x, norm.weight, norm.bias))] == [
        True,
        True,
        True,
    ]


def test_layer_norm_rejects_bad_arguments():
    x = mg.randn(2, 3, 8)
    with pytest.raises(ValueError, match=r"expected input with shape \(\*, 4\)"):
        layer_norm(x, 4)
    with pytest.raises(ValueError, match=r"weight must have shape normalized_shape=\(8,\)"):
        layer_norm(x, 8, mg.ones(4))
    with pytest.raises(TypeError, match="float32 or float64 input"):
        layer_norm(mg.tensor(np.zeros((2, 8), np.int64)), 8)
    with pytest.raises(TypeError, match="does not match input dtype"):
        layer_norm(x, 8, mg.ones(8, dtype=mg.float64))
    with pytest.raises(ValueError, match="eps must be >= 0"):
        layer_norm(x, 8, eps=-1e-5)
    # what torch code catches
    with pytest.raises(RuntimeError, match=r"expected input with shape \(\*, 4\)"):
        layer_norm(x, 4)


# ============================================================ nn.LayerNorm


def test_module_matches_torch_module_and_names_its_parameters():
    torch = pytest.importorskip("torch")
    norm = nn.LayerNorm(16)
    assert [name for name, _ in norm.named_parameters()] == ["weight", "bias"]
    # torch's initial values
    assert (norm.weight.numpy() == 1).all() and (norm.bias.numpy() == 0).all()
    rng = np.random.default_rng(0)
    norm.weight.numpy()[...] = rng.standard_normal(16)
    norm.bias.numpy()[...] = rng.standard_normal(16)
    reference_norm = torch.nn.LayerNorm(16)
    reference_norm.load_state_dict(
        {name: torch.from_numpy(value.numpy().copy()) for name, value in norm.state_dict().items()}
    )
    x = random_rows(9, (2, 5, 16), np.float32)
    np.testing.assert_allclose(
        norm(mg.tensor(x)).numpy(),
        reference_norm(torch.tensor(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-5,
    )
    assert repr(norm) == "LayerNorm((16,), eps=1e-05, elementwise_affine=True, bias=True)"


def test_module_without_affine_has_no_parameters():
    norm = nn.LayerNorm((3, 4), eps=1e-6, elementwise_affine=False)
    assert list(norm.parameters()) == [] and norm.weight is None and norm.bias is None
    y = norm(mg.tensor(random_rows(10, (5, 3, 4), np.float32)))
    rows = y.numpy().reshape(5, 12)
    np.testing.assert_allclose(rows.mean(1), 0, atol=1e-6)
    np.testing.assert_allclose(rows.std(1), 1, atol=1e-4)


def test_module_without_bias_matches_torch_forward_and_backward():
    torch = pytest.importorskip("torch")
    norm, reference_norm = nn.LayerNorm((4, 8), bias=False), torch.nn.LayerNorm((4, 8), bias=False)
    assert [name for name, _ in norm.named_parameters()] == ["weight"] and norm.bias is None
    assert repr(norm) == "LayerNorm((4, 8), eps=1e-05, elementwise_affine=True, bias=False)"
    norm.weight.numpy()[...] = random_rows(11, (4, 8), np.float32)
    reference_norm.load_state_dict({"weight": torch.from_numpy(norm.weight.numpy().copy())})
    x = random_rows(12, (3, 4, 8), np.float32)
    ours, theirs = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, reference_out = norm(ours), reference_norm(theirs)
    np.testing.assert_allclose(out.numpy(), reference_out.detach().numpy(), rtol=1e-5, atol=1e-5)
    grad = random_rows(13, (3, 4, 8), np.float32)
    out.backward(grad)
    reference_out.backward(torch.tensor(grad))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(
        norm.weight.grad.numpy(), reference_norm.weight.grad.numpy(), rtol=1e-4, atol=1e-5
    )
    # without affine, bias=False changes nothing
    assert list(nn.LayerNorm(8, elementwise_affine=False, bias=False).parameters()) == []


# ============================================================ RMSNorm


@pytest.mark.parametrize(
    "shape, normalized_shape, eps, affine",
    [
        ((2, 5, 16), 16, None, True),
        ((3, 4, 6), (4, 6), 1e-6, True),
        ((7, 8), 8, 0.1, False),
        ((8,), (8,), None, True),
    ],
)
def test_rms_norm_matches_torch_forward_and_backward(shape, normalized_shape, eps, affine):
    torch = pytest.importorskip("torch")
    norm = nn.RMSNorm(normalized_shape, eps=eps, elementwise_affine=affine)
    reference = torch.nn.RMSNorm(normalized_shape, eps=eps, elementwise_affine=affine)
    if affine:
        norm.weight.numpy()[...] = random_rows(20, norm.weight.shape, np.float32)
        reference.load_state_dict({"weight": torch.from_numpy(norm.weight.numpy().copy())})
    x = random_rows(21, shape, np.float32, shift=0.3)
    ours, theirs = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, reference_out = norm(ours), reference(theirs)
    np.testing.assert_allclose(out.numpy(), reference_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    grad = random_rows(22, shape, np.float32)
    out.backward(grad)
    reference_out.backward(torch.tensor(grad))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-5)
    if affine:
        np.testing.assert_allclose(
            norm.weight.grad.numpy(), reference.weight.grad.numpy(), rtol=1e-4, atol=1e-5
        )


def test_rms_norm_gradcheck_float64_and_bad_arguments():
    import minigrad.nn.functional as F

    x = mg.tensor(random_rows(23, (3, 5), np.float64), requires_grad=True)
    w = mg.tensor(random_rows(24, 5, np.float64), requires_grad=True)
    assert mg.gradcheck(lambda a, b: F.rms_norm(a, 5, b, eps=1e-3), (x, w))
    with pytest.raises(ValueError, match=r"rms_norm: expected input with shape \(\*, 4\)"):
        F.rms_norm(x, 4)
    with pytest.raises(ValueError, match="rms_norm: eps must be >= 0; got -1"):
        F.rms_norm(x, 5, eps=-1)
    with pytest.raises(
        TypeError, match="rms_norm: expected a float32 or float64 input; got dtype int64"
    ):
        F.rms_norm(mg.tensor([[1, 2]]), 2)
    with pytest.raises(
        ValueError, match=r"RMSNorm: normalized_shape must be a size >= 0 .*; got -1"
    ):
        nn.RMSNorm(-1)


# ============================================================ a 0 in normalized_shape

# name, normalized_shape, input shape, module settings: torch builds an empty layer and gives the
# empty input back, with empty gradients for the input and the parameters
EMPTY_CASES = [
    ("LayerNorm", 0, (2, 0), {}),
    ("LayerNorm", (0,), (0, 0), {}),
    ("LayerNorm", (2, 0), (3, 2, 0), {}),
    ("LayerNorm", (0, 2), (3, 0, 2), dict(bias=False)),
    ("LayerNorm", [0, 0], (4, 0, 0), dict(elementwise_affine=False)),
    ("RMSNorm", 0, (2, 0), {}),
    ("RMSNorm", (2, 0), (1, 2, 0), dict(eps=1e-6)),
    ("RMSNorm", (0, 3), (2, 5, 0, 3), dict(elementwise_affine=False)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, normalized_shape, shape, settings", EMPTY_CASES)
def test_empty_normalized_shape_matches_torch(name, normalized_shape, shape, settings, dtype):
    torch = pytest.importorskip("torch")
    ours = getattr(nn, name)(normalized_shape, dtype=dtype, **settings)
    theirs = getattr(torch.nn, name)(normalized_shape, dtype=getattr(torch, dtype), **settings)
    assert repr(ours) == repr(theirs)
    assert [(n, p.shape) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    x, x_torch = (
        mg.zeros(*shape, dtype=dtype, requires_grad=True),
        torch.zeros(shape, dtype=getattr(torch, dtype), requires_grad=True),
    )
    out, out_torch = ours(x), theirs(x_torch)
    assert (out.shape, str(out.dtype)) == (tuple(out_torch.shape), dtype)
    assert out is not x
    out.sum().backward()
    out_torch.sum().backward()
    assert x.grad.shape == tuple(x_torch.grad.shape)
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert p.grad is not None and p.grad.shape == tuple(q.grad.shape)


@pytest.mark.parametrize("function", ["layer_norm", "rms_norm"])
def test_functional_norms_of_empty_normalized_shape_match_torch(function):
    torch = pytest.importorskip("torch")
    import minigrad.nn.functional as F

    x, weight = mg.zeros(3, 2, 0, requires_grad=True), mg.ones(2, 0, requires_grad=True)
    x_torch, weight_torch = (
        torch.zeros(3, 2, 0, requires_grad=True),
        torch.ones(2, 0, requires_grad=True),
    )
    out = getattr(F, function)(x, (2, 0), weight)
    out_torch = getattr(torch.nn.functional, function)(x_torch, (2, 0), weight_torch)
    assert out.shape == tuple(out_torch.shape)
    out.sum().backward()
    out_torch.sum().backward()
    assert (x.grad.shape, weight.grad.shape) == (
        tuple(x_torch.grad.shape),
        tuple(weight_torch.grad.shape),
    )


@pytest.mark.parametrize("name", ["LayerNorm", "RMSNorm"])
@pytest.mark.parametrize("normalized_shape, shape", [(0, (2, 3)), ((2, 0), (2, 3)), (3, (2, 0))])
def test_empty_normalized_shape_refuses_other_inputs_as_torch(name, normalized_shape, shape):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        getattr(torch.nn, name)(normalized_shape)(torch.zeros(shape))
    with pytest.raises(RuntimeError, match=r"expected input with shape \(\*, "):
        getattr(nn, name)(normalized_shape)(mg.zeros(*shape))


@pytest.mark.parametrize("name", ["LayerNorm", "RMSNorm"])
@pytest.mark.parametrize("normalized_shape", [-3, (2, -1)])
def test_negative_normalized_shape_raises_a_runtime_error_as_torch(name, normalized_shape):
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        getattr(torch.nn, name)(normalized_shape)
    given = re.escape(str(normalized_shape))
    with pytest.raises(RuntimeError, match=f"normalized_shape must be a size >= 0.*got {given}"):
        getattr(nn, name)(normalized_shape)


def test_float32_layer_norm_of_rows_far_from_zero_keeps_float64s_answer():
    """Rows ~1e6 + N(0, 1) in float32: the two-pass statistics (mean first, then the spread
    around it) give what a float64 computation of the same float32 input gives, to ~1e-6;
    a one-pass E[x^2] - E[x]^2 in float32 (torch's CPU kernel is off by ~0.06 here) would not."""
    rng = np.random.default_rng(0)
    x = (1e6 + rng.standard_normal((8, 256))).astype(np.float32)
    exact = x.astype(np.float64)
    exact = (exact - exact.mean(-1, keepdims=True)) / np.sqrt(exact.var(-1, keepdims=True) + 1e-5)
    ours = layer_norm(mg.tensor(x), (256,)).numpy()
    assert ours.dtype == np.float32
    assert np.abs(ours - exact).max() < 1e-5
