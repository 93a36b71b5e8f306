"""Embedding backward as a scatter-add: each looked-up row adds its gradient to its table row.

A one-hot matmul would touch num_embeddings x D per token; this touches D. Rows
that repeat must add up, so the parallel version splits the D columns (not the
tokens) between threads: no two threads ever write the same element.
"""

import numba
import numpy as np
from numba import njit, prange

from ._checks import check_embedding_indices
from ._runtime import PARALLEL_MIN_SIZE

# Each thread gets at least this many adjacent columns (a 64-byte cache line of
# float32), so threads never share a cache line of the output.
MIN_COLUMNS_PER_THREAD = 16


@njit(cache=True)
def _scatter_add(indices, grad_rows, skip_row, out, column_start, column_stop):
    """out[indices[n], d] += grad_rows[n, d] for all n with indices[n] != skip_row and
    column_start <= d < column_stop. indices (N,) int64 within [0, len(out)); grad_rows
    (N, D); out (num_embeddings, D). Writes only those columns of out."""
    for n in range(indices.shape[0]):
        row = indices[n]
        if row != skip_row:
            for d in range(column_start, column_stop):
                out[row, d] += grad_rows[n, d]


@njit(cache=True, parallel=True)
def _scatter_add_parallel(indices, grad_rows, skip_row, out, chunks):
    """_scatter_add over all columns, split into `chunks` column ranges, one per task."""
    columns = out.shape[1]
    for c in prange(chunks):
        _scatter_add(indices, grad_rows, skip_row, out,
                     c * columns // chunks, (c + 1) * columns // chunks)


def embedding_backward(indices, grad_out, num_embeddings, padding_idx=None):
    """Dense (num_embeddings, D) gradient by scatter-add (contract: reference.embedding_backward)."""
    grad_out = np.asarray(grad_out)
    if grad_out.dtype not in (np.float32, np.float64):
        raise TypeError(f"embedding_backward expects float32 or float64 grad_out, got {grad_out.dtype}")
    flat, padding_idx = check_embedding_indices(indices, grad_out, num_embeddings, padding_idx)
    columns = grad_out.shape[-1]
    grad_rows = np.ascontiguousarray(grad_out).reshape(flat.size, columns)
    flat = np.ascontiguousarray(flat)
    out = np.zeros((num_embeddings, columns), dtype=grad_out.dtype)
    skip_row = -1 if padding_idx is None else padding_idx
    chunks = min(numba.get_num_threads(), columns // MIN_COLUMNS_PER_THREAD)
    if grad_rows.size >= PARALLEL_MIN_SIZE and chunks >= 2:
        _scatter_add_parallel(flat, grad_rows, skip_row, out, chunks)
    else:
        _scatter_add(flat, grad_rows, skip_row, out, 0, columns)
    return out
