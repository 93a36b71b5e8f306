"""Embedding lookup: rows of a table picked by integer ids (nn.Embedding, F.embedding). The
gradient is a scatter-add (kernels.embedding_backward), not a product with a one-hot matrix."""

import numpy as np

from .. import kernels
from ..errors import ArgumentError, ShapeError
from ..engine import Function
from .args import integer_array
from .piecewise import where
from .registry import op


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

    higher_order = "composite"

    @staticmethod
    def composite(ctx, weight):
        """weight[ids] as a recorded GetItem; the padding row's lookups take no gradient."""
        rows = weight[ctx.ids]
        if ctx.padding_idx is None:
            return rows
        return where((ctx.ids == ctx.padding_idx)[..., None], rows._data, rows)


def padding_index(padding_idx, num_embeddings):
    """torch's rule: padding_idx in [-num_embeddings, num_embeddings), negative counting from
    the end -> an index in [0, num_embeddings), or None."""
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ArgumentError(
            f"padding_idx must be in [-{num_embeddings}, {num_embeddings}); got {padding_idx}"
        )
    return int(padding_idx) % num_embeddings


@op(method=False, public=False)
def embedding(
    ids,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Rows of weight (num_embeddings, D) picked by integer ids of any shape -> ids.shape + (D,).

    As torch.nn.functional.embedding: the padding row gets no gradient; an id outside
    [0, num_embeddings) raises IndexError, whatever the kernel backend. With max_norm, every
    row looked up whose norm_type-norm is above max_norm is first scaled down to it, in place
    in weight (not recorded in the graph), as torch does. scale_grad_by_freq and sparse
    gradients are not supported.
    """
    if scale_grad_by_freq or sparse:
        raise ArgumentError("embedding: scale_grad_by_freq=True and sparse=True are not supported")
    ids = integer_array(ids, "embedding", "ids")
    if weight.ndim != 2:
        raise ShapeError(
            f"embedding: weight must have shape (num_embeddings, embedding_dim); got {weight.shape}"
        )
    num_embeddings = weight.shape[0]
    if ids.size:
        low, high = int(ids.min()), int(ids.max())
        if low < 0 or high >= num_embeddings:
            raise IndexError(
                f"embedding: ids must be in [0, {num_embeddings}) "
                f"(num_embeddings={num_embeddings}); got {low if low < 0 else high}"
            )
    padding_idx = padding_index(padding_idx, num_embeddings)
    if max_norm is not None:
        _renormalize_rows(weight, ids, max_norm, norm_type)
    return EmbeddingLookup.apply(weight, ids=ids, padding_idx=padding_idx)


def _renormalize_rows(weight, ids, max_norm, norm_type):
    """Scale the rows of weight that ids pick and whose norm is above max_norm to max_norm / (norm
    + 1e-7) times themselves, in place (torch's embedding_renorm_)."""
    for name, value in (("max_norm", max_norm), ("norm_type", norm_type)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float, np.integer, np.floating))
            or not value > 0
        ):
            raise ArgumentError(f"embedding: {name} must be a number > 0; got {value!r}")
    table = getattr(weight, "_data", weight)
    if not isinstance(table, np.ndarray) or table.dtype.kind != "f" or not table.flags.writeable:
        raise ArgumentError(
            "embedding: max_norm rescales rows of weight in place, so weight must be a writable "
            "float Tensor or array"
        )
    rows = np.unique(ids)
    norms = np.linalg.norm(table[rows], ord=float(norm_type), axis=1)
    over = norms > max_norm
    if over.any():
        rows, norms = rows[over], norms[over]
        table[rows] *= (max_norm / (norms + 1e-7)).astype(table.dtype)[:, None]
        bump = getattr(weight, "_bump_version", None)
        if bump is not None:
            bump()
