"""Twin of kernels/embedding.py: an embedding lookup's gradient, by scatter-add."""

import numpy as np

from .._checks import check_embedding_indices, check_embedding_out


def embedding_backward(indices, grad_out, num_embeddings, padding_idx=None, out=None):
    """Dense (num_embeddings, D) gradient of an embedding lookup, by scatter-add.

    indices int, any shape; grad_out indices.shape + (D,). Repeated indices add up;
    the row of padding_idx (negative counts from the end) gets nothing. out: a
    (num_embeddings, D) array of grad_out's dtype to add into and return, instead of a new
    zeroed one.
    """
    flat, padding_idx = check_embedding_indices(indices, grad_out, num_embeddings, padding_idx)
    if out is None:
        out = np.zeros((num_embeddings, grad_out.shape[-1]), dtype=grad_out.dtype)
    else:
        check_embedding_out(out, num_embeddings, grad_out)
    rows = grad_out.reshape(flat.size, grad_out.shape[-1])
    if padding_idx is not None:
        keep = flat != padding_idx
        flat, rows = flat[keep], rows[keep]
    np.add.at(out, flat, rows)
    return out
