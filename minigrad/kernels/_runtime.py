"""Process-wide settings and launches: Numba's cache and thread pool, numpy's OpenBLAS
threads, glibc's malloc (`tune_malloc`), and the ways kernels use threads.

- `prepare_numba()`: every Numba kernel module calls it before its first
  @njit(cache=True): a cache folder that works from a read-only install, and recovery
  from a damaged cache file.
- `launch(serial, parallel, ...)`: a row kernel runs serially below PARALLEL_MIN_SIZE
  elements and on Numba's thread pool above, in the chunks of `chunk_bounds`.
- `run_tasks(run, tasks)`: two independent halves of BLAS-heavy work (an LSTM's two
  directions, a stack of matrix products) on two Python threads with one OpenBLAS
  thread each.
- `run_threads(run, tasks)`: each task on its own thread, every kernel inside on that
  thread alone while another task runs: how `mg.parallel.forward_backward` runs the parts of
  a batch.
"""

import contextlib
import ctypes
import functools
import os
import sys
import tempfile
import threading
import warnings

import numpy as np

# ---------------------------------------------------------------------------------------
# Launching a row kernel: serial below a size, parallel above

# Below this many elements a parallel launch (~0.05 ms with passive threads, see
# configure_threads) costs more than it saves.
PARALLEL_MIN_SIZE = 1 << 16


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


class _Tasks:
    """The tasks of one run_threads call. While two or more of them run, each keeps to its own
    thread; the last one running may use every thread again (the cores of the finished ones)."""

    def __init__(self, count):
        self.running = count
        self.lock = threading.Lock()

    def finished(self):
        with self.lock:
            self.running -= 1


_ALWAYS_ALONE = _Tasks(2)  # one_thread(): as if another task were always running


class _ThreadState(threading.local):
    tasks = None  # the _Tasks whose task this thread runs (None: free to use every thread)


_state = _ThreadState()


@contextlib.contextmanager
def _in(tasks):
    previous, _state.tasks = _state.tasks, tasks
    try:
        yield
    finally:
        _state.tasks = previous


def one_thread():
    """Kernels called from this thread inside the block run on it alone: no Numba pool, no
    second thread (run_tasks runs its tasks one after the other). For work that is already
    spread over the cores one level up."""
    return _in(_ALWAYS_ALONE)


def may_use_threads():
    """False while this thread runs one of several tasks of run_threads that are still running
    (or is in one_thread()): a kernel must then not start other threads."""
    return _state.tasks is None or _state.tasks.running < 2


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


def chunk_count(rows):
    """Number of chunks for a parallel driver that splits rows itself (softmax.py and
    batched_matmul.py, until they take chunk_bounds)."""
    return chunk_bounds(rows).shape[0] - 1


# ---------------------------------------------------------------------------------------
# glibc's malloc: freed arrays kept for reuse, not handed back to the system

MMAP_THRESHOLD = 32 << 20  # allocations below this come from malloc's heaps (glibc's own cap)
TRIM_THRESHOLD = 256 << 20  # free memory a heap keeps before it gives any back
# Set by the user (environment or GLIBC_TUNABLES): then malloc is left as configured.
_MALLOC_ENVIRONMENT = (
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
)
malloc_tuned = False


def tune_malloc():
    """Make glibc's malloc keep freed memory for the next arrays (Linux; once, at import).

    Why: by default glibc serves allocations from about 128 KB up with fresh pages from the
    system (its threshold adapts, but not for every pattern) and gives freed memory back, so
    a training step of the character model took ~6,600 page faults (26 MB of fresh pages,
    each zeroed by the system on first touch): 15-25 ms of system time per step, and the
    faults of two threads wait for each other on the process's memory map lock. With the
    thresholds below: ~12 faults per step and the step 3-20% faster
    (benchmarks/README-language-model.md, "Speed"). The cost: a process keeps up to
    TRIM_THRESHOLD of freed memory instead of returning it at once. Skipped when the user set
    any of glibc's malloc settings, and on systems without glibc."""
    global malloc_tuned
    if malloc_tuned or not sys.platform.startswith("linux"):
        return
    if any(name in os.environ for name in _MALLOC_ENVIRONMENT) or "glibc.malloc" in os.environ.get(
        "GLIBC_TUNABLES", ""
    ):
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # <malloc.h>
    malloc_tuned = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


# ---------------------------------------------------------------------------------------
# Numba: the cache folder and the thread pool


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

    Numba 0.68 tries $NUMBA_CACHE_DIR, the source folder's __pycache__, then ~/.cache/numba
    (or $XDG_CACHE_HOME/numba), so a read-only install caches per user. Only when none is
    writable would the decorator raise "no locator available" at import; then
    NUMBA_CACHE_DIR points at a per-user folder in the temp dir. A user's own
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


def recover_from_damaged_cache():
    """Make a damaged cache file of one of our kernels a cache miss, not an error.

    A cache file damaged after Numba wrote it (a bad copy, a disk error) fails to unpickle
    on every later load: each run raised until the folder was deleted by hand. Now a failed
    load of a minigrad kernel warns, deletes that kernel's index file (the next save starts
    a fresh index and overwrites the data file) and recompiles; if the index cannot be
    deleted, the error names the folder to delete. Other packages' functions are left alone.
    """
    from numba.core.caching import Cache

    load = Cache.load_overload
    package = __name__.split(".")[0]

    def load_overload(cache, sig, target_context):
        try:
            return load(cache, sig, target_context)
        except Exception as error:
            if getattr(cache._py_func, "__module__", "").split(".")[0] != package:
                raise
            index = cache._cache_file._index_path
            try:
                if os.path.exists(index):
                    os.remove(index)
            except OSError:
                raise RuntimeError(
                    f"the Numba cache of {cache._name} is damaged ({error!r}) and cannot be "
                    f"repaired: delete the folder {cache.cache_path}"
                ) from error
            warnings.warn(
                f"minigrad: recompiling {cache._py_func.__qualname__}: its Numba cache file in "
                f"{cache.cache_path} was damaged ({type(error).__name__}: {error})",
                RuntimeWarning,
            )
            return None

    Cache.load_overload = load_overload


@functools.cache
def prepare_numba():
    """Cache folder and damaged-cache recovery, once per process (imports Numba)."""
    configure_cache(os.path.dirname(os.path.abspath(__file__)))
    recover_from_damaged_cache()


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

    blas = openblas_threads[1]() if openblas_threads else "?"
    core = openblas_core() or "?"
    return f"numba {numba.get_num_threads()} ({numba.threading_layer()}), OpenBLAS {blas} ({core})"


# ---------------------------------------------------------------------------------------
# numpy's OpenBLAS threads


def _find_openblas():
    """(library, symbol prefix, symbol suffix) of numpy's bundled OpenBLAS via ctypes, or None.

    Looks only at the libraries numpy's wheels ship (numpy.libs/ on Linux and Windows,
    numpy/.dylibs/ on macOS) and the symbol names their builds use."""
    import glob

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


def openblas_core():
    """The name of the kernels numpy's OpenBLAS runs ("Haswell", "SkylakeX", ...), or None."""
    return None if _openblas_corename is None else _openblas_corename().decode("ascii", "replace")


_openblas = _find_openblas()
openblas_threads = _find_openblas_threads()
_openblas_corename = _openblas_function("get_corename", [], ctypes.c_char_p)

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


# ---------------------------------------------------------------------------------------
# Two independent tasks on two threads

# run_tasks gives each of two tasks its own thread and core when numpy's OpenBLAS thread
# count can be set (False: one task after the other, each BLAS call on OpenBLAS's threads).
use_two_threads = openblas_threads is not None


@functools.cache
def cores():
    """How many threads minigrad runs work on at once: NUMBA_NUM_THREADS if set (Numba's own
    setting, read here without importing Numba), else the cores this process may use."""
    try:
        return max(1, int(os.environ["NUMBA_NUM_THREADS"]))
    except (KeyError, ValueError):
        pass
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS and Windows have no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def two_threads():
    """True when run_tasks would give two tasks two threads: use_two_threads, at least two
    cores(), and this thread is not in one_thread()."""
    return use_two_threads and may_use_threads() and cores() >= 2


_workers = None  # a pool of threads for run_threads, made (or grown) on first use
_workers_size = 0
_workers_pid = None
_workers_lock = threading.Lock()


def _pool(size):
    """A thread pool with at least `size` workers (a forked child makes its own: it has none)."""
    global _workers, _workers_size, _workers_pid
    with _workers_lock:
        if _workers is None or _workers_pid != os.getpid() or _workers_size < size:
            from concurrent.futures import ThreadPoolExecutor

            # Threads start as tasks need them, so room for one per core costs nothing; at least
            # two, so that a worker's task left running last can hand half its kernels to another
            # worker. A pool outgrown is dropped, not shut down: another thread may be about to
            # submit to it.
            size = max(size, os.cpu_count() or 1, 2)
            _workers = ThreadPoolExecutor(max_workers=size, thread_name_prefix="minigrad")
            _workers_size, _workers_pid = size, os.getpid()
        return _workers


def run_threads(run, tasks):
    """[run(task) for task in tasks], at once on several threads (the first task on this one,
    the others on pool workers), OpenBLAS on one thread, and every kernel inside on its task's
    thread alone as long as another task is running: each task gets a core, and the last one
    running gets the cores of the finished ones for its kernels (two tasks of equal work do not
    finish at the same time: 10-20 ms apart in the language model's step). Waits for every
    task; if any raised, raises the first one's exception (in task order). Needs
    openblas_threads (not None).

    For independent work that is too small for OpenBLAS's threads, which synchronise after
    every call: when another process holds a core, that synchronisation waits for the
    scheduler and a step can take 4-40x longer (benchmarks/README-kernels.md); independent
    tasks just finish later. numpy's matmul and the Numba kernels release the GIL.
    """
    if len(tasks) < 2 or not may_use_threads():  # nested in a task: its workers may all be busy
        return [run(task) for task in tasks]
    group = _Tasks(len(tasks))

    def alone(task):
        try:
            with _in(group):
                return run(task)
        finally:
            group.finished()

    pool = _pool(len(tasks) - 1)
    with single_threaded_openblas():
        others = [pool.submit(alone, task) for task in tasks[1:]]
        results, errors = [], []
        try:
            results.append(alone(tasks[0]))
        except BaseException as error:
            errors.append(error)
        for future in others:  # wait for every task, even if an earlier one failed
            try:
                results.append(future.result())
            except BaseException as error:
                errors.append(error)
    if errors:
        raise errors[0]
    return results


def run_on_sequences(run, lengths, power=1):
    """run(sequences) for the sequences with at least one position, dealt longest first into
    two lists of about equal work (length ** power each), run_tasks'ed; their results (none
    when every length is 0)."""
    halves, work = ([], []), [0, 0]
    for b in np.argsort(-np.asarray(lengths), kind="stable").tolist():
        if lengths[b] == 0:
            break
        lighter = int(work[1] < work[0])
        halves[lighter].append(b)
        work[lighter] += int(lengths[b]) ** power
    return run_tasks(run, [half for half in halves if half])


def run_tasks(run, tasks):
    """[run(task) for task in tasks]; two tasks run at once (run_threads) when two_threads():
    for work that splits into two independent halves of many small BLAS calls (an LSTM's two
    directions, a stack of matrix products), each call too small to share between OpenBLAS's
    threads."""
    if len(tasks) == 2 and two_threads():
        return run_threads(run, tasks)
    return [run(task) for task in tasks]
