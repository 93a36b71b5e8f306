"""Losses with PyTorch's formulas, shapes, reductions and errors, by kind.

    cross_entropy(input, target)          -log softmax(input)[target],
                                          or -sum target * log softmax(input)
    nll_loss(log_probs, target)           -log_probs[target]
    binary_cross_entropy(p, y)            -(y log p + (1 - y) log(1 - p))
    binary_cross_entropy_with_logits(x, y) the same with p = sigmoid(x), computed without overflow
    mse_loss, l1_loss, smooth_l1_loss, huber_loss

Every loss takes reduction='mean' (the default), 'sum' or 'none' (one loss per element, or per
position for the class losses). The mean of nothing (an empty batch, every target ignored) is
nan, as in torch. Class weights and pos_weight are constants: they take no gradient (torch
refuses one too). Arguments after `weight` are keyword-only: torch's deprecated size_average
and reduce sit in between, so a positional call written for torch would mean something else.

    classification.py  cross_entropy (the plain (N, C) case: fused_cross_entropy), nll_loss
    binary.py          binary_cross_entropy, binary_cross_entropy_with_logits
    regression.py      mse_loss, l1_loss, smooth_l1_loss, huber_loss
    likelihood.py      poisson_nll_loss, gaussian_nll_loss, kl_div
    margin.py          the margin and embedding losses (margin_ranking_loss ...)
    reduction.py       REDUCTIONS and the checks of targets and weights every loss shares
"""

from .. import registry
from . import binary, classification, likelihood, margin, regression
from .classification import fused_cross_entropy
from .reduction import REDUCTIONS

FAMILIES = (classification, binary, regression, likelihood, margin)

# every loss by name here too (losses.cross_entropy, losses.mse_loss ...): the declared ones
globals().update(
    (name, entry.function)
    for name, entry in registry.OPS.items()
    if entry.family.startswith("losses.")
)
