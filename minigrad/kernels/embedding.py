"""Embedding backward as a scatter-add (contract: reference.embedding_backward): each
looked-up row adds its gradient to its table row. The numpy twin's np.add.at does the same
with a slow per-element path. Serial on purpose: the work is memory-latency bound and a
parallel split measured slower (benchmarks/README-kernels.md, "Embedding backward").
"""

import numpy as np

from ._checks import check_embedding_indices, check_embedding_out
from ._numba_cache import cached_njit


@cached_njit(nogil=True)
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


def embedding_backward(indices, grad_out, num_embeddings, padding_idx=None, out=None):
    """Dense (num_embeddings, D) gradient by scatter-add, added into `out` when given
    (contract: reference.embedding_backward)."""
    grad_out = np.asarray(grad_out)
    if grad_out.dtype not in (np.float32, np.float64):
        raise TypeError(
            f"embedding_backward expects float32 or float64 grad_out, got {grad_out.dtype}"
        )
    flat, padding_idx = check_embedding_indices(indices, grad_out, num_embeddings, padding_idx)
    grad_rows = np.ascontiguousarray(grad_out).reshape(flat.size, grad_out.shape[-1])
    if out is None:
        out = np.zeros((num_embeddings, grad_out.shape[-1]), dtype=grad_out.dtype)
    else:
        check_embedding_out(out, num_embeddings, grad_out)
    skip_row = -1 if padding_idx is None else padding_idx
    _scatter_add(np.ascontiguousarray(flat), grad_rows, skip_row, out)
    return out
