"""How an in-place change is made: apply_inplace(x, name, op, *operands), which every in-place op
calls (`x[idx] = value`, `x.add_(y)`, `x.zero_()`, `x.index_add_(...)`: inplace_methods.py; the
random fills `x.uniform_()`, `x.normal_()` ...: random_fills.py; F.relu(x, inplace=True)).

An in-place op computes its result with the out-of-place op, then puts the result into x:
- when a graph is recorded (grad mode on and x or an operand requires grad), x takes over the
  result's array and graph node, so gradients flow through the change as in PyTorch. A leaf
  that requires grad cannot be changed this way (its gradient would lose its meaning): do it
  under `mg.no_grad()`, as optimizers and initialisers do. When x views another tensor's
  memory (y[0], y.view(...), y.t() ...), the tensor it views takes the change instead, as a
  node of its own (WriteIntoView: y with that region replaced). Either way every live view of
  the changed tensor (x among them) becomes a view of its new array (ViewOf), so that y, x and
  views taken earlier all see the change, as in PyTorch.
- otherwise the result is written into x's own array (every view of it sees the change).
Either way x's version goes up, and a backward that needs x's old values raises.
"""

import numpy as np

from .. import autograd
from ..errors import DTypeError, ShapeError
from ..engine import Function, Tensor, inference
from ..engine.views import shares_memory
from .conversion import cast


def records_graph(x, operands):
    """Whether changing x with these operands records a graph node (grad mode on and x or an
    operand requiring grad)."""
    return autograd.is_grad_enabled() and (
        x.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in operands)
    )


def _alias(x):
    """A second Tensor object standing for x's current value and graph position."""
    alias = Tensor._wrap(x._data, requires_grad=x.requires_grad)
    alias._node, alias._output_index, alias._version = x._node, x._output_index, [x._version[0]]
    return alias


# -- a view changed in place while a graph is recorded ---------------------------------------


def _viewed(x):
    """[x, the tensor x views, the tensor that one views, ..., the root], the root viewing none."""
    chain = [x]
    while chain[-1]._view_of is not None:
        chain.append(chain[-1]._view_of)
    return chain


def _region(array, spec):
    """The view described by spec = (byte offset, shape, strides) into a dense array laid out
    like the root the spec was taken from."""
    offset, shape, strides = spec
    memory = array.ravel(order="K")  # a dense array: a view of its memory in order
    return np.lib.stride_tricks.as_strided(memory[offset // array.itemsize :], shape, strides)


def _spec(view, root):
    return (
        view.__array_interface__["data"][0] - root.__array_interface__["data"][0],
        view.shape,
        view.strides,
    )


class WriteIntoView(Function):
    """out = root with the region a view of it covers replaced by value; d root = grad with that
    region 0, d value = grad's region."""

    @staticmethod
    def forward(ctx, root, value, spec):
        ctx.spec, ctx.order = spec, "C" if root.flags.c_contiguous else "F"
        out = np.array(root, order=ctx.order)
        _region(out, spec)[...] = value
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_root = np.array(grad, order=ctx.order)
        region = _region(grad_root, ctx.spec)
        grad_value = region.copy()
        region[...] = 0
        return grad_root, grad_value


class ViewOf(Function):
    """A view of root's array (the region spec describes); d root = grad placed in that region."""

    @staticmethod
    def forward(ctx, root, spec):
        ctx.spec, ctx.order, ctx.shape = spec, "C" if root.flags.c_contiguous else "F", root.shape
        return _region(root, spec)

    @staticmethod
    def backward(ctx, grad):
        grad_root = np.zeros(ctx.shape, grad.dtype, order=ctx.order)
        offset, shape, strides = ctx.spec
        repeated = tuple(
            k for k, (size, stride) in enumerate(zip(shape, strides)) if stride == 0 and size > 1
        )
        if repeated:  # an expanded view: its copies of an element add up
            grad = grad.sum(axis=repeated, keepdims=True)
            shape = tuple(1 if k in repeated else size for k, size in enumerate(shape))
        _region(grad_root, (offset, shape, strides))[...] = grad
        return grad_root


def _dense_order(array):
    return "C" if array.flags.c_contiguous else "F" if array.flags.f_contiguous else None


def _live_views(root):
    """[(view, spec)] of the views of root's current array still alive, taken before it changes."""
    if root._views is None or _dense_order(root._data) is None:
        return []
    live = []
    for ref in root._views:
        view = ref()
        if view is not None and shares_memory(view._data, root._data):
            live.append((view, _spec(view._data, root._data)))
    return live


def _rebind(root, views):
    """Make each (view, spec) a ViewOf view of root's new array: every view sees the change."""
    for view, spec in views:
        fresh = ViewOf.apply(root, spec=spec)
        view._data, view._node, view._output_index = fresh._data, fresh._node, fresh._output_index
        view._requires_grad, view._view_of = fresh._requires_grad, root


def _write_into_root(chain, result, name):
    """Give the root of chain (x, ..., root) the in-place result of its view x, as a
    WriteIntoView node; the caller then rebinds the views of the root."""
    root = chain[-1]
    if _dense_order(root._data) is None:
        raise RuntimeError(
            f"{name}: this tensor views an array that is itself strided (not made by minigrad); "
            f"clone() the tensor it comes from before changing a view of it in place"
        )
    if 0 in chain[0]._data.strides and chain[0]._data.size > 1:
        raise RuntimeError(
            f"{name}: an expanded view repeats elements and cannot be changed in place; clone() it"
        )
    updated = WriteIntoView.apply(_alias(root), result, spec=_spec(chain[0]._data, root._data))
    root._data, root._node, root._output_index = updated._data, updated._node, updated._output_index
    root._requires_grad = True


def apply_inplace(x, name, op, *operands):
    """x <- op(x, *operands), in place; returns x."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor; got {type(x).__name__}")
    inference.refuse_inplace(x)  # before the change, not after it (bumping checks too)
    chain = [x]
    if records_graph(x, operands):
        chain = _viewed(x)
        if chain[-1].is_leaf and chain[-1].requires_grad:
            what = "a leaf tensor" if len(chain) == 1 else "a view of a leaf tensor"
            raise RuntimeError(
                f"{name}: {what} that requires grad cannot be changed in place while gradients are "
                "recorded; wrap the change in `with mg.no_grad():`, or use the out-of-place op"
            )
        result = op(_alias(x), *operands)
    else:
        with autograd.no_grad():
            result = op(x, *operands)
    if result.shape != x.shape:
        raise ShapeError(
            f"{name}: the result has shape {result.shape}, which does not fit in place into a "
            f"tensor of shape {x.shape}"
        )
    if result.dtype != x.dtype:
        if not np.can_cast(result.dtype, x.dtype, casting="same_kind"):
            raise DTypeError(
                f"{name}: a result of dtype {result.dtype} cannot be written into a tensor of "
                f"dtype {x.dtype}"
            )
        result = cast(result, x.dtype)
    # a recorded change: x (or the tensor x views) takes a new array and node
    if result._node is not None:
        root = chain[-1]
        views = _live_views(root)  # where they sit in root's array, before it changes
        if len(chain) > 1:
            _write_into_root(chain, result, name)
        else:
            order = _dense_order(x._data)
            data = (
                result._data
                if not views or _dense_order(result._data) == order
                else np.array(result._data, order=order)
            )
            x._data, x._node, x._output_index = data, result._node, result._output_index
            x._requires_grad = True
        _rebind(root, views)
    else:
        if not x._data.flags.writeable:
            raise RuntimeError(
                f"{name}: this tensor's array is read-only (an expanded or broadcast view); "
                f"clone() it first"
            )
        np.copyto(x._data, result._data)
    x._bump_version()
    return x
