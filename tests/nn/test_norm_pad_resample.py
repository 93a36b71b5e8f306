"""Normalisation, dropout, padding and resampling layers (nn/normalization.py, nn/dropout.py,
nn/padding.py, nn/upsampling.py, minigrad/ops/resample.py) against torch.

Layers are built in both libraries with the same arguments, torch's loaded with our state dict;
the outputs, the input's gradient, every parameter's gradient and the buffers after the step are
compared in float32 and float64. Gradients are also checked against finite differences in float64.
"""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.errors import ArgumentError, ShapeError
from minigrad.nn import functional as F
from parity import TOLERANCE, assert_close, assert_runs_match, copy_state_to_torch, run_both

torch = pytest.importorskip(
    "torch"
)  # the tables compare with torch: without it the file is skipped

TORCH_DTYPE = {np.float64: torch.float64, np.float32: torch.float32}
DTYPES = [np.float32, np.float64]
DTYPE_IDS = ["float32", "float64"]
FUNCTIONAL = (F, torch.nn.functional)  # what each call of the tables gets as F


def normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def layer_pair(name, args, kwargs, dtype):
    """Our layer and torch's, torch's with our parameters and buffers."""
    ours = getattr(nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    if list(ours.parameters()) or list(ours.buffers()):
        ours = ours.to(dtype) if hasattr(ours, "to") else ours
        for (
            parameter
        ) in ours.parameters():  # not the init's ones and zeros: every gradient then shows
            parameter.data[...] = normal(*parameter.shape, seed=9) * 0.5 + 1
        theirs = copy_state_to_torch(ours, theirs, dtype)
    return ours, theirs


def check_layer(name, args, kwargs, input_shape, dtype, training=True):
    ours, theirs = layer_pair(name, args, kwargs, dtype)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.train(training)
    theirs.train(training)
    x = normal(*input_shape).astype(dtype)
    leaf, torch_leaf = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, torch_out = ours(leaf), theirs(torch_leaf)
    assert out.dtype == dtype
    assert_close(out, torch_out, TOLERANCE[dtype], "output")
    upstream = normal(*torch_out.shape, seed=4).astype(dtype)
    (out * mg.tensor(upstream)).sum().backward()
    (torch_out * torch.from_numpy(upstream)).sum().backward()
    assert_close(leaf.grad, torch_leaf.grad, TOLERANCE[dtype], "gradient of the input")
    torch_parameters = dict(theirs.named_parameters())
    for parameter_name, parameter in ours.named_parameters():
        assert_close(
            parameter.grad,
            torch_parameters[parameter_name].grad,
            TOLERANCE[dtype],
            f"gradient of {parameter_name}",
        )
    torch_state = theirs.state_dict()
    for key, value in ours.state_dict().items():
        assert_close(value, torch_state[key], TOLERANCE[dtype], key)


# -- normalisation ------------------------------------------------------------------------------

# (layer name, positional arguments, keyword arguments, input shape, training)
NORM_LAYERS = [
    ("GroupNorm", (3, 6), {}, (2, 6, 5, 3), True),
    ("GroupNorm", (1, 4), {}, (3, 4, 7), True),
    ("GroupNorm", (4, 4), dict(eps=1e-3), (2, 4, 3, 3), True),
    ("GroupNorm", (2, 6), dict(affine=False), (2, 6, 5), True),
    ("GroupNorm", (2, 4), dict(bias=False), (2, 4), True),
    ("InstanceNorm1d", (3,), {}, (2, 3, 7), True),
    ("InstanceNorm1d", (3,), {}, (3, 5), True),
    ("InstanceNorm1d", (4,), dict(affine=True), (2, 4, 6), True),
    ("InstanceNorm1d", (4,), dict(affine=True, bias=False), (2, 4, 6), True),
    ("InstanceNorm1d", (3,), dict(track_running_stats=True, momentum=0.3), (2, 3, 5), True),
    ("InstanceNorm1d", (3,), dict(track_running_stats=True), (2, 3, 5), False),
    ("InstanceNorm2d", (3,), {}, (2, 3, 5, 4), True),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True), (2, 3, 5, 4), True),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True), (3, 5, 4), True),
    ("InstanceNorm2d", (3,), dict(track_running_stats=True, momentum=None), (2, 3, 3, 3), True),
    ("InstanceNorm2d", (2,), dict(affine=True, track_running_stats=True), (2, 2, 3, 3), False),
    ("InstanceNorm2d", (3,), dict(affine=True), (3, 4, 5), False),
    ("LocalResponseNorm", (3,), {}, (2, 6, 5), True),
    ("LocalResponseNorm", (2,), dict(alpha=0.5, beta=0.6, k=2.0), (2, 5, 4, 3), True),
    ("LocalResponseNorm", (7,), dict(alpha=1.0), (1, 4, 3, 2, 2), True),
    ("LocalResponseNorm", (1,), {}, (2, 3, 4), True),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name, args, kwargs, input_shape, training", NORM_LAYERS)
def test_norm_layers_match_torch(name, args, kwargs, input_shape, training, dtype):
    check_layer(name, args, kwargs, input_shape, dtype, training)


@pytest.mark.parametrize(
    "name, args, kwargs, input_shape, training", [NORM_LAYERS[i] for i in (0, 7, 12, 15, 18)]
)
def test_norm_layer_gradcheck(name, args, kwargs, input_shape, training, gradcheck_module):
    layer = getattr(nn, name)(*args, **kwargs).to(np.float64)
    layer.train(training)
    gradcheck_module(layer, normal(*input_shape))


# name -> (call(F, *tensors), input shapes)
NORM_FUNCTIONS = {
    "group_norm": (lambda F, x, w, b: F.group_norm(x, 2, w, b, eps=1e-4), [(3, 4, 5), (4,), (4,)]),
    "group_norm, no affine, 2-D": (lambda F, x: F.group_norm(x, 3), [(2, 6)]),
    "instance_norm": (lambda F, x: F.instance_norm(x), [(2, 3, 6)]),
    "instance_norm, affine": (
        lambda F, x, w, b: F.instance_norm(x, weight=w, bias=b),
        [(2, 3, 4, 3), (3,), (3,)],
    ),
    "local_response_norm": (
        lambda F, x: F.local_response_norm(x, 4, alpha=0.3, beta=0.5, k=1.5),
        [(2, 7, 3)],
    ),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", NORM_FUNCTIONS)
def test_norm_functions_match_torch(case, dtype):
    call, shapes = NORM_FUNCTIONS[case]
    assert_runs_match(
        *run_both(
            call,
            [normal(*shape, seed=i) for i, shape in enumerate(shapes)],
            dtype,
            sides=FUNCTIONAL,
        )
    )


@pytest.mark.parametrize("case", NORM_FUNCTIONS)
def test_norm_functions_gradcheck(case):
    call, shapes = NORM_FUNCTIONS[case]
    assert mg.gradcheck(
        lambda *xs: call(F, *xs), [normal(*shape, seed=i) for i, shape in enumerate(shapes)]
    )


@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm_running_statistics_as_torch(use_input_stats):
    x = normal(4, 3, 6)
    running = [normal(3, seed=1), np.abs(normal(3, seed=2)) + 0.5]
    ours = [mg.tensor(r.copy()) for r in running]
    theirs = [torch.tensor(r.copy()) for r in running]
    out = F.instance_norm(mg.tensor(x), *ours, use_input_stats=use_input_stats, momentum=0.2)
    torch_out = torch.nn.functional.instance_norm(
        torch.tensor(x), *theirs, use_input_stats=use_input_stats, momentum=0.2
    )
    assert_close(out, torch_out, TOLERANCE[np.float64], "output")
    for mine, torchs in zip(ours, theirs):
        assert_close(mine, torchs, TOLERANCE[np.float64], "running statistics")


def test_norm_state_dicts_move_to_torch_and_back():
    mg.manual_seed(1)
    ours = nn.Sequential(
        nn.Conv2d(2, 4, 3),
        nn.GroupNorm(2, 4),
        nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
    )
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3),
        torch.nn.GroupNorm(2, 4),
        torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
    )
    x = normal(2, 2, 6, 6).astype(np.float32)
    ours(mg.tensor(x))  # a training step moves the running statistics
    theirs.load_state_dict(
        {key: torch.from_numpy(np.array(value.numpy())) for key, value in ours.state_dict().items()}
    )
    ours.eval()
    theirs.eval()
    assert_close(
        ours(mg.tensor(x)),
        theirs(torch.from_numpy(x)),
        TOLERANCE[np.float32],
        "eval output, ours -> torch",
    )
    torch.manual_seed(2)
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3),
        torch.nn.GroupNorm(2, 4),
        torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
    )
    theirs.train()(torch.from_numpy(x))
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    assert_close(
        ours(mg.tensor(x)),
        theirs.eval()(torch.from_numpy(x)),
        TOLERANCE[np.float32],
        "eval output, torch -> ours",
    )


def test_instance_norm_warns_as_torch_when_channels_differ_without_affine():
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(4)(mg.tensor(normal(2, 3, 5)))


# -- padding ------------------------------------------------------------------------------------

PAD_LAYERS = [
    ("ZeroPad1d", (2,), (2, 3, 4)),
    ("ZeroPad1d", ((1, 3),), (3, 5)),
    ("ZeroPad2d", (1,), (2, 3, 4, 5)),
    ("ZeroPad2d", ((1, 2, 0, 3),), (3, 4, 5)),
    ("ZeroPad2d", ((-1, 2, 1, -2),), (1, 2, 4, 5)),
    ("ConstantPad1d", (2, 3.5), (2, 3, 4)),
    ("ConstantPad1d", ((0, 2), -1.0), (3, 5)),
    ("ConstantPad2d", (1, 0), (2, 2, 3, 3)),
    ("ConstantPad2d", ((2, 0, 1, 3), 0.5), (2, 3, 4)),
    ("ReflectionPad1d", (2,), (2, 3, 5)),
    ("ReflectionPad1d", ((3, 1),), (3, 4)),
    ("ReflectionPad2d", (1,), (2, 2, 3, 4)),
    ("ReflectionPad2d", ((2, 0, 1, 3),), (2, 5, 4)),
    ("ReplicationPad1d", ((4, 1),), (2, 3, 2)),
    ("ReplicationPad2d", ((1, 2, 3, 0),), (2, 2, 3, 3)),
    ("ReplicationPad2d", (2,), (3, 1, 2)),
    ("CircularPad1d", ((2, 1),), (2, 3, 4)),
    ("CircularPad2d", (1,), (2, 2, 3, 4)),
    ("CircularPad2d", ((3, 0, 1, 2),), (2, 3, 5)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name, args, input_shape", PAD_LAYERS)
def test_pad_layers_match_torch(name, args, input_shape, dtype):
    check_layer(name, args, {}, input_shape, dtype)


@pytest.mark.parametrize("name, args, input_shape", PAD_LAYERS[::3])
def test_pad_layer_gradcheck(name, args, input_shape, gradcheck_module):
    gradcheck_module(getattr(nn, name)(*args), normal(*input_shape))


# -- dropout ------------------------------------------------------------------------------------

CHANNEL_DROPOUTS = [
    ("Dropout1d", (8, 16, 5), 2),
    ("Dropout1d", (16, 7), 1),
    ("Dropout2d", (8, 16, 3, 4), 2),
    ("FeatureAlphaDropout", (8, 16, 3, 4), 2),
    ("FeatureAlphaDropout", (8, 16, 5), 2),
]


@pytest.mark.parametrize("name, shape, drawn_dims", CHANNEL_DROPOUTS)
def test_channel_dropout_drops_whole_channels_as_often_as_asked(name, shape, drawn_dims):
    mg.manual_seed(0)
    layer = getattr(nn, name)(p=0.3)
    x = mg.tensor(np.abs(normal(*shape)) + 1)  # never 0 or negative: a dropped place shows
    out = layer(x).numpy()
    values = out.reshape(shape[:drawn_dims] + (-1,))
    inputs = x.numpy().reshape(values.shape)
    # a dropped channel is one constant; the kept ones are one line in x (a scaling for plain
    # dropout)
    kept = ~np.isclose(np.ptp(values, axis=-1), 0)
    slope, intercept = np.polyfit(inputs[kept].ravel(), values[kept].ravel(), 1)
    np.testing.assert_allclose(values[kept], slope * inputs[kept] + intercept, rtol=1e-6, atol=1e-6)
    assert np.unique(values[~kept]).size == 1
    if name.startswith("Dropout"):
        np.testing.assert_allclose(
            [slope, intercept, values[~kept][0, 0]], [1 / 0.7, 0, 0], atol=1e-6
        )
    assert 0.5 < kept.mean() < 0.9  # 128 or 16 channels with a keep probability of 0.7
    layer.eval()
    assert layer(x) is x


def test_dropout_statistics_with_a_fixed_seed():
    """Over many channels the kept share is 1 - p, and the mean is kept (1 / (1 - p) scaling)."""
    mg.manual_seed(123)
    x = mg.ones(64, 256, 2, 2)
    out = F.dropout2d(x, p=0.25).numpy()
    channel_values = out[:, :, 0, 0]
    assert set(np.unique(channel_values)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((channel_values != 0).mean() - 0.75) < 0.01
    assert abs(out.mean() - 1) < 0.02
    mg.manual_seed(123)
    np.testing.assert_array_equal(
        F.dropout2d(x, p=0.25).numpy(), out
    )  # the same seed, the same channels


@pytest.mark.parametrize("function", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_keeps_a_standard_normal_standard(function):
    mg.manual_seed(5)
    x = mg.tensor(normal(400, 300, 4))
    out = getattr(F, function)(x, p=0.2, training=True).numpy()
    assert abs(out.mean()) < 0.02 and abs(out.std() - 1) < 0.02


def _affine_rule(out, x):
    """(the value of the dropped places, the slope and the intercept of the kept ones in x)."""
    values, counts = np.unique(out, return_counts=True)
    dropped = values[np.argmax(counts)]
    kept = out != dropped
    slope, intercept = np.polyfit(x[kept], out[kept], 1)
    return np.array([dropped, slope, intercept])


@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_alpha_dropout_follows_torchs_affine_rule(p):
    """Kept places a * x + b, dropped ones one constant: a, b and the constant are torch's."""
    x = normal(2000)
    torch.manual_seed(0)
    theirs = torch.nn.functional.alpha_dropout(torch.tensor(x), p, training=True).numpy()
    mg.manual_seed(0)
    ours = F.alpha_dropout(mg.tensor(x), p, training=True).numpy()
    np.testing.assert_allclose(_affine_rule(ours, x), _affine_rule(theirs, x), rtol=1e-8)


@pytest.mark.parametrize(
    "call",
    [
        lambda F, x: F.dropout1d(x, 0.4),
        lambda F, x: F.dropout2d(x[..., None], 0.4)[..., 0],
        lambda F, x: F.alpha_dropout(x, 0.4, True),
        lambda F, x: F.feature_alpha_dropout(x, 0.4, True),
    ],
)
def test_dropout_gradient_is_the_mask_of_the_forward(call):
    mg.manual_seed(3)
    x = mg.tensor(normal(4, 6, 5), requires_grad=True)
    out = call(F, x)
    out.sum().backward()
    # the output is affine in x with the drawn mask as slope: compare with a finite difference
    with mg.no_grad():
        mg.manual_seed(3)
        nudged = call(F, mg.tensor(x.numpy() + 1e-3)).numpy()
    np.testing.assert_allclose(x.grad.numpy(), (nudged - out.numpy()) / 1e-3, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "function", ["dropout1d", "dropout2d", "alpha_dropout", "feature_alpha_dropout"]
)
def test_dropout_in_place_and_p_one(function):
    shape = (2, 3, 4) if function == "dropout1d" else (2, 3, 4, 2)
    mg.manual_seed(4)
    x = mg.tensor(normal(*shape))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(F, function)(x, 0.5, True).numpy()
        mg.manual_seed(4)
        out = getattr(F, function)(x, 0.5, True, inplace=True)
        zeros = getattr(F, function)(mg.tensor(normal(*shape)), 1.0, True)
    np.testing.assert_array_equal(x.numpy(), expected)
    assert out is x
    np.testing.assert_array_equal(zeros.numpy(), np.zeros(shape))


def test_dropout2d_warns_as_torch_for_3d_and_2d_inputs():
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        out = F.dropout2d(mg.ones(2, 64, 3), 0.5)
    assert np.all(np.ptp(out.numpy(), axis=-1) == 0)  # (N, C, L): whole rows, as torch
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d, which is deprecated"):
        F.dropout2d(mg.ones(4, 5), 0.5)


@pytest.mark.parametrize("name", ["Dropout1d", "Dropout2d", "AlphaDropout", "FeatureAlphaDropout"])
def test_dropout_reprs_are_torchs(name):
    assert repr(getattr(nn, name)(0.25)) == repr(getattr(torch.nn, name)(0.25))
    assert repr(getattr(nn, name)(0.5, inplace=True)) == repr(
        getattr(torch.nn, name)(0.5, inplace=True)
    )


# -- resampling ---------------------------------------------------------------------------------

# name -> (input shape, F.interpolate settings)
INTERPOLATE_CASES = {
    "nearest 1d x2": ((2, 3, 5), dict(scale_factor=2)),
    "nearest 1d to 3 (down)": ((2, 3, 7), dict(size=3)),
    "nearest 1d x0.6": ((2, 3, 7), dict(scale_factor=0.6)),
    "nearest-exact 1d to 8": ((2, 3, 5), dict(size=8, mode="nearest-exact")),
    "nearest-exact 1d x1.7, recomputed": (
        (2, 3, 7),
        dict(scale_factor=1.7, mode="nearest-exact", recompute_scale_factor=True),
    ),
    "nearest 2d x(2, 3)": ((2, 2, 4, 5), dict(scale_factor=(2, 3))),
    "nearest 2d to (7, 3)": ((2, 2, 4, 5), dict(size=(7, 3))),
    "nearest-exact 2d x(0.5, 2.3)": (
        (1, 2, 5, 4),
        dict(scale_factor=(0.5, 2.3), mode="nearest-exact"),
    ),
    "linear to 9": ((2, 3, 5), dict(size=9, mode="linear")),
    "linear to 9, align_corners": ((2, 3, 5), dict(size=9, mode="linear", align_corners=True)),
    "linear x2.5": ((2, 3, 5), dict(scale_factor=2.5, mode="linear")),
    "linear x2.5, recomputed": (
        (2, 3, 5),
        dict(scale_factor=2.5, mode="linear", recompute_scale_factor=True),
    ),
    "linear to 4 (down)": ((2, 3, 6), dict(size=4, mode="linear")),
    "linear to 1, align_corners": ((2, 3, 6), dict(size=1, mode="linear", align_corners=True)),
    "bilinear to (7, 3)": ((2, 2, 4, 5), dict(size=(7, 3), mode="bilinear")),
    "bilinear to (7, 3), align_corners": (
        (2, 2, 4, 5),
        dict(size=(7, 3), mode="bilinear", align_corners=True),
    ),
    "bilinear x1.5": ((1, 2, 5, 4), dict(scale_factor=1.5, mode="bilinear")),
    "bilinear x1.5, recomputed": (
        (1, 2, 5, 4),
        dict(scale_factor=1.5, mode="bilinear", recompute_scale_factor=True),
    ),
    "bilinear x2, align_corners": (
        (2, 3, 3, 3),
        dict(scale_factor=2, mode="bilinear", align_corners=True),
    ),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", INTERPOLATE_CASES)
def test_interpolate_matches_torch(case, dtype):
    shape, settings = INTERPOLATE_CASES[case]
    assert_runs_match(
        *run_both(
            lambda F, x: F.interpolate(x, **settings), [normal(*shape)], dtype, sides=FUNCTIONAL
        )
    )


@pytest.mark.parametrize("case", INTERPOLATE_CASES)
def test_interpolate_gradcheck(case):
    shape, settings = INTERPOLATE_CASES[case]
    assert mg.gradcheck(lambda x: F.interpolate(x, **settings), [normal(*shape)])


SHUFFLES = {
    "pixel_shuffle": (lambda F, x: F.pixel_shuffle(x, 2), (2, 8, 3, 5)),
    "pixel_shuffle unbatched, r=3": (lambda F, x: F.pixel_shuffle(x, 3), (9, 2, 3)),
    "pixel_shuffle 5-D": (lambda F, x: F.pixel_shuffle(x, 2), (2, 2, 4, 1, 3)),
    "pixel_unshuffle": (lambda F, x: F.pixel_unshuffle(x, 2), (2, 3, 4, 6)),
    "pixel_unshuffle unbatched, r=3": (lambda F, x: F.pixel_unshuffle(x, 3), (2, 3, 6)),
    "channel_shuffle": (lambda F, x: F.channel_shuffle(x, 3), (2, 6, 4, 5)),
    "channel_shuffle 3-D": (lambda F, x: F.channel_shuffle(x, 2), (2, 4, 3)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", SHUFFLES)
def test_shuffles_match_torch(case, dtype):
    call, shape = SHUFFLES[case]
    assert_runs_match(*run_both(call, [normal(*shape)], dtype, sides=FUNCTIONAL))


def test_pixel_unshuffle_undoes_pixel_shuffle():
    x = mg.tensor(normal(2, 12, 3, 4))
    np.testing.assert_array_equal(F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).numpy(), x.numpy())


RESAMPLE_LAYERS = [
    ("Upsample", (), dict(scale_factor=2), (2, 3, 4)),
    ("Upsample", (), dict(size=(5, 7), mode="bilinear"), (2, 3, 3, 4)),
    (
        "Upsample",
        (),
        dict(scale_factor=(1.5, 2), mode="bilinear", align_corners=True),
        (1, 2, 4, 3),
    ),
    ("Upsample", (), dict(size=7, mode="linear", align_corners=False), (2, 3, 4)),
    (
        "Upsample",
        (),
        dict(scale_factor=1.5, mode="nearest-exact", recompute_scale_factor=True),
        (2, 2, 5, 3),
    ),
    ("UpsamplingNearest2d", (), dict(scale_factor=2), (2, 3, 3, 4)),
    ("UpsamplingNearest2d", (), dict(size=(5, 2)), (1, 2, 3, 4)),
    ("UpsamplingBilinear2d", (), dict(size=5), (2, 3, 3, 4)),
    ("UpsamplingBilinear2d", (), dict(scale_factor=3), (1, 2, 2, 3)),
    ("PixelShuffle", (2,), {}, (2, 8, 3, 3)),
    ("PixelUnshuffle", (3,), {}, (2, 2, 6, 3)),
    ("ChannelShuffle", (2,), {}, (2, 6, 3, 3)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name, args, kwargs, input_shape", RESAMPLE_LAYERS)
def test_resample_layers_match_torch(name, args, kwargs, input_shape, dtype):
    check_layer(name, args, kwargs, input_shape, dtype)


@pytest.mark.parametrize("name, args, kwargs, input_shape", RESAMPLE_LAYERS[1::3])
def test_resample_layer_gradcheck(name, args, kwargs, input_shape, gradcheck_module):
    gradcheck_module(getattr(nn, name)(*args, **kwargs), normal(*input_shape))


# -- bad inputs ---------------------------------------------------------------------------------


def _floats(*shape):
    return normal(*shape).astype(np.float32)


OURS = SimpleNamespace(F=F, nn=nn, tensor=mg.tensor)
THEIRS = SimpleNamespace(F=torch.nn.functional, nn=torch.nn, tensor=torch.from_numpy)

# name -> (call(library), our error class, a pattern our message matches: what was expected and
# given)
BAD_INPUTS = {
    "GroupNorm: channels not divisible by groups": (
        lambda L: L.nn.GroupNorm(4, 6),
        ArgumentError,
        r"num_channels \(6\) must be divisible by num_groups \(4\)",
    ),
    "group_norm: channels not divisible by groups": (
        lambda L: L.F.group_norm(L.tensor(_floats(2, 6, 3)), 4),
        ShapeError,
        r"divides the 6 channels .*\(2, 6, 3\).*got num_groups=4",
    ),
    "group_norm: 1-D input": (
        lambda L: L.F.group_norm(L.tensor(_floats(6)), 2),
        ShapeError,
        r"at least 2 dims .*got input of shape \(6,\)",
    ),
    "GroupNorm: input with other channels": (
        lambda L: L.nn.GroupNorm(2, 4)(L.tensor(_floats(2, 6, 3))),
        ShapeError,
        r"expected weight of shape \(6,\) .*got \(4,\)",
    ),
    "InstanceNorm1d: 4-D input": (
        lambda L: L.nn.InstanceNorm1d(3)(L.tensor(_floats(2, 3, 4, 5))),
        ShapeError,
        r"expected a 2-D \(C, \.\.\.\) or 3-D \(N, C, \.\.\.\) input; got \(2, 3, 4, 5\)",
    ),
    "InstanceNorm2d: 2-D input": (
        lambda L: L.nn.InstanceNorm2d(3)(L.tensor(_floats(3, 4))),
        ShapeError,
        r"3-D .* or 4-D .*got \(3, 4\)",
    ),
    "InstanceNorm1d: affine, other channels": (
        lambda L: L.nn.InstanceNorm1d(3, affine=True)(L.tensor(_floats(2, 4, 5))),
        ShapeError,
        r"size at dim=1 to match num_features \(3\); got input of shape \(2, 4, 5\)",
    ),
    "instance_norm: one value per plane": (
        lambda L: L.F.instance_norm(L.tensor(_floats(2, 3, 1))),
        ShapeError,
        r"more than 1 spatial element when training; got input of shape \(2, 3, 1\)",
    ),
    "local_response_norm: 2-D input": (
        lambda L: L.F.local_response_norm(L.tensor(_floats(2, 3)), 2),
        ShapeError,
        r"at least 3 dims .*got input of shape \(2, 3\)",
    ),
    "dropout1d: 4-D input": (
        lambda L: L.F.dropout1d(L.tensor(_floats(2, 3, 4, 5))),
        ShapeError,
        r"2-D \(C, L\) or 3-D \(N, C, L\) input; got \(2, 3, 4, 5\)",
    ),
    "dropout2d: p above 1": (
        lambda L: L.F.dropout2d(L.tensor(_floats(2, 3, 4, 5)), 1.5),
        ArgumentError,
        r"between 0 and 1; got 1.5",
    ),
    "alpha_dropout: negative p": (
        lambda L: L.F.alpha_dropout(L.tensor(_floats(4)), -0.1, True),
        ArgumentError,
        r"between 0 and 1; got -0.1",
    ),
    "Dropout2d: p above 1": (
        lambda L: L.nn.Dropout2d(2.0),
        ValueError,
        r"p must be in \[0, 1\]; got 2.0",
    ),
    "feature_alpha_dropout: 1-D input": (
        lambda L: L.F.feature_alpha_dropout(L.tensor(_floats(4)), 0.5, True),
        ShapeError,
        r"batch and a channel dim \(N, C, \.\.\.\); got input of shape \(4,\)",
    ),
    "ZeroPad2d: padding of 3 numbers": (
        lambda L: L.nn.ZeroPad2d((1, 2, 3))(L.tensor(_floats(1, 2, 3))),
        ArgumentError,
        r"an int or a tuple of 4 ints; got \(1, 2, 3\)",
    ),
    "ReflectionPad1d: padding as wide as the input": (
        lambda L: L.nn.ReflectionPad1d(3)(L.tensor(_floats(1, 2, 3))),
        ShapeError,
        r"reflect padding of \(3, 3\) does not fit dim 2 of size 3.*at most 2",
    ),
    "ReflectionPad2d: 2-D input": (
        lambda L: L.nn.ReflectionPad2d(1)(L.tensor(_floats(4, 4))),
        ShapeError,
        r"3-D or 4-D input \(C, H, W\) or \(N, C, H, W\); got input of shape \(4, 4\)",
    ),
    "ReplicationPad1d: 4-D input": (
        lambda L: L.nn.ReplicationPad1d(1)(L.tensor(_floats(1, 1, 4, 4))),
        ShapeError,
        r"2-D or 3-D input \(C, L\) or \(N, C, L\); got input of shape \(1, 1, 4, 4\)",
    ),
    "interpolate: both size and scale_factor": (
        lambda L: L.F.interpolate(L.tensor(_floats(1, 2, 4)), size=3, scale_factor=2),
        ArgumentError,
        r"exactly one of size or scale_factor; got both \(size=3, scale_factor=2\)",
    ),
    "interpolate: neither size nor scale_factor": (
        lambda L: L.F.interpolate(L.tensor(_floats(1, 2, 4))),
        ArgumentError,
        r"got neither",
    ),
    "interpolate: bilinear of a 3-D input": (
        lambda L: L.F.interpolate(L.tensor(_floats(1, 2, 4)), size=3, mode="bilinear"),
        ShapeError,
        r"mode 'bilinear' expects a 4-D \(N, C, H, W\) input; got input of shape \(1, 2, 4\)",
    ),
    "interpolate: linear of a 4-D input": (
        lambda L: L.F.interpolate(L.tensor(_floats(1, 2, 4, 4)), size=3, mode="linear"),
        ShapeError,
        r"mode 'linear' expects a 3-D \(N, C, L\) input; got input of shape \(1, 2, 4, 4\)",
    ),
    "interpolate: nearest of a 2-D input": (
        lambda L: L.F.interpolate(L.tensor(_floats(2, 4)), size=3),
        ShapeError,
        r"3-D \(N, C, L\) or 4-D \(N, C, H, W\) input; got input of shape \(2, 4\)",
    ),
    "interpolate: align_corners with nearest": (
        lambda L: L.F.interpolate(L.tensor(_floats(1, 2, 4)), size=3, align_corners=True),
        ArgumentError,
        r"align_corners can only be set with the interpolating modes.*got mode 'nearest'",
    ),
    "interpolate: size of the wrong length": (
        lambda L: L.F.interpolate(L.tensor(_floats(1, 2, 4, 4)), size=(3, 3, 3)),
        ArgumentError,
        r"size must be an int >= 1 or a tuple of 2 .*got \(3, 3, 3\)",
    ),
    "interpolate: unknown mode": (
        lambda L: L.F.interpolate(L.tensor(_floats(1, 2, 4)), size=3, mode="cubic"),
        ArgumentError,
        r"mode must be one of .*got 'cubic'",
    ),
    "pixel_shuffle: channels not divisible by r^2": (
        lambda L: L.F.pixel_shuffle(L.tensor(_floats(1, 6, 3, 3)), 2),
        ShapeError,
        r"channels divisible by upscale_factor\^2 = 4; got \(1, 6, 3, 3\)",
    ),
    "pixel_unshuffle: width not divisible by r": (
        lambda L: L.F.pixel_unshuffle(L.tensor(_floats(1, 2, 4, 5)), 2),
        ShapeError,
        r"H and W divisible by downscale_factor=2; got \(1, 2, 4, 5\)",
    ),
    "channel_shuffle: channels not divisible by groups": (
        lambda L: L.F.channel_shuffle(L.tensor(_floats(1, 5, 3)), 2),
        ShapeError,
        r"C divisible by groups=2; got \(1, 5, 3\)",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_runtime_errors(case):
    call, error, pattern = BAD_INPUTS[case]
    with pytest.raises(error, match=pattern) as caught:
        call(OURS)
    if error is not ValueError:
        assert isinstance(caught.value, RuntimeError)  # what torch raises, so torch code catches it
    with pytest.raises(
        (RuntimeError, ValueError, NotImplementedError, IndexError)
    ):  # torch refuses it too
        call(THEIRS)
