"""The backward walk: the third file of the engine (read tensor.py and function.py first).

`Tensor.backward()` calls `backward_from`, which calls `walk`: visit the graph's nodes in
reverse topological order (`graph_nodes`), call each node's backward with the gradients of its
outputs, undo broadcasting with `sum_to`, and pass each input's gradient on to the node that
made it. What becomes of the gradients that reach leaves is the one separate step, a sink
(grad_sinks.py): `.grad` for `backward()`, the chosen tensors for `mg.autograd.grad()`.

Nothing here knows what a Tensor is beyond its fields: nodes, arrays and sinks only.
create_graph=True runs the same walk with other `steps` (higher_order.py, a later reading).
"""

import numpy as np

from . import grad_sinks


def sum_to(grad, shape):
    """Sum `grad` down to `shape`, undoing numpy broadcasting (the one place this is done)."""
    if grad.shape == tuple(shape):
        return grad
    return grad.sum(axis=broadcast_axes(grad.shape, shape), keepdims=True).reshape(shape)


def broadcast_axes(grad_shape, shape):
    """The axes of grad_shape that broadcasting an array of `shape` to it added or stretched."""
    extra = len(grad_shape) - len(shape)
    kept_ones = (i + extra for i, size in enumerate(shape) if size == 1)
    return tuple(range(extra)) + tuple(i for i in kept_ones if grad_shape[i] != 1)


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


class ArraySteps:
    """The walk's three steps on gradient arrays (create_graph=True: higher_order.py's)."""

    zeros = staticmethod(np.zeros)

    @staticmethod
    def backward(node, out_grads, retain_graph):
        return node.run_backward(out_grads, retain_graph)

    @staticmethod
    def conform(grad, tensor):
        return sum_to(np.asarray(grad, dtype=tensor.dtype), tensor.shape)


def walk(roots, retain_graph, sink, steps=ArraySteps):
    """The backward walk from roots [(tensor with a node, gradient array)], their gradients
    summed; `sink` (grad_sinks.py) takes the gradients that arrive, and what its finish()
    returns is returned."""
    pending = {}  # id(node) -> the gradient of each of its outputs, summed over their uses
    for output, grad in roots:
        _add(pending, output._node, output._output_index, grad)
    starts = {id(output._node): output._node for output, _ in roots}.values()
    for node in reversed(graph_nodes(*starts)):
        out_grads = pending.pop(id(node), None)
        if out_grads is None:  # unreachable from the outputs through differentiable paths
            continue
        out_grads = [
            g if g is not None else steps.zeros(shape, dtype)
            for g, (shape, dtype) in zip(out_grads, node.output_meta)
        ]
        out_grads = sink.before_node(node, out_grads)
        in_grads = steps.backward(node, out_grads, retain_graph)
        edges = zip(node.inputs, node.input_edges, node.needs_input_grad, in_grads)
        for tensor, (child, index), needed, g in edges:
            if g is None or not needed:
                continue
            g = steps.conform(g, tensor)
            if child is None:  # a leaf
                sink.at_leaf(tensor, g)
            else:
                sink.at_intermediate(tensor, child, g)
                _add(pending, child, index, g)
    return sink.finish()


def _add(pending, node, index, grad):
    slots = pending.setdefault(id(node), [None] * len(node.output_meta))
    slots[index] = grad if slots[index] is None else slots[index] + grad


def backward_from(output, grad, retain_graph, sink, steps=ArraySteps):
    """d(output)/d(leaf) for every leaf, weighted by grad (an array of output's shape), handed
    to `sink` (for backward(): grad_sinks.AccumulateGrads, which adds it to `.grad`)."""
    if output._node is None:  # a leaf: d output / d output = 1
        grad_sinks.accumulate(output, grad_sinks.run_hooks(output._hooks, grad))
        return None
    if output._retains_grad:  # the output is never an input in its own graph: its grad is here
        grad_sinks.accumulate(output, grad)
    return walk([(output, grad)], retain_graph, sink, steps)
