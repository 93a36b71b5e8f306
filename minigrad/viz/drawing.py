"""trace, draw, vertex_ids and render: the graph as lists, as a graphviz.Digraph, as the node
ids of the drawing, and as a picture on disk.

trace() follows the nodes' `input_edges`, as backward() does: where a tensor was changed in
place after an op used it, the op's input is drawn as the value it used (the tensor now holding
it, or an EarlierValue), so the picture is the graph the walk goes through. draw() runs the
passes of passes.py over the trace and writes the DOT text with dot.py.
"""

import pathlib

import graphviz

from ..autograd import graph_nodes
from ..engine import Function, Tensor
from ..io import atomic_file
from . import passes
from .dot import label, numbered, to_dot

__all__ = ["trace", "draw", "render", "vertex_ids", "GraphvizNotFoundError"]


@passes.cycle_collector_paused()
def trace(*outputs):
    """The graph that computed `outputs`: (vertices, edges). Vertices are the tensors and op
    nodes themselves, each op after the ops that made its inputs and followed by its inputs not yet
    listed; edges are (input, op) and (op, output) pairs, two if an op uses an input twice.

    An input changed in place after the op used it is, at that use, the value the op used: the
    tensor that holds it now (the in-place op keeps a second Tensor of the old value), else an
    EarlierValue. So the edges are the ones backward() walks, whatever was changed since."""
    ops = graph_nodes(*(t.grad_fn for t in outputs if t.grad_fn is not None))
    holders = {}  # (id(node), output index) -> the tensor holding that output now
    for tensor in [*(t for op in ops for t in op.inputs), *outputs]:
        if tensor.grad_fn is not None:
            holders.setdefault((id(tensor.grad_fn), tensor._output_index), tensor)
    vertices, edges, seen = [], [], set()
    for op in ops:
        vertices.append(op)
        for tensor, (maker, index) in zip(op.inputs, op.input_edges):
            vertex = _value_used(tensor, maker, index, holders)
            if vertex not in seen:
                _add_value(vertex, vertices, edges, seen)
            edges.append((vertex, op))
    for tensor in outputs:
        if tensor not in seen:
            _add_value(tensor, vertices, edges, seen)
    return vertices, edges


def _value_used(tensor, maker, index, holders):
    """The vertex of what an op was given as `tensor`: output `index` of the node `maker` (None:
    a leaf). That is `tensor` unless an in-place change has given it another node since."""
    if tensor.grad_fn is maker and (maker is None or tensor._output_index == index):
        return tensor
    key = (id(maker), index) if maker is not None else (None, id(tensor))
    if key not in holders:
        holders[key] = passes.EarlierValue(tensor, maker, index)
    return holders[key]


def _add_value(vertex, vertices, edges, seen):
    seen.add(vertex)
    vertices.append(vertex)
    if vertex.grad_fn is not None:  # the op that made it; None for a leaf
        edges.append((vertex.grad_fn, vertex))


def vertex_ids(*outputs, highlight=None):
    """tensor or op -> the node id draw(*outputs, highlight=highlight) gives it in the DOT text,
    which is also the <title> of its node in Graphviz's SVG: op0, op1 ... for ops, t0 ... for
    tensors, counted as to_dot counts them. For a drawing without collapse (params and the other
    options change no id); a leaf drawn merged with other views of its array gets their id."""
    return numbered_trace(outputs, highlight)[0]


def numbered_trace(outputs, highlight):
    """(vertex_ids(*outputs, highlight=highlight), trace(*outputs)), from one trace."""
    outputs, highlight = check_outputs(outputs), check_highlight(highlight)
    traced = trace(*outputs)
    vertices, edges = passes.merge_views(*traced, keep=set(outputs) | set(highlight))
    ids = numbered(vertices, lambda vertex: "op" if isinstance(vertex, Function) else "tensor")
    for (tail, _), (drawn, _) in zip(traced[1], edges):  # merge_views keeps the edges in order
        ids.setdefault(tail, ids[drawn])
    return ids, traced


@passes.cycle_collector_paused()
def draw(
    *outputs,
    params=None,
    show_grad=False,
    show_values=False,
    group_by_module=True,
    collapse=None,
    highlight=None,
    rankdir="TB",
    legend=True,
):
    """The graph that computed `outputs`, as a graphviz.Digraph.

    params: names for tensors: a dict name -> tensor, an iterable of (name, tensor) pairs, or an
        nn.Module (its named_parameters()). Otherwise a tensor's own `.name` is used.
    show_grad: add the shape and L2 norm of `.grad` to every tensor that has one.
    show_values: print the values of tensors with at most VALUES_MAX_ELEMENTS elements.
    group_by_module: put the ops each module's forward made in a cluster "name (Class)".
    collapse: module dotted names, class names or classes (nn.LSTM); each call of a matching
        module is drawn as one box (the outermost match wins when they nest). Parameters used
        only by that call are listed in the box (with their gradient norm under show_grad).
    highlight: tensors (e.g. parameters); every edge on a path from an output back to one of
        them is drawn emphasised, and only those edges. Raises ValueError for a tensor that
        is not in the drawn graph.
    rankdir: "TB" (inputs at the top), "LR", "BT" or "RL".
    legend: add a box explaining the node colours.

    Leaves without grad that view one numpy array (an input reshaped or sliced by code that
    is not recorded) are drawn as one node.
    """
    outputs, names, highlight = (
        check_outputs(outputs),
        tensor_names(params),
        check_highlight(highlight),
    )
    collapse = collapse_names(collapse)
    if rankdir not in RANKDIRS:
        raise ValueError(f"draw: rankdir must be one of {RANKDIRS}; got {rankdir!r}")
    output_set, marked, known_calls = set(outputs), set(highlight), {}
    vertices, edges = passes.merge_views(*trace(*outputs), keep=output_set | marked)
    if collapse:
        vertices, edges = passes.collapse(vertices, edges, collapse, known_calls, output_set, names)
        vertices, edges = passes.list_parameters_in_boxes(
            vertices, edges, marked, output_set, names
        )
    drawn = set(vertices)
    for tensor in highlight:
        if tensor not in drawn:
            raise ValueError(
                "draw: highlight tensor "
                f"{passes.name_of(tensor, names) or f'of shape {tensor.shape}'} is not in the "
                "drawn graph (it did not take part in computing the outputs, or it is hidden "
                "inside a collapsed module)"
            )
    kinds = {v: passes.kind_of(v, output_set, names) for v in vertices}
    paths = passes.clusters(vertices, edges, known_calls, kinds, names) if group_by_module else {}
    labels = {v: label(v, names, show_values, show_grad) for v in vertices}
    return to_dot(
        vertices,
        edges,
        kinds,
        labels,
        paths,
        marked,
        passes.paths_from(highlight, edges),
        rankdir,
        legend,
    )


# ---------------------------------------------------------------------------------------
# Checking the arguments

RANKDIRS = ("TB", "LR", "BT", "RL")


def check_outputs(outputs):
    if not outputs:
        raise TypeError("draw() needs at least one output tensor, e.g. draw(loss)")
    for index, output in enumerate(outputs):
        if not isinstance(output, Tensor):
            raise TypeError(
                f"draw: outputs must be Tensors; argument {index} is a {type(output).__name__}"
            )
    return list(dict.fromkeys(outputs))


def tensor_names(params):
    """tensor -> name, from a dict, (name, tensor) pairs or anything with named_parameters()."""
    if params is None:
        return {}
    if hasattr(params, "named_parameters"):
        params = params.named_parameters()
    names = {}
    for entry in params.items() if isinstance(params, dict) else params:
        if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], Tensor)):
            raise TypeError(
                "draw: params must be a dict name -> Tensor, (name, Tensor) pairs or an nn.Module; "
                f"got an entry {entry!r:.60}"
            )
        names.setdefault(entry[1], str(entry[0]))
    return names


def collapse_names(collapse):
    """The module dotted names and class names to collapse."""
    entries = (
        []
        if collapse is None
        else [collapse]
        if isinstance(collapse, (str, type))
        else list(collapse)
    )
    for entry in entries:
        if not isinstance(entry, (str, type)):
            raise TypeError(
                'draw: collapse takes module names ("encoder.lstm"), class names ("LSTM") '
                f"or classes (nn.LSTM); got {type(entry).__name__} {entry!r:.40}"
            )
    return frozenset(entry if isinstance(entry, str) else entry.__name__ for entry in entries)


def check_highlight(highlight):
    highlight = (
        []
        if highlight is None
        else [highlight]
        if isinstance(highlight, Tensor)
        else list(highlight)
    )
    for entry in highlight:
        if not isinstance(entry, Tensor):
            raise TypeError(
                f"draw: highlight takes a list of Tensors; got a {type(entry).__name__}"
            )
    return list(dict.fromkeys(highlight))


# ---------------------------------------------------------------------------------------
# Rendering

FORMATS = ("svg", "png", "pdf")


class GraphvizNotFoundError(RuntimeError):
    """The Graphviz `dot` program is not installed (DOT text via graph.source still works)."""


INSTALL_HINT = (
    "rendering needs the Graphviz 'dot' program, which was not found on PATH. Install Graphviz "
    "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; "
    "conda: conda install graphviz), or use graph.source to get the DOT text without it."
)


def render(graph, path, format=None):
    """Write `graph` (from draw) to `path` as SVG, PNG or PDF; returns the path written.

    format defaults to the path's suffix (.svg, .png, .pdf), or "svg" when the suffix is none
    of those. Raises GraphvizNotFoundError when the `dot` program is missing.
    """
    if not hasattr(graph, "pipe"):
        raise TypeError(
            f"render: expected a graphviz graph from mg.viz.draw(); got a {type(graph).__name__}"
        )
    path = pathlib.Path(path)
    if format is None:
        suffix = path.suffix.lower().lstrip(".")
        format = suffix if suffix in FORMATS else "svg"
    if format not in FORMATS:
        raise ValueError(f"render: format must be one of {FORMATS}; got {format!r}")
    try:
        data = graph.pipe(format=format)
    except graphviz.ExecutableNotFound as error:
        raise GraphvizNotFoundError(INSTALL_HINT) from error
    with atomic_file(path) as file:  # a failed write never replaces a good picture
        file.write(data)
    return path
