"""torch.autograd's functions: `grad`, `backward`, and the grad-mode names.

The engine (minigrad/engine/) does the work. `grad` walks the graph into a `CaptureGrads` sink
(defined here: the chosen tensors' gradients, no `.grad` touched), `backward` into the
engine's `AccumulateGrads` (the `.grad` of leaves). The grad-mode switches are the engine's
grad_mode.py, under their torch.autograd names; `graph_nodes` and `sum_to` are the walk's.
"""

import numpy as np

from .engine import Tensor, grad_sinks, higher_order, walk
from .engine.grad_mode import enable_grad, inference_mode, is_grad_enabled, module_frame
from .engine.grad_mode import module_scope, no_grad, set_grad_enabled
from .engine.walk import graph_nodes, sum_to
from .engine.anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .errors import ShapeError

__all__ = ["backward", "enable_grad", "grad", "inference_mode", "is_grad_enabled", "no_grad"]
__all__ += ["set_grad_enabled", "module_frame", "module_scope", "graph_nodes", "sum_to"]
__all__ += ["detect_anomaly", "is_anomaly_enabled", "set_detect_anomaly"]


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
                f"{name}: output {position} does not require grad "
                "(no input had requires_grad=True, or it was computed under no_grad)"
            )
        if grad is None:
            if output.numel() != 1:
                raise RuntimeError(
                    f"{name}: output {position} has shape {output.shape}; a gradient for it is "
                    "needed (grad_outputs), only a single-number output can go without"
                )
            grad = np.ones(output.shape, output.dtype)
        else:
            grad = grad._data if isinstance(grad, Tensor) else np.asarray(grad)
            if grad.shape != output.shape:
                raise ShapeError(
                    f"{name}: the gradient for output {position} has shape {grad.shape}; "
                    f"the output's is {output.shape}"
                )
            grad = grad.astype(output.dtype, copy=False)
        roots.append((output, grad))
    return roots


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):  # fmt: skip
    """torch.autograd.grad: the gradients of outputs (weighted by grad_outputs, which a
    single-number output may leave out) with respect to each of inputs, as a tuple of tensors
    without a graph. No `.grad` changes. An input the outputs do not depend on raises, unless
    allow_unused=True (then None, or zeros with materialize_grads=True). The graph is freed
    unless retain_graph=True. create_graph=True records the backward pass, so the gradients
    have a graph and can be differentiated again (retain_graph then defaults to True; the ops
    that support it: docs/higher-order.md)."""
    outputs, inputs = _as_tensors(outputs, "outputs", "grad"), _as_tensors(inputs, "inputs", "grad")
    for position, tensor in enumerate(inputs):
        if not tensor.requires_grad:
            raise RuntimeError(
                f"grad: input {position} (shape {tensor.shape}) does not require grad"
            )
    roots = _roots(outputs, grad_outputs, "grad")
    steps, keep = walk.ArraySteps, bool(retain_graph)
    if create_graph:
        roots = _recorded_roots(roots, grad_outputs)
        steps, keep = higher_order.RecordedSteps, retain_graph is None or bool(retain_graph)
    captured = [None] * len(inputs)
    for position, tensor in enumerate(inputs):  # a leaf output that is also an input: d x / d x
        for output, g in roots:
            if output is tensor and output._node is None:
                captured[position] = g if captured[position] is None else captured[position] + g
    made = [(output, g) for output, g in roots if output._node is not None]
    if made:
        walked = walk.walk(made, keep, CaptureGrads(inputs), steps)
        captured = [
            w if c is None else (c if w is None else c + w) for c, w in zip(captured, walked)
        ]
    results = []
    for position, (tensor, g) in enumerate(zip(inputs, captured)):
        if g is None and not (allow_unused or materialize_grads):
            raise RuntimeError(
                f"grad: input {position} (shape {tensor.shape}) was not used to compute the "
                "outputs; pass allow_unused=True to get None for it"
            )
        if g is None and materialize_grads:
            g = np.zeros(tensor.shape, tensor.dtype)
        if create_graph and g is not None:
            results.append(steps.conform(g, tensor))
            continue
        results.append(None if g is None else Tensor._wrap(np.array(g, dtype=tensor.dtype)))
    return tuple(results)


def _recorded_roots(roots, grad_outputs):
    """create_graph=True: each output's gradient as a Tensor; one given keeps its graph."""
    given = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs or ())
    given += [None] * (len(roots) - len(given))
    return [
        (output, higher_order.start_gradient(output, g if isinstance(g, Tensor) else array, "grad"))
        for (output, array), g in zip(roots, given)
    ]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """torch.autograd.backward: `.backward()` of several outputs at once (their gradients summed
    in one walk, so a graph they share is walked once). inputs: only these leaves get `.grad`.
    create_graph=True: the backward recorded, so `.grad` has a graph (see grad)."""
    outputs = _as_tensors(tensors, "tensors", "backward")
    roots = _roots(outputs, grad_tensors, "backward")
    steps, keep = walk.ArraySteps, bool(retain_graph)
    if create_graph:
        roots = _recorded_roots(roots, grad_tensors)
        steps, keep = higher_order.RecordedSteps, retain_graph is None or bool(retain_graph)
    if inputs is not None:
        inputs = _as_tensors(inputs, "inputs", "backward")
        weights = [g for _, g in roots]
        grads = grad(outputs, inputs, weights, keep, create_graph, allow_unused=True)
        for tensor, g in zip(inputs, grads):
            if g is not None:
                grad_sinks.accumulate(tensor, g if create_graph else g._data, owned=True)
        return
    leaves = [(output, g) for output, g in roots if output._node is None]
    for output, g in leaves:
        grad_sinks.accumulate(output, grad_sinks.run_hooks(output._hooks, g))
    for output, g in roots:
        if output._node is not None and output._retains_grad:
            grad_sinks.accumulate(output, g)
    made = [(output, g) for output, g in roots if output._node is not None]
    if made:
        walk.walk(made, keep, grad_sinks.AccumulateGrads(), steps)


class CaptureGrads:
    """mg.autograd.grad: the gradient reaching each target (None where none does); no `.grad`
    changes. A non-leaf target is the output slot of the node that made it."""

    def __init__(self, targets):
        self.captured = [None] * len(targets)
        self.leaf_targets, self.made_targets = {}, {}  # id(leaf) / (id(node), index) -> positions
        for position, tensor in enumerate(targets):
            if tensor._node is None:
                self.leaf_targets.setdefault(id(tensor), []).append(position)
            else:
                key = (id(tensor._node), tensor._output_index)
                self.made_targets.setdefault(key, []).append(position)
        self.leaves = {}  # id(leaf) -> (leaf, gradient summed so far), for targets and hooks

    def before_node(self, node, grads):
        grads = grad_sinks.hooked_outputs(node, grads)
        for index, g in enumerate(grads):
            for position in self.made_targets.get((id(node), index), ()):
                self.captured[position] = g
        return grads

    def at_leaf(self, leaf, grad):
        if leaf._hooks or id(leaf) in self.leaf_targets:
            grad_sinks.sum_into(self.leaves, leaf, grad)

    def at_intermediate(self, tensor, node, grad):
        pass

    def finish(self):
        for leaf, grad in self.leaves.values():
            grad = grad_sinks.run_hooks(leaf._hooks, grad) if leaf._hooks else grad
            for position in self.leaf_targets.get(id(leaf), ()):
                self.captured[position] = grad
        return self.captured
