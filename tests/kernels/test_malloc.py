"""minigrad/kernels/_malloc.py: tune_malloc, asked for by a program, keeps freed arrays for the
next ones (and leaves a user's own malloc settings alone). That importing minigrad does not
tune it: tests/kernels/test_backend.py."""

import sys

import pytest

from kernel_checks import run_python


MALLOC_PROBE = """
    import json, resource, threading
    import numpy as np
    import minigrad as mg

    tuned = mg.kernels.tune_malloc()

    def churn():  # a step's pattern in small: arrays of a few sizes made and dropped, on a thread
        for _ in range(40):
            arrays = [np.ones(size, np.float32) for size in (1 << 18, 1 << 19, 1 << 20, 3 << 18)]
            arrays[0] += arrays[0]
            del arrays

    # the first round may take fresh pages either way (a new thread, a new heap)
    def measured(counts):
        churn()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        churn()
        counts.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)

    counts = []
    measured(counts)
    thread = threading.Thread(target=measured, args=(counts,))
    thread.start()
    thread.join()
    again = mg.kernels.tune_malloc()  # once is enough: a second call changes nothing
    print(json.dumps({"tuned": tuned, "again": again, "faults": sum(counts)}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux only")
def test_tune_malloc_keeps_freed_arrays_for_reuse_unless_the_user_configured_it():
    """tune_malloc() tells glibc's malloc to keep freed memory (no fresh pages, which the system
    zeroes on first touch, for each new array); a user's own malloc setting is left alone. The
    user's setting here is glibc's default threshold (128 KiB) made fixed: every array above it
    then comes as fresh pages, ~1 fault per 4 KiB page."""
    tuned = run_python(MALLOC_PROBE)
    untuned = run_python(MALLOC_PROBE, env={"MALLOC_MMAP_THRESHOLD_": "131072"})
    # 80 rounds of the four arrays
    pages = 80 * ((1 << 20) + (1 << 21) + (1 << 22) + (3 << 20)) // 4096
    assert tuned["tuned"] is tuned["again"] is True
    assert untuned["tuned"] is untuned["again"] is False
    assert untuned["faults"] > pages // 2, untuned  # the probe does see fresh pages when untuned
    assert tuned["faults"] < pages // 50, (tuned, pages)
