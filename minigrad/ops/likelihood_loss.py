"""Negative log-likelihood losses of count and real-valued targets, as torch's F.poisson_nll_loss
and F.gaussian_nll_loss: a few engine ops each.

    poisson_nll_loss(input, target)        exp(input) - target * input  (input the log of the rate)
                       log_input=False:    input - target * log(input + eps)  (input the rate)
                       full=True adds      target log(target) - target + log(2 pi target) / 2 where target > 1
                                           (Stirling's log(target!))
    gaussian_nll_loss(input, target, var)  (log(max(var, eps)) + (input - target)^2 / max(var, eps)) / 2
                       full=True adds      log(2 pi) / 2

poisson_nll_loss's eps and reduction are keyword-only (torch's deprecated size_average and
reduce sit among them, see minigrad/ops/loss.py); gaussian_nll_loss has torch's positional order.
"""

import math

import numpy as np

from ..errors import ArgumentError, ShapeError
from ..tensor import Tensor
from .elementwise import add, exp, log, mul, sub, where
from .loss import _as_tensor, _check_reduction, _float_input, _reduce, _same_shape_target


def poisson_nll_loss(input, target, log_input=True, full=False, *, eps=1e-8, reduction="mean"):
    """The Poisson negative log-likelihood of counts `target` under rates exp(input)
    (log_input=True) or input; targets broadcast to input's shape."""
    op = "poisson_nll_loss"
    _check_reduction(reduction)
    input, target = _same_shape_target(op, _float_input(op, input), target, broadcast=True)
    if log_input:
        loss = sub(exp(input), mul(target, input))
    else:
        loss = sub(input, mul(target, log(add(input, eps))))
    if full:
        # log(target) only where target > 1: elsewhere the term is 0 and its gradient too (torch's
        # gradient of target is nan at target <= 0, from 0 * log(target) in its backward)
        counted = target.data > 1
        safe = where(counted, target, 2.0)
        stirling = add(sub(mul(safe, log(safe)), safe), mul(log(mul(safe, 2 * math.pi)), 0.5))
        loss = add(loss, where(counted, stirling, 0.0))
    return _reduce(loss, reduction)


def _variance_shape(op, input, var):
    """var as a Tensor that broadcasts to input: input's shape, input's shape without its last dim
    (one variance per sample), or input's shape with one dim of size 1."""
    if var.shape == input.shape:
        return var
    if var.shape == input.shape[:-1]:
        return var.reshape(*var.shape, 1)
    mismatched = [size for input_size, size in zip(input.shape, var.shape) if size != input_size]
    if var.ndim == input.ndim and mismatched == [1]:
        return var
    raise ShapeError(
        f"{op}: var of shape {var.shape} does not fit input of shape {input.shape} (expected "
        f"{input.shape}, {input.shape[:-1]}, or input's shape with one dim of size 1)"
    )


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """The Gaussian negative log-likelihood of target under means `input` and variances `var`
    (a number or a tensor, see _variance_shape). var is floored at eps for the value only: its
    gradient is that of the floored value, passed straight to var, as torch's."""
    op = "gaussian_nll_loss"
    input = _float_input(op, input)
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        var = Tensor._wrap(np.full(input.shape, var, dtype=input.dtype))
    var = _as_tensor(var)
    if np.any(var.data < 0):
        raise ArgumentError(f"{op}: var must be non-negative; got a minimum of {var.data.min()}")
    var = _variance_shape(op, input, var)
    _check_reduction(reduction)
    input, target = _same_shape_target(op, input, target, broadcast=True)
    floored = add(var, Tensor._wrap((np.maximum(var.data, eps) - var.data).astype(var.dtype)))
    difference = sub(input, target)
    loss = mul(add(log(floored), mul(difference, difference) / floored), 0.5)
    if full:
        loss = add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction)


__all__ = ["poisson_nll_loss", "gaussian_nll_loss"]
