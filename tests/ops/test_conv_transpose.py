"""Transposed convolution, unfold and fold (minigrad/ops/conv_transpose.py) against torch; their
layers are in tests/nn/test_conv.py.

Every call is written once for both libraries: call(F, *tensors). Values and the gradients of
every input are compared in float32 and float64, and checked against finite differences in float64.
"""

import numpy as np
import pytest

import minigrad as mg
from layer_checks import FUNCTIONAL, assert_refused_as_torch, floats, normal
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from minigrad.nn import functional as F
from parity import DTYPES, assert_runs_match, run_both

# the tables compare with torch: without it the file is skipped
torch = pytest.importorskip("torch")

DTYPE_IDS = ["float32", "float64"]


# -- transposed convolution: the table ----------------------------------------------------------

# name -> (input shape, weight shape (C_in, C_out / groups, *kernel), with bias, settings)
TRANSPOSE_CASES = {
    "1d": ((2, 3, 7), (3, 4, 3), True, {}),
    "1d stride 2, padding 1": ((2, 3, 6), (3, 2, 3), True, dict(stride=2, padding=1)),
    "1d stride 2, output_padding 1": (
        (2, 3, 5),
        (3, 2, 4),
        True,
        dict(stride=2, padding=1, output_padding=1),
    ),
    "1d stride 3, output_padding 2, no bias": (
        (1, 2, 4),
        (2, 3, 2),
        False,
        dict(stride=3, output_padding=2),
    ),
    "1d dilation 2, output_padding 1 (< dilation)": (
        (2, 2, 5),
        (2, 3, 3),
        True,
        dict(dilation=2, output_padding=1),
    ),
    "1d groups 2": ((2, 4, 6), (4, 3, 3), True, dict(groups=2, stride=2)),
    "1d depthwise": ((2, 3, 5), (3, 1, 3), True, dict(groups=3, padding=1)),
    "1d unbatched": ((3, 8), (3, 2, 3), True, dict(stride=2)),
    "1d padding as large as the kernel allows": ((1, 2, 4), (2, 2, 5), True, dict(padding=2)),
    "2d": ((2, 3, 4, 5), (3, 2, 3, 3), True, {}),
    "2d stride 2, padding 1, output_padding 1 (the usual x2 upsampler)": (
        (2, 4, 5, 5),
        (4, 3, 3, 3),
        True,
        dict(stride=2, padding=1, output_padding=1),
    ),
    "2d kernel 4, stride 2, padding 1 (DCGAN)": (
        (2, 3, 4, 4),
        (3, 2, 4, 4),
        True,
        dict(stride=2, padding=1),
    ),
    "2d tuples": (
        (2, 2, 5, 4),
        (2, 3, 3, 2),
        True,
        dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), dilation=(1, 2)),
    ),
    "2d groups 2, dilation 2, no bias": (
        (1, 4, 4, 3),
        (4, 2, 2, 3),
        False,
        dict(groups=2, dilation=2, stride=2),
    ),
    "2d 1x1": ((2, 5, 3, 3), (5, 4, 1, 1), True, {}),
    "2d odd sizes": (
        (1, 3, 7, 5),
        (3, 2, 3, 3),
        True,
        dict(stride=(3, 2), padding=(2, 1), output_padding=(1, 0)),
    ),
    "2d unbatched": ((3, 4, 5), (3, 2, 2, 2), True, dict(stride=2)),
}


def transpose_arrays(input_shape, weight_shape, with_bias, settings):
    arrays = [normal(*input_shape, seed=1), normal(*weight_shape, seed=2)]
    if with_bias:
        arrays.append(normal(weight_shape[1] * settings.get("groups", 1), seed=3))
    return arrays


def _function_of(weight):
    return "conv_transpose1d" if weight.ndim == 3 else "conv_transpose2d"


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", TRANSPOSE_CASES)
def test_conv_transpose_matches_torch(case, dtype):
    input_shape, weight_shape, with_bias, settings = TRANSPOSE_CASES[case]
    # noqa: E731
    call = lambda F, *tensors: getattr(F, _function_of(tensors[1]))(*tensors, **settings)
    assert_runs_match(
        *run_both(
            call,
            transpose_arrays(input_shape, weight_shape, with_bias, settings),
            dtype,
            sides=FUNCTIONAL,
        )
    )


@pytest.mark.parametrize("case", TRANSPOSE_CASES)
def test_conv_transpose_gradcheck(case):
    input_shape, weight_shape, with_bias, settings = TRANSPOSE_CASES[case]
    call = lambda *tensors: getattr(F, _function_of(tensors[1]))(*tensors, **settings)  # noqa: E731
    assert mg.gradcheck(call, transpose_arrays(input_shape, weight_shape, with_bias, settings))


def test_conv_transpose_is_the_input_gradient_of_conv():
    """<conv(x, W), y> = <x, conv_transpose(y, W)>: the two are adjoint maps."""
    x, weight, y = (
        normal(2, 3, 9, 8, seed=1),
        normal(4, 3, 3, 2, seed=2),
        normal(2, 4, 5, 4, seed=3),
    )
    settings = dict(stride=2, padding=1, dilation=(1, 2))
    forward = F.conv2d(mg.tensor(x), mg.tensor(weight), **settings).numpy()
    backward = F.conv_transpose2d(
        mg.tensor(y), mg.tensor(weight), **settings, output_padding=(0, 1)
    ).numpy()
    assert backward.shape == x.shape
    np.testing.assert_allclose(np.sum(forward * y), np.sum(x * backward), rtol=1e-12)


# -- unfold and fold ----------------------------------------------------------------------------

# name -> (input shape of unfold, settings)
UNFOLD_CASES = {
    "3x3": ((2, 3, 5, 6), dict(kernel_size=3)),
    "2x3, padding 1, stride 2": ((2, 2, 6, 5), dict(kernel_size=(2, 3), padding=1, stride=2)),
    "dilation (2, 1), stride (1, 2)": (
        (1, 3, 7, 6),
        dict(kernel_size=2, dilation=(2, 1), stride=(1, 2)),
    ),
    "kernel as large as the plane": ((2, 2, 3, 4), dict(kernel_size=(3, 4))),
    "1x1": ((2, 4, 3, 3), dict(kernel_size=1)),
    "unbatched, padding (0, 2)": ((3, 4, 4), dict(kernel_size=3, padding=(0, 2))),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", UNFOLD_CASES)
def test_unfold_matches_torch(case, dtype):
    shape, settings = UNFOLD_CASES[case]
    assert_runs_match(
        *run_both(lambda F, x: F.unfold(x, **settings), [normal(*shape)], dtype, sides=FUNCTIONAL)
    )


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", UNFOLD_CASES)
def test_fold_matches_torch(case, dtype):
    shape, settings = UNFOLD_CASES[case]
    columns_shape = tuple(torch.nn.functional.unfold(torch.zeros(shape), **settings).shape)
    assert_runs_match(
        *run_both(
            lambda F, columns: F.fold(columns, shape[-2:], **settings),
            [normal(*columns_shape)],
            dtype,
            sides=FUNCTIONAL,
        )
    )


@pytest.mark.parametrize("case", UNFOLD_CASES)
def test_unfold_and_fold_gradcheck(case):
    shape, settings = UNFOLD_CASES[case]
    assert mg.gradcheck(lambda x: F.unfold(x, **settings), [normal(*shape)])
    columns = F.unfold(mg.tensor(normal(*shape)), **settings)
    assert mg.gradcheck(
        lambda c: F.fold(c, shape[-2:], **settings), [normal(*columns.shape, seed=1)]
    )


def test_fold_of_unfold_counts_how_often_each_place_was_read():
    """fold(unfold(ones)) holds at each place the number of windows over it, as torch's docs say."""
    settings = dict(kernel_size=3, padding=1, stride=2)
    ones = mg.ones(1, 2, 7, 6)
    ours = F.fold(F.unfold(ones, **settings), (7, 6), **settings).numpy()
    theirs = torch.nn.functional.fold(
        torch.nn.functional.unfold(torch.ones(1, 2, 7, 6), **settings), (7, 6), **settings
    ).numpy()
    np.testing.assert_array_equal(ours, theirs)


# -- bad inputs ---------------------------------------------------------------------------------


# name -> (call(library), our error class, a pattern our message matches: what was expected and
# given)
BAD_INPUTS = {
    "conv_transpose2d: output_padding too large": (
        lambda L: L.F.conv_transpose2d(
            L.tensor(floats(1, 2, 4, 4)), L.tensor(floats(2, 3, 3, 3)), stride=2, output_padding=2
        ),
        ArgumentError,
        r"output_padding must be smaller than either stride or dilation; "
        r"got output_padding=\(2, 2\), stride=\(2, 2\), dilation=\(1, 1\)",
    ),
    "conv_transpose1d: input channels": (
        lambda L: L.F.conv_transpose1d(L.tensor(floats(1, 3, 5)), L.tensor(floats(2, 4, 3))),
        ShapeError,
        r"expected input with 2 channels.*\(2, 4, 3\).*got input of shape \(1, 3, 5\)",
    ),
    "conv_transpose2d: channels not divisible by groups": (
        lambda L: L.F.conv_transpose2d(
            L.tensor(floats(1, 3, 4, 4)), L.tensor(floats(3, 2, 3, 3)), groups=2
        ),
        ShapeError,
        r"divisible by groups=2",
    ),
    "conv_transpose2d: 2-D input": (
        lambda L: L.F.conv_transpose2d(L.tensor(floats(4, 4)), L.tensor(floats(1, 1, 3, 3))),
        ShapeError,
        r"expected a 3-D input \(C, H, W\) or a 4-D input \(N, C, H, W\); "
        r"got input of shape \(4, 4\)",
    ),
    "conv_transpose1d: 4-D weight": (
        lambda L: L.F.conv_transpose1d(L.tensor(floats(1, 2, 4)), L.tensor(floats(2, 1, 3, 3))),
        ShapeError,
        r"expected a 3-D weight .*got \(2, 1, 3, 3\)",
    ),
    "conv_transpose1d: bias of the wrong size": (
        lambda L: L.F.conv_transpose1d(
            L.tensor(floats(1, 2, 4)), L.tensor(floats(2, 3, 3)), L.tensor(floats(2))
        ),
        ShapeError,
        r"expected bias of shape \(3,\).*got \(2,\)",
    ),
    "conv_transpose2d: dtypes differ": (
        lambda L: L.F.conv_transpose2d(L.tensor(normal(1, 1, 3, 3)), L.tensor(floats(1, 1, 2, 2))),
        DTypeError,
        r"weight dtype float32 does not match input dtype float64",
    ),
    "conv_transpose1d: padding eats the whole output": (
        lambda L: L.F.conv_transpose1d(
            L.tensor(floats(1, 1, 2)), L.tensor(floats(1, 1, 2)), padding=2
        ),
        ShapeError,
        r"output would be \(-1,\) .*every size must be >= 1",
    ),
    "unfold: 3-D input of the wrong rank": (
        lambda L: L.F.unfold(L.tensor(floats(2, 5)), 2),
        ShapeError,
        r"expected a 3-D input \(C, H, W\) or a 4-D input \(N, C, H, W\); "
        r"got input of shape \(2, 5\)",
    ),
    "unfold: kernel larger than the padded plane": (
        lambda L: L.F.unfold(L.tensor(floats(1, 1, 3, 3)), 4, padding=0),
        ShapeError,
        r"kernel \(4, 4\) .*does not fit the padded plane \(3, 3\)",
    ),
    "fold: wrong number of blocks": (
        lambda L: L.F.fold(L.tensor(floats(1, 4, 5)), (3, 3), 2),
        ShapeError,
        r"expected input of shape \(N, C \* 4, 4\) .*got input of shape \(1, 4, 5\)",
    ),
    "fold: channels not a multiple of the kernel": (
        lambda L: L.F.fold(L.tensor(floats(1, 6, 4)), (3, 3), 2),
        ShapeError,
        r"got input of shape \(1, 6, 4\)",
    ),
    "fold: 4-D input": (
        lambda L: L.F.fold(L.tensor(floats(1, 4, 2, 2)), (3, 3), 2),
        ShapeError,
        r"2-D \(C \* kH \* kW, L\) or 3-D \(N, C \* kH \* kW, L\) input; "
        r"got input of shape \(1, 4, 2, 2\)",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_runtime_errors(case):
    assert_refused_as_torch(*BAD_INPUTS[case])
