"""Pooling (minigrad/ops/pooling.py) against torch: max, average and adaptive pooling over
kernels, strides, padding, dilation, ceil_mode and return_indices; values and the gradients of
every input in float32 and float64, gradients against finite differences in float64; integer
inputs; the bad inputs each refuses. The pooling layers are in tests/nn/test_pooling.py.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from layer_checks import FUNCTIONAL, assert_refused_as_torch, floats, normal
from minigrad.errors import ArgumentError, ShapeError
from minigrad.nn import functional as F
from parity import DTYPES, assert_close, assert_runs_match, run_both

# the tables compare with torch: without it the file is skipped
torch = pytest.importorskip("torch")


# name -> (F function, input shape, settings)
POOL_CASES = {
    "max 1d": ("max_pool1d", (2, 3, 10), dict(kernel_size=2)),
    "max 1d stride 2, padding 1": (
        "max_pool1d",
        (2, 3, 11),
        dict(kernel_size=3, stride=2, padding=1),
    ),
    "max 1d dilation 2": (
        "max_pool1d",
        (2, 2, 12),
        dict(kernel_size=3, stride=1, dilation=2, padding=1),
    ),
    "max 1d ceil_mode": ("max_pool1d", (2, 2, 10), dict(kernel_size=3, stride=2, ceil_mode=True)),
    "max 1d ceil_mode, window past the end": (
        "max_pool1d",
        (1, 1, 2),
        dict(kernel_size=3, stride=2, ceil_mode=True),
    ),
    "max 1d unbatched": ("max_pool1d", (3, 9), dict(kernel_size=3, stride=1)),
    "max 2d": ("max_pool2d", (2, 3, 8, 8), dict(kernel_size=2)),
    "max 2d overlapping, padding 1": (
        "max_pool2d",
        (2, 2, 7, 9),
        dict(kernel_size=3, stride=1, padding=1),
    ),
    "max 2d rectangles, dilation (1, 2)": (
        "max_pool2d",
        (2, 2, 9, 7),
        dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
    ),
    "max 2d ceil_mode, padding 1": (
        "max_pool2d",
        (1, 2, 7, 8),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    ),
    "max 2d unbatched": ("max_pool2d", (3, 5, 6), dict(kernel_size=2, stride=1)),
    "avg 1d": ("avg_pool1d", (2, 3, 10), dict(kernel_size=2)),
    "avg 1d padding 1": ("avg_pool1d", (2, 3, 11), dict(kernel_size=3, stride=2, padding=1)),
    "avg 1d padding 1, count_include_pad off": (
        "avg_pool1d",
        (2, 3, 11),
        dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    ),
    "avg 1d ceil_mode": (
        "avg_pool1d",
        (2, 2, 6),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    ),
    "avg 1d ceil_mode, count_include_pad off": (
        "avg_pool1d",
        (2, 2, 6),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    ),
    "avg 1d unbatched": ("avg_pool1d", (3, 9), dict(kernel_size=4, stride=3)),
    "avg 2d": ("avg_pool2d", (2, 3, 8, 8), dict(kernel_size=2)),
    "avg 2d padding 1": ("avg_pool2d", (2, 2, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    "avg 2d ceil_mode, count_include_pad off": (
        "avg_pool2d",
        (1, 2, 7, 8),
        dict(kernel_size=(3, 2), stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    ),
    "avg 2d divisor_override": (
        "avg_pool2d",
        (2, 2, 6, 6),
        dict(kernel_size=3, stride=3, divisor_override=4),
    ),
    "avg 2d unbatched": ("avg_pool2d", (3, 5, 6), dict(kernel_size=2, stride=1, padding=1)),
    "adaptive avg 1d to 1": ("adaptive_avg_pool1d", (2, 3, 10), dict(output_size=1)),
    "adaptive avg 1d, 10 to 3": ("adaptive_avg_pool1d", (2, 3, 10), dict(output_size=3)),
    "adaptive avg 1d, 5 to 7": ("adaptive_avg_pool1d", (2, 2, 5), dict(output_size=7)),
    "adaptive avg 1d unbatched": ("adaptive_avg_pool1d", (3, 8), dict(output_size=(4,))),
    "adaptive avg 2d to 1": ("adaptive_avg_pool2d", (2, 3, 5, 7), dict(output_size=1)),
    "adaptive avg 2d to (3, 2)": ("adaptive_avg_pool2d", (2, 3, 10, 7), dict(output_size=(3, 2))),
    "adaptive avg 2d to (None, 4)": (
        "adaptive_avg_pool2d",
        (2, 2, 5, 9),
        dict(output_size=(None, 4)),
    ),
    "adaptive avg 2d unbatched": ("adaptive_avg_pool2d", (3, 6, 6), dict(output_size=(4, 5))),
    "adaptive max 1d to 1": ("adaptive_max_pool1d", (2, 3, 10), dict(output_size=1)),
    "adaptive max 1d, 10 to 3": ("adaptive_max_pool1d", (2, 3, 10), dict(output_size=3)),
    "adaptive max 1d, 5 to 7": ("adaptive_max_pool1d", (2, 2, 5), dict(output_size=7)),
    "adaptive max 1d unbatched": ("adaptive_max_pool1d", (3, 8), dict(output_size=3)),
    "adaptive max 2d to 1": ("adaptive_max_pool2d", (2, 3, 5, 7), dict(output_size=1)),
    "adaptive max 2d to (3, 2)": ("adaptive_max_pool2d", (2, 3, 10, 7), dict(output_size=(3, 2))),
    "adaptive max 2d to (None, 4)": (
        "adaptive_max_pool2d",
        (2, 2, 5, 9),
        dict(output_size=(None, 4)),
    ),
    "adaptive max 2d unbatched": ("adaptive_max_pool2d", (3, 6, 6), dict(output_size=(4, 5))),
}


def pool_call(function, settings):
    return lambda F, x: getattr(F, function)(x, **settings)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("case", POOL_CASES)
def test_pool_matches_torch(case, dtype):
    function, input_shape, settings = POOL_CASES[case]
    ours, theirs = run_both(
        pool_call(function, settings), [normal(*input_shape)], dtype, sides=FUNCTIONAL
    )
    assert_runs_match(ours, theirs, names=["input"])


MAX_CASES = [case for case in POOL_CASES if "max" in case]


@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool_indices_match_torch(case):
    function, input_shape, settings = POOL_CASES[case]
    x = normal(*input_shape)
    values, indices = getattr(F, function)(mg.tensor(x), **settings, return_indices=True)
    torch_values, torch_indices = getattr(torch.nn.functional, function)(
        torch.from_numpy(x), **settings, return_indices=True
    )
    np.testing.assert_array_equal(values.numpy(), torch_values.numpy())
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(indices.numpy(), torch_indices.numpy())


@pytest.mark.parametrize("case", MAX_CASES)
@pytest.mark.parametrize("values", ["ties", "nan and -inf"])
def test_max_pool_ties_nan_and_minus_inf_as_torch(case, values):
    """Ties go to the first place of a window, NaN is the largest value (torch keeps a window's
    last NaN), and a window of -inf reports its first input place (not the padding): values,
    indices and gradients as torch."""
    function, input_shape, settings = POOL_CASES[case]
    rng = np.random.default_rng(9)
    if values == "ties":
        x = rng.integers(0, 3, input_shape).astype(np.float64)
    else:
        x = rng.choice([-np.inf, -np.inf, np.nan, 1.0], size=input_shape)
    call = pool_call(function, dict(settings, return_indices=True))
    ours, theirs = run_both(lambda F, x: call(F, x)[0], [x], np.float64, sides=FUNCTIONAL)
    np.testing.assert_array_equal(ours.out.numpy(), theirs.out.detach().numpy())
    np.testing.assert_array_equal(ours.leaves[0].grad.numpy(), theirs.leaves[0].grad.numpy())
    np.testing.assert_array_equal(
        call(F, mg.tensor(x))[1].numpy(), call(torch.nn.functional, torch.from_numpy(x))[1].numpy()
    )


@pytest.mark.parametrize(
    "case",
    [
        "max 1d dilation 2",
        "max 2d rectangles, dilation (1, 2)",
        "max 2d ceil_mode, padding 1",
        "avg 1d ceil_mode, count_include_pad off",
        "avg 2d padding 1",
        "avg 2d divisor_override",
        "adaptive avg 1d, 5 to 7",
        "adaptive avg 2d to (3, 2)",
        "adaptive max 2d to (None, 4)",
        "adaptive max 1d unbatched",
    ],
)
def test_pool_gradcheck(case):
    function, input_shape, settings = POOL_CASES[case]
    assert mg.gradcheck(lambda x: pool_call(function, settings)(F, x), [normal(*input_shape)])


@pytest.mark.parametrize("function", ["adaptive_avg_pool2d", "adaptive_max_pool2d"])
def test_adaptive_pool_to_an_empty_output_as_torch(function):
    x = normal(1, 2, 4, 4)
    out = getattr(F, function)(mg.tensor(x), (0, 2))
    assert out.shape == tuple(
        getattr(torch.nn.functional, function)(torch.from_numpy(x), (0, 2)).shape
    )


@settings(max_examples=60)
@given(st.data())
def test_pool_shapes_match_torch(data):
    dims = data.draw(st.sampled_from([1, 2]))
    kind = data.draw(st.sampled_from(["max", "avg"]))
    kernel = tuple(data.draw(st.integers(1, 4)) for _ in range(dims))
    stride = tuple(data.draw(st.integers(1, 3)) for _ in range(dims))
    padding = tuple(data.draw(st.integers(0, k // 2)) for k in kernel)
    dilation = (
        tuple(data.draw(st.integers(1, 2)) for _ in range(dims)) if kind == "max" else (1,) * dims
    )
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    spatial = tuple(
        data.draw(st.integers(max(1, r - 2 * p), r + 6)) for r, p in zip(reach, padding)
    )
    batch = data.draw(st.sampled_from([None, 1, 2]))
    input_shape = ((2,) if batch is None else (batch, 2)) + spatial
    settings = dict(
        kernel_size=kernel, stride=stride, padding=padding, ceil_mode=data.draw(st.booleans())
    )
    if kind == "max":
        settings["dilation"] = dilation
    else:
        settings["count_include_pad"] = data.draw(st.booleans())
    call = pool_call(f"{kind}_pool{dims}d", settings)
    x = normal(*input_shape)
    try:
        expected = call(torch.nn.functional, torch.from_numpy(x))
    # settings torch refuses (the output would be empty): ours must refuse them too
    except RuntimeError:
        with pytest.raises(ShapeError, match="is too small for kernel_size"):
            call(F, mg.tensor(x))
        return
    # a window that reads only padding: -inf from torch, refused here
    if torch.isinf(expected).any():
        with pytest.raises(ArgumentError, match="reads only padding"):
            call(F, mg.tensor(x))
        return
    ours, theirs = run_both(call, [x], np.float64, sides=FUNCTIONAL)
    assert_runs_match(ours, theirs, names=["input"])


@settings(max_examples=40)
@given(st.data())
def test_adaptive_pool_shapes_match_torch(data):
    dims = data.draw(st.sampled_from([1, 2]))
    spatial = tuple(data.draw(st.integers(1, 9)) for _ in range(dims))
    # None: torch's 2-d only
    sizes = st.integers(1, 10) if dims == 1 else st.one_of(st.none(), st.integers(1, 10))
    output_size = tuple(data.draw(sizes) for _ in range(dims))
    function = f"adaptive_{data.draw(st.sampled_from(['max', 'avg']))}_pool{dims}d"
    ours, theirs = run_both(
        pool_call(function, dict(output_size=output_size)),
        [normal(2, 3, *spatial)],
        np.float64,
        sides=FUNCTIONAL,
    )
    assert_runs_match(ours, theirs, names=["input"])


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8"])
def test_max_pool2d_takes_integer_inputs_as_torch_does(dtype):
    rng = np.random.default_rng(0)
    for trial in range(12):
        x = rng.integers(0, 5 if trial % 2 else 200, size=(2, 3, 7, 6)).astype(dtype)
        kernel = int(rng.integers(1, 4))
        settings = dict(
            stride=int(rng.integers(1, 3)),
            padding=int(rng.integers(0, kernel // 2 + 1)),
            ceil_mode=trial % 3 == 0,
            return_indices=True,
        )
        ours = F.max_pool2d(mg.tensor(x), kernel, **settings)
        theirs = torch.nn.functional.max_pool2d(torch.tensor(x), kernel, **settings)
        assert_close(ours[0], theirs[0], same_dtype=True)
        assert_close(ours[1], theirs[1], same_dtype=True)


# -- bad inputs ---------------------------------------------------------------------------------


# name -> (call(library), our error class, a pattern our message matches: what was expected and
# given)
BAD_INPUTS = {
    "max_pool2d: padding over half the kernel": (
        lambda L: L.F.max_pool2d(L.tensor(floats(1, 1, 6, 6)), 3, padding=2),
        ArgumentError,
        r"padding must be at most half the kernel size \(<= \(1, 1\) for kernel_size=\(3, 3\)\); "
        r"got padding=\(2, 2\)",
    ),
    "avg_pool1d: kernel larger than the input": (
        lambda L: L.F.avg_pool1d(L.tensor(floats(1, 1, 3)), 4),
        ShapeError,
        r"input of shape \(1, 1, 3\) is too small for kernel_size=\(4,\).*output would be \(0,\)",
    ),
    "max_pool1d: stride 0": (
        lambda L: L.F.max_pool1d(L.tensor(floats(1, 1, 6)), 2, stride=0),
        ArgumentError,
        r"stride must be >= 1",
    ),
    "max_pool2d: 2-D input": (
        lambda L: L.F.max_pool2d(L.tensor(floats(4, 4)), 2),
        ShapeError,
        r"expected a 3-D input \(C, H, W\) or a 4-D input \(N, C, H, W\); "
        r"got input of shape \(4, 4\)",
    ),
    "avg_pool2d: divisor_override 0": (
        lambda L: L.F.avg_pool2d(L.tensor(floats(1, 1, 4, 4)), 2, divisor_override=0),
        ArgumentError,
        r"divisor_override must be a non-zero int or None; got 0",
    ),
    "adaptive_avg_pool2d: negative output size": (
        lambda L: L.F.adaptive_avg_pool2d(L.tensor(floats(1, 1, 4, 4)), (2, -1)),
        ArgumentError,
        r"output_size must be >= 0; got \(2, -1\)",
    ),
    "adaptive_max_pool1d: output size of two numbers": (
        lambda L: L.F.adaptive_max_pool1d(L.tensor(floats(1, 1, 4)), (2, 2)),
        ArgumentError,
        r"output_size must be an int or a tuple of 1 ints; got \(2, 2\)",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_runtime_errors(case):
    assert_refused_as_torch(*BAD_INPUTS[case])


def test_max_pool_window_of_padding_only_is_refused():
    """torch gives -inf and an index outside the input for a window that reads only padding
    (dilation 5, padding 1 over 4 places); minigrad says so instead."""
    x = floats(1, 1, 4)
    torch_values, torch_indices = torch.nn.functional.max_pool1d(
        torch.from_numpy(x), 2, stride=1, padding=1, dilation=5, return_indices=True
    )
    assert torch_values.item() == -np.inf and torch_indices.item() >= 4
    with pytest.raises(ArgumentError, match="reads only padding"):
        F.max_pool1d(mg.tensor(x), 2, stride=1, padding=1, dilation=5)


def test_non_tensor_input_is_a_type_error():
    with pytest.raises(TypeError, match="expected input to be a Tensor; got"):
        F.max_pool2d([[[1.0, 2.0]]], 1)
