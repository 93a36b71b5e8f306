"""What the kernel tests of tests/kernels/ share: the float dtypes, the hypothesis budget, a
dtype-aware comparison (close), a key-padding mask with at least one kept key per row, and
run_python (code in a fresh interpreter, for what concerns a process's start)."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
from hypothesis import settings

import minigrad.kernels
from minigrad.kernels._malloc import MALLOC_ENVIRONMENT

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


KERNELS_DIR = os.path.dirname(minigrad.kernels.__file__)
REPO_ROOT = os.path.dirname(os.path.dirname(KERNELS_DIR))
# Settings a fresh interpreter must not inherit from the test run's environment.
UNSET = (
    "MINIGRAD_KERNELS",
    "OMP_WAIT_POLICY",
    "GOMP_SPINCOUNT",
    "NUMBA_CACHE_DIR",
    "GLIBC_TUNABLES",
    *MALLOC_ENVIRONMENT,
)


def run_python(code, env=None, cwd=None):
    """Run code in a fresh interpreter (minigrad importable from cwd, default the repository);
    return its last stdout line as JSON."""
    full_env = {key: value for key, value in os.environ.items() if key not in UNSET}
    full_env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [cwd or REPO_ROOT, os.environ.get("PYTHONPATH")])
    )
    full_env.update(env or {})
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        cwd=cwd or REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
