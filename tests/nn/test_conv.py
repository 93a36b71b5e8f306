"""The convolution layers (nn/conv.py: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d, Unfold,
Fold) against torch's with the same weights: reprs, state dict keys, values and the gradients of
the input and every parameter in float32 and float64, float64 gradchecks, torch's initialisation
ranges, state dicts moved both ways, and the bad settings and inputs each refuses. The functions
they call are in tests/ops/test_conv.py and tests/ops/test_conv_transpose.py.
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from layer_checks import TORCH_DTYPE, assert_refused_as_torch, floats, normal
from minigrad import nn
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from parity import DTYPES, assert_close, assert_layer_matches_torch, copy_state_to_torch, tolerance

# the tables compare with torch: without it the file is skipped
torch = pytest.importorskip("torch")

DTYPE_IDS = ["float32", "float64"]


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
    assert_layer_matches_torch(
        ours, theirs, normal(*input_shape).astype(dtype), tolerance("default", dtype)
    )


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
    assert_close(ours(mg.tensor(x)), theirs(torch.from_numpy(x)), "conv layers")
    # and back: torch's freshly drawn weights into ours
    torch.manual_seed(8)
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(6, 4, 2, stride=2, groups=2),
    )
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    assert_close(ours(mg.tensor(x)), theirs(torch.from_numpy(x)), "conv layers")


# -- transposed convolution, unfold and fold layers --------------------------------------------


# (layer name, positional arguments, keyword arguments, input shape)
TRANSPOSE_LAYER_CASES = [
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


def _transpose_layer_pair(name, args, kwargs, dtype):
    """Our layer and torch's, torch's with our weights."""
    ours = getattr(nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    if name.startswith("Conv"):
        ours = ours.to(dtype)
        theirs = copy_state_to_torch(ours, theirs, dtype)
    return ours, theirs


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name, args, kwargs, input_shape", TRANSPOSE_LAYER_CASES)
def test_transpose_unfold_and_fold_layers_match_torch(name, args, kwargs, input_shape, dtype):
    mg.manual_seed(3)
    ours, theirs = _transpose_layer_pair(name, args, kwargs, dtype)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert_layer_matches_torch(
        ours, theirs, normal(*input_shape).astype(dtype), tolerance("default", dtype)
    )


@pytest.mark.parametrize(
    "name, args, kwargs, input_shape",
    [TRANSPOSE_LAYER_CASES[1], TRANSPOSE_LAYER_CASES[4], TRANSPOSE_LAYER_CASES[6]],
)
def test_transpose_layer_gradcheck(name, args, kwargs, input_shape, gradcheck_module):
    mg.manual_seed(5)
    gradcheck_module(getattr(nn, name)(*args, **kwargs, dtype=np.float64), normal(*input_shape))


@pytest.mark.parametrize("output_size", [(9, 9), (10, 10), (9, 10), [2, 8, 10, 9]])
def test_conv_transpose_output_size_as_torch(output_size):
    """forward(x, output_size) picks the output_padding that gives that size, as torch's."""
    mg.manual_seed(6)
    ours, theirs = _transpose_layer_pair(
        "ConvTranspose2d", (3, 8, 3), dict(stride=2, padding=1), np.float64
    )
    x = normal(2, 3, 5, 5)
    out, torch_out = (
        ours(mg.tensor(x), output_size=output_size),
        theirs(torch.tensor(x), output_size=output_size),
    )
    assert out.shape == tuple(torch_out.shape)
    assert_close(out, torch_out, "conv layers")


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
    assert_close(ours(mg.tensor(x)), theirs(torch.from_numpy(x)), "conv layers")
    torch.manual_seed(8)
    theirs = _autoencoder(torch)
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    assert_close(ours(mg.tensor(x)), theirs(torch.from_numpy(x)), "conv layers")


# -- bad settings and inputs --------------------------------------------------------------------


# name -> (call(library), our error class, a pattern our message matches: what was expected and
# given)
BAD_INPUTS = {
    "Conv2d: input channels": (
        lambda L: L.nn.Conv2d(3, 4, 3)(L.tensor(floats(1, 2, 5, 5))),
        ShapeError,
        r"expected input with 3 channels .*got input of shape \(1, 2, 5, 5\)",
    ),
    "Conv2d: groups not dividing in_channels": (
        lambda L: L.nn.Conv2d(3, 4, 3, groups=2),
        ArgumentError,
        r"in_channels must be divisible by groups; got in_channels=3, groups=2",
    ),
    "Conv1d: groups not dividing out_channels": (
        lambda L: L.nn.Conv1d(4, 3, 3, groups=2),
        ArgumentError,
        r"out_channels=3, groups=2",
    ),
    "Conv1d: padding='same' with stride 2": (
        lambda L: L.nn.Conv1d(2, 2, 3, stride=2, padding="same"),
        ArgumentError,
        r"got stride=\(2,\)",
    ),
    "Conv2d: int input": (
        lambda L: L.nn.Conv2d(1, 1, 2)(L.tensor(np.ones((1, 1, 3, 3), np.int64))),
        DTypeError,
        r"expected a float32 or float64 input; got dtype int64",
    ),
    "Conv2d: unknown padding_mode": (
        lambda L: L.nn.Conv2d(1, 1, 3, padding_mode="mirror"),
        ArgumentError,
        r"padding_mode must be one of 'zeros', 'reflect', 'replicate', 'circular'; got 'mirror'",
    ),
    "ConvTranspose1d: output_padding with stride 1": (
        lambda L: L.nn.ConvTranspose1d(2, 2, 3, output_padding=1)(L.tensor(floats(1, 2, 5))),
        ArgumentError,
        r"output_padding=\(1,\), stride=\(1,\)",
    ),
    "ConvTranspose2d: groups not dividing in_channels": (
        lambda L: L.nn.ConvTranspose2d(3, 4, 3, groups=2),
        ArgumentError,
        r"in_channels=3, groups=2",
    ),
    "ConvTranspose2d: padding_mode reflect": (
        lambda L: L.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect")(
            L.tensor(floats(1, 2, 4, 4))
        ),
        ArgumentError,
        r"only padding_mode='zeros' is supported.*got 'reflect'",
    ),
    "ConvTranspose2d: output_size out of range": (
        lambda L: L.nn.ConvTranspose2d(2, 2, 3, stride=2)(
            L.tensor(floats(1, 2, 4, 4)), output_size=(12, 9)
        ),
        ArgumentError,
        r"requested an output size of \(12, 9\), but valid sizes range from \(9, 9\) to \(10, 10\)",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_runtime_errors(case):
    assert_refused_as_torch(*BAD_INPUTS[case])
