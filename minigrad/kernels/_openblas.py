"""numpy's bundled OpenBLAS, reached through ctypes: its thread count (read, set, and set to one
inside `single_threaded_openblas` blocks) and the name of the kernels it runs (`openblas_core`).

`openblas_threads` is (set_num_threads, get_num_threads), or None when numpy's OpenBLAS is not
found (another BLAS, an unusual build): then minigrad never sets OpenBLAS's threads and runs
independent tasks one after the other (kernels/_threads.py).
"""

import contextlib
import ctypes
import glob
import os
import threading

import numpy as np


def _find_openblas():
    """(library, symbol prefix, symbol suffix) of numpy's bundled OpenBLAS via ctypes, or None.

    Looks only at the libraries numpy's wheels ship (numpy.libs/ on Linux and Windows,
    numpy/.dylibs/ on macOS) and the symbol names their builds use."""
    here = os.path.dirname(np.__file__)
    paths = glob.glob(os.path.join(here, os.pardir, "numpy.libs", "*openblas*")) + glob.glob(
        os.path.join(here, ".dylibs", "*openblas*")
    )
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (
            ("scipy_openblas", "64_"),
            ("scipy_openblas", ""),
            ("openblas", "64_"),
            ("openblas", ""),
        ):
            if hasattr(library, f"{prefix}_set_num_threads{suffix}"):
                return library, prefix, suffix
    return None


def _openblas_function(name, argtypes, restype):
    """numpy's bundled OpenBLAS's function `name` ("get_corename": its symbol with the build's
    prefix and suffix) with its C signature set, or None."""
    if _openblas is None:
        return None
    library, prefix, suffix = _openblas
    function = getattr(library, f"{prefix}_{name}{suffix}", None)
    if function is not None:
        function.argtypes, function.restype = argtypes, restype
    return function


def _find_openblas_threads():
    """(set_num_threads, get_num_threads) of numpy's bundled OpenBLAS, or None."""
    setter = _openblas_function("set_num_threads", [ctypes.c_int], None)
    getter = _openblas_function("get_num_threads", [], ctypes.c_int)
    return None if setter is None or getter is None else (setter, getter)


_openblas = _find_openblas()
openblas_threads = _find_openblas_threads()
_openblas_corename = _openblas_function("get_corename", [], ctypes.c_char_p)


def openblas_core():
    """The name of the kernels numpy's OpenBLAS runs ("Haswell", "SkylakeX", ...), or None."""
    return None if _openblas_corename is None else _openblas_corename().decode("ascii", "replace")


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


def openblas_thread_budget():
    """How many threads OpenBLAS may use outside single_threaded_openblas blocks: its own
    count, or the count saved when the first block started. (Inside run_threads every task
    runs in such a block; the last task running may still deal its products out to the
    cores the finished ones left.) Needs openblas_threads (not None)."""
    with _blas_lock:
        return _blas_saved if _blas_users else openblas_threads[1]()
