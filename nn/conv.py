"""torch.nn.modules.conv and fold: convolution layers: Conv1d over (N, C, L) and Conv2d over (N, C,
H, W), their transposes ConvTranspose1d and ConvTranspose2d, and Unfold / Fold (im2col and col2im),
as torch's.

A convolution holds weight (out_channels, in_channels / groups, *kernel_size), a transposed one
(in_channels, out_channels / groups, *kernel_size), and bias (out_channels,), named and
initialised as torch does (kaiming_uniform_ with a=sqrt(5), i.e. U(-b, b) with b = 1 / sqrt(fan_in),
fan_in = weight.shape[1] * prod(kernel_size); the bias from the same range), so state dicts move
between the two. The work is F.conv1d / F.conv2d / F.conv_transpose1d / F.conv_transpose2d.
"""

import math

import numpy as np

from minigrad.errors import ArgumentError
from minigrad.ops import padding_amounts, per_dim

from . import functional as F
from . import init
from .module import Module, Parameter, parameter_dtype

__all__ = ["Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "Unfold", "Fold"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    dims = 0  # spatial dims: 1 for Conv1d, 2 for Conv2d
    function = None  # F.conv1d or F.conv2d
    transposed = False  # a ConvTranspose: weight (in_channels, out_channels / groups, *kernel_size)

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        name = type(self).__name__
        for what, value in (
            ("in_channels", in_channels),
            ("out_channels", out_channels),
            ("groups", groups),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ArgumentError(f"{name}: {what} must be an int >= 1; got {value!r}")
        for what, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if value % groups:
                raise ArgumentError(
                    f"{name}: {what} must be divisible by groups; got {what}={value}, "
                    f"groups={groups}"
                )
        if padding_mode not in _PADDING_MODES:
            raise ArgumentError(
                f"{name}: padding_mode must be one of {', '.join(map(repr, _PADDING_MODES))}; "
                f"got {padding_mode!r}"
            )
        self.in_channels, self.out_channels, self.groups = (
            int(in_channels),
            int(out_channels),
            int(groups),
        )
        self.kernel_size = per_dim(kernel_size, self.dims, "kernel_size", name)
        self.stride = per_dim(stride, self.dims, "stride", name)
        self.dilation = per_dim(dilation, self.dims, "dilation", name)
        # (before, after) per dim, which also checks padding; torch keeps the string or the tuple
        self._amounts = padding_amounts(padding, self.kernel_size, self.stride, self.dilation, name)
        self.padding = (
            padding if isinstance(padding, str) else tuple(before for before, _ in self._amounts)
        )
        self.padding_mode = padding_mode
        self.output_padding = (0,) * self.dims
        dtype = parameter_dtype(dtype, device, type(self).__name__)
        channels = (in_channels, out_channels) if self.transposed else (out_channels, in_channels)
        self.weight = Parameter(
            np.empty((channels[0], channels[1] // groups) + self.kernel_size, dtype)
        )
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            fan_in = channels[1] // groups * math.prod(self.kernel_size)
            self.bias = Parameter(np.empty(out_channels, dtype))
            init.uniform_(self.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        function = type(self).function
        if self.padding_mode == "zeros":
            return function(
                x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
            )
        # F.pad lists (before, after) from the last dim back
        widths = tuple(amount for pair in reversed(self._amounts) for amount in pair)
        return function(
            F.pad(x, widths, mode=self.padding_mode),
            self.weight,
            self.bias,
            self.stride,
            0,
            self.dilation,
            self.groups,
        )

    def extra_repr(self):
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0,) * self.dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self.dims:
            text += f", output_padding={self.output_padding}"
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
    """torch.nn.Conv2d: (N, in_channels, H, W) or (in_channels, H, W) -> (N, out_channels, H_out,
    W_out)."""

    dims, function = 2, staticmethod(F.conv2d)


class _ConvTransposeNd(_ConvNd):
    transposed = True

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups=1,
        bias=True,
        dilation=1,
        padding_mode="zeros",
        device=None,
        dtype=None,
    ):
        name = type(self).__name__
        if padding_mode != "zeros":
            raise ArgumentError(
                f"{name}: only padding_mode='zeros' is supported, as in torch; got {padding_mode!r}"
            )
        if isinstance(padding, str):
            raise ArgumentError(
                f"{name}: padding must be an int or a tuple of {self.dims} ints; got {padding!r}"
            )
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )
        self.output_padding = per_dim(output_padding, self.dims, "output_padding", name, minimum=0)

    def forward(self, x, output_size=None):
        output_padding = (
            self.output_padding if output_size is None else self._output_padding(x, output_size)
        )
        return type(self).function(
            x,
            self.weight,
            self.bias,
            self.stride,
            self.padding,
            output_padding,
            self.groups,
            self.dilation,
        )

    def _output_padding(self, x, output_size):
        """The output_padding that gives output_size (torch's forward(x, output_size)): each size
        between the smallest output and that plus stride - 1."""
        name, sizes = type(self).__name__, tuple(output_size)[-self.dims :]
        if len(output_size) not in (self.dims, x.ndim):
            raise ArgumentError(
                f"{name}: output_size must have {self.dims} or {x.ndim} elements for a {x.ndim}-D "
                f"input; got {tuple(output_size)}"
            )
        smallest = tuple(
            (size - 1) * s - 2 * p + d * (k - 1) + 1
            for size, s, p, d, k in zip(
                x.shape[-self.dims :], self.stride, self.padding, self.dilation, self.kernel_size
            )
        )
        largest = tuple(low + s - 1 for low, s in zip(smallest, self.stride))
        if not all(low <= size <= high for low, size, high in zip(smallest, sizes, largest)):
            raise ArgumentError(
                f"{name}: requested an output size of {tuple(output_size)}, but valid sizes range "
                f"from {smallest} to {largest} (for an input of {x.shape[-self.dims :]})"
            )
        return tuple(size - low for size, low in zip(sizes, smallest))


class ConvTranspose1d(_ConvTransposeNd):
    """torch.nn.ConvTranspose1d: (N, in_channels, L) or (in_channels, L) -> (N, out_channels,
    L_out), L_out = (L - 1) * stride - 2 * padding + dilation * (kernel_size - 1) + output_padding +
    1."""

    dims, function = 1, staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """torch.nn.ConvTranspose2d: (N, in_channels, H, W) or (in_channels, H, W) -> (N, out_channels,
    H_out, W_out)."""

    dims, function = 2, staticmethod(F.conv_transpose2d)


class Unfold(Module):
    """torch.nn.Unfold: (N, C, H, W) -> (N, C * prod(kernel_size), L), the blocks the kernel visits
    as columns."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = (
            kernel_size,
            dilation,
            padding,
            stride,
        )

    def forward(self, x):
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
            f"stride={self.stride}"
        )


class Fold(Module):
    """torch.nn.Fold: (N, C * prod(kernel_size), L) -> (N, C, *output_size), overlapping blocks
    summed."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, x):
        return F.fold(
            x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self):
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )
