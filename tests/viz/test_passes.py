"""What the drawing says about each node (minigrad/viz/passes.py, dot.py): tensors named by the
layer that made them (mg.viz.name), gradients shown with their signs on every tensor the walk
reached (checked against PyTorch's .grad, never against mg.viz), the 1/sqrt(d) scale drawn as a
step of its own, Reshape/Permute chains folded into the edges (the folded walk's sums checked
against a plain backward()), and node ids that stay the same with modules collapsed."""

import math
import re

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

torch = pytest.importorskip("torch")

_NODE = re.compile(r'^\t*(\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\]$', re.M)
_EDGE = re.compile(r"^\t*(\w+) -> (\w+)(?: \[(.*)\])?$", re.M)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def nodes(source):
    """node id -> its label's lines (legend nodes left out)."""
    return {
        node: label.split("\\n")
        for node, label, _ in _NODE.findall(source)
        if not node.startswith("legend_")
    }


def edges(source):
    return [(tail, head, style) for tail, head, style in _EDGE.findall(source)]


def by_name(source, name):
    """The one node whose label's first line is `name`: (id, its lines)."""
    (found,) = [(node, lines) for node, lines in nodes(source).items() if lines[0] == name]
    return found


def shown_gradient(lines):
    """The numbers on the lines after "grad" (or on the "grad ..." line of one number)."""
    at = next(i for i, line in enumerate(lines) if line == "grad" or line.startswith("grad "))
    text = " ".join([lines[at][len("grad") :], *lines[at + 1 :]])
    return np.array([float(v) for v in _NUMBER.findall(text)])


def attention_model(num_heads=1, fused=False, seed=0):
    """SelfAttention(4) on 3 tokens, float64, and its squared-error loss: (layer, tokens,
    target); the same numbers go to torch below."""
    rng = np.random.default_rng(seed)
    layer = nn.SelfAttention(4, num_heads=num_heads, fused=fused)
    for parameter in layer.parameters():  # float64, so that torch's numbers match closely
        parameter.data = mg.tensor(rng.normal(size=(4, 4)) * 0.7)
    tokens = mg.tensor(rng.normal(size=(1, 3, 4)), requires_grad=True)
    tokens.name = "tokens"
    target = mg.tensor(rng.normal(size=(1, 3, 4)))
    return layer, tokens, target


def minigrad_loss(layer, tokens, target):
    loss = ((layer(tokens) - target) ** 2).mean()
    loss.name = "loss"
    return loss


def torch_gradients(layer, tokens, target):
    """The textbook's steps in torch, float64: every named tensor's .grad (retain_grad)."""
    weights = {name: torch.tensor(p.numpy()) for name, p in layer.named_parameters()}
    for weight in weights.values():
        weight.requires_grad_(True)
    x = torch.tensor(tokens.numpy(), requires_grad=True)
    q, k, v = (x @ weights[f"{name}_weight"] for name in ("query", "key", "value"))
    scores = q @ k.transpose(1, 2)
    attention = torch.softmax(scores / math.sqrt(4), dim=-1)
    context = attention @ v
    loss = ((context @ weights["output_weight"] - torch.tensor(target.numpy())) ** 2).mean()
    named = {"q": q, "k": k, "v": v, "scores": scores, "weights": attention, "context": context}
    for tensor in named.values():
        tensor.retain_grad()
    loss.backward()
    grads = {name: tensor.grad.numpy() for name, tensor in named.items()}
    grads.update((f"{name}", w.grad.numpy()) for name, w in weights.items())
    grads["tokens"] = x.grad.numpy()
    return grads


# ---------------------------------------------------------------------------------------
# Names


@pytest.mark.parametrize("fused", [False, True])
def test_an_attention_graph_names_q_k_v_scores_and_weights(fused):
    layer, tokens, target = attention_model(fused=fused)
    source = mg.viz.draw(minigrad_loss(layer, tokens, target), params=layer).source
    first_lines = [lines[0] for lines in nodes(source).values()]
    expected = ["q", "k", "v", "context"] + ([] if fused else ["scores", "weights"])
    for name in expected + [f"{n}_weight" for n in ("query", "key", "value", "output")]:
        assert first_lines.count(name) == 1, (name, first_lines)
    # q is x W_Q itself: (1, 3, 4), made by the MatMul with query_weight
    q_id, q_lines = by_name(source, "q")
    assert q_lines[1] == "(1, 3, 4) float64"
    (maker,) = [tail for tail, head, _ in edges(source) if head == q_id]
    weight_id, _ = by_name(source, "query_weight")
    assert (weight_id, maker, "") in edges(source)


def test_name_labels_a_tensor_and_params_still_win():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    assert mg.viz.name(y, "tripled") is y and y.name == "tripled"
    total = y.sum()
    assert by_name(mg.viz.draw(total).source, "tripled")
    assert by_name(mg.viz.draw(total, params={"three x": y}).source, "three x")
    steps = mg.viz.replay(total)
    assert [entry.name for entry in steps[0].inputs] == ["tripled"]
    with pytest.raises(TypeError, match="expected a Tensor; got list"):
        mg.viz.name([1.0], "q")
    with pytest.raises(TypeError, match="the name must be a str; got int 3"):
        mg.viz.name(y, 3)


# ---------------------------------------------------------------------------------------
# Signed gradients


@pytest.mark.parametrize("fold_views", [False, True])
def test_every_tensor_shows_its_gradient_with_its_sign_as_torch_computes_it(fold_views):
    layer, tokens, target = attention_model()
    expected = torch_gradients(layer, tokens, target)
    loss = minigrad_loss(layer, tokens, target)
    steps = mg.viz.replay(loss, params=layer, fold_views=fold_views)
    source = mg.viz.draw(loss, params=layer, show_grad=steps, fold_views=fold_views).source
    negative = 0
    for name, grad in expected.items():
        _, lines = by_name(source, name)
        shown = shown_gradient(lines)
        np.testing.assert_allclose(shown, grad.ravel(), rtol=2e-3, atol=1e-6, err_msg=name)
        negative += int((grad < 0).sum())
    assert negative > 10  # the signs were there to be kept
    _, loss_lines = by_name(source, "loss")
    assert loss_lines[-1] == "grad 1"


def test_show_grad_true_shows_what_backward_kept_and_only_that():
    layer, tokens, target = attention_model()
    expected = torch_gradients(layer, tokens, target)
    loss = minigrad_loss(layer, tokens, target)
    loss.backward()
    source = mg.viz.draw(loss, params=layer, show_grad=True).source
    np.testing.assert_allclose(
        shown_gradient(by_name(source, "query_weight")[1]),
        expected["query_weight"].ravel(),
        rtol=2e-3,
        atol=1e-6,
    )
    assert not any(line.startswith("grad") for line in by_name(source, "scores")[1])
    with pytest.raises(TypeError, match="show_grad takes True, False or a Replay; got str"):
        mg.viz.draw(loss, show_grad="yes")


def test_one_number_shows_its_sign_and_a_large_tensor_its_signed_range():
    a = mg.tensor(0.5, requires_grad=True)
    big = mg.tensor(np.linspace(-1.0, 2.0, 20), requires_grad=True)
    a.name, big.name = "a", "big"
    out = (a.tanh() * -1.0) + (big * big).sum() * 0.0 + (big * a).sum()
    out.backward()
    source = mg.viz.draw(out, show_grad=True).source
    # d/da = -(1 - tanh(a)^2) + sum(big)
    expected = -(1 - np.tanh(0.5) ** 2) + np.linspace(-1.0, 2.0, 20).sum()
    assert by_name(source, "a")[1][-1] == f"grad {expected:.4g}"
    big_grad = a.item() * np.ones(20)  # 0 * (2 big) + a
    assert by_name(source, "big")[1][-1] == (
        f"grad (20,) from {big_grad.min():.4g} to {big_grad.max():.4g}"
    )


# ---------------------------------------------------------------------------------------
# The scale as its own step


def test_the_scale_is_drawn_as_its_own_step_before_the_softmax():
    layer, tokens, target = attention_model()
    loss = minigrad_loss(layer, tokens, target)
    source = mg.viz.draw(loss, params=layer, fold_views=True).source
    labels = nodes(source)
    (softmax,) = [node for node, lines in labels.items() if lines[0] == "Softmax"]
    assert not any(line.startswith("scale=") for line in labels[softmax])
    scale = f"{softmax}_scale"
    assert labels[scale] == ["× 1/√4", "= 0.5"]
    scores, _ = by_name(source, "scores")
    links = {(tail, head) for tail, head, _ in edges(source)}
    assert (scores, scale) in links and (scale, softmax) in links
    assert (scores, softmax) not in links
    # without folding, the scale step takes what the Softmax took: the scores reshaped
    source = mg.viz.draw(loss, params=layer).source
    (reshaped,) = [tail for tail, head, _ in edges(source) if head == scale]
    (maker,) = [tail for tail, head, _ in edges(source) if head == reshaped]
    assert nodes(source)[maker][0] == "Reshape"
    # another scale is said as the number it is; a scale of 1 is no step
    x = mg.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    labels = nodes(mg.viz.draw(mg.masked_softmax(x, scale=0.3).sum()).source)
    assert ["× 0.3"] in labels.values()
    assert not any(n.endswith("_scale") for n in nodes(mg.viz.draw(mg.softmax(x, 1).sum()).source))


# ---------------------------------------------------------------------------------------
# Folding Reshape/Permute chains


def test_fold_views_draws_the_reshapes_and_permutes_into_the_edges():
    layer, tokens, target = attention_model(num_heads=2)
    loss = minigrad_loss(layer, tokens, target)
    full = mg.viz.draw(loss, params=layer).source
    folded = mg.viz.draw(loss, params=layer, fold_views=True).source
    ops = lambda source: [lines[0] for lines in nodes(source).values()]  # noqa: E731
    assert ops(full).count("Reshape") > 0 and ops(full).count("Permute") > 0
    assert "Reshape" not in ops(folded) and "Permute" not in ops(folded)
    q, _ = by_name(folded, "q")
    chains = [style for tail, _, style in edges(folded) if tail == q]
    assert len(chains) == 1 and 'label="Reshape · Permute · Reshape"' in chains[0]
    # every node still drawn keeps its id: the folded drawing's ids are the full one's
    full_nodes, folded_nodes = nodes(full), nodes(folded)
    assert all(full_nodes[node] == lines for node, lines in folded_nodes.items())


@pytest.mark.parametrize("num_heads", [1, 2])
def test_the_folded_walk_sums_to_grad_and_sends_each_chain_its_gradient(num_heads):
    layer, tokens, target = attention_model(num_heads=num_heads)
    steps = mg.viz.replay(minigrad_loss(layer, tokens, target), params=layer)
    fresh, fresh_tokens, _ = attention_model(num_heads=num_heads)
    loss = minigrad_loss(fresh, fresh_tokens, target)
    folded = mg.viz.replay(loss, params=fresh, fold_views=True)
    full_ops = [step.op for step in steps]
    assert [step.op for step in folded] == [
        op for op in full_ops if op not in ("Reshape", "Permute")
    ]
    if num_heads == 1:  # 14 of the 24 steps only move numbers around
        assert (len(steps), len(folded)) == (24, 10)
    assert [step.index for step in folded] == list(range(len(folded)))
    # the sums the walk shows end at what backward() put in .grad (an identical model)
    plain, plain_tokens, _ = attention_model(num_heads=num_heads)
    minigrad_loss(plain, plain_tokens, target).backward()
    totals = folded.totals()
    for name, parameter in plain.named_parameters():
        np.testing.assert_array_equal(totals[getattr(fresh, name)].array, parameter.grad.numpy())
    np.testing.assert_array_equal(totals[fresh_tokens].array, plain_tokens.grad.numpy())
    # each input of a step is a node drawn with an edge into the step's node
    source = mg.viz.draw(loss, params=fresh, fold_views=True).source
    links = {(tail, head) for tail, head, _ in edges(source)}
    for step in folded:
        head = step.scale_id or step.id
        for entry in step.inputs:
            assert entry.id in nodes(source) and (entry.id, head) in links, (step, entry.name)
    # q's gradient arrives whole, in q's own shape, at the MatMul that used its chain
    expected = torch_gradients(plain, plain_tokens, target) if num_heads == 1 else None
    if expected is not None:
        (q_entry,) = [e for step in folded for e in step.inputs if e.name == "q"]
        assert q_entry.grad.shape == (1, 3, 4)
        np.testing.assert_allclose(q_entry.total.array, expected["q"], rtol=1e-10)


# ---------------------------------------------------------------------------------------
# Ids with modules collapsed


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.SelfAttention(4, fused=False)
        self.pool = nn.MeanPooling()
        self.classifier = nn.Linear(4, 2)

    def forward(self, x):
        return self.classifier(self.pool(self.attention(x)))


@pytest.mark.parametrize("collapse", ["attention", "pool", ["attention", "classifier"]])
def test_a_collapsed_walk_keeps_ids_valid_and_sums_to_grad(collapse):
    def make():
        mg.manual_seed(3)
        model = Classifier()
        x = mg.randn(1, 3, 4)
        return model, mg.cross_entropy(model(x), mg.tensor(np.array([1])))

    model, loss = make()
    full_ids = mg.viz.vertex_ids(loss)
    steps = mg.viz.replay(loss, params=model, collapse=collapse)
    source = mg.viz.draw(loss, params=model, collapse=collapse).source
    drawn = nodes(source)
    boxes = {node for node in drawn if node.startswith("m")}
    assert boxes
    for step in steps:
        assert step.id in drawn, step
        if step.id not in boxes:
            assert step.id == full_ids[step.node]
        for entry in step.inputs:
            assert entry.id is None or entry.id in drawn
    # the ops of a collapsed call all show as its box
    names = [collapse] if isinstance(collapse, str) else collapse
    for step in steps:
        if step.module.split(".")[0] in names:
            assert step.id in boxes
    plain, plain_loss = make()
    plain_loss.backward()
    totals, parameters = steps.totals(), dict(model.named_parameters())
    for name, parameter in plain.named_parameters():
        np.testing.assert_array_equal(totals[parameters[name]].array, parameter.grad.numpy())
    # the frames light the boxes
    frames = steps.frames(legend=False)
    assert f'\t{steps[-1].id} [fillcolor="#f6b26b"' in frames[-1].source
