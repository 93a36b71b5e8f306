"""Convolution (minigrad/ops/conv.py) against torch; its layers are in tests/nn/test_conv.py.

Every call is written once for both libraries: call(F, *tensors) with F torch.nn.functional or
minigrad's nn.functional. Values and the gradients of every input are compared in float32 and
float64; gradients are also checked against finite differences (mg.gradcheck, float64).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from layer_checks import FUNCTIONAL, assert_refused_as_torch, floats, normal
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from minigrad.nn import functional as F
from parity import DTYPES, assert_runs_match, run_both

# the tables compare with torch: without it the file is skipped
torch = pytest.importorskip("torch")


# -- convolution: the table ---------------------------------------------------------------------

# name -> (input shape, weight shape, with bias, settings)
CONV_CASES = {
    "1d": ((2, 3, 10), (4, 3, 3), True, {}),
    "1d stride 2, padding 1": ((2, 3, 11), (5, 3, 3), True, dict(stride=2, padding=1)),
    "1d same, even kernel": ((2, 3, 9), (4, 3, 4), True, dict(padding="same")),
    "1d same, even kernel, dilation 3": (
        (2, 3, 9),
        (4, 3, 2),
        True,
        dict(padding="same", dilation=3),
    ),
    "1d same, dilation 2": ((1, 2, 13), (3, 2, 3), True, dict(padding="same", dilation=2)),
    "1d valid, kernel as long as the input": ((2, 4, 7), (2, 4, 7), True, dict(padding="valid")),
    "1d groups 2": ((2, 4, 8), (6, 2, 3), True, dict(groups=2)),
    "1d depthwise": ((2, 4, 8), (4, 1, 5), True, dict(groups=4, padding=2)),
    "1d depthwise, 2 filters a channel, no bias": ((2, 3, 8), (6, 1, 3), False, dict(groups=3)),
    "1d stride 3, dilation 2, no bias": (
        (3, 2, 17),
        (3, 2, 3),
        False,
        dict(stride=3, dilation=2, padding=1),
    ),
    "1d unbatched": ((3, 10), (4, 3, 3), True, dict(padding=1)),
    "1d TextCNN-like": ((4, 16, 20), (8, 16, 5), True, {}),
    "2d": ((2, 3, 7, 6), (4, 3, 3, 3), True, {}),
    "2d tuples of stride and padding": (
        (2, 3, 9, 8),
        (4, 3, 3, 2),
        True,
        dict(stride=(2, 1), padding=(1, 2)),
    ),
    "2d same, even kernels": ((2, 2, 6, 7), (3, 2, 2, 4), True, dict(padding="same")),
    "2d same, dilation (2, 3)": (
        (1, 2, 8, 9),
        (3, 2, 3, 2),
        True,
        dict(padding="same", dilation=(2, 3)),
    ),
    "2d groups 2": ((2, 6, 5, 5), (4, 3, 3, 3), True, dict(groups=2, padding=1)),
    "2d depthwise, stride 2": (
        (2, 4, 9, 9),
        (4, 1, 3, 3),
        True,
        dict(groups=4, stride=2, padding=1),
    ),
    "2d 1x1, no bias": ((2, 5, 4, 3), (7, 5, 1, 1), False, {}),
    "2d odd sizes, stride (3, 2), dilation (2, 1)": (
        (1, 3, 13, 11),
        (2, 3, 3, 3),
        True,
        dict(stride=(3, 2), dilation=(2, 1), padding=(0, 2)),
    ),
    "2d unbatched": ((3, 6, 5), (2, 3, 3, 2), True, dict(padding=1, stride=2)),
    "2d kernel as large as the padded input": ((1, 1, 3, 3), (2, 1, 5, 5), True, dict(padding=1)),
    "2d empty batch": ((0, 2, 5, 5), (3, 2, 3, 3), True, {}),
}


def conv_arrays(input_shape, weight_shape, with_bias):
    """Input, weight and (with_bias) bias arrays, each of its own seed."""
    return [normal(*input_shape), normal(*weight_shape, seed=1)] + (
        [normal(weight_shape[0], seed=2)] if with_bias else []
    )


def conv_call(weight_shape, settings):
    def call(F, x, weight, bias=None):
        function = F.conv1d if len(weight_shape) == 3 else F.conv2d
        return function(x, weight, bias, **settings)

    return call


@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's note on even kernels
@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_matches_torch(case, dtype):
    input_shape, weight_shape, with_bias, settings = CONV_CASES[case]
    arrays = conv_arrays(input_shape, weight_shape, with_bias)
    ours, theirs = run_both(conv_call(weight_shape, settings), arrays, dtype, sides=FUNCTIONAL)
    assert_runs_match(ours, theirs, names=["input", "weight", "bias"])


@pytest.mark.parametrize(
    "case",
    [
        "1d stride 3, dilation 2, no bias",
        "1d same, even kernel",
        "1d depthwise",
        "2d groups 2",
        "2d same, dilation (2, 3)",
        "2d unbatched",
        "2d odd sizes, stride (3, 2), dilation (2, 1)",
    ],
)
def test_conv_gradcheck(case):
    input_shape, weight_shape, with_bias, settings = CONV_CASES[case]
    inputs = conv_arrays(input_shape, weight_shape, with_bias)
    assert mg.gradcheck(lambda *tensors: conv_call(weight_shape, settings)(F, *tensors), inputs)


def test_conv_gradient_of_the_input_alone_and_of_the_weight_alone():
    x, weight = mg.tensor(normal(2, 3, 6, 6)), mg.tensor(normal(4, 3, 3, 3, seed=1))
    torch_x, torch_weight = (
        torch.tensor(x.numpy(), requires_grad=True),
        torch.tensor(weight.numpy()),
    )
    x.requires_grad_(True)
    F.conv2d(x, weight, stride=2, padding=1).sum().backward()
    torch.nn.functional.conv2d(torch_x, torch_weight, stride=2, padding=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), torch_x.grad.numpy(), rtol=1e-10)
    assert weight.grad is None
    x, weight = mg.tensor(x.numpy()), mg.tensor(weight.numpy(), requires_grad=True)
    torch_x, torch_weight = (
        torch.tensor(x.numpy()),
        torch.tensor(weight.numpy(), requires_grad=True),
    )
    F.conv2d(x, weight, stride=2, padding=1).sum().backward()
    torch.nn.functional.conv2d(torch_x, torch_weight, stride=2, padding=1).sum().backward()
    np.testing.assert_allclose(weight.grad.numpy(), torch_weight.grad.numpy(), rtol=1e-10)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@settings(max_examples=60)
@given(st.data())
def test_conv_shapes_match_torch(data):
    dims = data.draw(st.sampled_from([1, 2]))
    groups = data.draw(st.integers(1, 3))
    in_channels, out_channels = (
        groups * data.draw(st.integers(1, 2)),
        groups * data.draw(st.integers(1, 2)),
    )
    kernel = tuple(data.draw(st.integers(1, 4)) for _ in range(dims))
    dilation = tuple(data.draw(st.integers(1, 3)) for _ in range(dims))
    padding = data.draw(st.sampled_from(["same", "valid", "numbers"]))
    stride = (
        (1,) * dims
        if padding == "same"
        else tuple(data.draw(st.integers(1, 3)) for _ in range(dims))
    )
    if padding == "numbers":
        padding = tuple(data.draw(st.integers(0, 2)) for _ in range(dims))
    amounts = (0,) * dims if isinstance(padding, str) else padding
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    # the input is at least as large as the kernel's reach less the padding, as both libraries need
    spatial = tuple(
        data.draw(st.integers(max(1, r - 2 * p), max(1, r - 2 * p) + 5))
        for r, p in zip(reach, amounts)
    )
    batch = data.draw(st.sampled_from([None, 1, 2]))
    input_shape = ((in_channels,) if batch is None else (batch, in_channels)) + spatial
    weight_shape = (out_channels, in_channels // groups) + kernel
    arrays = conv_arrays(input_shape, weight_shape, with_bias=data.draw(st.booleans()))
    settings = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    ours, theirs = run_both(conv_call(weight_shape, settings), arrays, np.float64, sides=FUNCTIONAL)
    assert_runs_match(ours, theirs, names=["input", "weight", "bias"])


# -- bad inputs ---------------------------------------------------------------------------------


# name -> (call(library), our error class, a pattern our message matches: what was expected and
# given)
BAD_INPUTS = {
    "conv2d: input channels": (
        lambda L: L.F.conv2d(L.tensor(floats(1, 3, 5, 5)), L.tensor(floats(4, 2, 3, 3))),
        ShapeError,
        r"expected input with 2 channels .*\(4, 2, 3, 3\).*got input of shape \(1, 3, 5, 5\)",
    ),
    "conv1d: channels with groups": (
        lambda L: L.F.conv1d(L.tensor(floats(1, 3, 5)), L.tensor(floats(4, 1, 3)), groups=2),
        ShapeError,
        r"expected input with 2 channels .*groups=2.*\(1, 3, 5\)",
    ),
    "conv2d: kernel larger than the padded input": (
        lambda L: L.F.conv2d(L.tensor(floats(1, 1, 2, 2)), L.tensor(floats(1, 1, 3, 3))),
        ShapeError,
        r"kernel \(3, 3\).*larger than the padded input \(2, 2\)",
    ),
    "conv1d: dilated kernel larger than the padded input": (
        lambda L: L.F.conv1d(L.tensor(floats(1, 1, 4)), L.tensor(floats(1, 1, 3)), dilation=2),
        ShapeError,
        r"kernel \(3,\) \(with dilation \(2,\): \(5,\)\) is larger than the padded input \(4,\)",
    ),
    "conv2d: groups not dividing the weight's out channels": (
        lambda L: L.F.conv2d(L.tensor(floats(1, 4, 5, 5)), L.tensor(floats(3, 2, 3, 3)), groups=2),
        ShapeError,
        r"out_channels of weight \(3\) must be divisible by groups=2",
    ),
    "conv2d: padding='same' with stride 2": (
        lambda L: L.F.conv2d(
            L.tensor(floats(1, 1, 5, 5)), L.tensor(floats(1, 1, 3, 3)), padding="same", stride=2
        ),
        ArgumentError,
        r"padding='same' needs stride 1.*got stride=\(2, 2\)",
    ),
    "conv2d: 2-D input": (
        lambda L: L.F.conv2d(L.tensor(floats(5, 5)), L.tensor(floats(1, 1, 3, 3))),
        ShapeError,
        r"expected a 3-D input \(C, H, W\) or a 4-D input \(N, C, H, W\); "
        r"got input of shape \(5, 5\)",
    ),
    "conv1d: 4-D input": (
        lambda L: L.F.conv1d(L.tensor(floats(1, 1, 1, 5)), L.tensor(floats(1, 1, 3))),
        ShapeError,
        r"expected a 2-D input \(C, L\) or a 3-D input \(N, C, L\); "
        r"got input of shape \(1, 1, 1, 5\)",
    ),
    "conv2d: 3-D weight": (
        lambda L: L.F.conv2d(L.tensor(floats(1, 1, 5, 5)), L.tensor(floats(1, 1, 3))),
        ShapeError,
        r"expected a 4-D weight .*got \(1, 1, 3\)",
    ),
    "conv1d: input and weight of two dtypes": (
        lambda L: L.F.conv1d(L.tensor(normal(1, 1, 5)), L.tensor(floats(1, 1, 3))),
        DTypeError,
        r"weight dtype float32 does not match input dtype float64",
    ),
    "conv1d: bias of the wrong size": (
        lambda L: L.F.conv1d(
            L.tensor(floats(1, 1, 5)), L.tensor(floats(2, 1, 3)), L.tensor(floats(3))
        ),
        ShapeError,
        r"expected bias of shape \(2,\).*got \(3,\)",
    ),
    "conv2d: unknown padding string": (
        lambda L: L.F.conv2d(
            L.tensor(floats(1, 1, 5, 5)), L.tensor(floats(1, 1, 3, 3)), padding="full"
        ),
        ArgumentError,
        r"padding must be 'valid', 'same', an int or a tuple of 2 ints; got 'full'",
    ),
    "conv2d: negative padding": (
        lambda L: L.F.conv2d(
            L.tensor(floats(1, 1, 5, 5)), L.tensor(floats(1, 1, 3, 3)), padding=-1
        ),
        ArgumentError,
        r"padding must be >= 0; got -1",
    ),
    "conv2d: stride 0": (
        lambda L: L.F.conv2d(L.tensor(floats(1, 1, 5, 5)), L.tensor(floats(1, 1, 3, 3)), stride=0),
        ArgumentError,
        r"stride must be >= 1; got 0",
    ),
    "conv2d: stride of three numbers": (
        lambda L: L.F.conv2d(
            L.tensor(floats(1, 1, 5, 5)), L.tensor(floats(1, 1, 3, 3)), stride=(1, 1, 1)
        ),
        ArgumentError,
        r"stride must be an int or a tuple of 2 ints; got \(1, 1, 1\)",
    ),
    "conv2d: groups 0": (
        lambda L: L.F.conv2d(L.tensor(floats(1, 1, 5, 5)), L.tensor(floats(1, 1, 3, 3)), groups=0),
        ArgumentError,
        r"groups must be an int >= 1; got 0",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_runtime_errors(case):
    assert_refused_as_torch(*BAD_INPUTS[case])


def test_non_tensor_input_is_a_type_error():
    with pytest.raises(TypeError, match="expected input to be a Tensor; got"):
        F.conv1d(floats(1, 1, 5), mg.tensor(floats(1, 1, 3)))


def test_torchs_top_level_names_are_the_functional_ones():
    for name in ("conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d"):
        assert getattr(mg, name) is getattr(F, name) and hasattr(torch, name)
