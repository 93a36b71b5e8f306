"""minigrad/kernels/_runtime.py and the backend switch: launches and chunks, two threads,
Numba's thread pool, and its on-disk cache (read-only installs, damaged files). Whatever
concerns process start-up runs in a fresh interpreter."""

import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
import pytest

import minigrad.kernels as kernels
from minigrad.kernels import _runtime


# ============================================================ launches and chunks (in process)


@pytest.mark.parametrize("rows", [1, 5, 16, 17, 1000, 100_003])
def test_chunk_bounds_cover_every_row_once(rows):
    bounds = _runtime.chunk_bounds(rows)
    assert bounds.dtype == np.int64 and bounds[0] == 0 and bounds[-1] == rows
    sizes = np.diff(bounds)
    assert (sizes >= 1).all() and sizes.max() - sizes.min() <= 1  # no empty chunk, balanced
    assert _runtime.chunk_count(rows) == len(sizes)


def test_launch_runs_serial_below_the_threshold_and_chunks_above():
    calls = []
    serial = lambda label, start, stop: calls.append(("serial", label, start, stop))  # noqa: E731
    # noqa: E731
    parallel = lambda label, bounds: calls.append(("parallel", label, bounds.tolist()))
    _runtime.launch(serial, parallel, ("a",), 10)
    _runtime.launch(serial, parallel, ("b",), 10, size=_runtime.PARALLEL_MIN_SIZE - 1)
    _runtime.launch(serial, parallel, ("c",), 10, size=_runtime.PARALLEL_MIN_SIZE)
    assert calls[:2] == [("serial", "a", 0, 10), ("serial", "b", 0, 10)]
    assert calls[2][:2] == ("parallel", "c") and calls[2][2] == _runtime.chunk_bounds(10).tolist()
    threshold = _runtime.PARALLEL_MIN_SIZE
    _runtime.launch(serial, parallel, ("d",), 10, size=threshold, min_size=threshold + 1)
    _runtime.launch(serial, parallel, ("e",), 10, size=99, min_size=99)  # a kernel's own threshold
    assert calls[3] == ("serial", "d", 0, 10) and calls[4][:2] == ("parallel", "e")


def test_run_tasks_gives_results_in_order_and_restores_openblas(monkeypatch):
    for two_threads in (False, True):
        monkeypatch.setattr(
            _runtime, "use_two_threads", two_threads and _runtime.openblas_threads is not None
        )
        before = _runtime.openblas_threads[1]() if _runtime.openblas_threads else None
        assert _runtime.run_tasks(lambda n: np.ones((n, n)) @ np.ones((n, n)), [3, 5])[1][0, 0] == 5
        assert _runtime.run_tasks(lambda n: n * 2, [4]) == [8]
        with pytest.raises(ZeroDivisionError):
            _runtime.run_tasks(lambda n: 1 // n, [0, 1])
        if before is not None:
            assert _runtime.openblas_threads[1]() == before


# ======================================================= reused output arrays (kernels/_buffers.py)

from minigrad.kernels import _buffers  # noqa: E402


@pytest.fixture
def pool(monkeypatch):
    fresh = _buffers._Pool()
    monkeypatch.setattr(_buffers, "_pool", fresh)
    return fresh


def test_a_buffer_is_handed_out_again_only_when_nothing_refers_to_it(pool):
    first = _buffers.empty((512, 1024), np.float32)  # 2 MiB: kept
    view = first[3:, ::2]
    del first
    second = _buffers.empty(
        (1024, 512), np.float32
    )  # same bytes, but the view still holds the first
    assert not np.shares_memory(view, second) and len(pool.buffers[2 << 20]) == 2
    del view
    third = _buffers.empty(
        (2048, 256), np.float32
    )  # the first is free again: handed out, no new one
    assert third.flags.c_contiguous and third.shape == (2048, 256) and third.dtype == np.float32
    assert not np.shares_memory(third, second) and len(pool.buffers[2 << 20]) == 2


def test_buffers_of_other_sizes_are_not_handed_out_and_small_ones_not_kept(pool):
    big = _buffers.empty((1 << 19,), np.float32)  # 2 MiB
    big_address = big.__array_interface__["data"][0]
    del big
    other = _buffers.empty((1 << 19,), np.float64)  # 4 MiB: another size
    assert other.__array_interface__["data"][0] != big_address
    small = _buffers.empty((10,), np.float32)
    assert small.nbytes < _buffers.MIN_BYTES and set(pool.buffers) == {1 << 21, 1 << 22}


@pytest.mark.parametrize(
    "nbytes, expected",
    [
        (1 << 20, 1 << 20),
        ((1 << 20) + 1, 5 << 18),  # the next class: 1.25 MiB
        (5 << 18, 5 << 18),
        ((5 << 18) + 1, 6 << 18),
        ((7 << 18) + 1, 1 << 21),
        (3_000_000_000, 3 << 30),
    ],
)
def test_sizes_are_rounded_up_to_four_classes_per_doubling(nbytes, expected):
    assert _buffers.size_class(nbytes) == expected


def test_arrays_of_nearby_sizes_share_the_kept_buffers_of_their_class(pool):
    """Batches of other lengths ask for other sizes: they reuse, the pool does not grow."""
    rng = np.random.default_rng(0)
    for rows in rng.integers(20_000, 24_000, 50):  # 2.4-2.9 MB float32 arrays, each dropped
        array = _buffers.empty((int(rows), 32), np.float32)
        assert array.shape == (rows, 32) and array.flags.c_contiguous and array.flags.writeable
        array[...] = 1.0  # the whole array is ours to write
    assert set(pool.buffers) <= {5 << 19, 3 << 20}  # 2.5 and 3 MiB classes
    # at most two of each: the previous array is still referred to while the next is made
    assert sum(len(same) for same in pool.buffers.values()) <= 4


def test_a_smaller_array_of_a_class_never_shares_memory_with_a_live_one(pool):
    live = _buffers.empty((300_000,), np.float32)  # 1.2 MB: the 1.25 MiB class
    other = _buffers.empty((290_000,), np.float32)  # same class, while the first is alive
    assert not np.shares_memory(live, other)
    del live
    again = _buffers.empty((310_000,), np.float32)
    assert not np.shares_memory(again, other) and len(pool.buffers[5 << 18]) == 2


def test_the_pool_keeps_at_most_max_bytes_of_free_buffers(pool, monkeypatch):
    monkeypatch.setattr(_buffers, "MAX_BYTES", 5 << 20)
    held = [_buffers.empty((1 << 20,), np.uint8) for _ in range(3)]  # 3 MiB in use
    for size in (2, 3, 4, 2, 3):  # MiB, each dropped at once
        _buffers.empty((size << 20,), np.uint8)
    kept = sum(b.nbytes for same in pool.buffers.values() for b in same)
    assert kept == pool.kept and kept <= max(_buffers.MAX_BYTES, 3 << 20) + (4 << 20)
    assert all(
        any(np.shares_memory(b, h) for same in pool.buffers.values() for b in same) for h in held
    )  # in use: never dropped


def test_free_buffers_of_sizes_not_asked_for_lately_are_dropped(pool):
    """An evaluation on batches sorted by length: ever larger sizes, each for a while only."""
    for mib in range(2, 40):
        for _ in range(3):
            _buffers.empty((mib << 20,), np.uint8)  # dropped at once
    # (dropped when a new array is made: the last classes, of a few sizes each, may stay)
    assert min(pool.buffers) >= 24 << 20 and pool.kept <= 6 * (40 << 20)
    assert pool.kept == sum(b.nbytes for same in pool.buffers.values() for b in same)


def test_sizes_asked_for_every_step_stay_while_other_sizes_come_and_go(pool):
    """A training loop: the same sizes each step, and one that changes (distinct words)."""
    steady = (4 << 20, 16 << 20, 8 << 20)  # more than twice the changing size
    addresses = None
    for step in range(30):
        # first a size of this step's own (1-1.6 MiB), while last step's arrays are free
        held = [_buffers.empty(((1 << 20) + step * (20 << 10),), np.uint8)]
        held += [_buffers.empty((size,), np.uint8) for size in steady]  # alive for the step
        now = [array.__array_interface__["data"][0] for array in held[1:]]
        assert addresses is None or now == addresses  # the same buffers: no new pages
        addresses = now
        del held


def test_a_free_buffer_up_to_twice_the_size_serves_a_smaller_request(pool):
    """Batches longest first: the shorter ones after the first reuse its arrays."""
    first = _buffers.empty((4 << 20,), np.uint8)
    address = first.__array_interface__["data"][0]
    del first
    smaller = _buffers.empty((3 << 20,), np.float32).view(np.uint8)  # 12 MiB: too big
    assert smaller.__array_interface__["data"][0] != address
    del smaller
    for mib in (3, 2):  # 3 MiB and 2 MiB (half): the free 4 MiB buffer
        again = _buffers.empty((mib << 20,), np.uint8)
        assert again.__array_interface__["data"][0] == address and again.nbytes == mib << 20
        del again
    tiny = _buffers.empty((3 << 19,), np.uint8)  # 1.5 MiB: under half, a buffer of its own
    assert tiny.__array_interface__["data"][0] != address


def test_a_buffer_in_use_is_never_dropped_however_old(pool, monkeypatch):
    monkeypatch.setattr(_buffers, "STALE_TAKES", 0)
    old = _buffers.empty((2 << 20,), np.uint8)
    old[:] = 7
    for mib in range(3, 12):
        _buffers.empty((mib << 20,), np.uint8)
    assert (old == 7).all() and any(b is old.base for b in pool.buffers[2 << 20])


def test_two_threads_never_get_the_same_buffer_at_once(pool):
    import threading

    errors = []

    def work(value):
        for _ in range(200):
            a = _buffers.empty((1 << 18,), np.float32)
            a.fill(value)
            if not (a == value).all():
                errors.append(value)

    threads = [threading.Thread(target=work, args=(v,)) for v in (1.0, 2.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


# ==================================================== backend switch, threads, cache (subprocesses)

KERNELS_DIR = os.path.dirname(kernels.__file__)
REPO_ROOT = os.path.dirname(os.path.dirname(KERNELS_DIR))


def run_python(code, env=None, cwd=None):
    """Run code in a fresh interpreter; return its last stdout line as JSON."""
    full_env = {
        key: value
        for key, value in os.environ.items()
        if key
        not in (
            "MINIGRAD_KERNELS",
            "OMP_WAIT_POLICY",
            "GOMP_SPINCOUNT",
            "NUMBA_CACHE_DIR",
            "GLIBC_TUNABLES",
            *_runtime._MALLOC_ENVIRONMENT,
        )
    }
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


def test_minigrad_kernels_numpy_selects_the_twins():
    report = run_python(
        """
        import json, sys
        import minigrad.kernels as k
        import numpy as np
        import minigrad as mg
        from minigrad import nn
        embedding, lstm = nn.Embedding(10, 3), nn.LSTM(3, 4, batch_first=True, bidirectional=True)
        output, _ = lstm(embedding(np.array([[1, 2, 3], [4, 5, 0]])), lengths=[3, 2])
        output.sum().backward()
        print(json.dumps({"backend": k.BACKEND,
                          "twins": all(getattr(k, n) is getattr(k.reference, n) for n in k.KERNELS),
                          "numba_kernels_loaded": "minigrad.kernels.softmax" in sys.modules,
                          "numba_imported": "numba" in sys.modules}))
    """,
        env={"MINIGRAD_KERNELS": "numpy"},
    )
    assert report == {
        "backend": "numpy",
        "twins": True,
        "numba_kernels_loaded": False,
        "numba_imported": False,
    }


def test_unknown_backend_is_an_error():
    result = subprocess.run(
        [sys.executable, "-c", "import minigrad.kernels"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, MINIGRAD_KERNELS="cuda", PYTHONPATH=REPO_ROOT),
    )
    assert result.returncode != 0
    assert "MINIGRAD_KERNELS must be 'numba' or 'numpy', got 'cuda'" in result.stderr


MALLOC_PROBE = """
    import json, resource, threading
    import numpy as np
    import minigrad.kernels
    from minigrad.kernels import _runtime

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
    print(json.dumps({"tuned": _runtime.malloc_tuned, "faults": sum(counts)}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux only")
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_malloc_keeps_freed_arrays_for_reuse_unless_the_user_configured_it(backend):
    """At import, glibc's malloc is told to keep freed memory (no fresh pages, which the system
    zeroes on first touch, for each new array); a user's own malloc setting is left alone. The
    user's setting here is glibc's default threshold (128 KiB) made fixed: every array above it
    then comes as fresh pages, ~1 fault per 4 KiB page."""
    tuned = run_python(MALLOC_PROBE, env={"MINIGRAD_KERNELS": backend})
    untuned = run_python(
        MALLOC_PROBE, env={"MINIGRAD_KERNELS": backend, "MALLOC_MMAP_THRESHOLD_": "131072"}
    )
    pages = (
        80 * ((1 << 20) + (1 << 21) + (1 << 22) + (3 << 20)) // 4096
    )  # 80 rounds of the four arrays
    assert tuned["tuned"] is True and untuned["tuned"] is False
    assert untuned["faults"] > pages // 2, untuned  # the probe does see fresh pages when untuned
    assert tuned["faults"] < pages // 50, (tuned, pages)


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
        from minigrad.kernels import _runtime
        policies = []
        launch = parallel._launch_threads
        def recording_launch():
            policies.append(os.environ.get("OMP_WAIT_POLICY"))
            launch()
        parallel._launch_threads = recording_launch
        summary = _runtime.thread_summary()
        again = _runtime.thread_summary()
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


def make_read_only(folder):
    """Make folder read-only for this process, even as root (for whom modes do not count:
    then the immutable attribute is used). Returns an undo function."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        os.chmod(folder, 0o555)
        return lambda: os.chmod(folder, 0o755)
    chattr = shutil.which("chattr")
    if (
        chattr is None
        or subprocess.run([chattr, "+i", folder], capture_output=True).returncode != 0
    ):
        pytest.skip(
            "running as root on a file system without chattr +i: cannot make a folder read-only"
        )
    return lambda: subprocess.run([chattr, "-i", folder], check=True)


CACHE_PROBE = """
    import json, sys
    import numpy as np
    import kernels_copy as k
    from kernels_copy import embedding
    grad = k.embedding_backward(np.array([[0, 2, 2]]), np.ones((1, 3, 4), np.float32), 3)
    assert grad[2, 0] == 2.0 and grad[1, 0] == 0.0
    stats = embedding._scatter_add.stats
    hits, misses = sum(stats.cache_hits.values()), sum(stats.cache_misses.values())
    print(json.dumps({"hits": hits, "misses": misses}))
"""


def test_cache_works_from_a_read_only_install():
    """Installed read-only, kernels cache per user: in ~/.cache/numba (Numba's own fallback),
    or, when that is not writable either, in a per-user folder under the temp dir."""
    root = tempfile.mkdtemp(prefix="minigrad-ro-")
    undo = []
    try:
        site = os.path.join(root, "site")
        package = os.path.join(site, "kernels_copy")
        shutil.copytree(KERNELS_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
        home, tmp, locked_home = (
            os.path.join(root, name) for name in ("home", "tmp", "locked-home")
        )
        for folder in (home, tmp, locked_home):
            os.makedirs(folder)
        undo += [make_read_only(package), make_read_only(locked_home)]

        env = {"HOME": home, "XDG_CACHE_HOME": os.path.join(home, ".cache"), "TMPDIR": tmp}
        first = run_python(CACHE_PROBE, env=env, cwd=site)
        second = run_python(CACHE_PROBE, env=env, cwd=site)
        assert first["misses"] == 1 and second == {"hits": 1, "misses": 0}
        assert os.listdir(os.path.join(home, ".cache", "numba"))
        assert not os.path.exists(os.path.join(package, "__pycache__"))

        env = {"HOME": locked_home, "XDG_CACHE_HOME": locked_home, "TMPDIR": tmp}
        first = run_python(CACHE_PROBE, env=env, cwd=site)
        second = run_python(CACHE_PROBE, env=env, cwd=site)
        assert first["misses"] == 1 and second == {"hits": 1, "misses": 0}
        assert [name for name in os.listdir(tmp) if name.startswith("minigrad-numba-cache-")]
        assert not os.listdir(locked_home)
    finally:
        for restore in undo:
            restore()
        shutil.rmtree(root, ignore_errors=True)


def numba_cache_files(cache_dir, kernel):
    """(index file, data files) of one kernel in a NUMBA_CACHE_DIR."""
    index = glob.glob(os.path.join(cache_dir, "**", f"{kernel}-*.nbi"), recursive=True)
    data = glob.glob(os.path.join(cache_dir, "**", f"{kernel}-*.nbc"), recursive=True)
    assert len(index) == 1 and data, (index, data)
    return index[0], data


DAMAGED_CACHE_PROBE = """
    import json, warnings
    import numpy as np
    from minigrad.kernels import embedding
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids, upstream = np.array([[0, 2, 2]]), np.ones((1, 3, 4), np.float32)
        grad = embedding.embedding_backward(ids, upstream, 3)
    stats = embedding._scatter_add.stats
    print(json.dumps({"right": bool(grad[2, 0] == 2.0 and grad[1, 0] == 0.0),
                      "hits": sum(stats.cache_hits.values()),
                      "misses": sum(stats.cache_misses.values()),
                      "warnings": [str(w.message) for w in caught
                                   if "Numba cache" in str(w.message)]}))
"""


@pytest.mark.parametrize(
    "damaged, damage", [("data", "truncated"), ("data", "empty"), ("index", "junk")]
)
def test_a_damaged_cache_file_is_recompiled_and_repaired(damaged, damage, tmp_path):
    """Before: every later run raised (pickle's "data was truncated", EOFError ...) until the
    cache folder was deleted by hand. Now: one warning naming the folder, a recompile, and the
    run after that loads the repaired cache."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    first = run_python(DAMAGED_CACHE_PROBE, env=env)
    assert first == {"right": True, "hits": 0, "misses": 1, "warnings": []}
    index, data = numba_cache_files(tmp_path, "embedding._scatter_add")
    path = data[0] if damaged == "data" else index
    content = open(path, "rb").read()
    with open(path, "wb") as file:
        file.write(
            {
                "truncated": content[: len(content) // 3],
                "junk": bytes(range(256)) * 4,
                "empty": b"",
            }[damage]
        )

    recovered = run_python(DAMAGED_CACHE_PROBE, env=env)
    assert recovered["right"] and recovered["misses"] == 1 and len(recovered["warnings"]) == 1
    assert (
        "_scatter_add" in recovered["warnings"][0]
        and os.path.dirname(path) in recovered["warnings"][0]
    )
    assert run_python(DAMAGED_CACHE_PROBE, env=env) == {
        "right": True,
        "hits": 1,
        "misses": 0,
        "warnings": [],
    }


def test_a_damaged_cache_that_cannot_be_repaired_names_the_folder_to_delete(tmp_path):
    # Numba skips a cache folder it cannot write to, so the folder stays writable here and the
    # probe is refused the deletion of the damaged kernel's index (as a file system may refuse it)
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    run_python(DAMAGED_CACHE_PROBE, env=env)
    index, data = numba_cache_files(tmp_path, "embedding._scatter_add")
    with open(data[0], "wb") as file:
        file.write(b"not a pickle")
    refuse_removal = """
        import errno, os
        def remove(path):
            raise PermissionError(errno.EPERM, "Operation not permitted", path)
        os.remove = remove
    """
    full_env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=REPO_ROOT)
    full_env.pop("MINIGRAD_KERNELS", None)
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(refuse_removal) + textwrap.dedent(DAMAGED_CACHE_PROBE),
        ],
        cwd=REPO_ROOT,
        env=full_env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert (
        "RuntimeError" in result.stderr
        and f"delete the folder {os.path.dirname(index)}" in result.stderr
    )


def _cpu_has(flag):
    try:
        with open("/proc/cpuinfo") as info:
            return flag in info.read().split()
    except OSError:
        return False


@pytest.mark.skipif(
    _runtime.openblas_core() is None or platform.machine() != "x86_64",
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
        from minigrad.kernels import _runtime
        a = np.arange(12.0).reshape(3, 4)
        print(json.dumps({"core": _runtime.openblas_core(), "summary": _runtime.thread_summary(),
                          "product": (a @ a.T).tolist()}))
        """,
        env={"OPENBLAS_CORETYPE": core},
    )
    assert report["core"] == core and report["summary"].endswith(f"({core})")
    a = np.arange(12.0).reshape(3, 4)
    assert report["product"] == np.einsum("ik,jk->ij", a, a).tolist()
