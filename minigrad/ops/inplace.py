"""In-place changes: `x[idx] = value`, `x.add_(y)`, `x.zero_()` ... and the version counter.

An in-place op computes its result with the out-of-place op, then puts the result into x:
- when a graph is recorded (grad mode on and x or an operand requires grad), x takes over the
  result's array and graph node, so gradients flow through the change as in PyTorch. A leaf
  that requires grad cannot be changed this way (its gradient would lose its meaning): do it
  under `mg.no_grad()`, as optimizers and initialisers do.
- otherwise the result is written into x's own array (every view of it sees the change).
Either way x's version goes up, and a backward that needs x's old values raises.
"""

import numpy as np

from .. import autograd
from ..errors import ArgumentError, DTypeError, ShapeError
from ..tensor import Function, Tensor
from .args import as_array
from .elementwise import add, cast, clone, div, masked_fill, mul, sub
from .indexing import assign, scatter, scatter_add, select, split_index
from .math import clamp


def _recording(x, operands):
    return autograd.is_grad_enabled() and (
        x.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in operands))


def _alias(x):
    """A second Tensor object standing for x's current value and graph position."""
    alias = Tensor._wrap(x._data, requires_grad=x.requires_grad)
    alias._node, alias._output_index, alias._version = x._node, x._output_index, [x._version[0]]
    return alias


def apply_inplace(x, name, op, *operands):
    """x <- op(x, *operands), in place; returns x."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor; got {type(x).__name__}")
    if _recording(x, operands):
        if x.is_leaf and x.requires_grad:
            raise RuntimeError(f"{name}: a leaf tensor that requires grad cannot be changed in place while "
                               f"gradients are recorded; wrap the change in `with mg.no_grad():`, or use the "
                               f"out-of-place op")
        result = op(_alias(x), *operands)
    else:
        with autograd.no_grad():
            result = op(x, *operands)
    if result.shape != x.shape:
        raise ShapeError(f"{name}: the result has shape {result.shape}, which does not fit in place into a "
                         f"tensor of shape {x.shape}")
    if result.dtype != x.dtype:
        if not np.can_cast(result.dtype, x.dtype, casting="same_kind"):
            raise DTypeError(f"{name}: a result of dtype {result.dtype} cannot be written into a tensor of "
                             f"dtype {x.dtype}")
        result = cast(result, x.dtype)
    if result._node is not None:
        x._data, x._node, x._output_index = result._data, result._node, result._output_index
        x._requires_grad = True
    else:
        if not x._data.flags.writeable:
            raise RuntimeError(f"{name}: this tensor's array is read-only (an expanded or broadcast view); "
                               f"clone() it first")
        np.copyto(x._data, result._data)
    x._bump_version()
    return x


# -- x[index] = value ----------------------------------------------------------------------

class IndexPut(Function):
    """out = x with out[index] = value; d x = grad with the written places zeroed, d value = grad[index]."""

    @staticmethod
    def forward(ctx, x, value, index):
        ctx.index = index
        out = x.copy()
        assign(out, *index, value)
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_x = grad.copy()
        assign(grad_x, *ctx.index, 0)
        return grad_x, select(grad, *ctx.index)


def setitem(x, index, value):
    """x[index] = value with torch's indexing rules (slices, ints, bool masks, integer arrays);
    differentiable in x and value like torch's."""
    parts = split_index(index)  # (first, then): torch applies integers before index arrays
    value = value if isinstance(value, Tensor) else Tensor._wrap(np.asarray(as_array(value), dtype=x.dtype))
    try:
        target = select(np.empty(x.shape, dtype=np.bool_), *parts)  # the shape the index selects
        while value.ndim > target.ndim and value.shape[0] == 1:  # torch drops leading 1s: a[1] = t([5.])
            value = value.reshape(value.shape[1:])
        np.broadcast_to(np.empty(value.shape), target.shape)
    except IndexError as error:
        raise IndexError(f"index {index!r} does not fit a tensor of shape {x.shape}: {error}") from None
    except ValueError:
        raise ShapeError(f"setitem: a value of shape {value.shape} does not fit the {target.shape} "
                         f"elements selected in a tensor of shape {x.shape}") from None
    if not _recording(x, (value,)):
        assign(x._data, *parts, value._data)  # the common case: no copy of x
        x._bump_version()
        return
    apply_inplace(x, "setitem", lambda x_, v: IndexPut.apply(x_, cast(v, x.dtype), index=parts), value)


# -- the named in-place methods ------------------------------------------------------------

def _fill(x, value):
    value = as_array(value)
    if value.ndim:
        raise ArgumentError(f"fill_: value must be a number or a 0-d tensor; got shape {value.shape}")
    return masked_fill(x, np.ones((), np.bool_), value.item())


def _copy(x, source):
    source = source if isinstance(source, Tensor) else Tensor._wrap(np.asarray(source))
    return add(Tensor._wrap(np.zeros(x.shape, x.dtype)), cast(source, x.dtype))  # broadcast; grad to source


METHODS = {
    "add_": lambda x, other, alpha=1: apply_inplace(x, "add_", lambda a, b: add(a, b if alpha == 1 else mul(b, alpha)), other),
    "sub_": lambda x, other, alpha=1: apply_inplace(x, "sub_", lambda a, b: sub(a, b if alpha == 1 else mul(b, alpha)), other),
    "mul_": lambda x, other: apply_inplace(x, "mul_", mul, other),
    "div_": lambda x, other: apply_inplace(x, "div_", div, other),
    "zero_": lambda x: apply_inplace(x, "zero_", _fill, 0),
    "fill_": lambda x, value: apply_inplace(x, "fill_", _fill, value),
    "copy_": lambda x, source: apply_inplace(x, "copy_", _copy, source),
    "masked_fill_": lambda x, mask, value: apply_inplace(x, "masked_fill_", masked_fill, mask, value),
    "clamp_": lambda x, min=None, max=None: apply_inplace(x, "clamp_", clamp, min, max),
    "scatter_": lambda x, dim, index, src=None, value=None: apply_inplace(
        x, "scatter_", lambda a, s: scatter(a, dim, index, s, value), src),
    "scatter_add_": lambda x, dim, index, src: apply_inplace(
        x, "scatter_add_", lambda a, s: scatter_add(a, dim, index, s), src),
}


def attach_methods(tensor_class):
    for name, method in METHODS.items():
        method.__name__ = name
        setattr(tensor_class, name, method)
    tensor_class.__iadd__ = METHODS["add_"]
    tensor_class.__isub__ = METHODS["sub_"]
    tensor_class.__imul__ = METHODS["mul_"]
    tensor_class.__itruediv__ = METHODS["div_"]
