"""The random number generator behind mg.randn, mg.rand, dropout and nn.init."""

import contextlib
import threading

import numpy as np

_generator = np.random.default_rng()


class _ThreadState(threading.local):
    generator = None  # set by using_generator: this thread draws from it instead


_state = _ThreadState()


def manual_seed(seed):
    """Seed minigrad's generator so that runs repeat exactly."""
    global _generator
    _generator = np.random.default_rng(seed)


def generator():
    """The generator to draw from: this thread's own inside using_generator, else the seeded one."""
    return _generator if _state.generator is None else _state.generator


@contextlib.contextmanager
def using_generator(rng):
    """Draws made on this thread inside the block come from `rng` (a numpy Generator).
    mg.parallel gives each part of a batch its own, so that dropout does not depend on which
    thread draws first."""
    previous, _state.generator = _state.generator, rng
    try:
        yield
    finally:
        _state.generator = previous
