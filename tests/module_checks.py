"""What the torch comparisons of nn.Module share (tests/nn/test_module.py, test_module_state.py):
the same small models built with minigrad's nn or torch.nn."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

torch = pytest.importorskip("torch")


def with_buffers(library, tensor):
    """The same small model in minigrad's nn or torch.nn: parameters, persistent and
    non-persistent buffers, an integer buffer, a None buffer, nested children."""

    class Normalizer(library.Module):
        def __init__(self):
            super().__init__()
            self.linear = library.Linear(3, 2)
            self.register_buffer("running_mean", tensor(np.zeros(2, np.float32)))
            self.register_buffer("steps", tensor(np.array(0, np.int64)))
            self.register_buffer("scratch", tensor(np.ones(2, np.float32)), persistent=False)
            self.register_buffer("absent", None)

    class Model(library.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", tensor(np.tril(np.ones((2, 2), np.float32))))
            self.first = Normalizer()
            self.second = library.Sequential(library.Linear(2, 2), Normalizer())

    return Model()


LIBS = [(nn, mg.tensor), (torch.nn, torch.tensor)]


def both(build):
    """build(lib, tensor) for minigrad and torch -> (ours, theirs)."""
    return tuple(build(lib, tensor) for lib, tensor in LIBS)


def zoo(lib):
    return lib.Sequential(
        lib.Linear(3, 4), lib.BatchNorm1d(4), lib.LayerNorm(4), lib.Tanh(), lib.Linear(4, 2)
    )
