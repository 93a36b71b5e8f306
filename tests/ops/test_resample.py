"""The resampling functions (minigrad/ops/resample.py: interpolate in its nearest, nearest-exact,
linear and bilinear modes, pixel_shuffle, pixel_unshuffle, channel_shuffle) against torch:
values, gradients, float64 gradchecks, and the bad arguments each refuses naming what was
expected and what was given. Their layers (Upsample, PixelShuffle ...) are in
tests/nn/test_upsampling.py.
"""

import numpy as np
import pytest

import minigrad as mg
from layer_checks import FUNCTIONAL, assert_refused_as_torch, floats, normal
from minigrad.errors import ArgumentError, ShapeError
from minigrad.nn import functional as F
from parity import DTYPE_IDS, DTYPES, assert_runs_match, raises_like_torch, run_both

torch = pytest.importorskip("torch")


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


# name -> (call(library), our error class, a pattern our message matches: what was expected and
# given)
BAD_INPUTS = {
    "interpolate: both size and scale_factor": (
        lambda L: L.F.interpolate(L.tensor(floats(1, 2, 4)), size=3, scale_factor=2),
        ArgumentError,
        r"exactly one of size or scale_factor; got both \(size=3, scale_factor=2\)",
    ),
    "interpolate: neither size nor scale_factor": (
        lambda L: L.F.interpolate(L.tensor(floats(1, 2, 4))),
        ArgumentError,
        r"got neither",
    ),
    "interpolate: bilinear of a 3-D input": (
        lambda L: L.F.interpolate(L.tensor(floats(1, 2, 4)), size=3, mode="bilinear"),
        ShapeError,
        r"mode 'bilinear' expects a 4-D \(N, C, H, W\) input; got input of shape \(1, 2, 4\)",
    ),
    "interpolate: linear of a 4-D input": (
        lambda L: L.F.interpolate(L.tensor(floats(1, 2, 4, 4)), size=3, mode="linear"),
        ShapeError,
        r"mode 'linear' expects a 3-D \(N, C, L\) input; got input of shape \(1, 2, 4, 4\)",
    ),
    "interpolate: nearest of a 2-D input": (
        lambda L: L.F.interpolate(L.tensor(floats(2, 4)), size=3),
        ShapeError,
        r"3-D \(N, C, L\) or 4-D \(N, C, H, W\) input; got input of shape \(2, 4\)",
    ),
    "interpolate: align_corners with nearest": (
        lambda L: L.F.interpolate(L.tensor(floats(1, 2, 4)), size=3, align_corners=True),
        ArgumentError,
        r"align_corners can only be set with the interpolating modes.*got mode 'nearest'",
    ),
    "interpolate: size of the wrong length": (
        lambda L: L.F.interpolate(L.tensor(floats(1, 2, 4, 4)), size=(3, 3, 3)),
        ArgumentError,
        r"size must be an int >= 1 or a tuple of 2 .*got \(3, 3, 3\)",
    ),
    "interpolate: unknown mode": (
        lambda L: L.F.interpolate(L.tensor(floats(1, 2, 4)), size=3, mode="cubic"),
        ArgumentError,
        r"mode must be one of .*got 'cubic'",
    ),
    "pixel_shuffle: channels not divisible by r^2": (
        lambda L: L.F.pixel_shuffle(L.tensor(floats(1, 6, 3, 3)), 2),
        ShapeError,
        r"channels divisible by upscale_factor\^2 = 4; got \(1, 6, 3, 3\)",
    ),
    "pixel_unshuffle: width not divisible by r": (
        lambda L: L.F.pixel_unshuffle(L.tensor(floats(1, 2, 4, 5)), 2),
        ShapeError,
        r"H and W divisible by downscale_factor=2; got \(1, 2, 4, 5\)",
    ),
    "channel_shuffle: channels not divisible by groups": (
        lambda L: L.F.channel_shuffle(L.tensor(floats(1, 5, 3)), 2),
        ShapeError,
        r"C divisible by groups=2; got \(1, 5, 3\)",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_runtime_errors(case):
    assert_refused_as_torch(*BAD_INPUTS[case])


def test_interpolate_by_an_infinite_factor_gets_minigrads_own_message():
    error = raises_like_torch(
        lambda: F.interpolate(mg.ones(1, 1, 4), scale_factor=float("inf")),
        lambda: torch.nn.functional.interpolate(torch.ones(1, 1, 4), scale_factor=float("inf")),
        must_mention=["scale_factor", "inf"],
    )
    assert type(error).__module__ in ("builtins", "minigrad.errors")
