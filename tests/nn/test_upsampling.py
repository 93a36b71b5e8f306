"""The resampling layers (nn/upsampling.py: Upsample, UpsamplingNearest2d, UpsamplingBilinear2d,
PixelShuffle, PixelUnshuffle, ChannelShuffle) against torch's: values, gradients, state dicts and
reprs, float64 gradchecks. The functions they call are in tests/ops/test_resample.py.
"""

import pytest

from layer_checks import check_layer, normal
from minigrad import nn
from parity import DTYPE_IDS, DTYPES

# the tables compare with torch: without it the file is skipped
torch = pytest.importorskip("torch")


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
