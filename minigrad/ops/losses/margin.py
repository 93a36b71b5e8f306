"""Margin and embedding losses with PyTorch's formulas, shapes and reductions, each a few engine
ops (their gradients are the chain rule through those ops). A hinge max(0, z) is `clamp(z, min=0)`
where torch uses clamp_min (its gradient passes at z = 0), and a masked z where torch's kernel
tests z > 0 (no gradient at z = 0): the edge values follow torch's either way.

    margin_ranking_loss(x1, x2, y, margin=0)      max(0, -y (x1 - x2) + margin)
    hinge_embedding_loss(x, y, margin=1)          x where y = 1, max(0, margin - x) where y = -1
    cosine_embedding_loss(x1, x2, y, margin=0)    1 - cos(x1, x2) where y = 1,
                                                  max(0, cos - margin) where y = -1
    triplet_margin_loss(a, p, n, margin=1, p=2)   max(0, margin + d(a, p) - d(a, n)),
                                                  d the pairwise distance
    triplet_margin_with_distance_loss             the same with any distance function
    soft_margin_loss(x, y)                        log(1 + exp(-y x)), computed without overflow
    multilabel_soft_margin_loss(x, y, weight)     -(y log sigmoid(x) + (1 - y) log sigmoid(-x)),
                                                  mean over classes
    multi_margin_loss(x, y, p=1, margin=1)        sum over j != y of
                                                  max(0, margin - x[y] + x[j])^p / C
    multilabel_margin_loss(x, y)                  sum over targets j and non-targets k of
                                                  max(0, 1 - (x[j] - x[k])) / C

Arguments after the margin (or weight) are keyword-only where torch's deprecated size_average
and reduce sit in between, as in minigrad/ops/losses/__init__.py. The reduction is applied
last: 'mean'
of the per-sample losses, 'sum', or 'none'.
"""

import math

import numpy as np

from ...errors import ArgumentError, IndexRangeError, ShapeError
from ...engine import Tensor
from ..activations import softplus
from ..args import check_broadcast, float_tensor, integer_array
from ..arithmetic import add, mul, sub
from ..distance import pairwise_distance
from ..indexing import gather
from ..piecewise import clamp, masked_fill, minimum, where
from ..reductions import sum
from ..registry import op
from ..arithmetic import neg
from .reduction import as_tensor, check_reduction, constant, reduce, same_shape_target


def _hinge(z):
    """max(0, z) with torch's clamp_min gradient (1 at z = 0)."""
    return clamp(z, min=0.0)


def _positive_part(z):
    """max(0, z) with torch's kernels' gradient (0 at z = 0): z where z > 0, else 0."""
    return masked_fill(z, ~(z._data > 0), 0.0)


# -- pairs and triplets of embeddings -----------------------------------------------------------


@op(method=False, public=False)
def margin_ranking_loss(input1, input2, target, margin=0.0, *, reduction="mean"):
    """max(0, -target * (input1 - input2) + margin): target 1 asks input1 to rank above input2,
    -1 below. The three have the same number of dims and broadcast together."""
    op = "margin_ranking_loss"
    check_reduction(reduction)
    input1, input2, target = float_tensor(op, input1), float_tensor(op, input2), as_tensor(target)
    if not input1.ndim == input2.ndim == target.ndim:
        raise ShapeError(
            f"{op}: expected input1, input2 and target with the same number of dims; "
            f"got shapes {input1.shape}, {input2.shape} and {target.shape}"
        )
    check_broadcast(op, input1, input2, target)
    return reduce(_hinge(add(mul(neg(target), sub(input1, input2)), margin)), reduction)


@op(method=False, public=False)
def hinge_embedding_loss(input, target, margin=1.0, *, reduction="mean"):
    """input where target is 1, max(0, margin - input) where target is -1 (input is a distance;
    a target of another value takes both terms, as torch's). input and target broadcast."""
    op = "hinge_embedding_loss"
    check_reduction(reduction)
    input, target = float_tensor(op, input), as_tensor(target)
    check_broadcast(op, input, target)
    margin_term = where(target._data != 1, _hinge(sub(margin, input)), 0.0)
    return reduce(add(margin_term, where(target._data != -1, input, 0.0)), reduction)


# torch's 1e-12 is a C float: 9.99999996e-13, as float64 too
_COSINE_FLOOR = float(np.float32(1e-12))


@op(method=False, public=False)
def cosine_embedding_loss(input1, input2, target, margin=0.0, *, reduction="mean"):
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where target is -1 (0 for
    other targets). Inputs (N, D) with target (N,), or (D,) with a 0-d target. The cosine is
    sum(x1 x2) / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12)), torch's floor for zero vectors."""
    op = "cosine_embedding_loss"
    check_reduction(reduction)
    input1, input2, target = float_tensor(op, input1), float_tensor(op, input2), as_tensor(target)
    if target.ndim > 1:
        raise ShapeError(
            f"{op}: expected a 0-d or 1-D target (one +-1 per pair); got shape {target.shape}"
        )
    if not input1.ndim == input2.ndim == target.ndim + 1:
        raise ShapeError(
            f"{op}: a {target.ndim}-D target expects {target.ndim + 1}-D inputs; "
            f"got input1 of shape {input1.shape} and input2 of shape {input2.shape}"
        )
    dim = target.ndim
    check_broadcast(op, input1, input2)
    squared1 = add(sum(mul(input1, input1), dim), _COSINE_FLOOR)
    squared2 = add(sum(mul(input2, input2), dim), _COSINE_FLOOR)
    cosine = mul(sum(mul(input1, input2), dim), (squared1 * squared2) ** -0.5)
    if cosine.shape != target.shape:
        raise ShapeError(
            f"{op}: expected a target of shape {cosine.shape} (one per pair of inputs of shapes "
            f"{input1.shape} and {input2.shape}); got {target.shape}"
        )
    similar = where(target._data == 1, sub(1.0, cosine), 0.0)
    dissimilar = where(target._data == -1, _hinge(sub(cosine, margin)), 0.0)
    return reduce(add(similar, dissimilar), reduction)


def _triplet_check(op, anchor, positive, negative, margin):
    for name, x in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}: expected {name} to be a Tensor; got {type(x).__name__}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ShapeError(
            f"{op}: expected anchor, positive and negative with the same number of dims; "
            f"got shapes {anchor.shape}, {positive.shape} and {negative.shape}"
        )
    if not margin > 0:
        raise ArgumentError(f"{op}: margin must be greater than 0; got {margin}")


@op(method=False, public=False)
def triplet_margin_with_distance_loss(
    anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False, reduction="mean"
):
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d = distance_function
    (pairwise_distance by default). swap=True takes min(d(a, n), d(p, n)) as the negative's
    distance (Balntas et al., 2016)."""
    op = "triplet_margin_with_distance_loss"
    check_reduction(reduction)
    _triplet_check(op, anchor, positive, negative, margin)
    distance = pairwise_distance if distance_function is None else distance_function
    to_negative = distance(anchor, negative)
    if swap:
        to_negative = minimum(to_negative, distance(positive, negative))
    return reduce(_hinge(sub(add(distance(anchor, positive), margin), to_negative)), reduction)


@op(method=False, public=False)
def triplet_margin_loss(
    anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, *, reduction="mean"
):
    """triplet_margin_with_distance_loss with the p-norm distance pairwise_distance(x, y, p, eps):
    anchor, positive and negative (N, D) or (D,)."""
    op = "triplet_margin_loss"
    check_reduction(reduction)
    _triplet_check(op, anchor, positive, negative, margin)
    return triplet_margin_with_distance_loss(
        anchor,
        positive,
        negative,
        distance_function=lambda x, y: pairwise_distance(x, y, p, eps),
        margin=margin,
        swap=swap,
        reduction=reduction,
    )


# -- scores against +-1 or 0/1 labels -----------------------------------------------------------


def _log_one_plus_exp(z):
    """log(1 + e^z) for every z (torch's soft margin overflows to inf where e^z does)."""
    return softplus(z, threshold=math.inf)


@op(method=False, public=False)
def soft_margin_loss(input, target, *, reduction="mean"):
    """log(1 + exp(-target * input)) elementwise, target +-1, of input's shape."""
    op = "soft_margin_loss"
    check_reduction(reduction)
    input, target = same_shape_target(op, float_tensor(op, input), target, broadcast=False)
    return reduce(_log_one_plus_exp(neg(mul(target, input))), reduction)


@op(method=False, public=False)
def multilabel_soft_margin_loss(input, target, weight=None, *, reduction="mean"):
    """Binary cross-entropy of sigmoid(input) against 0/1 labels of input's shape, (C,) or (N, C),
    weighted per class by weight (C,), averaged over the classes: one loss per sample."""
    op = "multilabel_soft_margin_loss"
    check_reduction(reduction)
    input, target = same_shape_target(op, float_tensor(op, input), target, broadcast=False)
    if input.ndim == 0:
        raise ShapeError(f"{op}: expected input of shape (C,) or (N, C); got a 0-d tensor")
    # -(y log sigmoid(x) + (1 - y) log sigmoid(-x)) = y log(1 + e^-x) + (1 - y) log(1 + e^x)
    loss = add(
        mul(target, _log_one_plus_exp(neg(input))), mul(sub(1.0, target), _log_one_plus_exp(input))
    )
    weight = constant(op, "weight", weight, input.dtype)
    if weight is not None:
        check_broadcast(op, loss, weight)
        loss = mul(loss, Tensor._wrap(weight))
    classes = input.shape[-1]
    return reduce(sum(loss, -1) / classes, reduction)


# -- class scores against class ids -------------------------------------------------------------


def _class_scores(op, input):
    """input (C,) or (N, C) with C > 0 -> (N, C) (one row for the unbatched form)."""
    float_tensor(op, input)
    if input.ndim not in (1, 2) or input.shape[-1] == 0:
        raise ShapeError(
            f"{op}: expected input of shape (C,) or (N, C) with C > 0 classes; got {input.shape}"
        )
    return input.reshape(1, -1) if input.ndim == 1 else input


def _unbatched(loss, input, reduction, shape=()):
    """The per-sample losses of an unbatched input in `shape` (torch's: the target's)."""
    return loss.reshape(shape) if input.ndim == 1 and reduction == "none" else loss


@op(method=False, public=False)
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, *, reduction="mean"):
    """Multi-class hinge loss: for each sample, sum over the classes j != y of
    max(0, margin - x[y] + x[j])^p (times weight[y]), divided by the number of classes C.
    input (C,) or (N, C); target class ids () or (N,); p 1 or 2; weight (C,)."""
    op = "multi_margin_loss"
    check_reduction(reduction)
    if p not in (1, 2):
        raise ArgumentError(f"{op}: p must be 1 or 2; got {p}")
    scores = _class_scores(op, input)
    rows, classes = scores.shape
    target = integer_array(target, op, "target")
    target_shape = target.shape
    if target.ndim > 1 or target.size != rows:
        raise ShapeError(
            f"{op}: expected a target of {rows} class ids "
            f"(one per row of input of shape {input.shape}); got shape {target.shape}"
        )
    target = target.reshape(rows)
    if target.size and (target.min() < 0 or target.max() >= classes):
        raise IndexRangeError(
            f"{op}: target values must be class ids in [0, {classes}); "
            f"got values in [{target.min()}, {target.max()}]"
        )
    weight = constant(op, "weight", weight, scores.dtype)
    if weight is not None and weight.shape != (classes,):
        raise ShapeError(
            f"{op}: expected weight of shape ({classes},), one per class; got {weight.shape}"
        )
    right = gather(scores, 1, target[:, None])
    margins = _positive_part(add(sub(margin, right), scores))
    # the right class is no violation
    margins = masked_fill(margins, np.arange(classes) == target[:, None], 0.0)
    if p == 2:
        margins = mul(margins, margins)
    if weight is not None:
        margins = mul(margins, Tensor._wrap(weight[target][:, None]))
    return _unbatched(reduce(sum(margins, 1) / classes, reduction), input, reduction, target_shape)


@op(method=False, public=False)
def multilabel_margin_loss(input, target, *, reduction="mean"):
    """Multi-label hinge loss: for each sample, sum over its target classes j and the other
    classes k of max(0, 1 - (x[j] - x[k])), divided by C. target (of input's shape, (C,) or
    (N, C)) lists the target class ids first and ends at the first -1."""
    op = "multilabel_margin_loss"
    check_reduction(reduction)
    scores = _class_scores(op, input)
    target = integer_array(target, op, "target")
    if target.shape != input.shape:
        raise ShapeError(
            f"{op}: expected a target of input's shape {input.shape} (class ids padded with -1); "
            f"got {target.shape}"
        )
    target = target.reshape(scores.shape)
    classes = scores.shape[1]
    if target.size and (target.min() < -1 or target.max() >= classes):
        raise IndexRangeError(
            f"{op}: target values must be class ids in [0, {classes}) or -1 (the end); "
            f"got values in [{target.min()}, {target.max()}]"
        )
    listed = np.cumprod(target >= 0, axis=1).astype(bool)  # the ids before the first -1
    # how often each class is listed (a repeated id counts again, as torch's)
    counts = np.zeros(scores.shape)
    np.add.at(counts, (np.nonzero(listed)[0], target[listed]), 1)
    pairs = counts[:, :, None] * (counts == 0)[:, None, :]  # (N, target j, other k)
    violations = _positive_part(
        add(sub(1.0, scores.reshape(*scores.shape, 1)), scores.reshape(-1, 1, classes))
    )
    loss = sum(mul(violations, Tensor._wrap(pairs.astype(scores.dtype))), (1, 2)) / classes
    return _unbatched(reduce(loss, reduction), input, reduction)


# fmt: off
__all__ = [
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
]
# fmt: on
