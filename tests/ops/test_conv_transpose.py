"""Transposed convolution, unfold and fold (minigrad/ops/conv_transpose.py, nn/conv.py) against
torch.

Every call is written once for both libraries: call(F, *tensors). Values and the gradients of
every input are compared in float32 and float64, and checked against finite differences in float64.
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from layer_checks import FUNCTIONAL, normal
from minigrad import nn
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from minigrad.nn import functional as F
from parity import (
    DTYPES,
    TOLERANCE,
    assert_layer_matches_torch,
    assert_runs_match,
    copy_state_to_torch,
    run_both,
)

torch = pytest.importorskip(
    "torch"
)  # the tables compare with torch: without it the file is skipped

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


# -- layers -------------------------------------------------------------------------------------

# (layer name, positional arguments, keyword arguments, input shape)
LAYER_CASES = [
    ("ConvTranspose1d", (3, 4, 3), {}, (2, 3, 6)),
    ("ConvTranspose1d", (4, 6, 4), dict(stride=2, padding=1, groups=2, bias=False), (2, 4, 5)),
    ("ConvTranspose1d", (2, 3, 3), dict(stride=3, output_padding=2, dilation=2), (3, 2, 4)),
    ("ConvTranspose1d", (2, 2, 3), dict(stride=2), (2, 5)),
    ("ConvTranspose2d", (3, 8, 3), dict(stride=2, padding=1, output_padding=1), (2, 3, 4, 5)),
    (
        "ConvTranspose2d",
        (4, 4, (3, 2)),
        dict(groups=4, stride=(1, 2), dilation=(2, 1)),
        (2, 4, 3, 3),
    ),
    ("ConvTranspose2d", (2, 3, 4), dict(stride=2, padding=1, bias=False), (2, 3, 3)),
    ("Unfold", ((2, 3),), dict(padding=1, stride=2), (2, 3, 5, 6)),
    ("Fold", ((5, 6), (2, 3)), dict(padding=1, stride=2), (2, 18, 9)),
]


def _layer_pair(name, args, kwargs, dtype):
    """Our layer and torch's, torch's with our weights."""
    ours = getattr(nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    if name.startswith("Conv"):
        ours = ours.to(dtype)
        theirs = copy_state_to_torch(ours, theirs, dtype)
    return ours, theirs


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name, args, kwargs, input_shape", LAYER_CASES)
def test_layers_match_torch(name, args, kwargs, input_shape, dtype):
    mg.manual_seed(3)
    ours, theirs = _layer_pair(name, args, kwargs, dtype)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert_layer_matches_torch(ours, theirs, normal(*input_shape).astype(dtype), TOLERANCE[dtype])


@pytest.mark.parametrize(
    "name, args, kwargs, input_shape", [LAYER_CASES[1], LAYER_CASES[4], LAYER_CASES[6]]
)
def test_layer_gradcheck(name, args, kwargs, input_shape, gradcheck_module):
    mg.manual_seed(5)
    gradcheck_module(getattr(nn, name)(*args, **kwargs, dtype=np.float64), normal(*input_shape))


@pytest.mark.parametrize("output_size", [(9, 9), (10, 10), (9, 10), [2, 8, 10, 9]])
def test_conv_transpose_output_size_as_torch(output_size):
    """forward(x, output_size) picks the output_padding that gives that size, as torch's."""
    mg.manual_seed(6)
    ours, theirs = _layer_pair("ConvTranspose2d", (3, 8, 3), dict(stride=2, padding=1), np.float64)
    x = normal(2, 3, 5, 5)
    out, torch_out = (
        ours(mg.tensor(x), output_size=output_size),
        theirs(torch.tensor(x), output_size=output_size),
    )
    assert out.shape == tuple(torch_out.shape)
    np.testing.assert_allclose(out.numpy(), torch_out.detach().numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "name, args",
    [
        ("ConvTranspose1d", (16, 32, 5)),
        ("ConvTranspose2d", (8, 16, (3, 5))),
        ("ConvTranspose2d", (12, 24, 3, 1, 0, 0, 4)),
    ],
)
def test_conv_transpose_init_is_torchs(name, args):
    """Weight (in, out / groups, *kernel) and bias drawn from U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
    fan_in
    from torch's own rule for that weight."""
    mg.manual_seed(6)
    torch.manual_seed(6)
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(theirs.weight)
    bound = 1 / math.sqrt(fan_in)
    for parameter_name, torch_parameter in theirs.named_parameters():
        parameter = getattr(ours, parameter_name)
        assert parameter.shape == tuple(torch_parameter.shape) and parameter.dtype == np.float32
        assert np.abs(parameter.numpy()).max() <= bound
        assert np.abs(torch_parameter.detach().numpy()).max() <= bound
        if parameter.numel() > 1000:  # U(-b, b): standard deviation b / sqrt(3)
            assert (
                abs(parameter.numpy().std() - torch_parameter.detach().numpy().std()) < 0.05 * bound
            )


def _autoencoder(library):
    return library.nn.Sequential(
        library.nn.Conv2d(3, 6, 3, stride=2, padding=1),
        library.nn.ReLU(),
        library.nn.ConvTranspose2d(6, 3, 3, stride=2, padding=1, output_padding=1),
    )


def test_conv_transpose_state_dict_moves_to_torch_and_back():
    mg.manual_seed(7)
    ours, theirs = _autoencoder(SimpleNamespace(nn=nn)), _autoencoder(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.load_state_dict(
        {key: torch.from_numpy(np.array(value.numpy())) for key, value in ours.state_dict().items()}
    )
    x = normal(2, 3, 8, 8).astype(np.float32)
    assert ours(mg.tensor(x)).shape == x.shape
    np.testing.assert_allclose(
        ours(mg.tensor(x)).numpy(),
        theirs(torch.from_numpy(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-5,
    )
    torch.manual_seed(8)
    theirs = _autoencoder(torch)
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    np.testing.assert_allclose(
        ours(mg.tensor(x)).numpy(),
        theirs(torch.from_numpy(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-5,
    )


# -- bad inputs ---------------------------------------------------------------------------------


def _floats(*shape):
    return normal(*shape).astype(np.float32)


OURS = SimpleNamespace(F=F, nn=nn, tensor=mg.tensor)
THEIRS = SimpleNamespace(F=torch.nn.functional, nn=torch.nn, tensor=torch.from_numpy)

# name -> (call(library), our error class, a pattern our message matches: what was expected and
# given)
BAD_INPUTS = {
    "conv_transpose2d: output_padding too large": (
        lambda L: L.F.conv_transpose2d(
            L.tensor(_floats(1, 2, 4, 4)), L.tensor(_floats(2, 3, 3, 3)), stride=2, output_padding=2
        ),
        ArgumentError,
        r"output_padding must be smaller than either stride or dilation; got output_padding=\(2, "
        r"2\), "
        r"stride=\(2, 2\), dilation=\(1, 1\)",
    ),
    "ConvTranspose1d: output_padding with stride 1": (
        lambda L: L.nn.ConvTranspose1d(2, 2, 3, output_padding=1)(L.tensor(_floats(1, 2, 5))),
        ArgumentError,
        r"output_padding=\(1,\), stride=\(1,\)",
    ),
    "conv_transpose1d: input channels": (
        lambda L: L.F.conv_transpose1d(L.tensor(_floats(1, 3, 5)), L.tensor(_floats(2, 4, 3))),
        ShapeError,
        r"expected input with 2 channels.*\(2, 4, 3\).*got input of shape \(1, 3, 5\)",
    ),
    "conv_transpose2d: channels not divisible by groups": (
        lambda L: L.F.conv_transpose2d(
            L.tensor(_floats(1, 3, 4, 4)), L.tensor(_floats(3, 2, 3, 3)), groups=2
        ),
        ShapeError,
        r"divisible by groups=2",
    ),
    "ConvTranspose2d: groups not dividing in_channels": (
        lambda L: L.nn.ConvTranspose2d(3, 4, 3, groups=2),
        ArgumentError,
        r"in_channels=3, groups=2",
    ),
    "conv_transpose2d: 2-D input": (
        lambda L: L.F.conv_transpose2d(L.tensor(_floats(4, 4)), L.tensor(_floats(1, 1, 3, 3))),
        ShapeError,
        r"expected a 3-D input \(C, H, W\) or a 4-D input \(N, C, H, W\); got input of shape \(4, "
        r"4\)",
    ),
    "conv_transpose1d: 4-D weight": (
        lambda L: L.F.conv_transpose1d(L.tensor(_floats(1, 2, 4)), L.tensor(_floats(2, 1, 3, 3))),
        ShapeError,
        r"expected a 3-D weight .*got \(2, 1, 3, 3\)",
    ),
    "conv_transpose1d: bias of the wrong size": (
        lambda L: L.F.conv_transpose1d(
            L.tensor(_floats(1, 2, 4)), L.tensor(_floats(2, 3, 3)), L.tensor(_floats(2))
        ),
        ShapeError,
        r"expected bias of shape \(3,\).*got \(2,\)",
    ),
    "conv_transpose2d: dtypes differ": (
        lambda L: L.F.conv_transpose2d(L.tensor(normal(1, 1, 3, 3)), L.tensor(_floats(1, 1, 2, 2))),
        DTypeError,
        r"weight dtype float32 does not match input dtype float64",
    ),
    "conv_transpose1d: padding eats the whole output": (
        lambda L: L.F.conv_transpose1d(
            L.tensor(_floats(1, 1, 2)), L.tensor(_floats(1, 1, 2)), padding=2
        ),
        ShapeError,
        r"output would be \(-1,\) .*every size must be >= 1",
    ),
    "ConvTranspose2d: padding_mode reflect": (
        lambda L: L.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")(
            L.tensor(_floats(1, 2, 4, 4))
        ),
        ArgumentError,
        r"only padding_mode='zeros' is supported.*got 'reflect'",
    ),
    "ConvTranspose2d: output_size out of range": (
        lambda L: L.nn.ConvTranspose2d(2, 2, 3, stride=2)(
            L.tensor(_floats(1, 2, 4, 4)), output_size=(12, 9)
        ),
        ArgumentError,
        r"requested an output size of \(12, 9\), but valid sizes range from \(9, 9\) to \(10, 10\)",
    ),
    "unfold: 3-D input of the wrong rank": (
        lambda L: L.F.unfold(L.tensor(_floats(2, 5)), 2),
        ShapeError,
        r"expected a 3-D input \(C, H, W\) or a 4-D input \(N, C, H, W\); got input of shape \(2, "
        r"5\)",
    ),
    "unfold: kernel larger than the padded plane": (
        lambda L: L.F.unfold(L.tensor(_floats(1, 1, 3, 3)), 4, padding=0),
        ShapeError,
        r"kernel \(4, 4\) .*does not fit the padded plane \(3, 3\)",
    ),
    "fold: wrong number of blocks": (
        lambda L: L.F.fold(L.tensor(_floats(1, 4, 5)), (3, 3), 2),
        ShapeError,
        r"expected input of shape \(N, C \* 4, 4\) .*got input of shape \(1, 4, 5\)",
    ),
    "fold: channels not a multiple of the kernel": (
        lambda L: L.F.fold(L.tensor(_floats(1, 6, 4)), (3, 3), 2),
        ShapeError,
        r"got input of shape \(1, 6, 4\)",
    ),
    "fold: 4-D input": (
        lambda L: L.F.fold(L.tensor(_floats(1, 4, 2, 2)), (3, 3), 2),
        ShapeError,
        r"2-D \(C \* kH \* kW, L\) or 3-D \(N, C \* kH \* kW, L\) input; got input of shape \(1, "
        r"4, 2, 2\)",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_runtime_errors(case):
    call, error, pattern = BAD_INPUTS[case]
    with pytest.raises(error, match=pattern) as caught:
        call(OURS)
    assert isinstance(caught.value, RuntimeError)  # what torch raises, so torch code catches it
    with pytest.raises((RuntimeError, ValueError, IndexError)):  # torch refuses it too
        call(THEIRS)
