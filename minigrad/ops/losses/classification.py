"""The class losses: cross_entropy and nll_loss, with torch's shapes, weights, ignore_index and
label smoothing. The plain case -- (N, C) logits, integer targets, no weights, no smoothing,
'mean' -- runs through the fused softmax-cross-entropy kernel (fused_cross_entropy), which every
training example uses; the rest is log_softmax followed by NLLLoss.

Shapes: input (C,), (N, C) or (N, C, d1, ...), class scores along dim 1; target class ids (),
(N,) or (N, d1, ...), or class probabilities of input's shape.
"""

import numpy as np

from ... import dtypes, kernels
from ...dtypes import to_array
from ...errors import ArgumentError, DTypeError, ShapeError
from ...engine import Function, Tensor
from ..args import as_array, float_tensor
from ..arithmetic import mul
from ..conversion import cast
from ..piecewise import masked_fill
from ..reductions import sum
from ..indexing import place
from ..namespace import namespace
from ..registry import op
from ..softmax import log_softmax
from .reduction import as_tensor, check_reduction, constant, reduce


class CrossEntropy(Function):
    """The plain case of cross_entropy in one node: (N, C) logits, integer targets, the mean
    over the rows not ignored; the softmax and its gradient run in one kernel pass each."""

    @staticmethod
    def forward(ctx, logits, target, ignore_index):
        loss, probs, count = kernels.cross_entropy_forward(logits, target, ignore_index)
        ctx.save_for_backward(probs)
        ctx.target, ctx.ignore_index, ctx.count = target, ignore_index, count
        return loss

    @staticmethod
    def backward(ctx, grad):
        (probs,) = ctx.saved
        return kernels.cross_entropy_backward(probs, ctx.target, ctx.ignore_index, ctx.count, grad)

    higher_order = "composite"

    @staticmethod
    def composite(ctx, logits, target=None):
        """The same mean of -log softmax[target] in recorded ops (for create_graph=True)."""
        kept = ctx.target != ctx.ignore_index
        rows = np.arange(len(ctx.target))
        picked = log_softmax(logits, 1)[rows, np.where(kept, ctx.target, 0)]
        return -(picked * kept).sum() / np.asarray(ctx.count, logits.dtype)


def fused_cross_entropy(logits, target, ignore_index=-100):
    """Mean of -log softmax(logits)[target] over the rows whose target != ignore_index.

    logits: (N, C) float; target: (N,) integer class ids. Returns a 0-d tensor (0.0 when every
    row is ignored, where torch gives NaN).
    """
    target = to_array(target)
    if logits.ndim != 2:
        raise ValueError(f"cross_entropy: logits must have shape (N, C); got {logits.shape}")
    if target.shape != logits.shape[:1]:
        raise ValueError(
            f"cross_entropy: target must have shape ({logits.shape[0]},) to match logits "
            f"{logits.shape}; got {target.shape}"
        )
    if not np.issubdtype(target.dtype, np.integer):
        raise TypeError(
            f"cross_entropy: target must hold integer class ids; got dtype {target.dtype}"
        )
    return CrossEntropy.apply(
        logits, target=target.astype(np.int64, copy=False), ignore_index=int(ignore_index)
    )


def _along_dim_1(safe):
    """The index that picks [i, safe[i], ...] of an (N, C, d...) array, keeping dim 1."""
    grids = np.indices(safe.shape, sparse=True)
    return (grids[0], safe) + tuple(grids[2:])


class NLLLoss(Function):
    """loss_i = -weight[t_i] * log_probs[i, t_i] at every position i (0 where t_i == ignore_index);
    'sum' adds them, 'mean' divides the sum by W, the sum of weight[t_i] over the positions kept.

    log_probs (N, C, d...), target (N, d...) -> (N, d...) or a 0-d total. The gradient is
    -weight[t_i] times the upstream gradient (/ W for 'mean') at [i, t_i], and 0 elsewhere.
    """

    higher_order = "backward"  # the weights and indices are constants

    @staticmethod
    def forward(ctx, log_probs, target, weight, ignore_index, reduction):
        kept = target != ignore_index
        # ignored positions read class 0, weighted 0
        safe = np.expand_dims(np.where(kept, target, 0), 1)
        weights = (
            kept.astype(log_probs.dtype)
            if weight is None
            else np.where(kept, weight[safe[:, 0]], 0)
        )
        picked = np.take_along_axis(log_probs, safe, axis=1)[:, 0]
        losses = -weights * picked
        ctx.safe, ctx.weights, ctx.kept, ctx.shape, ctx.reduction = (
            safe,
            weights,
            kept,
            log_probs.shape,
            reduction,
        )
        if reduction == "none":
            return losses.astype(log_probs.dtype, copy=False)
        total = losses.sum(dtype=np.float64)
        if reduction == "mean":
            ctx.total_weight = weights.sum(dtype=np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0 is nan, as in torch
                total = total / ctx.total_weight
        return np.asarray(total, dtype=log_probs.dtype)

    @staticmethod
    def backward(ctx, grad):
        grad_rows = -ctx.weights * grad
        if ctx.reduction == "mean":
            with np.errstate(invalid="ignore", divide="ignore"):
                grad_rows = namespace(grad).where(ctx.kept, grad_rows / ctx.total_weight, 0)
        if namespace(grad) is not np:  # create_graph=True: the same placing, recorded
            return place(grad_rows.unsqueeze(1), ctx.shape, _along_dim_1(ctx.safe), None)
        grad_log_probs = np.zeros(ctx.shape, dtype=ctx.weights.dtype)
        np.put_along_axis(
            grad_log_probs, ctx.safe, np.expand_dims(grad_rows, 1).astype(ctx.weights.dtype), axis=1
        )
        return grad_log_probs


def _class_targets(op, input, target, ignore_index):
    """Check integer class ids against input's shape and class count; returns them as int64
    (an unbatched input (C,) and its 0-d target come back as one row: (1, C) and (1,))."""
    if target.dtype.kind not in "iu":
        probabilities = (
            " (or float class probabilities of input's shape)" if op == "cross_entropy" else ""
        )
        raise DTypeError(
            f"{op}: expected target to hold integer class ids{probabilities}; "
            f"got dtype {target.dtype} and shape {target.shape} for input of shape {input.shape}"
        )
    if input.ndim == 1:
        if target.ndim != 0:
            raise ShapeError(
                f"{op}: for an unbatched input of shape {input.shape} (one row of class scores) "
                f"the target is one class id (a 0-d tensor); got shape {target.shape}"
            )
        input, target = input.reshape(1, -1), target.reshape(1)
    expected = input.shape[:1] + input.shape[2:]
    if target.shape != expected:
        if target.ndim >= 1 and target.shape[0] != input.shape[0]:
            raise ShapeError(
                f"{op}: expected input batch_size ({input.shape[0]}) to match target batch_size "
                f"({target.shape[0]}): input of shape {input.shape}, target of shape {target.shape}"
            )
        raise ShapeError(
            f"{op}: expected target of shape {expected} for input of shape {input.shape}; "
            f"got {target.shape}"
        )
    classes = input.shape[1]
    bad = (target != ignore_index) & ((target < 0) | (target >= classes))
    if bad.any():
        raise IndexError(
            f"{op}: target {target[bad][0]} is out of bounds for {classes} classes "
            f"(expected class ids in [0, {classes}) or ignore_index={ignore_index})"
        )
    return target.astype(np.int64, copy=False)


def _class_weight(op, weight, classes, dtype):
    weight = constant(op, "weight", weight, dtype)
    if weight is not None and weight.shape != (classes,):
        raise ShapeError(
            f"{op}: weight should hold one value for each of the {classes} classes; "
            f"got weight of shape {weight.shape}"
        )
    return weight


def _batched(op, input):
    """(C,) -> (1, C): the unbatched form is one row (its result is squeezed back)."""
    float_tensor(op, input)
    if input.ndim == 0:
        raise ShapeError(
            f"{op}: expected input of shape (C,), (N, C) or (N, C, d1, ...); got a 0-d tensor"
        )
    return input.reshape(1, -1) if input.ndim == 1 else input


def _unbatched(loss, was_unbatched, reduction):
    return loss.reshape(()) if was_unbatched and reduction == "none" else loss


@op(method=False, public=False)
def nll_loss(input, target, weight=None, *, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of class ids under log-probabilities, like torch's.

    input: log-probabilities (C,), (N, C) or (N, C, d1, ...); target: class ids (), (N,) or
    (N, d1, ...) in [0, C) or equal to ignore_index; weight: (C,) per-class weights or None.
    Returns the per-position losses (reduction='none') or their sum or weighted mean.
    """
    check_reduction(reduction)
    log_probs = _batched("nll_loss", input)
    target = _class_targets("nll_loss", input, as_array(target), ignore_index)
    weight = _class_weight("nll_loss", weight, log_probs.shape[1], log_probs.dtype)
    loss = NLLLoss.apply(
        log_probs, target=target, weight=weight, ignore_index=int(ignore_index), reduction=reduction
    )
    return _unbatched(loss, input.ndim == 1, reduction)


@op(method=False)
def cross_entropy(
    input, target, weight=None, *, ignore_index=-100, reduction="mean", label_smoothing=0.0
):
    """Cross-entropy between softmax(input) along dim 1 and the target, like torch's.

    input: logits (C,), (N, C) or (N, C, d1, ...). target: class ids (), (N,) or (N, d1, ...)
    (ignore_index marks positions to leave out), or class probabilities of input's shape
    (which may require grad). weight (C,): per-class weights. label_smoothing in [0, 1]: the
    target becomes (1 - label_smoothing) * target + label_smoothing / C.
    Returns per-position losses (reduction='none'), their sum, or their mean (weighted by
    class weight for class ids; over positions for probabilities).
    """
    check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(
            f"cross_entropy: label_smoothing must be between 0.0 and 1.0; got {label_smoothing}"
        )
    logits = _batched("cross_entropy", input)
    classes = logits.shape[1]
    target_array = as_array(target)
    # torch's test for probabilities
    if target_array.dtype.kind == "f" and target_array.shape == input.shape:
        loss = _cross_entropy_probabilities(
            logits, as_tensor(target), weight, ignore_index, reduction, label_smoothing
        )
        return _unbatched(loss, input.ndim == 1, reduction)
    target = _class_targets("cross_entropy", input, target_array, ignore_index)
    weight = _class_weight("cross_entropy", weight, classes, logits.dtype)
    plain = logits.ndim == 2 and weight is None and label_smoothing == 0 and reduction == "mean"
    if plain and (target != ignore_index).any():
        return fused_cross_entropy(logits, target, ignore_index=ignore_index)  # one fused node
    log_probs = log_softmax(logits, dim=1)
    loss = NLLLoss.apply(
        log_probs, target=target, weight=weight, ignore_index=int(ignore_index), reduction=reduction
    )
    if label_smoothing > 0:
        # every class's share: -sum_c weight_c log p_c per position (0 where ignored), reduced
        # like the NLL
        ignored = target == ignore_index
        spread = -sum(
            log_probs if weight is None else mul(log_probs, _class_view(weight, logits.ndim)), 1
        )
        spread = masked_fill(spread, ignored, 0.0)
        if reduction == "mean":
            kept_weight = float(
                (~ignored).sum()
                if weight is None
                else weight[target[~ignored]].sum(dtype=np.float64)
            )
            spread = sum(spread) / kept_weight if kept_weight else sum(spread) * float("nan")
        elif reduction == "sum":
            spread = sum(spread)
        loss = loss * (1 - label_smoothing) + spread * (label_smoothing / classes)
    return _unbatched(loss, input.ndim == 1, reduction)


def _class_view(weight, ndim):
    """Class weights (C,) shaped to broadcast along dim 1 of an ndim-dims input."""
    return Tensor._wrap(weight.reshape((1, -1) + (1,) * (ndim - 2)))


def _cross_entropy_probabilities(logits, target, weight, ignore_index, reduction, label_smoothing):
    """loss = -sum_c weight_c * target_c * log softmax(logits)_c along dim 1; 'mean' averages over
    positions. target has the shape of the input (logits is that input as one row if unbatched)."""
    op = "cross_entropy"
    if ignore_index >= 0:
        raise ArgumentError(
            f"{op}: ignore_index is not supported for class-probability targets; "
            f"got ignore_index={ignore_index}"
        )
    target = target.reshape(logits.shape)
    dtype = dtypes.promote_types(logits.dtype, target.dtype)
    logits, target = cast(logits, dtype), cast(target, dtype)
    classes = logits.shape[1]
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    weight = _class_weight(op, weight, classes, dtype)
    products = mul(log_softmax(logits, dim=1), target)
    if weight is not None:
        products = mul(products, _class_view(weight, logits.ndim))
    return reduce(-sum(products, 1), reduction)
