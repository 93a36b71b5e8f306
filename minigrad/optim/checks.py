"""The checks of optimizer settings and state, one list for both: each takes (name, value) (a
state buffer's also the parameter) and returns the value to keep, or raises an error naming
`name` and what was given. An optimizer's table of them runs when it is built, when a setting is
assigned and when a state dict is loaded (minigrad/optim/optimizer.py)."""

import math
import numbers

import numpy as np

from ..engine import Tensor


def _number(name, value):
    """value as a float: a real number, or a 0-d tensor or array of one (a bool is not a number
    here)."""
    if isinstance(value, (Tensor, np.ndarray)) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number; got {value!r} of type {type(value).__name__}")
    return float(value)


def non_negative(name, value):
    """A real number >= 0 (lr, eps, weight decay, momentum); a 0-d tensor or array gives its
    number."""
    value = _number(name, value)
    if not value >= 0 or math.isinf(value):  # `not >=` also catches NaN
        raise ValueError(f"{name} must be in [0, inf); got {value}")
    return value


def finite(name, value):
    """A finite real number, negative too (SGD's dampening); a 0-d tensor or array gives its
    number."""
    value = _number(name, value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value}")
    return value


def flag(name, value):
    """True or False (nesterov, maximize); a 0-d bool array, as mg.load gives it, is read as one."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype == np.bool_:
        value = value.item()
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(
            f"{name} must be True or False; got {value!r} of type {type(value).__name__}"
        )
    return bool(value)


def betas(name, value):
    """Two decay rates, each in [0, 1)."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{name} must be a pair (beta1, beta2); got {value!r}")
    pair = tuple(non_negative(f"{name}[{i}]", beta) for i, beta in enumerate(value))
    for i, beta in enumerate(pair):
        if beta >= 1:
            raise ValueError(f"{name}[{i}] must be in [0, 1); got {beta}")
    return pair


def step_count(name, value, param=None):
    """A count of steps taken: an integer >= 1 (bias corrections count from 1)."""
    array = np.asarray(value)
    if (
        array.ndim
        or array.dtype.kind not in "iuf"
        or (array.dtype.kind == "f" and not float(array).is_integer())
    ):
        raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
    if int(array) < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {int(array)}")
    return int(array)


def buffer(name, value, param):
    """A float array of the parameter's shape, stored as a C-contiguous copy in its dtype."""
    array = np.asarray(value)
    if array.dtype.kind != "f" or array.shape != param.shape:
        raise ValueError(
            f"{name} must be a float array of shape {param.shape} (the parameter's); "
            f"got {array.dtype} of shape {array.shape}"
        )
    return np.array(array, dtype=param.dtype, order="C")


def buffer_of(what):
    """The check of a buffer of `what`, which are never negative (sums of squares, largest
    magnitudes): every element >= 0, and the message says what the buffer holds."""

    def check(name, value, param):
        array = buffer(name, value, param)
        bad = ~(array >= 0)  # NaN is bad too
        if bad.any():
            raise ValueError(
                f"{name} holds {what}, which are >= 0; "
                f"got {array[bad].ravel()[0]} at index {tuple(int(i) for i in np.argwhere(bad)[0])}"
            )
        return array

    return check


non_negative_buffer = buffer_of("averages of squared gradients")  # second moments


def check_torch_flags(name, differentiable):
    """torch's optimizers take flags for how the update runs on their devices (foreach, fused,
    capturable): here they change nothing. differentiable=True asks for a graph through the
    update itself, which minigrad's in-place updates do not record."""
    if differentiable:
        raise ValueError(
            f"{name}: differentiable=True (a graph through the update) is not supported"
        )
