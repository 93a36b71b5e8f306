"""torch.autograd's anomaly detection: the first op whose forward or backward made NaN or inf.

    with mg.autograd.detect_anomaly():
        loss = model(x).sum()       # an op making NaN from inputs without NaN raises here
        loss.backward()             # a backward returning NaN or inf raises here

The error (AnomalyError, a RuntimeError as torch's) names the op, the shapes of its inputs and
the line of the caller's code that applied it (the first frame outside minigrad), and, for a
NaN made from an inf, the op and line that made the inf: a softmax written as exp(z) / sum
overflows in exp (inf, which may be wanted: a mask of -inf) and becomes NaN in the division.
Each op's line is noted in forward, as torch does, so that a backward's error can name it.

As in torch: detect_anomaly is a context manager and a decorator, set_detect_anomaly(mode)
switches now or for a `with` block, and check_nan=False keeps the notes but raises nothing.
Unlike torch's, the mode is per thread (as grad mode), and forward is checked too.
"""

import contextlib
import linecache
import os
import sys
import weakref

import numpy as np

from . import hooks


class AnomalyError(RuntimeError):
    """An op's forward made NaN, or its backward NaN or inf (detect_anomaly)."""


_OWN_FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # minigrad/


def _library_folders():
    """minigrad/ and the folder minigrad.nn is installed from (the top-level nn/ of a checkout)."""
    folders = [_OWN_FOLDER]
    layers = sys.modules.get("minigrad.nn")
    if layers is not None and getattr(layers, "__file__", None):
        folders.append(os.path.dirname(os.path.abspath(layers.__file__)))
    return tuple(folder + os.sep for folder in folders)


def callers_line():
    """(file, line number, function) of the innermost frame outside minigrad, or None."""
    folders = _library_folders()
    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        inside = os.path.abspath(path).startswith(folders) if not path.startswith("<") else False
        if not inside and os.path.basename(path) != "contextlib.py":
            return path, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None


def describe_line(where):
    """'file.py:12, in f: `code`' for callers_line()'s answer."""
    if where is None:
        return "an unknown line"
    path, number, function = where
    code = linecache.getline(path, number).strip()
    text = f"{path}:{number}, in {function}"
    return f"{text}: `{code}`" if code else text


def _bad(array, kinds):
    """'nan' or 'inf' when a float array holds one (kinds says which to look for), else None."""
    array = np.asarray(array)
    if array.dtype.kind not in "fc" or array.size == 0:
        return None
    if "nan" in kinds and np.isnan(array).any():
        return "nan"
    if "inf" in kinds and np.isinf(array).any():
        return "inf"
    return None


def _shapes(tensors):
    return ", ".join(str(tuple(t.shape)) for t in tensors) or "none"


class AnomalyWatcher(hooks.Watcher):
    """Notes each op's line in forward; raises AnomalyError at the first NaN (in backward, also
    the first inf)."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        # id(tensor) -> (weak reference to it, op name, line): where an inf appeared
        self.inf_made = {}

    def after_forward(self, node, inputs, outputs):
        where = callers_line()
        node.anomaly_line = where
        if not self.check_nan:
            return
        if any(_bad(t._data, ("nan",)) for t in inputs):
            return  # the NaN came in: not this op's doing
        for index, output in enumerate(outputs):
            if _bad(output._data, ("nan",)):
                raise AnomalyError(self._forward_message(node, inputs, index, output, where))
        if not any(_bad(t._data, ("inf",)) for t in inputs):
            for output in outputs:
                if _bad(output._data, ("inf",)):
                    key = id(output)
                    forget = lambda _, key=key: self.inf_made.pop(key, None)  # noqa: E731
                    self.inf_made[key] = (weakref.ref(output, forget), node.name, where)

    def _forward_message(self, node, inputs, index, output, where):
        message = (
            f"detect_anomaly: {node.name} made nan in its output {index} (shape "
            f"{tuple(output.shape)}) from inputs without nan; its inputs' shapes: "
            f"{_shapes(inputs)}; it was applied at {describe_line(where)}."
        )
        for position, tensor in enumerate(inputs):
            made = self.inf_made.get(id(tensor))
            if made is not None and made[0]() is tensor:
                _, name, line = made
                message += (
                    f" Its input {position} holds inf, made by {name} from finite inputs at "
                    f"{describe_line(line)}."
                )
                break
        else:
            if any(_bad(t._data, ("inf",)) for t in inputs):
                message += " An input holds inf (inf - inf, 0 * inf and inf / inf are nan)."
        return message

    def after_backward(self, node, out_grads, grads):
        if not self.check_nan:
            return
        for index, grad in enumerate(grads):
            found = None if grad is None else _bad(grad, ("nan", "inf"))
            if found is None:
                continue
            finite = not any(_bad(g, ("nan", "inf")) for g in out_grads)
            given = "finite" if finite else "not finite"
            inputs = getattr(node, "inputs", ())
            shape = f" (shape {tuple(inputs[index].shape)})" if index < len(inputs) else ""
            raise AnomalyError(
                f"detect_anomaly: Function '{node.name}Backward' returned {found} values in its "
                f"{index}th output: the gradient for input {index}{shape}; the gradients it was "
                f"given were {given}. Its inputs' shapes: {_shapes(inputs)}; {node.name} was "
                f"applied at {describe_line(getattr(node, 'anomaly_line', None))}."
            )


def _watcher():
    return next((w for w in hooks.active() if isinstance(w, AnomalyWatcher)), None)


def is_anomaly_enabled():
    """True while anomaly detection is on in this thread (torch.is_anomaly_enabled)."""
    return _watcher() is not None


def is_anomaly_check_nan_enabled():
    watcher = _watcher()
    return watcher is not None and watcher.check_nan


def _switch(mode, check_nan):
    """Anomaly detection on (mode True) or off in this thread; returns what to restore."""
    previous = _watcher()
    if previous is not None:
        hooks.remove(previous)
    if mode:
        hooks.add(AnomalyWatcher(check_nan))
    return previous


def _restore(previous):
    current = _watcher()
    if current is not None:
        hooks.remove(current)
    if previous is not None:
        hooks.add(previous)


class detect_anomaly(contextlib.ContextDecorator):
    """Anomaly detection for a `with` block or each call of a decorated function."""

    def __init__(self, check_nan=True):
        if not isinstance(check_nan, bool):
            raise TypeError(f"detect_anomaly: check_nan must be a bool; got {check_nan!r}")
        self.check_nan = check_nan

    def __enter__(self):
        self._previous = _switch(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _restore(self._previous)
        return False


class set_detect_anomaly:
    """Anomaly detection on or off now (`mg.autograd.set_detect_anomaly(True)`), or for a
    `with` block, restoring the previous setting after it (torch.autograd.set_detect_anomaly)."""

    def __init__(self, mode, check_nan=True):
        if not isinstance(mode, bool) or not isinstance(check_nan, bool):
            raise TypeError(
                f"set_detect_anomaly: mode and check_nan must be bools; got {mode!r}, {check_nan!r}"
            )
        self._previous = _switch(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _restore(self._previous)
        return False
