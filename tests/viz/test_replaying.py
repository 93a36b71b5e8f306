"""mg.viz.replay (minigrad/viz/replaying.py): the backward walk, step by step.

The replay is checked against what it replays, never against itself: the order of its steps
against the order in which the nodes' backward functions really run (Function.run_backward
wrapped to note each call), its gradients against `.grad` after a plain backward() of an
identical graph, against central differences in float64 and against PyTorch, and its errors
against backward()'s own.
"""

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import nn
from minigrad.engine import Function


def shared_graph(seed=0):
    """A graph with every kind of step: x is used four times (matmul, x * x, mean, split), b is
    broadcast, Split has two outputs, w is a parameter used twice. Returns (loss, leaves)."""
    rng = np.random.default_rng(seed)
    x = mg.tensor(rng.normal(size=(3, 4)), requires_grad=True)
    w = mg.tensor(rng.normal(size=(4, 4)), requires_grad=True)
    b = mg.tensor(rng.normal(size=(4,)), requires_grad=True)
    x.name, w.name, b.name = "x", "w", "b"
    h = (x @ w + b).tanh() @ w
    left, right = mg.split(h, 2, dim=1)
    first, second = mg.split(x, 2, dim=1)
    loss = (left * right).sum() + 0.1 * (x * x).sum() + x.mean() + (first * second).sum()
    return loss, (x, w, b)


@pytest.fixture
def visited(monkeypatch):
    """The nodes whose backward runs, in the order they run."""
    order = []
    real = Function.run_backward

    def noting(self, out_grads, retain_graph):
        order.append(self)
        return real(self, out_grads, retain_graph)

    monkeypatch.setattr(Function, "run_backward", noting)
    return order


def test_the_steps_are_the_nodes_in_the_order_their_backward_runs(visited):
    loss, _ = shared_graph()
    steps = mg.viz.replay(loss)
    assert len(visited) == len(steps) > 10
    assert all(step.node is node for step, node in zip(steps, visited))
    assert [step.index for step in steps] == list(range(len(steps)))
    assert steps[0].node is loss.grad_fn  # the walk starts at the op that made the loss
    assert [step.op for step in steps].count("Split") == 2


def test_the_order_is_the_real_one_in_the_attention_model(visited):
    mg.manual_seed(0)
    attention = nn.SelfAttention(4, fused=False)
    x = mg.tensor(np.random.default_rng(1).normal(size=(2, 3, 4)).astype(np.float32))
    loss = attention(x).square().mean()
    steps = mg.viz.replay(loss, params=attention)
    assert [step.node for step in steps] == visited
    assert {step.module for step in steps} == {"", "SelfAttention"}
    assert steps[-1].op == "MatMul" and steps[-1].module == "SelfAttention"


def test_grad_is_what_a_plain_backward_gives_and_the_totals_are_it():
    loss, leaves = shared_graph()
    steps = mg.viz.replay(loss)
    reference_loss, reference_leaves = shared_graph()
    reference_loss.backward()
    totals = steps.totals()
    assert set(totals) == set(leaves)
    for leaf, reference in zip(leaves, reference_leaves):
        np.testing.assert_array_equal(leaf.grad.numpy(), reference.grad.numpy())
        np.testing.assert_allclose(totals[leaf].array, reference.grad.numpy(), rtol=1e-12)


def numerical_gradient(make_loss, leaf_index, eps=1e-6):
    """Central differences of the loss of shared_graph with respect to one leaf, in float64."""
    _, leaves = make_loss()
    base = leaves[leaf_index].numpy().copy()
    gradient = np.zeros_like(base)
    for index in np.ndindex(base.shape):
        values = []
        for sign in (1, -1):
            loss, leaves = make_loss()
            with mg.no_grad():
                shifted = base.copy()
                shifted[index] += sign * eps
                leaves[leaf_index].copy_(mg.tensor(shifted))
            values.append(_loss_of(leaves))
        gradient[index] = (values[0] - values[1]) / (2 * eps)
    return gradient


def _loss_of(leaves):
    x, w, b = (leaf.numpy() for leaf in leaves)
    h = np.tanh(x @ w + b) @ w
    return float(
        (h[:, :2] * h[:, 2:]).sum() + 0.1 * (x * x).sum() + x.mean() + (x[:, :2] * x[:, 2:]).sum()
    )


def test_the_totals_equal_central_differences_in_float64():
    loss, leaves = shared_graph()
    totals = mg.viz.replay(loss).totals()
    for index, leaf in enumerate(leaves):
        expected = numerical_gradient(shared_graph, index)
        np.testing.assert_allclose(totals[leaf].array, expected, rtol=1e-6, atol=1e-8)


def test_the_totals_equal_torch():
    torch = pytest.importorskip("torch")
    loss, leaves = shared_graph()
    totals = mg.viz.replay(loss).totals()
    x, w, b = (torch.tensor(leaf.numpy(), requires_grad=True) for leaf in leaves)
    h = torch.tanh(x @ w + b) @ w
    left, right = torch.split(h, 2, dim=1)
    first, second = torch.split(x, 2, dim=1)
    (left * right).sum().add(0.1 * (x * x).sum()).add(x.mean()).add(
        (first * second).sum()
    ).backward()
    for leaf, theirs in zip(leaves, (x, w, b)):
        np.testing.assert_allclose(totals[leaf].array, theirs.grad.numpy(), rtol=1e-10)


def test_a_shared_input_accumulates_use_by_use():
    loss, (x, w, _) = shared_graph()
    steps = mg.viz.replay(loss)
    received = [
        (entry.grad.array, entry.total.array, entry.uses)
        for step in steps
        for entry in step.inputs
        if entry.tensor is x
    ]
    # x feeds the matmul, x * x (twice: one use per operand), mean and split: 5 gradients.
    assert [uses for _, _, uses in received] == [1, 2, 3, 4, 5]
    running = np.zeros_like(x.numpy())
    for grad, total, _ in received:
        running = running + grad
        np.testing.assert_allclose(total, running, rtol=1e-12)
    np.testing.assert_allclose(running, x.grad.numpy(), rtol=1e-12)
    uses_of_w = [entry.uses for step in steps for entry in step.inputs if entry.tensor is w]
    assert uses_of_w == [1, 2]


def test_small_tensors_carry_their_values():
    # loss = sum(w * x) + sum(w): d loss / d w = x + 1, d loss / d x = w, numbers by hand.
    w = mg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    x = mg.tensor([4.0, 5.0, 6.0])
    loss = (w * x).sum() + w.sum()
    steps = mg.viz.replay(loss, params={"w": w})
    # Reverse topological order: Add, then the Sum of its second input (w.sum(), reached last by
    # the depth-first search), then the Sum of w * x and the Mul.
    assert [step.op for step in steps] == ["Add", "Sum", "Sum", "Mul"]
    add, sum_of_w, _, mul = steps
    assert add.arriving[0].values == 1.0 and add.arriving[0].shape == ()
    (first,) = sum_of_w.inputs
    assert (first.name, first.kind, first.uses) == ("w", "parameter", 1)
    assert first.grad.values == [1.0, 1.0, 1.0] and first.total.values == [1.0, 1.0, 1.0]
    assert mul.arriving[0].values == [1.0, 1.0, 1.0]
    w_entry, x_entry = mul.inputs
    assert w_entry.grad.values == [4.0, 5.0, 6.0]
    assert w_entry.grad.norm == pytest.approx(np.sqrt(16 + 25 + 36))
    assert w_entry.total.values == [5.0, 6.0, 7.0] and w_entry.uses == 2
    assert x_entry.grad is None and x_entry.kind == "input"  # x needs no gradient
    assert w.grad.numpy().tolist() == [5.0, 6.0, 7.0]
    text = str(steps)
    assert "-> w (t0): shape (3,) norm 8.775 values [4 5 6]\n" in text
    assert "    sum of 2 so far: shape (3,) norm 10.49 values [5 6 7]\n" in text
    assert text.endswith("-> an input (t1): no gradient (needs none)")
    big = mg.tensor(np.ones(17), requires_grad=True)
    (only,) = mg.viz.replay(big.sum())
    assert only.inputs[0].grad.values is None  # more than VALUES_MAX_ELEMENTS: shape and norm
    assert only.inputs[0].grad.norm == pytest.approx(np.sqrt(17))


def test_the_ids_are_those_of_the_drawn_graph():
    loss, (x, w, b) = shared_graph()
    steps = mg.viz.replay(loss, params={"x": x, "w": w, "b": b}, highlight=[w])
    dot = mg.viz.draw(loss, params={"x": x, "w": w, "b": b}, highlight=[w]).source
    labels = dict(re.findall(r'^\t*((?:t|op)\d+) \[label="([^"]*)"', dot, re.M))
    for step in steps:
        assert labels[step.id].split("\\n")[0] == step.op
        for entry in step.inputs:
            if entry.tensor.grad_fn is None and entry.tensor.numel() > 1:  # x, w, b
                assert labels[entry.id].split("\\n")[0] == entry.name
            else:  # an intermediate (or a number): its shape and dtype
                shape = entry.tensor.shape
                assert labels[entry.id].startswith(str(shape) if shape else "scalar")
    # every vertex of the graph: the id draw gives it (its label is on that id's line)
    for vertex, vertex_id in mg.viz.vertex_ids(loss, highlight=[w]).items():
        expected = mg.viz.label(vertex, {x: "x", w: "w", b: "b"}, False, False)
        assert labels[vertex_id] == expected.replace("\n", "\\n")


def test_leaves_drawn_as_one_vertex_share_its_id():
    base = np.arange(12.0).reshape(3, 4)
    weight = mg.tensor(np.ones(4), requires_grad=True)
    rows = [mg.from_numpy(base[i]) for i in range(3)]  # three views of one array, no grad
    loss = sum((row * weight).sum() for row in rows)
    steps = mg.viz.replay(loss)
    ids = {
        entry.id
        for step in steps
        if step.op == "Mul"
        for entry in step.inputs
        if entry.tensor is not weight
    }
    assert len(ids) == 1
    dot = mg.viz.draw(loss).source
    (merged,) = ids
    assert re.search(rf"^\t*{merged} \[label=\"\(4,\) float64\\n3 views of one array\"", dot, re.M)


def test_steps_are_json_and_text():
    loss, (x, w, b) = shared_graph()
    steps = mg.viz.replay(loss, params={"x": x, "w": w, "b": b})
    plain = json.loads(json.dumps(steps.to_dicts(), allow_nan=False))
    assert [s["op"] for s in plain] == [s.op for s in steps]
    assert [s["id"] for s in plain] == [s.id for s in steps]
    uses_of_w = [(s, e) for s, step in zip(plain, steps) for e in s["inputs"] if e["name"] == "w"]
    assert [e["uses"] for _, e in uses_of_w] == [1, 2]
    (_, first), (_, second) = uses_of_w
    assert first["shape"] == [4, 4] and first["grad"]["shape"] == [4, 4]
    # a (4, 4) matrix has 16 entries, VALUES_MAX_ELEMENTS: its values are there
    np.testing.assert_allclose(second["total"]["values"], w.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        np.add(first["grad"]["values"], second["grad"]["values"]), w.grad.numpy(), rtol=1e-12
    )
    assert second["total"]["norm"] == pytest.approx(np.linalg.norm(w.grad.numpy()))
    shorter = steps.to_dicts(max_values=8)  # then only shape and norm
    assert all(
        e["total"] is None or e["total"]["values"] is None or np.size(e["total"]["values"]) <= 8
        for s in shorter
        for e in s["inputs"]
    )
    text = str(steps)
    assert text.count("\nstep ") == len(steps) - 1 and text.startswith("step   1  Add (op")
    assert "-> x (t" in text and "sum of 5 so far" in text


def test_a_gradient_that_is_not_finite_is_null_in_json():
    x = mg.tensor([0.0, 1.0], requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        steps = mg.viz.replay(x.log().sum())
    plain = json.loads(json.dumps(steps.to_dicts(), allow_nan=False))
    assert plain[-1]["inputs"][0]["grad"]["values"] == [None, 1.0]
    assert plain[-1]["inputs"][0]["grad"]["norm"] is None


def test_frames_light_up_one_node_each():
    loss, (x, w, b) = shared_graph()
    steps = mg.viz.replay(loss)
    frames = steps.frames()
    assert len(frames) == len(steps)
    for step, frame in zip(steps, frames):
        source = frame.source
        assert f'\t{step.id} [fillcolor="#f6b26b"' in source
        lit = set(re.findall(r'^\t((?:t|op)\d+) \[fillcolor="#f6b26b"', source, re.M))
        assert lit == {step.id}
        receiving = dict(
            re.findall(r'^\t(t\d+) \[color="#e69138".* xlabel="([^"]*)"', source, re.M)
        )
        sent = {e.id: e.grad.array for e in step.inputs if e.grad is not None}
        assert set(receiving) == set(sent)
        for vertex_id, text in receiving.items():  # the gradient itself, its signs kept
            shown = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]
            array = sent[vertex_id]
            if array.size > 16:  # too many to list: the smallest and the largest
                array = np.array([array.min(), array.max()])
                shown = shown[-2:]
            np.testing.assert_allclose(shown, array.ravel(), rtol=1e-3)
        done = set(re.findall(r'^\t(op\d+) \[fillcolor="#fce5cd"\]', source, re.M))
        assert done == {earlier.id for earlier in steps[: step.index]}
    with pytest.raises(TypeError, match="collapse"):
        steps.frames(collapse="Linear")


def test_hooks_and_retain_grad_as_backward():
    def make():
        x = mg.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: g * 3)
        h = x * x
        h.retain_grad()
        return (h * x).sum(), x, h

    loss, x, h = make()
    steps = mg.viz.replay(loss)
    reference, rx, rh = make()
    reference.backward()
    np.testing.assert_array_equal(x.grad.numpy(), rx.grad.numpy())  # 3 * 3x^2
    np.testing.assert_array_equal(h.grad.numpy(), rh.grad.numpy())
    np.testing.assert_array_equal(x.grad.numpy(), 3 * steps.totals()[x].array)


@pytest.mark.parametrize(
    "make, grad",
    [
        (lambda: mg.tensor([1.0, 2.0]) * 2, None),  # nothing requires grad
        (lambda: mg.tensor([1.0, 2.0], requires_grad=True) * 2, None),  # not one number
        (lambda: mg.tensor([1.0, 2.0], requires_grad=True) * 2, np.ones(3)),  # wrong shape
    ],
    ids=["no-grad", "not-scalar", "wrong-grad-shape"],
)
def test_bad_outputs_raise_what_backward_raises(make, grad):
    with pytest.raises(Exception) as theirs:
        make().backward(grad)
    with pytest.raises(type(theirs.value)) as ours:
        mg.viz.replay(make(), grad)
    assert str(ours.value) == str(theirs.value)
    assert "does not require grad" in str(theirs.value) or "shape" in str(theirs.value)


def test_a_freed_graph_raises_as_backward_does():
    loss, _ = shared_graph()
    mg.viz.replay(loss)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        mg.viz.replay(loss)
    loss, leaves = shared_graph()
    first = mg.viz.replay(loss, retain_graph=True)
    second = mg.viz.replay(loss)
    assert [s.node for s in first] == [s.node for s in second]
    np.testing.assert_allclose(leaves[1].grad.numpy(), 2 * first.totals()[leaves[1]].array)


def test_wrong_arguments_name_what_was_expected():
    with pytest.raises(TypeError, match="output must be a Tensor; got list"):
        mg.viz.replay([1.0])
    loss, _ = shared_graph()
    with pytest.raises(TypeError, match="params must be"):
        mg.viz.replay(loss, params=[1, 2])
    with pytest.raises(TypeError, match="highlight takes a list of Tensors"):
        mg.viz.replay(loss, highlight=["w"])


def test_a_leaf_output_has_no_steps_and_gets_its_grad():
    x = mg.tensor(2.0, requires_grad=True)
    steps = mg.viz.replay(x)
    assert list(steps) == [] and x.grad.item() == 1.0
    assert "no node visited" in str(steps)


# ---------------------------------------------------------------------------------------
# In-place changes (issue 46 item 4): the replay fails exactly as backward() does, or gives
# its gradients. Each graph is built twice, once for backward() and once for the replay.


def leaf(*shape):
    return mg.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape), requires_grad=True)


def outcome(make, run):
    """What run(loss) does on a fresh graph from make(): the error's type and message, or the
    gradient of each leaf."""
    loss, leaves = make()
    try:
        run(loss)
    except Exception as error:  # the error is what is compared
        return type(error), str(error)
    return [None if t.grad is None else t.grad.numpy().tolist() for t in leaves]


def assert_replays_as_backward(make):
    """The replay ends as backward() ends, and its steps are drawn: each input of a visited node
    is the tail of an edge into that node in mg.viz.draw. Returns backward()'s outcome."""
    expected = outcome(make, lambda loss: loss.backward())
    assert outcome(make, mg.viz.replay) == expected
    if isinstance(expected, list):
        loss, _ = make()
        edges = set(re.findall(r"^\t*(\w+) -> (\w+)", mg.viz.draw(loss).source, re.M))
        steps = mg.viz.replay(loss)
        undrawn = [(e.id, s.id) for s in steps for e in s.inputs if (e.id, s.id) not in edges]
        assert undrawn == []
    return expected


def intermediate_changed_after_use():
    x = leaf(3)
    a = x * 2
    b = a * 3  # Mul by a number keeps no copy of a: b's gradient needs none
    a.mul_(2)
    return b.sum(), [x]


def intermediate_changed_after_it_was_saved():
    x = leaf(3)
    a = x * 2
    b = a * a  # keeps a for its backward
    a.mul_(2)
    return b.sum(), [x]


def view_changed_after_use():
    x = leaf(2, 3)
    h = x * 2
    v = h[0]
    c = v * 5
    v.mul_(3)  # changes h too
    return c.sum() + h.sum(), [x]


def test_an_intermediate_changed_after_use_replays_as_backward():
    assert assert_replays_as_backward(intermediate_changed_after_use) == [[6.0, 6.0, 6.0]]


def test_an_intermediate_changed_after_it_was_saved_raises_backwards_error():
    error, message = assert_replays_as_backward(intermediate_changed_after_it_was_saved)
    assert issubclass(error, RuntimeError) and "modified by an in-place operation" in message


def test_a_view_changed_after_use_replays_as_backward():
    # c = 5 h[0] before the change; h's first row tripled after it: d/dx = 2 (5 + 3), 2
    expected = [[[16.0, 16.0, 16.0], [2.0, 2.0, 2.0]]]
    assert assert_replays_as_backward(view_changed_after_use) == expected


def test_a_step_shows_the_value_its_node_used_not_the_tensor_changed_since():
    x = leaf(3)
    a = x * 2
    a.name = "a"
    b = a * 3
    a.mul_(2)  # a now has a node of its own, which b's graph does not reach
    loss = b.sum()
    steps = mg.viz.replay(loss)
    assert [step.op for step in steps] == ["Sum", "Mul", "Mul"]
    used = steps[1].inputs[0]  # what b's Mul was given: a as it was
    assert used.tensor is a and used.name == "a (before an in-place change)"
    assert used.kind == "intermediate" and used.grad.array.tolist() == [3.0, 3.0, 3.0]
    dot = mg.viz.draw(loss, legend=False).source
    labels = dict(re.findall(r'^\t*(\w+) \[label="([^"]*)"', dot, re.M))
    assert labels[used.id] == "a\\n(3,) float64\\nbefore an in-place change"
    edges = set(re.findall(r"^\t*(\w+) -> (\w+)", dot, re.M))
    assert {(steps[2].id, used.id), (used.id, steps[1].id)} <= edges  # x * 2 -> a -> Mul


def _constant_changed_by_a_tensor_with_grad():
    w = leaf(3)
    c = mg.ones(3, dtype=mg.float64)
    d = w * c
    c.add_(w)  # c, a leaf without grad, takes a node
    return d.sum() + c.sum(), [w]


def _split_output_changed():
    x = leaf(4)
    first, second = mg.split(x * 1, 2)
    product = first * second
    first.add_(1)
    return product.sum() + first.sum(), [x]


def _changed_twice():
    x = leaf(3)
    a = x * 2
    b = a + 1
    a.mul_(2)
    c = a + 1
    a.add_(3)
    return (a + b + c).sum(), [x]


def _old_and_new_value_both_used():
    x = leaf(3)
    a = x * 2
    b = a * 3
    a.mul_(2)
    return (a + b).sum(), [x]


def _root_changed_after_its_view_was_used():
    x = leaf(2, 3)
    h = x * 2
    v = h[1]
    c = v.exp()
    h.mul_(2)  # changes v too
    return c.sum() + v.sum(), [x]


def _output_of_exp_changed():
    x = leaf(3)
    h = x.exp()
    c = h.exp()
    h.add_(1)
    return c.sum() + h.sum(), [x]


def _index_written_after_use():
    x, y = leaf(3), leaf(1)
    h = x * 2
    c = h * h
    h[0] = y
    return c.sum() + h.sum(), [x, y]


def _changed_through_a_reshaped_view():
    x = leaf(2, 3)
    h = x * 2
    flat, turned = h.reshape(6), h.t()
    flat.add_(1)
    return (turned * turned).sum(), [x]


IN_PLACE_PATTERNS = [
    intermediate_changed_after_use,
    intermediate_changed_after_it_was_saved,
    view_changed_after_use,
    _old_and_new_value_both_used,
    _changed_twice,
    _split_output_changed,
    _constant_changed_by_a_tensor_with_grad,
    _root_changed_after_its_view_was_used,
    _output_of_exp_changed,
    _index_written_after_use,
    _changed_through_a_reshaped_view,
]


@pytest.mark.parametrize(
    "make", IN_PLACE_PATTERNS, ids=[f.__name__.strip("_") for f in IN_PLACE_PATTERNS]
)
def test_in_place_patterns_replay_as_backward(make):
    assert_replays_as_backward(make)


TARGETS = {  # what is changed in place: h itself or a view of it
    "h": lambda h: h,
    "h[0]": lambda h: h[0],
    "h[:, 1]": lambda h: h[:, 1],
    "h.t()": lambda h: h.t(),
    "h.reshape(6)": lambda h: h.reshape(6),
}
USES = {  # how the target is used before the change
    "not": None,
    "times a number": lambda t: t * 3,
    "squared (kept for backward)": lambda t: t * t,
    "exp (its output kept)": lambda t: t.exp(),
    "summed": lambda t: t.sum(),
}
CHANGES = {  # y: a number that requires grad
    "mul_": lambda t, y: t.mul_(3),
    "add_ y": lambda t, y: t.add_(y),
    "[0] = y": lambda t, y: t.__setitem__(0, y),
    "zero_": lambda t, y: t.zero_(),
    "exp_": lambda t, y: t.exp_(),
}


@given(
    start=st.sampled_from(["x * 2", "x.tanh()", "x.exp()"]),
    target=st.sampled_from(sorted(TARGETS)),
    use=st.sampled_from(sorted(USES)),
    change=st.sampled_from(sorted(CHANGES)),
    terms=st.sets(st.sampled_from(["h", "target", "use"]), min_size=1),
)
@settings(max_examples=40, deadline=None)
def test_in_place_changes_replay_as_backward(start, target, use, change, terms):
    def make():
        x = mg.tensor(np.linspace(-1.0, 1.0, 6).reshape(2, 3), requires_grad=True)
        y = mg.tensor(0.5, requires_grad=True)
        h = {"x * 2": lambda: x * 2, "x.tanh()": x.tanh, "x.exp()": x.exp}[start]()
        changed = TARGETS[target](h)
        used = USES[use](changed) if USES[use] else None
        CHANGES[change](changed, y)
        parts = {"h": h, "target": changed, "use": used}
        loss = sum(parts[term].sum() for term in sorted(terms) if parts[term] is not None)
        return (loss if isinstance(loss, mg.Tensor) else h.sum()), [x, y]

    assert_replays_as_backward(make)
