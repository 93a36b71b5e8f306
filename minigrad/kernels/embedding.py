"""Embedding backward as a scatter-add: each looked-up row adds its gradient to its table row.

A one-hot matmul would touch num_embeddings x D per token; this touches D.

Serial on purpose. Measured (32768 tokens x 128 into an 80,000-row float32 table,
2-core dev machine): the scatter itself takes 1.5 ms serial and 1.8 ms split
over 2 threads by table-row ranges (each thread must still scan every index,
and the work is memory-latency bound), while zero-filling the fresh 41 MB
output (page faults) takes ~6 ms either way. np.add.at takes 72 ms. A parallel
variant would only add compile time.
"""

import numpy as np
from numba import njit

from ._checks import check_embedding_indices


@njit(cache=True)
def _scatter_add(indices, grad_rows, skip_row, out):
    """out[indices[n]] += grad_rows[n] for every n with indices[n] != skip_row.

    indices (N,) int64 within [0, len(out)) (checked by the caller: no bounds checks
    here); grad_rows (N, D); out (num_embeddings, D) of grad_rows' dtype.
    """
    for n in range(indices.shape[0]):
        row = indices[n]
        if row != skip_row:
            for d in range(out.shape[1]):
                out[row, d] += grad_rows[n, d]


def embedding_backward(indices, grad_out, num_embeddings, padding_idx=None):
    """Dense (num_embeddings, D) gradient by scatter-add (contract: reference.embedding_backward)."""
    grad_out = np.asarray(grad_out)
    if grad_out.dtype not in (np.float32, np.float64):
        raise TypeError(f"embedding_backward expects float32 or float64 grad_out, got {grad_out.dtype}")
    flat, padding_idx = check_embedding_indices(indices, grad_out, num_embeddings, padding_idx)
    grad_rows = np.ascontiguousarray(grad_out).reshape(flat.size, grad_out.shape[-1])
    out = np.zeros((num_embeddings, grad_out.shape[-1]), dtype=grad_out.dtype)
    skip_row = -1 if padding_idx is None else padding_idx
    _scatter_add(np.ascontiguousarray(flat), grad_rows, skip_row, out)
    return out
