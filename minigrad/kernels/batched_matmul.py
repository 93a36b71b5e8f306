"""Batched matmul: OpenBLAS for almost everything, a Numba loop for stacks of tiny matrices.

Measured on the 2-core dev machine (float32, median, ms; "numba" is a prange
i-k-j loop with fastmath, parallel over the batch):

    batch x (n, k, m)        np.matmul   numba     np/numba
    1 x (128, 512, 1024)       0.78       3.09       0.26
    1 x (128, 128, 128)        0.024      0.14       0.17
    1024 x (256, 32, 256)     40         69          0.59
    128 x (256, 32, 256)       5.4       14          0.39
    1024 x (16, 16, 16)        0.16       0.53       0.29
    4096 x (8, 8, 8)           0.30       0.59       0.51
    4096 x (1, 8, 8)           0.096      0.115      0.84
    4096 x (4, 8, 4)           0.26       0.17       1.5
    4096 x (4, 4, 4)           0.23       0.14       1.7
    4096 x (2, 2, 2)           0.43       0.11       4.0
    256 x (4, 4, 4)            0.015      0.052      0.29   (Python-side set-up dominates)

OpenBLAS's kernels (AVX-512, packed panels) beat a Numba loop by 2-6x as soon
as a matrix has more than a few dozen multiply-adds; only for stacks of tiny
matrices does numpy's per-matrix BLAS call cost more than the arithmetic. So
`matmul` uses the Numba loop when n * k * m <= SMALL_MATRIX_WORK, n, m >= 2
(BLAS does row vectors well) and the batch is large, and np.matmul (which calls BLAS per matrix, passing transposed views
as transpose flags, without copies) otherwise. Contracts: reference.py.

np.matmul runs a stack as one BLAS call per matrix, and OpenBLAS shares each call between its
threads, which wait for each other after every call. When another process holds one of the
2 cores, those waits go through the scheduler: 1024 x (256, 32, 256), the MHSA scores, took
475-830 ms instead of ~40 ms. So a stack with enough work is dealt out in two halves of its
first batch axis to two threads with one OpenBLAS thread each (_runtime.run_pair): 85-110 ms
under the same load. With the machine to itself the split is no slower (median ms, split vs
np.matmul): 1024 x (256, 32, 256) 30 vs 40, 1024 x (256, 256, 32) 33 vs 35,
1024 x (32, 256, 256) 28 vs 33, 128 x (256, 256, 256) 22 vs 22.5.
"""

import math

import numpy as np
from numba import njit, prange

from . import _runtime
from ._runtime import PARALLEL_MIN_SIZE, chunk_count

# Per-matrix multiply-adds at or below which the Numba loop wins (table above).
SMALL_MATRIX_WORK = 64
# The Numba path needs enough matrices to amortise its ~20 us of Python-side set-up.
SMALL_MATRIX_MIN_BATCH = 1024
# Stacks with at least this many multiply-adds (~0.1 ms of work) are split over two threads.
SPLIT_MIN_WORK = 1 << 22


@njit(cache=True)
def _small_matmul_body(a, b, a_index, b_index, out, start, stop):
    """_small_matmul for output matrices start..stop-1."""
    for p in range(start, stop):
        left, right, result = a[a_index[p]], b[b_index[p]], out[p]
        for i in range(result.shape[0]):
            for j in range(result.shape[1]):
                total = 0.0  # float64 accumulator (np.empty output may hold NaN garbage)
                for kk in range(left.shape[1]):
                    total += left[i, kk] * right[kk, j]
                result[i, j] = total


@njit(cache=True)
def _small_matmul(a, b, a_index, b_index, out):
    """out[p] = a[a_index[p]] @ b[b_index[p]] for every p.

    a (A, n, k), b (B, k, m), out (P, n, m), all C-contiguous; a_index, b_index (P,)
    int64 within [0, A) and [0, B) (they express the broadcasting of batch dims).
    """
    _small_matmul_body(a, b, a_index, b_index, out, 0, out.shape[0])


@njit(cache=True, parallel=True)
def _small_matmul_parallel(a, b, a_index, b_index, out, chunks):
    """Same contract as _small_matmul, parallel over the batch in `chunks` pieces."""
    for c in prange(chunks):
        _small_matmul_body(a, b, a_index, b_index, out,
                           c * out.shape[0] // chunks, (c + 1) * out.shape[0] // chunks)


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
            f"got shapes {a.shape} and {b.shape}")
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
    a3 = np.ascontiguousarray(a).reshape(-1, n, k)
    b3 = np.ascontiguousarray(b).reshape(-1, k, m)
    out = np.empty((int(np.prod(batch)), n, m), dtype=a.dtype)
    a_index, b_index = _batch_index(a.shape[:-2], batch), _batch_index(b.shape[:-2], batch)
    if out.size >= PARALLEL_MIN_SIZE:
        _small_matmul_parallel(a3, b3, a_index, b_index, out, chunk_count(out.shape[0]))
    else:
        _small_matmul(a3, b3, a_index, b_index, out)
    return out.reshape(batch + (n, m))


def _split_stack(a, b):
    """np.matmul(a, b) for a stack of products, its first batch axis dealt out in two halves
    to two threads with one OpenBLAS thread each (_runtime.run_pair); None when a @ b is not
    such a stack, or when OpenBLAS runs on one thread anyway."""
    if _runtime.openblas_threads is None or (a.ndim < 3 and b.ndim < 3):
        return None
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])  # raises on mismatched batch dims
    work = math.prod(batch) * a.shape[-2] * a.shape[-1] * b.shape[-1]
    if batch[0] < 2 or work < SPLIT_MIN_WORK or _runtime.openblas_threads[1]() < 2:
        return None
    out = np.empty(batch + (a.shape[-2], b.shape[-1]), dtype=a.dtype)
    half = batch[0] // 2

    def part(rows):  # an operand without the first batch axis, or with size 1 there, is shared
        pick = lambda x: x[rows] if x.ndim - 2 == len(batch) and x.shape[0] > 1 else x  # noqa: E731
        np.matmul(pick(a), pick(b), out=out[rows])

    _runtime.run_pair(part, [slice(0, half), slice(half, None)])
    return out


def _multiply(a, b):
    batch = _small_batch(a, b)
    if batch is not None:
        return _small(a, b, batch)
    out = _split_stack(a, b)
    return np.matmul(a, b) if out is None else out


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
