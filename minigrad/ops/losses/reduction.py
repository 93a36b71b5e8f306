"""What every loss shares: the reductions ('mean', 'sum', 'none') and the checks of targets
and weights (a constant weight, a target of input's shape or broadcast to it, with torch's
warning)."""

import warnings

import numpy as np

from ... import dtypes
from ...errors import ArgumentError, ShapeError
from ...engine import Tensor
from ..args import as_array
from ..conversion import cast
from ..reductions import sum

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(reduction):
    """reduction, if it is one of REDUCTIONS (an ArgumentError otherwise)."""
    if reduction not in REDUCTIONS:
        raise ArgumentError(
            f"{reduction} is not a valid value for reduction (expected 'mean', 'sum' or 'none')"
        )
    return reduction


def as_tensor(value):
    """A target or weight as a Tensor (data that is not one is wrapped)."""
    return value if isinstance(value, Tensor) else Tensor._wrap(dtypes.to_array(value))


def constant(op, name, value, dtype):
    """A weight argument as an array of `dtype` (None stays None). Weights take no gradient."""
    if value is None:
        return None
    if isinstance(value, Tensor) and value.requires_grad:
        raise RuntimeError(f"{op}: {name} takes no gradient (as in torch); pass {name}.detach()")
    return np.asarray(as_array(value), dtype=dtype)


def same_shape_target(op, input, target, broadcast):
    """target as a Tensor of input's float dtype (or the wider one). A target of another shape
    is broadcast with torch's warning (mse, l1) or refused (binary cross-entropy), as torch does."""
    target = as_tensor(target)
    if target.shape != input.shape:
        if not broadcast:
            raise ShapeError(
                f"{op}: target size {target.shape} must be the same as input size {input.shape}"
            )
        check_target_broadcast(op, input, target)
        warnings.warn(
            f"{op}: using a target size {target.shape} that is different to the input size "
            f"{input.shape}; the two are broadcast, which is likely not what you want",
            stacklevel=3,
        )
    dtype = (
        dtypes.promote_types(input.dtype, target.dtype) if target.dtype.kind == "f" else input.dtype
    )
    return cast(input, dtype), cast(target, dtype)


def check_target_broadcast(op, input, target):
    """A ShapeError unless target and input broadcast together."""
    try:
        np.broadcast_shapes(input.shape, target.shape)
    except ValueError:
        raise ShapeError(
            f"{op}: target of shape {target.shape} does not broadcast with input of shape "
            f"{input.shape}"
        ) from None


def reduce(loss, reduction):
    """loss as it is ('none'), summed, or averaged (nan for no elements, as torch, without 0/0
    warnings)."""
    if reduction == "none":
        return loss
    total = sum(loss)
    if reduction == "sum":
        return total
    return total / loss.numel() if loss.numel() else total * float("nan")
