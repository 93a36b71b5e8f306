"""torch.nn.modules.loss: losses as modules: each holds its settings and calls the function of the
same name in nn.functional (criterion = nn.CrossEntropyLoss(); loss = criterion(logits, target)).

As in torch, class weights and pos_weight are buffers: saved in state_dict() and cast by
to(dtype). The formulas, shapes and reductions are documented in minigrad/ops/loss.py.
"""

from minigrad.errors import ArgumentError
from minigrad.ops import REDUCTIONS
from minigrad.engine import Tensor

from . import functional as F
from .distance import PairwiseDistance
from .module import Module


class _Loss(Module):
    """A loss with a reduction ('mean', 'sum' or 'none'). Its repr is bare, as torch's."""

    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in REDUCTIONS:
            raise ArgumentError(
                f"{type(self).__name__}: {reduction} is not a valid value for reduction "
                f"(expected 'mean', 'sum' or 'none')"
            )
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
            raise ValueError(
                "CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0; "
                f"got {label_smoothing}"
            )
        self._register_weight("weight", weight)
        self.ignore_index, self.label_smoothing = int(ignore_index), float(label_smoothing)

    def forward(self, input, target):
        return F.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class NLLLoss(_Loss):
    """F.nll_loss(log_probs, target): log-probabilities (N, C[, d...]) and class ids (N[, d...])."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self._register_weight("weight", weight)
        self.ignore_index = int(ignore_index)

    def forward(self, input, target):
        return F.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class BCELoss(_Loss):
    """F.binary_cross_entropy(probabilities, target): both of one shape, probabilities in [0, 1]."""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self._register_weight("weight", weight)

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """F.binary_cross_entropy_with_logits(logits, target), with pos_weight weighing the
    positives."""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self._register_weight("weight", weight)
        self._register_weight("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )


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
            raise ValueError(
                f"HuberLoss does not support non-positive values for delta; got {delta}"
            )
        self.delta = float(delta)

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class _MarginLoss(_Loss):
    """A loss with a margin, called as F.<function>(*inputs, margin, reduction=...)."""

    function = None

    def __init__(self, margin, *, reduction="mean"):
        super().__init__(reduction)
        self.margin = float(margin)

    def forward(self, *inputs):
        return type(self).function(*inputs, self.margin, reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    """F.cosine_embedding_loss(input1, input2, target): target 1 pulls a pair together, -1 apart."""

    function = staticmethod(F.cosine_embedding_loss)

    def __init__(self, margin=0.0, *, reduction="mean"):
        super().__init__(margin, reduction=reduction)


class MarginRankingLoss(_MarginLoss):
    """F.margin_ranking_loss(input1, input2, target): target 1 ranks input1 above input2."""

    function = staticmethod(F.margin_ranking_loss)

    def __init__(self, margin=0.0, *, reduction="mean"):
        super().__init__(margin, reduction=reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """F.hinge_embedding_loss(distance, target): distance for target 1, max(0, margin - distance)
    for -1."""

    function = staticmethod(F.hinge_embedding_loss)

    def __init__(self, margin=1.0, *, reduction="mean"):
        super().__init__(margin, reduction=reduction)


class TripletMarginLoss(_Loss):
    """F.triplet_margin_loss(anchor, positive, negative) with margin, p, eps and swap fixed."""

    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, *, reduction="mean"):
        super().__init__(reduction)
        self.margin, self.p, self.eps, self.swap = float(margin), float(p), float(eps), bool(swap)

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(
            anchor,
            positive,
            negative,
            self.margin,
            self.p,
            self.eps,
            self.swap,
            reduction=self.reduction,
        )


class TripletMarginWithDistanceLoss(_Loss):
    """F.triplet_margin_with_distance_loss with any distance function (nn.PairwiseDistance() by
    default)."""

    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction)
        if not margin > 0:
            raise ArgumentError(
                f"TripletMarginWithDistanceLoss: margin must be greater than 0; got {margin}"
            )
        self.distance_function = (
            distance_function if distance_function is not None else PairwiseDistance()
        )
        self.margin, self.swap = float(margin), bool(swap)

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor,
            positive,
            negative,
            distance_function=self.distance_function,
            margin=self.margin,
            swap=self.swap,
            reduction=self.reduction,
        )


class SoftMarginLoss(_Loss):
    """F.soft_margin_loss(input, target): log(1 + exp(-target * input)), target +-1."""

    def forward(self, input, target):
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_Loss):
    """F.multilabel_soft_margin_loss(input, target): 0/1 labels per class, weight a buffer."""

    def __init__(self, weight=None, *, reduction="mean"):
        super().__init__(reduction)
        self._register_weight("weight", weight)

    def forward(self, input, target):
        return F.multilabel_soft_margin_loss(input, target, self.weight, reduction=self.reduction)


class MultiMarginLoss(_Loss):
    """F.multi_margin_loss(input, target): the multi-class hinge loss (p 1 or 2), weight a
    buffer."""

    def __init__(self, p=1, margin=1.0, weight=None, *, reduction="mean"):
        super().__init__(reduction)
        if p not in (1, 2):
            raise ArgumentError(f"MultiMarginLoss: p must be 1 or 2; got {p}")
        self.p, self.margin = p, float(margin)
        self._register_weight("weight", weight)

    def forward(self, input, target):
        return F.multi_margin_loss(
            input, target, self.p, self.margin, self.weight, reduction=self.reduction
        )


class MultiLabelMarginLoss(_Loss):
    """F.multilabel_margin_loss(input, target): target class ids first, ended by -1."""

    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """F.poisson_nll_loss(input, target): log rates (or rates) against counts."""

    def __init__(self, log_input=True, full=False, *, eps=1e-8, reduction="mean"):
        super().__init__(reduction)
        self.log_input, self.full, self.eps = bool(log_input), bool(full), float(eps)

    def forward(self, input, target):
        return F.poisson_nll_loss(
            input, target, self.log_input, self.full, eps=self.eps, reduction=self.reduction
        )


class GaussianNLLLoss(_Loss):
    """F.gaussian_nll_loss(input, target, var): means and variances against targets."""

    def __init__(self, *, full=False, eps=1e-6, reduction="mean"):
        super().__init__(reduction)
        self.full, self.eps = bool(full), float(eps)

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


# fmt: off
__all__ = [
    "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "MSELoss",
    "KLDivLoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CosineEmbeddingLoss",
    "MarginRankingLoss", "HingeEmbeddingLoss", "TripletMarginLoss",
    "TripletMarginWithDistanceLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "MultiLabelMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss",
]
# fmt: on
