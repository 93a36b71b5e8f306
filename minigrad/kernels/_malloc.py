"""`tune_malloc()`: glibc's malloc told to keep freed memory for the next arrays, when a program
asks for it (the examples' training scripts and the benchmarks do; importing minigrad does not).

Why a program may want it: by default glibc serves allocations from about 128 KB up with fresh
pages from the system (its threshold adapts, but not for every pattern) and gives freed memory
back, so a training step of the character model took ~6,600 page faults (26 MB of fresh pages,
each zeroed by the system on first touch): 15-25 ms of system time per step, and the faults of
two threads wait for each other on the process's memory map lock. With the thresholds below:
~12 faults per step and the step 3-20% faster (benchmarks/README-language-model.md, "Speed").
The cost: the process keeps up to TRIM_THRESHOLD of freed memory instead of returning it at
once. The setting is the whole process's, which is why only the program may choose it.
"""

import ctypes
import os
import sys

MMAP_THRESHOLD = 32 << 20  # allocations below this come from malloc's heaps (glibc's own cap)
TRIM_THRESHOLD = 256 << 20  # free memory a heap keeps before it gives any back
# Set by the user (environment or GLIBC_TUNABLES): then malloc is left as configured.
MALLOC_ENVIRONMENT = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
)
malloc_tuned = False


def tune_malloc():
    """Make glibc's malloc keep freed memory for the next arrays (mmap threshold 32 MiB, trim
    threshold 256 MiB) for the whole process; returns True if it is so tuned (by this call or an
    earlier one). Does nothing, and returns False, when the user set any of glibc's malloc
    settings (MALLOC_MMAP_THRESHOLD_ ..., GLIBC_TUNABLES=glibc.malloc...) and on systems without
    glibc.

    Example::

        import minigrad as mg
        mg.kernels.tune_malloc()  # a training script's first line after the imports
    """
    global malloc_tuned
    if malloc_tuned or not sys.platform.startswith("linux"):
        return malloc_tuned
    user_set = any(name in os.environ for name in MALLOC_ENVIRONMENT)
    if user_set or "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # <malloc.h>
    malloc_tuned = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
    return malloc_tuned
