"""mg.viz's drawing (minigrad/viz/drawing.py, passes.py, dot.py): the traced graph, the DOT
structure of drawn graphs (nodes, edges, clusters, collapse, highlight), names that try to break
the DOT text, rendering with and without Graphviz, and the reproducibility of the committed
example pictures."""

import collections
import gc
import os
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
import minigrad.viz as viz
from minigrad import nn
from minigrad.engine import Function
from minigrad.viz import drawing
from minigrad.viz.passes import EarlierValue

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"


# ---------------------------------------------------------------------------------------
# A small DOT reader for the subset mg.viz writes (one statement per line)

_ATTRIBUTE = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s\]]+)')
_NODE = re.compile(r"^(\w+) \[(.*)\]$")
_EDGE = re.compile(r"^(\w+) -> (\w+)(?: \[(.*)\])?$")
_SUBGRAPH = re.compile(r'^subgraph (?:"((?:[^"\\]|\\.)*)"|(\w+)) \{$')


def _attributes(text):
    return {
        key: value[1:-1] if value.startswith('"') else value
        for key, value in _ATTRIBUTE.findall(text or "")
    }


Dot = collections.namedtuple("Dot", "nodes edges clusters cluster_of")


def parse(source, legend=False):
    """nodes: id -> attributes; edges: [(tail, head, attributes)]; clusters: name -> label;
    cluster_of: node id -> the names of its enclosing clusters, outermost first."""
    nodes, edges, clusters, cluster_of, stack = {}, [], {}, {}, []
    for line in source.splitlines()[1:]:
        line = line.strip()
        subgraph = _SUBGRAPH.match(line)
        if subgraph:
            stack.append(subgraph.group(1) or subgraph.group(2))
            clusters[stack[-1]] = None
        elif line == "}":
            if stack:
                stack.pop()
        elif line.startswith("graph [") and stack:
            clusters[stack[-1]] = _attributes(line).get("label")
        elif _EDGE.match(line):
            tail, head, attributes = _EDGE.match(line).groups()
            edges.append((tail, head, _attributes(attributes)))
        elif _NODE.match(line) and _NODE.match(line).group(1) not in ("graph", "node", "edge"):
            name, attributes = _NODE.match(line).groups()
            nodes[name] = _attributes(attributes)
            cluster_of[name] = tuple(stack)
    if not legend:
        nodes = {k: v for k, v in nodes.items() if not k.startswith("legend_")}
        edges = [e for e in edges if not e[0].startswith("legend_")]
        clusters.pop("cluster_legend", None)
    return Dot(nodes, edges, clusters, cluster_of)


def by_label(dot, first_line):
    """The one node whose label starts with the line `first_line`."""
    found = [n for n, a in dot.nodes.items() if a.get("label", "").split("\\n")[0] == first_line]
    assert len(found) == 1, (first_line, found)
    return found[0]


def kind_of(attributes):
    return next(
        kind for kind, style in viz.STYLES.items() if style["fillcolor"] == attributes["fillcolor"]
    )


def is_highlighted(attributes):
    return (
        attributes.get("color") == viz.HIGHLIGHT["color"]
        and attributes.get("penwidth") == viz.HIGHLIGHT["penwidth"]
    )


# ---------------------------------------------------------------------------------------
# Small models defined here, so these tests do not depend on the layer files


class Affine(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.weight = nn.Parameter(
            np.linspace(-1, 1, size * size).reshape(size, size).astype(np.float32)
        )
        self.bias = nn.Parameter(np.full(size, 0.1, np.float32))

    def forward(self, x):
        return x @ self.weight + self.bias


class Block(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.inner = Affine(size)

    def forward(self, x):
        return self.inner(x).tanh()


class Net(nn.Module):
    def __init__(self, size=3):
        super().__init__()
        self.first = Block(size)
        self.head = Affine(size)

    def forward(self, x):
        return self.head(self.first(x)).sum()


class Recurrent(nn.Module):
    """h_t = tanh(x_t W + h_{t-1} U): many ops per call, like an LSTM over a sequence."""

    def __init__(self, size):
        super().__init__()
        self.input_weight = nn.Parameter(np.eye(size, dtype=np.float32) * 0.5)
        self.hidden_weight = nn.Parameter(np.eye(size, dtype=np.float32) * 0.25)

    def forward(self, x):
        hidden = mg.zeros(x.shape[0], x.shape[2])
        for step in range(x.shape[1]):
            hidden = (x[:, step] @ self.input_weight + hidden @ self.hidden_weight).tanh()
        return hidden


class Tagger(nn.Module):
    def __init__(self, size=2):
        super().__init__()
        self.rnn = Recurrent(size)
        self.out = Affine(size)

    def forward(self, x):
        return self.out(self.rnn(x)).sum()


def small_expression():
    """y = sum(tanh(x * w + b)) with named tensors: 7 tensors, 4 ops, 10 edges."""
    x = mg.tensor([[1.0, -2.0]])
    w = mg.tensor([[0.5, 0.25]], requires_grad=True)
    b = mg.tensor([0.1, 0.2], requires_grad=True)
    x.name = "x"
    product = x * w
    product.name = "product"
    total = product + b
    total.name = "total"
    hidden = total.tanh()
    hidden.name = "hidden"
    y = hidden.sum()
    return x, w, b, y


# ---------------------------------------------------------------------------------------
# The trace: the graph as plain lists


def test_trace_returns_the_tensors_and_ops_in_the_order_they_ran():
    x, w, b, y = small_expression()
    vertices, edges = viz.trace(y)
    hidden = y.grad_fn.inputs[0]
    total = hidden.grad_fn.inputs[0]
    product = total.grad_fn.inputs[0]
    mul, add, tanh, total_sum = product.grad_fn, total.grad_fn, hidden.grad_fn, y.grad_fn
    assert [type(v).__name__ for v in vertices] == [
        "Mul",
        "Tensor",
        "Tensor",
        "Add",
        "Tensor",
        "Tensor",
        "Tanh",
        "Tensor",
        "Sum",
        "Tensor",
        "Tensor",
    ]
    expected = [mul, x, w, add, product, b, tanh, total, total_sum, hidden, y]
    assert all(v is e for v, e in zip(vertices, expected, strict=True))
    expected_edges = [
        (x, mul),
        (w, mul),
        (mul, product),
        (product, add),
        (b, add),
        (add, total),
        (total, tanh),
        (tanh, hidden),
        (hidden, total_sum),
        (total_sum, y),
    ]
    assert len(edges) == len(expected_edges)
    assert all(t is et and h is eh for (t, h), (et, eh) in zip(edges, expected_edges))


def test_trace_of_a_leaf_and_of_an_input_used_twice():
    leaf = mg.ones(2, requires_grad=True)
    assert viz.trace(leaf) == ([leaf], [])
    squared = leaf * leaf
    vertices, edges = viz.trace(squared)
    assert vertices == [squared.grad_fn, leaf, squared] and len(edges) == 3
    assert [(t is leaf, h is squared.grad_fn) for t, h in edges[:2]] == [(True, True), (True, True)]


def inputs_drawn(op, edges):
    return [tail for tail, head in edges if head is op]


def test_a_tensor_changed_in_place_is_traced_as_the_value_each_op_used():
    x = mg.ones(2, requires_grad=True)
    a = x * 2
    times_two = a.grad_fn
    b = a * 3
    a.mul_(2)  # a gets a node of its own; b's Mul was given a as it was
    vertices, edges = viz.trace(a + b)
    ops = [v for v in vertices if isinstance(v, Function)]
    assert len(ops) == 4  # x * 2, a.mul_(2), a * 3, a + b
    for op in ops:  # the drawn edges are the ones backward() walks
        assert [v.grad_fn for v in inputs_drawn(op, edges)] == [n for n, _ in op.input_edges]
    old_a = inputs_drawn(b.grad_fn, edges)[0]
    assert old_a is not a and old_a.grad_fn is times_two
    assert old_a is inputs_drawn(a.grad_fn, edges)[0]  # one vertex for a as it was

    vertices, edges = viz.trace(b)  # here no tensor of the graph holds a as it was
    (earlier,) = [v for v in vertices if isinstance(v, EarlierValue)]
    assert inputs_drawn(b.grad_fn, edges)[0] is earlier and earlier.tensor is a
    assert any(tail is times_two and head is earlier for tail, head in edges)
    assert (earlier.shape, earlier.dtype) == (a.shape, a.dtype)


# ---------------------------------------------------------------------------------------
# Structure of a known expression


def test_small_expression_has_the_expected_nodes_and_edges():
    x, w, b, y = small_expression()
    dot = parse(viz.draw(y, params={"w": w, "b": b}, legend=False).source)
    shapes = collections.Counter(a.get("shape", "ellipse") for a in dot.nodes.values())
    assert shapes == {"ellipse": 7, "box": 4}
    assert len(dot.edges) == 10
    assert dot.clusters == {}

    ops = {a["label"].split("\\n")[0]: n for n, a in dot.nodes.items() if a.get("shape") == "box"}
    assert set(ops) == {"Mul", "Add", "Tanh", "Sum"}
    expected = {
        ("x", "Mul"),
        ("w", "Mul"),
        ("Mul", "product"),
        ("product", "Add"),
        ("b", "Add"),
        ("Add", "total"),
        ("total", "Tanh"),
        ("Tanh", "hidden"),
        ("hidden", "Sum"),
        ("Sum", "output"),
    }
    names = {n: a["label"].split("\\n")[0] for n, a in dot.nodes.items()}
    names[next(n for n, a in dot.nodes.items() if kind_of(a) == "output")] = "output"
    assert {(names[t], names[h]) for t, h, _ in dot.edges} == expected

    kinds = {names[n]: kind_of(a) for n, a in dot.nodes.items()}
    assert kinds == {
        "x": "input",
        "w": "parameter",
        "b": "parameter",
        "product": "intermediate",
        "total": "intermediate",
        "hidden": "intermediate",
        "output": "output",
        "Mul": "op",
        "Add": "op",
        "Tanh": "op",
        "Sum": "op",
    }
    assert dot.nodes[by_label(dot, "w")]["label"] == "w\\n(1, 2) float32"
    assert dot.nodes[by_label(dot, "b")]["label"] == "b\\n(2,) float32"
    # No gradient flows back into x: its edge is dashed; the others are plain.
    dashed = [(names[t], names[h]) for t, h, a in dot.edges if a.get("style") == "dashed"]
    assert dashed == [("x", "Mul")]


def test_a_tensor_used_twice_gets_two_edges_into_one_op_and_constants_show_their_value():
    x = mg.tensor([3.0], requires_grad=True)
    y = (x * x * 2).sum()
    dot = parse(viz.draw(y, legend=False).source)
    assert len(dot.nodes) == 4 + 3 + 1  # x, x*x, *2, sum out; Mul, Mul, Sum; the constant 2
    x_id = next(
        n for n, a in dot.nodes.items() if a["label"] == "(1,) float32" and kind_of(a) == "input"
    )
    first_mul = [h for t, h, _ in dot.edges if t == x_id]
    assert len(first_mul) == 2 and first_mul[0] == first_mul[1]
    constant = next(a for a in dot.nodes.values() if a["label"].startswith("scalar float32"))
    assert constant["label"] == "scalar float32\\n2."


def test_every_parameter_appears_with_its_dotted_name_and_shape():
    model = Net(3)
    out = model(mg.ones(2, 3))
    for params in (model, dict(model.named_parameters()), list(model.named_parameters())):
        dot = parse(viz.draw(out, params=params).source)
        for name, parameter in model.named_parameters():
            node = dot.nodes[by_label(dot, name)]
            assert node["label"] == f"{name}\\n{tuple(parameter.shape)} float32"
            assert kind_of(node) == "parameter"
    # Without names the weights are still parameters (nn.Parameter), just unnamed.
    dot = parse(viz.draw(out).source)
    assert sum(kind_of(a) == "parameter" for a in dot.nodes.values()) == 4


def test_graph_is_the_same_text_every_time():
    def build():
        model = Net(3)
        return viz.draw(model(mg.ones(2, 3)), params=model, show_values=True).source

    assert build() == build()


def test_parameters_are_found_by_type_not_by_class_name():
    class Weight(nn.Parameter):  # a subclass is a parameter
        pass

    class Parameter(mg.Tensor):  # a tensor that only borrows the name is not
        pass

    weight, impostor = (
        Weight(np.ones(2, np.float32)),
        Parameter(np.ones(2, np.float32), requires_grad=True),
    )
    weight.name, impostor.name = "weight", "impostor"
    dot = parse(viz.draw((weight * impostor).sum(), legend=False).source)
    assert kind_of(dot.nodes[by_label(dot, "weight")]) == "parameter"
    assert kind_of(dot.nodes[by_label(dot, "impostor")]) == "input"


# ---------------------------------------------------------------------------------------
# Module clusters


def test_ops_are_grouped_in_nested_clusters_labelled_with_name_and_class():
    model = Net(3)
    dot = parse(viz.draw(model(mg.ones(2, 3)), params=model).source)
    assert dot.clusters == {
        "cluster_Net": "Net",
        "cluster_Net/first": "first (Block)",
        "cluster_Net/first/first.inner": "first.inner (Affine)",
        "cluster_Net/head": "head (Affine)",
    }
    assert dot.cluster_of[by_label(dot, "first.inner.weight")] == (
        "cluster_Net",
        "cluster_Net/first",
        "cluster_Net/first/first.inner",
    )
    assert dot.cluster_of[by_label(dot, "head.bias")] == ("cluster_Net", "cluster_Net/head")
    assert dot.cluster_of[by_label(dot, "Tanh")] == ("cluster_Net", "cluster_Net/first")
    input_node = next(n for n, a in dot.nodes.items() if kind_of(a) == "input")
    assert dot.cluster_of[input_node] == ()  # inputs stay outside the model
    ops_in = collections.Counter(
        dot.cluster_of[n][-1] for n, a in dot.nodes.items() if a.get("shape") == "box"
    )
    assert ops_in == {
        "cluster_Net/first/first.inner": 2,
        "cluster_Net/first": 1,
        "cluster_Net/head": 2,
        "cluster_Net": 1,
    }  # MatMul+Add, Tanh, MatMul+Add, Sum

    flat = parse(viz.draw(model(mg.ones(2, 3)), params=model, group_by_module=False).source)
    assert flat.clusters == {} and len(flat.nodes) == len(dot.nodes)


# ---------------------------------------------------------------------------------------
# Collapse


@pytest.mark.parametrize(
    "collapse", ["rnn", "Recurrent", Recurrent, ["Recurrent", "nothing.matches"]]
)
def test_a_collapsed_module_is_one_node_with_its_inputs_outputs_and_parameters(collapse):
    model = Tagger(2)
    x = mg.tensor(np.arange(2 * 20 * 2, dtype=np.float32).reshape(2, 20, 2) / 80)
    out = model(x)
    full = parse(viz.draw(out, params=model, legend=False).source)
    assert len(full.nodes) > 150  # 20 steps of 4 ops and their outputs
    dot = parse(viz.draw(out, params=model, collapse=collapse, legend=False).source)

    boxes = [n for n, a in dot.nodes.items() if a.get("shape") == "box3d"]
    assert len(boxes) == 1
    box = boxes[0]
    op_count = sum(
        a.get("shape") == "box"
        for n, a in full.nodes.items()
        if "cluster_Tagger/rnn" in full.cluster_of[n]
    )
    # The module's own weights are listed in the box, with their names inside the module.
    assert dot.nodes[box]["label"] == (
        f"rnn\\nRecurrent\\n({op_count} ops)\\ninput_weight (2, 2)\\nhidden_weight (2, 2)"
    )
    assert dot.cluster_of[box] == ("cluster_Tagger",)
    tails = sorted(dot.nodes[t]["label"] for t, h, _ in dot.edges if h == box)
    # What enters the box: the 20 slices x[:, step] (no grad, so not recorded: 20 leaves viewing
    # x's memory, drawn as one node) and the zeros the recurrence starts from.
    assert tails == ["(2, 2) float32", "(2, 2) float32\\n20 views of one array"]
    heads = [h for t, h, _ in dot.edges if t == box]
    assert len(heads) == 1 and dot.nodes[heads[0]]["label"] == "(2, 2) float32"
    # Outside the box everything is still drawn: the box, its 2 inputs and 1 output, then
    # (MatMul, out.weight, product), (Add, out.bias, sum), (Sum, output).
    assert len(dot.nodes) == 1 + 2 + 1 + 3 + 3 + 2
    assert not any("cluster_Tagger/rnn" in c for c in dot.clusters)


class SequenceClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True, bidirectional=True)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        outputs, _ = self.lstm(x)
        return self.head(outputs[:, -1]).sum()


def test_a_collapsed_lstm_is_one_node_listing_its_weights_with_their_gradients():
    mg.manual_seed(0)
    model = SequenceClassifier()
    out = model(mg.randn(2, 5, 3, requires_grad=True))
    out.backward()
    dot = parse(viz.draw(out, params=model, collapse=nn.LSTM, show_grad=True, legend=False).source)
    boxes = [a["label"] for a in dot.nodes.values() if a.get("shape") == "box3d"]
    assert len(boxes) == 1
    lines = boxes[0].split("\\n")
    assert lines[:2] == ["lstm", "LSTM"]
    listed = {line.split(" ")[0]: line for line in lines[3:]}
    for name, parameter in model.lstm.named_parameters():
        assert listed[name].startswith(f"{name} {tuple(parameter.shape)} grad ")
        grad = parameter.grad.numpy()
        if grad.size > viz.VALUES_MAX_ELEMENTS:  # the smallest and largest entry, signed
            low, high = (float(v) for v in listed[name].split(" from ")[1].split(" to "))
            np.testing.assert_allclose([low, high], [grad.min(), grad.max()], rtol=1e-3)
        else:  # (4,) biases: every entry
            shown = re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", listed[name].split(" grad ")[1])
            np.testing.assert_allclose([float(v) for v in shown], grad, rtol=1e-3, atol=1e-7)
    assert len(listed) == 8
    assert not any(
        "weight_ih" in a["label"] for a in dot.nodes.values() if a.get("shape") != "box3d"
    )
    assert set(dot.clusters) == {"cluster_SequenceClassifier", "cluster_SequenceClassifier/head"}


def test_two_calls_of_a_collapsed_module_are_two_nodes_in_a_chain():
    layer = Affine(2)
    x = mg.ones(1, 2)
    y = layer(layer(x)).sum()
    dot = parse(
        viz.draw(
            y, params={"weight": layer.weight, "bias": layer.bias}, collapse=Affine, legend=False
        ).source
    )
    boxes = sorted(n for n, a in dot.nodes.items() if a.get("shape") == "box3d")
    assert len(boxes) == 2
    between = [h for t, h, _ in dot.edges if t == boxes[0]]
    assert len(between) == 1 and (between[0], boxes[1], {}) in dot.edges
    for box in boxes:  # each call is fed by the same two parameters
        tails = {dot.nodes[t]["label"].split("\\n")[0] for t, h, _ in dot.edges if h == box}
        assert {"weight", "bias"} <= tails


# ---------------------------------------------------------------------------------------
# Highlight


def paths_to_outputs(dot, starts):
    """Edges on a path from a start node to an output, found independently of mg.viz:
    (forward-reachable from a start) x (backward-reachable from an output)."""
    successors, predecessors = collections.defaultdict(list), collections.defaultdict(list)
    for tail, head, _ in dot.edges:
        successors[tail].append(head)
        predecessors[head].append(tail)

    def reach(seeds, neighbours):
        seen, stack = set(seeds), list(seeds)
        while stack:
            for other in neighbours[stack.pop()]:
                if other not in seen:
                    seen.add(other)
                    stack.append(other)
        return seen

    downstream = reach(starts, successors)
    outputs = [n for n, a in dot.nodes.items() if kind_of(a) == "output"]
    upstream = reach(outputs, predecessors)
    return {(t, h) for t, h, _ in dot.edges if t in downstream and h in upstream}


def test_highlighted_edges_are_exactly_the_paths_from_the_output_to_the_parameter():
    x, w, b, y = small_expression()
    dot = parse(viz.draw(y, params={"w": w, "b": b}, highlight=[b], legend=False).source)
    names = {n: a["label"].split("\\n")[0] for n, a in dot.nodes.items()}
    highlighted = {(names[t], names[h]) for t, h, a in dot.edges if is_highlighted(a)}
    assert highlighted == {
        ("b", "Add"),
        ("Add", "total"),
        ("total", "Tanh"),
        ("Tanh", "hidden"),
        ("hidden", "Sum"),
        ("Sum", "scalar float32"),
    }
    assert is_highlighted(dot.nodes[by_label(dot, "b")]) and not is_highlighted(
        dot.nodes[by_label(dot, "w")]
    )

    dot = parse(viz.draw(y, params={"w": w, "b": b}, highlight=[w, b], legend=False).source)
    assert sum(is_highlighted(a) for _, _, a in dot.edges) == 9  # all but x -> Mul


@pytest.mark.parametrize("collapse", [None, Recurrent])
def test_highlight_matches_an_independent_path_search(collapse):
    model = Tagger(2)
    out = model(mg.ones(1, 5, 2))
    targets = [model.rnn.hidden_weight, model.out.bias]
    dot = parse(viz.draw(out, params=model, highlight=targets, collapse=collapse).source)
    starts = [by_label(dot, "rnn.hidden_weight"), by_label(dot, "out.bias")]
    highlighted = {(t, h) for t, h, a in dot.edges if is_highlighted(a)}
    assert highlighted == paths_to_outputs(dot, starts)
    assert 0 < len(highlighted) < len(dot.edges)


# ---------------------------------------------------------------------------------------
# Values and gradients


def gradient_rows(label):
    """The numbers of the lines after "grad" in a label."""
    lines = label.split("\\n")
    rows = lines[lines.index("grad") + 1 :]
    return [[float(v) for v in re.findall(r"-?[\d.]+(?:e-?\d+)?", row)] for row in rows]


def test_show_grad_prints_the_signed_gradient_of_tensors_with_grad():
    x, w, b, y = small_expression()
    y.backward()
    dot = parse(viz.draw(y, params={"w": w, "b": b}, show_grad=True).source)
    # d/db sum(tanh(x*w + b)) = 1 - tanh^2, d/dw = x (1 - tanh^2): the second entry negative
    slope = 1 - np.tanh(np.array([1.0 * 0.5 + 0.1, -2.0 * 0.25 + 0.2])) ** 2
    expected = {"w": [list(np.array([1.0, -2.0]) * slope)], "b": [list(slope)]}
    for name in ("w", "b"):
        label = dot.nodes[by_label(dot, name)]["label"]
        np.testing.assert_allclose(gradient_rows(label), expected[name], rtol=1e-3)
    assert gradient_rows(dot.nodes[by_label(dot, "w")]["label"])[0][1] < 0
    assert "grad" not in dot.nodes[by_label(dot, "x")]["label"]  # x has no grad
    assert (
        "grad" not in parse(viz.draw(y, params={"w": w}).source).nodes[by_label(dot, "w")]["label"]
    )


def test_show_values_prints_small_tensors_such_as_a_3x3_attention_matrix():
    scores = mg.tensor(
        np.log(np.array([[1, 1, 2], [1, 3, 0.5], [4, 1, 1]], np.float32)), requires_grad=True
    )
    weights = mg.softmax(scores, dim=-1)
    weights.name = "attention weights"
    big = mg.ones(5, 5, requires_grad=True)  # 25 elements: too many to print
    out = weights.sum() + (big * 2).sum()
    dot = parse(viz.draw(out, show_values=True).source)
    label = dot.nodes[by_label(dot, "attention weights")]["label"]
    assert label == (
        "attention weights\\n(3, 3) float32\\n[[0.25  0.25  0.5  ]\\n"
        "[0.222 0.667 0.111]\\n[0.667 0.167 0.167]]"
    )
    big_label = next(a["label"] for a in dot.nodes.values() if a["label"].startswith("(5, 5)"))
    assert big_label == "(5, 5) float32"
    hidden = parse(viz.draw(out).source)
    assert (
        hidden.nodes[by_label(hidden, "attention weights")]["label"]
        == "attention weights\\n(3, 3) float32"
    )


def test_op_labels_carry_short_settings():
    x = mg.ones(2, 3, requires_grad=True)
    y = mg.softmax(x, dim=-1)[:, :2].sum(dim=1)
    labels = {
        a["label"] for a in parse(viz.draw(y).source).nodes.values() if a.get("shape") == "box"
    }
    assert labels == {"Softmax\\ndim=1", "GetItem\\nindex=(:, :2)", "Sum\\ndims=(1,)"}


# ---------------------------------------------------------------------------------------
# Size, legend, errors


def test_a_deep_graph_draws_without_recursion():
    h = mg.ones(1, 2)
    w = mg.tensor([[0.5, 0.5]], requires_grad=True)
    for _ in range(3000):  # far deeper than Python's recursion limit
        h = (h * w).tanh()
    dot = parse(viz.draw(h, params={"w": w}, highlight=[w], legend=False).source)
    assert len(dot.nodes) == 2 + 4 * 3000 and len(dot.edges) == 5 * 3000
    plain = [(t, h) for t, h, a in dot.edges if not is_highlighted(a)]
    assert len(plain) == 1 and kind_of(dot.nodes[plain[0][0]]) == "input"  # the start value h0


def test_legend_shows_the_kinds_present():
    model = Tagger(2)
    out = model(mg.ones(1, 3, 2))
    dot = parse(
        viz.draw(out, params=model, collapse=Recurrent, highlight=[model.out.weight]).source,
        legend=True,
    )
    legend = sorted(n for n in dot.nodes if n.startswith("legend_"))
    assert legend == [
        "legend_highlight",
        "legend_input",
        "legend_intermediate",
        "legend_module",
        "legend_op",
        "legend_output",
        "legend_parameter",
    ]
    plain = parse(viz.draw(mg.ones(2, requires_grad=True).sum()).source, legend=True)
    assert sorted(n for n in plain.nodes if n.startswith("legend_")) == [
        "legend_input",
        "legend_op",
        "legend_output",
    ]


def test_errors_name_what_was_expected():
    x, w, b, y = small_expression()
    with pytest.raises(TypeError, match="at least one output"):
        viz.draw()
    with pytest.raises(TypeError, match="must be Tensors; argument 0 is a ndarray"):
        viz.draw(np.ones(3))
    with pytest.raises(ValueError, match="rankdir must be one of"):
        viz.draw(y, rankdir="sideways")
    with pytest.raises(TypeError, match="collapse takes module names"):
        viz.draw(y, collapse=[3])
    with pytest.raises(TypeError, match="highlight takes a list of Tensors"):
        viz.draw(y, highlight=["w"])
    with pytest.raises(ValueError, match="highlight tensor unused is not in the drawn graph"):
        unused = mg.ones(2, requires_grad=True)
        viz.draw(y, params={"unused": unused}, highlight=[unused])
    with pytest.raises(TypeError, match="params must be a dict"):
        viz.draw(y, params={"w": 1.0})
    with pytest.raises(ValueError, match="format must be one of"):
        viz.render(viz.draw(y), "graph.gif", format="gif")
    with pytest.raises(TypeError, match="expected a graphviz graph"):
        viz.render(y.data, "graph.svg")


def test_rankdir_is_passed_to_graphviz():
    x, w, b, y = small_expression()
    assert "rankdir=LR" in viz.draw(y, rankdir="LR").source


# ---------------------------------------------------------------------------------------
# Names that try to break the DOT text (issue 14): read back from what Graphviz draws

HOSTILE_NAMES = [
    'say "hi"',
    "back\\slash at the end\\",
    "\\N \\G \\n \\l",
    "braces {x|y} <b>bold</b> &amp;",
    'evil" fillcolor="red" shape="star',
    '"] ; injected [label="x',
    "two\nlines",
    "bell\x07 and\ttab",
    "lone \udcff surrogate",
]


def drawn_text(text):
    """The lines Graphviz should draw for a name: control characters shown as \\xNN escapes."""
    text = re.sub(r"[\x00-\x09\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", text)
    return re.sub(r"[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text).split("\n")


def svg_shapes(graph):
    """title -> (fill colour, [text lines]) of every node and cluster Graphviz drew."""
    svg = "{http://www.w3.org/2000/svg}"
    shapes = {}
    for group in ElementTree.fromstring(graph.pipe(format="svg")).iter(f"{svg}g"):
        if group.get("class") in ("node", "cluster"):
            outline = next(
                e for e in group if e.tag in (f"{svg}ellipse", f"{svg}polygon", f"{svg}path")
            )
            shapes[group.find(f"{svg}title").text] = (
                outline.get("fill"),
                [t.text for t in group.iter(f"{svg}text")],
            )
    return shapes


def test_hostile_tensor_names_are_drawn_as_written():
    tensors = [mg.tensor([float(i)], requires_grad=True) for i in range(len(HOSTILE_NAMES))]
    total = tensors[0]
    for tensor in tensors[1:]:
        total = total + tensor
    half = len(HOSTILE_NAMES) // 2
    for tensor, name in list(zip(tensors, HOSTILE_NAMES))[:half]:
        tensor.name = name  # half named on the tensor, half through params
    params = {name: tensor for tensor, name in list(zip(tensors, HOSTILE_NAMES))[half:]}
    graph = viz.draw(total.sum(), params=params, show_grad=False, legend=False)
    dot = parse(graph.source)
    # leaves, Adds and their sums, Sum, output
    assert len(dot.nodes) == len(tensors) + 2 * (len(tensors) - 1) + 2
    shapes = svg_shapes(graph)
    assert set(shapes) == set(dot.nodes)  # Graphviz read every node, and no other
    drawn = sorted(lines[:-1] for fill, lines in shapes.values() if fill in ("#f9cb9c", "#d9ead3"))
    assert drawn == sorted(drawn_text(name) for name in HOSTILE_NAMES)
    assert {fill for fill, _ in shapes.values()} == {
        "#f9cb9c",
        "#d9ead3",
        "#cfe2f3",
        "#fff2cc",
        "#ea9999",
    }


HOSTILE_PARAMETER = 'we"ight\\'


class HostileInner(Affine):
    def __init__(self, size):
        super().__init__(size)
        self.register_parameter(HOSTILE_PARAMETER, nn.Parameter(np.ones(size, np.float32)))

    def forward(self, x):
        return super().forward(x) * self._parameters[HOSTILE_PARAMETER]


class HostileOuter(nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module(HOSTILE_NAMES[4], HostileInner(2))

    def forward(self, x):
        return self._modules[HOSTILE_NAMES[4]](x).sum()


HostileInner.__name__ = 'Inner"] x [fillcolor="red'
HostileOuter.__name__ = "Outer\\{<b>}\n2nd line"


def test_hostile_module_and_class_names_are_drawn_as_written():
    model = HostileOuter()
    out = model(mg.ones(1, 2))
    module_name, inner, outer = HOSTILE_NAMES[4], HostileInner.__name__, HostileOuter.__name__
    for collapse in (None, HostileInner):
        graph = viz.draw(out, params=model, collapse=collapse, legend=False)
        dot, shapes = parse(graph.source), svg_shapes(graph)
        assert len(shapes) == len(dot.nodes) + len(dot.clusters) and set(dot.nodes) <= set(shapes)
        clusters = sorted(lines for title, (_, lines) in shapes.items() if title not in dot.nodes)
        labels = sorted(lines for title, (_, lines) in shapes.items() if title in dot.nodes)
        assert "red" not in {fill for fill, _ in shapes.values()}
        if collapse is None:
            assert clusters == sorted([drawn_text(outer), drawn_text(f"{module_name} ({inner})")])
            for name in ("weight", "bias", HOSTILE_PARAMETER):
                assert drawn_text(f"{module_name}.{name}") in [lines[:-1] for lines in labels]
        else:
            assert clusters == [drawn_text(outer)]
            (box,) = [lines for lines in labels if "(3 ops)" in lines]
            assert box[:-3] == [*drawn_text(module_name), inner, "(3 ops)"]
            assert sorted(box[-3:]) == sorted(
                ["weight (2, 2)", "bias (2,)", f"{HOSTILE_PARAMETER} (2,)"]
            )


def test_drawing_pauses_the_cycle_collector_and_restores_it(monkeypatch):
    x, w, b, y = small_expression()
    during, real_label = [], drawing.label
    monkeypatch.setattr(
        drawing, "label", lambda *args: during.append(gc.isenabled()) or real_label(*args)
    )
    assert gc.isenabled()
    viz.draw(y)
    assert during and not any(during) and gc.isenabled()
    with pytest.raises(ValueError, match="not in the drawn graph"):
        viz.draw(y, highlight=[mg.ones(1, requires_grad=True)])
    assert gc.isenabled()
    gc.disable()
    try:
        viz.draw(y)
        assert not gc.isenabled()  # a collector the program switched off stays off
    finally:
        gc.enable()


# ---------------------------------------------------------------------------------------
# Rendering


def test_render_writes_valid_svg_png_and_pdf(tmp_path):
    model = Net(3)
    graph = viz.draw(model(mg.ones(2, 3)), params=model, highlight=[model.head.weight])
    svg = viz.render(graph, tmp_path / "graph.svg")
    assert svg == tmp_path / "graph.svg"
    root = ElementTree.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    titles = {element.text for element in root.iter("{http://www.w3.org/2000/svg}title")}
    assert set(parse(graph.source).nodes) <= titles
    png = viz.render(graph, tmp_path / "graph.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pdf = viz.render(graph, tmp_path / "picture", format="pdf")
    assert pdf.read_bytes()[:5] == b"%PDF-"


def test_render_without_graphviz_says_how_to_install_it(tmp_path, monkeypatch):
    x, w, b, y = small_expression()
    graph = viz.draw(y)
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` here
    with pytest.raises(viz.GraphvizNotFoundError) as error:
        viz.render(graph, tmp_path / "graph.svg")
    assert "apt-get install graphviz" in str(error.value) and "brew install graphviz" in str(
        error.value
    )
    assert not (tmp_path / "graph.svg").exists()
    assert "digraph" in graph.source  # the DOT text needs no Graphviz


def test_render_failing_write_keeps_the_old_picture(tmp_path, monkeypatch):
    x, w, b, y = small_expression()
    graph = viz.draw(y)
    target = tmp_path / "graph.svg"
    target.write_text("the user's picture")

    def fail(source, destination):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        viz.render(graph, target)
    assert target.read_text() == "the user's picture"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["graph.svg"]  # no temporary left


# ---------------------------------------------------------------------------------------
# The example's committed pictures


_NUMBER = re.compile(r"-?\d+\.\d*(?:e[-+]?\d+)?|-?\d+e[-+]?\d+")


def assert_same_dot(now, committed):
    """Equal DOT text, except that printed numbers may differ in their last digit (BLAS order)."""
    assert _NUMBER.sub("#", now) == _NUMBER.sub("#", committed), (
        "the example draws a different graph than the committed one; if a layer changed on "
        "purpose, rerun `python examples/attention_graph.py` and commit docs/images/"
    )
    numbers_now = [float(n) for n in _NUMBER.findall(now)]
    numbers_committed = [float(n) for n in _NUMBER.findall(committed)]
    np.testing.assert_allclose(numbers_now, numbers_committed, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", ["attention_graph", "sentiment_graph"])
def test_example_pictures_are_reproducible(name):
    from examples import attention_graph as example

    graph = getattr(example, name)()
    assert_same_dot(graph.source, (IMAGES / f"{name}.dot").read_text())
    svg = ElementTree.parse(IMAGES / f"{name}.svg").getroot()
    titles = {element.text for element in svg.iter("{http://www.w3.org/2000/svg}title")}
    assert set(parse(graph.source, legend=True).nodes) <= titles  # the SVG was drawn from this DOT


def test_attention_example_highlights_the_four_matrices():
    from examples import attention_graph as example

    dot = parse(example.attention_graph().source)
    starts = [by_label(dot, name) for name in example.ATTENTION_MATRICES]
    for start in starts:
        assert (
            kind_of(dot.nodes[start]) == "parameter" and "\\ngrad\\n[[" in dot.nodes[start]["label"]
        )
    highlighted = {(t, h) for t, h, a in dot.edges if is_highlighted(a)}
    assert highlighted == paths_to_outputs(dot, starts)
    weights = dot.nodes[by_label(dot, "weights")]["label"]
    assert weights.startswith("weights\\n(1, 1, 3, 3) float32\\n[[[[")
    rows = [[float(v) for v in re.findall(r"[-\d.]+", row)] for row in weights.split("\\n")[2:5]]
    # softmax rows of the 3x3 matrix
    np.testing.assert_allclose(np.sum(rows, axis=1), 1.0, atol=2e-3)


def test_sentiment_example_is_tens_of_nodes_with_the_lstm_as_one():
    from examples import attention_graph as example

    dot = parse(example.sentiment_graph().source)
    assert 15 <= len(dot.nodes) <= 99
    boxes = [a["label"] for a in dot.nodes.values() if a.get("shape") == "box3d"]
    assert boxes and all(label.startswith("encoder\\nLSTM") for label in boxes)
    assert len(boxes) == 1
