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

`Tensor.backward()` hands the graph to the walk in autograd.py (the file to read next).
Broadcasting is undone in one place, `autograd.sum_to`, called by the walk: an op's backward
may return a gradient with the broadcast shape.

The arithmetic methods (`x + y`, `x.exp()`, `x.sum(dim)` ...) are thin doors into
`minigrad.ops`; ops/__init__.py attaches them, so this file needs nothing from the ops.
Two features sit beside the engine, each in a file of its own that a first reading may skip:
views.py (which tensors view which) and versions.py (a backward refuses arrays changed since
forward); delivery.py says where the walk's gradients go (`.grad`, hooks, autograd.grad).
"""

import numpy as np

from . import dtypes, grad_mode, versions, views
from .errors import DimError, DTypeError, ShapeError


class Tensor:
    """An n-dimensional array that can take part in automatic differentiation.

    `numpy()` is the numpy array, `data` the same values as a tensor outside the graph (as in
    torch), `grad` a Tensor of the same shape after `backward()` (or None),
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
        "_inference",
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
        # views.py: the tensor whose array this one views (ops/inplace.py writes through it),
        # and on a tensor that views none, weak references to the views of its array
        self._view_of = None
        self._views = None
        self._hooks = None  # a leaf's gradient hooks (register_hook); a non-leaf's live on its node
        self._inference = grad_mode.is_inference_mode_enabled()  # made inside inference_mode

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
        """This tensor outside the graph, as torch's `.data`: a new tensor that shares the array
        and needs no gradient, so `p.data.add_(g, alpha=-lr)` changes `p` itself. It also shares
        the version counter: a backward that saved `p` before such a change still refuses (torch
        would not notice). `numpy()` is the array; assigning `p.data = t` is an in-place change."""
        tensor = Tensor._wrap(self._data)
        tensor._version, tensor._inference = self._version, self._inference
        return tensor

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
                "Tensor.data: this tensor requires grad, so it needs a float array; "
                f"got {value.dtype}"
            )
        self._data = value
        self._bump_version()

    def _bump_version(self):
        self._refuse_inplace_if_inference()
        self._version[0] += 1

    def _refuse_inplace_if_inference(self):
        """torch's rule: an inference tensor changes in place only inside inference mode."""
        if self._inference and not grad_mode.is_inference_mode_enabled():
            raise RuntimeError(
                "this tensor was made inside mg.inference_mode(), so it cannot be changed in "
                "place outside it (as in torch); change a clone() of it instead"
            )

    def is_inference(self):
        """True for a tensor made inside mg.inference_mode() (or a view of one), as in torch."""
        return self._inference

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
        return self.data

    def requires_grad_(self, requires_grad=True):
        if requires_grad and self.dtype.kind != "f":
            raise DTypeError(
                f"only floating point tensors (float32, float64) can require gradients; "
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
        else:  # the gradient of a non-leaf arrives at the node that made it
            hooks = self._node.__dict__.setdefault("_hooks", {}).setdefault(self._output_index, [])
            what = f"an output of {self._node.name}"
        on_array = _ArrayHook(hook, self.shape, what)
        hooks.append(on_array)
        return HookHandle(hooks, on_array)

    def retain_grad(self):
        """Keep `.grad` on this non-leaf tensor after backward (leaves always keep it)."""
        self._retains_grad = True
        return self

    def backward(self, grad=None, retain_graph=False):
        """Accumulate d(self)/d(leaf) into `leaf.grad` for every leaf that requires grad."""
        from .autograd import backward_from  # the floor above: autograd.py imports this file

        backward_from(self, grad, retain_graph)

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
        """f"{loss:.4f}": a 0-d tensor formats as its number, as in torch (others: empty spec)."""
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

    A recorded node holds `inputs` (tensors), `input_edges` ((node, output index) that made
    each input), `output_meta` ((shape, dtype) per output), `module_frame` (the nn.Module call
    that made it: (module, outer frame)) and `attrs` (its scalar settings); mg.viz draws the last
    two. After backward without retain_graph, its saved arrays are freed.
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
        # False: no node will be made, so forward may skip what only a backward needs
        ctx.recording = grad_mode.is_recording() and any(ctx.needs_input_grad)
        outputs = cls.forward(ctx, *[t._data for t in tensors], **attrs)
        multiple = isinstance(outputs, tuple)
        results = tuple(Tensor._wrap(np.asarray(o)) for o in (outputs if multiple else (outputs,)))
        views.note_views(results, tensors)
        for out in results:  # a view is an inference tensor when what it views is (torch's rule)
            if out._view_of is not None:
                out._inference = out._view_of._inference
        if ctx.recording:
            ctx._record(tensors, results, attrs)
        return results if multiple else results[0]

    def _record(self, tensors, results, attrs):
        """Make this node the one that made `results`: the graph's edges back, for the walk."""
        _refuse_saved_inference_tensors(self, tensors)
        self.inputs = tensors
        # Which node made each input, as it was now. A later in-place change of an input
        # (x.add_(...)) gives that tensor a new node; this graph keeps the old one.
        self.input_edges = tuple((t._node, t._output_index) for t in tensors)
        self.output_meta = [(o.shape, o.dtype) for o in results]
        self.module_frame = grad_mode.module_frame()
        self.attrs = _scalar_attributes(attrs) if attrs else {}
        for index, out in enumerate(results):
            if out.dtype.kind == "f":
                out._requires_grad = True
                out._node = self
                out._output_index = index
        self._versions = versions.record(self, tensors, results)

    def run_backward(self, out_grads, retain_graph):
        """Gradients for the inputs, given one per output (called by the backward walk)."""
        if self.saved is None:
            raise RuntimeError(
                f"Trying to backward through the graph a second time (through {self.name}): its "
                "saved arrays were freed after the first backward. Pass retain_graph=True to the "
                "first backward() if you need to call it twice."
            )
        versions.check(self)
        grads = type(self).backward(self, *out_grads)
        if not retain_graph:
            self._free()
        return grads if isinstance(grads, tuple) else (grads,)

    def _free(self):
        """Drop saved arrays and forward's notes; the structure stays for drawing."""
        kept = ("inputs", "input_edges", "needs_input_grad", "output_meta", "module_frame", "attrs")
        kept = {key: self.__dict__[key] for key in kept}
        self.__dict__.clear()
        self.__dict__.update(kept)
        self.saved, self._versions = None, ()


def _refuse_saved_inference_tensors(node, tensors):
    """torch's rule: a tensor made inside inference_mode cannot be saved for a backward."""
    if not any(t._inference for t in tensors):
        return
    saved = {id(array) for array in node.saved if isinstance(array, np.ndarray)}
    for t in tensors:
        if t._inference and id(t._data) in saved:
            raise RuntimeError(
                f"{node.name}: one of its inputs, a tensor of shape {t.shape}, was made inside "
                "mg.inference_mode(), and inference tensors cannot be saved for backward (as in "
                "torch). Make the tensor outside inference_mode, or use a clone() of it."
            )


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


class _ArrayHook:
    """A user's gradient hook (a function of a Tensor that returns None or a replacement) as
    the walk calls it: on the gradient array, returning the array to pass on."""

    def __init__(self, hook, shape, what):
        self.hook, self.shape, self.what = hook, tuple(shape), what

    def __call__(self, grad):
        result = self.hook(Tensor._wrap(grad))
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
        return result._data


class HookHandle:
    """What register_hook returns: remove() takes the hook off (again: nothing happens)."""

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


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
