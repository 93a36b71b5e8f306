"""Tensor, Function and Parameter: the engine floor.

A Tensor wraps a numpy array, says whether it wants a gradient, holds its gradient after
`backward()`, and remembers the graph node that made it. A Function is an op with forward
and backward side by side; each application of it is one graph node, and that node is also
the `ctx` its forward and backward share (as in PyTorch):

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):          # numpy arrays in, numpy array(s) out
            y = np.exp(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):       # one gradient per output in, one per input out
            (y,) = ctx.saved
            return grad * y            # d exp(x) / dx = exp(x)

    Exp.apply(tensor)                  # runs forward, wraps the result, records the node

Broadcasting is undone in one place, `autograd.sum_to`, called by the backward walk: an
op's backward may return a gradient with the broadcast shape.

The arithmetic methods (`x + y`, `x.exp()`, `x.sum(dim)` ...) are thin doors into
`minigrad.ops`; ops/__init__.py attaches them, so this file needs nothing from the ops.
"""

import weakref

import numpy as np

from . import autograd, dtypes
from .errors import DimError, DTypeError, ShapeError


def _scalar_attributes(attrs):
    """The settings of an op worth showing in a drawing (dim=1, scale=0.25): no arrays, which
    would keep masks and index arrays alive for as long as the graph is drawn."""

    def small(value):
        if isinstance(value, tuple):
            return all(small(v) for v in value)
        return isinstance(
            value, (bool, int, float, str, slice, type(None), type(Ellipsis), np.generic)
        )

    return {key: value for key, value in attrs.items() if small(value)}


class Function:
    """Base class of differentiable ops, and the graph node of each application.

    Subclasses define `forward(ctx, *arrays, **attrs)` and `backward(ctx, *grads)` as static
    methods. forward may return one array or a tuple (a multi-output op); backward gets one
    gradient per output (zeros for an output that did not reach the loss) and returns one per
    input (None where not needed; `ctx.needs_input_grad` says which are). Keyword attributes
    are passed to forward only: keep what backward needs on ctx.

    A recorded node holds `inputs` (tensors), `output_meta` ((shape, dtype) per output),
    `module_frame` (the nn.Module call that made it: (module, outer frame), for mg.viz) and `attrs` (its scalar
    settings, for mg.viz). After backward without retain_graph, its saved arrays are freed.
    """

    @staticmethod
    def forward(ctx, *arrays, **attrs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError

    def save_for_backward(self, *arrays):
        self.saved = arrays

    @property
    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name}Backward>"

    @classmethod
    def apply(cls, *inputs, **attrs):
        tensors = tuple(x if isinstance(x, Tensor) else _as_constant(x, inputs) for x in inputs)
        ctx = cls.__new__(cls)
        ctx.needs_input_grad = tuple(t.requires_grad for t in tensors)
        ctx.saved = ()
        outputs = cls.forward(ctx, *[t._data for t in tensors], **attrs)
        multiple = isinstance(outputs, tuple)
        results = tuple(Tensor._wrap(np.asarray(o)) for o in (outputs if multiple else (outputs,)))
        for out in (
            results
        ):  # an output that views an input's memory (reshape, transpose, x[0] ...) knows it
            if out._data.base is not None:
                out._view_of = next((t for t in tensors if shares_memory(out._data, t._data)), None)
                if out._view_of is not None:
                    _register_view(out)
        if autograd.is_grad_enabled() and any(ctx.needs_input_grad):
            ctx._record(tensors, results, attrs)
        return results if multiple else results[0]

    def _record(self, tensors, results, attrs):
        self.inputs = tensors
        # The edges back: which node made each input, as it was now. A later in-place change
        # of an input (x.add_(...)) gives that tensor a new node; this graph keeps the old one.
        self.input_edges = tuple((t._node, t._output_index) for t in tensors)
        self.output_meta = [(o.shape, o.dtype) for o in results]
        self.module_frame = autograd.module_frame()
        self.attrs = _scalar_attributes(attrs) if attrs else {}
        for index, out in enumerate(results):
            if out._view_of is not None:  # a view shares its base's version counter, as in torch
                out._version = out._view_of._version
            if out.dtype.kind == "f":
                out._requires_grad = True
                out._node = self
                out._output_index = index
        # Remember the version of every tensor whose array backward will read, so that an
        # in-place change between forward and backward is an error, not a wrong gradient.
        # For inputs also keep a few sampled values: a user can change an array behind
        # minigrad's back (`w.data[...] = 0`), which no counter sees.
        saved_ids = {id(a) for a in self.saved if isinstance(a, np.ndarray)}
        self._versions = (
            [
                (t._version, t._version[0], t._data, _sample(t._data) if k < len(tensors) else None)
                for k, t in enumerate(tensors + results)
                if id(t._data) in saved_ids
            ]
            if saved_ids
            else ()
        )

    def _hooked_grads(self, out_grads):
        """The gradients of this node's outputs after the hooks registered on them (register_hook)."""
        hooks = self.__dict__.get("_hooks")
        if not hooks:
            return out_grads
        return [
            _run_hooks(hooks.get(k), g, meta[0], f"an output of {self.name}")
            for k, (g, meta) in enumerate(zip(out_grads, self.output_meta))
        ]

    def run_backward(self, out_grads, retain_graph):
        """Gradients for the inputs, given one per output (called by the backward walk)."""
        if self.saved is None:
            raise RuntimeError(
                f"Trying to backward through the graph a second time (through {self.name}): its saved "
                "arrays were freed after the first backward. Pass retain_graph=True to the first "
                "backward() if you need to call it twice."
            )
        for box, version, array, sample in self._versions:
            if box[0] != version or (sample is not None and _sample(array) != sample):
                how = (
                    f"is at version {box[0]}; expected version {version}"
                    if box[0] != version
                    else "was changed through .data"
                )
                raise RuntimeError(
                    f"one of the arrays needed for gradient computation has been modified by an in-place "
                    f"operation: the {array.dtype} tensor of shape {array.shape} saved by {self.name} {how}. "
                    f"Change it out of place (x = x + 1, not x += 1 or x.add_(1)), or after backward()."
                )
        grads = type(self).backward(self, *out_grads)
        if (
            not retain_graph
        ):  # free saved arrays and forward's notes; the structure stays for drawing
            self.saved = None
            kept = {
                key: self.__dict__[key]
                for key in (
                    "inputs",
                    "input_edges",
                    "needs_input_grad",
                    "output_meta",
                    "module_frame",
                    "attrs",
                )
            }
            self.__dict__.clear()
            self.__dict__.update(kept)
            self.saved, self._versions = None, ()
        return grads if isinstance(grads, tuple) else (grads,)


class GradientTap(Function):
    """The identity on several tensors as one graph node, whose backward hands their gradients,
    all at once, to `on_backward` and passes on what it returns (an array or None per tensor).
    nn.Module's full backward hooks put one around a call's tensor inputs and one around its
    outputs, as torch's BackwardHookFunction. Each output views its input, so that an in-place
    change through it reaches the tensor behind it, as it would without the tap."""

    @staticmethod
    def forward(ctx, *arrays, on_backward):
        ctx.on_backward = on_backward
        return tuple(array.view() for array in arrays)

    @staticmethod
    def backward(ctx, *grads):
        return tuple(ctx.on_backward(grads))


def _register_view(view):
    """Note `view` on the tensor at the end of its chain of views (the one that views none), so
    that an in-place change of that tensor while recording can bring every view up to date."""
    root = view._view_of
    while root._view_of is not None:
        root = root._view_of
    if root._views is None:
        root._views = []
    elif (
        len(root._views) >= 16 and len(root._views) & (len(root._views) - 1) == 0
    ):  # now and then: drop the dead
        root._views[:] = [ref for ref in root._views if ref() is not None]
    root._views.append(weakref.ref(view))


def shares_memory(view, array):
    """True when `view` shares memory with `array` (bounds that overlap are checked exactly)."""
    if not np.may_share_memory(view, array):
        return False
    try:
        return bool(np.shares_memory(view, array, max_work=10_000))
    except (
        np.exceptions.TooHardError
    ):  # interleaved strides too costly to settle: count it as shared
        return True


def _run_hooks(hooks, grad, shape, what):
    """grad after the hooks (functions of a Tensor returning None or a replacement), in order."""
    for hook in list(hooks or ()):
        result = hook(Tensor._wrap(grad))
        if result is None:
            continue
        if not isinstance(result, Tensor):
            raise TypeError(
                f"a gradient hook on {what} must return None or a Tensor; got {type(result).__name__}"
            )
        if result.shape != tuple(shape) or result.dtype != grad.dtype:
            raise RuntimeError(
                f"a gradient hook on {what} returned a {result.dtype} tensor of shape {result.shape}; "
                f"expected {grad.dtype} of shape {tuple(shape)}"
            )
        grad = result._data
    return grad


def _sample(array):
    """Up to 16 values spread over the array, as bytes: a cheap fingerprint of its contents
    (bytes compare NaN with itself and cost ~1 us; np.array_equal(equal_nan=True) cost ~15)."""
    step = max(1, array.size // 16)
    if array.flags.c_contiguous:  # a strided view of 16 values, no index array
        return array.reshape(-1)[: 16 * step : step].tobytes()
    return array.flat[np.arange(0, array.size, step)[:16]].tobytes()


def _as_constant(value, inputs):
    """Wrap a non-tensor operand of an op. A number takes the dtype of the tensor it meets when
    that is a float tensor or the number is an int (so `x * 2` stays float32), as in PyTorch."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_)
    ):
        partner = next((t.dtype for t in inputs if isinstance(t, Tensor)), None)
        if partner is not None and (partner.kind == "f" or isinstance(value, (int, np.integer))):
            return Tensor._wrap(np.asarray(value, dtype=partner))
    return Tensor._wrap(dtypes.to_array(value))


class Tensor:
    """An n-dimensional array that can take part in automatic differentiation.

    `data` is the numpy array, `grad` a Tensor of the same shape after `backward()` (or None),
    `grad_fn` the graph node that produced it (None for leaves and for tensors made under
    `no_grad`). `name` is an optional label used by `mg.viz`.

    Tensor(data) copies `data` (as torch.tensor does); mg.from_numpy shares it. Every tensor
    has a version counter that in-place changes bump; a backward that needs an array changed
    since forward raises instead of returning a wrong gradient.
    """

    __slots__ = (
        "_data",
        "_requires_grad",
        "grad",
        "name",
        "_node",
        "_output_index",
        "_retains_grad",
        "_version",
        "_view_of",
        "_views",
        "_hooks",
        "__weakref__",
    )
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
        self._retains_grad = False
        self._version = [0]  # a box: tensors that share an array (detach) share its version
        self._view_of = (
            None  # the tensor whose array this one views (ops/inplace.py writes through it)
        )
        self._views = None  # on a tensor that views none: weak references to the views of its array
        self._hooks = None  # a leaf's gradient hooks (register_hook); a non-leaf's live on its node

    @classmethod
    def _wrap(cls, array, requires_grad=False):
        """A tensor around `array` as it is: no copy, no checks (for arrays minigrad made)."""
        tensor = cls.__new__(cls)
        tensor._setup(array)
        tensor._requires_grad = requires_grad
        return tensor

    # -- properties -----------------------------------------------------------------------
    @property
    def data(self):
        """The numpy array (shared, not copied). Assigning a new array counts as an in-place change."""
        return self._data

    @data.setter
    def data(self, value):
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
        self._version[0] += 1

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

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
    def grad_fn(self):
        return self._node

    @property
    def is_leaf(self):
        return self._node is None

    @property
    def T(self):
        return self.permute(*reversed(range(self.ndim)))

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

    def detach(self):
        """A new leaf sharing the same data (and version counter), cut from the graph."""
        tensor = Tensor._wrap(self._data)
        tensor._version = self._version
        return tensor

    def requires_grad_(self, requires_grad=True):
        if requires_grad and self.dtype.kind != "f":
            raise DTypeError(
                f"only floating point tensors (float32, float64) can require gradients; "
                f"this tensor has dtype {self.dtype}"
            )
        if not requires_grad and self._node is not None:
            raise RuntimeError(
                "requires_grad can only be switched off on leaf tensors; use detach()"
            )
        self._requires_grad = bool(requires_grad)
        return self

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
            hooks = self._hooks
        else:  # the gradient of a non-leaf arrives at the node that made it
            hooks = self._node.__dict__.setdefault("_hooks", {}).setdefault(self._output_index, [])
        hooks.append(hook)
        return autograd.HookHandle(hooks, hook)

    def _hooked_grad(self, grad):
        """A leaf's gradient after its hooks (register_hook)."""
        return _run_hooks(self._hooks, grad, self.shape, "a leaf")

    def retain_grad(self):
        """Keep `.grad` on this non-leaf tensor after backward (leaves always keep it)."""
        self._retains_grad = True
        return self

    def backward(self, grad=None, retain_graph=False):
        """Accumulate d(self)/d(leaf) into `leaf.grad` for every leaf that requires grad."""
        if not self._requires_grad:
            raise RuntimeError(
                "backward() called on a tensor that does not require grad "
                "(no input had requires_grad=True, or it was computed under no_grad)"
            )
        if grad is None:
            if self._data.size != 1:
                raise RuntimeError(
                    f"backward() without a gradient argument needs a scalar output; got shape "
                    f"{self.shape}. Pass grad= of that shape, or reduce first (.sum())."
                )
            grad = np.ones_like(self._data)
        else:
            grad = grad._data if isinstance(grad, Tensor) else np.asarray(grad, dtype=self.dtype)
            if grad.shape != self.shape:
                raise ShapeError(
                    f"backward(): gradient shape {grad.shape} does not match output shape {self.shape}"
                )
        if self._node is None:  # a leaf: d self / d self = 1
            self._accumulate_grad(self._hooked_grad(grad), autograd._accumulate_lock)
        else:
            autograd.run_backward(self, grad, retain_graph)

    def _accumulate_grad(self, grad, lock, owned=False):
        """Add grad to self.grad; owned: grad is an array of self's dtype that nothing else
        refers to, so it can become self.grad without a copy."""
        held = autograd.held_grads()
        if held is not None:  # mg.parallel: added later, in the order of the batch's parts
            held.add(self, grad)
            return
        with lock:
            if self.grad is None:
                self.grad = Tensor._wrap(
                    grad if owned else np.array(grad, dtype=self.dtype, copy=True)
                )
            else:
                self.grad._data = self.grad._data + grad

    # -- conversion ---------------------------------------------------------------------------
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
        """f"{loss:.4f}": a 0-d tensor formats as its number, as in torch (others need an empty spec)."""
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError(
                f"unsupported format string {spec!r} for a tensor of shape {self.shape}; only a "
                f"0-d tensor formats as a number (use .item() or .tolist())"
            )
        return str(self)

    def __index__(self):
        if self.dtype.kind not in "iu" or self._data.size != 1:
            raise TypeError(
                f"only integer tensors of a single element can be used as an index; "
                f"got dtype {self.dtype}, shape {self.shape}"
            )
        return int(self._data.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self._data.size} elements is ambiguous"
            )
        return bool(self._data.item())

    __hash__ = object.__hash__

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


autograd._Tensor = Tensor  # for autograd.grad / autograd.backward, which cannot import this module


class Parameter(Tensor):
    """A tensor that is a weight of a module: requires grad, and nn.Module registers it when it
    is assigned to an attribute. Parameter(array) copies the array; Parameter(tensor) shares
    the tensor's data, as torch.nn.Parameter does."""

    __slots__ = ()

    def __init__(self, data, requires_grad=True):
        if isinstance(data, Tensor):
            self._setup(data._data)
            self._version = data._version
        else:
            self._setup(np.array(dtypes.to_array(data), copy=True))
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()
