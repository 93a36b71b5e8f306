"""The backward walk: the second file of the engine (read tensor.py first).

`Tensor.backward()` calls `backward_from`, which calls `walk`: visit the graph's nodes in
reverse topological order (`graph_nodes`), call each node's backward with the gradients of its
outputs, undo broadcasting with `sum_to`, and pass each input's gradient on to the node that made
it. What becomes of the gradients that reach leaves is the one separate step, a delivery
(delivery.py): `.grad` for `backward()`, the chosen tensors for `grad()`.

This module also has torch.autograd's functions `grad` and `backward`, and its grad-mode names
(`no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`: grad_mode.py).
"""

import numpy as np

from . import delivery
from .errors import ShapeError
from .grad_mode import (  # torch.autograd's names of them
    enable_grad,
    inference_mode,
    is_grad_enabled,
    module_frame,
    module_scope,
    no_grad,
    set_grad_enabled,
)
from .tensor import Tensor

__all__ = [
    "backward",
    "enable_grad",
    "grad",
    "inference_mode",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
    "module_frame",
    "module_scope",
    "graph_nodes",
    "sum_to",
]


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


def walk(roots, retain_graph, into):
    """The backward walk from roots [(tensor with a node, gradient array)], their gradients
    summed; `into` (a delivery.IntoGrads or delivery.ToTargets) takes the gradients that arrive,
    and what its finish() returns is returned."""
    pending = {}  # id(node) -> the gradient of each of its outputs, summed over their uses
    for output, grad in roots:
        _add(pending, output._node, output._output_index, grad)
    starts = {id(output._node): output._node for output, _ in roots}.values()
    for node in reversed(graph_nodes(*starts)):
        out_grads = pending.pop(id(node), None)
        if out_grads is None:  # unreachable from the outputs through differentiable paths
            continue
        out_grads = [
            g if g is not None else np.zeros(shape, dtype)
            for g, (shape, dtype) in zip(out_grads, node.output_meta)
        ]
        out_grads = into.at_node(node, out_grads)
        in_grads = node.run_backward(out_grads, retain_graph)
        for tensor, (child, index), needed, g in zip(
            node.inputs, node.input_edges, node.needs_input_grad, in_grads
        ):
            if g is None or not needed:
                continue
            g = sum_to(np.asarray(g, dtype=tensor.dtype), tensor.shape)
            if child is None:  # a leaf
                into.at_leaf(tensor, g)
            else:
                into.at_made(tensor, child, g)
                _add(pending, child, index, g)
    return into.finish()


def _add(pending, node, index, grad):
    slots = pending.setdefault(id(node), [None] * len(node.output_meta))
    slots[index] = grad if slots[index] is None else slots[index] + grad


def backward_from(output, grad, retain_graph, into=None):
    """Tensor.backward(grad): d(output)/d(leaf) into `.grad` of each leaf that requires grad (and
    of retain_grad() tensors); grad: None for one number. into: IntoGrads(), or a wrapper of it."""
    if not output._requires_grad:
        raise RuntimeError(
            "backward() called on a tensor that does not require grad "
            "(no input had requires_grad=True, or it was computed under no_grad)"
        )
    if grad is None:
        if output._data.size != 1:
            raise RuntimeError(
                f"backward() without a gradient argument needs a scalar output; got shape "
                f"{output.shape}. Pass grad= of that shape, or reduce first (.sum())."
            )
        grad = np.ones_like(output._data)
    else:
        grad = grad._data if isinstance(grad, Tensor) else np.asarray(grad, dtype=output.dtype)
        if grad.shape != output.shape:
            raise ShapeError(
                f"backward(): gradient shape {grad.shape} does not match output shape "
                f"{output.shape}"
            )
    if output._node is None:  # a leaf: d output / d output = 1
        delivery.accumulate(output, delivery.run_hooks(output._hooks, grad))
        return
    if output._retains_grad:  # the output is never an input in its own graph: its grad is here
        delivery.accumulate(output, grad)
    walk([(output, grad)], retain_graph, into or delivery.IntoGrads())


# ---------------------------------------------------------------------------------------
# torch.autograd.grad and torch.autograd.backward


def _as_tensors(values, name, op):
    values = [values] if isinstance(values, Tensor) else list(values)
    for position, value in enumerate(values):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{op}: {name} must be Tensors; item {position} is a {type(value).__name__}"
            )
    return values


def _roots(outputs, grad_outputs, name):
    """[(output, gradient array)] per output; a one-number output's gradient may be None (1)."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    else:
        grad_outputs = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(
            f"{name}: got {len(outputs)} outputs but {len(grad_outputs)} gradients for them"
        )
    roots = []
    for position, (output, grad) in enumerate(zip(outputs, grad_outputs)):
        if not output.requires_grad:
            raise RuntimeError(
                f"{name}: output {position} does not require grad (no input had "
                "requires_grad=True, "
                f"or it was computed under no_grad)"
            )
        if grad is None:
            if output.numel() != 1:
                raise RuntimeError(
                    f"{name}: output {position} has shape {output.shape}; a gradient for it is "
                    "needed "
                    f"(grad_outputs), only a single-number output can go without"
                )
            grad = np.ones(output.shape, output.dtype)
        else:
            grad = grad._data if isinstance(grad, Tensor) else np.asarray(grad)
            if grad.shape != output.shape:
                raise ShapeError(
                    f"{name}: the gradient for output {position} has shape {grad.shape}; the "
                    "output's "
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
    """torch.autograd.grad: the gradients of outputs (weighted by grad_outputs, which a
    single-number output may leave out) with respect to each of inputs, as a tuple of tensors
    without a graph. No `.grad` changes. An input the outputs do not depend on raises, unless
    allow_unused=True (then None, or zeros with materialize_grads=True). The graph is freed
    unless retain_graph=True. create_graph=True (gradients of gradients) is not supported:
    backward passes here compute with numpy arrays, not with recorded ops."""
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
        walked = walk(made, bool(retain_graph), delivery.ToTargets(inputs))
        captured = [
            w if c is None else (c if w is None else c + w) for c, w in zip(captured, walked)
        ]
    results = []
    for position, (tensor, g) in enumerate(zip(inputs, captured)):
        if g is None and not (allow_unused or materialize_grads):
            raise RuntimeError(
                f"grad: input {position} (shape {tensor.shape}) was not used to compute the "
                "outputs; "
                f"pass allow_unused=True to get None for it"
            )
        if g is None and materialize_grads:
            g = np.zeros(tensor.shape, tensor.dtype)
        results.append(None if g is None else Tensor._wrap(np.array(g, dtype=tensor.dtype)))
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
                delivery.accumulate(tensor, g._data, owned=True)
        return
    leaves = [(output, g) for output, g in roots if output._node is None]
    for output, g in leaves:
        delivery.accumulate(output, delivery.run_hooks(output._hooks, g))
    for output, g in roots:
        if output._node is not None and output._retains_grad:
            delivery.accumulate(output, g)
    made = [(output, g) for output, g in roots if output._node is not None]
    if made:
        walk(made, bool(retain_graph), delivery.IntoGrads())
