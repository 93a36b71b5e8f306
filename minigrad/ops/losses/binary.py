"""Binary cross-entropy, of probabilities (binary_cross_entropy) and of logits
(binary_cross_entropy_with_logits, computed without overflow), with torch's weights and
pos_weight."""

import numpy as np

from ...errors import ArgumentError
from ...engine import Function, Tensor
from ..args import check_broadcasts_to, float_tensor
from ..arithmetic import mul
from ..registry import op
from .reduction import check_reduction, constant, reduce, same_shape_target


class BinaryCrossEntropy(Function):
    """loss = -(y log p + (1 - y) log(1 - p)) elementwise, each log clamped at -100 (as torch,
    so p = 0 or 1 gives a finite loss); dp = (p - y) / max(p (1 - p), 1e-12),
    dy = log(1 - p) - log p."""

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
    def forward(ctx, x, y, pos_weight=None):
        small_exp = np.exp(-np.abs(x))  # e^-|x| in (0, 1]: no overflow either way
        softplus_neg = np.maximum(-x, 0) + np.log1p(small_exp)  # log(1 + e^-x)
        log_weight = 1 + (pos_weight - 1) * y if pos_weight is not None else np.ones((), x.dtype)
        ctx.save_for_backward(x, y)
        ctx.small_exp, ctx.softplus_neg = small_exp, softplus_neg
        ctx.log_weight, ctx.pos_weight = log_weight, pos_weight
        return (1 - y) * x + log_weight * softplus_neg

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved
        q = 1 if ctx.pos_weight is None else ctx.pos_weight
        # 1 / (1 + e^-x), from e^-|x|
        sigmoid = np.where(x >= 0, 1, ctx.small_exp) / (1 + ctx.small_exp)
        grad_x = grad * (ctx.log_weight * sigmoid - q * y) if ctx.needs_input_grad[0] else None
        grad_y = grad * ((q - 1) * ctx.softplus_neg - x) if ctx.needs_input_grad[1] else None
        return (grad_x, grad_y, None)[: len(ctx.needs_input_grad)]  # none for pos_weight


def _elementwise_weight(op, loss, weight):
    """loss * weight, weight a constant broadcast to loss's shape (as torch's `weight=` of the
    binary losses)."""
    weight = constant(op, "weight", weight, loss.dtype)
    if weight is None:
        return loss
    check_broadcasts_to(op, "weight", weight.shape, loss.shape, f"input of shape {loss.shape}")
    return mul(loss, Tensor._wrap(weight))


@op(method=False, public=False)
def binary_cross_entropy(input, target, weight=None, *, reduction="mean"):
    """-(y log p + (1 - y) log(1 - p)) for probabilities p = input in [0, 1] and targets y of
    input's shape; weight broadcasts to input's shape. Logs are clamped at -100, as in torch."""
    check_reduction(reduction)
    input = float_tensor("binary_cross_entropy", input)
    input, target = same_shape_target("binary_cross_entropy", input, target, broadcast=False)
    if input.numel() and not (input._data.min() >= 0 and input._data.max() <= 1):
        raise ArgumentError(
            "binary_cross_entropy: all elements of input should be between 0 and 1 "
            f"(got values in [{input._data.min()}, {input._data.max()}]); apply sigmoid first, "
            "or use binary_cross_entropy_with_logits"
        )
    loss = BinaryCrossEntropy.apply(input, target)
    return reduce(_elementwise_weight("binary_cross_entropy", loss, weight), reduction)


@op(method=False, public=False)
def binary_cross_entropy_with_logits(
    input, target, weight=None, *, reduction="mean", pos_weight=None
):
    """binary_cross_entropy(sigmoid(input), target) computed stably from logits. pos_weight
    (broadcast along the last dim, e.g. (C,)) weighs the positive term y log sigmoid(x)."""
    check_reduction(reduction)
    op = "binary_cross_entropy_with_logits"
    input = float_tensor(op, input)
    input, target = same_shape_target(op, input, target, broadcast=False)
    given = pos_weight
    pos_weight = constant(op, "pos_weight", pos_weight, input.dtype)
    inputs = (input, target)
    if pos_weight is not None:
        check_broadcasts_to(
            op, "pos_weight", pos_weight.shape, input.shape, f"input of shape {input.shape}"
        )
        # an input, not a setting: the version check then sees it changed before backward
        shared = isinstance(given, Tensor) and given._data is pos_weight
        inputs += (given if shared else Tensor._wrap(pos_weight),)
    loss = BinaryCrossEntropyWithLogits.apply(*inputs)
    return reduce(_elementwise_weight(op, loss, weight), reduction)
