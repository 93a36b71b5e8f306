"""The backward walk, step by step: `mg.viz.replay(loss)` runs the real `loss.backward()` and
notes what the walk does at each node it visits, in the order it visits them.

    steps = mg.viz.replay(loss, params=model)   # .grad is filled exactly as loss.backward() does
    print(steps)                                # one block per node: gradient in, gradients out
    steps[0].op, steps[0].arriving[0].norm      # the first node visited: the op that made loss
    steps.to_dicts()                            # plain lists and numbers, ready for json.dumps
    steps.frames()                              # one mg.viz.draw picture per step

Nothing here computes a gradient. The engine's walk hands every gradient to a sink
(engine/grad_sinks.py); the replay's sink is `AccumulateGrads`, the one backward() uses, wrapped
by a `_Recorder` that calls through to it and writes down each event: `before_node` (a node is
about to run its backward, given the gradient of each of its outputs), then `at_leaf` /
`at_intermediate` (the gradient that node's backward gave one of its inputs, broadcasting
undone). The order of the steps is therefore the order in which the nodes' backward functions
run.

Each Step also keeps, for every input, the running sum of what that tensor has received so far
in this walk: a tensor used twice (x * x, or a weight shared by two layers) gets a gradient from
each use, and the sums show them adding up. For a leaf the last sum is what this backward added
to `.grad` (before any hooks on it); for an intermediate tensor it is the gradient that arrives
when the node that made it is visited. Every gradient is kept as a copy: meant for the graphs
one draws and reads, not for a model of millions of numbers.

A tensor changed in place after a node used it keeps, in that node's step, the id of the value
the node used (the drawing's vertex for it), as the walk follows the node's input_edges; and
where that node needs the old array, the walk raises backward()'s own error.
"""

import numpy as np

from ..engine import Function, Tensor, grad_sinks, walk
from . import drawing, passes
from .dot import VALUES_MAX_ELEMENTS, _quote, gradient_text

__all__ = ["replay", "Replay", "Step", "Gradient", "InputGradient"]


class Gradient:
    """One gradient array as a step shows it: `array` (a copy), `shape`, `norm` (L2, in
    float64) and `values` (the array as nested lists when it has at most `VALUES_MAX_ELEMENTS`
    entries, else None)."""

    def __init__(self, array):
        self.array = np.array(array, copy=True)
        self.shape = tuple(self.array.shape)
        self.norm = float(np.linalg.norm(self.array.astype(np.float64).ravel()))

    @property
    def values(self):
        return self.array.tolist() if self.array.size <= VALUES_MAX_ELEMENTS else None

    def to_dict(self, max_values=VALUES_MAX_ELEMENTS):
        values = _plain(self.array) if self.array.size <= max_values else None
        return {"shape": list(self.shape), "norm": _plain(self.norm), "values": values}

    def __repr__(self):
        return f"Gradient(shape={self.shape}, norm={self.norm:.4g})"


class InputGradient:
    """What one input of a visited node receives: `position` among the node's inputs, the
    `tensor`, its `name`, `id` (as mg.viz.draw numbers it) and `kind` (input, parameter,
    intermediate: draw's colours), `grad` (a Gradient, or None when no gradient goes back to
    it: it needs none), `total` (the running sum of its gradients in this walk, a Gradient)
    and `uses` (how many gradients it has received so far, this one included)."""

    def __init__(self, position, tensor, name, vertex_id, kind, vertex=None):
        self.position, self.tensor, self.name = position, tensor, name
        self.id, self.kind = vertex_id, kind
        self.vertex = tensor if vertex is None else vertex  # the trace's vertex of what was used
        self.grad = self.total = None
        self.uses = 0

    def to_dict(self, max_values=VALUES_MAX_ELEMENTS):
        return {
            "position": self.position,
            "name": self.name,
            "id": self.id,
            "kind": self.kind,
            "shape": list(self.tensor.shape),
            "grad": None if self.grad is None else self.grad.to_dict(max_values),
            "total": None if self.total is None else self.total.to_dict(max_values),
            "uses": self.uses,
        }


class Step:
    """One node visited by the walk: `index` (0 first), the `node` (the op's Function), `op`
    (its name, e.g. "MatMul"), `id` (draw's node id, e.g. "op7"), `module` (the dotted name of
    the module call that made it, "" outside every module), `arriving` (a Gradient per output
    of the node: what its backward is given), `inputs` (an InputGradient per input) and
    `scale_id` (the id of the scale step drawn before a Softmax, "op7_scale", else None: the
    node's backward is that step's too). With collapse, `id` is that of the box drawn in the
    node's place."""

    def __init__(self, index, node, vertex_id, module, arriving, inputs, scale_id=None):
        self.index, self.node, self.op, self.id = index, node, node.name, vertex_id
        self.module, self.arriving, self.inputs = module, arriving, inputs
        self.scale_id = scale_id

    def to_dict(self, max_values=VALUES_MAX_ELEMENTS):
        return {
            "index": self.index,
            "op": self.op,
            "id": self.id,
            "module": self.module,
            "scale_id": self.scale_id,
            "arriving": [g.to_dict(max_values) for g in self.arriving],
            "inputs": [entry.to_dict(max_values) for entry in self.inputs],
        }

    def __repr__(self):
        return f"<Step {self.index}: {self.op} ({self.id})>"


class Replay(list):
    """The steps of one backward walk (a list of Step, in the order the nodes were visited).

    `ids` maps every tensor and op of the graph (and every EarlierValue of its trace) to the
    id of the node that shows it in mg.viz.draw(output, highlight=, collapse=, fold_views=) with
    the replay's settings (for what a collapsed call hides, the box's; for a folded tensor, the
    id of its chain's first input); `totals()` gives what each leaf received in all, and
    `gradients()` what every tensor did.
    """

    def __init__(self, steps, output, names, highlight, ids, options):
        super().__init__(steps)
        self.output, self.names, self.highlight, self.ids = output, names, highlight, ids
        self.options = options  # collapse and fold_views, for frames()

    def totals(self):
        """{leaf tensor: Gradient}: the sum of the gradients each leaf received in this walk
        (what backward() added to its `.grad`, hooks aside), in the order they were reached."""
        sums = {}
        for step in self:
            for entry in step.inputs:
                if entry.grad is not None and entry.tensor.grad_fn is None:
                    sums[entry.tensor] = entry.total
        return sums

    def gradients(self):
        """{tensor: Gradient}: the whole gradient of the output with respect to every tensor the
        walk reached, intermediate ones included (the sum over all its uses), and the output's
        own; what mg.viz.draw(output, show_grad=replay) labels them with."""
        sums = {}
        if self:
            first = self[0]
            sums[self.output] = first.arriving[self.output._output_index]
        for step in self:
            for entry in step.inputs:
                if entry.grad is not None:
                    sums[entry.tensor] = entry.total
        return sums

    def to_dicts(self, max_values=VALUES_MAX_ELEMENTS):
        """The steps as plain dicts, lists, strings and numbers (NaN and infinities as None):
        `json.dumps(replay.to_dicts())` works. Gradients with at most max_values entries carry
        their values."""
        return [step.to_dict(max_values) for step in self]

    def frames(self, **draw_options):
        """One graphviz.Digraph per step: mg.viz.draw(output, params=..., highlight=...,
        collapse=..., fold_views=..., **draw_options) with the node being visited filled
        orange, the inputs it sends a gradient to outlined orange and labelled with that
        gradient (signed), and the nodes already visited filled pale orange. In a notebook each
        frame displays itself; mg.viz.render(frame, path) writes one."""
        own = ("collapse", "fold_views", "highlight", "params")
        if any(key in draw_options for key in own):
            raise TypeError(
                "frames: collapse, fold_views, highlight and params are the replay's own "
                "(the frames' node ids are those of replay(..., params=, highlight=, ...)); "
                f"got {sorted(k for k in draw_options if k in own)}"
            )
        params = [(name, tensor) for tensor, name in self.names.items()]
        base = drawing.draw(
            self.output, params=params, highlight=self.highlight, **self.options, **draw_options
        )
        frames = []
        for step in self:
            frame = base.copy()
            for done in self[: step.index]:
                frame.body += [f"\t{i} [{_attributes(VISITED)}]\n" for i in _shown(done)]
            frame.body += [f"\t{i} [{_attributes(CURRENT)}]\n" for i in _shown(step)]
            for entry in step.inputs:
                if entry.grad is not None and entry.id is not None and entry.id != step.id:
                    text = gradient_text(entry.grad.array, one_line=True)
                    received = {**RECEIVING, "xlabel": text}
                    frame.body.append(f"\t{entry.id} [{_attributes(received)}]\n")
            frames.append(frame)
        return frames

    def __str__(self):
        """A text table: per step, the node, the gradient arriving, each input's gradient."""
        lines = []
        for step in self:
            module = f" in {step.module}" if step.module else ""
            lines.append(f"step {step.index + 1:>3}  {step.op} ({step.id}){module}")
            for output, g in enumerate(step.arriving):
                which = f" output {output}" if len(step.arriving) > 1 else ""
                lines.append(f"          gradient in{which}: {_describe(g)}")
            for entry in step.inputs:
                target = f"-> {entry.name} ({entry.id})"
                if entry.grad is None:
                    lines.append(f"          {target}: no gradient (needs none)")
                    continue
                lines.append(f"          {target}: {_describe(entry.grad)}")
                if entry.uses > 1:
                    lines.append(
                        f"          {' ' * len(target)}  sum of {entry.uses} so far: "
                        f"{_describe(entry.total)}"
                    )
        return "\n".join(lines) if lines else "(no node visited: the output is a leaf)"


CURRENT = {"fillcolor": "#f6b26b", "color": "#b45f06", "penwidth": "3"}
RECEIVING = {"color": "#e69138", "penwidth": "3", "fontcolor": "#b45f06"}
VISITED = {"fillcolor": "#fce5cd"}


def _attributes(attributes):
    return " ".join(f"{key}={_quote(value)}" for key, value in attributes.items())


def _shown(step):
    """The ids of the nodes drawing a step: its op (or box), and the scale step before it."""
    return [step.id] + ([step.scale_id] if step.scale_id else [])


def _describe(gradient):
    text = f"shape {tuple(gradient.shape)} norm {gradient.norm:.4g}"
    if gradient.values is not None:
        values = np.array2string(
            gradient.array,
            separator=" ",
            max_line_width=10**6,
            formatter={"float_kind": lambda value: f"{value:.4g}"},
        )
        text += f" values {' '.join(values.split())}"
    return text


def _plain(value):
    """A number or array as JSON-ready floats and lists; NaN and infinities become None."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        number = float(array)
        return number if np.isfinite(number) else None
    listed = array.tolist()
    return listed if np.isfinite(array).all() else _nan_to_none(listed)


def _nan_to_none(values):
    if isinstance(values, list):
        return [_nan_to_none(v) for v in values]
    return values if np.isfinite(values) else None


class _Recorder:
    """A sink that passes every event on to `inner` (an AccumulateGrads) and notes it."""

    def __init__(self, inner, describe):
        self.inner, self.describe = inner, describe
        self.steps, self.totals = [], {}  # id(tensor) -> (tensor, running sum, uses)
        self.next_position = 0  # the walk reports a node's inputs in order, skipping some

    def before_node(self, node, grads):
        grads = self.inner.before_node(node, grads)  # after hooks: what the node's backward gets
        self.steps.append(self.describe(len(self.steps), node, [Gradient(g) for g in grads]))
        self.next_position = 0
        return grads

    def _received(self, tensor, grad):
        step = self.steps[-1]
        position = next(
            p
            for p in range(self.next_position, len(step.node.inputs))
            if step.node.inputs[p] is tensor
        )
        self.next_position = position + 1
        _, total, uses = self.totals.get(id(tensor), (tensor, None, 0))
        total = np.array(grad, copy=True) if total is None else total + grad
        self.totals[id(tensor)] = (tensor, total, uses + 1)
        entry = step.inputs[position]
        entry.grad, entry.total, entry.uses = Gradient(grad), Gradient(total), uses + 1

    def at_leaf(self, leaf, grad):
        self._received(leaf, grad)
        self.inner.at_leaf(leaf, grad)

    def at_intermediate(self, tensor, node, grad):
        self._received(tensor, grad)
        self.inner.at_intermediate(tensor, node, grad)

    def finish(self):
        return self.inner.finish()


def replay(
    output,
    grad=None,
    retain_graph=False,
    params=None,
    highlight=None,
    collapse=None,
    fold_views=False,
):
    """Run output.backward(grad, retain_graph) and return its walk as a Replay (a list of Step).

    Every `.grad` is filled exactly as output.backward() fills it, and the same inputs raise the
    same errors (an output that does not require grad, a non-scalar output without grad, a
    graph already freed by an earlier backward).

    Args:
        output: the Tensor to differentiate (a loss).
        grad: the gradient of output, as for backward(); may be None when output is one number.
        retain_graph: keep the graph's saved arrays for another backward.
        params: names for tensors, as for mg.viz.draw: a dict name -> tensor, (name, tensor)
            pairs or an nn.Module.
        highlight, collapse, fold_views: the drawing the steps' ids belong to, as for draw:
            the ids are those of mg.viz.draw(output, highlight=, collapse=, fold_views=),
            whatever params says. An op inside a collapsed call has the id of its box. With
            fold_views the folded ops (Reshape, Permute) are no steps of their own: the op
            using a chain's output sends its gradient, through the chain, to the chain's
            first input, and the running sums add up in that order.

    Example::

        steps = mg.viz.replay(loss, params=model)
        print(steps)
        for step in steps:
            print(step.op, step.id, [entry.uses for entry in step.inputs])
    """
    if not isinstance(output, Tensor):
        raise TypeError(f"replay: output must be a Tensor; got {type(output).__name__}")
    names = drawing.tensor_names(params)
    highlight = drawing.check_highlight(highlight)
    collapse = drawing.collapse_names(collapse)
    layout = drawing.lay_out([output], names, highlight, collapse, bool(fold_views))
    drawn_inputs = {}  # node -> the vertex of each input in the trace: what the node used
    for tail, head in layout.traced_edges:
        if isinstance(head, Function):
            drawn_inputs.setdefault(head, []).append(tail)

    def input_name(vertex):
        earlier = isinstance(vertex, passes.EarlierValue)
        tensor = vertex.tensor if earlier else vertex
        name = passes.name_of(tensor, names)
        if name:
            return f"{name} (before an in-place change)" if earlier else str(name)
        maker = vertex.grad_fn
        if maker is not None:
            index = vertex.index if earlier else tensor._output_index
            which = f" {index}" if len(maker.output_meta) > 1 else ""
            return f"output{which} of {maker.name}"
        return "a number" if tensor._data.size <= 1 else "an input"

    def entry(position, tensor, vertex):
        kind = passes.kind_of(vertex, {output}, names)
        shown = layout.shown_id(vertex)
        return InputGradient(position, tensor, input_name(vertex), shown, kind, vertex)

    def describe(index, node, arriving):
        clusters = passes.module_calls(node.module_frame, layout.known_calls)[1]
        module = clusters[-1][0] if clusters else ""
        used = drawn_inputs.get(node, ())  # a node without inputs has no edge into it
        inputs = [entry(p, t, v) for p, (t, v) in enumerate(zip(node.inputs, used))]
        scale = layout.scales.get(node)
        scale_id = layout.ids[scale] if scale is not None and node not in layout.boxes else None
        vertex_id = layout.shown_id(node)
        return Step(index, node, vertex_id, module, arriving, inputs, scale_id)

    recorder = _Recorder(grad_sinks.AccumulateGrads(), describe)
    walk.backward_from(output, output._start_gradient(grad, "backward()"), retain_graph, recorder)
    steps = recorder.steps
    if layout.folded:
        steps = _fold(steps, layout, entry)
    ids = {vertex: layout.shown_id(vertex) for vertex in layout.ids}
    options = {"collapse": sorted(collapse) or None, "fold_views": bool(fold_views)}
    return Replay(steps, output, names, highlight, ids, options)


def _fold(steps, layout, entry):
    """The steps without those of folded ops: the gradient a folded chain passes to its first
    input is given to the entry of the op that used the chain's output; then every running
    sum and count of uses is counted again, in the order of the steps left."""
    pending, kept = {}, []  # folded output -> the entry waiting for its chain's gradient
    for step in steps:
        if step.node in layout.folded:
            waiting = pending.pop(layout.folded[step.node], None)
            (source,) = step.inputs
            if waiting is None:
                continue
            if source.vertex in layout.folded_outputs:
                pending[source.vertex] = waiting
            else:
                rooted = entry(waiting.position, source.tensor, source.vertex)
                waiting.tensor, waiting.vertex = rooted.tensor, rooted.vertex
                waiting.name, waiting.id, waiting.kind = rooted.name, rooted.id, rooted.kind
                waiting.grad = source.grad
            continue
        for item in step.inputs:
            if item.vertex in layout.folded_outputs:
                pending[item.vertex] = item
        kept.append(step)
    sums = {}
    for index, step in enumerate(kept):
        step.index = index
        for item in step.inputs:
            if item.grad is not None:
                total, uses = sums.get(item.vertex, (None, 0))
                array = item.grad.array if total is None else total + item.grad.array
                sums[item.vertex] = (array, uses + 1)
                item.total, item.uses = Gradient(array), uses + 1
    return kept
