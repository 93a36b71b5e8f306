"""Convolution (minigrad/ops/conv.py, nn/conv.py) against torch; pooling is in test_pooling.py.

Every call is written once for both libraries: call(F, *tensors) with F torch.nn.functional or
minigrad's nn.functional. Values and the gradients of every input are compared in float32 and
float64; gradients are also checked against finite differences (mg.gradcheck, float64).
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from layer_checks import FUNCTIONAL, TORCH_DTYPE, normal
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


# -- convolution layers -------------------------------------------------------------------------

# (layer name, positional arguments, keyword arguments, input shape)
LAYER_CASES = [
    ("Conv1d", (3, 4, 3), {}, (2, 3, 9)),
    ("Conv1d", (4, 6, 4), dict(padding="same", groups=2, bias=False), (2, 4, 7)),
    ("Conv1d", (2, 3, 3), dict(padding=2, padding_mode="reflect"), (2, 2, 6)),
    ("Conv1d", (2, 3, 2), dict(padding="same", dilation=3, padding_mode="circular"), (2, 2, 8)),
    ("Conv1d", (3, 3, 5), dict(groups=3, stride=2, padding="valid"), (3, 11)),
    ("Conv2d", (3, 8, 3), dict(stride=2, padding=1), (2, 3, 9, 8)),
    (
        "Conv2d",
        (4, 4, (3, 2)),
        dict(groups=4, padding="same", padding_mode="replicate"),
        (2, 4, 5, 6),
    ),
    (
        "Conv2d",
        (2, 4, 3),
        dict(padding=(1, 2), padding_mode="reflect", dilation=(1, 2)),
        (1, 2, 6, 7),
    ),
    ("Conv2d", (2, 4, 2), dict(padding="same", padding_mode="circular", bias=False), (1, 2, 5, 5)),
    ("Conv2d", (3, 2, 3), dict(padding=1), (3, 7, 7)),
]


def _layer_pair(name, args, kwargs, dtype):
    """Our layer and torch's, torch's with our weights."""
    ours = getattr(nn, name)(*args, **kwargs, dtype=dtype)
    theirs = getattr(torch.nn, name)(*args, **kwargs, dtype=TORCH_DTYPE[dtype])
    return ours, copy_state_to_torch(ours, theirs)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name, args, kwargs, input_shape", LAYER_CASES)
def test_conv_layers_match_torch(name, args, kwargs, input_shape, dtype):
    mg.manual_seed(3)
    ours, theirs = _layer_pair(name, args, kwargs, dtype)
    assert repr(ours) == repr(theirs)
    assert_layer_matches_torch(ours, theirs, normal(*input_shape).astype(dtype), TOLERANCE[dtype])


@pytest.mark.parametrize("name, args, kwargs, input_shape", [LAYER_CASES[3], LAYER_CASES[6]])
def test_conv_layer_gradcheck(name, args, kwargs, input_shape, gradcheck_module):
    mg.manual_seed(5)
    gradcheck_module(getattr(nn, name)(*args, **kwargs, dtype=np.float64), normal(*input_shape))


@pytest.mark.parametrize(
    "name, args",
    [("Conv1d", (16, 32, 5)), ("Conv2d", (8, 16, (3, 5))), ("Conv2d", (12, 24, 3, 1, 0, 1, 4))],
)
def test_conv_layer_init_is_torchs(name, args):
    """Weights and bias are drawn from torch's ranges: U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    mg.manual_seed(6)
    torch.manual_seed(6)
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    for parameter_name, torch_parameter in theirs.named_parameters():
        parameter = getattr(ours, parameter_name)
        assert parameter.shape == tuple(torch_parameter.shape) and parameter.dtype == np.float32
        # the bound both draw up to: torch's own, from its fan_in
        fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(theirs.weight)
        bound = 1 / math.sqrt(fan_in)
        assert np.abs(parameter.numpy()).max() <= bound
        assert np.abs(torch_parameter.detach().numpy()).max() <= bound
        if parameter.numel() > 1000:  # U(-b, b): standard deviation b / sqrt(3)
            assert (
                abs(parameter.numpy().std() - torch_parameter.detach().numpy().std()) < 0.05 * bound
            )


def test_conv_state_dict_moves_to_torch_and_back():
    mg.manual_seed(7)
    ours = nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 4, 2, stride=2, groups=2)
    )
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(6, 4, 2, stride=2, groups=2),
    )
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.load_state_dict(
        {key: torch.from_numpy(value.numpy().copy()) for key, value in ours.state_dict().items()}
    )
    x = normal(2, 3, 8, 8).astype(np.float32)
    np.testing.assert_allclose(
        ours(mg.tensor(x)).numpy(),
        theirs(torch.from_numpy(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-5,
    )
    # and back: torch's freshly drawn weights into ours
    torch.manual_seed(8)
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(6, 4, 2, stride=2, groups=2),
    )
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    np.testing.assert_allclose(
        ours(mg.tensor(x)).numpy(),
        theirs(torch.from_numpy(x)).detach().numpy(),
        rtol=1e-5,
        atol=1e-5,
    )


# -- pooling: the table -------------------------------------------------------------------------


# -- pooling layers -----------------------------------------------------------------------------


# -- bad inputs ---------------------------------------------------------------------------------


def _floats(*shape):
    return normal(*shape).astype(np.float32)


OURS = SimpleNamespace(F=F, nn=nn, tensor=mg.tensor)
THEIRS = SimpleNamespace(F=torch.nn.functional, nn=torch.nn, tensor=torch.from_numpy)

# name -> (call(library), our error class, a pattern our message matches: what was expected and
# given)
BAD_INPUTS = {
    "conv2d: input channels": (
        lambda L: L.F.conv2d(L.tensor(_floats(1, 3, 5, 5)), L.tensor(_floats(4, 2, 3, 3))),
        ShapeError,
        r"expected input with 2 channels .*\(4, 2, 3, 3\).*got input of shape \(1, 3, 5, 5\)",
    ),
    "Conv2d: input channels": (
        lambda L: L.nn.Conv2d(3, 4, 3)(L.tensor(_floats(1, 2, 5, 5))),
        ShapeError,
        r"expected input with 3 channels .*got input of shape \(1, 2, 5, 5\)",
    ),
    "conv1d: channels with groups": (
        lambda L: L.F.conv1d(L.tensor(_floats(1, 3, 5)), L.tensor(_floats(4, 1, 3)), groups=2),
        ShapeError,
        r"expected input with 2 channels .*groups=2.*\(1, 3, 5\)",
    ),
    "conv2d: kernel larger than the padded input": (
        lambda L: L.F.conv2d(L.tensor(_floats(1, 1, 2, 2)), L.tensor(_floats(1, 1, 3, 3))),
        ShapeError,
        r"kernel \(3, 3\).*larger than the padded input \(2, 2\)",
    ),
    "conv1d: dilated kernel larger than the padded input": (
        lambda L: L.F.conv1d(L.tensor(_floats(1, 1, 4)), L.tensor(_floats(1, 1, 3)), dilation=2),
        ShapeError,
        r"kernel \(3,\) \(with dilation \(2,\): \(5,\)\) is larger than the padded input \(4,\)",
    ),
    "Conv2d: groups not dividing in_channels": (
        lambda L: L.nn.Conv2d(3, 4, 3, groups=2),
        ArgumentError,
        r"in_channels must be divisible by groups; "
        r"got in_channels=3, groups=2",
    ),
    "Conv1d: groups not dividing out_channels": (
        lambda L: L.nn.Conv1d(4, 3, 3, groups=2),
        ArgumentError,
        r"out_channels=3, groups=2",
    ),
    "conv2d: groups not dividing the weight's out channels": (
        lambda L: L.F.conv2d(
            L.tensor(_floats(1, 4, 5, 5)), L.tensor(_floats(3, 2, 3, 3)), groups=2
        ),
        ShapeError,
        r"out_channels of weight \(3\) must be divisible by groups=2",
    ),
    "conv2d: padding='same' with stride 2": (
        lambda L: L.F.conv2d(
            L.tensor(_floats(1, 1, 5, 5)), L.tensor(_floats(1, 1, 3, 3)), padding="same", stride=2
        ),
        ArgumentError,
        r"padding='same' needs stride 1.*got stride=\(2, 2\)",
    ),
    "Conv1d: padding='same' with stride 2": (
        lambda L: L.nn.Conv1d(2, 2, 3, stride=2, padding="same"),
        ArgumentError,
        r"got stride=\(2,\)",
    ),
    "conv2d: 2-D input": (
        lambda L: L.F.conv2d(L.tensor(_floats(5, 5)), L.tensor(_floats(1, 1, 3, 3))),
        ShapeError,
        r"expected a 3-D input \(C, H, W\) or a 4-D input \(N, C, H, W\); got input of shape \(5, "
        r"5\)",
    ),
    "conv1d: 4-D input": (
        lambda L: L.F.conv1d(L.tensor(_floats(1, 1, 1, 5)), L.tensor(_floats(1, 1, 3))),
        ShapeError,
        r"expected a 2-D input \(C, L\) or a 3-D input \(N, C, L\); got input of shape \(1, 1, 1, "
        r"5\)",
    ),
    "conv2d: 3-D weight": (
        lambda L: L.F.conv2d(L.tensor(_floats(1, 1, 5, 5)), L.tensor(_floats(1, 1, 3))),
        ShapeError,
        r"expected a 4-D weight .*got \(1, 1, 3\)",
    ),
    "Conv2d: int input": (
        lambda L: L.nn.Conv2d(1, 1, 2)(L.tensor(np.ones((1, 1, 3, 3), np.int64))),
        DTypeError,
        r"expected a float32 or float64 input; got dtype int64",
    ),
    "conv1d: input and weight of two dtypes": (
        lambda L: L.F.conv1d(L.tensor(normal(1, 1, 5)), L.tensor(_floats(1, 1, 3))),
        DTypeError,
        r"weight dtype float32 does not match input dtype float64",
    ),
    "conv1d: bias of the wrong size": (
        lambda L: L.F.conv1d(
            L.tensor(_floats(1, 1, 5)), L.tensor(_floats(2, 1, 3)), L.tensor(_floats(3))
        ),
        ShapeError,
        r"expected bias of shape \(2,\).*got \(3,\)",
    ),
    "conv2d: unknown padding string": (
        lambda L: L.F.conv2d(
            L.tensor(_floats(1, 1, 5, 5)), L.tensor(_floats(1, 1, 3, 3)), padding="full"
        ),
        ArgumentError,
        r"padding must be 'valid', 'same', an int or a tuple of 2 ints; got 'full'",
    ),
    "conv2d: negative padding": (
        lambda L: L.F.conv2d(
            L.tensor(_floats(1, 1, 5, 5)), L.tensor(_floats(1, 1, 3, 3)), padding=-1
        ),
        ArgumentError,
        r"padding must be >= 0; got -1",
    ),
    "conv2d: stride 0": (
        lambda L: L.F.conv2d(
            L.tensor(_floats(1, 1, 5, 5)), L.tensor(_floats(1, 1, 3, 3)), stride=0
        ),
        ArgumentError,
        r"stride must be >= 1; got 0",
    ),
    "conv2d: stride of three numbers": (
        lambda L: L.F.conv2d(
            L.tensor(_floats(1, 1, 5, 5)), L.tensor(_floats(1, 1, 3, 3)), stride=(1, 1, 1)
        ),
        ArgumentError,
        r"stride must be an int or a tuple of 2 ints; got \(1, 1, 1\)",
    ),
    "conv2d: groups 0": (
        lambda L: L.F.conv2d(
            L.tensor(_floats(1, 1, 5, 5)), L.tensor(_floats(1, 1, 3, 3)), groups=0
        ),
        ArgumentError,
        r"groups must be an int >= 1; got 0",
    ),
    "Conv2d: unknown padding_mode": (
        lambda L: L.nn.Conv2d(1, 1, 3, padding_mode="mirror"),
        ArgumentError,
        r"padding_mode must be one of 'zeros', 'reflect', 'replicate', 'circular'; got 'mirror'",
    ),
    "max_pool2d: padding over half the kernel": (
        lambda L: L.F.max_pool2d(L.tensor(_floats(1, 1, 6, 6)), 3, padding=2),
        ArgumentError,
        r"padding must be at most half the kernel size \(<= \(1, 1\) for kernel_size=\(3, 3\)\); "
        r"got padding=\(2, 2\)",
    ),
    "avg_pool1d: kernel larger than the input": (
        lambda L: L.F.avg_pool1d(L.tensor(_floats(1, 1, 3)), 4),
        ShapeError,
        r"input of shape \(1, 1, 3\) is too small for kernel_size=\(4,\).*output would be \(0,\)",
    ),
    "max_pool1d: stride 0": (
        lambda L: L.F.max_pool1d(L.tensor(_floats(1, 1, 6)), 2, stride=0),
        ArgumentError,
        r"stride must be >= 1",
    ),
    "max_pool2d: 2-D input": (
        lambda L: L.F.max_pool2d(L.tensor(_floats(4, 4)), 2),
        ShapeError,
        r"expected a 3-D input \(C, H, W\) or a 4-D input \(N, C, H, W\); got input of shape \(4, "
        r"4\)",
    ),
    "avg_pool2d: divisor_override 0": (
        lambda L: L.F.avg_pool2d(L.tensor(_floats(1, 1, 4, 4)), 2, divisor_override=0),
        ArgumentError,
        r"divisor_override must be a non-zero int or None; got 0",
    ),
    "MaxPool1d: int input": (
        lambda L: L.nn.MaxPool1d(2)(L.tensor(np.ones((1, 1, 4), np.int64))),
        DTypeError,
        r"expected a float32 or float64 input; got dtype int64",
    ),
    "adaptive_avg_pool2d: negative output size": (
        lambda L: L.F.adaptive_avg_pool2d(L.tensor(_floats(1, 1, 4, 4)), (2, -1)),
        ArgumentError,
        r"output_size must be >= 0; got \(2, -1\)",
    ),
    "adaptive_max_pool1d: output size of two numbers": (
        lambda L: L.F.adaptive_max_pool1d(L.tensor(_floats(1, 1, 4)), (2, 2)),
        ArgumentError,
        r"output_size must be an int or a tuple of 1 ints; got \(2, 2\)",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_runtime_errors(case):
    call, error, pattern = BAD_INPUTS[case]
    with pytest.raises(error, match=pattern) as caught:
        call(OURS)
    assert isinstance(caught.value, RuntimeError)  # what torch raises, so torch code catches it
    with pytest.raises((RuntimeError, ValueError, NotImplementedError)):  # torch refuses it too
        call(THEIRS)


def test_max_pool_window_of_padding_only_is_refused():
    """torch gives -inf and an index outside the input for a window that reads only padding
    (dilation 5, padding 1 over 4 places); minigrad says so instead."""
    x = _floats(1, 1, 4)
    torch_values, torch_indices = torch.nn.functional.max_pool1d(
        torch.from_numpy(x), 2, stride=1, padding=1, dilation=5, return_indices=True
    )
    assert torch_values.item() == -np.inf and torch_indices.item() >= 4
    with pytest.raises(ArgumentError, match="reads only padding"):
        F.max_pool1d(mg.tensor(x), 2, stride=1, padding=1, dilation=5)


@pytest.mark.parametrize(
    "call",
    [
        lambda: F.conv1d(_floats(1, 1, 5), mg.tensor(_floats(1, 1, 3))),
        lambda: F.max_pool2d([[[1.0, 2.0]]], 1),
    ],
)
def test_non_tensor_input_is_a_type_error(call):
    with pytest.raises(TypeError, match="expected input to be a Tensor; got"):
        call()


def test_torchs_top_level_names_are_the_functional_ones():
    for name in ("conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d"):
        assert getattr(mg, name) is getattr(F, name) and hasattr(torch, name)
