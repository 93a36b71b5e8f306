"""Likelihood losses: the negative log-likelihoods of count and real-valued targets, as torch's
F.poisson_nll_loss and F.gaussian_nll_loss, and the Kullback-Leibler divergence F.kl_div; a few
engine ops each.

    poisson_nll_loss(input, target)        exp(input) - target * input  (input the log of the rate)
                       log_input=False:    input - target * log(input + eps)  (input the rate)
                       full=True adds      target log(target) - target + log(2 pi target) / 2
                                           where target > 1
                                           (Stirling's log(target!))
    gaussian_nll_loss(input, target, var)  (log(max(var, eps))
                                           + (input - target)^2 / max(var, eps)) / 2
                       full=True adds      log(2 pi) / 2

poisson_nll_loss's eps and reduction are keyword-only (torch's deprecated size_average and
reduce sit among them, see minigrad/ops/losses/__init__.py); gaussian_nll_loss has torch's
positional order.
"""

import math

import numpy as np

import warnings

from ... import dtypes
from ...errors import ArgumentError, DTypeError, ShapeError
from ...engine import Tensor
from ..args import float_tensor
from ..arithmetic import add, mul, sub
from ..conversion import cast
from ..piecewise import where
from ..reductions import sum
from ..registry import op
from ..pointwise import log
from ..unary import exp
from .reduction import as_tensor, check_reduction, check_target_broadcast, reduce
from .reduction import same_shape_target


@op(method=False, public=False)
def poisson_nll_loss(input, target, log_input=True, full=False, *, eps=1e-8, reduction="mean"):
    """The Poisson negative log-likelihood of counts `target` under rates exp(input)
    (log_input=True) or input; targets broadcast to input's shape."""
    op = "poisson_nll_loss"
    check_reduction(reduction)
    input, target = same_shape_target(op, float_tensor(op, input), target, broadcast=True)
    if log_input:
        loss = sub(exp(input), mul(target, input))
    else:
        loss = sub(input, mul(target, log(add(input, eps))))
    if full:
        # log(target) only where target > 1: elsewhere the term is 0 and its gradient too (torch's
        # gradient of target is nan at target <= 0, from 0 * log(target) in its backward)
        counted = target._data > 1
        safe = where(counted, target, 2.0)
        stirling = add(sub(mul(safe, log(safe)), safe), mul(log(mul(safe, 2 * math.pi)), 0.5))
        loss = add(loss, where(counted, stirling, 0.0))
    return reduce(loss, reduction)


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
        f"{op}: var of shape {var.shape} does not fit input of shape {input.shape} "
        f"(expected {input.shape}, {input.shape[:-1]}, or input's shape with one dim of size 1)"
    )


@op(method=False, public=False)
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """The Gaussian negative log-likelihood of target under means `input` and variances `var`
    (a number or a tensor, see _variance_shape). var is floored at eps for the value only: its
    gradient is that of the floored value, passed straight to var, as torch's."""
    op = "gaussian_nll_loss"
    input = float_tensor(op, input)
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        var = Tensor._wrap(np.full(input.shape, var, dtype=input.dtype))
    var = as_tensor(var)
    if np.any(var._data < 0):
        raise ArgumentError(f"{op}: var must be non-negative; got a minimum of {var._data.min()}")
    var = _variance_shape(op, input, var)
    check_reduction(reduction)
    input, target = same_shape_target(op, input, target, broadcast=True)
    floored = add(var, Tensor._wrap((np.maximum(var._data, eps) - var._data).astype(var.dtype)))
    difference = sub(input, target)
    loss = mul(add(log(floored), mul(difference, difference) / floored), 0.5)
    if full:
        loss = add(loss, 0.5 * math.log(2 * math.pi))
    return reduce(loss, reduction)


__all__ = ["poisson_nll_loss", "gaussian_nll_loss"]


@op(method=False, public=False)
def kl_div(input, target, *, reduction="mean", log_target=False):
    """The Kullback-Leibler divergence of input from target, as torch's F.kl_div: input holds
    log-probabilities, target probabilities (log-probabilities with log_target=True); elementwise
    target * (log(target) - input), 0 where target is 0, then reduced. reduction="batchmean"
    divides the sum by the batch size (the first dim): the divergence itself, per example;
    "mean" divides by every element, as torch's (with its warning)."""
    op = "kl_div"
    if reduction != "batchmean":
        check_reduction(reduction)
    if reduction == "mean":
        warnings.warn(
            "kl_div: reduction='mean' divides the total by every element, not by the batch size; "
            "reduction='batchmean' gives the KL divergence per example",
            stacklevel=2,
        )
    input = float_tensor(op, input)
    target = as_tensor(target)
    if target.dtype.kind != "f":
        raise DTypeError(f"{op}: expected a float target (probabilities); got dtype {target.dtype}")
    check_target_broadcast(op, input, target)
    dtype = dtypes.promote_types(input.dtype, target.dtype)
    input, target = cast(input, dtype), cast(target, dtype)
    if log_target:
        loss = mul(exp(target), sub(target, input))
    else:  # x log x is 0 at x = 0 (log(1) stands in for log(0) there); a negative target gives NaN
        loss = mul(target, sub(log(where(target._data == 0, 1.0, target)), input))
    if reduction == "batchmean":
        total = sum(loss)
        return total / loss.shape[0] if loss.ndim else total
    return reduce(loss, reduction)
