"""The passes of mg.viz.draw, between trace() and the DOT text. Each takes the traced graph,
`vertices` (tensors and op nodes, the EarlierValue vertices of the trace, and the ArrayViews and
ModuleCall vertices made here) and `edges` ((tail, head) pairs), and returns new lists or a
table keyed by vertex (tensors hash by identity); none changes a tensor or an op.
"""

import contextlib
import gc

import numpy as np

from ..engine import Function, Tensor
from ..parameter import Parameter


@contextlib.contextmanager
def cycle_collector_paused():
    """Drawing makes a tuple per edge and no cycles, yet on a big graph those tuples set the
    cycle collector off to walk every tensor and op again and again (a third to half the time
    of a 50,000-node drawing). It is process-wide: other threads' collections only wait."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class EarlierValue:
    """The value `tensor` had when an op used it, before an in-place change gave the tensor a
    new node (`b = a * 3; a.mul_(2)`: b's Mul used the old `a`). It is output `index` of
    `grad_fn`, or, when grad_fn is None, a leaf without grad that has since been given a node.
    Its array is gone: it is drawn with the tensor's name, shape and dtype only."""

    def __init__(self, tensor, node, index):
        self.tensor, self.grad_fn, self.index = tensor, node, index
        self.requires_grad = node is not None
        self.shape, self.dtype = node.output_meta[index] if node else (tensor.shape, tensor.dtype)


class ArrayViews:
    """One vertex for `count` different views of one numpy array: leaves without grad."""

    grad_fn, requires_grad = None, False

    def __init__(self, tensor, count):
        self.tensor, self.count = tensor, count


class ModuleCall:
    """One call of a collapsed module, drawn as one box in place of the `op_count` ops it
    made; `path` is its cluster, `parameters` the weights listed in it."""

    def __init__(self, name, class_name, path):
        self.name, self.class_name, self.path = name, class_name, path
        self.op_count, self.parameters = 0, []


class ScaleStep:
    """The `scale` of a Softmax (softmax(x * scale), attention's 1/sqrt(d)) drawn as a step of
    its own before it. Only the drawing splits it: one node, `op`, computes and differentiates
    both, and the walk visits them as one step."""

    grad_fn, requires_grad = None, True

    def __init__(self, op):
        self.op, self.scale = op, float(op.attrs["scale"])


SCALED_OPS = ("Softmax", "LogSoftmax")  # ops whose `scale` setting is drawn as a ScaleStep
FOLDED_OPS = ("Reshape", "Permute")  # what draw(fold_views=True) folds into the edges


def name_of(tensor, names):
    """The name given in draw's `params` (names: tensor -> name), else the tensor's `.name`."""
    return names.get(tensor) or tensor.name


def kind_of(vertex, outputs, names):
    """input, parameter, intermediate or output (tensors), op, or module (a collapsed call)."""
    if isinstance(vertex, (Function, ModuleCall, ScaleStep)):
        return "module" if isinstance(vertex, ModuleCall) else "op"
    if vertex in outputs:
        return "output"
    if vertex.grad_fn is not None:
        return "intermediate"
    if vertex.requires_grad and (vertex in names or isinstance(vertex, Parameter)):
        return "parameter"
    return "input"


def is_constant(vertex, names):
    """A number written in the code (x * 2): a one-element leaf without grad or name."""
    return (
        isinstance(vertex, Tensor)
        and vertex.grad_fn is None
        and not vertex.requires_grad
        and vertex._data.size <= 1
        and not name_of(vertex, names)
    )


def merge_views(vertices, edges, keep):
    """Draw the leaves without grad that view one numpy array as one vertex (an ArrayViews
    if they view it differently): ops on tensors without grad are not recorded, so an input
    sliced at each of 256 steps reaches the graph as 256 leaves. `keep` are drawn as they are."""
    groups = {}  # id(the array that owns the memory) -> the leaves viewing it
    for vertex in vertices:
        if (
            isinstance(vertex, Tensor)
            and vertex.grad_fn is None
            and not vertex.requires_grad
            and vertex not in keep
        ):
            owner = vertex._data
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            groups.setdefault(id(owner), []).append(vertex)
    drawn_as = {}
    for leaves in groups.values():
        if len(leaves) > 1:
            views = {
                (t._data.__array_interface__["data"][0], t.shape, t._data.strides, t.dtype.str)
                for t in leaves
            }
            merged = leaves[0] if len(views) == 1 else ArrayViews(leaves[0], len(views))
            drawn_as.update((t, merged) for t in leaves)
    if not drawn_as:
        return vertices, edges
    vertices = {drawn_as.get(v, v): None for v in vertices}  # a dict keeps the first place of each
    return list(vertices), [(drawn_as.get(tail, tail), head) for tail, head in edges]


def module_calls(frame, known):
    """The nn.Module calls around an op, from the frame (module, outer frame) the core records
    on it: (calls, clusters), outermost first. calls are (dotted name, class name, frame);
    clusters the (dotted name, class name) pairs, which calls of one module share. Names are
    relative to the outermost module, named by its class: Net, first, first.inner. Calls of one
    module have equal frames, so `known` (the cache) is keyed by id and holds each frame.
    """
    if frame is None:
        return (), ()
    if id(frame) not in known:
        module, outer_frame = frame
        calls = module_calls(outer_frame, known)[0]  # recursion as deep as the modules nest
        name = class_name = type(module).__name__
        if calls:
            parent = calls[-1][2][0]  # the module whose forward made this call
            child = next((n for n, m in parent.named_modules() if m is module and n), None)
            if child is not None:
                name = child if len(calls) == 1 else f"{calls[-1][0]}.{child}"
        calls += ((name, class_name, frame),)
        known[id(frame)] = (calls, tuple((name, class_name) for name, class_name, _ in calls))
    return known[id(frame)]


def collapse(vertices, edges, match, known_calls, keep, names):
    """Draw each call of a module whose dotted name or class name is in `match` as one
    ModuleCall box in place of its ops (the outermost match wins when they nest). The box
    hides its ops, the tensors they make that nothing outside it uses (unless in `keep`),
    and the numbers in its code; an input used by several of its ops gets one edge into it.
    Returns (vertices, edges, {op: the ModuleCall drawn in its place})."""
    # the last two by id(an op's frame), id(a matching call's frame)
    box_of_op, box_of_frame, boxes = ({}, {}, {})
    for op in vertices:
        if isinstance(op, Function):
            frame = op.module_frame
            if id(frame) not in box_of_frame:  # ops made by one call share a frame: look once
                box_of_frame[id(frame)] = None
                calls, paths = module_calls(frame, known_calls)
                for depth, (name, class_name, call) in enumerate(calls):
                    if name in match or class_name in match:
                        if id(call) not in boxes:
                            boxes[id(call)] = ModuleCall(name, class_name, paths[:depth])
                        box_of_frame[id(frame)] = boxes[id(call)]
                        break
            if box_of_frame[id(frame)] is not None:
                box_of_op[op] = box_of_frame[id(frame)]
                box_of_op[op].op_count += 1
    if not box_of_op:
        return vertices, edges, box_of_op
    # Backwards through the edges, every use of a tensor comes before the edge from the op
    # that made it: that edge is kept if something outside the box used the tensor.
    kept, joined, used_outside = [], set(), set(keep)
    for tail, head in reversed(edges):
        if tail in box_of_op:
            if head in used_outside:
                kept.append((box_of_op[tail], head))
        elif head not in box_of_op:
            used_outside.add(tail)
            kept.append((tail, head))
        elif box_of_op.get(tail.grad_fn) is not box_of_op[head] and not is_constant(tail, names):
            used_outside.add(tail)
            if (tail, box_of_op[head]) not in joined:
                joined.add((tail, box_of_op[head]))
                kept.append((tail, box_of_op[head]))
    vertices = {
        box_of_op.get(v, v): None for v in vertices if v in used_outside or isinstance(v, Function)
    }
    return list(vertices), kept[::-1], box_of_op  # a box takes the place of its first op


def list_parameters_in_boxes(vertices, edges, keep, outputs, names):
    """A parameter that only one collapsed call uses is listed in that call's box instead of
    drawn (an LSTM's eight weights would make the picture wide); those in `keep` stay."""
    users = {}
    for tail, head in edges:
        users.setdefault(tail, []).append(head)
    listed = set()
    for vertex in vertices:
        heads = users.get(vertex)
        if (
            heads
            and isinstance(heads[0], ModuleCall)
            and all(head is heads[0] for head in heads)
            and vertex not in keep
            and kind_of(vertex, outputs, names) == "parameter"
        ):
            heads[0].parameters.append(vertex)
            listed.add(vertex)
    return [v for v in vertices if v not in listed], [(t, h) for t, h in edges if t not in listed]


def clusters(vertices, edges, known_calls, kinds, names):
    """vertex -> its cluster path. An op sits in the clusters of the module calls that made
    it, a tensor with the op that made it, a weight or a number in the code in the innermost
    cluster holding every op that uses it, and an input outside every module (no entry)."""
    path = {}
    for vertex in vertices:
        if isinstance(vertex, Function):
            path[vertex] = module_calls(vertex.module_frame, known_calls)[1]
        elif isinstance(vertex, ModuleCall):
            path[vertex] = vertex.path
        elif isinstance(vertex, ScaleStep):
            path[vertex] = module_calls(vertex.op.module_frame, known_calls)[1]
    follows_users = {v for v in vertices if kinds[v] == "parameter" or is_constant(v, names)}
    for tail, head in edges:
        if not isinstance(head, (Function, ModuleCall, ScaleStep)):  # tail made head
            path[head] = path[tail]
        elif tail in follows_users:
            path[tail] = _common_prefix(path[tail], path[head]) if tail in path else path[head]
    return path


def fold_views(vertices, edges, traced_edges, keep, names):
    """Fold each chain of FOLDED_OPS (Reshape, Permute: ops that only move numbers around) into
    the edge it makes: the chain's first input goes straight to the op that uses the chain's
    last output, on an edge labelled with the chain's ops. An op is folded when its output has
    no name, is not in `keep` and is used by one op of the graph (`traced_edges`, the edges
    before collapse), so the gradient along the edge is that one use's.

    Returns (vertices, edges, {edge index: label}, {folded op: its output})."""
    uses = {}
    for tail, head in traced_edges:
        if isinstance(head, Function):
            uses[tail] = uses.get(tail, 0) + 1
    made_by, inputs = {}, {}
    for tail, head in edges:
        if isinstance(tail, Function) and not isinstance(head, (Function, ModuleCall)):
            made_by[head] = tail
        elif isinstance(head, Function):
            inputs.setdefault(head, []).append(tail)
    folded = {
        op: output
        for output, op in made_by.items()
        if op.name in FOLDED_OPS
        and len(inputs.get(op, ())) == 1
        and uses.get(output) == 1
        and output not in keep
        and not name_of(output, names)
    }
    if not folded:
        return vertices, edges, {}, folded
    folded_outputs = {output: op for op, output in folded.items()}

    def source(vertex):  # the chain's first input, and its ops in order
        chain = []
        while vertex in folded_outputs:
            chain.append(folded_outputs[vertex].name)
            vertex = inputs[folded_outputs[vertex]][0]
        return vertex, " · ".join(reversed(chain))

    kept, labels = [], {}
    for tail, head in edges:
        if tail in folded or head in folded:
            continue  # an edge inside a chain
        if tail in folded_outputs:
            tail, labels[len(kept)] = source(tail)
        kept.append((tail, head))
    hidden = set(folded) | set(folded_outputs)
    return [v for v in vertices if v not in hidden], kept, labels, folded


def split_scales(vertices, edges):
    """A ScaleStep before every SCALED_OPS op whose scale is not 1: the edge from its first
    input leads to the ScaleStep, and a new edge (added last, so that the indices of the others
    hold) from the ScaleStep to the op. Returns (vertices, edges, {op: its ScaleStep})."""
    steps = {
        v: ScaleStep(v)
        for v in vertices
        if isinstance(v, Function) and v.name in SCALED_OPS and v.attrs.get("scale", 1.0) != 1.0
    }
    if not steps:
        return vertices, edges, steps
    edges, first = list(edges), set()
    for index, (tail, head) in enumerate(edges):
        if head in steps and head not in first:  # the op's first input: the scores
            first.add(head)
            edges[index] = (tail, steps[head])
            edges.append((steps[head], head))
    ordered = []
    for vertex in vertices:
        ordered += [steps[vertex], vertex] if vertex in steps else [vertex]
    return ordered, edges, steps


def _common_prefix(a, b):
    length = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return a[:length]


def paths_from(starts, edges):
    """Indices of the edges on some path from a start vertex to an output: every edge whose
    tail is a start or lies downstream of one (every drawn vertex leads to an output)."""
    if not starts:
        return set()
    out_edges = {}
    for index, (tail, _) in enumerate(edges):
        out_edges.setdefault(tail, []).append(index)
    reached, stack, marked = set(starts), list(starts), set()
    while stack:
        for index in out_edges.get(stack.pop(), ()):
            marked.add(index)
            if edges[index][1] not in reached:
                reached.add(edges[index][1])
                stack.append(edges[index][1])
    return marked
