"""torch.nn.modules.padding: padding layers, as torch's ZeroPad, ConstantPad, ReflectionPad,
ReplicationPad and CircularPad (1d and 2d): each is F.pad with its amounts fixed at construction.

padding is an int (the same on every side) or torch's tuple counted from the last dim: (left,
right) for 1d, (left, right, top, bottom) for 2d. The reflect, replicate and circular layers
take (C, L) / (N, C, L) or (C, H, W) / (N, C, H, W); the constant ones any input with enough dims.
"""

import numpy as np

import minigrad as mg

from minigrad.errors import ArgumentError, ShapeError
from minigrad.ops import pad

from .module import Module

# fmt: off
__all__ = [
    "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d",
    "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d",
]
# fmt: on

_LAYOUT = {1: "(C, L) or (N, C, L)", 2: "(C, H, W) or (N, C, H, W)"}


def _amounts(padding, dims, name):
    """An int or a tuple of 2 * dims ints -> the tuple F.pad takes."""
    amounts = (padding,) * (2 * dims) if isinstance(padding, (int, np.integer)) else padding
    if (
        not isinstance(amounts, (tuple, list))
        or len(amounts) != 2 * dims
        or not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in amounts)
    ):
        raise ArgumentError(
            f"{name}: padding must be an int or a tuple of {2 * dims} ints; got {padding!r}"
        )
    return tuple(int(a) for a in amounts)


class _PadNd(Module):
    dims = 0  # spatial dims padded: 1 or 2
    mode = ""  # F.pad's mode

    def __init__(self, padding):
        super().__init__()
        self.padding = _amounts(padding, self.dims, type(self).__name__)

    def forward(self, x):
        if isinstance(x, mg.Tensor) and x.ndim not in (self.dims + 1, self.dims + 2):
            raise ShapeError(
                f"{type(self).__name__}: expected a {self.dims + 1}-D or {self.dims + 2}-D input "
                f"{_LAYOUT[self.dims]}; got input of shape {x.shape}"
            )
        return pad(x, self.padding, mode=self.mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    mode = "constant"

    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, x):
        return pad(x, self.padding, mode="constant", value=self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """torch.nn.ConstantPad1d(padding, value): the last dim padded with value."""

    dims = 1


class ConstantPad2d(_ConstantPadNd):
    """torch.nn.ConstantPad2d(padding, value): the last two dims padded with value."""

    dims = 2


class ZeroPad1d(ConstantPad1d):
    """torch.nn.ZeroPad1d(padding): the last dim padded with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr


class ZeroPad2d(ConstantPad2d):
    """torch.nn.ZeroPad2d(padding): the last two dims padded with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr


class ReflectionPad1d(_PadNd):
    """torch.nn.ReflectionPad1d: mirrored without repeating the edge, [a b c] -> b [a b c] b."""

    dims, mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """torch.nn.ReflectionPad2d: rows and columns mirrored without repeating the edge."""

    dims, mode = 2, "reflect"


class ReplicationPad1d(_PadNd):
    """torch.nn.ReplicationPad1d: the edge repeated, [a b c] -> a [a b c] c."""

    dims, mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """torch.nn.ReplicationPad2d: the edge rows and columns repeated."""

    dims, mode = 2, "replicate"


class CircularPad1d(_PadNd):
    """torch.nn.CircularPad1d: wrapped around, [a b c] -> c [a b c] a."""

    dims, mode = 1, "circular"


class CircularPad2d(_PadNd):
    """torch.nn.CircularPad2d: rows and columns wrapped around."""

    dims, mode = 2, "circular"
