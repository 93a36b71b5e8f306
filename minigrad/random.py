"""The random number generator behind mg.randn, mg.rand, dropout and nn.init."""

import numpy as np

_generator = np.random.default_rng()


def manual_seed(seed):
    """Seed minigrad's generator so that runs repeat exactly."""
    global _generator
    _generator = np.random.default_rng(seed)


def generator():
    return _generator
