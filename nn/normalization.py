"""torch.nn.modules.normalization (and instance norm): layer, RMS, group, instance and local
response normalisation, as torch's LayerNorm, RMSNorm, GroupNorm, InstanceNorm1d/2d and
LocalResponseNorm (and F.group_norm, F.instance_norm, F.local_response_norm).

    layer_norm      each position normalised over its trailing normalized_shape dims, then scaled
                    and shifted elementwise (one fused op, minigrad/ops/normalization.py)
    rms_norm        the same without taking the mean away, and without a bias (Llama's)
    group_norm      the C channels of each sample split into num_groups groups; each group is
                    normalised with its own mean and biased variance (over its channels and all
                    their positions), then scaled and shifted per channel
    instance_norm   each (sample, channel) plane normalised on its own: batch_norm of the input
                    seen as one sample of N * C channels, so running statistics (when asked)
                    follow the mean over the batch of the per-plane statistics, as torch's
    local_response_norm   x / (k + alpha / size * sum of x^2 over `size` neighbouring channels)^beta

Group, instance and local response norms are written with engine ops (layer_norm, batch_norm,
pad, slicing), so every gradient comes from their backward passes.
"""

import math
import warnings

import numpy as np

import minigrad as mg

from minigrad.errors import ArgumentError, ShapeError
from minigrad.ops import layer_norm, rms_norm
from minigrad.ops import pad

from .batchnorm import _BatchNorm, batch_norm
from .module import Module, Parameter, parameter_dtype

# fmt: off
__all__ = [
    "LayerNorm", "RMSNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "LocalResponseNorm",
]
# fmt: on


def _per_channel(out, weight, bias):
    """out (N, C, ...) * weight[c] + bias[c], each of them (C,) or None."""
    shape = (1, out.shape[1]) + (1,) * (out.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    return out if bias is None else out + bias.reshape(shape)


def _check_input(op, input, minimum_ndim):
    if not isinstance(input, mg.Tensor):
        raise TypeError(f"{op}: expected input to be a Tensor; got {type(input).__name__}")
    if input.ndim < minimum_ndim:
        raise ShapeError(
            f"{op}: expected an input of at least {minimum_ndim} dims (N, C, ...); "
            f"got input of shape {input.shape}"
        )


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """torch's F.group_norm: input (N, C, *) -> the same shape; weight and bias (C,) or None."""
    _check_input("group_norm", input, 2)
    batch, channels = input.shape[:2]
    if (
        isinstance(num_groups, bool)
        or not isinstance(num_groups, int)
        or num_groups < 1
        or channels % num_groups
    ):
        raise ShapeError(
            f"group_norm: expected a number of groups that divides the {channels} channels of the "
            f"input (shape {input.shape}); got num_groups={num_groups!r}"
        )
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and value.shape != (channels,):
            raise ShapeError(
                f"group_norm: expected {name} of shape ({channels},) (one per channel); "
                f"got {value.shape}"
            )
    groups = input.reshape(batch, num_groups, -1)  # each row: one group's channels and positions
    return _per_channel(
        layer_norm(groups, groups.shape[-1], eps=eps).reshape(input.shape), weight, bias
    )


def instance_norm(
    input,
    running_mean=None,
    running_var=None,
    weight=None,
    bias=None,
    use_input_stats=True,
    momentum=0.1,
    eps=1e-5,
):
    """torch's F.instance_norm: input (N, C, *) -> the same shape, each (n, c) plane normalised;
    with use_input_stats the planes' own statistics (running_mean / running_var (C,), if given, are
    updated in place), else running_mean and running_var."""
    _check_input("instance_norm", input, 2)
    batch, channels = input.shape[:2]
    if use_input_stats and math.prod(input.shape[2:]) <= 1:
        raise ShapeError(
            "instance_norm: expected more than 1 spatial element when training; "
            f"got input of shape {input.shape}"
        )
    # the batch as one sample of N * C channels, with the (C,) statistics repeated for each sample
    planes = input.reshape((1, batch * channels) + input.shape[2:])
    repeated = [
        None if stats is None else mg.tensor(np.tile(stats._data, batch))
        for stats in (running_mean, running_var)
    ]
    out = batch_norm(planes, *repeated, training=use_input_stats, momentum=momentum, eps=eps)
    for stats, updated in zip((running_mean, running_var), repeated):
        if stats is not None and use_input_stats and batch:
            stats._data[...] = updated._data.reshape(batch, channels).mean(axis=0)
    return _per_channel(out.reshape(input.shape), weight, bias)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """torch's F.local_response_norm: input (N, C, *) with at least one position dim -> the same
    shape."""
    _check_input("local_response_norm", input, 3)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ArgumentError(f"local_response_norm: size must be an int >= 1; got {size!r}")
    if input.numel() == 0:
        return input
    channels = input.shape[1]
    squares = (input * input).reshape(input.shape[0], channels, -1)
    # size // 2 zero channels before and (size - 1) // 2 after: a window of `size` around each
    padded = pad(squares, (0, 0, size // 2, (size - 1) // 2))
    window_sum = padded[:, 0:channels]
    for offset in range(1, size):
        window_sum = window_sum + padded[:, offset : offset + channels]
    return input / (window_sum.reshape(input.shape) * (alpha / size) + k) ** beta


def _normalized_shape(name, value):
    """A normalized_shape (a size or a tuple of them) as a tuple of ints >= 0 (a 0 gives an empty
    layer, as in torch)."""
    shape = tuple(
        int(size) for size in ((value,) if isinstance(value, (int, np.integer)) else value)
    )
    if not shape or min(shape) < 0:
        raise ArgumentError(
            f"{name}: normalized_shape must be a size >= 0 or a non-empty tuple of them; "
            f"got {value!r}"
        )
    return shape


class LayerNorm(Module):
    """Normalise over the trailing dims normalized_shape, then scale and shift (torch.nn.LayerNorm).

        y = (x - mean) / sqrt(var + eps) * weight + bias

    mean and the biased variance over the normalised dims, per leading position. Parameters
    (with elementwise_affine=True): weight of normalized_shape, ones; bias, zeros (none with
    bias=False, as torch). One fused op forward and backward
    (minigrad.ops.normalization.layer_norm).

    forward(x: (..., *normalized_shape)) -> same shape
    """

    def __init__(
        self,
        normalized_shape,
        eps=1e-5,
        elementwise_affine=True,
        bias=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.normalized_shape = _normalized_shape("LayerNorm", normalized_shape)
        self.eps = float(eps)
        self.elementwise_affine = bool(elementwise_affine)
        dtype = parameter_dtype(dtype, device, "LayerNorm")
        self.register_parameter(
            "weight",
            Parameter(np.ones(self.normalized_shape, dtype)) if self.elementwise_affine else None,
        )
        self.register_parameter(
            "bias",
            Parameter(np.zeros(self.normalized_shape, dtype))
            if self.elementwise_affine and bias
            else None,
        )

    def forward(self, x):
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )  # as torch prints it


class RMSNorm(Module):
    """torch.nn.RMSNorm: y = x / sqrt(mean(x^2) + eps) * weight over the trailing dims
    normalized_shape (no mean taken away, no bias; Llama's normalisation). eps None: the input
    dtype's machine epsilon. weight: ones (none with elementwise_affine=False)."""

    def __init__(
        self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None
    ):
        super().__init__()
        self.normalized_shape = _normalized_shape("RMSNorm", normalized_shape)
        dtype = parameter_dtype(dtype, device, "RMSNorm")
        self.eps = None if eps is None else float(eps)
        self.elementwise_affine = bool(elementwise_affine)
        self.register_parameter(
            "weight",
            Parameter(np.ones(self.normalized_shape, dtype)) if self.elementwise_affine else None,
        )

    def forward(self, x):
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class GroupNorm(Module):
    """torch.nn.GroupNorm: (N, num_channels, *) -> the same shape; weight ones and bias zeros
    (num_channels,)."""

    def __init__(
        self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True
    ):
        super().__init__()
        for what, value in (("num_groups", num_groups), ("num_channels", num_channels)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ArgumentError(f"GroupNorm: {what} must be an int >= 1; got {value!r}")
        if num_channels % num_groups:
            raise ArgumentError(
                f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                f"({num_groups})"
            )
        dtype = parameter_dtype(dtype, device, "GroupNorm")
        self.num_groups, self.num_channels, self.eps, self.affine = (
            num_groups,
            num_channels,
            float(eps),
            bool(affine),
        )
        self.register_parameter(
            "weight", Parameter(np.ones(num_channels, dtype)) if affine else None
        )
        self.register_parameter(
            "bias", Parameter(np.zeros(num_channels, dtype)) if affine and bias else None
        )

    def forward(self, x):
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


class _InstanceNorm(_BatchNorm):
    """BatchNorm's parameters and buffers with torch's InstanceNorm defaults and forward."""

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=False,
        track_running_stats=False,
        device=None,
        dtype=None,
        *,
        bias=True,
    ):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        if not bias:
            self.register_parameter("bias", None)

    def forward(self, x):
        name, unbatched = type(self).__name__, max(self.dims) - 1
        if not isinstance(x, mg.Tensor) or x.ndim not in self.dims:
            raise ShapeError(
                f"{name}: expected a {unbatched}-D (C, ...) or {unbatched + 1}-D (N, C, ...) "
                f"input; got {getattr(x, 'shape', type(x).__name__)}"
            )
        channel_dim = x.ndim - unbatched
        if x.shape[channel_dim] != self.num_features:
            if self.affine:
                raise ShapeError(
                    f"{name}: expected input's size at dim={channel_dim} to match num_features "
                    f"({self.num_features}); got input of shape {x.shape}"
                )
            warnings.warn(
                f"input's size at dim={channel_dim} does not match num_features. "
                "You can silence this warning by not passing in num_features, "
                "which is not used because affine=False",
                stacklevel=2,
            )
        batched = x.unsqueeze(0) if x.ndim == unbatched else x
        # torch's InstanceNorm: momentum None means 0 (the running statistics stay), not an average
        out = instance_norm(
            batched,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )
        return out.squeeze(0) if x.ndim == unbatched else out

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class InstanceNorm1d(_InstanceNorm):
    """torch.nn.InstanceNorm1d: (N, C, L) or (C, L), each (sample, channel) row normalised on its
    own."""

    dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """torch.nn.InstanceNorm2d: (N, C, H, W) or (C, H, W), each (sample, channel) plane normalised
    on its own."""

    dims = (3, 4)


class LocalResponseNorm(Module):
    """torch.nn.LocalResponseNorm: (N, C, *) -> the same shape, normalised across `size`
    neighbouring channels."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        return local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
