"""The DOT text of a drawn graph: node styles, labels, clusters, edges and legend. Every
attribute value goes through `_quote`, so no name (quotes, backslashes, braces, `<`, line
breaks) can break the text or add attributes. Lines are written here, not by graphviz's
node()/edge(), which took two thirds of the time of a 50,000-node graph.
"""

import functools

import graphviz
import numpy as np

from ..engine import Tensor
from .passes import (
    SCALED_OPS,
    ArrayViews,
    EarlierValue,
    ModuleCall,
    ScaleStep,
    is_constant,
    name_of,
)

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
    "input": "input\n(leaf)",
    "parameter": "parameter\n(weight)",
    "intermediate": "intermediate\ntensor",
    "output": "output",
    "op": "op",
    "module": "collapsed module",
}
HIGHLIGHT = {"color": "#cc0000", "penwidth": "2.5"}
NO_GRAD_EDGE = {"style": "dashed", "color": "#888888"}
CLUSTER = {"style": "rounded", "color": "#888888", "fontcolor": "#444444", "labeljust": "l"}
ID_PREFIXES = {"op": "op", "module": "m"}  # and "t" for tensors


def numbered(vertices, kind_of):
    """{vertex: node id}: the vertices counted in order per prefix of their kind (ID_PREFIXES):
    t0, t1 ... for tensors, op0 ... for ops, m0 ... for boxes."""
    ids, counts = {}, {}
    for vertex in vertices:
        prefix = ID_PREFIXES.get(kind_of(vertex), "t")
        ids[vertex], counts[prefix] = f"{prefix}{counts.get(prefix, 0)}", counts.get(prefix, 0) + 1
    return ids


def to_dot(vertices, edges, ids, kinds, labels, paths, marked, edge_labels, rankdir, legend):
    """graphviz.Digraph of the graph, given each vertex's node id, kind, label and cluster path
    (tables keyed by vertex; no path: outside every cluster), the highlighted vertices and edge
    indices (`marked`: a pair of sets) and the labels of some edges (edge index -> text)."""
    marked_vertices, marked_edges = marked
    clusters = {(): ([], [])}  # path -> (its node lines, its sub-cluster paths), in drawing order
    quoted = {}  # label -> DOT string: most labels repeat ("(4,) float32")
    for vertex in vertices:
        kind, path, text = kinds[vertex], paths.get(vertex, ()), labels[vertex]
        for depth in range(len(path)):  # make the cluster, and its parents, on first use
            if path[: depth + 1] not in clusters:
                clusters[path[: depth + 1]] = ([], [])
                clusters[path[:depth]][1].append(path[: depth + 1])
        style = _NODE_STYLES[kind] + (" " + _HIGHLIGHT if vertex in marked_vertices else "")
        label = quoted.get(text) or quoted.setdefault(text, _quote(text))
        clusters[path][0].append(f"\t{ids[vertex]} [label={label} {style}]\n")
    body = _cluster_lines(clusters, ())
    for index, (tail, head) in enumerate(edges):  # dashed: no gradient goes back along it
        no_grad = isinstance(tail, (Tensor, ArrayViews, EarlierValue)) and not tail.requires_grad
        style = _HIGHLIGHT if index in marked_edges else _NO_GRAD if no_grad else ""
        if index in edge_labels:
            style = f"{style} label={_quote(edge_labels[index])} {_EDGE_LABEL}".lstrip()
        body.append(f"\t{ids[tail]} -> {ids[head]}" + (f" [{style}]\n" if style else "\n"))
    if legend:
        body += _legend(
            [kind for kind in STYLES if kind in set(kinds.values())], bool(marked_edges)
        )
    return graphviz.Digraph(
        "computation_graph",
        body=body,
        graph_attr={
            "rankdir": rankdir,
            "fontname": FONT,
            "fontsize": "11",
            "nodesep": "0.25",
            "ranksep": "0.3",
            "newrank": "true",
        },
        node_attr={
            "shape": "ellipse",
            "style": "filled",
            "fontname": FONT,
            "fontsize": "10",
            "margin": "0.08,0.04",
            "height": "0.3",
        },
        edge_attr={"arrowsize": "0.6", "color": "#444444"},
    )


def _cluster_lines(clusters, path):
    """The lines of cluster `path`: its nodes, then its sub-clusters, nested by indentation."""
    indent = "\t" * len(path)
    nodes, children = clusters[path]
    lines = [indent + line for line in nodes]
    for child in children:
        name, class_name = child[-1]
        label = class_name if name == class_name else f"{name} ({class_name})"
        lines.append(
            f"{indent}\tsubgraph {_quote('cluster_' + '/'.join(name for name, _ in child))} {{\n"
        )
        lines.append(f"{indent}\t\tgraph [{_attributes({'label': label, **CLUSTER})}]\n")
        lines += _cluster_lines(clusters, child) + [f"{indent}\t}}\n"]
    return lines


def _legend(kinds, with_highlight):
    """A column of sample nodes, one per kind drawn, held in order by invisible edges."""
    lines = [
        f"\t\tlegend_{kind} [{_attributes({'label': LEGEND[kind], **STYLES[kind]})}]\n"
        for kind in kinds
    ]
    if with_highlight:
        kinds = kinds + ["highlight"]
        lines.append(
            '\t\tlegend_highlight [label="red edges:\\ngradient path to\\nhighlighted tensors" '
            f'shape="plaintext" style="" fontcolor="{HIGHLIGHT["color"]}"]\n'
        )
    lines += [
        f'\t\tlegend_{above} -> legend_{below} [style="invis"]\n'
        for above, below in zip(kinds, kinds[1:])
    ]
    return [
        "\tsubgraph cluster_legend {\n",
        f"\t\tgraph [{_attributes({'label': 'legend', **CLUSTER})}]\n",
        *lines,
        "\t}\n",
    ]


# In a DOT string only `"` must be escaped, but Graphviz reads backslash sequences (\n, \N
# ...) and entities (&amp;) in labels: so backslashes are doubled, & becomes &amp;, a line
# break \n, and other control characters and lone surrogates (no encoding takes them) escapes.
_ESCAPES = {ord("\\"): "\\\\", ord('"'): '\\"', ord("\n"): "\\n", ord("&"): "&amp;"}
_ESCAPES.update((code, f"\\\\x{code:02x}") for code in [*range(32), 127] if code != ord("\n"))
_ESCAPES.update((code, f"\\\\u{code:04x}") for code in range(0xD800, 0xE000))


def _quote(text):
    return '"' + str(text).translate(_ESCAPES) + '"'


def _attributes(attributes):
    return " ".join(f"{key}={_quote(value)}" for key, value in attributes.items())


_NODE_STYLES = {kind: _attributes(style) for kind, style in STYLES.items()}
_EDGE_LABEL = _attributes({"fontname": FONT, "fontsize": "9", "fontcolor": "#666666"})
_HIGHLIGHT, _NO_GRAD = _attributes(HIGHLIGHT), _attributes(NO_GRAD_EDGE)


# ---------------------------------------------------------------------------------------
# Labels: plain text, lines joined by "\n"


def label(vertex, names, show_values, show_grad, gradients=None):
    """A tensor's name, shape and dtype (values, signed gradient); an op's class and settings; a
    scale step's factor; a collapsed call's module, class, op count and listed weights; an
    earlier value's tensor name, shape and dtype. `gradients` (tensor -> array, from a Replay)
    gives the gradients shown under show_grad; without it, a tensor's `.grad`."""
    if isinstance(vertex, ArrayViews):
        tensor_label = _tensor_label(vertex.tensor, names, False, None)
        return f"{tensor_label}\n{vertex.count} views of one array"
    if isinstance(vertex, Tensor):
        grad = _gradient_of(vertex, gradients) if show_grad else None
        return _tensor_label(vertex, names, show_values or is_constant(vertex, names), grad)
    if isinstance(vertex, EarlierValue):  # its values and gradient are gone with its array
        name = name_of(vertex.tensor, names)
        lines = [str(name)] if name else []
        shape = f"{_shape_text(vertex.shape)} {_dtype_name(vertex.dtype)}"
        return "\n".join([*lines, shape, "before an in-place change"])
    if isinstance(vertex, ScaleStep):
        return scale_text(vertex.scale)
    if not isinstance(vertex, ModuleCall):
        return "\n".join(
            [vertex.name]
            + [
                f"{key}={_short(value)}"
                for key, value in vertex.attrs.items()
                if value is not None
                and value is not False
                and not (key == "scale" and vertex.name in SCALED_OPS)  # drawn as a ScaleStep
            ]
        )
    lines = [vertex.name] if vertex.name == vertex.class_name else [vertex.name, vertex.class_name]
    lines.append(f"({vertex.op_count} op{'s' if vertex.op_count > 1 else ''})")
    for parameter in vertex.parameters:
        name = str(name_of(parameter, names) or "parameter")
        lines.append(f"{name.removeprefix(vertex.name + '.')} {_shape_text(parameter.shape)}")
        grad = _gradient_of(parameter, gradients) if show_grad else None
        if grad is not None:
            lines[-1] += " " + gradient_text(grad, one_line=True)
    return "\n".join(lines)


def scale_text(scale):
    """ "x 1/sqrt(8)" where the scale is one over the root of a whole number d (attention's
    scores / sqrt(d)), with its value; else "x 0.3" (in the drawing: "× 1/√8 = 0.3536")."""
    dimension = 1.0 / scale**2 if scale > 0 else 0.0
    if dimension >= 1 and abs(dimension - round(dimension)) < 1e-4 * dimension:
        return f"× 1/√{round(dimension)}\n= {scale:.4g}"
    return f"× {scale:.4g}"


def _gradient_of(tensor, gradients):
    if gradients is not None:
        return gradients.get(tensor)
    return None if tensor.grad is None else tensor.grad._data


def gradient_text(array, one_line=False):
    """A gradient with its sign: "grad -0.002682" for one number, its values for a small array
    (up to VALUES_MAX_ELEMENTS; on one line if one_line), else its shape and signed range."""
    array = np.asarray(array)
    if array.size == 1:
        return f"grad {_signed(array.reshape(()).item())}"
    if array.size <= VALUES_MAX_ELEMENTS and array.size:
        text = np.array2string(
            array, separator=" ", max_line_width=10**6, formatter={"all": _signed}
        )
        rows = [row.strip() for row in text.splitlines() if row.strip()]
        return "grad " + " ".join(rows) if one_line else "\n".join(["grad", *rows])
    if not array.size:
        return f"grad {_shape_text(array.shape)}"
    low, high = np.min(array), np.max(array)
    return f"grad {_shape_text(array.shape)} from {_signed(low)} to {_signed(high)}"


def _signed(value):
    """A gradient entry in four significant digits, its sign kept (0 is "0")."""
    return f"{float(value):.4g}" if value else "0"


def _tensor_label(tensor, names, show_values, grad):
    name = name_of(tensor, names)
    lines = ([str(name)] if name else []) + [
        f"{_shape_text(tensor.shape)} {_dtype_name(tensor.dtype)}"
    ]
    if show_values and tensor._data.size <= VALUES_MAX_ELEMENTS:
        text = np.array2string(tensor._data, precision=3, suppress_small=True, separator=" ")
        lines += [row.strip() for row in text.splitlines() if row.strip()]
    if grad is not None:
        lines += gradient_text(grad).split("\n")
    return "\n".join(lines)


def _shape_text(shape):
    return "scalar" if shape == () else str(tuple(shape))


@functools.lru_cache(maxsize=None)
def _dtype_name(dtype):
    return str(dtype)  # numpy builds this string anew each time, slowly


def _short(value, limit=28):
    """An op setting in a few characters: slices as in code (:2), arrays by their shape."""
    if isinstance(value, np.ndarray):
        text = f"array{_shape_text(value.shape)}"
    elif isinstance(value, slice):
        text = ":".join(
            "" if part is None else str(part) for part in (value.start, value.stop, value.step)
        )
        text = text[:-1] if text.endswith(":") and value.step is None else text
    elif isinstance(value, tuple):
        text = (
            "("
            + ", ".join(_short(v, limit) for v in value)
            + ("," if len(value) == 1 else "")
            + ")"
        )
    elif isinstance(value, (float, np.floating)):
        text = repr(float(f"{value:.4g}"))  # scale=0.3536, not 0.35355339059327373
    else:
        text = "..." if value is Ellipsis else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
