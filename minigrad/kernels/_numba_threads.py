"""Numba's thread pool, and the row kernels launched on it.

- `launch(serial, parallel, ...)`: a row kernel runs serially below PARALLEL_MIN_SIZE elements
  and on Numba's thread pool above, in the chunks of `chunk_bounds`.
- `configure_threads()`: the pool started with workers that sleep when idle, on the first
  parallel launch (not at import).
- `thread_summary()`: the thread pools kernels run on, for benchmark reports.
"""

import os
import sys

import numpy as np

from . import _openblas
from ._threads import may_use_threads

# ---------------------------------------------------------------------------------------
# Launching a row kernel: serial below a size, parallel above

# Below this many elements a parallel launch (~0.05 ms with passive threads, see
# configure_threads) costs more than it saves.
PARALLEL_MIN_SIZE = 1 << 16


def use_pool(size, min_size=PARALLEL_MIN_SIZE):
    """True when a row kernel over `size` elements should run on Numba's thread pool: at least
    min_size elements, and this thread may use other threads (may_use_threads). The one rule
    of launch and of the kernels that split their rows themselves (gelu, layer_norm)."""
    return size >= min_size and may_use_threads()


def launch(serial, parallel, args, rows, size=None, min_size=PARALLEL_MIN_SIZE):
    """Run a row kernel over rows 0..rows-1: `serial(*args, 0, rows)` unless use_pool (size
    elements, default rows), else `parallel(*args, bounds)`, whose prange loop runs
    `serial(*args, bounds[c], bounds[c + 1])` for each chunk c.

    The two are separate kernels because Numba cannot cache a driver that takes the
    row kernel as an argument."""
    if not use_pool(rows if size is None else size, min_size):
        serial(*args, 0, rows)
    else:
        parallel(*args, chunk_bounds(rows))


def chunk_bounds(rows):
    """Chunk c of `rows` independent rows is bounds[c]:bounds[c + 1] (int64 (chunks + 1,)).

    A few chunks per thread, for load balance. Counted here in Python, because
    numba.get_num_threads() inside a kernel would make the kernel uncacheable. Every
    parallel launch comes through here, so this also starts the thread pool
    (configure_threads), on first use rather than at import."""
    if not _threads_configured:
        configure_threads()
    import numba

    chunks = max(1, min(rows, 8 * numba.get_num_threads()))
    return np.arange(chunks + 1, dtype=np.int64) * rows // chunks


def chunk_count(rows):
    """Number of chunks for a parallel driver that splits rows itself (softmax.py and
    batched_matmul.py, until they take chunk_bounds)."""
    return chunk_bounds(rows).shape[0] - 1


# ---------------------------------------------------------------------------------------
# Starting the pool


def _gomp_loaded():
    """True if the system GNU OpenMP runtime is already mapped into this process (Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            return any(
                os.path.basename(line.split()[-1]).startswith("libgomp.so")
                for line in maps
                if "/" in line
            )
    except OSError:
        return False


_threads_configured = False


def configure_threads():
    """Start Numba's thread pool with threads that sleep, not spin, when idle.

    Why: numpy's OpenBLAS and Numba's pool both use every core, and with Numba's OpenMP
    layer idle workers busy-wait and steal the cores the other pool needs
    (benchmarks/README-kernels.md, "Threads"). Passive workers cost ~0.045 ms per parallel
    launch, hence the serial path below PARALLEL_MIN_SIZE.

    libgomp reads OMP_WAIT_POLICY once, when Numba starts its pool: so we set it, start the
    pool, and restore the environment at once (child processes and a later `import torch`
    see the user's environment). A user's own OMP_WAIT_POLICY / GOMP_SPINCOUNT is respected.
    If libgomp was loaded before us, the setting cannot apply; then Numba runs on one
    thread, which measured free of interference. Called on the first parallel launch, not
    at import: a child forked after GNU OpenMP started cannot use it (Numba aborts).
    """
    global _threads_configured
    _threads_configured = True
    from numba.np.ufunc import parallel

    if parallel._is_initialized:  # someone already started the pool: leave it alone
        return
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    preloaded = _gomp_loaded()
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        parallel._launch_threads()
    finally:
        del os.environ["OMP_WAIT_POLICY"]
    import numba

    if preloaded and numba.threading_layer() == "omp" and sys.platform.startswith("linux"):
        numba.set_num_threads(1)


def thread_summary():
    """ "numba N (layer), OpenBLAS M (kernels)": the thread pools kernels run on, for reports.

    Starts Numba's pool the way the first parallel launch would (configure_threads):
    numba.get_num_threads() called first would start it with threads that spin when idle, and
    a benchmark that printed it before its first step measured kernels slowed by them
    (the character model's step: 0.44-0.50 s instead of 0.27-0.35 s)."""
    if not _threads_configured:
        configure_threads()
    import numba

    threads = _openblas.openblas_threads
    blas = threads[1]() if threads else "?"
    core = _openblas.openblas_core() or "?"
    return f"numba {numba.get_num_threads()} ({numba.threading_layer()}), OpenBLAS {blas} ({core})"
