"""create_graph=True: the backward pass recorded, so that gradients have a graph of their own.

A later reading (after walk.py). The plain walk runs each node's backward on numpy arrays. With
create_graph=True the same walk runs with `RecordedSteps`: the gradients are Tensors and each
node's derivative is computed with recorded ops, so the result can be differentiated again, to
any order. An op says how with its class attribute `higher_order`:

- "backward": its one backward is written over `xp`, the namespace of its gradient (numpy for
  an array, minigrad's ops for a Tensor: ops/namespace.py). Here `ctx.saved` holds Tensors:
  the op's own inputs and outputs with their graph; any other saved array stays an array, a
  constant (so an op is marked only when every other array it saves is one: a mask, an index).
- "composite": an op with a fused kernel (softmax, layer_norm, attention) declares
  `composite(ctx, *inputs)`, its forward written with covered ops. Its derivative is that
  composite's: the composite is run on stand-ins of the inputs, walked with these same steps,
  and the nodes made are joined to the real inputs (`_rebind`).

Any other op refuses create_graph=True, naming itself and docs/higher-order.md.
"""

import numpy as np

from . import grad_mode, grad_sinks, versions, walk
from .tensor import Tensor

DOCS = "docs/higher-order.md lists the ops that support it"


class RecordedSteps:
    """The walk's steps (walk.ArraySteps) on Tensors, each node's derivative recorded."""

    @staticmethod
    def zeros(shape, dtype):
        return Tensor._wrap(np.zeros(shape, dtype))

    @staticmethod
    def backward(node, out_grads, retain_graph):
        kind = getattr(type(node), "higher_order", None)
        if kind is None:
            raise NotImplementedError(
                f"create_graph=True: {node.name} has no recorded derivative, so its gradient "
                f"cannot be differentiated again ({DOCS})"
            )
        if node.saved is None:
            node.run_backward(out_grads, retain_graph)  # raises: the graph was freed
        versions.check(node)
        with grad_mode.enable_grad():
            if kind == "composite":
                grads = _expand(node, out_grads)
            else:
                grads = type(node).backward(RecordedContext(node), *out_grads)
        return grads if isinstance(grads, tuple) else (grads,)

    @staticmethod
    def conform(grad, tensor):
        if not isinstance(grad, Tensor):  # a constant the backward made (zeros, a mask)
            grad = Tensor._wrap(np.asarray(grad, dtype=tensor.dtype))
        if grad.dtype != tensor.dtype:
            grad = grad.to(tensor.dtype)
        if grad.shape != tensor.shape:
            axes = walk.broadcast_axes(grad.shape, tensor.shape)
            grad = grad.sum(dim=axes, keepdim=True).reshape(tensor.shape)
        return grad


class RecordedContext:
    """The ctx a backward sees under create_graph: the node's attributes, with its saved inputs
    and outputs as Tensors of the graph (any other saved array stays an array: a constant)."""

    def __init__(self, node):
        self._node = node
        self.saved = tuple(_saved_tensor(node, array) for array in node.saved)

    def __getattr__(self, name):
        return getattr(self._node, name)


def _saved_tensor(node, array):
    if not isinstance(array, np.ndarray):
        return array
    found = [t for t in node.inputs if t._data is array]
    found += [_output(node, k) for k, made in enumerate(node._output_ids) if made == id(array)]
    if not found:  # a mask, an index: a constant, left an array
        return array
    if any(t is not found[0] for t in found[1:]):
        raise RuntimeError(
            f"create_graph=True: {node.name} was given one array as two different tensors "
            "(x and x.detach()?), so which of them its gradient depends on is unknown; "
            "pass x.clone() for one of them"
        )
    return found[0]


def _output(node, index):
    """Output `index` of node as a Tensor of the graph (the original may be gone)."""
    shape, dtype = node.output_meta[index]
    array = next(a for a in node.saved if id(a) == node._output_ids[index])
    tensor = Tensor._wrap(array, requires_grad=dtype.kind == "f")
    if dtype.kind == "f":
        tensor._node, tensor._output_index = node, index
    return tensor


def _stand_in(tensor):
    """A leaf with tensor's array and version box: what a composite is run on."""
    leaf = Tensor._wrap(tensor._data, requires_grad=tensor.requires_grad)
    leaf._version = tensor._version
    return leaf


def _expand(node, out_grads):
    """The gradients of a composite node's inputs: its composite run and walked on stand-ins,
    then joined to the real inputs and output gradients."""
    inputs = [t for t in node.inputs]
    stand_ins = [_stand_in(t) for t in inputs]
    weights = [_stand_in(g) if g.requires_grad else g for g in out_grads]
    outputs = type(node).composite(node, *stand_ins)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    sink = _LeafSums(stand_ins)
    roots = []
    for output, weight in zip(outputs, weights):
        if output._node is not None:
            roots.append((output, weight))
        elif output.requires_grad:  # the composite passed an input through
            sink.at_leaf(output, weight)
    if roots:
        walk.walk(roots, True, sink, RecordedSteps)
    real = {id(s): t for s, t in zip(stand_ins + weights, inputs + list(out_grads))}
    grads = [None if g is None else real.get(id(g), g) for g in sink.sums]
    _rebind([g for g in grads if g is not None and g._node is not None], real)
    return tuple(grads)


class _LeafSums:
    """A sink: the gradient summed at each stand-in (the only leaves a composite's graph has)."""

    def __init__(self, leaves):
        self.positions = {id(leaf): k for k, leaf in enumerate(leaves) if leaf.requires_grad}
        self.sums = [None] * len(leaves)

    def before_node(self, node, grads):
        return grads

    def at_leaf(self, leaf, grad):
        k = self.positions.get(id(leaf))
        if k is not None:
            self.sums[k] = grad if self.sums[k] is None else self.sums[k] + grad

    def at_intermediate(self, tensor, node, grad):
        pass

    def finish(self):
        return self.sums


def _rebind(tensors, real):
    """Point the nodes made from stand-ins at the tensors they stand in for. Every node the
    gradients reach is new (the stand-ins are the graph's only leaves that require grad)."""
    for node in walk.graph_nodes(*{id(t._node): t._node for t in tensors}.values()):
        if any(id(t) in real for t in node.inputs):
            node.inputs = tuple(real.get(id(t), t) for t in node.inputs)
            node.input_edges = tuple((t._node, t._output_index) for t in node.inputs)


def start_gradient(tensor, gradient, caller):
    """The gradient a recorded backward starts from: a Tensor given (its graph kept, so the
    result can be differentiated with respect to it), else ones or the array as a constant."""
    if isinstance(gradient, Tensor):
        tensor._start_gradient(gradient._data, caller)  # its checks
        return gradient if gradient.dtype == tensor.dtype else gradient.to(tensor.dtype)
    return Tensor._wrap(tensor._start_gradient(gradient, caller))


def _backward_recorded(tensor, gradient, retain_graph):
    """Tensor.backward(create_graph=True): `.grad` of every leaf, with its graph. The graph
    is kept (retain_graph defaults to True here, as in torch): its gradient's graph uses it."""
    gradient = start_gradient(tensor, gradient, "backward()")
    keep = True if retain_graph is None else bool(retain_graph)
    walk.backward_from(tensor, gradient, keep, grad_sinks.AccumulateGrads(), RecordedSteps)


Tensor._backward_recorded = _backward_recorded
