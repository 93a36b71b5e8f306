"""minigrad/kernels/_threads.py, _numba_threads.py and _openblas.py: launches and chunks, two
threads, Numba's thread pool (started on the first parallel kernel, with sleeping workers) and
OpenBLAS's kernels. Whatever concerns process start-up runs in a fresh interpreter."""

import os
import platform

import numpy as np
import pytest

from kernel_checks import run_python
from minigrad.kernels import _numba_threads, _openblas, _threads

# ============================================================ launches and chunks (in process)


@pytest.mark.parametrize("rows", [1, 5, 16, 17, 1000, 100_003])
def test_chunk_bounds_cover_every_row_once(rows):
    bounds = _numba_threads.chunk_bounds(rows)
    assert bounds.dtype == np.int64 and bounds[0] == 0 and bounds[-1] == rows
    sizes = np.diff(bounds)
    assert (sizes >= 1).all() and sizes.max() - sizes.min() <= 1  # no empty chunk, balanced
    assert _numba_threads.chunk_count(rows) == len(sizes)


def test_launch_runs_serial_below_the_threshold_and_chunks_above():
    calls = []
    serial = lambda label, start, stop: calls.append(("serial", label, start, stop))  # noqa: E731
    # noqa: E731
    parallel = lambda label, bounds: calls.append(("parallel", label, bounds.tolist()))
    launch, threshold = _numba_threads.launch, _numba_threads.PARALLEL_MIN_SIZE
    launch(serial, parallel, ("a",), 10)
    launch(serial, parallel, ("b",), 10, size=threshold - 1)
    launch(serial, parallel, ("c",), 10, size=threshold)
    assert calls[:2] == [("serial", "a", 0, 10), ("serial", "b", 0, 10)]
    assert calls[2][:2] == ("parallel", "c")
    assert calls[2][2] == _numba_threads.chunk_bounds(10).tolist()
    launch(serial, parallel, ("d",), 10, size=threshold, min_size=threshold + 1)
    launch(serial, parallel, ("e",), 10, size=99, min_size=99)  # a kernel's own threshold
    assert calls[3] == ("serial", "d", 0, 10) and calls[4][:2] == ("parallel", "e")


def test_run_tasks_gives_results_in_order_and_restores_openblas(monkeypatch):
    for two_threads in (False, True):
        monkeypatch.setattr(
            _threads, "use_two_threads", two_threads and _openblas.openblas_threads is not None
        )
        before = _openblas.openblas_threads[1]() if _openblas.openblas_threads else None
        assert _threads.run_tasks(lambda n: np.ones((n, n)) @ np.ones((n, n)), [3, 5])[1][0, 0] == 5
        assert _threads.run_tasks(lambda n: n * 2, [4]) == [8]
        with pytest.raises(ZeroDivisionError):
            _threads.run_tasks(lambda n: 1 // n, [0, 1])
        if before is not None:
            assert _openblas.openblas_threads[1]() == before


# ============================================================ Numba's pool (subprocesses)


def test_thread_pool_starts_on_first_parallel_kernel_and_leaves_environment_alone():
    report = run_python("""
        import json, os
        import numpy as np
        import numba
        from numba.np.ufunc import parallel
        import minigrad.kernels as k
        started_at_import = parallel._is_initialized
        k.softmax_forward(np.zeros((1024, 128), np.float32))  # above PARALLEL_MIN_SIZE
        print(json.dumps({"at_import": started_at_import, "after_kernel": parallel._is_initialized,
                          "env_left": "OMP_WAIT_POLICY" in os.environ,
                          "threads": numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS}))
    """)
    assert report == {"at_import": False, "after_kernel": True, "env_left": False, "threads": True}


def test_thread_summary_starts_the_pool_with_sleeping_threads():
    """A benchmark prints its threads before the first step: that must not start Numba's pool
    with spinning threads (numba.get_num_threads() would)."""
    report = run_python("""
        import json, os
        import numba
        from numba.np.ufunc import parallel
        from minigrad.kernels import _numba_threads
        policies = []
        launch = parallel._launch_threads
        def recording_launch():
            policies.append(os.environ.get("OMP_WAIT_POLICY"))
            launch()
        parallel._launch_threads = recording_launch
        summary = _numba_threads.thread_summary()
        again = _numba_threads.thread_summary()
        print(json.dumps({"policies": policies, "same": summary == again, "summary": summary,
                          "threads": numba.get_num_threads()}))
    """)
    assert report["policies"][:1] == ["PASSIVE"] and report["same"]
    assert report["summary"].startswith(f"numba {report['threads']} (")
    assert ", OpenBLAS " in report["summary"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_after_import_can_run_parallel_kernels():
    """GNU OpenMP cannot be used in a child forked after it started; the pool starts lazily."""
    report = run_python("""
        import json, os
        import numpy as np
        import minigrad.kernels as k
        x = np.zeros((1024, 128), np.float32)
        pid = os.fork()
        if pid == 0:
            os._exit(0 if k.softmax_forward(x)[0, 0] == np.float32(1 / 128) else 3)
        print(json.dumps({"child_status": os.waitpid(pid, 0)[1]}))
    """)
    assert report == {"child_status": 0}


# ============================================================ OpenBLAS's kernels


def _cpu_has(flag):
    try:
        with open("/proc/cpuinfo") as info:
            return flag in info.read().split()
    except OSError:
        return False


@pytest.mark.skipif(
    _openblas.openblas_core() is None or platform.machine() != "x86_64",
    reason="numpy's bundled OpenBLAS on x86-64 (its Linux wheels) names its x86 kernels",
)
@pytest.mark.parametrize("core", ["Nehalem", "Haswell"])  # SSE4.2, AVX2
def test_openblas_core_names_the_kernels_openblas_was_told_to_use(core):
    """Benchmark reports name OpenBLAS's kernels: OPENBLAS_CORETYPE changes them, and with
    them every product's speed (benchmarks/README.md, "OpenBLAS's kernels")."""
    if core == "Haswell" and not _cpu_has("avx2"):
        pytest.skip("a CPU without AVX2 cannot run OpenBLAS's Haswell kernels")
    report = run_python(
        """
        import json
        import numpy as np
        from minigrad.kernels import _numba_threads, _openblas
        a = np.arange(12.0).reshape(3, 4)
        print(json.dumps({"core": _openblas.openblas_core(),
                          "summary": _numba_threads.thread_summary(),
                          "product": (a @ a.T).tolist()}))
        """,
        env={"OPENBLAS_CORETYPE": core},
    )
    assert report["core"] == core and report["summary"].endswith(f"({core})")
    a = np.arange(12.0).reshape(3, 4)
    assert report["product"] == np.einsum("ik,jk->ij", a, a).tolist()
