"""Distances and similarities between vectors, as torch's F.cosine_similarity, F.pairwise_distance,
F.pdist, torch.dist and torch.cdist. Each is a few engine ops; their gradients at zero vectors and
zero distances are the norm's (0 there, as torch's norm backward), so no NaN appears where the
inputs coincide.

    cosine_similarity(x1, x2, dim=1, eps=1e-8)  sum(x1 x2) / (max(|x1|, eps) max(|x2|, eps))
                                                along dim
    pairwise_distance(x1, x2, p=2, eps=1e-6)    |x1 - x2 + eps|_p along the last dim
    pdist(x, p=2)                               |x_i - x_j|_p for every pair of rows i < j
    dist(x, y, p=2)                             |x - y|_p over all elements (broadcast)
    cdist(x1, x2, p=2)                          |x1_i - x2_j|_p for every row i of x1, j of x2
"""

import numpy as np

from ..errors import ArgumentError, ShapeError
from .args import check_broadcast, check_float, check_same_dtype, float_tensor, normalize_dim
from .args import tensor_operand
from .arithmetic import add, div, mul, sub
from .indexing import index_select
from .piecewise import clamp
from .reductions import sum
from .shape import unsqueeze
from .statistics import norm
from .registry import op


def _float_pair(op, x1, x2):
    for name, x in (("x1", x1), ("x2", x2)):
        float_tensor(op, x, name, several=True)
    return check_broadcast(op, x1, x2)


@op(method=False, public=False)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """The cosine of the angle between x1 and x2 along dim (the two broadcast together); each
    norm is floored at eps, so a zero vector has similarity 0. Returns the broadcast shape
    without dim."""
    shape = _float_pair("cosine_similarity", x1, x2)
    dim = normalize_dim(dim, len(shape), "cosine_similarity")
    unit1 = div(x1, clamp(norm(x1, 2, dim, keepdim=True), min=eps))
    unit2 = div(x2, clamp(norm(x2, 2, dim, keepdim=True), min=eps))
    return sum(mul(unit1, unit2), dim)


@op(method=False, public=False)
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps along the last dim of their broadcast shape: (N, D) and
    (N, D) -> (N,), (D,) and (D,) -> (). eps keeps the distance of equal vectors off 0."""
    shape = _float_pair("pairwise_distance", x1, x2)
    if not shape:
        raise ShapeError("pairwise_distance: expected vectors (1-D or more); got two 0-d tensors")
    return norm(add(sub(x1, x2), eps), p, len(shape) - 1, keepdim=keepdim)


@op(method=False, public=False)
def pdist(input, p=2.0):
    """The p-norm distances between the rows of a 2-D input (N, M), for every pair i < j in
    row-major order: shape (N (N - 1) / 2,)."""
    float_tensor("pdist", input)
    if input.ndim != 2:
        raise ShapeError(
            f"pdist: expected a 2-D input (N rows of M values); got shape {input.shape}"
        )
    if not p >= 0:
        raise ArgumentError(f"pdist: p must be >= 0; got {p}")
    first, second = np.triu_indices(input.shape[0], k=1)
    return norm(sub(index_select(input, 0, first), index_select(input, 0, second)), p, 1)


@op
def dist(input, other, p=2):
    """The p-norm of input - other (broadcast), as torch.dist; a float input is needed."""
    return norm(input - other, p)


@op(method=False)
def cdist(x1, x2, p=2.0):
    """The p-norm distance of every row of x1 to every row of x2: (..., P, M) and (..., R, M) ->
    (..., P, R), batch dims broadcast. p >= 0; float tensors of one dtype."""
    x1, x2 = tensor_operand(x1), tensor_operand(x2)
    for name, x in (("x1", x1), ("x2", x2)):
        if x.ndim < 2:
            raise ShapeError(
                f"cdist: expects {name} with at least 2 dims (rows, features); got shape {x.shape}"
            )
        check_float("cdist", x, name, several=True)
    check_same_dtype("cdist", x1, x2)
    if x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(
            "cdist: x1 and x2 need the same number of features (last dim); "
            f"got shapes {x1.shape} and {x2.shape}"
        )
    if not isinstance(p, (int, float, np.number)) or isinstance(p, bool) or p < 0:
        raise ArgumentError(f"cdist: p must be a number >= 0; got {p!r}")
    try:
        np.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    except ValueError:
        raise ShapeError(
            f"cdist: the batch dims of shapes {x1.shape} and {x2.shape} cannot be broadcast"
        ) from None
    return norm(unsqueeze(x1, -2) - unsqueeze(x2, -3), p, dim=-1)


__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]
