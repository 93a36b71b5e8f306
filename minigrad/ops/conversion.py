"""Conversions of whole tensors (to, type_as, contiguous) and whole-tensor comparisons
(allclose, isclose, equal). minigrad runs on the CPU: a device argument may only name it."""

import numpy as np

from .. import dtypes
from ..errors import DTypeError
from ..tensor import Tensor
from .args import as_array, check_broadcast, check_device
from .elementwise import Clone, cast, clone

DEVICES = ("cpu", "cuda", "mps", "xpu", "meta")


def to(x, *args, dtype=None, device=None, copy=False, non_blocking=False):
    """x.to(dtype), x.to(other_tensor), x.to("cpu"), x.to("cpu", dtype), as in torch. The result is
    x itself when nothing changes (unless copy=True); a cast keeps the gradient flowing."""
    for arg in args:
        if isinstance(arg, Tensor):
            dtype = dtype or arg.dtype
        elif isinstance(arg, str) and arg.split(":")[0] in DEVICES:
            device = arg
        else:
            dtype = arg
    check_device(device, "to")
    result = x if dtype is None else cast(x, dtype)
    return clone(result) if copy and result is x else result


def type_as(x, other):
    """x cast to other's dtype."""
    return cast(x, other.dtype)


def contiguous(x):
    """x itself when its array is C-contiguous, else a C-contiguous copy (gradient passes through)."""
    return x if x._data.flags.c_contiguous else Clone.apply(x)


def _pair(a, b, op):
    a, b = as_array(a), as_array(b)
    if a.dtype != b.dtype:
        raise DTypeError(
            f"{op}: both tensors must have the same dtype; got {a.dtype} and {b.dtype}"
        )
    check_broadcast(op, a, b)
    return a, b


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise (a bool tensor)."""
    a, b = _pair(input, other, "isclose")
    return Tensor._wrap(np.asarray(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element is close (isclose), as a Python bool."""
    a, b = _pair(input, other, "allclose")
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def equal(input, other):
    """True when both have the same shape and elements (a Python bool)."""
    a, b = as_array(input), as_array(other)
    return a.shape == b.shape and bool(np.array_equal(a, b))


def numel(x):
    """The number of elements."""
    return x.numel()


def element_size(x):
    """Bytes per element."""
    return x.dtype.itemsize


def is_floating_point(x):
    return dtypes.is_float(x.dtype)
