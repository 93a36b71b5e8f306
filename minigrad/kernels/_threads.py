"""Which threads a kernel may use, and independent tasks run on several Python threads.

- `may_use_threads()`: False while this thread runs one of several tasks of run_threads that
  are still running, or is inside `one_thread()`: its kernels then keep to it.
- `run_threads(run, tasks)`: each task on its own thread, every kernel inside on that thread
  alone while another task runs: how `mg.parallel.forward_backward` runs the parts of a batch.
- `run_tasks(run, tasks)`: two independent halves of BLAS-heavy work (an LSTM's two directions,
  a stack of matrix products) on two threads with one OpenBLAS thread each, when
  `two_threads()`; `run_on_sequences` deals sequences of unequal lengths into such halves.
"""

import contextlib
import functools
import os
import threading

import numpy as np

from . import _openblas

# ---------------------------------------------------------------------------------------
# Who may use other threads


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


# run_tasks gives each of two tasks its own thread and core when numpy's OpenBLAS thread
# count can be set (False: one task after the other, each BLAS call on OpenBLAS's threads).
use_two_threads = _openblas.openblas_threads is not None


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


# ---------------------------------------------------------------------------------------
# Tasks on threads

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
    _openblas.openblas_threads (not None).

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
    with _openblas.single_threaded_openblas():
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


def run_tasks(run, tasks):
    """[run(task) for task in tasks]; two tasks run at once (run_threads) when two_threads():
    for work that splits into two independent halves of many small BLAS calls (an LSTM's two
    directions, a stack of matrix products), each call too small to share between OpenBLAS's
    threads."""
    if len(tasks) == 2 and two_threads():
        return run_threads(run, tasks)
    return [run(task) for task in tasks]


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
