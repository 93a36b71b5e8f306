"""Function: an op, and the graph node of each time it is applied.

An op is a Function with static `forward(ctx, *arrays)` and `backward(ctx, *grads)` side by
side, on numpy arrays (ops/unary.py writes out Exp and Tanh). `Function.apply` wraps forward's
arrays in Tensors and, when a graph is recorded, makes the Function instance the graph node of
this application; the node is also the `ctx` forward and backward share (as in PyTorch). It
points back at the nodes that made its inputs (`input_edges`): those edges are the graph that
the walk (walk.py, the file to read next) follows backwards.

Three features sit beside this file, each in a file of its own that a first reading may skip:
views.py (which tensors view which), versions.py (a backward refuses arrays changed in place
since forward) and inference.py (what inference_mode forbids).
"""

import numpy as np

from .. import dtypes
from . import grad_mode, hooks, inference, versions, views
from .tensor import Tensor


class Function:
    """Base class of differentiable ops, and the graph node of each application.

    Subclasses define `forward(ctx, *arrays, **attrs)` and `backward(ctx, *grads)` as static
    methods. forward may return one array or a tuple (a multi-output op); backward gets one
    gradient per output (zeros for an output that did not reach the loss) and returns one per
    input (None where not needed; `ctx.needs_input_grad` says which are). Keyword attributes
    are passed to forward only: keep what backward needs on ctx.

    A recorded node holds `inputs` (tensors), `input_edges` ((node, output index) that made
    each input), `output_meta` ((shape, dtype) per output), `module_frame` (the nn.Module call
    that made it: (module, outer frame)) and `attrs` (its scalar settings); mg.viz draws the last
    two. After backward without retain_graph, its saved arrays are freed.
    """

    @staticmethod
    def forward(ctx, *arrays, **attrs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError

    def save_for_backward(self, *arrays):
        self.saved = arrays

    @property
    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name}Backward>"

    @classmethod
    def apply(cls, *inputs, **attrs):
        watchers = hooks.active()  # () unless detect_anomaly or a teaching swap is on (hooks.py)
        if watchers:
            cls = hooks.replaced(cls, watchers)
        tensors = tuple(x if isinstance(x, Tensor) else _as_constant(x, inputs) for x in inputs)
        ctx = cls.__new__(cls)
        ctx.needs_input_grad = tuple(t.requires_grad for t in tensors)
        ctx.saved = ()
        # False: no node will be made, so forward may skip what only a backward needs
        ctx.recording = grad_mode.is_recording() and any(ctx.needs_input_grad)
        outputs = cls.forward(ctx, *[t._data for t in tensors], **attrs)
        multiple = isinstance(outputs, tuple)
        results = tuple(Tensor._wrap(np.asarray(o)) for o in (outputs if multiple else (outputs,)))
        views.note_views(results, tensors)
        inference.mark_views(results)
        if ctx.recording:
            ctx._record(tensors, results, attrs)
        if watchers:
            hooks.after_forward(watchers, ctx, tensors, results)
        return results if multiple else results[0]

    def _record(self, tensors, results, attrs):
        """Make this node the one that made `results`: the graph's edges back, for the walk."""
        inference.refuse_saved(self, tensors)
        self.inputs = tensors
        # Which node made each input, as it was now. A later in-place change of an input
        # (x.add_(...)) gives that tensor a new node; this graph keeps the old one.
        self.input_edges = tuple((t._node, t._output_index) for t in tensors)
        self.output_meta = [(o.shape, o.dtype) for o in results]
        # which saved arrays are outputs, for create_graph=True (higher_order.py)
        self._output_ids = tuple(id(o._data) for o in results)
        self.module_frame = grad_mode.module_frame()
        self.attrs = _scalar_attributes(attrs) if attrs else {}
        for index, out in enumerate(results):
            if out.dtype.kind == "f":
                out._requires_grad = True
                out._node = self
                out._output_index = index
        self._versions = versions.record(self, tensors, results)

    def run_backward(self, out_grads, retain_graph):
        """Gradients for the inputs, given one per output (called by the backward walk)."""
        if self.saved is None:
            raise RuntimeError(
                f"Trying to backward through the graph a second time (through {self.name}): "
                "its saved arrays were freed after the first backward. "
                "Pass retain_graph=True to the first backward() if you need to call it twice."
            )
        versions.check(self)
        grads = type(self).backward(self, *out_grads)
        grads = grads if isinstance(grads, tuple) else (grads,)
        watchers = hooks.active()
        if watchers:
            hooks.after_backward(watchers, self, out_grads, grads)
        if not retain_graph:
            self._free()
        return grads

    def _free(self):
        """Drop saved arrays and forward's notes; the structure stays for drawing."""
        kept = ("inputs", "input_edges", "needs_input_grad", "output_meta", "module_frame", "attrs")
        kept = {key: self.__dict__[key] for key in kept}
        self.__dict__.clear()
        self.__dict__.update(kept)
        self.saved, self._versions = None, ()


def _as_constant(value, inputs):
    """Wrap a non-tensor operand of an op. A number takes the dtype of the tensor it meets when
    that is a float tensor or the number is an int (so `x * 2` stays float32), as in PyTorch."""
    number = isinstance(value, (int, float, np.integer, np.floating))
    if number and not isinstance(value, (bool, np.bool_)):
        partner = next((t.dtype for t in inputs if isinstance(t, Tensor)), None)
        if partner is not None and (partner.kind == "f" or isinstance(value, (int, np.integer))):
            return Tensor._wrap(np.asarray(value, dtype=partner))
    return Tensor._wrap(dtypes.to_array(value))


def _scalar_attributes(attrs):
    """The settings of an op worth showing in a drawing (dim=1, scale=0.25): no arrays, which
    would keep masks and index arrays alive for as long as the graph is drawn."""
    plain = (bool, int, float, str, slice, type(None), type(Ellipsis), np.generic)

    def small(value):
        if isinstance(value, tuple):
            return all(small(v) for v in value)
        return isinstance(value, plain)

    return {key: value for key, value in attrs.items() if small(value)}
