"""Regression losses: mse_loss, l1_loss, smooth_l1_loss and huber_loss, each a few engine ops
(targets broadcast to input's shape with torch's warning)."""

from ...errors import ArgumentError
from ..args import float_tensor
from ..arithmetic import mul, sub
from ..piecewise import where
from ..registry import op
from ..pointwise import abs
from .reduction import check_reduction, reduce, same_shape_target


@op(method=False, public=False)
def mse_loss(input, target, *, reduction="mean"):
    """(input - target)^2 elementwise, reduced."""
    check_reduction(reduction)
    input, target = same_shape_target(
        "mse_loss", float_tensor("mse_loss", input), target, broadcast=True
    )
    difference = sub(input, target)
    return reduce(mul(difference, difference), reduction)


@op(method=False, public=False)
def l1_loss(input, target, *, reduction="mean"):
    """|input - target| elementwise, reduced (gradient sign(input - target), 0 where equal)."""
    check_reduction(reduction)
    input, target = same_shape_target(
        "l1_loss", float_tensor("l1_loss", input), target, broadcast=True
    )
    return reduce(abs(sub(input, target)), reduction)


@op(method=False, public=False)
def smooth_l1_loss(input, target, *, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, for d = input - target (l1 at
    beta=0)."""
    check_reduction(reduction)
    if beta < 0:
        raise ArgumentError(
            f"smooth_l1_loss does not support negative values for beta; got beta={beta}"
        )
    input, target = same_shape_target(
        "smooth_l1_loss", float_tensor("smooth_l1_loss", input), target, broadcast=True
    )
    return reduce(_smooth_l1(sub(input, target), float(beta)), reduction)


@op(method=False, public=False)
def huber_loss(input, target, *, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta): delta times smooth_l1 with
    beta=delta."""
    check_reduction(reduction)
    if not delta > 0:
        raise ArgumentError(
            f"huber_loss does not support non-positive values for delta; got delta={delta}"
        )
    input, target = same_shape_target(
        "huber_loss", float_tensor("huber_loss", input), target, broadcast=True
    )
    return reduce(_smooth_l1(sub(input, target), float(delta)) * float(delta), reduction)


def _smooth_l1(difference, beta):
    size = abs(difference)
    if beta == 0:
        return size
    return where(size._data < beta, difference * difference * (0.5 / beta), size - 0.5 * beta)
