"""What the kernel tests of tests/kernels/ share: the float dtypes, the hypothesis budget, a
dtype-aware comparison (close) and a key-padding mask with at least one kept key per row."""

import numpy as np
from hypothesis import settings

FLOATS = [np.float32, np.float64]
# deadline=None: no wall-clock limits in tests (first calls include Numba compilation).
few = settings(max_examples=15, deadline=None)


def close(actual, expected, dtype):
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)
    assert actual.dtype == dtype
    np.testing.assert_allclose(actual, expected, **tol)


def padding_mask(rng, batch, length, shape):
    """Key-padding mask (True = keep) with at least one kept key per row."""
    lengths = rng.integers(1, length + 1, batch)
    return (np.arange(length)[None, :] < lengths[:, None]).reshape(shape)
