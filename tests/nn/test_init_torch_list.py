"""nn.init against torch.nn.init, function by function over torch's whole list: the same names,
the gains, shapes and dtypes kept, the statistics each promises (bounds and spread against a
draw of torch's from the same shape, orthogonal's Q^T Q = gain^2 I, sparse's zeros per column,
dirac's identity convolution, eye's exact values), in place with the version bumped and no
graph, and each wrong input refused as torch refuses it."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import nn
from tests.parity import assert_close, raises_like_torch

# compares with PyTorch: skipped without it (pip install torch==2.13.0; CI installs it)
torch = pytest.importorskip("torch")

# fmt: off
TORCH_LIST = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_",
    "ones_", "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_",
    "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
]
# fmt: on


def test_every_name_of_torchs_list_is_here():
    assert all(hasattr(torch.nn.init, name) for name in TORCH_LIST)
    assert sorted(nn.init.__all__) == sorted(TORCH_LIST)
    assert all(callable(getattr(nn.init, name)) for name in TORCH_LIST)


@pytest.mark.parametrize(
    "nonlinearity, param",
    [
        ("linear", None),
        ("conv1d", None),
        ("conv2d", None),
        ("conv3d", None),
        ("conv_transpose1d", None),
        ("conv_transpose2d", None),
        ("conv_transpose3d", None),
        ("sigmoid", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", None),
        ("leaky_relu", 0.2),
        ("leaky_relu", 3),
        ("leaky_relu", math.sqrt(5)),
        ("selu", None),
    ],
)
def test_calculate_gain_is_torchs(nonlinearity, param):
    assert nn.init.calculate_gain(nonlinearity, param) == pytest.approx(
        torch.nn.init.calculate_gain(nonlinearity, param), rel=1e-15
    )


@pytest.mark.parametrize(
    "args, words", [(("softsign",), ["softsign"]), (("leaky_relu", True), ["True"])]
)
def test_calculate_gain_refuses_as_torch(args, words):
    raises_like_torch(
        lambda: nn.init.calculate_gain(*args), lambda: torch.nn.init.calculate_gain(*args), words
    )


SHAPE = (96, 64, 3)  # fan_in 192, fan_out 288: enough draws for the statistics below
RANDOM_FILLS = {
    "uniform_": ({"a": -0.5, "b": 2.0}, {}),
    "normal_": ({"mean": 1.0, "std": 0.5}, {}),
    "trunc_normal_": ({"mean": 0.2, "std": 1.0, "a": -1.0, "b": 1.5}, {}),
    "xavier_uniform_": ({"gain": 2.0}, {}),
    "xavier_normal_": ({"gain": 0.5}, {}),
    "kaiming_uniform_": ({"a": math.sqrt(5)}, {}),
    "kaiming_normal_": ({"mode": "fan_out", "nonlinearity": "relu"}, {}),
    "orthogonal_": ({"gain": 1.5}, {}),
}


def statistics(values):
    values = np.asarray(values, dtype=np.float64).ravel()
    return np.array([values.min(), values.max(), values.mean(), values.std()])


@pytest.mark.parametrize("dtype", [mg.float32, mg.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", RANDOM_FILLS)
def test_random_fills_draw_torchs_distribution(name, dtype):
    options, _ = RANDOM_FILLS[name]
    mg.manual_seed(0)
    torch.manual_seed(0)
    ours = mg.empty(*SHAPE, dtype=dtype)
    theirs = torch.empty(*SHAPE, dtype=getattr(torch, str(dtype)))
    assert getattr(nn.init, name)(ours, **options) is ours
    getattr(torch.nn.init, name)(theirs, **options)
    assert ours.shape == tuple(theirs.shape) and ours.dtype == dtype
    ours_stats, their_stats = statistics(ours.numpy()), statistics(theirs.numpy())
    spread = their_stats[3]
    # min/max within 5% of the spread (bounded fills reach their bounds; normals' extremes
    # vary more), the mean within 4 standard errors, the std within 3%
    standard_error = spread / math.sqrt(ours.numel())
    assert abs(ours_stats[2] - their_stats[2]) < 4 * standard_error + 1e-12
    assert ours_stats[3] == pytest.approx(spread, rel=0.03)
    if name in ("uniform_", "xavier_uniform_", "kaiming_uniform_", "trunc_normal_"):
        assert_close(ours_stats[:2], their_stats[:2], 0.05 * spread)


def test_the_bounds_the_fans_set_are_torchs():
    weight = mg.empty(*SHAPE, dtype=mg.float64)
    bound = math.sqrt(6.0 / (192 + 288))  # xavier_uniform_'s, gain 1
    values = nn.init.xavier_uniform_(weight).numpy()
    assert np.abs(values).max() <= bound and np.abs(values).max() > 0.99 * bound
    values = nn.init.kaiming_uniform_(weight, a=math.sqrt(5)).numpy()
    assert np.abs(values).max() <= 1 / math.sqrt(192)  # nn.Linear's default bound
    values = nn.init.trunc_normal_(weight, std=3.0, a=-0.5, b=0.25).numpy()
    assert values.min() >= -0.5 and values.max() <= 0.25
    assert nn.init._calculate_fan_in_and_fan_out(weight) == (
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*SHAPE))
    )


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (6, 2, 3), (2, 3, 2, 2), (1, 7)])
@pytest.mark.parametrize("gain", [1.0, 0.5, math.sqrt(2)])
def test_orthogonal_gives_orthonormal_rows_or_columns_times_gain(shape, gain):
    weight = nn.init.orthogonal_(mg.empty(*shape, dtype=mg.float64), gain=gain)
    matrix = weight.numpy().reshape(shape[0], -1)
    rows, cols = matrix.shape
    gram = matrix.T @ matrix if rows >= cols else matrix @ matrix.T
    assert_close(gram, gain**2 * np.eye(min(rows, cols)), 1e-12)
    theirs = torch.nn.init.orthogonal_(torch.empty(*shape, dtype=torch.float64), gain=gain)
    their_matrix = theirs.reshape(shape[0], -1).numpy()
    their_gram = their_matrix.T @ their_matrix if rows >= cols else their_matrix @ their_matrix.T
    assert_close(gram, their_gram, 1e-12)


def test_orthogonal_draws_are_uniform_over_rotations():
    """With R's diagonal signs folded in, Q is Haar-distributed: each entry of a 4x4 Q has mean
    0 and variance 1/4 (without the fold, the diagonal's signs would be biased)."""
    mg.manual_seed(1)
    draws = np.stack(
        [nn.init.orthogonal_(mg.empty(4, 4, dtype=mg.float64)).numpy() for _ in range(2000)]
    )
    assert np.abs(draws.mean(axis=0)).max() < 0.06
    assert_close(draws.var(axis=0), np.full((4, 4), 0.25), 0.03)


@pytest.mark.parametrize("sparsity", [0.0, 0.1, 0.25, 0.5, 1.0])
@pytest.mark.parametrize("shape", [(20, 7), (3, 5), (1, 4)])
def test_sparse_zeroes_the_same_count_per_column_as_torch(sparsity, shape):
    mg.manual_seed(0)
    ours = nn.init.sparse_(mg.empty(*shape, dtype=mg.float64), sparsity, std=0.2)
    theirs = torch.nn.init.sparse_(torch.empty(*shape, dtype=torch.float64), sparsity, std=0.2)
    ours_zeros = (ours.numpy() == 0).sum(axis=0)
    np.testing.assert_array_equal(ours_zeros, (theirs.numpy() == 0).sum(axis=0))
    np.testing.assert_array_equal(ours_zeros, np.full(shape[1], math.ceil(sparsity * shape[0])))


def test_sparse_nonzero_values_have_the_std_asked_for_and_columns_differ():
    mg.manual_seed(3)
    values = nn.init.sparse_(mg.empty(400, 50, dtype=mg.float64), 0.3, std=0.05).numpy()
    assert values[values != 0].std() == pytest.approx(0.05, rel=0.03)
    zero_rows = {tuple(np.flatnonzero(values[:, c] == 0)) for c in range(50)}
    assert len(zero_rows) == 50  # each column draws its own rows


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_eye_is_torchs(shape, dtype):
    ours = nn.init.eye_(mg.full(shape, 7, dtype=getattr(mg, dtype)))
    theirs = torch.nn.init.eye_(torch.full(shape, 7, dtype=getattr(torch, dtype)))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.dtype == getattr(mg, dtype)


DIRAC_SHAPES = [
    ((4, 2, 3), 1),
    ((2, 4, 5), 1),
    ((6, 3, 3, 3), 2),
    ((4, 4, 2, 4), 1),
    ((6, 2, 3, 3), 3),
    ((2, 2, 3, 3, 3), 1),
    ((4, 1, 1, 3, 2), 2),
]


@pytest.mark.parametrize("shape, groups", DIRAC_SHAPES)
def test_dirac_is_torchs(shape, groups):
    ours = nn.init.dirac_(mg.full(shape, 5.0), groups=groups)
    theirs = torch.nn.init.dirac_(torch.full(shape, 5.0), groups=groups)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dims, groups", [(1, 1), (2, 1), (2, 2)])
def test_a_dirac_convolution_is_the_identity(dims, groups):
    channels, size = 4, (3,) * dims
    weight = nn.init.dirac_(mg.empty(channels, channels // groups, *size, dtype=mg.float64), groups)
    x = mg.randn(2, channels, *(7,) * dims, dtype=mg.float64)
    convolve = nn.functional.conv1d if dims == 1 else nn.functional.conv2d
    y = convolve(x, weight, padding=1, groups=groups)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_constant_ones_zeros_are_torchs_in_any_dtype():
    for dtype in ("float32", "float64", "int64", "int32", "uint8", "bool"):
        ours = mg.empty(2, 3, dtype=getattr(mg, dtype))
        theirs = torch.empty(2, 3, dtype=getattr(torch, dtype))
        for name, args in (("constant_", (1,)), ("ones_", ()), ("zeros_", ())):
            getattr(nn.init, name)(ours, *args)
            getattr(torch.nn.init, name)(theirs, *args)
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert_close(nn.init.constant_(mg.empty(3), 0.25), torch.full((3,), 0.25))


EVERY_FILL = {
    "uniform_": (),
    "normal_": (),
    "trunc_normal_": (),
    "constant_": (0.5,),
    "ones_": (),
    "zeros_": (),
    "eye_": (),
    "xavier_uniform_": (),
    "xavier_normal_": (),
    "kaiming_uniform_": (),
    "kaiming_normal_": (),
    "orthogonal_": (),
    "sparse_": (0.5,),
}


@pytest.mark.parametrize("name", EVERY_FILL)
def test_each_fill_is_in_place_bumps_the_version_and_records_nothing(name):
    weight = nn.Parameter(mg.zeros(4, 3))
    array, view, version = weight.numpy(), weight[0], weight._version[0]
    with mg.no_grad():
        result = getattr(nn.init, name)(weight, *EVERY_FILL[name])
    result2 = getattr(nn.init, name)(weight, *EVERY_FILL[name])  # outside no_grad, as torch
    assert result is weight and result2 is weight and weight.numpy() is array
    assert weight._version[0] >= version + 2 and weight.is_leaf and weight.requires_grad
    assert weight.grad_fn is None
    np.testing.assert_array_equal(view.numpy(), weight.numpy()[0])


def test_a_graph_that_saved_the_old_values_refuses_its_backward_after_an_init():
    weight = nn.Parameter(mg.ones(3, 3))
    loss = (weight * weight).sum()
    nn.init.orthogonal_(weight)
    with pytest.raises(RuntimeError, match="modified|changed|version"):
        loss.backward()


@pytest.mark.parametrize("dims", [0, 1])
@pytest.mark.parametrize(
    "name", ["xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]
)
def test_fans_of_fewer_than_two_dims_are_refused_as_torch(name, dims):
    shape = (3,) * dims
    raises_like_torch(
        lambda: getattr(nn.init, name)(mg.empty(*shape)),
        lambda: getattr(torch.nn.init, name)(torch.empty(shape)),
        ["2 dimensions", str(shape)],
    )


WRONG_DIMS = [
    ("eye_", (3,), ()),
    ("eye_", (2, 3, 4), ()),
    ("dirac_", (3, 3), ()),
    ("dirac_", (2, 2, 2, 2, 2, 2), ()),
    ("orthogonal_", (4,), ()),
    ("sparse_", (4,), (0.5,)),
    ("sparse_", (2, 3, 4), (0.5,)),
]


@pytest.mark.parametrize("name, shape, args", WRONG_DIMS)
def test_wrong_dimensions_are_refused_as_torch(name, shape, args):
    raises_like_torch(
        lambda: getattr(nn.init, name)(mg.empty(*shape), *args),
        lambda: getattr(torch.nn.init, name)(torch.empty(*shape), *args),
        [name, str(shape)],
    )


def test_other_bad_arguments_are_refused_naming_them():
    raises_like_torch(
        lambda: nn.init.dirac_(mg.empty(3, 2, 3), groups=2),
        lambda: torch.nn.init.dirac_(torch.empty(3, 2, 3), groups=2),
        ["divisible by groups", "groups=2"],
    )
    cases = [
        (lambda: nn.init.kaiming_normal_(mg.empty(3, 3), mode="fan_avg"), ValueError, "fan_avg"),
        (lambda: nn.init.normal_(mg.empty(3, dtype=mg.int64)), TypeError, "int64"),
        (lambda: nn.init.orthogonal_(mg.empty(3, 3, dtype=mg.int32)), TypeError, "int32"),
        (lambda: nn.init.uniform_(np.zeros(3)), TypeError, "ndarray"),
        (lambda: nn.init.sparse_(mg.empty(3, 3), 1.5), ValueError, "1.5"),
        (lambda: nn.init.uniform_(mg.empty(3), 2.0, 1.0), ValueError, "a=2.0"),
    ]
    for call, error, word in cases:
        with pytest.raises(error, match=word):
            call()


def test_empty_tensors_are_left_alone_as_torch_does():
    with pytest.warns(UserWarning, match="zero-element"):
        nn.init.kaiming_uniform_(mg.empty(0, 3))
    with pytest.warns(UserWarning, match="zero-element"):
        nn.init.kaiming_normal_(mg.empty(3, 0))
    assert nn.init.orthogonal_(mg.empty(0, 4)).shape == (0, 4)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 9),
    cols=st.integers(1, 9),
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(["orthogonal_", "sparse_", "xavier_uniform_", "kaiming_normal_"]),
)
def test_a_generator_decides_the_draw_and_leaves_the_global_one_alone(rows, cols, seed, name):
    args = (0.3,) if name == "sparse_" else ()
    fill = getattr(nn.init, name)
    first = fill(mg.empty(rows, cols), *args, generator=mg.Generator().manual_seed(seed))
    second = fill(mg.empty(rows, cols), *args, generator=mg.Generator().manual_seed(seed))
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    mg.manual_seed(7)
    expected = mg.randn(3).numpy()
    mg.manual_seed(7)
    fill(mg.empty(rows, cols), *args, generator=mg.Generator().manual_seed(seed))
    np.testing.assert_array_equal(mg.randn(3).numpy(), expected)
