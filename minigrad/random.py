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
    if not -(2**63) <= int(seed) < 2**64:
        raise ValueError(f"manual_seed: the seed must be in [-2**63, 2**64); got {seed}")
    return int(seed) % 2**64


class Generator:
    """A generator of random numbers of its own, as torch.Generator: `g =
    mg.Generator().manual_seed(42)`, then `mg.randn(3, generator=g)` (also mg.rand, randint,
    randperm, multinomial and nn.init's functions) draws from it and leaves the global one as
    it was. Its numbers are not PyTorch's (minigrad draws with numpy's PCG64)."""

    def __init__(self, device="cpu"):  # `.device` is given by device.py, beside the device
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
        self.manual_seed(int(np.random.SeedSequence().entropy) % 2**64)
        return self._initial_seed

    def initial_seed(self):
        return self._initial_seed

    def get_state(self):
        """Where the generator is, as a 1-D uint8 array (torch returns a uint8 tensor;
        mg.get_rng_state wraps this one): save it with a checkpoint and set_state() it to draw the
        same numbers again."""
        return _encode(self._rng)

    def set_state(self, new_state):
        """Go back to a state get_state() gave (checked: a damaged one raises); returns the
        generator."""
        self._rng, self._initial_seed = _decode(new_state)
        return self

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

    def set_state(self, new_state):
        global _generator, _global_seed
        _generator, _global_seed = _decode(new_state)
        return self


_global_seed = None
default_generator = _DefaultGenerator()


def manual_seed(seed):
    """Seed minigrad's generator so that runs repeat exactly; returns it as a Generator."""
    global _generator, _global_seed
    _global_seed = _seed_value(seed)
    _generator = np.random.default_rng(_global_seed)
    return default_generator


def get_rng_state():
    """The global generator's state (torch.get_rng_state), a 1-D uint8 array; see
    Generator.get_state."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Put the global generator back to a state get_rng_state() gave (torch.set_rng_state)."""
    default_generator.set_state(new_state)


# A state: this tag, then nine little-endian uint64 words: the seed (128 bits, low word first),
# how many child generators were spawned from it (mg.parallel's parts draw from such children),
# PCG64's 128-bit state and increment (low words first), and its buffered 32-bit half.
_STATE_TAG = b"mgrng-1\0"
_STATE_WORDS = 9


def _encode(rng):
    bits = rng.bit_generator
    sequence = bits.seed_seq
    entropy = sequence.entropy
    if not isinstance(entropy, int) or not 0 <= entropy < 2**128 or sequence.spawn_key:
        raise ValueError(
            "get_state: this generator was not made by minigrad "
            "(its seed is not one number below 2**128)"
        )
    state = bits.state["state"]
    words = [
        entropy % 2**64,
        entropy >> 64,
        sequence.n_children_spawned,
        state["state"] % 2**64,
        state["state"] >> 64,
        state["inc"] % 2**64,
        state["inc"] >> 64,
        bits.state["has_uint32"],
        bits.state["uinteger"],
    ]
    return np.frombuffer(_STATE_TAG + np.array(words, "<u8").tobytes(), np.uint8).copy()


def _decode(new_state):
    """(numpy Generator, seed) from a state _encode made; ValueError naming what is wrong
    otherwise."""
    array = np.asarray(getattr(new_state, "_data", new_state))
    expected = len(_STATE_TAG) + 8 * _STATE_WORDS
    if array.dtype != np.uint8 or array.shape != (expected,):
        raise ValueError(
            f"set_state: expected a 1-D uint8 array of {expected} bytes from get_state(); "
            f"got {array.dtype} of shape {array.shape}"
        )
    raw = array.tobytes()
    if raw[: len(_STATE_TAG)] != _STATE_TAG:
        raise ValueError(
            "set_state: these bytes are not a minigrad generator state "
            f"(get_state() starts with {_STATE_TAG!r}; this one with {raw[: len(_STATE_TAG)]!r})"
        )
    words = [int(w) for w in np.frombuffer(raw[len(_STATE_TAG) :], "<u8")]
    seed = words[0] + (words[1] << 64)
    if words[5] % 2 == 0 or words[7] > 1 or (not words[7] and words[8]):
        raise ValueError(
            "set_state: a damaged generator state "
            "(PCG64's increment must be odd, and its buffered half empty unless flagged)"
        )
    bits = np.random.PCG64(np.random.SeedSequence(seed, n_children_spawned=words[2]))
    bits.state = {
        "bit_generator": "PCG64",
        "state": {"state": words[3] + (words[4] << 64), "inc": words[5] + (words[6] << 64)},
        "has_uint32": words[7],
        "uinteger": words[8],
    }
    return np.random.Generator(bits), seed


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
