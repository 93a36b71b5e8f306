"""How mg.viz lays a graph out: the vertices (tensors, ops, collapsed module calls), the
clusters per module, the highlighted paths, and the DOT text. viz.py holds the public
functions (draw, render) and checks their arguments; this file does the drawing.
"""

import collections
import functools

import graphviz
import numpy as np

from . import autograd

VALUES_MAX_ELEMENTS = 16  # show_values prints tensors up to this size (a 4x4 attention matrix)
FONT = "Helvetica"

STYLES = {  # vertex kind -> Graphviz node attributes (every node is filled; tensors are ellipses)
    "input": {"fillcolor": "#d9ead3"},
    "parameter": {"fillcolor": "#f9cb9c"},
    "intermediate": {"fillcolor": "#fff2cc"},
    "output": {"fillcolor": "#ea9999"},
    "op": {"shape": "box", "fillcolor": "#cfe2f3"},
    "module": {"shape": "box3d", "fillcolor": "#d9d2e9"},
}
LEGEND = {
    "input": "input\\n(leaf)",
    "parameter": "parameter\\n(weight)",
    "intermediate": "intermediate\\ntensor",
    "output": "output",
    "op": "op",
    "module": "collapsed module",
}
HIGHLIGHT = {"color": "#cc0000", "penwidth": "2.5"}
NO_GRAD_EDGE = {"style": "dashed", "color": "#888888"}
CLUSTER = {"style": "rounded", "color": "#888888", "fontcolor": "#444444", "labeljust": "l"}


# ---------------------------------------------------------------------------------------
# Walking the graph


def _walk(outputs):
    """Every Node that made `outputs`, each after the nodes that made its inputs."""
    return autograd.graph_nodes(*(output._node for output in outputs if output._node is not None))


class _Vertex:
    """One node of the picture: a tensor, an op, or a collapsed module call.

    `path` is the module scope (a tuple of (dotted name, class name)) whose cluster holds it.
    """

    __slots__ = ("dot_id", "kind", "label", "path", "follows_consumers", "out_edges", "tensor", "name",
                 "views", "first_view", "op_count", "module_name", "parameter_lines")

    def __init__(self, dot_id, kind, label, path):
        self.dot_id, self.kind, self.label, self.path = dot_id, kind, label, path
        self.follows_consumers = False  # a weight or constant: sits in the cluster of the ops using it
        self.out_edges = []
        self.tensor = self.name = None  # for a tensor: the first Tensor drawn here and its name
        self.views = None  # for an input: the distinct views of its array that ops read
        self.op_count = 0  # ops drawn as this vertex (a collapsed call holds many)
        self.module_name = None  # for a collapsed call: the module's dotted name...
        self.parameter_lines = []  # ...and one line for each of its parameters listed in the box


class _Picture:
    """The graph as it will be drawn: vertices in clusters and edges between them."""

    def __init__(self, outputs, names, show_grad, show_values, group_by_module, collapse_names):
        self.outputs = outputs
        self.output_ids = {id(t) for t in outputs}
        self.names = names
        self.show_grad, self.show_values = show_grad, show_values
        self.group_by_module = group_by_module
        self.collapse_names = collapse_names
        self.tensors = {}  # id(tensor) -> _Vertex
        self.units = {}  # id(Node) -> the op's _Vertex, or its collapsed module call's _Vertex
        self.calls = {}  # id(scope entry) -> _Vertex of a collapsed module call
        self.scopes = {}  # id(module frame) -> (frame, scope tuple)
        self.arrays = {}  # id of the array under a leaf without grad -> its _Vertex
        self.vertices = []  # in creation order
        self.edges = []  # (tail _Vertex, head _Vertex, gradient flows back along it)
        self._counts = collections.Counter()

    # -- vertices -------------------------------------------------------------------------
    def _new_vertex(self, prefix, kind, label, path):
        dot_id = f"{prefix}{self._counts[prefix]}"
        self._counts[prefix] += 1
        vertex = _Vertex(dot_id, kind, label, path if self.group_by_module else ())
        self.vertices.append(vertex)
        return vertex

    def _scope(self, frame):
        """The module calls around a node, outermost first, as (dotted name, class name) tuples;
        one tuple object per call (cached by frame), so two calls of one module differ. Names
        are relative to the outermost module, which is named by its class."""
        if frame is None:
            return ()
        cached = self.scopes.get(id(frame))
        if cached is not None:
            return cached[1]
        module, outer_frame = frame
        outer = self._scope(outer_frame)
        if not outer:
            entry = (type(module).__name__, type(module).__name__)
        else:
            parent = outer_frame[0]
            child = next((name for name, m in parent.named_modules() if m is module), None)
            prefix = "" if len(outer) == 1 else outer[-1][0] + "."
            entry = (prefix + child if child else type(module).__name__, type(module).__name__)
        scope = outer + (entry,)
        self.scopes[id(frame)] = (frame, scope)  # keep frame alive so its id stays unique
        return scope

    def _unit(self, node):
        """The vertex that stands for `node`: its own op box, or the box of the collapsed
        module call that made it. A module call pushes a fresh (name, class) tuple onto the
        scope stack, so the identity of that tuple tells two calls of one module apart."""
        unit = self.units.get(id(node))
        if unit is not None:
            return unit
        scope = self._scope(node.module_frame)
        for depth, (name, class_name) in enumerate(scope):
            if name in self.collapse_names or class_name in self.collapse_names:
                unit = self.calls.get(id(scope[depth]))
                if unit is None:
                    label = name if name == class_name else f"{name}\\n{class_name}"
                    unit = self._new_vertex("m", "module", label, tuple(scope[:depth]))
                    unit.module_name = name
                    self.calls[id(scope[depth])] = unit
                break
        else:
            unit = self._new_vertex("op", "op", _op_label(node), tuple(scope))
        unit.op_count += 1
        self.units[id(node)] = unit
        return unit

    def _tensor(self, tensor):
        vertex = self.tensors.get(id(tensor))
        if vertex is not None:
            return vertex
        # Ops on tensors without grad are not recorded, so an input that the code reshapes
        # three times or slices at each of 256 steps reaches the graph as many leaves viewing
        # one array: draw that array once.
        mergeable = tensor._node is None and not tensor.requires_grad and id(tensor) not in self.output_ids
        array = _base_array_id(tensor) if mergeable else None
        if array in self.arrays:
            vertex = self.arrays[array]
            vertex.views.add(_view_key(tensor))
            self.tensors[id(tensor)] = vertex
            return vertex
        name = self.names.get(id(tensor)) or tensor.name
        if id(tensor) in self.output_ids:
            kind = "output"
        elif tensor._node is not None:
            kind = "intermediate"
        elif tensor.requires_grad and (id(tensor) in self.names or _is_parameter(tensor)):
            kind = "parameter"
        else:
            kind = "input"
        label = _tensor_label(tensor, name, self.show_values or _is_constant(tensor, name), self.show_grad)
        if tensor._node is not None:
            producer = self.units[id(tensor._node)]
            vertex = self._new_vertex("t", kind, label, producer.path)
            self._edge(producer, vertex, True)
        else:  # inputs stay outside every module
            vertex = self._new_vertex("t", kind, label, ())
            vertex.follows_consumers = kind == "parameter" or _is_constant(tensor, name)
        vertex.tensor, vertex.name = tensor, name
        self.tensors[id(tensor)] = vertex
        if array is not None:
            self.arrays[array] = vertex
            vertex.views = {_view_key(tensor)}
        return vertex

    def tensor_vertex(self, tensor, why):
        vertex = self.tensors.get(id(tensor))
        if vertex is None:
            name = self.names.get(id(tensor)) or tensor.name or f"of shape {tensor.shape}"
            raise ValueError(f"draw: {why} tensor {name} is not in the drawn graph (it did not take part in "
                             "computing the outputs, or it is hidden inside a collapsed module)")
        return vertex

    # -- edges ----------------------------------------------------------------------------
    def _edge(self, tail, head, gradient_flows):
        if tail.follows_consumers:  # the innermost cluster holding all its consumers
            tail.path = head.path if not tail.out_edges else _common_prefix(tail.path, head.path)
        tail.out_edges.append(len(self.edges))
        self.edges.append((tail, head, gradient_flows))

    def build(self, nodes):
        """Make the vertices and edges for `nodes` (producers first) and for the outputs."""
        module_inputs = set()  # (tensor vertex, collapsed call) pairs already joined by an edge
        for node in nodes:
            unit = self._unit(node)
            for tensor in node.inputs:
                if unit.kind == "module":
                    inside = tensor._node is not None and self.units.get(id(tensor._node)) is unit
                    if inside or _is_constant(tensor, self.names.get(id(tensor))):
                        continue  # the box hides its internals and the numbers in its code
                vertex = self._tensor(tensor)
                if unit.kind == "module":
                    if (id(vertex), id(unit)) in module_inputs:
                        continue
                    module_inputs.add((id(vertex), id(unit)))
                self._edge(vertex, unit, tensor.requires_grad)
        for output in self.outputs:
            self._tensor(output)
        for vertex in self.vertices:
            if vertex.views is not None and len(vertex.views) > 1:
                vertex.label = (_tensor_label(vertex.tensor, vertex.name, False, False)
                                + f"\\n{len(vertex.views)} views of one array")

    def fold_parameters(self, keep):
        """List each parameter that only one collapsed call uses inside that call's box, rather
        than as a node of its own: an LSTM's eight weights would make the picture wide. The
        `keep` vertices (highlighted ones, whose paths are drawn) stay nodes."""
        folded, keep = set(), {id(v) for v in keep}
        for vertex in self.vertices:
            if vertex.kind != "parameter" or id(vertex) in keep or not vertex.out_edges:
                continue
            box = self.edges[vertex.out_edges[0]][1]
            if box.kind == "module" and all(self.edges[i][1] is box for i in vertex.out_edges):
                box.parameter_lines.append(_parameter_line(vertex, box.module_name, self.show_grad))
                folded.add(id(vertex))
        if not folded:
            return
        self.vertices = [v for v in self.vertices if id(v) not in folded]
        self.edges = [edge for edge in self.edges if id(edge[0]) not in folded]
        for vertex in self.vertices:
            vertex.out_edges = []
        for index, (tail, _, _) in enumerate(self.edges):
            tail.out_edges.append(index)

    def paths_from(self, starts):
        """Indices of the edges on some path from a start vertex to an output: every edge
        whose tail is a start or lies downstream of one (everything drawn leads to an output)."""
        reached = {id(v) for v in starts}
        stack, marked = list(starts), set()
        while stack:
            vertex = stack.pop()
            for index in vertex.out_edges:
                marked.add(index)
                head = self.edges[index][1]
                if id(head) not in reached:
                    reached.add(id(head))
                    stack.append(head)
        return marked

    # -- DOT --------------------------------------------------------------------------------
    def to_dot(self, highlighted_edges, highlighted_vertices, rankdir, legend):
        graph = graphviz.Digraph(
            "computation_graph",
            graph_attr={"rankdir": rankdir, "fontname": FONT, "fontsize": "11", "nodesep": "0.25",
                        "ranksep": "0.3", "newrank": "true"},
            node_attr={"shape": "ellipse", "style": "filled", "fontname": FONT, "fontsize": "10",
                       "margin": "0.08,0.04", "height": "0.3"},
            edge_attr={"arrowsize": "0.6", "color": "#444444"})
        highlighted_ids = {id(v) for v in highlighted_vertices}

        clusters = {(): graph}
        for vertex in self.vertices:
            self._cluster(clusters, vertex.path)
        for vertex in self.vertices:
            label = vertex.label
            if vertex.kind == "module":
                label += f"\\n({vertex.op_count} op{'s' if vertex.op_count > 1 else ''})"
                label += "".join(f"\\n{line}" for line in vertex.parameter_lines)
            attributes = {"label": label, **STYLES[vertex.kind]}
            if id(vertex) in highlighted_ids:
                attributes.update(color=HIGHLIGHT["color"], penwidth=HIGHLIGHT["penwidth"])
            clusters[vertex.path].body.append(_statement(vertex.dot_id, attributes))
        # Nest the clusters, deepest first, so each is complete when its parent takes it in.
        for path in sorted(clusters, key=len, reverse=True):
            if path:
                clusters[path[:-1]].subgraph(clusters[path])

        for index, (tail, head, flows) in enumerate(self.edges):
            attributes = HIGHLIGHT if index in highlighted_edges else {} if flows else NO_GRAD_EDGE
            graph.body.append(_statement(f"{tail.dot_id} -> {head.dot_id}", attributes))
        if legend:
            self._legend(graph, bool(highlighted_edges))
        return graph

    def _cluster(self, clusters, path):
        """Make the cluster for `path` and its parents (not yet nested into each other)."""
        for depth in range(1, len(path) + 1):
            prefix = path[:depth]
            if prefix not in clusters:
                name, class_name = prefix[-1]
                label = class_name if name == class_name else f"{name} ({class_name})"
                clusters[prefix] = graphviz.Digraph(
                    "cluster_" + "/".join(entry[0] for entry in prefix),
                    graph_attr={"label": graphviz.nohtml(label), **CLUSTER})

    def _legend(self, graph, with_highlight):
        """A column of sample nodes, one per kind that occurs, held in order by invisible edges."""
        kinds = [kind for kind in STYLES if any(v.kind == kind for v in self.vertices)]
        with graph.subgraph(name="cluster_legend") as box:
            box.attr(label="legend", **CLUSTER)
            for kind in kinds:
                box.node(f"legend_{kind}", LEGEND[kind], **STYLES[kind])
            if with_highlight:
                kinds.append("highlight")
                box.node("legend_highlight", "red edges:\\ngradient path to\\nhighlighted tensors",
                         shape="plaintext", style="", fontcolor=HIGHLIGHT["color"])
            for above, below in zip(kinds, kinds[1:]):
                box.edge(f"legend_{above}", f"legend_{below}", style="invis")


def _statement(subject, attributes):
    """One DOT line. Written here rather than by graphviz's node()/edge(), which quote every
    piece one by one and took two thirds of the time on a 50,000-node graph; our ids are plain
    words and every label went through _escape."""
    if not attributes:
        return f"\t{subject}\n"
    return f"\t{subject} [" + " ".join(f'{key}="{value}"' for key, value in attributes.items()) + "]\n"


def _common_prefix(a, b):
    length = 0
    for x, y in zip(a, b):
        if x != y:
            break
        length += 1
    return a[:length]


def _is_parameter(tensor):
    """An nn.Parameter (found by class name: this floor does not import nn)."""
    return any(cls.__name__ == "Parameter" for cls in type(tensor).__mro__)


def _base_array_id(tensor):
    """Identity of the numpy array that owns the tensor's memory (alive as long as the tensor)."""
    array = tensor.data
    while isinstance(array.base, np.ndarray):
        array = array.base
    return id(array)


def _view_key(tensor):
    data = tensor.data
    return (data.__array_interface__["data"][0], data.shape, data.strides, data.dtype.str)


def _is_constant(tensor, name):
    """A number written in the code (x * 2): a one-element leaf with no grad and no name."""
    return tensor._node is None and not tensor.requires_grad and tensor.data.size <= 1 and not name


# ---------------------------------------------------------------------------------------
# Labels


def _escape(text):
    """Text -> DOT string content: backslashes and quotes escaped, newlines as \\n."""
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _shape_text(shape):
    return "scalar" if shape == () else str(tuple(shape))


@functools.lru_cache(maxsize=None)
def _dtype_name(dtype):
    return str(dtype)  # numpy builds this string anew each time, slowly


def _tensor_label(tensor, name, show_values, show_grad):
    lines = [_escape(name)] if name else []
    lines.append(f"{_shape_text(tensor.shape)} {_dtype_name(tensor.dtype)}")
    if show_values and tensor.data.size <= VALUES_MAX_ELEMENTS:
        text = np.array2string(tensor.data, precision=3, suppress_small=True, separator=" ")
        lines.extend(_escape(row.strip()) for row in text.splitlines() if row.strip())
    if show_grad and tensor.grad is not None:
        grad = tensor.grad.data
        lines.append(f"grad {_shape_text(grad.shape)} norm {_norm(grad):.4g}")
    return "\\n".join(lines)


def _parameter_line(vertex, module_name, show_grad):
    """'weight_ih_l0 (32, 8)' (+ its gradient norm), for a parameter listed in a collapsed box."""
    tensor, name = vertex.tensor, vertex.name or "parameter"
    if module_name and name.startswith(module_name + "."):
        name = name[len(module_name) + 1:]
    line = f"{_escape(name)} {_shape_text(tensor.shape)}"
    if show_grad and tensor.grad is not None:
        line += f" grad norm {_norm(tensor.grad.data):.4g}"
    return line


def _norm(array):
    return float(np.linalg.norm(array.astype(np.float64).ravel()))


def _op_label(node):
    """The op's class name and its short settings (dim=-1, shape=(3, 4), ...)."""
    settings = [f"{key}={_short(value)}" for key, value in node.attrs.items()
                if value is not None and value is not False]
    return "\\n".join([node.name] + [_escape(s) for s in settings])


def _short(value, limit=28):
    if isinstance(value, np.ndarray):
        text = f"array{_shape_text(value.shape)}"
    elif isinstance(value, slice):
        text = ":".join("" if part is None else str(part) for part in (value.start, value.stop, value.step))
        text = text[:-1] if text.endswith(":") and value.step is None else text
    elif isinstance(value, tuple):
        text = "(" + ", ".join(_short(v, limit) for v in value) + ("," if len(value) == 1 else "") + ")"
    elif value is Ellipsis:
        text = "..."
    elif isinstance(value, np.dtype):
        text = str(value)
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
