"""In-place changes: `x[idx] = value`, `x.add_(y)`, `x.zero_()`, `x.index_add_(...)`, the random
fills `x.uniform_()`, `x.normal_()` ... and the version counter.

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

from .. import autograd, dtypes
from ..errors import ArgumentError, DTypeError, ShapeError
from ..engine import Function, Tensor, inference
from ..engine.views import shares_memory
from .args import as_array
from ..random import generator as draw_from
from .arithmetic import add, div, lerp, mul, neg, pow, sub
from .conversion import cast
from .piecewise import masked_fill, where
from .index_write import index_add, index_copy, index_fill, scatter_reduce
from .indexing import assign, list_index_as_tuple, scatter, scatter_add, select, split_index
from .arithmetic import reciprocal
from .piecewise import clamp
from .products import addcdiv, addcmul
from . import activations, pointwise, unary
from .pointwise import rsqrt, square
from .registry import op


def _recording(x, operands):
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
    if _recording(x, operands):
        chain = _viewed(x)
        if chain[-1].is_leaf and chain[-1].requires_grad:
            what = "a leaf tensor" if len(chain) == 1 else "a view of a leaf tensor"
            raise RuntimeError(
                f"{name}: {what} that requires grad cannot be changed in place while "
                f"gradients are recorded; wrap the change in `with mg.no_grad():`, or use the "
                f"out-of-place op"
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
    if (
        result._node is not None
    ):  # a recorded change: x (or the tensor x views) takes a new array and node
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
        while (
            value.ndim > target.ndim and value.shape[0] == 1
        ):  # torch drops leading 1s: a[1] = t([5.])
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
    if not _recording(x, (value,)):
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
    return masked_fill(
        x, np.ones((), np.bool_), value
    )  # a 0-d tensor value that requires grad gets its gradient


def _copy(x, source):
    """source broadcast to x's shape, as a result that depends on x with no gradient to it: a
    recorded copy_ cuts x's old history (as fill_ does), and source gets its gradient."""
    source = source if isinstance(source, Tensor) else Tensor._wrap(np.asarray(source))
    return where(np.ones((), np.bool_), cast(source, x.dtype), x)


# -- random fills (from minigrad's seeded generator, or generator=) -------------------------


def _fill_with(x, name, draws):
    """x <- draws (an array of x's shape), in place. While recorded, x's old value gets no
    gradient, as after torch's fills."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor; got {type(x).__name__}")
    fresh = Tensor._wrap(np.asarray(draws).astype(x.dtype, copy=False))
    return apply_inplace(x, name, lambda a, values: where(np.ones((), np.bool_), values, a), fresh)


def _float_target(x, name):
    if not isinstance(x, Tensor) or x.dtype.kind != "f":
        raise DTypeError(
            f"{name}: fills a float tensor; got {getattr(x, 'dtype', type(x).__name__)}"
        )


def _number(value, name, what):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: {what} must be a number; got {type(value).__name__} {value!r}")
    return float(value)


def uniform_(x, from_=0.0, to=1.0, *, generator=None):
    """Fill x with draws uniform in [from_, to) (torch's uniform_(from, to))."""
    _float_target(x, "uniform_")
    low, high = _number(from_, "uniform_", "from"), _number(to, "uniform_", "to")
    if not low <= high:
        raise ArgumentError(f"uniform_: expects from <= to; got from={from_}, to={to}")
    return _fill_with(x, "uniform_", draw_from(generator).uniform(low, high, x.shape))


def normal_(x, mean=0.0, std=1.0, *, generator=None):
    """Fill x with normal draws of `mean` and standard deviation `std` (>= 0)."""
    _float_target(x, "normal_")
    mean, std = _number(mean, "normal_", "mean"), _number(std, "normal_", "std")
    if not std >= 0:
        raise ArgumentError(f"normal_: std must be non-negative; got {std}")
    return _fill_with(x, "normal_", draw_from(generator).normal(mean, std, x.shape))


def exponential_(x, lambd=1.0, *, generator=None):
    """Fill x with exponential draws of rate `lambd` (> 0): mean 1 / lambd."""
    _float_target(x, "exponential_")
    rate = _number(lambd, "exponential_", "lambd")
    if not rate > 0:
        raise ArgumentError(f"exponential_: lambd must be positive; got {lambd}")
    return _fill_with(x, "exponential_", draw_from(generator).exponential(1 / rate, x.shape))


def bernoulli_(x, p=0.5, *, generator=None):
    """Fill x with 1 with probability p, else 0 (p a number or a tensor that broadcasts to x)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"bernoulli_: expected a Tensor; got {type(x).__name__}")
    probability = as_array(p)
    if (
        probability.dtype.kind not in "fiu"
        or probability.size
        and not ((probability >= 0) & (probability <= 1)).all()
    ):
        raise ArgumentError(f"bernoulli_: p must be probabilities in [0, 1]; got {p!r}")
    try:
        np.broadcast_to(probability, x.shape)
    except ValueError:
        raise ShapeError(
            f"bernoulli_: p of shape {probability.shape} does not broadcast to {x.shape}"
        ) from None
    return _fill_with(x, "bernoulli_", draw_from(generator).random(x.shape) < probability)


def _integer_range(dtype):
    """[0, top] that random_() draws from: every integer the dtype holds exactly (torch)."""
    if dtype.kind == "f":
        return 2 ** (np.finfo(dtype).nmant + 1) + 1  # the stored mantissa bits and the implicit one
    if dtype == np.bool_:
        return 2
    return int(np.iinfo(dtype).max)


def random_(x, from_=None, to=None, *, generator=None):
    """Fill x with integers uniform in [from_, to); random_(to): [0, to); random_(): every
    non-negative integer x's dtype holds exactly (torch's random_)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"random_: expected a Tensor; got {type(x).__name__}")
    low, high = (0, from_) if to is None else (from_, to)
    for name, bound in (("from", low), ("to", high)):
        if bound is not None and (
            isinstance(bound, bool) or not isinstance(bound, (int, np.integer))
        ):
            raise TypeError(f"random_: {name} must be an int; got {type(bound).__name__} {bound!r}")
    high = _integer_range(x.dtype) if high is None else int(high)
    if not low < high:
        raise ArgumentError(f"random_: expects from < to; got from={low}, to={high}")
    return _fill_with(x, "random_", draw_from(generator).integers(int(low), high, x.shape))


@op(method=False)
def randint_like(x, low=0, high=None, *, dtype=None, requires_grad=False, generator=None):
    """A new tensor of x's shape (and dtype, unless dtype=) of integers uniform in [low, high);
    randint_like(x, high) draws from [0, high) (torch.randint_like; the out-of-place random_)."""
    low, high = (0, low) if high is None else (low, high)
    for name, bound in (("low", low), ("high", high)):
        if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)):
            raise TypeError(
                f"randint_like: {name} must be an int; got {type(bound).__name__} {bound!r}"
            )
    if not low < high:
        raise ArgumentError(f"randint_like: expects low < high; got low={low}, high={high}")
    draws = draw_from(generator).integers(int(low), int(high), x.shape)
    return Tensor._wrap(
        draws.astype(x.dtype if dtype is None else dtypes.as_dtype(dtype)),
        requires_grad=requires_grad,
    )


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
