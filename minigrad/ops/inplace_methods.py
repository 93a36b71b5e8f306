"""The in-place ops a Tensor has: `x[index] = value` (setitem) and the named methods `x.add_(y)`,
`x.zero_()`, `x.exp_()`, `x.index_add_(...)`, `x.uniform_()` ... (METHODS, attached to Tensor
by attach_methods, with the operators +=, -=, *=, /=). Each computes the out-of-place op's
result and hands it to apply_inplace (inplace.py), which puts it into x.
"""

import numpy as np

from ..engine import Function, Tensor, inference
from ..errors import ArgumentError, ShapeError
from .args import as_array
from .arithmetic import add, addcdiv, addcmul, div, lerp, mul, neg, pow, reciprocal, sub
from .conversion import cast
from .index_write import index_add, index_copy, index_fill, scatter_reduce
from .indexing import assign, list_index_as_tuple, scatter, scatter_add, select, split_index
from .inplace import apply_inplace, records_graph
from .piecewise import clamp, masked_fill, where
from .random_fills import bernoulli_, exponential_, normal_, random_, uniform_
from . import activations, pointwise, unary
from .pointwise import rsqrt, square


# -- x[index] = value ----------------------------------------------------------------------


class IndexPut(Function):
    """out = x with out[index] = value; d x = grad with the written places zeroed, d value =
    grad[index]."""

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
    inference.refuse_inplace(x)
    index = list_index_as_tuple(index)
    parts = split_index(index)  # (first, then): torch applies integers before index arrays
    value = (
        value
        if isinstance(value, Tensor)
        else Tensor._wrap(np.asarray(as_array(value), dtype=x.dtype))
    )
    try:
        target = select(np.empty(x.shape, dtype=np.bool_), *parts)  # the shape the index selects
        # torch drops leading 1s: a[1] = t([5.])
        while value.ndim > target.ndim and value.shape[0] == 1:
            value = value.reshape(value.shape[1:])
        np.broadcast_to(np.empty(value.shape), target.shape)
    except IndexError as error:
        raise IndexError(
            f"index {index!r} does not fit a tensor of shape {x.shape}: {error}"
        ) from None
    except ValueError:
        raise ShapeError(
            f"setitem: a value of shape {value.shape} does not fit the {target.shape} "
            f"elements selected in a tensor of shape {x.shape}"
        ) from None
    if not records_graph(x, (value,)):
        if not x._data.flags.writeable:
            raise RuntimeError(
                "setitem: this tensor's array is read-only (an expanded or broadcast view); "
                "clone() it first"
            )
        assign(x._data, *parts, value._data)  # the common case: no copy of x
        x._bump_version()
        return
    apply_inplace(
        x, "setitem", lambda x_, v: IndexPut.apply(x_, cast(v, x.dtype), index=parts), value
    )


# -- the named in-place methods ------------------------------------------------------------


def _fill(x, value):
    if np.ndim(value._data if isinstance(value, Tensor) else value):
        raise ArgumentError(
            f"fill_: value must be a number or a 0-d tensor; got shape {np.shape(value)}"
        )
    if not isinstance(value, Tensor):
        value = as_array(value).item()
    # a 0-d tensor value that requires grad gets its gradient
    return masked_fill(x, np.ones((), np.bool_), value)


def _copy(x, source):
    """source broadcast to x's shape, as a result that depends on x with no gradient to it: a
    recorded copy_ cuts x's old history (as fill_ does), and source gets its gradient."""
    source = source if isinstance(source, Tensor) else Tensor._wrap(np.asarray(source))
    return where(np.ones((), np.bool_), cast(source, x.dtype), x)


def _unary_in_place(op):
    """x.exp_() and its kind: op's result written into x."""
    name = f"{op.__name__}_"
    return lambda x: apply_inplace(x, name, op)


METHODS = {
    "add_": lambda x, other, alpha=1: apply_inplace(
        x, "add_", lambda a, b: add(a, b if alpha == 1 else mul(b, alpha)), other
    ),
    "sub_": lambda x, other, alpha=1: apply_inplace(
        x, "sub_", lambda a, b: sub(a, b if alpha == 1 else mul(b, alpha)), other
    ),
    "mul_": lambda x, other: apply_inplace(x, "mul_", mul, other),
    "div_": lambda x, other: apply_inplace(x, "div_", div, other),
    "zero_": lambda x: apply_inplace(x, "zero_", _fill, 0),
    "fill_": lambda x, value: apply_inplace(x, "fill_", _fill, value),
    "copy_": lambda x, source: apply_inplace(x, "copy_", _copy, source),
    "masked_fill_": lambda x, mask, value: apply_inplace(
        x, "masked_fill_", masked_fill, mask, value
    ),
    "clamp_": lambda x, min=None, max=None: apply_inplace(x, "clamp_", clamp, min, max),
    "clamp_min_": lambda x, min: apply_inplace(x, "clamp_min_", clamp, min, None),
    "clamp_max_": lambda x, max: apply_inplace(x, "clamp_max_", clamp, None, max),
    "pow_": lambda x, exponent: apply_inplace(x, "pow_", pow, exponent),
    # the steps of hand-written optimizers: exp_avg.lerp_(grad, 0.1), addcmul_, addcdiv_
    "lerp_": lambda x, end, weight: apply_inplace(x, "lerp_", lerp, end, weight),
    "addcmul_": lambda x, tensor1, tensor2, *, value=1: apply_inplace(
        x, "addcmul_", lambda a, t1, t2: addcmul(a, t1, t2, value=value), tensor1, tensor2
    ),
    "addcdiv_": lambda x, tensor1, tensor2, *, value=1: apply_inplace(
        x, "addcdiv_", lambda a, t1, t2: addcdiv(a, t1, t2, value=value), tensor1, tensor2
    ),
    **{
        f"{op.__name__}_": _unary_in_place(op)
        for op in (
            unary.exp,
            pointwise.log,
            pointwise.sqrt,
            rsqrt,
            unary.tanh,
            activations.sigmoid,
            activations.relu,
            neg,
            pointwise.abs,
            square,
            reciprocal,
        )
    },
    "scatter_": lambda x, dim, index, src=None, value=None: apply_inplace(
        x, "scatter_", lambda a, s: scatter(a, dim, index, s, value), src
    ),
    "scatter_add_": lambda x, dim, index, src: apply_inplace(
        x, "scatter_add_", lambda a, s: scatter_add(a, dim, index, s), src
    ),
    "scatter_reduce_": lambda x, dim, index, src, reduce, *, include_self=True: apply_inplace(
        x,
        "scatter_reduce_",
        lambda a, s: scatter_reduce(a, dim, index, s, reduce, include_self=include_self),
        src,
    ),
    "index_add_": lambda x, dim, index, source, *, alpha=1: apply_inplace(
        x, "index_add_", lambda a, s: index_add(a, dim, index, s, alpha=alpha), source
    ),
    "index_copy_": lambda x, dim, index, source: apply_inplace(
        x, "index_copy_", lambda a, s: index_copy(a, dim, index, s), source
    ),
    "index_fill_": lambda x, dim, index, value: apply_inplace(
        x, "index_fill_", lambda a, v: index_fill(a, dim, index, v), value
    ),
    "uniform_": uniform_,
    "normal_": normal_,
    "exponential_": exponential_,
    "bernoulli_": bernoulli_,
    "random_": random_,
}


def attach_methods(tensor_class):
    for name, method in METHODS.items():
        method.__name__ = name
        setattr(tensor_class, name, method)
    tensor_class.__iadd__ = METHODS["add_"]
    tensor_class.__isub__ = METHODS["sub_"]
    tensor_class.__imul__ = METHODS["mul_"]
    tensor_class.__itruediv__ = METHODS["div_"]
