"""Embedding lookup: rows of a table picked by integer ids (nn.Embedding, F.embedding). The
gradient is a scatter-add (kernels.embedding_backward), not a product with a one-hot matrix."""

import numpy as np

from .. import kernels
from ..errors import ArgumentError, ShapeError
from ..tensor import Function
from .args import integer_array


class EmbeddingLookup(Function):
    """out[..., :] = weight[ids[...], :]; d weight[r] = sum of d out over the positions where
    ids == r (zero for the padding row)."""

    @staticmethod
    def forward(ctx, weight, ids, padding_idx):
        ctx.ids, ctx.num_embeddings, ctx.padding_idx = ids, weight.shape[0], padding_idx
        return np.take(weight, ids, axis=0)

    @staticmethod
    def backward(ctx, grad):
        return kernels.embedding_backward(ctx.ids, grad, ctx.num_embeddings, ctx.padding_idx)


def padding_index(padding_idx, num_embeddings):
    """torch's rule: padding_idx in [-num_embeddings, num_embeddings), negative counting from
    the end -> an index in [0, num_embeddings), or None."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ArgumentError(f"padding_idx must be in [-{num_embeddings}, {num_embeddings}); got {padding_idx}")
    return int(padding_idx) % num_embeddings


def embedding(ids, weight, padding_idx=None):
    """Rows of weight (num_embeddings, D) picked by integer ids of any shape -> ids.shape + (D,).

    As torch.nn.functional.embedding: the padding row gets no gradient; an id outside
    [0, num_embeddings) raises IndexError, whatever the kernel backend.
    """
    ids = integer_array(ids, "embedding", "ids")
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must have shape (num_embeddings, embedding_dim); got {weight.shape}")
    num_embeddings = weight.shape[0]
    if ids.size:
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= num_embeddings:
            raise IndexError(f"embedding: ids must be in [0, {num_embeddings}) (num_embeddings={num_embeddings}); "
                             f"got {low if low < 0 else high}")
    return EmbeddingLookup.apply(weight, ids=ids, padding_idx=padding_index(padding_idx, num_embeddings))
