"""Reverse-mode automatic differentiation: Function, Context, grad mode, the backward walk.

A differentiable op is a subclass of `Function` with two static methods that work on
numpy arrays:

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = np.exp(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved
            return grad * y          # d exp(x) / dx = exp(x)

`Exp.apply(tensor)` runs forward on the tensor's array, wraps the result in a Tensor and,
when a gradient is wanted, records a `Node` that remembers the function, its context and
its input tensors. `backward()` later walks those nodes from the output back to the leaves.

Broadcasting is undone in one place, `sum_to`, called by the walk: an op's backward may
return a gradient with the broadcast shape, and the walk sums it back to the input's shape.
"""

import contextlib
import functools

import numpy as np


# ---------------------------------------------------------------------------------------
# Grad mode


_grad_enabled = True


def is_grad_enabled():
    return _grad_enabled


class _GradMode(contextlib.ContextDecorator):
    """Base of `no_grad` / `enable_grad`: a context manager that also works as a decorator."""

    enabled = True

    def __new__(cls, func=None):
        if func is not None:  # used bare, as `@mg.no_grad` (torch accepts both spellings)
            return cls()(func)
        return super().__new__(cls)

    def __enter__(self):
        global _grad_enabled
        self._previous = _grad_enabled
        _grad_enabled = self.enabled

    def __exit__(self, *exc):
        global _grad_enabled
        _grad_enabled = self._previous
        return False

    def __call__(self, func):
        # A fresh instance per call keeps `_previous` from being shared by nested calls.
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with type(self)():
                return func(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """Inside `with mg.no_grad():` (or a function decorated with `@mg.no_grad()`), ops record no graph."""

    enabled = False


class enable_grad(_GradMode):
    """Turn graph recording back on inside a `no_grad` block."""

    enabled = True


# ---------------------------------------------------------------------------------------
# Module scope: which nn.Module's forward is running (used by mg.viz to group ops)

_module_scope = []  # stack of (dotted_name, class_name) pushed by nn.Module.__call__


@contextlib.contextmanager
def module_scope(name, class_name):
    _module_scope.append((name, class_name))
    try:
        yield
    finally:
        _module_scope.pop()


# ---------------------------------------------------------------------------------------
# Function, Context, Node


class Context:
    """What a Function's forward leaves for its backward."""

    __slots__ = ("saved", "needs_input_grad", "__dict__")

    def __init__(self, needs_input_grad=()):
        self.saved = ()
        self.needs_input_grad = needs_input_grad

    def save_for_backward(self, *arrays):
        self.saved = arrays


class Node:
    """One application of a Function in the graph: the function, its context, its inputs.

    `scope` is the stack of modules whose forward produced it; `output_meta` holds the
    (shape, dtype) of each output, so a missing output gradient can be filled with zeros.
    """

    __slots__ = ("function", "ctx", "inputs", "output_meta", "scope", "attrs", "__weakref__")

    def __init__(self, function, ctx, inputs, output_meta, attrs):
        self.function = function
        self.ctx = ctx
        self.inputs = inputs
        self.output_meta = output_meta
        self.scope = tuple(_module_scope)
        self.attrs = attrs

    @property
    def name(self):
        return self.function.__name__

    def __repr__(self):
        return f"<{self.name}Backward>"


class Function:
    """Base class of differentiable ops. Subclasses define forward(ctx, *arrays, **attrs)
    and backward(ctx, *grads) -> one gradient per tensor input (None where not needed).

    forward may return one array or a tuple of arrays (a multi-output op); backward then
    receives one gradient per output (zeros for an output that did not reach the loss).
    Non-tensor keyword attributes are passed to forward only; keep what backward needs in ctx.
    """

    differentiable = True  # False for ops like argmax whose outputs never need a gradient

    @staticmethod
    def forward(ctx, *arrays, **attrs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs, **attrs):
        Tensor = _tensor_module.Tensor
        tensors = [x if isinstance(x, Tensor) else Tensor._constant_like(x, inputs) for x in inputs]
        needs_grad = tuple(t.requires_grad for t in tensors)
        record = _grad_enabled and cls.differentiable and any(needs_grad)
        ctx = Context(needs_grad)
        outputs = cls.forward(ctx, *[t.data for t in tensors], **attrs)
        multiple = isinstance(outputs, tuple)
        outputs = outputs if multiple else (outputs,)
        results = tuple(Tensor(np.asarray(o), _copy=False) for o in outputs)
        if record:
            node = Node(cls, ctx, tensors, [(o.shape, o.dtype) for o in results], attrs)
            for index, out in enumerate(results):
                if out.dtype.kind == "f":
                    out.requires_grad = True
                    out._node = node
                    out._output_index = index
        return results if multiple else results[0]


# ---------------------------------------------------------------------------------------
# The backward walk


def sum_to(grad, shape):
    """Sum `grad` down to `shape`, undoing numpy broadcasting (the one place this is done)."""
    if grad.shape == tuple(shape):
        return grad
    extra = grad.ndim - len(shape)
    axes = tuple(range(extra)) + tuple(
        i + extra for i, size in enumerate(shape) if size == 1 and grad.shape[i + extra] != 1
    )
    grad = grad.sum(axis=axes, keepdims=True)
    return grad.reshape(shape)


def graph_nodes(*roots):
    """The Nodes that made `roots` (Nodes), each after the nodes that made its inputs.

    Iterative depth-first search (an LSTM over 256 steps makes graphs thousands deep); the
    order depends only on how the graph was built, so it repeats from run to run.
    """
    order, visited = [], set()
    for root in roots:
        if id(root) in visited:
            continue
        visited.add(id(root))
        stack = [(root, iter(root.inputs))]
        while stack:
            node, inputs = stack[-1]
            for tensor in inputs:
                child = tensor._node
                if child is not None and id(child) not in visited:
                    visited.add(id(child))
                    stack.append((child, iter(child.inputs)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def backward(output, grad=None, retain_graph=False):
    """Accumulate d(output)/d(leaf) into `leaf.grad` for every leaf that requires grad."""
    Tensor = _tensor_module.Tensor
    if not output.requires_grad:
        raise RuntimeError("backward() called on a tensor that does not require grad "
                           "(no input had requires_grad=True, or it was computed under no_grad)")
    if grad is None:
        if output.data.size != 1:
            raise RuntimeError(f"backward() without a gradient argument needs a scalar output; "
                               f"got shape {output.shape}. Pass grad= of that shape, or reduce first (.sum()).")
        grad = np.ones_like(output.data)
    else:
        grad = grad.data if isinstance(grad, Tensor) else np.asarray(grad, dtype=output.dtype)
        if grad.shape != output.shape:
            raise ValueError(f"backward(): gradient shape {grad.shape} does not match output shape {output.shape}")

    if output._node is None:  # a leaf: d output / d output = 1
        _accumulate(output, grad)
        return
    if output._retains_grad:  # the output is never an input in its own graph: record its grad here
        _accumulate(output, grad)

    root = output._node
    pending = {id(root): [None] * len(root.output_meta)}  # node id -> gradient of each output
    pending[id(root)][output._output_index] = grad
    for node in reversed(graph_nodes(root)):
        if node.ctx is None:
            raise RuntimeError(
                f"Trying to backward through the graph a second time (through {node.name}): its saved "
                "arrays were freed after the first backward. Pass retain_graph=True to the first "
                "backward() if you need to call it twice.")
        out_grads = pending.pop(id(node), None)
        if out_grads is None:  # unreachable from the output through differentiable paths
            continue
        out_grads = [g if g is not None else np.zeros(shape, dtype) for g, (shape, dtype)
                     in zip(out_grads, node.output_meta)]
        in_grads = node.function.backward(node.ctx, *out_grads)
        if not isinstance(in_grads, tuple):
            in_grads = (in_grads,)
        if not retain_graph:
            node.ctx = None  # free saved arrays; the structure stays for drawing
        for tensor, g in zip(node.inputs, in_grads):
            if g is None or not tensor.requires_grad:
                continue
            g = sum_to(np.asarray(g, dtype=tensor.dtype), tensor.shape)
            if tensor._node is None or tensor._retains_grad:
                _accumulate(tensor, g)
            if tensor._node is not None:
                slots = pending.setdefault(id(tensor._node), [None] * len(tensor._node.output_meta))
                i = tensor._output_index
                slots[i] = g if slots[i] is None else slots[i] + g


def _accumulate(tensor, grad):
    Tensor = _tensor_module.Tensor
    if tensor.grad is None:
        tensor.grad = Tensor(np.array(grad, dtype=tensor.dtype, copy=True), _copy=False)
    else:
        tensor.grad.data = tensor.grad.data + grad


from . import tensor as _tensor_module  # noqa: E402  (tensor.py imports this module; Tensor is looked up at call time)
