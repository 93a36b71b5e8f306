"""Process-wide settings: where Numba caches compiled kernels, how its threads wait, and
how many threads numpy's OpenBLAS uses.

Every Numba kernel module imports this one first. Its import (once per process)
sets up the cache before the first @njit(cache=True) decorator runs; the thread
pool is set up by chunk_count, which every parallel launch calls first.
"""

import contextlib
import os
import sys
import tempfile
import threading

# Below this many elements a parallel launch (~0.05 ms with passive threads, see
# configure_threads) costs more than it saves, so kernels run their serial path.
PARALLEL_MIN_SIZE = 1 << 16


def chunk_count(rows):
    """How many chunks to split `rows` independent rows into: a few per thread, for
    load balance. Computed in Python and passed to the parallel drivers, because
    numba.get_num_threads() inside a kernel would make the kernel uncacheable.

    Every parallel launch goes through here, so this is also where the thread pool
    is started (configure_threads), on first use rather than at import."""
    if not _threads_configured:
        configure_threads()
    import numba

    return max(1, min(rows, 8 * numba.get_num_threads()))


def _writable_dir(path):
    """True if path exists (or can be made) and a file can be created in it."""
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
        return True
    except OSError:
        return False


def configure_cache(package_dir):
    """Make sure @njit(cache=True) has somewhere to write.

    Numba (checked in 0.68, numba/core/caching.py) tries, in order: $NUMBA_CACHE_DIR,
    the source folder's __pycache__, then a user-wide folder (~/.cache/numba, or
    $XDG_CACHE_HOME/numba). A read-only install therefore already caches per user.
    Only when neither of the last two is writable (no home, read-only home) would
    the decorator raise "no locator available" at import, so then we point
    NUMBA_CACHE_DIR at a per-user folder in the temp dir. A user's own
    NUMBA_CACHE_DIR is never overridden.
    """
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    if _writable_dir(os.path.join(package_dir, "__pycache__")):
        return
    from numba.misc.appdirs import AppDirs

    if _writable_dir(AppDirs(appname="numba", appauthor=False).user_cache_dir):
        return
    user = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    fallback = os.path.join(tempfile.gettempdir(), f"minigrad-numba-cache-{user}")
    if _writable_dir(fallback):
        import numba

        os.environ["NUMBA_CACHE_DIR"] = fallback
        numba.config.reload_config()


def _gomp_loaded():
    """True if the system GNU OpenMP runtime is already mapped into this process (Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            return any(os.path.basename(line.split()[-1]).startswith("libgomp.so")
                       for line in maps if "/" in line)
    except OSError:
        return False


_threads_configured = False


def configure_threads():
    """Start Numba's thread pool with threads that sleep, not spin, when idle.

    Why: numpy's OpenBLAS and Numba's pool both use every core. With Numba's
    default OpenMP layer, idle workers busy-wait, and each pool then steals the
    cores the other needs. Measured on the 2-core dev machine (median of 200,
    float32, numba 0.68 omp layer, OpenBLAS 0.3.31 pthreads):

        setting                       128x128 matmul      numba parallel kernel   512x512 matmul
                                      alone / after nb    alone / after matmul    alone
        defaults (spinning omp)       0.021 / 1.6 ms      0.046 / 7.9 ms          1.07 ms
        OMP_WAIT_POLICY=PASSIVE       0.021 / 0.022 ms    0.089 / 0.091 ms        1.06 ms
        OPENBLAS_NUM_THREADS=1        0.036 / 0.037 ms    0.042 / 0.043 ms        2.08 ms
        NUMBA_NUM_THREADS=1           0.023 / 0.024 ms    0.081 / 0.081 ms        1.07 ms

    Decision: keep both pools at full width and make the OpenMP workers passive.
    That costs ~0.045 ms per parallel launch, so small inputs take serial code
    paths (each kernel has a size threshold). numpy is already imported when this
    runs, so OpenBLAS cannot be reconfigured by environment anyway.

    libgomp reads OMP_WAIT_POLICY once, when it is loaded, i.e. when Numba starts
    its pool. So we set the variable, start the pool now, and restore the
    environment at once: child processes and a later `import torch` (whose own
    bundled libgomp would read it too) see the user's environment unchanged.
    A user's own OMP_WAIT_POLICY / GOMP_SPINCOUNT is respected. If libgomp was
    loaded before us (by another library), the setting cannot apply; then
    Numba runs single-threaded, which measured free of interference above.

    Called on the first parallel launch, not at import: a process that forks
    after starting GNU OpenMP cannot use it in the child (Numba aborts it), so
    `import minigrad` then fork then compute keeps working.
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


def _find_openblas_threads():
    """(set_num_threads, get_num_threads) of numpy's bundled OpenBLAS via ctypes, or None.

    Looks only at the libraries numpy's wheels ship (numpy.libs/ on Linux and Windows,
    numpy/.dylibs/ on macOS) and the symbol names their builds use."""
    import ctypes
    import glob

    import numpy as np

    here = os.path.dirname(np.__file__)
    paths = (glob.glob(os.path.join(here, os.pardir, "numpy.libs", "*openblas*"))
             + glob.glob(os.path.join(here, ".dylibs", "*openblas*")))
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""), ("openblas", "64_"), ("openblas", "")):
            setter = getattr(library, f"{prefix}_set_num_threads{suffix}", None)
            getter = getattr(library, f"{prefix}_get_num_threads{suffix}", None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype, getter.restype = [ctypes.c_int], None, ctypes.c_int
                return setter, getter
    return None


openblas_threads = _find_openblas_threads()

_blas_lock = threading.Lock()
_blas_users = 0  # blocks running with single-threaded OpenBLAS right now
_blas_saved = None  # OpenBLAS's thread count before the first of them started


@contextlib.contextmanager
def single_threaded_openblas():
    """OpenBLAS on one thread inside the block (process-wide: OpenBLAS has no per-thread
    setting; openblas_set_num_threads_local is global too in its pthreads build). Nested
    or concurrent blocks restore the original count when the last one leaves. Needs
    openblas_threads (not None)."""
    global _blas_users, _blas_saved
    set_threads, get_threads = openblas_threads
    with _blas_lock:
        if _blas_users == 0:
            _blas_saved = get_threads()
            set_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                set_threads(_blas_saved)


_worker = None  # a one-thread pool for the second task of run_pair, made on first use
_worker_pid = None


def run_pair(run, tasks):
    """[run(tasks[0]), run(tasks[1])] on two threads (this one and a worker), with OpenBLAS
    on one thread inside: each task gets a core. Needs openblas_threads (not None).

    For work that splits into two independent halves of many small BLAS calls (an LSTM's two
    directions, a stack of matrix products): each call is too small to share between
    OpenBLAS's threads, which synchronise after every call. When another process holds a
    core, that synchronisation waits for the scheduler and a step can take 4-40x longer
    (measured, kernels/lstm.py and kernels/batched_matmul.py); two independent halves just
    finish later. numpy's matmul and the Numba kernels release the GIL.
    """
    global _worker, _worker_pid
    if _worker is None or _worker_pid != os.getpid():  # a forked child has no worker thread
        from concurrent.futures import ThreadPoolExecutor

        _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="minigrad")
        _worker_pid = os.getpid()
    with single_threaded_openblas():
        second = _worker.submit(run, tasks[1])
        try:
            first = run(tasks[0])
        finally:
            second_result = second.result()  # wait for it even if the first task failed
    return [first, second_result]


# Runs once, when the first Numba kernel module imports this one, i.e. before any
# @njit(cache=True) decorator is evaluated.
configure_cache(os.path.dirname(os.path.abspath(__file__)))
