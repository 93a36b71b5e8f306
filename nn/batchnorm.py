"""torch.nn.modules.batchnorm: batch normalization (Ioffe & Szegedy, 2015), as torch's BatchNorm1d
and BatchNorm2d.

In training each channel (dim 1) is normalised with the mean and the biased variance of its
values over the batch (and over the positions of a sequence or an image), then scaled and
shifted by weight and bias; running_mean and running_var (with the unbiased variance) follow
those statistics by momentum, and eval() normalises with them instead. Written with engine
ops, so every gradient comes from their backward passes.
"""

import numpy as np

import minigrad as mg

from .module import Module, Parameter, parameter_dtype

__all__ = ["BatchNorm1d", "BatchNorm2d"]


def batch_norm(
    input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):
    """torch's F.batch_norm: input (N, C, ...) normalised per channel; in training with the batch's
    statistics (and running_mean / running_var, if given, updated in place), else with the running
    ones. momentum None: the running statistics are a plain average (the caller gives the
    factor)."""
    if not isinstance(input, mg.Tensor) or input.ndim < 2:
        raise ValueError(
            "batch_norm: expected an input of shape (N, C, ...); "
            f"got {getattr(input, 'shape', type(input).__name__)}"
        )
    channels = input.shape[1]
    shape = (1, channels) + (1,) * (input.ndim - 2)  # broadcasts a (C,) vector over (N, C, ...)
    if training:
        axes = tuple(d for d in range(input.ndim) if d != 1)
        count = input.numel() // channels
        if count <= 1:
            raise ValueError(
                "batch_norm: expected more than 1 value per channel when training; "
                f"got input of shape {input.shape}"
            )
        mean = input.mean(dim=axes, keepdim=True)
        variance = ((input - mean) ** 2).mean(dim=axes, keepdim=True)
        if running_mean is not None and momentum is not None:
            with mg.no_grad():
                m = float(momentum)
                running_mean._data[...] = (1 - m) * running_mean._data + m * mean._data.reshape(
                    channels
                )
                running_var._data[...] = (1 - m) * running_var._data + m * variance._data.reshape(
                    channels
                ) * count / (count - 1)
    else:
        mean, variance = running_mean.reshape(shape), running_var.reshape(shape)
    out = (input - mean) / (variance + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


class _BatchNorm(Module):
    dims = ()  # the input ranks this module takes

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        name = type(self).__name__
        if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features < 1:
            raise ValueError(f"{name}: num_features must be an integer >= 1; got {num_features!r}")
        if momentum is not None and not 0 <= momentum <= 1:
            raise ValueError(f"{name}: momentum must be in [0, 1] or None; got {momentum!r}")
        dtype = parameter_dtype(dtype, device, name)
        self.num_features, self.eps, self.momentum = num_features, float(eps), momentum
        self.affine, self.track_running_stats = bool(affine), bool(track_running_stats)
        self.register_parameter(
            "weight", Parameter(np.ones(num_features, dtype)) if affine else None
        )
        self.register_parameter(
            "bias", Parameter(np.zeros(num_features, dtype)) if affine else None
        )
        if track_running_stats:
            self.register_buffer("running_mean", mg.tensor(np.zeros(num_features, dtype)))
            self.register_buffer("running_var", mg.tensor(np.ones(num_features, dtype)))
            self.register_buffer("num_batches_tracked", mg.tensor(np.array(0, np.int64)))
        else:
            for buffer in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(buffer, None)

    def forward(self, x):
        name = type(self).__name__
        if (
            not isinstance(x, mg.Tensor)
            or x.ndim not in self.dims
            or x.shape[1] != self.num_features
        ):
            raise ValueError(
                f"{name}: expected an input with {' or '.join(f'{d}' for d in self.dims)} "
                f"dims and num_features={self.num_features} channels in dim 1; "
                f"got {getattr(x, 'shape', type(x).__name__)}"
            )
        momentum = self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked._data[...] += 1
            if momentum is None:  # a plain average of every batch so far
                momentum = 1.0 / int(self.num_batches_tracked._data)
        # without running statistics (None) the batch's own are used in eval too, as in torch
        return batch_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            training=self.training or not self.track_running_stats,
            momentum=momentum,
            eps=self.eps,
        )

    def extra_repr(self):
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """torch.nn.BatchNorm1d: input (N, C) or (N, C, L), one mean and variance per channel C."""

    dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """torch.nn.BatchNorm2d: input (N, C, H, W), one mean and variance per channel C."""

    dims = (4,)
