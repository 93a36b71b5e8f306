"""The one seam through which a tool watches ops or swaps one for another, per thread.

mg.autograd.detect_anomaly (anomaly.py) watches every op's forward and backward for NaN and
inf; minigrad.teaching's `swap` applies a student's Function where minigrad applies its own.
Function.apply asks `active()` once per op: an empty tuple, the usual case, and nothing else
happens. A watcher is a `Watcher` overriding what it needs:

    replace(cls)                              the Function class to apply instead of cls
    after_forward(node, inputs, outputs)      node: the ctx (recorded or not); Tensors
    after_backward(node, out_grads, grads)    the arrays the node's backward got and returned

Watchers are per thread, as grad mode is (grad_mode.py): a block in one thread changes nothing
in another. `add` and `remove` take one watcher in and out; `watching` does both around a
`with` block, also when the block raises.
"""

import contextlib
import threading


class Watcher:
    """What Function.apply and run_backward call on an active watcher; by default, nothing."""

    def replace(self, cls):
        return cls

    def after_forward(self, node, inputs, outputs):
        pass

    def after_backward(self, node, out_grads, grads):
        pass


class _ThreadState(threading.local):
    def __init__(self):
        self.watchers = ()


_state = _ThreadState()


def active():
    """This thread's watchers, in the order they were added (innermost last)."""
    return _state.watchers


def add(watcher):
    _state.watchers = _state.watchers + (watcher,)


def remove(watcher):
    """Take `watcher` out (it alone: blocks left out of order keep each other's)."""
    _state.watchers = tuple(w for w in _state.watchers if w is not watcher)


@contextlib.contextmanager
def watching(watcher):
    add(watcher)
    try:
        yield watcher
    finally:
        remove(watcher)


def replaced(cls, watchers):
    """The Function class to apply for `cls`: each watcher's replacement in turn."""
    for watcher in watchers:
        cls = watcher.replace(cls)
    return cls


def after_forward(watchers, node, inputs, outputs):
    for watcher in watchers:
        watcher.after_forward(node, inputs, outputs)


def after_backward(watchers, node, out_grads, grads):
    for watcher in watchers:
        watcher.after_backward(node, out_grads, grads)
