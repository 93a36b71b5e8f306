"""Conversions: dtype casts and copies (cast, clone, to, type_as, contiguous), and what a
tensor is made of (numel, element_size, is_floating_point). minigrad runs on the CPU: a device
argument may only name it."""

import numpy as np

from .. import dtypes
from ..dtypes import to_array
from ..engine import Function, Tensor
from .args import check_device
from .registry import op


class Cast(Function):
    @staticmethod
    def forward(ctx, x, dtype):
        ctx.dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad.astype(ctx.dtype) if np.issubdtype(ctx.dtype, np.floating) else None


class Clone(Function):
    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, grad):
        return grad


@op(method=False, public=False)
def cast(x, dtype):
    """x as `dtype` (x itself when it has it already); the gradient comes back in x's dtype."""
    dtype = dtypes.as_dtype(dtype)
    return x if x.dtype == dtype else Cast.apply(x, dtype=dtype)


@op
def clone(x):
    """A copy of x that the gradient passes through."""
    return Clone.apply(x)


def as_float(x):
    """x as a float tensor: float-valued ops on int or bool tensors give the default float
    (torch)."""
    x = x if isinstance(x, Tensor) else Tensor._wrap(to_array(x))
    return cast(x, dtypes.float_result(x.dtype))


def operand_as(x, dtype):
    """An operand (tensor, array or number) as a tensor of `dtype`: tensors are cast, the rest
    wrapped."""
    if isinstance(x, Tensor):
        return cast(x, dtype)
    return Tensor._wrap(
        np.asarray(x if isinstance(x, dtypes.NUMBERS) else to_array(x), dtype=dtype)
    )


DEVICES = ("cpu", "cuda", "mps", "xpu", "meta")


@op(public=False)
def to(x, *args, dtype=None, device=None, copy=False, non_blocking=False):
    """x.to(dtype), x.to(other_tensor), x.to("cpu"), x.to("cpu", dtype), as in torch. The result is
    x itself when nothing changes (unless copy=True); a cast keeps the gradient flowing."""
    for arg in args:
        if isinstance(arg, Tensor):
            dtype = dtype or arg.dtype
        elif str(arg).split(":")[0] in DEVICES:  # a device string or an mg.device
            device = arg
        else:
            dtype = arg
    check_device(device, "to")
    result = x if dtype is None else cast(x, dtype)
    return clone(result) if copy and result is x else result


@op(public=False)
def type_as(x, other):
    """x cast to other's dtype."""
    return cast(x, other.dtype)


@op(public=False)
def contiguous(x):
    """x itself when its array is C-contiguous, else a C-contiguous copy (the gradient passes
    through)."""
    return x if x._data.flags.c_contiguous else Clone.apply(x)


@op(method=False)
def numel(x):
    """The number of elements."""
    return x.numel()


@op(public=False)
def element_size(x):
    """Bytes per element."""
    return x.dtype.itemsize


@op
def is_floating_point(x):
    return dtypes.is_float(x.dtype)
