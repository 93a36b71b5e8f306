"""What ops record, per thread: grad mode (`no_grad`, `enable_grad`, `set_grad_enabled`,
`inference_mode`, as torch.autograd.grad_mode has them) and the module scope (which nn.Module
call is running, so that mg.viz can group the ops it made).

Both are per thread, as in PyTorch: a `no_grad` block in one thread does not stop another thread
from recording its graph.
"""

import contextlib
import functools
import inspect
import threading

import numpy as np


class _ThreadState(threading.local):
    def __init__(self):
        self.grad_enabled = True
        # inference_mode: no graph even inside enable_grad, and the tensors made are inference
        # tensors (Tensor.is_inference), which refuse to be saved for a backward later
        self.inference = False
        # The innermost nn.Module call running in this thread, as a frame (module, outer frame);
        # None outside any module. Each call makes a new frame, so two calls of one module differ.
        self.module_frame = None


_state = _ThreadState()


def is_grad_enabled():
    return _state.grad_enabled


def is_inference_mode_enabled():
    """True inside `mg.inference_mode()` (torch.is_inference_mode_enabled)."""
    return _state.inference


def is_recording():
    """True when Function.apply records graph nodes: grad mode on and not in inference mode
    (in torch, enable_grad inside inference_mode switches grad mode on but records nothing)."""
    return _state.grad_enabled and not _state.inference


def _switch(mode):
    """Switch graph recording on or off for this thread; returns the previous setting."""
    previous, _state.grad_enabled = _state.grad_enabled, bool(mode)
    return previous


class set_grad_enabled(contextlib.ContextDecorator):
    """Graph recording on or off for this thread, as torch.set_grad_enabled: called, it switches
    now (`mg.set_grad_enabled(False)`); in a `with` block, it switches for the block and restores
    the previous setting after it (`with mg.set_grad_enabled(is_training):`); as a decorator,
    for each call of the function."""

    def __init__(self, mode):
        if not isinstance(mode, (bool, np.bool_)):
            raise TypeError(f"set_grad_enabled: mode must be a bool (True or False); got {mode!r}")
        self.mode = bool(mode)
        self.previous = _switch(self.mode)

    def __call__(self, function):  # a decorator: nothing switches until the function runs
        _switch(self.previous)
        return super().__call__(function)

    def _recreate_cm(self):  # each call of a decorated function switches, and restores, anew
        return set_grad_enabled(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _switch(self.previous)

    def __repr__(self):
        return f"set_grad_enabled(mode={self.mode})"


class _GradMode(contextlib.ContextDecorator):
    """Base of `no_grad` / `enable_grad`: a context manager that also works as a decorator."""

    enabled = True

    def __new__(cls, func=None):
        if func is not None:  # used bare, as `@mg.no_grad` (torch accepts both spellings)
            return cls()(func)
        return super().__new__(cls)

    def __enter__(self):
        self._previous = _switch(self.enabled)

    def __exit__(self, *exc):
        _switch(self._previous)
        return False

    def _fresh(self):
        """A new instance of this mode: each call of a decorated function enters its own."""
        return type(self)()

    def __call__(self, func):
        mode = self._fresh
        if inspect.isgeneratorfunction(func):
            # The mode must hold while the generator's own code runs, i.e. around each
            # resumption, not around the call that merely creates the generator.
            @functools.wraps(func)
            def generator_wrapper(*args, **kwargs):
                generator = func(*args, **kwargs)
                to_send = None
                while True:
                    with mode():
                        try:
                            value = generator.send(to_send)
                        except StopIteration as stop:
                            return stop.value
                    to_send = yield value

            return generator_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with mode():  # a fresh instance per call: nested calls keep their own _previous
                return func(*args, **kwargs)

        return wrapper


class no_grad(_GradMode):
    """Inside `with mg.no_grad():` (or a function decorated `@mg.no_grad()`), no graph is made."""

    enabled = False


class enable_grad(_GradMode):
    """Turn graph recording back on inside a `no_grad` block."""

    enabled = True


class inference_mode(_GradMode):
    """torch.inference_mode: no_grad, stricter. Tensors made inside are *inference tensors*
    (`t.is_inference()`): outside inference mode, an op that would save one for a backward
    raises, and so does changing one in place or asking it for a gradient (torch's rules; a
    `clone()` made outside is an ordinary tensor). Since nothing made inside can take part in a
    graph later, the layers' kernels keep nothing for a backward. `enable_grad` inside it
    records nothing, as in torch. inference_mode(False) leaves inference mode and records
    as usual. A context manager or a decorator, as no_grad."""

    def __new__(cls, mode=True):
        if callable(mode):  # used bare, as `@mg.inference_mode`
            return super().__new__(cls, mode)
        self = super().__new__(cls)
        self.mode = bool(mode)
        return self

    def __enter__(self):
        self._previous = (_state.grad_enabled, _state.inference)
        _state.grad_enabled, _state.inference = not self.mode, self.mode

    def __exit__(self, *exc):
        _state.grad_enabled, _state.inference = self._previous
        return False

    def _fresh(self):
        return inference_mode(self.mode)


def module_frame():
    """The innermost module call running in this thread: (module, outer frame), or None."""
    return _state.module_frame


@contextlib.contextmanager
def module_scope(module):
    """Mark the ops recorded inside as made by this call of `module`'s forward (for mg.viz)."""
    outer = _state.module_frame
    _state.module_frame = (module, outer)
    try:
        yield
    finally:
        _state.module_frame = outer
