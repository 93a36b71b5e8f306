"""The random number generator behind mg.randn, mg.rand, dropout and nn.init."""

import contextlib
import threading

import numpy as np

_generator = np.random.default_rng()


class _ThreadState(threading.local):
    generator = None  # set by using_generator: this thread draws from it instead


_state = _ThreadState()


def _seed_value(seed):
    """torch takes any integer seed in [-2**63, 2**64): as a non-negative int for numpy."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"manual_seed: the seed must be an integer; got {seed!r}")
    if not -2 ** 63 <= int(seed) < 2 ** 64:
        raise ValueError(f"manual_seed: the seed must be in [-2**63, 2**64); got {seed}")
    return int(seed) % 2 ** 64


class Generator:
    """A generator of random numbers of its own, as torch.Generator: `g =
    mg.Generator().manual_seed(42)`, then `mg.randn(3, generator=g)` (also mg.rand, randint,
    randperm, multinomial and nn.init's functions) draws from it and leaves the global one as
    it was. Its numbers are not PyTorch's (minigrad draws with numpy's PCG64)."""

    def __init__(self, device="cpu"):
        if str(device).split(":")[0] != "cpu":
            raise ValueError(f"minigrad runs on the CPU only; got device {device!r}")
        self.seed()

    def manual_seed(self, seed):
        """Start again from `seed`; returns the generator (torch's chaining)."""
        self._initial_seed = _seed_value(seed)
        self._rng = np.random.default_rng(self._initial_seed)
        return self

    def seed(self):
        """Start again from a fresh seed, which is returned."""
        self.manual_seed(int(np.random.SeedSequence().entropy) % 2 ** 64)
        return self._initial_seed

    def initial_seed(self):
        return self._initial_seed

    @property
    def device(self):
        return "cpu"

    def __repr__(self):
        return f"<mg.Generator, initial seed {self._initial_seed}>"


class _DefaultGenerator(Generator):
    """The global generator as a Generator (what mg.manual_seed returns, as torch's does)."""

    def __init__(self):
        pass

    _rng = property(lambda self: _generator)
    _initial_seed = property(lambda self: _global_seed)

    def manual_seed(self, seed):
        manual_seed(seed)
        return self


_global_seed = None
default_generator = _DefaultGenerator()


def manual_seed(seed):
    """Seed minigrad's generator so that runs repeat exactly; returns it as a Generator."""
    global _generator, _global_seed
    _global_seed = _seed_value(seed)
    _generator = np.random.default_rng(_global_seed)
    return default_generator


def generator(chosen=None):
    """The numpy generator to draw from: `chosen` (an mg.Generator) when given, else this thread's
    own inside using_generator, else the seeded one."""
    if chosen is not None:
        if not isinstance(chosen, Generator):
            raise TypeError(f"generator must be an mg.Generator; got {type(chosen).__name__}")
        return chosen._rng
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
