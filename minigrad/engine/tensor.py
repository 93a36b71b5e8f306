"""Tensor: the first file of the engine.

A Tensor is a numpy array (`_data`), a flag saying whether it wants a gradient
(`requires_grad`), a slot for that gradient (`grad`, filled by `backward()`), and the graph
node that made it (`_node`, with `_output_index` for ops that have several outputs). A tensor
made by the user is a *leaf*: it has no node. A tensor made by an op has the op's node, a
`Function` (function.py, the file to read next), which remembers the op's inputs.

`backward()` hands the graph to the walk (walk.py). Everything else a Tensor can do is
attached to this class from other files, so that this one stays the engine's core:
the ops as methods (`x.exp()`, `x + y`: ops/__init__.py), the rest of torch's Tensor API
(`.data`, `item()`, `register_hook` ...: tensor_api.py), and the device questions (device.py).
"""

import numpy as np

from .. import dtypes
from ..errors import DTypeError, ShapeError
from . import grad_mode, grad_sinks, walk


class Tensor:
    """An n-dimensional array that can take part in automatic differentiation.

    `numpy()` is the numpy array, `grad` a Tensor of the same shape after `backward()` (or
    None), `grad_fn` the graph node that produced it (None for leaves and for tensors made under
    `no_grad`). `name` is an optional label that `mg.viz` shows. Tensor(data) copies `data` (as
    torch.tensor does); mg.from_numpy shares it.
    """

    __slots__ = ("_data", "_requires_grad", "grad", "name", "_node", "_output_index")
    # beside the engine: versions.py, views.py, inference.py, tensor_api.py (hooks)
    __slots__ += ("_version", "_view_of", "_views", "_inference", "_retains_grad", "_hooks")
    __slots__ += ("__weakref__",)
    __array_priority__ = 1000  # numpy array (op) Tensor -> Tensor's reflected method

    def __init__(self, data, requires_grad=False, dtype=None, name=None):
        if isinstance(data, Tensor):
            data = data._data
        self._setup(np.array(dtypes.to_array(data, dtype), copy=True), name)
        if requires_grad:
            self.requires_grad_(True)

    def _setup(self, array, name=None):
        self._data = array
        self._requires_grad = False
        self.grad = None
        self.name = name
        self._node = None
        self._output_index = 0
        self._version = [0]  # a box: tensors that share an array (detach, views) share it
        self._view_of = None  # views.py: the tensor whose array this one views
        self._views = None  # views.py: on a tensor that views none, its views (weak)
        self._inference = grad_mode.is_inference_mode_enabled()  # inference.py
        self._retains_grad = False  # retain_grad() was called
        self._hooks = None  # a leaf's gradient hooks (register_hook)

    @classmethod
    def _wrap(cls, array, requires_grad=False):
        """A tensor around `array` as it is: no copy, no checks (for arrays minigrad made)."""
        tensor = cls.__new__(cls)
        tensor._setup(array)
        tensor._requires_grad = requires_grad
        return tensor

    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        if requires_grad and self.dtype.kind != "f":
            raise DTypeError(
                "only floating point tensors (float32, float64) can require gradients; "
                f"this tensor has dtype {self.dtype}"
            )
        if requires_grad and self._inference and not grad_mode.is_inference_mode_enabled():
            raise RuntimeError(
                "requires_grad_: this tensor was made inside mg.inference_mode(), so it cannot "
                "require grad outside it (as in torch); use a clone() of it"
            )
        if not requires_grad and self._node is not None:
            raise RuntimeError(
                "requires_grad can only be switched off on leaf tensors; use detach()"
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._node

    @property
    def is_leaf(self):
        return self._node is None

    def detach(self):
        """A new leaf sharing the same array (and version counter), cut from the graph."""
        tensor = Tensor._wrap(self._data)
        tensor._version, tensor._inference = self._version, self._inference
        return tensor

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """Add d(self)/d(leaf) to `leaf.grad` for every leaf that requires grad. `gradient` is
        d(loss)/d(self), of self's shape; it may be left out when self is a single number.
        create_graph=True records the backward, so `.grad` has a graph (higher_order.py)."""
        if create_graph:
            return self._backward_recorded(gradient, retain_graph)
        gradient = self._start_gradient(gradient, "backward()")
        walk.backward_from(self, gradient, bool(retain_graph), grad_sinks.AccumulateGrads())

    def _start_gradient(self, gradient, caller):
        """The gradient a backward from this tensor starts with, as an array of its shape."""
        if not self._requires_grad:
            raise RuntimeError(
                f"{caller} called on a tensor that does not require grad "
                "(no input had requires_grad=True, or it was computed under no_grad)"
            )
        if gradient is None:
            if self._data.size != 1:
                raise RuntimeError(
                    f"{caller} without a gradient argument needs a scalar output; got shape "
                    f"{self.shape}. Pass a gradient of that shape, or reduce first (.sum())."
                )
            return np.ones_like(self._data)
        if isinstance(gradient, Tensor):
            gradient = gradient._data
        gradient = np.asarray(gradient, dtype=self.dtype)
        if gradient.shape != self.shape:
            raise ShapeError(
                f"{caller}: gradient shape {gradient.shape} does not match output shape "
                f"{self.shape}"
            )
        return gradient

    def _add_to_grad(self, grad, owned=False):
        """grad (an array) added to `.grad`; owned: an array of this dtype that nothing else
        refers to, which can become `.grad` without a copy (grad_sinks.accumulate calls this)."""
        if isinstance(grad, Tensor):  # create_graph=True: `.grad` keeps the gradient's graph
            self.grad = grad if self.grad is None else self.grad + grad
        elif self.grad is None:
            array = grad if owned else np.array(grad, dtype=self.dtype, copy=True)
            self.grad = Tensor._wrap(array)
        else:
            self.grad._data = self.grad._data + grad

    def __repr__(self):
        body = np.array2string(
            self._data, separator=", ", prefix="tensor(", precision=4, threshold=200, edgeitems=3
        )
        extras = []
        if self.dtype not in (dtypes.get_default_dtype(), dtypes.int64, dtypes.bool_):
            extras.append(f"dtype={self.dtype}")
        if self._node is not None:
            extras.append(f"grad_fn={self._node!r}")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body] + extras) + ")"
