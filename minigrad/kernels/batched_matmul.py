"""Batched matmul: OpenBLAS for almost everything, a Numba loop for stacks of tiny matrices.

Why the Numba loop exists: for a stack of tiny matrices (<= SMALL_MATRIX_WORK multiply-adds
each, n, m >= 2, at least SMALL_MATRIX_MIN_BATCH of them) numpy's per-matrix BLAS call costs
more than the arithmetic; for anything bigger OpenBLAS's packed AVX-512 kernels beat a Numba
loop by 2-6x, so `matmul` calls np.matmul (which passes transposed views as transpose flags,
without copies). A product with enough work is dealt out in two halves (of a stack's first
batch axis, else of the longer side of the result) to two threads with one OpenBLAS thread
each (_threads.run_tasks): OpenBLAS's own two threads wait for each other, and when another
process holds a core that made the MHSA scores 5-20x slower and a projection's weight
gradient, (256, 32768) @ (32768, 256), 13x slower. Measurements: benchmarks/README-kernels.md
("Matrix products").
Contracts: reference/batched_matmul.py.
"""

import math

import numpy as np
from numba import prange

from . import _buffers, _numba_threads, _openblas, _threads
from ._numba_cache import cached_njit

# Per-matrix multiply-adds at or below which the Numba loop wins (benchmarks/README-kernels.md).
SMALL_MATRIX_WORK = 64
# The Numba path needs enough matrices to amortise its ~20 us of Python-side set-up.
SMALL_MATRIX_MIN_BATCH = 1024
# Stacks with at least this many multiply-adds (~0.1 ms of work) are split over two threads.
SPLIT_MIN_WORK = 1 << 22


@cached_njit(nogil=True)
def _small_matmul_rows(a, b, a_index, b_index, out, start, stop):
    """out[p] = a[a_index[p]] @ b[b_index[p]] for p in start..stop-1.

    a (A, n, k), b (B, k, m), out (P, n, m), all C-contiguous; a_index, b_index (P,)
    int64 within [0, A) and [0, B) (they express the broadcasting of batch dims).
    """
    for p in range(start, stop):
        left, right, result = a[a_index[p]], b[b_index[p]], out[p]
        for i in range(result.shape[0]):
            for j in range(result.shape[1]):
                total = 0.0  # float64 accumulator (np.empty output may hold NaN garbage)
                for kk in range(left.shape[1]):
                    total += left[i, kk] * right[kk, j]
                result[i, j] = total


@cached_njit(parallel=True)
def _small_matmul_parallel(a, b, a_index, b_index, out, bounds):
    """_small_matmul_rows over the chunks bounds[c]:bounds[c + 1] on Numba's thread pool."""
    for c in prange(bounds.shape[0] - 1):
        _small_matmul_rows(a, b, a_index, b_index, out, bounds[c], bounds[c + 1])


def _operands(a, b, name):
    """a, b as float arrays of one dtype, checked to be (..., n, k) and (..., k, m)."""
    if not (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype == b.dtype):
        a, b = np.asarray(a), np.asarray(b)
        dtype = np.result_type(a.dtype, b.dtype)
        a, b = a.astype(dtype, copy=False), b.astype(dtype, copy=False)
    if a.dtype != np.float32 and a.dtype != np.float64:
        raise TypeError(f"{name} expects float32 or float64 arrays, got {a.dtype} and {b.dtype}")
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        raise ValueError(
            f"{name} expects a (..., n, k) and b (..., k, m) with ndim >= 2, "
            f"got shapes {a.shape} and {b.shape}"
        )
    return a, b


def _small_batch(a, b):
    """The broadcast batch shape if a @ b should take the Numba loop, else None."""
    n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
    if n * k * m > SMALL_MATRIX_WORK or min(n, m) < 2 or (a.ndim == 2 and b.ndim == 2):
        return None
    if b.ndim == 2 or a.shape[:-2] == b.shape[:-2]:
        batch = a.shape[:-2]
    elif a.ndim == 2:
        batch = b.shape[:-2]
    else:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])  # raises on mismatched batch dims
    return batch if math.prod(batch) >= SMALL_MATRIX_MIN_BATCH else None


def _batch_index(batch_shape, out_batch):
    """Index of each output batch entry in an operand with batch_shape (broadcasting)."""
    own = np.arange(int(np.prod(batch_shape)), dtype=np.int64).reshape(batch_shape)
    return np.ascontiguousarray(np.broadcast_to(own, out_batch)).reshape(-1)


def _small(a, b, batch):
    n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = np.ascontiguousarray(a).reshape(math.prod(a.shape[:-2]), n, k)  # not -1: k may be 0
    b3 = np.ascontiguousarray(b).reshape(math.prod(b.shape[:-2]), k, m)
    out = _buffers.empty((math.prod(batch), n, m), a.dtype)
    a_index, b_index = _batch_index(a.shape[:-2], batch), _batch_index(b.shape[:-2], batch)
    if out.size:
        _numba_threads.launch(
            _small_matmul_rows,
            _small_matmul_parallel,
            (a3, b3, a_index, b_index, out),
            out.shape[0],
            out.size,
        )
    return out.reshape(batch + (n, m))


def _worth_two_threads(work):
    """True when `work` multiply-adds are enough to deal out to two threads with one OpenBLAS
    thread each, and OpenBLAS's thread count can be set and is not one anyway (the user's
    count: inside run_threads it is one for the time being)."""
    return (
        _openblas.openblas_threads is not None
        and _threads.two_threads()
        and work >= SPLIT_MIN_WORK
        and _openblas.openblas_thread_budget() >= 2
    )


def _split(a, b):
    """np.matmul(a, b) dealt out in two halves to two threads with one OpenBLAS thread each
    (_threads.run_tasks): a stack of products by its first batch axis, one product by the
    longer side of its result. None unless _worth_two_threads."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])  # raises on mismatched batch dims
    rows, columns = a.shape[-2], b.shape[-1]
    if not _worth_two_threads(math.prod(batch) * rows * a.shape[-1] * columns):
        return None
    out = _buffers.empty(batch + (rows, columns), a.dtype)
    if batch and batch[0] > 1:
        # an operand without the first batch axis, or with size 1 there, is shared
        def pick(x, part):
            return x[part] if x.ndim - 2 == len(batch) and x.shape[0] > 1 else x

        def multiply(part):
            np.matmul(pick(a, part), pick(b, part), out=out[part])

        size = batch[0]
    elif rows >= columns:

        def multiply(part):
            np.matmul(a[..., part, :], b, out=out[..., part, :])

        size = rows
    else:

        def multiply(part):
            np.matmul(a, b[..., part], out=out[..., part])

        size = columns
    if size < 2:
        return None
    _threads.run_tasks(multiply, [slice(0, size // 2), slice(size // 2, None)])
    return out


def _multiply(a, b):
    batch = _small_batch(a, b)
    if batch is not None:
        return _small(a, b, batch)
    out = _split(a, b)
    if out is None:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
        out = np.matmul(a, b, out=_buffers.empty(shape, a.dtype))
    return out


def matmul(a, b):
    """a (..., n, k) @ b (..., k, m) -> (broadcast batch..., n, m), as np.matmul."""
    return _multiply(*_operands(a, b, "matmul"))


def _swap_last_two(array, name):
    array = np.asarray(array)
    if array.ndim < 2:
        raise ValueError(f"{name} expects arrays with ndim >= 2, got shape {array.shape}")
    return np.swapaxes(array, -1, -2)


def matmul_grad_a(grad, b):
    """grad (..., n, m) @ swapaxes(b, -1, -2) -> (broadcast batch..., n, k)."""
    return _multiply(*_operands(grad, _swap_last_two(b, "matmul_grad_a"), "matmul_grad_a"))


def matmul_grad_b(a, grad):
    """swapaxes(a, -1, -2) @ grad (..., n, m) -> (broadcast batch..., k, m)."""
    return _multiply(*_operands(_swap_last_two(a, "matmul_grad_b"), grad, "matmul_grad_b"))


def matmul_grads(a, b, grad):
    """Both gradients of a (n, k) @ b (k, m): grad @ b^T and a^T @ grad (reference.matmul_grads).

    The two products have the same work; when it is enough they run at once on two threads
    with one OpenBLAS thread each, every product whole: one hand-over to the other thread
    instead of two, and no product cut in halves (the backward pass of a (4096, 128) @ (128, 128)
    projection took 1.9 ms instead of 2.3)."""
    a, b = _operands(a, b, "matmul_grads")
    grad = np.asarray(grad, dtype=a.dtype)
    if a.ndim != 2 or b.ndim != 2 or grad.shape != (a.shape[0], b.shape[1]):
        raise ValueError(
            f"matmul_grads expects a (n, k), b (k, m) and grad (n, m); got shapes {a.shape}, "
            f"{b.shape}, {grad.shape}"
        )
    grad_a, grad_b = _buffers.empty(a.shape, a.dtype), _buffers.empty(b.shape, a.dtype)
    _at_once(
        [lambda: np.matmul(grad, b.T, out=grad_a), lambda: np.matmul(a.T, grad, out=grad_b)],
        a.size * b.shape[1],
    )
    return grad_a, grad_b


def _at_once(tasks, work):
    """Call each of `tasks` (functions of no argument): two at once on two threads with one
    OpenBLAS thread each when `work` multiply-adds (each) are _worth_two_threads, else one
    after the other."""
    if len(tasks) == 2 and _worth_two_threads(work):
        _threads.run_threads(lambda task: task(), tasks)
    else:
        for task in tasks:
            task()


# ---------------------------------------------------------------- a linear layer


def _linear_operands(x, weight, bias, name):
    """x (n, k), weight (m, k), bias (m,) or None, checked: float arrays of one dtype."""
    x, weight = np.asarray(x), np.asarray(weight)
    if x.dtype != weight.dtype or x.dtype not in (np.float32, np.float64):
        raise TypeError(
            f"{name} expects x and weight of one float dtype (float32 or float64); "
            f"got {x.dtype} and {weight.dtype}"
        )
    if x.ndim != 2 or weight.ndim != 2 or x.shape[1] != weight.shape[1]:
        raise ValueError(
            f"{name} expects x (n, k) and weight (m, k); got shapes {x.shape} and {weight.shape}"
        )
    if bias is not None:
        bias = np.asarray(bias)
        if bias.shape != (weight.shape[0],) or bias.dtype != x.dtype:
            raise ValueError(
                f"{name} expects bias of shape ({weight.shape[0]},) and dtype {x.dtype}; "
                f"got {bias.shape} {bias.dtype}"
            )
    return x, weight, bias


def linear_forward(x, weight, bias=None):
    """x (n, k) @ weight (m, k)^T + bias (m,) -> (n, m) (contract: reference.linear_forward).

    Dealt out in two halves of the rows (of the columns when there are more of them) when
    _worth_two_threads; each thread adds the bias to the part it has just computed, in place.
    A separate `y + bias` made a fresh (n, m) array and passed over it again: 1.6 ms for the
    (4096, 512) output of the language model's feed-forward expansion, against 0.4 in place."""
    x, weight, bias = _linear_operands(x, weight, bias, "linear_forward")
    rows, columns = x.shape[0], weight.shape[0]
    out = _buffers.empty((rows, columns), x.dtype)

    def multiply(part):
        if rows >= columns:
            np.matmul(x[part], weight.T, out=out[part])
            if bias is not None:
                out[part] += bias
        else:
            np.matmul(x, weight[part].T, out=out[:, part])
            if bias is not None:
                out[:, part] += bias[part]

    size = max(rows, columns)
    if size >= 2 and _worth_two_threads(x.size * columns):
        _threads.run_tasks(multiply, [slice(0, size // 2), slice(size // 2, size)])
    else:
        multiply(slice(0, size))
    return out


def linear_backward(x, weight, grad, needs=(True, True, True)):
    """(grad_x, grad_weight, grad_bias) of linear_forward (contract: reference.linear_backward).

    grad_x = grad @ weight and grad_weight = grad^T @ x (C-contiguous, weight's layout) have the
    same work: when it is enough they run at once on two threads, each whole, and grad_bias
    (the sum of grad's rows) is taken by the thread that makes grad_weight."""
    x, weight, _ = _linear_operands(x, weight, None, "linear_backward")
    grad = np.asarray(grad, dtype=x.dtype)
    if grad.shape != (x.shape[0], weight.shape[0]):
        raise ValueError(
            f"linear_backward expects grad of shape {(x.shape[0], weight.shape[0])}; "
            f"got {grad.shape}"
        )
    results = [None, None, None]

    def input_grad():
        results[0] = np.matmul(grad, weight, out=_buffers.empty(x.shape, x.dtype))

    def parameter_grads():
        if needs[1]:
            results[1] = np.matmul(grad.T, x, out=_buffers.empty(weight.shape, x.dtype))
        if needs[2]:
            results[2] = grad.sum(axis=0)

    _at_once(
        [
            task
            for task, needed in ((input_grad, needs[0]), (parameter_grads, needs[1] or needs[2]))
            if needed
        ],
        x.size * weight.shape[0],
    )
    return tuple(results)
