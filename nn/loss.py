"""Losses as modules: each holds its settings and calls the function of the same name in
nn.functional (criterion = nn.CrossEntropyLoss(); loss = criterion(logits, target)).

As in torch, class weights and pos_weight are buffers: saved in state_dict() and cast by
to(dtype). The formulas, shapes and reductions are documented in minigrad/ops/loss.py.
"""

from minigrad.ops.loss import REDUCTIONS
from minigrad.tensor import Tensor

from . import functional as F
from .module import Module


class _Loss(Module):
    """A loss with a reduction ('mean', 'sum' or 'none'). Its repr is bare, as torch's."""

    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: {reduction} is not a valid value for reduction "
                             f"(expected 'mean', 'sum' or 'none')")
        self.reduction = reduction

    def _register_weight(self, name, weight):
        if weight is not None and not isinstance(weight, Tensor):
            weight = Tensor(weight)
        self.register_buffer(name, weight)


class CrossEntropyLoss(_Loss):
    """F.cross_entropy(input, target) with weight, ignore_index, reduction and label_smoothing
    fixed: logits (N, C[, d...]) and class ids (N[, d...]) or class probabilities."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0; got {label_smoothing}")
        self._register_weight("weight", weight)
        self.ignore_index, self.label_smoothing = int(ignore_index), float(label_smoothing)

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """F.nll_loss(log_probs, target): log-probabilities (N, C[, d...]) and class ids (N[, d...])."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self._register_weight("weight", weight)
        self.ignore_index = int(ignore_index)

    def forward(self, input, target):
        return F.nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCELoss(_Loss):
    """F.binary_cross_entropy(probabilities, target): both of one shape, probabilities in [0, 1]."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self._register_weight("weight", weight)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """F.binary_cross_entropy_with_logits(logits, target), with pos_weight weighing the positives."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self._register_weight("weight", weight)
        self._register_weight("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class MSELoss(_Loss):
    """F.mse_loss(input, target): mean (or sum) of squared differences."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class KLDivLoss(_Loss):
    """F.kl_div(log_probabilities, target): reduction also "batchmean" (the divergence per
    example); log_target=True when the target holds log-probabilities too."""

    def __init__(self, reduction="mean", log_target=False):
        super().__init__("sum" if reduction == "batchmean" else reduction)
        self.reduction, self.log_target = reduction, bool(log_target)

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class L1Loss(_Loss):
    """F.l1_loss(input, target): mean (or sum) of absolute differences."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """F.smooth_l1_loss(input, target, beta): quadratic below beta, linear above."""

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        if beta < 0:
            raise ValueError(f"SmoothL1Loss does not support negative values for beta; got {beta}")
        self.beta = float(beta)

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """F.huber_loss(input, target, delta): quadratic below delta, delta-sloped linear above."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        if not delta > 0:
            raise ValueError(f"HuberLoss does not support non-positive values for delta; got {delta}")
        self.delta = float(delta)

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


__all__ = ["CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MSELoss", "KLDivLoss", "L1Loss",
           "SmoothL1Loss", "HuberLoss"]
