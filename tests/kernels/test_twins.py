"""minigrad.kernels as a whole: the backend exposes every kernel, the parallel paths match the
twins, and bad shapes and dtypes are refused. Each kernel file has its own tests beside this one
(test_softmax.py, test_attention.py, test_adam.py, test_embedding.py, test_batched_matmul.py,
test_exp.py, test_pooling.py): every Numba kernel against its numpy twin, and every twin against
a formula written out there (or PyTorch, or finite differences), so the twins are not only
checked against themselves. The backend switch, threads and the on-disk cache:
tests/kernels/test_backend.py, test_threads.py and test_numba_cache.py."""

import importlib
import inspect
import os
from pathlib import Path

import numpy as np
import pytest

import minigrad.kernels as kernels
from kernel_checks import close, padding_mask
from minigrad.kernels import adam as numba_adam
from minigrad.kernels import attention as numba_attention
from minigrad.kernels import batched_matmul as numba_matmul
from minigrad.kernels import reference
from minigrad.kernels import cross_entropy as numba_cross_entropy
from minigrad.kernels import softmax as numba_softmax
from minigrad.kernels._numba_threads import PARALLEL_MIN_SIZE

# ============================================================ twins vs formulas written here


# ============================================================ Numba kernels vs twins


def test_backend_exposes_every_kernel():
    assert kernels.BACKEND == os.environ.get("MINIGRAD_KERNELS", "numba")
    for name in kernels.KERNELS:
        assert callable(getattr(kernels, name)) and callable(getattr(reference, name))


def test_every_kernel_is_listed_once_with_its_numba_version_and_twin_in_files_of_one_name():
    """KERNELS_BY_FILE, the one list: each file of reference/ is in it with all its public
    functions, the Numba version of each has the twin's parameters, and kernels.<name> is the
    active backend's."""
    twin_files = {path.stem for path in Path(reference.__file__).parent.glob("[!_]*.py")}
    assert twin_files == set(kernels.KERNELS_BY_FILE)
    assert len(set(kernels.KERNELS)) == len(kernels.KERNELS)
    for file, names in kernels.KERNELS_BY_FILE.items():
        twins = importlib.import_module(f"minigrad.kernels.reference.{file}")
        numba_versions = importlib.import_module(f"minigrad.kernels.{file}")
        public = {
            name
            for name, value in vars(twins).items()
            if inspect.isfunction(value) and value.__module__ == twins.__name__
        }
        assert public - {name for name in public if name.startswith("_")} == set(names), file
        for name in names:
            twin, compiled = getattr(twins, name), getattr(numba_versions, name)
            assert getattr(reference, name) is twin
            # compared as text: a NaN default is not equal to itself
            assert str(inspect.signature(compiled)) == str(inspect.signature(twin)), name
            active = twin if kernels.BACKEND == "numpy" else compiled
            assert getattr(kernels, name) is active, name


def test_parallel_paths_match_twins():
    """Inputs above PARALLEL_MIN_SIZE run the prange drivers (float32, as in training)."""
    rng = np.random.default_rng(8)
    dtype = np.float32
    x = rng.standard_normal((4, 2, 64, 150)).astype(dtype)
    assert x.size >= PARALLEL_MIN_SIZE
    mask = padding_mask(rng, 4, 150, (4, 1, 1, 150))
    # and causal-like key limits
    y = numba_softmax.softmax_forward(x, 0.125, mask, np.arange(1, 65))
    close(y, reference.softmax_forward(x, 0.125, mask, np.arange(1, 65)), dtype)
    close(
        numba_softmax.softmax_backward(y, x, 0.125, mask, np.arange(1, 65)),
        reference.softmax_backward(y, x, 0.125, mask, np.arange(1, 65)),
        dtype,
    )
    logits = x.reshape(-1, 150)
    log_y = numba_softmax.log_softmax_forward(logits)
    close(log_y, reference.log_softmax_forward(logits), dtype)
    close(
        numba_softmax.log_softmax_backward(log_y, logits),
        reference.log_softmax_backward(log_y, logits),
        dtype,
    )
    target = rng.integers(0, 150, logits.shape[0])
    target[::5] = -100
    loss, probs, count = numba_cross_entropy.cross_entropy_forward(logits, target)
    close(loss, reference.cross_entropy_forward(logits, target)[0], dtype)
    close(
        numba_cross_entropy.cross_entropy_backward(probs, target, -100, count, 1.0),
        reference.cross_entropy_backward(probs, target, -100, count, 1.0),
        dtype,
    )
    param, grad = x.copy(), rng.standard_normal(x.shape).astype(dtype)
    state, twin = (
        [param, np.zeros_like(x), np.zeros_like(x)],
        [param.copy(), np.zeros_like(x), np.zeros_like(x)],
    )
    numba_adam.adam_update(state[0], grad, state[1], state[2], 1, 1e-3, 0.9, 0.999, 1e-8, 0.0)
    reference.adam_update(twin[0], grad, twin[1], twin[2], 1, 1e-3, 0.9, 0.999, 1e-8, 0.0)
    close(state[0], twin[0], dtype)


# ============================================================ errors a user can cause


def test_numba_kernels_reject_bad_shapes_and_dtypes():
    with pytest.raises(ValueError, match=r"does not broadcast to x of shape \(2, 3\)"):
        numba_softmax.softmax_forward(np.zeros((2, 3)), 1.0, np.zeros((2, 2), bool))
    with pytest.raises(TypeError, match="mask must be bool.*float64"):
        numba_softmax.softmax_forward(np.zeros((2, 3)), 1.0, np.zeros((2, 3)))
    with pytest.raises(
        ValueError, match=r"q \(\.\.\., L, E\), k \(\.\.\., S, E\).*\(2, 3, 4\), \(2, 5, 3\)"
    ):
        numba_attention.attention_forward(
            np.zeros((2, 3, 4)), np.zeros((2, 5, 3)), np.zeros((2, 5, 3)), 1.0
        )
    with pytest.raises(TypeError, match="int64"):
        numba_softmax.log_softmax_forward(np.zeros((2, 3), np.int64))
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(4, 5\)"):
        numba_matmul.matmul(np.zeros((2, 3)), np.zeros((4, 5)))
    param = np.zeros((4, 4))[:, ::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        numba_adam.adam_update(
            param, param, param.copy(), param.copy(), 1, 1e-3, 0.9, 0.999, 1e-8, 0.0
        )


# ---------------------------------------------------------------- the row kernels' unmasked path
