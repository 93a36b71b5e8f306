"""The activation modules (nn/activation.py): their formulas, gradchecks, values, gradients and
reprs against torch, settings checked and used when changed; the functional activations
against torch over edge values, RReLU's random slopes, in-place spellings and bad arguments; GELU
(both approximations, as a module and a function) against torch's in float32 and float64.
"""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from layer_checks import MINIGRAD, TF, TORCH, assert_same
from minigrad import nn
from minigrad.errors import ArgumentError, DimError, DTypeError, ShapeError
from parity import DTYPES, assert_runs_match, raises_like_torch, run_both, tolerance

torch = pytest.importorskip("torch")
torch.set_num_threads(1)


def _torch():
    return pytest.importorskip("torch")


def test_activations_compute_their_formulas():
    values = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    x = mg.tensor(values)
    np.testing.assert_allclose(nn.Tanh()(x).numpy(), np.tanh(values), rtol=1e-12)
    np.testing.assert_allclose(nn.Sigmoid()(x).numpy(), 1 / (1 + np.exp(-values)), rtol=1e-12)
    np.testing.assert_array_equal(nn.ReLU()(x).numpy(), [0, 0, 0, 0.5, 3.0])
    assert nn.Identity()(x) is x


def test_activation_modules_gradcheck():
    x = mg.tensor(np.array([[-1.3, 0.2, 0.7], [2.1, -0.4, 0.9]]))
    for layer in (nn.Tanh(), nn.Sigmoid(), nn.ReLU()):
        assert mg.gradcheck(layer, [x])


ACTIVATIONS = {  # name -> (minigrad module, torch module given torch.nn)
    "GELU": (lambda: nn.GELU(), lambda T: T.GELU()),
    "GELU_tanh": (lambda: nn.GELU("tanh"), lambda T: T.GELU("tanh")),
    "SiLU": (lambda: nn.SiLU(), lambda T: T.SiLU()),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.3), lambda T: T.LeakyReLU(0.3)),
    "ELU": (lambda: nn.ELU(alpha=0.5), lambda T: T.ELU(alpha=0.5)),
    "Softplus": (
        lambda: nn.Softplus(beta=2.0, threshold=4.0),
        lambda T: T.Softplus(beta=2.0, threshold=4.0),
    ),
    "Softmax": (lambda: nn.Softmax(dim=1), lambda T: T.Softmax(dim=1)),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=-1), lambda T: T.LogSoftmax(dim=-1)),
    "ReLU_inplace": (lambda: nn.ReLU(inplace=True), lambda T: T.ReLU(inplace=True)),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_modules_match_torch_values_grads_and_repr(name, dtype):
    torch = _torch()
    ours, theirs = ACTIVATIONS[name][0](), ACTIVATIONS[name][1](torch.nn)
    assert repr(ours) == repr(theirs)
    array = np.random.default_rng(0).standard_normal((2, 6, 2)).astype(dtype) * 3
    # * 1: in-place modules may not write into a leaf
    mine, torchs = run_both(lambda module, x: module(x * 1), [array], sides=(ours, theirs), seed=1)
    assert_runs_match(mine, torchs, "layer", names=["x"])


def test_module_settings_are_checked_and_used_when_changed():
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("erf")
    layer = nn.LeakyReLU(0.1)
    layer.negative_slope = 0.5  # read at each call, as torch's
    assert layer(mg.tensor([-2.0])).item() == -1.0
    assert nn.Identity(54, unused="ignored")(mg.ones(2)).shape == (2,)


EDGES = [0.0, -0.0, 3.0, -3.0, 0.5, -0.5, 0.1, 1e-8, -1e-8, 20.0, -30.0, 1e4, -1e4]


def activation_input(dtype, shape=(6, 8), seed=0):
    """Normal values times 4 with the edges first: 0, the kinks at +-3, +-0.5, 0.1, large."""
    x = np.random.default_rng(seed).standard_normal(shape) * 4
    flat = x.reshape(-1)
    flat[: min(len(EDGES), flat.size)] = EDGES[: flat.size]
    return x.astype(dtype)


# name -> call(library, x), the same spelling for torch and minigrad
ACTIVATION_CALLS = {
    "selu": lambda L, x: L.F.selu(x),
    "celu": lambda L, x: L.F.celu(x),
    "celu_alpha_2": lambda L, x: L.F.celu(x, 2.0),
    "celu_alpha_-0.5": lambda L, x: L.F.celu(
        x.clamp(min=-5), -0.5
    ),  # exp(x / alpha) grows for x < 0
    "elu": lambda L, x: L.F.elu(x, 0.7),
    "glu": lambda L, x: L.F.glu(x),
    "glu_dim_0": lambda L, x: L.F.glu(x, 0),
    "hardsigmoid": lambda L, x: L.F.hardsigmoid(x),
    "hardswish": lambda L, x: L.F.hardswish(x),
    "hardshrink": lambda L, x: L.F.hardshrink(x),
    "hardshrink_0.1": lambda L, x: L.F.hardshrink(x, 0.1),
    "softshrink": lambda L, x: L.F.softshrink(x),
    "softshrink_3": lambda L, x: L.F.softshrink(x, 3.0),
    "tanhshrink": lambda L, x: L.F.tanhshrink(x),
    "threshold": lambda L, x: L.F.threshold(x, 0.1, 20.0),
    "threshold_-3": lambda L, x: L.F.threshold(x, -3.0, -7.5),
    "softmin": lambda L, x: L.F.softmin(x, dim=1),
    "softmin_dim_0": lambda L, x: L.F.softmin(x, 0),
    "rrelu_eval": lambda L, x: L.F.rrelu(x),
    "rrelu_eval_bounds": lambda L, x: L.F.rrelu(x, 0.2, 0.6),
    "hardtanh_inplace": lambda L, x: L.F.hardtanh(x * 1, -2.0, 3.0, inplace=True),
    "relu_": lambda L, x: L.F.relu_(x * 1),
    "elu_": lambda L, x: L.F.elu_(x * 1, 0.5),
    "leaky_relu_": lambda L, x: L.F.leaky_relu_(x * 1, 0.2),
    "hardtanh_": lambda L, x: L.F.hardtanh_(x * 1),
    "threshold_": lambda L, x: L.F.threshold_(x * 1, 0.5, 2.0),
    "selu_": lambda L, x: L.F.selu_(x * 1),
    "celu_": lambda L, x: L.F.celu_(x * 1, 1.5),
    "rrelu_": lambda L, x: L.F.rrelu_(x * 1),
    "selu_inplace": lambda L, x: L.F.selu(x * 1, inplace=True),
    "celu_inplace": lambda L, x: L.F.celu(x * 1, inplace=True),
    "threshold_inplace": lambda L, x: L.F.threshold(x * 1, 0.0, 1.0, inplace=True),
    "modules": lambda L, x: L.nn.Sequential(
        L.nn.SELU(),
        L.nn.CELU(0.5),
        L.nn.Hardswish(),
        L.nn.Hardshrink(0.2),
        L.nn.Softshrink(0.1),
        L.nn.Tanhshrink(),
        L.nn.Threshold(0.0, -1.0),
        L.nn.Hardsigmoid(),
        L.nn.GLU(0),
        L.nn.Softmin(1),
        L.nn.RReLU().eval(),
    )(x),
    # each alone: torch refuses most of them after one another (their backward reads the output)
    "threshold_module_inplace": lambda L, x: L.nn.Threshold(-1.5, -2.0, inplace=True)(x * 1),
    "hardtanh_module_inplace": lambda L, x: L.nn.Hardtanh(-1.7, 2.0, inplace=True)(x * 1),
    "leaky_relu_module_inplace": lambda L, x: L.nn.LeakyReLU(inplace=True)(x * 1),
    "rrelu_module_inplace": lambda L, x: L.nn.RReLU(inplace=True).eval()(x * 1),
    "selu_module_inplace": lambda L, x: L.nn.SELU(inplace=True)(x * 1),
    "celu_module_inplace": lambda L, x: L.nn.CELU(0.5, inplace=True)(x * 1),
    "softmax2d": lambda L, x: L.nn.Softmax2d()(x.reshape(2, 3, 2, 4)),
    "softmax2d_unbatched": lambda L, x: L.nn.Softmax2d()(x.reshape(3, 4, 4)),
}


def activation_tolerance(name, dtype):
    if name in ("hardsigmoid", "modules") and dtype == np.float64:
        # torch's hardsigmoid gradient uses 1/6 rounded to float32
        return dict(rtol=1e-7, atol=1e-12)
    return None


@pytest.mark.parametrize("name", ACTIVATION_CALLS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_activations_match_torch_values_and_gradients(name, dtype):
    assert_same(
        {"x": activation_input(dtype)},
        ["x"],
        ACTIVATION_CALLS[name],
        dtype,
        activation_tolerance(name, dtype),
    )


@pytest.mark.parametrize(
    "name", ["selu", "celu", "hardswish", "hardshrink", "softshrink", "threshold", "rrelu_eval"]
)
@pytest.mark.parametrize("shape", [(), (0, 4), (2, 3, 5)])
def test_activations_keep_any_shape(name, shape):
    assert_same(
        {"x": activation_input(np.float64, shape)}, ["x"], ACTIVATION_CALLS[name], np.float64
    )


@pytest.mark.parametrize(
    "name",
    [
        name
        for name in ACTIVATION_CALLS
        if "inplace" not in name and not name.endswith("_") and "2d" not in name
    ],
)
def test_activations_gradcheck_float64(name):
    x = np.random.default_rng(1).standard_normal((4, 6)) * 4
    kinks = np.array([0.0, 3.0, -3.0, 0.5, -0.5, 0.1, 0.2, 1.0, 2.0, -2.0])
    # no difference across a kink
    x = np.where(np.abs(np.abs(x)[..., None] - np.abs(kinks)).min(-1) < 1e-3, 1.25, x)
    assert mg.gradcheck(lambda t: ACTIVATION_CALLS[name](MINIGRAD, t), [x])


@pytest.mark.parametrize(
    "name", [name for name in ACTIVATION_CALLS if "soft" not in name and "glu" not in name]
)
def test_activations_propagate_nan_values_as_torch(name):
    # values only: torch's gradient at NaN differs between its scalar and vectorised kernels
    x = activation_input(np.float64)
    x[1, :3] = np.nan
    assert_same(
        {"x": x}, [], ACTIVATION_CALLS[name], np.float64, activation_tolerance(name, np.float64)
    )


def test_threshold_keeps_integer_tensors_as_torch():
    ints = np.array([-2, 0, 1, 5])
    assert_same({"x": ints}, [], lambda L, x: L.F.threshold(x, 0.5, 9), np.float64)
    assert F.threshold(mg.tensor(ints), 0.5, 9).dtype == np.int64


def test_rrelu_training_draws_a_slope_per_element_in_its_bounds_from_minigrads_generator():
    x = mg.tensor(-np.ones(20000), requires_grad=True)
    mg.manual_seed(5)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = -y.numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 3e-3 and abs(slopes.var() - 0.2**2 / 12) < 1e-4  # U(0.1, 0.3)
    assert len(np.unique(slopes)) > 19000
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), slopes)  # the gradient is the slope drawn
    mg.manual_seed(5)
    np.testing.assert_array_equal(
        F.rrelu(mg.tensor(-np.ones(20000)), 0.1, 0.3, training=True).numpy(), -slopes
    )
    positive = mg.tensor([0.5, 2.0, 1e4], requires_grad=True)
    F.rrelu(positive, training=True).sum().backward()
    assert positive.grad.tolist() == [1.0, 1.0, 1.0]


def test_rrelu_module_random_in_training_mean_slope_in_eval():
    layer = nn.RReLU(0.1, 0.3)
    x = mg.tensor(-np.ones(1000))
    trained = layer(x).numpy()
    assert trained.std() > 0.03
    layer.eval()
    np.testing.assert_allclose(layer(x).numpy(), -0.2)
    torch_eval = torch.nn.RReLU(0.1, 0.3).eval()(torch.tensor(-np.ones(3)))
    np.testing.assert_allclose(
        layer(mg.tensor(-np.ones(3))).numpy(), torch_eval.numpy(), rtol=1e-15
    )


def test_inplace_activations_write_into_their_input():
    for call in [
        lambda t: F.selu_(t),
        lambda t: F.celu(t, inplace=True),
        lambda t: F.threshold_(t, 0.0, 5.0),
        lambda t: F.hardtanh_(t),
        lambda t: F.rrelu_(t, training=True),
        lambda t: F.elu_(t),
        lambda t: nn.SELU(inplace=True)(t),
        lambda t: nn.Hardtanh(inplace=True)(t),
    ]:
        x = mg.tensor([-2.0, 0.25, 3.0])
        assert call(x) is x and x[1].item() != 0 and x[0].item() != -2.0
    with pytest.raises(RuntimeError, match="leaf"):
        F.selu_(mg.tensor([1.0], requires_grad=True))


ACTIVATION_REPRS = [
    lambda L: L.nn.SELU(),
    lambda L: L.nn.SELU(inplace=True),
    lambda L: L.nn.CELU(),
    lambda L: L.nn.CELU(2.0, True),
    lambda L: L.nn.GLU(),
    lambda L: L.nn.GLU(1),
    lambda L: L.nn.Hardsigmoid(),
    lambda L: L.nn.Hardswish(),
    lambda L: L.nn.Hardshrink(),
    lambda L: L.nn.Softshrink(0.3),
    lambda L: L.nn.Tanhshrink(),
    lambda L: L.nn.Threshold(0.1, 20),
    lambda L: L.nn.Threshold(0.1, 20.0, inplace=True),
    lambda L: L.nn.Softmin(1),
    lambda L: L.nn.Softmin(),
    lambda L: L.nn.RReLU(),
    lambda L: L.nn.RReLU(0.1, 0.3, inplace=True),
    lambda L: L.nn.Softmax2d(),
    lambda L: L.nn.Hardtanh(-2.0, 2.0, inplace=True),
    lambda L: L.nn.Hardtanh(),
]


@pytest.mark.parametrize("index", range(len(ACTIVATION_REPRS)))
def test_activation_reprs_are_torchs(index):
    assert repr(ACTIVATION_REPRS[index](MINIGRAD)) == repr(ACTIVATION_REPRS[index](TORCH))


BAD_ACTIVATIONS = [
    (lambda: F.celu(mg.tensor([1.0]), 0.0), ArgumentError, "alpha cannot be 0"),
    (lambda: F.softshrink(mg.tensor([1.0]), -1.0), ArgumentError, "lambd must be >= 0; got -1.0"),
    (lambda: nn.Softshrink(-0.5), ArgumentError, "got -0.5"),
    (
        lambda: F.glu(mg.tensor([1.0, 2.0, 3.0])),
        ShapeError,
        "even size; dim 0 of shape \\(3,\\) has size 3",
    ),
    (lambda: F.glu(mg.ones(2, 3), 1), ShapeError, "dim 1 of shape \\(2, 3\\) has size 3"),
    (lambda: F.glu(mg.tensor(1.0)), ShapeError, "0-d"),
    (lambda: F.glu(mg.ones(2, 2), 2), DimError, "dim 2 is out of range"),
    (lambda: nn.Softmax2d()(mg.ones(2, 2)), ShapeError, "3-D .* or 4-D .*; got shape \\(2, 2\\)"),
    (
        lambda: F.rrelu(mg.tensor([1.0]), 0.5, 0.1),
        ArgumentError,
        "lower must be <= upper; got lower=0.5 and upper=0.1",
    ),
    (lambda: nn.RReLU(0.5, 0.1), ArgumentError, "lower=0.5 and upper=0.1"),
    (lambda: F.selu(mg.tensor([1, 2])), DTypeError, "float32 or float64 .* got dtype int64"),
    (lambda: F.hardsigmoid(mg.tensor([1, 2])), DTypeError, "got dtype int64"),
    (lambda: F.hardswish([1.0]), TypeError, "expected a Tensor; got list"),
    (lambda: F.threshold([1.0], 0.0, 1.0), TypeError, "expected a Tensor; got list"),
]


@pytest.mark.parametrize("index", range(len(BAD_ACTIVATIONS)))
def test_bad_activation_arguments_raise_clearly(index):
    call, error, message = BAD_ACTIVATIONS[index]
    with pytest.raises(error, match=message) as raised:
        call()
    assert isinstance(raised.value, RuntimeError) or error is TypeError


GELU_X = np.concatenate(
    [
        np.linspace(-12, 12, 97),
        [-1e4, -100.0, -30.0, -8.5, 0.0, -0.0, 8.5, 30.0, 100.0, 1e4, 1e-30, -1e-30, 3e38, -3e38],
    ]
)


def _torch_gelu(x, approximate, form, dtype):
    """torch's GELU of x computed in dtype: (output, gradient of the sum) as numpy arrays."""
    xt = torch.tensor(x.astype(dtype), requires_grad=True)
    yt = (
        torch.nn.GELU(approximate=approximate)(xt)
        if form == "module"
        else TF.gelu(xt, approximate=approximate)
    )
    yt.sum().backward()
    return yt.detach().numpy(), xt.grad.numpy()


def _assert_matches_either(actual, ours_dtype, theirs, theirs_float64, **tol):
    """actual agrees with torch in its own dtype, or (where torch's float32 kernel depends on the
    CPU: on AVX-512 its erf GELU gives nan at +inf and inf at 3e38, on AVX2 inf and 3e38) with
    torch's float64 result rounded to that dtype, element by element."""
    rounded = theirs_float64.astype(ours_dtype)
    matches = np.isclose(actual, theirs, equal_nan=True, **tol) | np.isclose(
        actual, rounded, equal_nan=True, **tol
    )
    assert matches.all(), (actual[~matches], theirs[~matches], rounded[~matches])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("form", ["module", "functional"])
def test_gelu_matches_torch(dtype, approximate, form):
    x = GELU_X.astype(dtype)
    xm = mg.tensor(x, requires_grad=True)
    ym = (
        nn.GELU(approximate=approximate)(xm)
        if form == "module"
        else F.gelu(xm, approximate=approximate)
    )
    assert ym.dtype == np.dtype(dtype)
    ym.sum().backward()
    (yt, gt), (y64, g64) = (
        _torch_gelu(x, approximate, form, dtype),
        _torch_gelu(x, approximate, form, np.float64),
    )
    tol = tolerance("gelu", dtype)  # why atol 1e-6 in float32: parity.TOLERANCES
    _assert_matches_either(ym.numpy(), dtype, yt, y64, **tol)
    _assert_matches_either(xm.grad.numpy(), dtype, gt, g64, **tol)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_nonfinite_inputs_match_torch(approximate):
    x = np.array([-np.inf, np.inf, np.nan, -0.0], np.float32)
    xm = mg.tensor(x, requires_grad=True)
    ym = F.gelu(xm, approximate=approximate)
    ym.sum().backward()
    (yt, gt), (y64, g64) = (
        _torch_gelu(x, approximate, "functional", t) for t in (np.float32, np.float64)
    )
    # -0.0 == 0.0: sign of zero not checked
    _assert_matches_either(ym.numpy(), np.float32, yt, y64, rtol=0, atol=0)
    _assert_matches_either(xm.grad.numpy(), np.float32, gt, g64, rtol=0, atol=0)


def test_gelu_repr_matches_torch():
    for a in ("none", "tanh"):
        assert repr(nn.GELU(a)) == repr(torch.nn.GELU(a))
        assert repr(nn.GELU(approximate=a)) == repr(torch.nn.GELU(approximate=a))


def test_gelu_bad_approximate_raises_like_torch():
    raises_like_torch(
        lambda: F.gelu(mg.randn(3), approximate="Tanh"),
        lambda: TF.gelu(torch.randn(3), approximate="Tanh"),
        ("Tanh",),
    )


def test_gelu_bad_approximate_is_clear():
    with pytest.raises(ValueError, match="approximate.*'none' or 'tanh'.*'Tanh'"):
        F.gelu(mg.randn(3), approximate="Tanh")
    with pytest.raises(ValueError, match="foo"):
        nn.GELU("foo")


def test_gelu_integer_input_raises():
    with pytest.raises(Exception):
        TF.gelu(torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="int64"):
        F.gelu(mg.tensor([1, 2]))


def test_gelu_empty_input():
    ym = F.gelu(mg.zeros(0, 3, requires_grad=True))
    assert ym.shape == tuple(TF.gelu(torch.zeros(0, 3)).shape)
    ym.sum().backward()
