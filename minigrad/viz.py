"""Draw a computation graph with Graphviz, to see how backprop reaches every weight.

    loss.backward()
    graph = mg.viz.draw(loss, params=model, show_grad=True,
                        highlight=[model.attention.query_weight])
    mg.viz.render(graph, "graph.svg")   # needs the Graphviz `dot` program
    graph.source                        # the DOT text; needs nothing

The picture follows DeZero's: tensors are ellipses, ops are boxes, and edges run forward
(input -> op -> output); the gradient runs back along the same edges. Tensors are coloured
by kind: input (a leaf), parameter (a leaf that requires grad and is an nn.Parameter or is
named in `params`), intermediate, output. An edge out of a tensor that does not require
grad is dashed: no gradient goes back along it.

Three things make big models readable. Every graph node remembers which nn.Module forwards
were running when it was made (`Node.scope`), so ops are grouped into one nested cluster per
module; `collapse=` turns each call of a chosen module (an LSTM over 256 steps) into one box
with edges from its inputs and to its outputs, and its own weights listed inside;
`highlight=` draws the edges on the paths from the outputs back to chosen tensors in red.

Everything is iterative (an LSTM graph is thousands of nodes deep), and the DOT text is the
same on every run: graph ids are counters in walk order, never object addresses.
(The layout itself is in _viz_picture.py.)
"""

import pathlib

import graphviz

from ._viz_picture import (CLUSTER, HIGHLIGHT, LEGEND, NO_GRAD_EDGE, STYLES,  # noqa: F401  (re-exported)
                           VALUES_MAX_ELEMENTS, _Picture, _walk)
from .io import atomic_file
from .tensor import Tensor

__all__ = ["draw", "render", "GraphvizNotFoundError"]

RANKDIRS = ("TB", "LR", "BT", "RL")
FORMATS = ("svg", "png", "pdf")


def draw(*outputs, params=None, show_grad=False, show_values=False, group_by_module=True,
         collapse=None, highlight=None, rankdir="TB", legend=True):
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
    outputs = _check_outputs(outputs)
    if rankdir not in RANKDIRS:
        raise ValueError(f"draw: rankdir must be one of {RANKDIRS}; got {rankdir!r}")
    names = _tensor_names(params)
    collapse_names = _collapse_names(collapse)
    highlight = _check_highlight(highlight)

    picture = _Picture(outputs, names, show_grad, show_values, group_by_module, collapse_names)
    picture.build(_walk(outputs))
    highlighted = [picture.tensor_vertex(t, "highlight") for t in highlight]
    picture.fold_parameters(keep=highlighted)
    return picture.to_dot(picture.paths_from(highlighted), highlighted, rankdir, legend)


# ---------------------------------------------------------------------------------------
# Checking the arguments


def _check_outputs(outputs):
    if not outputs:
        raise TypeError("draw() needs at least one output tensor, e.g. draw(loss)")
    unique = {}
    for index, output in enumerate(outputs):
        if not isinstance(output, Tensor):
            raise TypeError(f"draw: outputs must be Tensors; argument {index} is a {type(output).__name__}")
        unique.setdefault(id(output), output)
    return list(unique.values())


def _tensor_names(params):
    """id(tensor) -> name, from a dict, (name, tensor) pairs or anything with named_parameters()."""
    if params is None:
        return {}
    if hasattr(params, "named_parameters"):
        params = params.named_parameters()
    pairs = params.items() if isinstance(params, dict) else params
    names = {}
    for entry in pairs:
        if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], Tensor)):
            raise TypeError("draw: params must be a dict name -> Tensor, (name, Tensor) pairs or an "
                            f"nn.Module; got an entry {entry!r:.60}")
        names.setdefault(id(entry[1]), str(entry[0]))
    return names


def _collapse_names(collapse):
    """The set of module dotted names / class names to collapse."""
    if collapse is None:
        return frozenset()
    if isinstance(collapse, (str, type)):
        collapse = [collapse]
    names = set()
    for entry in collapse:
        if isinstance(entry, str):
            names.add(entry)
        elif isinstance(entry, type):
            names.add(entry.__name__)  # Node.scope records class names
        else:
            raise TypeError("draw: collapse takes module names (\"encoder.lstm\"), class names (\"LSTM\") "
                            f"or classes (nn.LSTM); got {type(entry).__name__} {entry!r:.40}")
    return frozenset(names)


def _check_highlight(highlight):
    if highlight is None:
        return []
    if isinstance(highlight, Tensor):
        highlight = [highlight]
    highlight = list(highlight)
    for entry in highlight:
        if not isinstance(entry, Tensor):
            raise TypeError(f"draw: highlight takes a list of Tensors; got a {type(entry).__name__}")
    return highlight



# ---------------------------------------------------------------------------------------
# Rendering


class GraphvizNotFoundError(RuntimeError):
    """The Graphviz `dot` program is not installed (DOT text via graph.source still works)."""


INSTALL_HINT = ("rendering needs the Graphviz 'dot' program, which was not found on PATH. Install Graphviz "
                "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; "
                "conda: conda install graphviz), or use graph.source to get the DOT text without it.")


def render(graph, path, format=None):
    """Write `graph` (from draw) to `path` as SVG, PNG or PDF; returns the path written.

    format defaults to the path's suffix (.svg, .png, .pdf), or "svg" when the suffix is none
    of those. Raises GraphvizNotFoundError when the `dot` program is missing.
    """
    if not hasattr(graph, "pipe"):
        raise TypeError(f"render: expected a graphviz graph from mg.viz.draw(); got a {type(graph).__name__}")
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

