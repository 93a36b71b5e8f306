"""Convolution layers: Conv1d over (N, C, L) and Conv2d over (N, C, H, W), as torch's.

Each holds weight (out_channels, in_channels / groups, *kernel_size) and bias (out_channels,),
named and initialised as torch does (kaiming_uniform_ with a=sqrt(5), i.e. U(-b, b) with
b = 1 / sqrt(fan_in), fan_in = in_channels / groups * prod(kernel_size); the bias from the same
range), so state dicts move between the two. The work is F.conv1d / F.conv2d.
"""

import math

import numpy as np

from minigrad.errors import ArgumentError
from minigrad.ops.conv import padding_amounts, per_dim

from . import functional as F
from . import init
from .module import Module, Parameter, parameter_dtype

__all__ = ["Conv1d", "Conv2d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    dims = 0  # spatial dims: 1 for Conv1d, 2 for Conv2d
    function = None  # F.conv1d or F.conv2d

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", dtype=None):
        super().__init__()
        name = type(self).__name__
        for what, value in (("in_channels", in_channels), ("out_channels", out_channels), ("groups", groups)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ArgumentError(f"{name}: {what} must be an int >= 1; got {value!r}")
        for what, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if value % groups:
                raise ArgumentError(f"{name}: {what} must be divisible by groups; got {what}={value}, groups={groups}")
        if padding_mode not in _PADDING_MODES:
            raise ArgumentError(f"{name}: padding_mode must be one of {', '.join(map(repr, _PADDING_MODES))}; "
                                f"got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = int(in_channels), int(out_channels), int(groups)
        self.kernel_size = per_dim(kernel_size, self.dims, "kernel_size", name)
        self.stride = per_dim(stride, self.dims, "stride", name)
        self.dilation = per_dim(dilation, self.dims, "dilation", name)
        # (before, after) per dim, which also checks padding; torch keeps the string or the tuple
        self._amounts = padding_amounts(padding, self.kernel_size, self.stride, self.dilation, name)
        self.padding = padding if isinstance(padding, str) else tuple(before for before, _ in self._amounts)
        self.padding_mode = padding_mode
        dtype = parameter_dtype(dtype)
        self.weight = Parameter(np.empty((out_channels, in_channels // groups) + self.kernel_size, dtype))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            fan_in = in_channels // groups * math.prod(self.kernel_size)
            self.bias = Parameter(np.empty(out_channels, dtype))
            init.uniform_(self.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        function = type(self).function
        if self.padding_mode == "zeros":
            return function(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        # F.pad lists (before, after) from the last dim back
        widths = tuple(amount for pair in reversed(self._amounts) for amount in pair)
        return function(F.pad(x, widths, mode=self.padding_mode), self.weight, self.bias, self.stride, 0,
                        self.dilation, self.groups)

    def extra_repr(self):
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv1d(_ConvNd):
    """torch.nn.Conv1d: (N, in_channels, L) or (in_channels, L) -> (N, out_channels, L_out)."""

    dims, function = 1, staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """torch.nn.Conv2d: (N, in_channels, H, W) or (in_channels, H, W) -> (N, out_channels, H_out, W_out)."""

    dims, function = 2, staticmethod(F.conv2d)
