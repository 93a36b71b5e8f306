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

__all__ = ["trace", "draw", "name", "render", "vertex_ids", "GraphvizNotFoundError"]


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
    tensors, counted in the order of the trace. Every drawing of these outputs gives a vertex
    it draws this id, whatever params, collapse or fold_views say (a collapsed call's box is
    m0, m1 ..., the scale step before a Softmax op7 is op7_scale); a leaf drawn merged with
    other views of its array gets their id."""
    return numbered_trace(outputs, highlight)[0]


def numbered_trace(outputs, highlight):
    """(vertex_ids(*outputs, highlight=highlight), trace(*outputs)), from one trace."""
    outputs, highlight = check_outputs(outputs), check_highlight(highlight)
    traced = trace(*outputs)
    vertices, edges = passes.merge_views(*traced, keep=set(outputs) | set(highlight))
    return _numbered_merged(traced, vertices, edges), traced


def _numbered_merged(traced, vertices, edges):
    ids = numbered(vertices, lambda vertex: "op" if isinstance(vertex, Function) else "tensor")
    for (tail, _), (drawn, _) in zip(traced[1], edges):  # merge_views keeps the edges in order
        ids.setdefault(tail, ids[drawn])
    return ids


class Layout:
    """What the passes make of a trace, for draw and replay: the drawn `vertices` and `edges`,
    `edge_labels` (edge index -> the folded ops), `ids` (vertex -> node id, for every vertex of
    the trace, drawn or not), `boxes` (op hidden in a collapsed call -> its ModuleCall),
    `listed` (parameter listed in a box -> the box), `folded` (folded op -> its output),
    `scales` (op -> its ScaleStep), `traced_edges` (the trace's own) and `known_calls` (the
    module-call cache)."""

    def shown_id(self, vertex):
        """The id of the node that shows `vertex`: its own, its box's, or for a folded tensor
        the id of the chain's first input; None for what is not drawn at all."""
        while vertex in self.folded_outputs:
            vertex = self.folded_inputs[self.folded_outputs[vertex]]
        if vertex not in self.drawn:
            maker = vertex if isinstance(vertex, Function) else getattr(vertex, "grad_fn", None)
            box = self.listed.get(vertex) or self.boxes.get(maker)
            if box is not None:
                return self.ids[box]
        drawn_id = self.ids.get(vertex)  # a leaf merged with other views: the merged one's
        return drawn_id if drawn_id in self.drawn_ids else None


def lay_out(outputs, names, highlight, collapse, fold_views):
    """The passes between trace() and the DOT text, as a Layout (outputs, highlight and names
    checked by the caller)."""
    layout, output_set = Layout(), set(outputs)
    keep = output_set | set(highlight)
    traced = trace(*outputs)
    vertices, edges = passes.merge_views(*traced, keep=keep)
    layout.ids, merged_edges = _numbered_merged(traced, vertices, edges), edges
    layout.traced_edges = traced[1]
    layout.known_calls, layout.boxes, layout.listed = {}, {}, {}
    if collapse:
        vertices, edges, layout.boxes = passes.collapse(
            vertices, edges, collapse, layout.known_calls, output_set, names
        )
        vertices, edges = passes.list_parameters_in_boxes(
            vertices, edges, set(highlight), output_set, names
        )
        boxes = list(dict.fromkeys(layout.boxes.values()))
        layout.ids.update((box, f"m{index}") for index, box in enumerate(boxes))
        layout.listed = {p: box for box in boxes for p in box.parameters}
    layout.edge_labels, layout.folded = {}, {}
    if fold_views:
        vertices, edges, layout.edge_labels, layout.folded = passes.fold_views(
            vertices, edges, merged_edges, keep, names
        )
    layout.folded_outputs = {output: op for op, output in layout.folded.items()}
    layout.folded_inputs = {
        head: tail for tail, head in merged_edges if head in layout.folded
    }  # a folded op has one input
    vertices, edges, layout.scales = passes.split_scales(vertices, edges)
    layout.ids.update((step, f"{layout.ids[op]}_scale") for op, step in layout.scales.items())
    layout.vertices, layout.edges, layout.drawn = vertices, edges, set(vertices)
    layout.drawn_ids = {layout.ids[v] for v in vertices}
    return layout


@passes.cycle_collector_paused()
def draw(
    *outputs,
    params=None,
    show_grad=False,
    show_values=False,
    group_by_module=True,
    collapse=None,
    fold_views=False,
    highlight=None,
    rankdir="TB",
    legend=True,
):
    """The graph that computed `outputs`, as a graphviz.Digraph.

    params: names for tensors: a dict name -> tensor, an iterable of (name, tensor) pairs, or an
        nn.Module (its named_parameters()). Otherwise a tensor's own `.name` is used (set it
        with mg.viz.name(tensor, "q"); the attention layers name their q, k, v, scores ...).
    show_grad: True adds to every tensor that has a `.grad` that gradient with its sign (its
        values up to VALUES_MAX_ELEMENTS entries, else its smallest and largest entry). A
        Replay (mg.viz.replay(loss)) shows instead what that walk sent every tensor, the
        intermediate ones too (backward() keeps only the leaves' gradients).
    show_values: print the values of tensors with at most VALUES_MAX_ELEMENTS elements.
    group_by_module: put the ops each module's forward made in a cluster "name (Class)".
    collapse: module dotted names, class names or classes (nn.LSTM); each call of a matching
        module is drawn as one box (the outermost match wins when they nest). Parameters used
        only by that call are listed in the box (with their gradient under show_grad).
    fold_views: draw each chain of Reshape and Permute ops whose output is used once and has
        no name into the edge it makes, labelled with the chain's ops.
    highlight: tensors (e.g. parameters); every edge on a path from an output back to one of
        them is drawn emphasised, and only those edges. Raises ValueError for a tensor that
        is not in the drawn graph.
    rankdir: "TB" (inputs at the top), "LR", "BT" or "RL".
    legend: add a box explaining the node colours.

    Leaves without grad that view one numpy array (an input reshaped or sliced by code that
    is not recorded) are drawn as one node. A Softmax's `scale` (attention's 1/sqrt(d)) is
    drawn as a step of its own before it, "× 1/√d". Node ids are those of vertex_ids(*outputs,
    highlight=highlight), whatever the other options.
    """
    outputs, names, highlight = (
        check_outputs(outputs),
        tensor_names(params),
        check_highlight(highlight),
    )
    collapse = collapse_names(collapse)
    if rankdir not in RANKDIRS:
        raise ValueError(f"draw: rankdir must be one of {RANKDIRS}; got {rankdir!r}")
    gradients = None
    if hasattr(show_grad, "gradients") and callable(show_grad.gradients):  # a Replay
        gradients = {tensor: g.array for tensor, g in show_grad.gradients().items()}
    elif not isinstance(show_grad, bool):
        raise TypeError(
            f"draw: show_grad takes True, False or a Replay; got {type(show_grad).__name__}"
        )
    output_set, marked = set(outputs), set(highlight)
    layout = lay_out(outputs, names, highlight, collapse, fold_views)
    vertices, edges = layout.vertices, layout.edges
    for tensor in highlight:
        if tensor not in layout.drawn:
            raise ValueError(
                "draw: highlight tensor "
                f"{passes.name_of(tensor, names) or f'of shape {tensor.shape}'} is not in the "
                "drawn graph (it did not take part in computing the outputs, or it is hidden "
                "inside a collapsed module)"
            )
    kinds = {v: passes.kind_of(v, output_set, names) for v in vertices}
    paths = (
        passes.clusters(vertices, edges, layout.known_calls, kinds, names)
        if group_by_module
        else {}
    )
    labels = {v: label(v, names, show_values, bool(show_grad), gradients) for v in vertices}
    return to_dot(
        vertices,
        edges,
        layout.ids,
        kinds,
        labels,
        paths,
        (marked, passes.paths_from(highlight, edges)),
        layout.edge_labels,
        rankdir,
        legend,
    )


def name(tensor, text):
    """Give `tensor` the name mg.viz.draw and mg.viz.replay show for it (its `.name`), and
    return it: `q = mg.viz.name(x @ query_weight, "q")`. Costs one attribute write, so layers
    call it on every forward (nn.SelfAttention names q, k, v, scores, weights, context).
    A name given in draw's params= still wins."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"name: expected a Tensor; got {type(tensor).__name__}")
    if not isinstance(text, str):
        raise TypeError(f"name: the name must be a str; got {type(text).__name__} {text!r:.40}")
    tensor.name = text
    return tensor


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
