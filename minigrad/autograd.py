"""The backward walk (behind `tensor.backward()`, and `grad` / `backward` as torch.autograd has
them), and the switches that say whether ops record a graph.

This module knows graph nodes only by their shape: a node has `inputs` (tensors),
`input_edges` (the node and output index that made each input), `needs_input_grad`, one
gradient slot per output (`output_meta`), and `run_backward(grads, retain_graph)`. Node and Tensor
live in tensor.py; nothing here imports them, so the engine's imports flow one way:
tensor.py -> autograd.py (tensor.py hands its Tensor class over, as `_Tensor`, for `grad`).

Grad mode and the module scope are per thread, as in PyTorch: a `no_grad` block in one
thread does not stop another thread from recording its graph.
"""

import contextlib
import functools
import inspect
import threading

import numpy as np

from .errors import ShapeError

# ---------------------------------------------------------------------------------------
# Grad mode and module scope (per thread)


class _ThreadState(threading.local):
    def __init__(self):
        self.grad_enabled = True
        # The innermost nn.Module call running in this thread, as a frame (module, outer frame);
        # None outside any module. Each call makes a new frame, so two calls of one module differ.
        self.module_frame = None
        # Inside holding_grads(): the HeldGrads that this thread's backward passes fill instead
        # of the leaves' `.grad`.
        self.held = None


_state = _ThreadState()


def is_grad_enabled():
    return _state.grad_enabled


def _switch(mode):
    """Switch graph recording on or off for this thread; returns the previous setting."""
    previous, _state.grad_enabled = _state.grad_enabled, bool(mode)
    return previous


class set_grad_enabled(contextlib.ContextDecorator):
    """Graph recording on or off for this thread, as torch.set_grad_enabled: called, it switches
    now (`mg.set_grad_enabled(False)`); in a `with` block, it switches for the block and restores
    the previous setting after it (`with mg.set_grad_enabled(is_training):`); as a decorator,
    for each call of the function."""

    def __init__(self, mode):
        if not isinstance(mode, (bool, np.bool_)):
            raise TypeError(f"set_grad_enabled: mode must be a bool (True or False); got {mode!r}")
        self.mode = bool(mode)
        self.previous = _switch(self.mode)

    def __call__(self, function):  # a decorator: nothing switches until the function runs
        _switch(self.previous)
        return super().__call__(function)

    def _recreate_cm(self):  # each call of a decorated function switches, and restores, anew
        return set_grad_enabled(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _switch(self.previous)

    def __repr__(self):
        return f"set_grad_enabled(mode={self.mode})"


class _GradMode(contextlib.ContextDecorator):
    """Base of `no_grad` / `enable_grad`: a context manager that also works as a decorator."""

    enabled = True

    def __new__(cls, func=None):
        if func is not None:  # used bare, as `@mg.no_grad` (torch accepts both spellings)
            return cls()(func)
        return super().__new__(cls)

    def __enter__(self):
        self._previous = _switch(self.enabled)

    def __exit__(self, *exc):
        _switch(self._previous)
        return False

    def __call__(self, func):
        mode = type(self)
        if inspect.isgeneratorfunction(func):
            # The mode must hold while the generator's own code runs, i.e. around each
            # resumption, not around the call that merely creates the generator.
            @functools.wraps(func)
            def generator_wrapper(*args, **kwargs):
                generator = func(*args, **kwargs)
                to_send = None
                while True:
                    with mode():
                        try:
                            value = generator.send(to_send)
                        except StopIteration as stop:
                            return stop.value
                    to_send = yield value

            return generator_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with mode():  # a fresh instance per call: nested calls keep their own _previous
                return func(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """Inside `with mg.no_grad():` (or a function decorated with `@mg.no_grad()`), ops record no graph."""

    enabled = False


class enable_grad(_GradMode):
    """Turn graph recording back on inside a `no_grad` block."""

    enabled = True


class inference_mode(_GradMode):
    """torch.inference_mode: here no_grad (minigrad has no tensors reserved for inference), and
    inference_mode(False) records as usual. A context manager or a decorator, as no_grad."""

    enabled = False

    def __new__(cls, mode=True):
        if callable(mode):  # used bare, as `@mg.inference_mode`
            return super().__new__(cls, mode)
        self = super().__new__(cls)
        self.enabled = not mode
        return self


def module_frame():
    """The innermost module call running in this thread: (module, outer frame), or None."""
    return _state.module_frame


@contextlib.contextmanager
def module_scope(module):
    """Mark the ops recorded inside as made by this call of `module`'s forward (mg.viz groups them)."""
    outer = _state.module_frame
    _state.module_frame = (module, outer)
    try:
        yield
    finally:
        _state.module_frame = outer


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
    """The nodes that made `roots` (nodes), each after the nodes that made its inputs.

    Iterative depth-first search (an LSTM over 256 steps makes graphs thousands deep); the
    order depends only on how the graph was built, so it repeats from run to run.
    """
    order, visited = [], set()
    for root in roots:
        if id(root) in visited:
            continue
        visited.add(id(root))
        stack = [(root, iter(root.input_edges))]
        while stack:
            node, edges = stack[-1]
            for child, _ in edges:
                if child is not None and id(child) not in visited:
                    visited.add(id(child))
                    stack.append((child, iter(child.input_edges)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


# Gradients accumulate into leaves shared between threads (two models training at once
# may share an embedding): the read-add-write of `.grad` must not interleave.
_accumulate_lock = threading.Lock()


class HeldGrads:
    """Gradients that backward passes on one thread would have added to `.grad`, held back
    until `release()` adds them, in the order they first arrived. mg.parallel runs the parts of
    a batch on threads with one of these each and releases them in part order: the sums are
    then the same whichever thread finishes first, and a part that fails adds nothing."""

    def __init__(self):
        # id(tensor) -> [tensor, gradient, owned]: owned when the array is a sum made here, which
        # nothing else refers to; the first gradient may be an array the backward pass shares.
        self.grads = {}

    def add(self, tensor, grad):
        entry = self.grads.get(id(tensor))
        if entry is None:
            self.grads[id(tensor)] = [tensor, grad, False]
        elif entry[2]:
            entry[1] += grad
        else:
            entry[1], entry[2] = np.add(entry[1], grad, dtype=tensor.dtype), True

    def release(self):
        for tensor, grad, owned in self.grads.values():
            tensor._accumulate_grad(grad, _accumulate_lock, owned)
        self.grads.clear()


def held_grads():
    """The HeldGrads of this thread's holding_grads() block, or None."""
    return _state.held


@contextlib.contextmanager
def holding_grads(held):
    """Backward passes on this thread inside the block add to `held` (a HeldGrads), not to `.grad`."""
    previous, _state.held = _state.held, held
    try:
        yield held
    finally:
        _state.held = previous


class HookHandle:
    """What register_hook returns: remove() takes the hook off (again: nothing happens)."""

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def run_backward(output, grad, retain_graph):
    """Accumulate d(output)/d(leaf) into every leaf that requires grad (and every tensor that
    called retain_grad()). `grad` is an array of output's shape; output has a node."""
    if output._retains_grad:  # the output is never an input in its own graph: record its grad here
        output._accumulate_grad(grad, _accumulate_lock)
    _walk([(output, grad)], retain_graph)


def _walk(roots, retain_graph, targets=None):
    """The backward walk from roots [(tensor with a node, gradient array)], their gradients summed.

    Without targets: add each leaf's gradient to its `.grad` (and a retain_grad() tensor's).
    With targets (tensors): touch no `.grad`, and return the gradient reaching each target,
    None where none does. A non-leaf target is the output slot of the node that made it."""
    pending = {}  # node id -> gradient of each output
    for output, grad in roots:
        slots = pending.setdefault(id(output._node), [None] * len(output._node.output_meta))
        index = output._output_index
        slots[index] = grad if slots[index] is None else slots[index] + grad
    captured = [None] * len(targets) if targets is not None else None
    leaf_targets, made_targets = (
        {},
        {},
    )  # id(leaf) -> positions; (id(node), output index) -> positions
    for position, tensor in enumerate(targets or ()):
        if tensor._node is None:
            leaf_targets.setdefault(id(tensor), []).append(position)
        else:
            made_targets.setdefault((id(tensor._node), tensor._output_index), []).append(position)
    hooked_leaves = {}
    for node in reversed(
        graph_nodes(*{id(output._node): output._node for output, _ in roots}.values())
    ):
        out_grads = pending.pop(id(node), None)
        if out_grads is None:  # unreachable from the output through differentiable paths
            continue
        out_grads = [
            g if g is not None else np.zeros(shape, dtype)
            for g, (shape, dtype) in zip(out_grads, node.output_meta)
        ]
        out_grads = node._hooked_grads(out_grads)  # register_hook on the tensors this node made
        if made_targets:
            for index, g in enumerate(out_grads):
                for position in made_targets.get((id(node), index), ()):
                    captured[position] = g
        in_grads = node.run_backward(out_grads, retain_graph)
        for tensor, (child, index), needed, g in zip(
            node.inputs, node.input_edges, node.needs_input_grad, in_grads
        ):
            if g is None or not needed:
                continue
            g = sum_to(np.asarray(g, dtype=tensor.dtype), tensor.shape)
            if child is None and (
                tensor._hooks or id(tensor) in leaf_targets
            ):  # summed over its uses first
                entry = hooked_leaves.get(id(tensor))
                hooked_leaves[id(tensor)] = (tensor, g if entry is None else entry[1] + g)
            elif targets is None and (
                child is None or (tensor._retains_grad and tensor._node is child)
            ):
                tensor._accumulate_grad(g, _accumulate_lock)
            if child is not None:
                slots = pending.setdefault(id(child), [None] * len(child.output_meta))
                slots[index] = g if slots[index] is None else slots[index] + g
    for tensor, g in hooked_leaves.values():
        g = tensor._hooked_grad(g) if tensor._hooks else g
        if targets is None:
            tensor._accumulate_grad(g, _accumulate_lock)
        for position in leaf_targets.get(id(tensor), ()):
            captured[position] = g
    return captured


# The Tensor class, set by tensor.py when it is imported (it imports this module, not the other
# way round): grad() and backward() check their arguments against it and wrap their results in it.
_Tensor = None


def _as_tensors(values, name, op):
    values = [values] if isinstance(values, _Tensor) else list(values)
    for position, value in enumerate(values):
        if not isinstance(value, _Tensor):
            raise TypeError(
                f"{op}: {name} must be Tensors; item {position} is a {type(value).__name__}"
            )
    return values


def _roots(outputs, grad_outputs, name):
    """[(output, gradient array)] for outputs that have a node; a scalar output's gradient may be None (1)."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    else:
        grad_outputs = [grad_outputs] if isinstance(grad_outputs, _Tensor) else list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(
            f"{name}: got {len(outputs)} outputs but {len(grad_outputs)} gradients for them"
        )
    roots = []
    for position, (output, grad) in enumerate(zip(outputs, grad_outputs)):
        if not output.requires_grad:
            raise RuntimeError(
                f"{name}: output {position} does not require grad (no input had requires_grad=True, "
                f"or it was computed under no_grad)"
            )
        if grad is None:
            if output.numel() != 1:
                raise RuntimeError(
                    f"{name}: output {position} has shape {output.shape}; a gradient for it is needed "
                    f"(grad_outputs), only a single-number output can go without"
                )
            grad = np.ones(output.shape, output.dtype)
        else:
            grad = grad._data if isinstance(grad, _Tensor) else np.asarray(grad)
            if grad.shape != output.shape:
                raise ShapeError(
                    f"{name}: the gradient for output {position} has shape {grad.shape}; the output's "
                    f"is {output.shape}"
                )
            grad = grad.astype(output.dtype, copy=False)
        roots.append((output, grad))
    return roots


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    allow_unused=None,
    materialize_grads=False,
):
    """torch.autograd.grad: the gradients of outputs (weighted by grad_outputs, which a single-number
    output may leave out) with respect to each of inputs, as a tuple of tensors without a graph.
    No `.grad` changes. An input the outputs do not depend on raises, unless allow_unused=True
    (then None, or zeros with materialize_grads=True). The graph is freed unless retain_graph=True.
    create_graph=True (gradients of gradients) is not supported: backward passes here compute
    with numpy arrays, not with recorded ops."""
    if create_graph:
        raise NotImplementedError(
            "grad: create_graph=True (higher-order gradients) is not supported; minigrad's "
            "backward passes compute with numpy arrays, not recorded ops"
        )
    outputs, inputs = _as_tensors(outputs, "outputs", "grad"), _as_tensors(inputs, "inputs", "grad")
    for position, tensor in enumerate(inputs):
        if not tensor.requires_grad:
            raise RuntimeError(
                f"grad: input {position} (shape {tensor.shape}) does not require grad"
            )
    roots = _roots(outputs, grad_outputs, "grad")
    captured = [None] * len(inputs)
    for position, tensor in enumerate(inputs):  # a leaf output that is also an input: d x / d x
        for output, g in roots:
            if output is tensor and output._node is None:
                captured[position] = g if captured[position] is None else captured[position] + g
    made = [(output, g) for output, g in roots if output._node is not None]
    if made:
        walked = _walk(made, bool(retain_graph), targets=inputs)
        captured = [
            w if c is None else (c if w is None else c + w) for c, w in zip(captured, walked)
        ]
    results = []
    for position, (tensor, g) in enumerate(zip(inputs, captured)):
        if g is None and not (allow_unused or materialize_grads):
            raise RuntimeError(
                f"grad: input {position} (shape {tensor.shape}) was not used to compute the outputs; "
                f"pass allow_unused=True to get None for it"
            )
        if g is None and materialize_grads:
            g = np.zeros(tensor.shape, tensor.dtype)
        results.append(None if g is None else _Tensor._wrap(np.array(g, dtype=tensor.dtype)))
    return tuple(results)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """torch.autograd.backward: `.backward()` of several outputs at once (their gradients summed
    in one walk, so a graph they share is walked once). inputs: only these leaves get `.grad`."""
    if create_graph:
        raise NotImplementedError(
            "backward: create_graph=True (higher-order gradients) is not supported"
        )
    outputs = _as_tensors(tensors, "tensors", "backward")
    roots = _roots(outputs, grad_tensors, "backward")
    if inputs is not None:
        inputs = _as_tensors(inputs, "inputs", "backward")
        for tensor, g in zip(
            inputs,
            grad(
                outputs, inputs, [g for _, g in roots], retain_graph=retain_graph, allow_unused=True
            ),
        ):
            if g is not None:
                tensor._accumulate_grad(g._data, _accumulate_lock, owned=True)
        return
    leaves = [(output, g) for output, g in roots if output._node is None]
    for output, g in leaves:
        output._accumulate_grad(output._hooked_grad(g), _accumulate_lock)
    for output, g in roots:
        if output._node is not None and output._retains_grad:
            output._accumulate_grad(g, _accumulate_lock)
    made = [(output, g) for output, g in roots if output._node is not None]
    if made:
        _walk(made, bool(retain_graph))
