"""Embedding: a lookup table of vectors, one row per token id.

Forward picks rows; backward adds each output gradient into the row it came from
(a scatter-add kernel), instead of multiplying by a dense one-hot matrix.
"""

import numpy as np

import minigrad as mg
from minigrad import kernels
from minigrad.tensor import Function

from . import init
from .module import Module, Parameter


class EmbeddingLookup(Function):
    """out[..., :] = weight[ids[...], :]; d weight[r] = sum of d out over the positions where ids == r
    (zero for the padding row)."""

    @staticmethod
    def forward(ctx, weight, ids, padding_idx):
        ctx.ids, ctx.num_embeddings, ctx.padding_idx = ids, weight.shape[0], padding_idx
        return np.take(weight, ids, axis=0)

    @staticmethod
    def backward(ctx, grad):
        return kernels.embedding_backward(ctx.ids, grad, ctx.num_embeddings, ctx.padding_idx)


def _padding_index(padding_idx, num_embeddings):
    """torch's rule: padding_idx in [-num_embeddings, num_embeddings); negative counts from the end."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"padding_idx must be in [-{num_embeddings}, {num_embeddings}); got {padding_idx}")
    return int(padding_idx) % num_embeddings


def embedding(ids, weight, padding_idx=None):
    """Rows of weight (num_embeddings, D) picked by integer ids of any shape -> ids.shape + (D,).

    Like torch.nn.functional.embedding: the padding row gets no gradient.
    """
    ids = np.asarray(ids.data if isinstance(ids, mg.Tensor) else ids)
    if ids.dtype.kind not in "iu":
        raise TypeError(f"embedding: ids must be an integer tensor or array; got dtype {ids.dtype}")
    if weight.ndim != 2:
        raise ValueError(f"embedding: weight must have shape (num_embeddings, embedding_dim); got {weight.shape}")
    num_embeddings = weight.shape[0]
    if ids.size:
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= num_embeddings:
            raise IndexError(f"embedding: ids must be in [0, {num_embeddings}) (num_embeddings={num_embeddings}); "
                             f"got {low if low < 0 else high}")
    return EmbeddingLookup.apply(weight, ids=ids.astype(np.int64, copy=False),
                                 padding_idx=_padding_index(padding_idx, num_embeddings))


class Embedding(Module):
    """A table of num_embeddings vectors of size embedding_dim; ids (...) -> vectors (..., embedding_dim).

    Initialised N(0, 1) as torch.nn.Embedding, with the padding_idx row (if any) zeroed; that row
    gets zero gradient, so it stays zero under training. dtype: float32 unless given.
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, dtype=None):
        super().__init__()
        if num_embeddings < 1 or embedding_dim < 1:
            raise ValueError(f"Embedding: num_embeddings and embedding_dim must be >= 1; "
                             f"got {num_embeddings} and {embedding_dim}")
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.padding_idx = _padding_index(padding_idx, num_embeddings)
        dtype = np.dtype(np.float32 if dtype is None else dtype)
        self.weight = Parameter(np.empty((num_embeddings, embedding_dim), dtype=dtype))
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    def forward(self, ids):
        return embedding(ids, self.weight, self.padding_idx)

    def extra_repr(self):
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"


__all__ = ["Embedding"]
