"""Resampling (nn/upsampling.py, minigrad/ops/resample.py: interpolate, Upsample, pixel_shuffle,
pixel_unshuffle, channel_shuffle ...) against torch: values, gradients, float64 gradchecks. Then
the bad inputs of the normalisation, dropout, padding and resampling layers and functions: each
raises a clear RuntimeError naming what was expected and what was given.
"""

from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
from layer_checks import FUNCTIONAL, check_layer, normal
from minigrad import nn
from minigrad.errors import ArgumentError, ShapeError
from minigrad.nn import functional as F
from parity import DTYPE_IDS, DTYPES, assert_runs_match, run_both

torch = pytest.importorskip(
    "torch"
)  # the tables compare with torch: without it the file is skipped


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
