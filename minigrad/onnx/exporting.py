"""export(): run the model once on `args`, recording its graph, then write that graph as ONNX.

Two records are made in that run. The engine's own graph (each node a Function with its
inputs, engine/function.py): every float input is made to require grad, so every op that a
float flows through is recorded. And the calls of the layers that layers.py and recurrent.py
convert whole (Embedding, LSTM, SelfAttention, the poolings ...), kept by forward hooks: their
outputs stand for the nodes inside them. The walk goes back from the outputs (as
engine/walk.py's graph_nodes does), stopping at those calls' outputs and at leaves (the inputs,
and parameters, buffers and constants, which become initializers). Every op is converted in
memory; the file is written, atomically, only when all of them were.
"""

import contextlib
import inspect
import os
import tempfile
import threading
import warnings

import numpy as np

from ..engine import Tensor, grad_mode
from .graph import Graph, UnsupportedOperatorError, static
from .layers import LAYERS
from .ops import CONVERTERS
from . import recurrent  # noqa: F401  (registers LSTM, GRU, RNN in LAYERS)

OPSETS = range(17, 22)
_state = threading.local()


def is_exporting():
    """True while export() runs the model (nn.lstm_embedded then takes the plain composition)."""
    return getattr(_state, "exporting", False)


def flatten(value):
    """The tensors of a (nested) tuple, list or dict output, in order."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in flatten(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in flatten(item)]
    return []


def _key(tensor):
    if tensor._node is not None:
        return (id(tensor._node), tensor._output_index)
    return ("leaf", id(tensor))


class _Call:
    def __init__(self, module, path, args, kwargs):
        self.module, self.path, self.args, self.kwargs = module, path, args, kwargs
        self.outputs = []

    def inputs(self):
        return flatten(list(self.args)) + flatten(dict(self.kwargs))


@contextlib.contextmanager
def _layer_calls(model, calls):
    """Record the calls of the layers converted whole (not those inside one of them)."""
    names = {id(module): path for path, module in model.named_modules()}
    active, handles = [], []

    def before(module, args, kwargs):
        inside = any(call is not None for call in active)
        converted = type(module).__name__ in LAYERS and not inside
        active.append(
            _Call(module, names.get(id(module), "?"), args, kwargs) if converted else None
        )

    def after(module, args, kwargs, output):
        call = active.pop()
        if call is not None:
            call.outputs = flatten(output)
            calls.append(call)

    for _, module in model.named_modules():
        handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
        handles.append(module.register_forward_hook(after, with_kwargs=True))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def trace(model, args):
    """Run model(*args) with every float input requiring grad -> (inputs, outputs, calls)."""
    inputs = []
    for arg in args:
        array = np.array(arg._data, copy=True)
        inputs.append(Tensor(array, requires_grad=array.dtype.kind == "f"))
    calls = []
    was_training = model.training
    model.eval()  # torch.onnx.export's default: training=TrainingMode.EVAL
    _state.exporting = True
    try:
        with grad_mode.enable_grad(), _layer_calls(model, calls):
            output = model(*inputs)
    finally:
        _state.exporting = False
        model.train(was_training)
    return inputs, output, calls


class _Builder:
    """Walks back from the outputs and converts what it meets."""

    def __init__(self, graph, model, inputs, input_names, calls):
        self.graph, self.names = graph, {}
        self.module_paths = {id(m): path for path, m in model.named_modules()}
        self.input_arrays = [t._data for t in inputs]
        self.state = {id(t) for t in model.parameters()} | {id(t) for t in model.buffers()}
        self.dynamic_sizes = {size for size in graph.atom_sizes.values() if size > 1}
        for tensor, name in zip(inputs, input_names):
            self.names[_key(tensor)] = name
        self.call_of = {}
        for call in calls:
            own = {_key(t) for t in call.inputs()}
            for index, tensor in enumerate(call.outputs):
                if _key(tensor) not in own:
                    self.call_of[_key(tensor)] = (call, index)

    def producer(self, tensor):
        """('call', call) | ('node', node) | ('leaf', None) for a tensor not yet named."""
        key = _key(tensor)
        if key in self.call_of:
            return "call", self.call_of[key][0]
        if tensor._node is not None:
            return "node", tensor._node
        return "leaf", None

    def dependencies(self, kind, maker):
        if kind == "call":
            return maker.inputs()
        if kind == "node":
            return list(maker.inputs)
        return []

    def value(self, tensor):
        """The ONNX name of `tensor`, converting what made it first (iteratively)."""
        if _key(tensor) in self.names:
            return self.names[_key(tensor)]
        stack = [(tensor, False)]
        while stack:
            current, ready = stack.pop()
            if _key(current) in self.names:
                continue
            kind, maker = self.producer(current)
            if not ready:
                stack.append((current, True))
                for dependency in self.dependencies(kind, maker):
                    if _key(dependency) not in self.names:
                        stack.append((dependency, False))
                continue
            self.convert(current, kind, maker)
        return self.names[_key(tensor)]

    def convert(self, tensor, kind, maker):
        g = self.graph
        if kind == "leaf":
            array = tensor._data
            if any(np.shares_memory(array, a) for a in self.input_arrays):
                raise UnsupportedOperatorError(
                    "a tensor computed from an input outside the recorded ops (an op on an "
                    "integer input that minigrad does not record); it would be written as a "
                    f"constant of shape {array.shape}"
                )
            if id(tensor) not in self.state and self.dynamic_sizes & set(array.shape):
                warnings.warn(
                    f"minigrad.onnx.export: a tensor of shape {array.shape} made during the run "
                    "(not a parameter, buffer or input) is written as a constant; if its shape "
                    "follows a dynamic axis, the exported model will not (docs/onnx.md)",
                    stacklevel=2,
                )
            self.names[_key(tensor)] = g.constant(np.ascontiguousarray(array), "weight")
            return
        if kind == "call":
            where = f"layer {maker.path!r} ({type(maker.module).__name__})"
            try:
                results = LAYERS[type(maker.module).__name__](g, maker, self.value)
            except NotImplementedError as error:
                raise UnsupportedOperatorError(f"cannot export {error}, in {where}") from None
            for out, name in zip(maker.outputs, results):
                self.names.setdefault(_key(out), name)
            return
        where = self.layer_of(maker)
        converter = CONVERTERS.get(maker.name)
        if converter is None:
            raise UnsupportedOperatorError(
                f"cannot export the op {maker.name} (in {where}): minigrad.onnx has no "
                "converter for it"
            )
        ins = [self.names[_key(t)] for t in maker.inputs]
        try:
            results = converter(g, maker, ins)
        except NotImplementedError as error:
            raise UnsupportedOperatorError(
                f"cannot export the op {maker.name} (in {where}): {error}"
            ) from None
        for index, name in enumerate(results):
            self.names[(id(maker), index)] = name

    def layer_of(self, node):
        frame = node.module_frame
        if frame is None:
            return "no layer: a function called outside the model's modules"
        module = frame[0]
        path = self.module_paths.get(id(module))
        return f"layer {path or 'the model itself'!r} ({type(module).__name__})"


def _axes(dynamic_axes, name, rank, what):
    """{axis: dim name} declared dynamic for the value `name`."""
    axes = dynamic_axes.get(name, {})
    if isinstance(axes, (list, tuple)):
        # torch's names: counted along the list
        axes = {axis: f"{name}_dynamic_axes_{i + 1}" for i, axis in enumerate(axes)}
    if not isinstance(axes, dict):
        raise TypeError(
            f"export: dynamic_axes[{name!r}] must be a list of axes or a dict axis -> name; "
            f"got {type(axes).__name__}"
        )
    for axis in axes:
        if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
            raise ValueError(
                f"export: dynamic_axes[{name!r}] names axis {axis!r}, but {what} {name!r} has "
                f"{rank} axes"
            )
    return {axis % rank: str(label) for axis, label in axes.items()}


def _value_info(onnx, name, tensor, axes):
    dtype = onnx.helper.np_dtype_to_tensor_dtype(tensor.dtype)
    shape = [axes.get(axis, size) for axis, size in enumerate(tensor.shape)]
    return onnx.helper.make_tensor_value_info(name, dtype, shape)


def build(onnx, model, args, input_names, output_names, dynamic_axes, opset):
    """The ONNX ModelProto of model(*args); raises UnsupportedOperatorError before any write."""
    floats = [(f"parameter {n}", p) for n, p in model.named_parameters()]
    floats += [(f"input {name}", t) for name, t in zip(input_names, args)]
    wide = [(what, t.dtype) for what, t in floats if t.dtype.kind == "f" and t.dtype != np.float32]
    if wide:
        raise UnsupportedOperatorError(
            f"export writes float32 models (onnxruntime's CPU kernels); got {wide[0][0]} in "
            f"{wide[0][1]}: call model.float() and pass float32 inputs"
        )
    inputs, output, calls = trace(model, args)
    outputs = flatten(output)
    if not outputs:
        raise TypeError(f"export: the model returned no tensor; got {type(output).__name__}")
    output_names = list(output_names or [])
    if len(output_names) > len(outputs):
        raise ValueError(
            f"export: {len(output_names)} output_names given for {len(outputs)} outputs"
        )
    output_names += [f"output_{i}" for i in range(len(output_names), len(outputs))]
    if len(output_names) == 1 and not output_names[0]:
        output_names = ["output"]
    unknown = set(dynamic_axes) - set(input_names) - set(output_names)
    if unknown:
        raise ValueError(
            f"export: dynamic_axes names {sorted(unknown)}, which are neither inputs "
            f"{input_names} nor outputs {output_names}"
        )
    graph = Graph(onnx, opset)
    graph_inputs = []
    for tensor, name in zip(inputs, input_names):
        axes = _axes(dynamic_axes, name, tensor.ndim, "input")
        graph_inputs.append(_value_info(onnx, name, tensor, axes))
        graph.dims[name] = [static(size) for size in tensor.shape]
        for axis in axes:
            graph.dims[name][axis] = graph.atom(name, axis)
    builder = _Builder(graph, model, inputs, input_names, calls)
    graph_outputs = []
    for tensor, name in zip(outputs, output_names):
        inner = builder.value(tensor)
        graph.nodes.append(onnx.helper.make_node("Identity", [inner], [name]))
        axes = _axes(dynamic_axes, name, tensor.ndim, "output")
        graph_outputs.append(_value_info(onnx, name, tensor, axes))
    proto = onnx.helper.make_graph(
        graph.nodes,
        type(model).__name__,
        graph_inputs,
        graph_outputs,
        initializer=graph.initializers,
    )
    made = onnx.helper.make_model(
        proto, opset_imports=[onnx.helper.make_opsetid("", opset)], producer_name="minigrad"
    )
    made.ir_version = min(made.ir_version, 10)
    onnx.checker.check_model(made)
    return made


def write(data, f):
    """bytes to a path (atomically: a temporary file beside it, then a rename) or a file."""
    if hasattr(f, "write"):
        f.write(data)
        return
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".onnx-", dir=folder)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def default_input_names(model, count):
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return (names + [f"input_{i}" for i in range(len(names), count)])[:count]
