"""torch.nn.modules.sparse's Embedding: a lookup table of vectors, one row per token id (the op:
minigrad/ops/lookup.py)."""

import numpy as np

from minigrad.ops import padding_index
from minigrad.ops import embedding

from . import init
from .module import Module, Parameter, parameter_dtype


class Embedding(Module):
    """A table of num_embeddings vectors of size embedding_dim; ids (...) -> vectors (...,
    embedding_dim).

    Initialised N(0, 1) as torch.nn.Embedding, with the padding_idx row (if any) zeroed; that row
    gets zero gradient, so it stays zero under training. max_norm: each row looked up is first
    scaled down to that norm (norm_type) if it is above it, in place, as torch's. dtype: float32
    unless given (set_default_dtype). Embedding.from_pretrained(table) starts from given vectors.
    """

    def __init__(
        self,
        num_embeddings,
        embedding_dim,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if num_embeddings < 1 or embedding_dim < 1:
            raise ValueError(
                f"Embedding: num_embeddings and embedding_dim must be >= 1; "
                f"got {num_embeddings} and {embedding_dim}"
            )
        if scale_grad_by_freq or sparse:
            raise ValueError("Embedding: scale_grad_by_freq=True and sparse=True are not supported")
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.padding_idx = padding_index(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        dtype = parameter_dtype(dtype, device, "Embedding")
        self.weight = Parameter(np.empty((num_embeddings, embedding_dim), dtype=dtype))
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze=True,
        padding_idx=None,
        max_norm=None,
        norm_type=2.0,
        scale_grad_by_freq=False,
        sparse=False,
    ):
        """An Embedding holding a copy of `embeddings` (num_embeddings, embedding_dim), a float
        Tensor or array (word vectors trained elsewhere), as torch's: frozen (requires_grad=False)
        unless freeze=False; the padding_idx row is kept as given. (torch's shares the given
        tensor's memory; this one copies it.)"""
        table = getattr(embeddings, "_data", embeddings)
        if not isinstance(table, np.ndarray) or table.ndim != 2 or table.dtype.kind != "f":
            shape = getattr(table, "shape", None)
            raise ValueError(
                f"Embedding.from_pretrained: embeddings must be a 2-D float Tensor or array "
                f"(num_embeddings, embedding_dim); got {type(embeddings).__name__} of shape "
                f"{shape} and dtype {getattr(table, 'dtype', None)}"
            )
        module = cls(
            table.shape[0],
            table.shape[1],
            padding_idx,
            max_norm,
            norm_type,
            scale_grad_by_freq,
            sparse,
            dtype=table.dtype,
        )
        module.weight._data[...] = table
        module.weight.requires_grad_(not freeze)
        return module

    def forward(self, ids):
        return embedding(ids, self.weight, self.padding_idx, self.max_norm, self.norm_type)

    def extra_repr(self):
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        norm = "" if self.max_norm is None else f", max_norm={self.max_norm}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}{norm}"


__all__ = ["Embedding"]
