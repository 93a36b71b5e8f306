r"""Draw the computation graph that backward() walks.

An op on tensors that require grad records, on the tensor it makes, which op made it from
which inputs. Those records make a graph: its vertices are the tensors and the ops, its edges
run forward, from each input to the op and from the op to the tensor it made. For
y = tanh(x * w + b).sum():

    x    w                  trace(y) returns that graph as two plain lists:
     \  /                     vertices  Mul, x, w, Add, x*w, b, Tanh, x*w+b, Sum, h, y
     Mul                      edges     (x, Mul), (w, Mul), (Mul, x*w), (x*w, Add), ...
      |
     x*w   b                backward() walks the same edges the other way, from y to x,
       \  /                 w and b, multiplying by each op's local gradient: the chain
       Add                  rule, one op at a time.
        |
      x*w+b -> Tanh -> h -> Sum -> y

draw() makes a picture of it, as DeZero does: tensors are ellipses coloured by kind (input,
parameter, intermediate, output), ops are boxes, and an edge out of a tensor that needs no
gradient is dashed: no gradient goes back along it.

    loss.backward()
    query_weight = model.attention.query_weight
    graph = mg.viz.draw(loss, params=model, show_grad=True, highlight=[query_weight])
    mg.viz.render(graph, "graph.svg")   # needs the Graphviz `dot` program
    graph.source                        # the DOT text; needs nothing

Between trace and DOT text, small passes merge the leaves that view one array, collapse chosen
modules' calls (an LSTM over 256 steps) into one box each, group ops by module call and mark
the gradient paths to highlighted tensors. All is iterative (LSTM graphs are thousands of ops
deep); ids count vertices, so the text repeats run to run. replay(loss) runs loss.backward()
and returns its walk, node by node, with the ids of the drawing.

The files, each importing only those above it (tests/test_architecture.py checks it):

    passes.py      the passes between trace and DOT text; the vertices they add
    dot.py         the DOT text: styles, labels, clusters, edges, legend
    drawing.py     trace, draw, vertex_ids, render
    replaying.py   replay: Replay, Step, Gradient, InputGradient

(drawing.py and replaying.py are not named draw.py and replay.py, so that `mg.viz.draw` and
`mg.viz.replay` are the functions, never modules of those names.)
"""

from .dot import HIGHLIGHT, STYLES, VALUES_MAX_ELEMENTS, label, to_dot  # noqa: F401  (public)
from .drawing import GraphvizNotFoundError, draw, name, render, trace, vertex_ids
from .replaying import Replay, replay

__all__ = ["trace", "draw", "name", "render", "vertex_ids", "replay", "Replay"]
__all__ += ["GraphvizNotFoundError"]
