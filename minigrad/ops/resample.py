"""Resampling, as torch.nn.functional's interpolate, pixel_shuffle, pixel_unshuffle and
channel_shuffle.

interpolate resizes the spatial dims of (N, C, L) or (N, C, H, W), one dim at a time (both modes
are separable). For each output place i of a dim of `size` input places, the source coordinate is

    nearest         floor(i * scale)                  scale = 1 / scale_factor when scale_factor is
    nearest-exact   floor((i + 0.5) * scale)          given (and not recomputed), else in / out
    linear          (i + 0.5) * scale - 0.5, at least 0   (align_corners=False)
                    i * (in - 1) / (out - 1)               (align_corners=True: the corner places
                    meet)

nearest modes read that place (index_select); linear ones mix the two places around it by their
distances. Every step is an engine op (index_select, mul, add), so the gradients come from theirs.
The shuffles are reshapes and permutes.
"""

import math

import numpy as np

from ..errors import ArgumentError, ShapeError
from ..engine import Tensor
from .args import check_float
from .registry import op

_MODE_DIMS = {"nearest": (1, 2), "nearest-exact": (1, 2), "linear": (1,), "bilinear": (2,)}


def _output_sizes(op, input, dims, size, scale_factor, recompute_scale_factor):
    """(output size, scale used for the source coordinates) per spatial dim."""
    if (size is None) == (scale_factor is None):
        raise ArgumentError(
            f"{op}: expected exactly one of size or scale_factor; "
            f"got {'both' if size is not None else 'neither'} "
            f"(size={size!r}, scale_factor={scale_factor!r})"
        )
    places = input.shape[2:]
    if size is not None:
        sizes = (size,) * dims if isinstance(size, (int, np.integer)) else tuple(size)
        if len(sizes) != dims or not all(
            isinstance(s, (int, np.integer)) and s >= 1 for s in sizes
        ):
            raise ArgumentError(
                f"{op}: size must be an int >= 1 or a tuple of {dims} of them for input of shape "
                f"{input.shape}; got {size!r}"
            )
        return tuple(int(s) for s in sizes), tuple(p / s for p, s in zip(places, sizes))
    factors = (
        (scale_factor,) * dims
        if isinstance(scale_factor, (int, float, np.number))
        else tuple(scale_factor)
    )
    if len(factors) != dims or not all(
        isinstance(f, (int, float, np.number)) and 0 < f < math.inf for f in factors
    ):
        raise ArgumentError(
            f"{op}: scale_factor must be a finite number > 0 or a tuple of {dims} of them for "
            f"input of shape {input.shape}; got {scale_factor!r}"
        )
    sizes = tuple(int(math.floor(p * float(f))) for p, f in zip(places, factors))
    if any(s < 1 for s in sizes):
        raise ShapeError(
            f"{op}: scale_factor={scale_factor!r} makes an empty output {sizes} from input of "
            f"shape {input.shape}"
        )
    if recompute_scale_factor:
        return sizes, tuple(p / s for p, s in zip(places, sizes))
    return sizes, tuple(1 / float(f) for f in factors)


def _resample_dim(x, dim, out, scale, mode, align_corners):
    """x resampled along dim to `out` places."""
    places = x.shape[dim]
    target = np.arange(out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        source = np.floor((target + (0.5 if mode == "nearest-exact" else 0)) * scale)
        return x.index_select(dim, Tensor._wrap(np.minimum(source, places - 1).astype(np.int64)))
    if align_corners:
        source = target * ((places - 1) / (out - 1) if out > 1 else 0.0)
    else:
        source = np.maximum((target + 0.5) * scale - 0.5, 0.0)
    low = np.minimum(np.floor(source), places - 1).astype(np.int64)
    high = np.minimum(low + 1, places - 1)
    shape = (out,) + (1,) * (x.ndim - dim - 1)  # the weights broadcast along dim
    weight_high = Tensor._wrap((source - low).reshape(shape).astype(x.dtype))
    weight_low = Tensor._wrap((1 - (source - low)).reshape(shape).astype(x.dtype))
    return (
        x.index_select(dim, Tensor._wrap(low)) * weight_low
        + x.index_select(dim, Tensor._wrap(high)) * weight_high
    )


@op(method=False, public=False)
def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """torch.nn.functional.interpolate for modes nearest, nearest-exact (input (N, C, L) or (N, C,
    H, W)), linear ((N, C, L)) and bilinear ((N, C, H, W)): the spatial dims resized to size, or to
    floor(in * scale_factor)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate: expected input to be a Tensor; got {type(input).__name__}")
    if mode not in _MODE_DIMS:
        raise ArgumentError(
            f"interpolate: mode must be one of {', '.join(map(repr, _MODE_DIMS))} "
            f"(minigrad has no bicubic, trilinear or area resampling); got {mode!r}"
        )
    dims = input.ndim - 2
    if dims not in _MODE_DIMS[mode]:
        layouts = " or ".join(
            {1: "3-D (N, C, L)", 2: "4-D (N, C, H, W)"}[d] for d in _MODE_DIMS[mode]
        )
        raise ShapeError(
            f"interpolate: mode {mode!r} expects a {layouts} input; "
            f"got input of shape {input.shape}"
        )
    check_float("interpolate", input, error=ArgumentError)
    if align_corners is not None and mode not in ("linear", "bilinear"):
        raise ArgumentError(
            f"interpolate: align_corners can only be set with the interpolating modes linear and "
            f"bilinear; got mode {mode!r} with align_corners={align_corners}"
        )
    if antialias:
        raise ArgumentError(
            "interpolate: antialias=True is not supported (minigrad resamples without a filter)"
        )
    sizes, scales = _output_sizes(
        "interpolate", input, dims, size, scale_factor, recompute_scale_factor
    )
    out = input
    for dim, (places, scale) in enumerate(zip(sizes, scales), start=2):
        out = _resample_dim(out, dim, places, scale, mode, bool(align_corners))
    return out


def _factor(op, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ArgumentError(f"{op}: {name} must be an int >= 1; got {value!r}")
    return int(value)


@op(method=False, public=False)
def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): each group of r^2 channels becomes an r x r
    block."""
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    if not isinstance(input, Tensor) or input.ndim < 3 or input.shape[-3] % (r * r):
        raise ShapeError(
            f"pixel_shuffle: expected an input (*, C * {r * r}, H, W) with channels divisible by "
            f"upscale_factor^2 = {r * r}; got {getattr(input, 'shape', type(input).__name__)}"
        )
    *lead, channels, height, width = input.shape
    blocks = input.reshape(*lead, channels // (r * r), r, r, height, width)
    n = len(lead)
    order = tuple(range(n)) + (n, n + 3, n + 1, n + 4, n + 2)  # (C, H, r, W, r)
    return blocks.permute(*order).reshape(*lead, channels // (r * r), height * r, width * r)


@op(method=False, public=False)
def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W), the inverse of pixel_shuffle."""
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    if (
        not isinstance(input, Tensor)
        or input.ndim < 3
        or input.shape[-2] % r
        or input.shape[-1] % r
    ):
        raise ShapeError(
            f"pixel_unshuffle: expected an input (*, C, H, W) with H and W divisible by "
            f"downscale_factor={r}; got {getattr(input, 'shape', type(input).__name__)}"
        )
    *lead, channels, height, width = input.shape
    blocks = input.reshape(*lead, channels, height // r, r, width // r, r)
    n = len(lead)
    order = tuple(range(n)) + (n, n + 2, n + 4, n + 1, n + 3)  # (C, r, r, H, W)
    return blocks.permute(*order).reshape(*lead, channels * r * r, height // r, width // r)


@op(method=False, public=False)
def channel_shuffle(input, groups):
    """(N, C, *) -> the same shape with the channels of the `groups` groups interleaved
    (ShuffleNet)."""
    groups = _factor("channel_shuffle", "groups", groups)
    if not isinstance(input, Tensor) or input.ndim < 3 or input.shape[1] % groups:
        raise ShapeError(
            f"channel_shuffle: expected an input (N, C, *) of at least 3 dims with C divisible by "
            f"groups={groups}; got {getattr(input, 'shape', type(input).__name__)}"
        )
    batch, channels, *places = input.shape
    grouped = input.reshape(batch, groups, channels // groups, *places)
    return grouped.transpose(1, 2).reshape(input.shape)


__all__ = ["interpolate", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]
