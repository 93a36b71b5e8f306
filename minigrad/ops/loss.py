"""Loss functions with PyTorch's formulas, shapes, reductions and errors.

    cross_entropy(input, target)          -log softmax(input)[target], or -sum target * log softmax(input)
    nll_loss(log_probs, target)           -log_probs[target]
    binary_cross_entropy(p, y)            -(y log p + (1 - y) log(1 - p))
    binary_cross_entropy_with_logits(x, y) the same with p = sigmoid(x), computed without overflow
    mse_loss, l1_loss, smooth_l1_loss, huber_loss

Every loss takes reduction='mean' (the default), 'sum' or 'none' (one loss per element, or per
position for the class losses). The mean of nothing (an empty batch, every target ignored) is
nan, as in torch. Class weights and pos_weight are constants: they take no gradient (torch
refuses one too). Arguments after `weight` are keyword-only: torch's deprecated size_average
and reduce sit in between, so a positional call written for torch would mean something else.

Shapes of the class losses: input (C,), (N, C) or (N, C, d1, ...), class scores along dim 1;
target class ids (), (N,) or (N, d1, ...), or class probabilities of input's shape.
The plain case -- (N, C) logits, integer targets, no weights, no smoothing, 'mean' -- runs
through the fused softmax-cross-entropy kernel (minigrad.ops.nn.cross_entropy), which every
training example uses; the rest is log_softmax followed by NLLLoss below.
"""

import warnings

import numpy as np

from .. import dtypes
from ..errors import ArgumentError, DTypeError, ShapeError
from ..tensor import Function, Tensor
from . import nn as _fused
from .args import as_array
from .elementwise import abs, cast, exp, log, masked_fill, mul, sub, where
from .nn import log_softmax
from .reduce import sum

REDUCTIONS = ("mean", "sum", "none")


# -- argument checks ------------------------------------------------------------------------


def _check_reduction(reduction):
    if reduction not in REDUCTIONS:
        raise ArgumentError(
            f"{reduction} is not a valid value for reduction (expected 'mean', 'sum' or 'none')"
        )
    return reduction


def _float_input(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected input to be a Tensor; got {type(x).__name__}")
    if x.dtype.kind != "f":
        raise DTypeError(f"{op}: expected a float32 or float64 input; got dtype {x.dtype}")
    return x


def _as_tensor(value):
    return value if isinstance(value, Tensor) else Tensor._wrap(dtypes.to_array(value))


def _constant(op, name, value, dtype):
    """A weight argument as an array of `dtype` (None stays None). Weights take no gradient."""
    if value is None:
        return None
    if isinstance(value, Tensor) and value.requires_grad:
        raise RuntimeError(f"{op}: {name} takes no gradient (as in torch); pass {name}.detach()")
    return np.asarray(as_array(value), dtype=dtype)


def _same_shape_target(op, input, target, broadcast):
    """target as a Tensor of input's float dtype (or the wider one). A target of another shape
    is broadcast with torch's warning (mse, l1) or refused (binary cross-entropy), as torch does."""
    target = _as_tensor(target)
    if target.shape != input.shape:
        if not broadcast:
            raise ShapeError(
                f"{op}: target size {target.shape} must be the same as input size {input.shape}"
            )
        _check_broadcast(op, input, target)
        warnings.warn(
            f"{op}: using a target size {target.shape} that is different to the input size "
            f"{input.shape}; the two are broadcast, which is likely not what you want",
            stacklevel=3,
        )
    dtype = (
        dtypes.promote_types(input.dtype, target.dtype) if target.dtype.kind == "f" else input.dtype
    )
    return cast(input, dtype), cast(target, dtype)


def _check_broadcast(op, input, target):
    try:
        np.broadcast_shapes(input.shape, target.shape)
    except ValueError:
        raise ShapeError(
            f"{op}: target of shape {target.shape} does not broadcast with input of shape "
            f"{input.shape}"
        ) from None


def _reduce(loss, reduction):
    """loss as it is ('none'), summed, or averaged (nan for no elements, as torch, without 0/0 warnings)."""
    if reduction == "none":
        return loss
    total = sum(loss)
    if reduction == "sum":
        return total
    return total / loss.numel() if loss.numel() else total * float("nan")


# -- class losses ---------------------------------------------------------------------------


class NLLLoss(Function):
    """loss_i = -weight[t_i] * log_probs[i, t_i] at every position i (0 where t_i == ignore_index);
    'sum' adds them, 'mean' divides the sum by W, the sum of weight[t_i] over the positions kept.

    log_probs (N, C, d...), target (N, d...) -> (N, d...) or a 0-d total. The gradient is
    -weight[t_i] times the upstream gradient (/ W for 'mean') at [i, t_i], and 0 elsewhere.
    """

    @staticmethod
    def forward(ctx, log_probs, target, weight, ignore_index, reduction):
        kept = target != ignore_index
        safe = np.expand_dims(
            np.where(kept, target, 0), 1
        )  # ignored positions read class 0, weighted 0
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
                grad_rows = np.where(ctx.kept, grad_rows / ctx.total_weight, 0)
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
            f"{op}: expected target to hold integer class ids{probabilities}; got dtype "
            f"{target.dtype} and shape {target.shape} for input of shape {input.shape}"
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
    weight = _constant(op, "weight", weight, dtype)
    if weight is not None and weight.shape != (classes,):
        raise ShapeError(
            f"{op}: weight should hold one value for each of the {classes} classes; "
            f"got weight of shape {weight.shape}"
        )
    return weight


def _batched(op, input):
    """(C,) -> (1, C): the unbatched form is one row (its result is squeezed back)."""
    _float_input(op, input)
    if input.ndim == 0:
        raise ShapeError(
            f"{op}: expected input of shape (C,), (N, C) or (N, C, d1, ...); got a 0-d tensor"
        )
    return input.reshape(1, -1) if input.ndim == 1 else input


def _unbatched(loss, was_unbatched, reduction):
    return loss.reshape(()) if was_unbatched and reduction == "none" else loss


def nll_loss(input, target, weight=None, *, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood of class ids under log-probabilities, like torch's.

    input: log-probabilities (C,), (N, C) or (N, C, d1, ...); target: class ids (), (N,) or
    (N, d1, ...) in [0, C) or equal to ignore_index; weight: (C,) per-class weights or None.
    Returns the per-position losses (reduction='none') or their sum or weighted mean.
    """
    _check_reduction(reduction)
    log_probs = _batched("nll_loss", input)
    target = _class_targets("nll_loss", input, as_array(target), ignore_index)
    weight = _class_weight("nll_loss", weight, log_probs.shape[1], log_probs.dtype)
    loss = NLLLoss.apply(
        log_probs, target=target, weight=weight, ignore_index=int(ignore_index), reduction=reduction
    )
    return _unbatched(loss, input.ndim == 1, reduction)


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
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ArgumentError(
            f"cross_entropy: label_smoothing must be between 0.0 and 1.0; got {label_smoothing}"
        )
    logits = _batched("cross_entropy", input)
    classes = logits.shape[1]
    target_array = as_array(target)
    if (
        target_array.dtype.kind == "f" and target_array.shape == input.shape
    ):  # torch's test for probabilities
        loss = _cross_entropy_probabilities(
            logits, _as_tensor(target), weight, ignore_index, reduction, label_smoothing
        )
        return _unbatched(loss, input.ndim == 1, reduction)
    target = _class_targets("cross_entropy", input, target_array, ignore_index)
    weight = _class_weight("cross_entropy", weight, classes, logits.dtype)
    plain = logits.ndim == 2 and weight is None and label_smoothing == 0 and reduction == "mean"
    if plain and (target != ignore_index).any():
        return _fused.cross_entropy(logits, target, ignore_index=ignore_index)  # one fused node
    log_probs = log_softmax(logits, dim=1)
    loss = NLLLoss.apply(
        log_probs, target=target, weight=weight, ignore_index=int(ignore_index), reduction=reduction
    )
    if label_smoothing > 0:
        # every class's share: -sum_c weight_c log p_c per position (0 where ignored), reduced like the NLL
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
            f"{op}: ignore_index is not supported for class-probability targets; got ignore_index="
            f"{ignore_index}"
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
    return _reduce(-sum(products, 1), reduction)


# -- binary cross-entropy -------------------------------------------------------------------


class BinaryCrossEntropy(Function):
    """loss = -(y log p + (1 - y) log(1 - p)) elementwise, each log clamped at -100 (as torch,
    so p = 0 or 1 gives a finite loss); dp = (p - y) / max(p (1 - p), 1e-12), dy = log(1 - p) - log p."""

    @staticmethod
    def forward(ctx, p, y):
        with np.errstate(divide="ignore"):
            log_p, log_1mp = np.log(p), np.log1p(-p)
        ctx.save_for_backward(p, y)
        ctx.log_p, ctx.log_1mp = log_p, log_1mp
        return -(y * np.maximum(log_p, -100) + (1 - y) * np.maximum(log_1mp, -100))

    @staticmethod
    def backward(ctx, grad):
        p, y = ctx.saved
        grad_p = (
            grad * (p - y) / np.maximum(p * (1 - p), 1e-12) if ctx.needs_input_grad[0] else None
        )
        grad_y = grad * (ctx.log_1mp - ctx.log_p) if ctx.needs_input_grad[1] else None
        return grad_p, grad_y


class BinaryCrossEntropyWithLogits(Function):
    """loss = (1 - y) x + (1 + (q - 1) y) softplus(-x) with q = pos_weight (1 without it): this is
    -(q y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))) without exp overflow.
    dx = (1 + (q - 1) y) sigmoid(x) - q y,  dy = (q - 1) softplus(-x) - x."""

    @staticmethod
    def forward(ctx, x, y, pos_weight):
        small_exp = np.exp(-np.abs(x))  # e^-|x| in (0, 1]: no overflow either way
        softplus_neg = np.maximum(-x, 0) + np.log1p(small_exp)  # log(1 + e^-x)
        log_weight = 1 + (pos_weight - 1) * y if pos_weight is not None else np.ones((), x.dtype)
        ctx.save_for_backward(x, y)
        ctx.small_exp, ctx.softplus_neg, ctx.log_weight, ctx.pos_weight = (
            small_exp,
            softplus_neg,
            log_weight,
            pos_weight,
        )
        return (1 - y) * x + log_weight * softplus_neg

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved
        q = 1 if ctx.pos_weight is None else ctx.pos_weight
        sigmoid = np.where(x >= 0, 1, ctx.small_exp) / (
            1 + ctx.small_exp
        )  # 1 / (1 + e^-x), from e^-|x|
        grad_x = grad * (ctx.log_weight * sigmoid - q * y) if ctx.needs_input_grad[0] else None
        grad_y = grad * ((q - 1) * ctx.softplus_neg - x) if ctx.needs_input_grad[1] else None
        return grad_x, grad_y


def _elementwise_weight(op, loss, weight):
    """loss * weight, weight a constant broadcast to loss's shape (as torch's `weight=` of the binary losses)."""
    weight = _constant(op, "weight", weight, loss.dtype)
    if weight is None:
        return loss
    _check_broadcasts_to(op, "weight", weight, loss.shape)
    return mul(loss, Tensor._wrap(weight))


def _check_broadcasts_to(op, name, array, shape):
    try:
        fits = np.broadcast_shapes(array.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(
            f"{op}: {name} of shape {array.shape} does not broadcast to input of shape {shape}"
        )


def binary_cross_entropy(input, target, weight=None, *, reduction="mean"):
    """-(y log p + (1 - y) log(1 - p)) for probabilities p = input in [0, 1] and targets y of
    input's shape; weight broadcasts to input's shape. Logs are clamped at -100, as in torch."""
    _check_reduction(reduction)
    input = _float_input("binary_cross_entropy", input)
    input, target = _same_shape_target("binary_cross_entropy", input, target, broadcast=False)
    if input.numel() and not (input.data.min() >= 0 and input.data.max() <= 1):
        raise ArgumentError(
            "binary_cross_entropy: all elements of input should be between 0 and 1 "
            f"(got values in [{input.data.min()}, {input.data.max()}]); apply sigmoid first, "
            "or use binary_cross_entropy_with_logits"
        )
    loss = BinaryCrossEntropy.apply(input, target)
    return _reduce(_elementwise_weight("binary_cross_entropy", loss, weight), reduction)


def binary_cross_entropy_with_logits(
    input, target, weight=None, *, reduction="mean", pos_weight=None
):
    """binary_cross_entropy(sigmoid(input), target) computed stably from logits. pos_weight
    (broadcast along the last dim, e.g. (C,)) weighs the positive term y log sigmoid(x)."""
    _check_reduction(reduction)
    op = "binary_cross_entropy_with_logits"
    input = _float_input(op, input)
    input, target = _same_shape_target(op, input, target, broadcast=False)
    pos_weight = _constant(op, "pos_weight", pos_weight, input.dtype)
    if pos_weight is not None:
        _check_broadcasts_to(op, "pos_weight", pos_weight, input.shape)
    loss = BinaryCrossEntropyWithLogits.apply(input, target, pos_weight=pos_weight)
    return _reduce(_elementwise_weight(op, loss, weight), reduction)


# -- regression losses ----------------------------------------------------------------------


def mse_loss(input, target, *, reduction="mean"):
    """(input - target)^2 elementwise, reduced."""
    _check_reduction(reduction)
    input, target = _same_shape_target(
        "mse_loss", _float_input("mse_loss", input), target, broadcast=True
    )
    difference = sub(input, target)
    return _reduce(mul(difference, difference), reduction)


def l1_loss(input, target, *, reduction="mean"):
    """|input - target| elementwise, reduced (gradient sign(input - target), 0 where equal)."""
    _check_reduction(reduction)
    input, target = _same_shape_target(
        "l1_loss", _float_input("l1_loss", input), target, broadcast=True
    )
    return _reduce(abs(sub(input, target)), reduction)


def smooth_l1_loss(input, target, *, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta, for d = input - target (l1 at beta=0)."""
    _check_reduction(reduction)
    if beta < 0:
        raise ArgumentError(
            f"smooth_l1_loss does not support negative values for beta; got beta={beta}"
        )
    input, target = _same_shape_target(
        "smooth_l1_loss", _float_input("smooth_l1_loss", input), target, broadcast=True
    )
    return _reduce(_smooth_l1(sub(input, target), float(beta)), reduction)


def huber_loss(input, target, *, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta): delta times smooth_l1 with beta=delta."""
    _check_reduction(reduction)
    if not delta > 0:
        raise ArgumentError(
            f"huber_loss does not support non-positive values for delta; got delta={delta}"
        )
    input, target = _same_shape_target(
        "huber_loss", _float_input("huber_loss", input), target, broadcast=True
    )
    return _reduce(_smooth_l1(sub(input, target), float(delta)) * float(delta), reduction)


def kl_div(input, target, *, reduction="mean", log_target=False):
    """The Kullback-Leibler divergence of input from target, as torch's F.kl_div: input holds
    log-probabilities, target probabilities (log-probabilities with log_target=True); elementwise
    target * (log(target) - input), 0 where target is 0, then reduced. reduction="batchmean"
    divides the sum by the batch size (the first dim): the divergence itself, per example;
    "mean" divides by every element, as torch's (with its warning)."""
    op = "kl_div"
    if reduction != "batchmean":
        _check_reduction(reduction)
    if reduction == "mean":
        warnings.warn(
            "kl_div: reduction='mean' divides the total by every element, not by the batch size; "
            "reduction='batchmean' gives the KL divergence per example",
            stacklevel=2,
        )
    input = _float_input(op, input)
    target = _as_tensor(target)
    if target.dtype.kind != "f":
        raise DTypeError(f"{op}: expected a float target (probabilities); got dtype {target.dtype}")
    _check_broadcast(op, input, target)
    dtype = dtypes.promote_types(input.dtype, target.dtype)
    input, target = cast(input, dtype), cast(target, dtype)
    if log_target:
        loss = mul(exp(target), sub(target, input))
    else:  # x log x is 0 at x = 0 (log(1) stands in for log(0) there); a negative target gives NaN
        loss = mul(target, sub(log(where(target.data == 0, 1.0, target)), input))
    if reduction == "batchmean":
        total = sum(loss)
        return total / loss.shape[0] if loss.ndim else total
    return _reduce(loss, reduction)


def _smooth_l1(difference, beta):
    size = abs(difference)
    if beta == 0:
        return size
    return where(size.data < beta, difference * difference * (0.5 / beta), size - 0.5 * beta)


__all__ = [
    "cross_entropy",
    "nll_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "kl_div",
    "REDUCTIONS",
]
