"""minigrad.onnx.export: a model as an ONNX file, as torch.onnx.export makes one.

    minigrad.onnx.export(model, (ids,), "model.onnx", input_names=["ids"],
                         output_names=["logits"], dynamic_axes={"ids": {0: "batch", 1: "time"}})

The graph is the one minigrad records while the model runs once on `args` (exporting.py); ops are
converted one node at a time (ops.py), and the layers that read integer inputs or loop over
steps as whole calls (layers.py, recurrent.py). Needs the `onnx` package (the extra
`pip install minigrad[onnx]`, which also installs onnxruntime to run the file). docs/onnx.md
lists what is exported and what is refused.
"""

from .graph import UnsupportedOperatorError

__all__ = ["export", "destination_problem", "UnsupportedOperatorError"]


def destination_problem(f):
    """Why an ONNX file could not be written to the path `f` (a message), or None: the onnx
    package missing, the folder missing or not writable, or `f` a folder. For command lines
    that check a path before a long run (examples/*/train.py --export-onnx)."""
    import os
    import tempfile

    try:
        import onnx  # noqa: F401
    except ImportError:
        return "writing ONNX needs the onnx package: pip install 'minigrad[onnx]'"
    path = os.fspath(f)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        return f"{path} is a folder; give a file path such as {os.path.join(path, 'model.onnx')}"
    if not os.path.isdir(folder):
        return f"the folder {folder} does not exist"
    try:
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as error:
        return f"cannot write to the folder {folder}: {error.strerror or error}"
    return None


def export(
    model,
    args,
    f,
    input_names=None,
    output_names=None,
    dynamic_axes=None,
    opset_version=None,
    verbose=False,
):
    """Write `model` (an nn.Module), as run on `args` (a Tensor or a tuple of them), to `f` (a
    path or a binary file object) as an ONNX model.

    Args:
        input_names: one name per tensor of args (default: forward's parameter names).
        output_names: names of the output tensors, in order (default: output_0, ...).
        dynamic_axes: {name: [axes]} or {name: {axis: "dim name"}}: the axes of inputs and
            outputs whose size may differ from the traced run's (batch size, sequence length).
        opset_version: 17 to 21 (default 17).
    Returns the onnx.ModelProto written. Raises UnsupportedOperatorError naming the op and its
    layer, before anything is written, when the model uses something that cannot be exported.
    The model runs in eval mode (dropout off), as torch.onnx.export's default.
    """
    import os

    from ..engine import Tensor

    # an nn.Module (minigrad/ does not import the layers: tests/test_architecture.py)
    if not all(callable(getattr(model, name, None)) for name in ("named_modules", "eval")):
        raise TypeError(f"export: model must be an nn.Module; got {type(model).__name__}")
    if isinstance(args, Tensor):
        args = (args,)
    if not isinstance(args, tuple) or not args or not all(isinstance(a, Tensor) for a in args):
        raise TypeError(
            "export: args must be a Tensor or a non-empty tuple of Tensors (the model's "
            f"positional inputs); got {type(args).__name__}"
        )
    if not (hasattr(f, "write") or isinstance(f, (str, os.PathLike))):
        raise TypeError(f"export: f must be a path or a binary file object; got {type(f).__name__}")
    problem = None if hasattr(f, "write") else destination_problem(f)
    if problem:
        raise FileNotFoundError(f"export: cannot write {os.fspath(f)!r}: {problem}")
    opset = 17 if opset_version is None else opset_version
    from .exporting import OPSETS, build, default_input_names, write

    if isinstance(opset, bool) or not isinstance(opset, int) or opset not in OPSETS:
        raise ValueError(
            f"export: opset_version must be an int from {OPSETS[0]} to {OPSETS[-1]}; "
            f"got {opset_version!r}"
        )
    input_names = list(input_names) if input_names is not None else []
    if len(input_names) > len(args):
        raise ValueError(f"export: {len(input_names)} input_names given for {len(args)} inputs")
    input_names += default_input_names(model, len(args))[len(input_names) :]
    if len(set(input_names)) != len(input_names):
        raise ValueError(f"export: input_names must differ from each other; got {input_names}")
    dynamic_axes = {} if dynamic_axes is None else dynamic_axes
    if not isinstance(dynamic_axes, dict):
        raise TypeError(f"export: dynamic_axes must be a dict; got {type(dynamic_axes).__name__}")
    try:
        import onnx
    except ImportError:
        raise ImportError(
            "minigrad.onnx.export needs the onnx package: pip install 'minigrad[onnx]'"
        ) from None
    made = build(onnx, model, args, input_names, output_names, dynamic_axes, opset)
    write(made.SerializeToString(), f)
    if verbose:
        print(onnx.helper.printable_graph(made.graph))
    return made
