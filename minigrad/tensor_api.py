"""The rest of torch's Tensor API, beside the engine: attached to minigrad.engine.Tensor.

The engine's Tensor (engine/tensor.py) holds what backprop needs. What a program also asks of
a tensor is here, attached to the class when minigrad is imported: `.data`, `T`, `size()`,
`numel()`, `dim()`, `numpy()`, `item()`, `tolist()`, the Python conversions (`float(t)`,
`len(t)`, `f"{t:.4f}"`, `bool(t)`, `t` as an index), version bumps for in-place changes, and
gradient hooks (`register_hook`, `retain_grad`, and the `GradientTap` node of
nn.Module's full backward hooks). The ops are attached in ops/__init__.py, the
device questions in device.py.
"""

import numpy as np

from . import dtypes
from .engine import Function, Tensor, inference
from .errors import DimError, DTypeError, ShapeError

# -- .data and in-place versions ---------------------------------------------------------------


def _get_data(self):
    """This tensor outside the graph, as torch's `.data`: a new tensor that shares the array
    and needs no gradient, so `p.data.add_(g, alpha=-lr)` changes `p` itself. It also shares
    the version counter: a backward that saved `p` before such a change still refuses (torch
    would not notice). `numpy()` is the array; assigning `p.data = t` is an in-place change."""
    return self.detach()


def _set_data(self, value):
    value = value._data if isinstance(value, Tensor) else value
    if not isinstance(value, np.ndarray):
        raise TypeError(
            f"Tensor.data must be a numpy array or a Tensor; got {type(value).__name__}"
        )
    dtypes.as_dtype(value.dtype)
    if self._requires_grad and value.dtype.kind != "f":
        raise DTypeError(
            f"Tensor.data: this tensor requires grad, so it needs a float array; got {value.dtype}"
        )
    self._data = value
    self._bump_version()


def _bump_version(self):
    """Note an in-place change of this tensor's array (versions.py reads the counter)."""
    inference.refuse_inplace(self)
    self._version[0] += 1


def is_inference(self):
    """True for a tensor made inside mg.inference_mode() (or a view of one), as in torch."""
    return self._inference


# -- sizes and values --------------------------------------------------------------------------


def size(self, dim=None):
    if dim is None:
        return self.shape
    if not -max(self.ndim, 1) <= dim < max(self.ndim, 1) or self.ndim == 0:
        raise DimError(f"size: dim {dim} is out of range for a tensor with {self.ndim} dims")
    return self.shape[dim]


def numel(self):
    return self._data.size


def dim(self):
    return self.ndim


def numpy(self):
    """The underlying array (shared, not copied)."""
    return self._data


def item(self):
    if self._data.size != 1:
        raise ShapeError(f"item() needs a tensor with one element; got shape {self.shape}")
    return self._data.item()


def tolist(self):
    return self._data.tolist()


def _transpose(self):
    return self.permute(*reversed(range(self.ndim)))


# -- Python's conversions ----------------------------------------------------------------------


def __array__(self, dtype=None, copy=None):
    if dtype is not None and np.dtype(dtype) != self.dtype:
        return self._data.astype(dtype)
    return self._data.copy() if copy else self._data


def __len__(self):
    if self.ndim == 0:
        raise TypeError("len() of a 0-d tensor")
    return self.shape[0]


def __float__(self):
    return float(self.item())


def __int__(self):
    return int(self.item())


def __format__(self, spec):
    """f"{loss:.4f}": a 0-d tensor formats as its number, as in torch (others: empty spec)."""
    if self.ndim == 0:
        return format(self.item(), spec)
    if spec:
        raise TypeError(
            f"unsupported format string {spec!r} for a tensor of shape {self.shape}; "
            "only a 0-d tensor formats as a number (use .item() or .tolist())"
        )
    return str(self)


def __index__(self):
    if self.dtype.kind not in "iu" or self._data.size != 1:
        raise TypeError(
            "only integer tensors of a single element can be used as an index; "
            f"got dtype {self.dtype}, shape {self.shape}"
        )
    return int(self._data.item())


def __bool__(self):
    if self._data.size != 1:
        raise RuntimeError(
            f"the truth value of a tensor with {self._data.size} elements is ambiguous"
        )
    return bool(self._data.item())


# -- gradient hooks ----------------------------------------------------------------------------


def register_hook(self, hook):
    """Call hook(grad) with this tensor's gradient each time backward computes it (for a leaf,
    once per backward, with the sum over its uses); a tensor it returns replaces the
    gradient. Returns a handle whose remove() takes the hook off, as in torch."""
    if not self._requires_grad:
        raise RuntimeError(
            "register_hook: this tensor does not require grad, so it gets no gradient to hook"
        )
    if not callable(hook):
        raise TypeError(
            f"register_hook: expected a function of the gradient; got {type(hook).__name__}"
        )
    if self._node is None:
        if self._hooks is None:
            self._hooks = []
        hooks, what = self._hooks, "a leaf"
    else:  # the gradient of a non-leaf arrives at the node that made it (grad_sinks.py)
        hooks = self._node.__dict__.setdefault("_hooks", {}).setdefault(self._output_index, [])
        what = f"an output of {self._node.name}"
    on_array = _ArrayHook(hook, self.shape, what)
    hooks.append(on_array)
    return HookHandle(hooks, on_array)


def retain_grad(self):
    """Keep `.grad` on this non-leaf tensor after backward (leaves always keep it)."""
    self._retains_grad = True
    return self


class _ArrayHook:
    """A user's gradient hook (a function of a Tensor that returns None or a replacement) as
    the walk calls it: on the gradient array, returning the array to pass on."""

    def __init__(self, hook, shape, what):
        self.hook, self.shape, self.what = hook, tuple(shape), what

    def __call__(self, grad):
        recorded = isinstance(grad, Tensor)  # create_graph=True: the gradient is a Tensor
        result = self.hook(grad if recorded else Tensor._wrap(grad))
        if result is None:
            return grad
        if not isinstance(result, Tensor):
            raise TypeError(
                f"a gradient hook on {self.what} must return None or a Tensor; "
                f"got {type(result).__name__}"
            )
        if result.shape != self.shape or result.dtype != grad.dtype:
            raise RuntimeError(
                f"a gradient hook on {self.what} returned a {result.dtype} tensor of shape "
                f"{result.shape}; expected {grad.dtype} of shape {self.shape}"
            )
        return result if recorded else result._data


class HookHandle:
    """What register_hook returns: remove() takes the hook off (again: nothing happens)."""

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


class GradientTap(Function):
    """The identity on several tensors as one graph node, whose backward hands their gradients,
    all at once, to `on_backward` and passes on what it returns (an array or None per tensor).
    nn.Module's full backward hooks (nn/hooks.py) put one around a call's tensor inputs and
    one around its outputs, as torch's BackwardHookFunction. Each output views its input, so
    that an in-place change through it reaches the tensor behind it, as it would without it."""

    @staticmethod
    def forward(ctx, *arrays, on_backward):
        ctx.on_backward = on_backward
        return tuple(array.view() for array in arrays)

    @staticmethod
    def backward(ctx, *grads):
        return tuple(ctx.on_backward(grads))


_ATTACHED = (_bump_version, is_inference, size, numel, dim, numpy, item, tolist)
_ATTACHED += (register_hook, retain_grad, __array__, __len__, __float__, __int__)
_ATTACHED += (__format__, __index__, __bool__)
for _function in _ATTACHED:
    setattr(Tensor, _function.__name__, _function)
Tensor.data = property(_get_data, _set_data, doc=_get_data.__doc__)
Tensor.T = property(_transpose)
Tensor.__hash__ = object.__hash__
