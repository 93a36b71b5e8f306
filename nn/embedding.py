"""Embedding: a lookup table of vectors, one row per token id (the op: minigrad/ops/embedding.py)."""

import numpy as np

from minigrad.ops.embedding import embedding, padding_index

from . import init
from .module import Module, Parameter, parameter_dtype


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
        self.padding_idx = padding_index(padding_idx, num_embeddings)
        dtype = parameter_dtype(dtype)
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
