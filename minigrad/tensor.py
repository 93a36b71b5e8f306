"""Tensor: a numpy array, whether it wants a gradient, its gradient, and the node that made it.

The arithmetic lives in `minigrad.ops`; the methods here are thin doors into it, so that
`x.exp()`, `mg.exp(x)` and `x ** 2` all reach the same Function.
"""

import numpy as np

from . import autograd

# dtypes a Tensor may hold; floating ones may require grad
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_ALLOWED_DTYPES = _FLOAT_DTYPES + tuple(np.dtype(t) for t in (np.int64, np.int32, np.uint8, np.bool_))
default_dtype = np.dtype(np.float32)


def _as_dtype(dtype):
    return None if dtype is None else np.dtype(dtype)


def _to_array(data, dtype=None):
    """Python data -> numpy array. Python floats become float32 (the default dtype) and Python
    ints int64; a numpy array keeps its dtype unless `dtype` is given (as torch.tensor does)."""
    if isinstance(data, Tensor):
        data = data.data
    from_python = not isinstance(data, (np.ndarray, np.generic))
    array = np.asarray(data, dtype=_as_dtype(dtype))
    if dtype is None and from_python and array.dtype == np.float64:
        array = array.astype(default_dtype)
    if array.dtype not in _ALLOWED_DTYPES:
        names = ", ".join(str(d) for d in _ALLOWED_DTYPES)
        raise TypeError(f"minigrad tensors hold one of {names}; got dtype {array.dtype}")
    return array


class Tensor:
    """An n-dimensional array that can take part in automatic differentiation.

    `data` is the numpy array, `grad` a Tensor of the same shape after `backward()` (or None),
    `grad_fn` the graph node that produced it (None for leaves and for tensors made under
    `no_grad`). `name` is an optional label used by `mg.viz`.
    """

    __slots__ = ("data", "requires_grad", "grad", "name", "_node", "_output_index", "_retains_grad",
                 "__weakref__")
    __array_priority__ = 1000  # numpy array (op) Tensor -> Tensor's reflected method

    def __init__(self, data, requires_grad=False, dtype=None, name=None, _copy=True):
        self.data = _to_array(data, dtype) if _copy else data
        self.grad = None
        self.name = name
        self._node = None
        self._output_index = 0
        self._retains_grad = False
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    @classmethod
    def _constant_like(cls, value, inputs):
        """Wrap a non-tensor operand. A number (Python or numpy scalar) takes the dtype of the
        tensor it meets (so `x * 2` and `x / np.int64(n)` keep float32), as in PyTorch."""
        if isinstance(value, (bool, int, float, np.bool_, np.number)):
            partner = next((t.dtype for t in inputs if isinstance(t, Tensor)), None)
            if isinstance(value, (bool, np.bool_)):
                return cls(np.asarray(value))
            if partner is not None and (partner in _FLOAT_DTYPES or isinstance(value, (int, np.integer))):
                return cls(np.asarray(value, dtype=partner), _copy=False)
        return cls(value)

    # -- properties -----------------------------------------------------------------------
    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def ndim(self):
        return self.data.ndim

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
        return self.shape if dim is None else self.shape[dim]

    def numel(self):
        return self.data.size

    def dim(self):
        return self.ndim

    def numpy(self):
        """The underlying array (shared, not copied)."""
        return self.data

    def item(self):
        if self.data.size != 1:
            raise ValueError(f"item() needs a tensor with one element; got shape {self.shape}")
        return self.data.item()

    def tolist(self):
        return self.data.tolist()

    def detach(self):
        """A new leaf sharing the same data, cut from the graph."""
        return Tensor(self.data, _copy=False)

    def requires_grad_(self, requires_grad=True):
        if requires_grad and self.dtype not in _FLOAT_DTYPES:
            raise TypeError(f"only floating point tensors (float32, float64) can require gradients; "
                            f"this tensor has dtype {self.dtype}")
        if not requires_grad and self._node is not None:
            raise RuntimeError("requires_grad can only be switched off on leaf tensors; use detach()")
        self.requires_grad = bool(requires_grad)
        return self

    def retain_grad(self):
        """Keep `.grad` on this non-leaf tensor after backward (leaves always keep it)."""
        self._retains_grad = True
        return self

    def backward(self, grad=None, retain_graph=False):
        autograd.backward(self, grad, retain_graph=retain_graph)

    # -- conversion ---------------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        if dtype is not None and np.dtype(dtype) != self.dtype:
            return self.data.astype(dtype)
        return self.data.copy() if copy else self.data

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        if self.data.size != 1:
            raise RuntimeError(f"the truth value of a tensor with {self.data.size} elements is ambiguous")
        return bool(self.data.item())

    __hash__ = object.__hash__

    def __repr__(self):
        body = np.array2string(self.data, separator=", ", prefix="tensor(", precision=4,
                               threshold=200, edgeitems=3)
        extras = []
        if self.dtype not in (default_dtype, np.dtype(np.int64), np.dtype(np.bool_)):
            extras.append(f"dtype={self.dtype}")
        if self._node is not None:
            extras.append(f"grad_fn={self._node!r}")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return "tensor(" + ", ".join([body] + extras) + ")"

    # -- dtype --------------------------------------------------------------------------------
    def to(self, dtype):
        return _ops.cast(self, dtype)

    def float(self):
        return self.to(np.float32)

    def double(self):
        return self.to(np.float64)

    def long(self):
        return self.to(np.int64)

    def bool(self):
        return self.to(np.bool_)

    # -- arithmetic ---------------------------------------------------------------------------
    def __add__(self, other): return _ops.add(self, other)
    def __radd__(self, other): return _ops.add(other, self)
    def __sub__(self, other): return _ops.sub(self, other)
    def __rsub__(self, other): return _ops.sub(other, self)
    def __mul__(self, other): return _ops.mul(self, other)
    def __rmul__(self, other): return _ops.mul(other, self)
    def __truediv__(self, other): return _ops.div(self, other)
    def __rtruediv__(self, other): return _ops.div(other, self)
    def __pow__(self, other): return _ops.pow(self, other)
    def __rpow__(self, other): return _ops.pow(other, self)
    def __matmul__(self, other): return _ops.matmul(self, other)
    def __rmatmul__(self, other): return _ops.matmul(other, self)
    def __neg__(self): return _ops.neg(self)
    def __getitem__(self, index): return _ops.getitem(self, index)

    # comparisons give bool tensors outside the graph
    def __eq__(self, other): return _ops.compare(np.equal, self, other)
    def __ne__(self, other): return _ops.compare(np.not_equal, self, other)
    def __lt__(self, other): return _ops.compare(np.less, self, other)
    def __le__(self, other): return _ops.compare(np.less_equal, self, other)
    def __gt__(self, other): return _ops.compare(np.greater, self, other)
    def __ge__(self, other): return _ops.compare(np.greater_equal, self, other)
    def __invert__(self): return _ops.logical_not(self)
    def __and__(self, other): return _ops.compare(np.logical_and, self, other)
    def __or__(self, other): return _ops.compare(np.logical_or, self, other)

    def add(self, other): return _ops.add(self, other)
    def sub(self, other): return _ops.sub(self, other)
    def mul(self, other): return _ops.mul(self, other)
    def div(self, other): return _ops.div(self, other)
    def pow(self, other): return _ops.pow(self, other)
    def matmul(self, other): return _ops.matmul(self, other)
    def neg(self): return _ops.neg(self)
    def exp(self): return _ops.exp(self)
    def log(self): return _ops.log(self)
    def sqrt(self): return _ops.sqrt(self)
    def abs(self): return _ops.abs(self)
    def tanh(self): return _ops.tanh(self)
    def sigmoid(self): return _ops.sigmoid(self)
    def relu(self): return _ops.relu(self)

    # -- reductions ---------------------------------------------------------------------------
    def sum(self, dim=None, keepdim=False): return _ops.sum(self, dim, keepdim)
    def mean(self, dim=None, keepdim=False): return _ops.mean(self, dim, keepdim)
    def max(self, dim=None, keepdim=False): return _ops.max(self, dim, keepdim)
    def min(self, dim=None, keepdim=False): return _ops.min(self, dim, keepdim)
    def var(self, dim=None, keepdim=False, unbiased=True): return _ops.var(self, dim, keepdim, unbiased)
    def argmax(self, dim=None, keepdim=False): return _ops.argmax(self, dim, keepdim)
    def argmin(self, dim=None, keepdim=False): return _ops.argmin(self, dim, keepdim)

    # -- shape --------------------------------------------------------------------------------
    def reshape(self, *shape): return _ops.reshape(self, *shape)
    def view(self, *shape): return _ops.reshape(self, *shape)
    def transpose(self, dim0, dim1): return _ops.transpose(self, dim0, dim1)
    def permute(self, *dims): return _ops.permute(self, *dims)
    def unsqueeze(self, dim): return _ops.unsqueeze(self, dim)
    def squeeze(self, dim=None): return _ops.squeeze(self, dim)
    def expand(self, *shape): return _ops.expand(self, *shape)
    def flip(self, dims): return _ops.flip(self, dims)
    def flatten(self, start_dim=0, end_dim=-1): return _ops.flatten(self, start_dim, end_dim)
    def gather(self, dim, index): return _ops.gather(self, dim, index)
    def masked_fill(self, mask, value): return _ops.masked_fill(self, mask, value)
    def contiguous(self): return self
    def clone(self): return _ops.clone(self)

    # -- nn -----------------------------------------------------------------------------------
    def softmax(self, dim=-1): return _ops.softmax(self, dim)
    def log_softmax(self, dim=-1): return _ops.log_softmax(self, dim)


from . import ops as _ops  # noqa: E402  (the ops import Tensor from this module)
