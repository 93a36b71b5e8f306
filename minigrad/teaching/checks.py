"""Checks that teach: each failure says, in words a student can act on, what is wrong.

    check_function(MySoftmax, z, reference=mg.softmax)   # forward and backward of a Function
    check_array("sum_to((2, 3) -> (3,))", yours, expected)

A failed check raises ExerciseError (an AssertionError, which is what a grader counts as a
failed test) whose message names the output or gradient, the index of the first wrong number,
the student's value, the finite-difference value and minigrad's, and the shape that was
expected: "Mul.backward returned a gradient of shape (3,) for input 1 (y), whose shape is
(2, 3)", "your backward returned None". An exception raised by the student's own code is told
in the same way, with the line of their code that raised it, not as a traceback into minigrad.

A Function here is minigrad's op convention (minigrad/engine/function.py): static
`forward(ctx, *arrays, **settings)` and `backward(ctx, *grads)` on numpy arrays, backward
returning one gradient per input (a tuple; one array for a one-input op), which may have the
broadcast shape of the output: the engine sums it down (sum_to) as the walk does.
"""

import inspect
import os
import traceback

import numpy as np

from ..engine import Tensor
from ..engine.walk import sum_to

_LIBRARY = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class ExerciseError(AssertionError):
    """A check of an exercise failed; the message says what to change."""


def _your_line(error):
    """' (at line 4 of your code: `return x * y`)' for the innermost frame outside minigrad."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not os.path.abspath(frame.filename).startswith(_LIBRARY)
    ]
    if not frames:
        return ""
    frame = frames[-1]
    code = f": `{frame.line}`" if frame.line else ""
    return f" (at line {frame.lineno} of your code{code})"


def run_student(what, call, *args, **kwargs):
    """call(*args, **kwargs), with an exception it raises told as an ExerciseError."""
    __tracebackhide__ = True  # noqa: F841 (IPython and pytest hide this frame)
    try:
        return call(*args, **kwargs)
    except ExerciseError:
        raise
    except NotImplementedError:
        raise ExerciseError(
            f"{what} is not written yet: it raised NotImplementedError (replace the line "
            "`raise NotImplementedError()` with your code)"
        ) from None
    except Exception as error:
        raise ExerciseError(
            f"{what} raised {type(error).__name__}: {error}{_your_line(error)}"
        ) from None


def tolerances(dtype):
    """(rtol, atol) for comparing arrays of `dtype`: float32 work agrees to about 1e-5."""
    return (1e-4, 1e-5) if np.dtype(dtype) in (np.float32, np.float16) else (1e-6, 1e-8)


def _index(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def check_array(
    what,
    yours,
    expected,
    *,
    others=None,
    rtol=None,
    atol=None,
    expected_name="the expected value is",
):
    """Raise ExerciseError unless `yours` is an array of `expected`'s shape whose numbers are
    close to it. `what` names the thing ("the weights", "the gradient for W_Q"); `others` adds
    more values at the first wrong index ({"minigrad's": array}) to the message."""
    __tracebackhide__ = True  # noqa: F841
    expected = np.asarray(expected)
    if yours is None:
        raise ExerciseError(f"{what}: yours is None; did you forget a `return`?")
    if isinstance(yours, Tensor):
        yours = yours.numpy()
    try:
        yours = np.asarray(yours, dtype=np.result_type(expected.dtype, np.float64))
    except (TypeError, ValueError):
        raise ExerciseError(
            f"{what}: yours is a {type(yours).__name__}, not an array of numbers"
        ) from None
    if yours.shape != expected.shape:
        message = f"{what}: yours has shape {yours.shape}; the expected shape is {expected.shape}"
        if _broadcasts(expected.shape, yours.shape):
            message += (
                ": not summed down? an input broadcast to a bigger shape gets its gradient "
                "summed over the axes broadcasting added or stretched"
            )
        raise ExerciseError(message)
    default_rtol, default_atol = tolerances(expected.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    close = np.isclose(yours, expected, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return
    flat = int(np.flatnonzero(~close.ravel())[0])
    index = _index(flat, yours.shape)
    where = f" at index {index}" if index else ""
    message = f"{what} is wrong{where}: yours is {_number(yours.ravel()[flat])}"
    message += f", {expected_name} {_number(expected.ravel()[flat])}"
    for name, values in (others or {}).items():
        values = np.asarray(values)
        if values.shape == yours.shape:
            message += f", {name} is {_number(values.ravel()[flat])}"
    wrong = int((~close).sum())
    if wrong > 1:
        message += f" ({wrong} of {close.size} numbers differ)"
    if np.isnan(yours.ravel()[flat]) and not np.isnan(expected.ravel()[flat]):
        message += "; yours is nan: an overflow (exp of a large number is inf, inf / inf nan)?"
    raise ExerciseError(message)


def _broadcasts(shape, to):
    try:
        return np.broadcast_shapes(shape, to) == tuple(to) and len(to) > 0
    except ValueError:
        return False


def _number(value):
    return f"{float(value):.6g}"


class _Context:
    """The ctx a Function's forward and backward share when a check runs them outside a graph."""

    def __init__(self, count):
        self.needs_input_grad = (True,) * count
        self.recording = True
        self.saved = ()

    def save_for_backward(self, *arrays):
        self.saved = arrays


def _context(function, count):
    try:
        ctx = function.__new__(function)
        ctx.needs_input_grad, ctx.recording, ctx.saved = (True,) * count, True, ()
        return ctx
    except TypeError:
        return _Context(count)


def _input_names(function, count):
    """The names of forward's array arguments (x, y), for messages; 'input i' when unnamed."""
    try:
        names = list(inspect.signature(function.forward).parameters)[1 : count + 1]
    except (TypeError, ValueError):
        names = []
    names += [f"input {i}" for i in range(len(names), count)]
    return names


def gradients_of(what, returned, inputs, names):
    """backward's answer as one array per input, each of its input's shape (a broadcast shape
    summed down as the walk does); ExerciseError for None, a wrong count or a wrong shape."""
    __tracebackhide__ = True  # noqa: F841
    if returned is None:
        raise ExerciseError(
            f"{what} returned None: it must return the gradient for each input "
            f"({len(inputs)}: {', '.join(names)}); did you forget a `return`?"
        )
    grads = returned if isinstance(returned, (tuple, list)) else (returned,)
    if len(grads) != len(inputs):
        raise ExerciseError(
            f"{what} returned {len(grads)} gradient(s) for {len(inputs)} input(s) "
            f"({', '.join(names)}); return one per input, in forward's order"
        )
    result = []
    for position, (grad, x, name) in enumerate(zip(grads, inputs, names)):
        label = f"input {position} ({name})" if name != f"input {position}" else name
        if grad is None:
            raise ExerciseError(f"{what} returned None for {label}, of shape {x.shape}")
        grad = np.asarray(grad, dtype=np.float64)
        if grad.shape != x.shape:
            try:
                fits = np.broadcast_shapes(grad.shape, x.shape) == grad.shape
            except ValueError:
                fits = False
            if not fits:
                raise ExerciseError(
                    f"{what} returned a gradient of shape {grad.shape} for {label}, whose "
                    f"shape is {x.shape}: the gradient has its input's shape"
                )
            grad = sum_to(grad, x.shape)
        result.append(grad)
    return result


def finite_differences(forward, inputs, upstream, eps=1e-6):
    """d sum(forward(*inputs) * upstream) / d input, by central differences in float64."""
    grads = []
    for position, x in enumerate(inputs):
        grad = np.zeros_like(x)
        for index in np.ndindex(x.shape):
            values = []
            for step in (eps, -eps):
                moved = [y.copy() for y in inputs]
                moved[position][index] += step
                outputs = forward(*moved)
                outputs = outputs if isinstance(outputs, tuple) else (outputs,)
                values.append(sum(float((o * u).sum()) for o, u in zip(outputs, upstream)))
            grad[index] = (values[0] - values[1]) / (2 * eps)
        grads.append(grad)
    return grads


def check_function(function, *inputs, reference=None, settings=None, seed=0, name=None):
    """Check a Function's forward against `reference` and its backward against finite
    differences and the reference's gradient; raise ExerciseError naming the first problem.

    inputs: float arrays (computed in float64). reference: minigrad's own op, called on
    Tensors with the same settings (lambda x, y: x * y), or None (then forward is not
    compared). settings: keyword arguments forward takes (exponent=3). Returns the outputs."""
    __tracebackhide__ = True  # noqa: F841
    name = name or function.__name__
    settings = settings or {}
    inputs = [np.array(x, dtype=np.float64) for x in inputs]
    names = _input_names(function, len(inputs))
    shapes = ", ".join(str(x.shape) for x in inputs)

    def forward(*arrays):
        ctx = _context(function, len(arrays))
        outputs = run_student(f"{name}.forward", function.forward, ctx, *arrays, **settings)
        return ctx, outputs

    ctx, outputs = forward(*[x.copy() for x in inputs])
    single = not isinstance(outputs, tuple)
    outputs = (outputs,) if single else outputs
    own_outputs, own_grads = None, None
    if reference is not None:
        tensors = [Tensor(x, requires_grad=True) for x in inputs]
        own = reference(*tensors, **settings)
        own_outputs = (own,) if isinstance(own, Tensor) else tuple(own)
    if own_outputs is not None and len(own_outputs) != len(outputs):
        raise ExerciseError(
            f"{name}.forward returned {len(outputs)} output(s); {len(own_outputs)} expected"
        )
    for index, output in enumerate(outputs):
        what = f"{name}.forward's output" + ("" if single else f" {index}")
        what += f" (inputs of shapes {shapes})"
        if own_outputs is not None:
            check_array(what, output, own_outputs[index].numpy())
        elif output is None:
            raise ExerciseError(f"{what} is None; did you forget a `return`?")
    rng = np.random.default_rng(seed)
    outputs = [np.asarray(o, dtype=np.float64) for o in outputs]
    upstream = [rng.normal(size=o.shape) for o in outputs]
    returned = run_student(f"{name}.backward", function.backward, ctx, *upstream)
    grads = gradients_of(f"{name}.backward", returned, inputs, names)
    expected = finite_differences(lambda *a: forward(*a)[1], inputs, upstream)
    if own_outputs is not None:
        total = sum(((o * Tensor(u)).sum() for o, u in zip(own_outputs, upstream)), Tensor(0.0))
        total.backward()
        own_grads = [t.grad.numpy() if t.grad is not None else np.zeros(t.shape) for t in tensors]
    for position, (grad, fd) in enumerate(zip(grads, expected)):
        what = f"{name}.backward's gradient for input {position} ({names[position]})"
        others = {"minigrad's": own_grads[position]} if own_grads is not None else {}
        check_array(
            what,
            grad,
            fd,
            others=others,
            rtol=1e-4,
            atol=1e-6,
            expected_name="finite differences give",
        )
    return outputs[0] if single else outputs
