"""Learning-rate schedules (torch.optim.lr_scheduler semantics): a scheduler sets each
parameter group's lr and is stepped once after each optimizer.step().

    schedule = LambdaLR(optimizer, warmup_cosine(warmup_steps=100, total_steps=1000))

Its state (base_lr, last_epoch, last_lr) is plain numbers, so it goes into a checkpoint with
mg.save next to the model's and the optimizer's (whose state dict holds the groups' current
rates). A lambda is code and is not saved: rebuild the scheduler with the same settings, then
load its state (as in torch).

This module is torch's path (minigrad.optim.lr_scheduler.StepLR); the code is in files named
for what they hold: scheduler.py (LRScheduler, the base), step_schedules.py (formulas of the
step count), cyclic_schedules.py (warm restarts, one cycle, warmup_cosine),
combined_schedules.py (SequentialLR, ChainedScheduler), reduce_lr_on_plateau.py.
"""

from .combined_schedules import ChainedScheduler, SequentialLR
from .cyclic_schedules import CosineAnnealingWarmRestarts, OneCycleLR, warmup_cosine
from .reduce_lr_on_plateau import ReduceLROnPlateau
from .scheduler import LRScheduler
from .step_schedules import ConstantLR, CosineAnnealingLR, ExponentialLR, LambdaLR
from .step_schedules import LinearLR, MultiplicativeLR, MultiStepLR, PolynomialLR, StepLR

# fmt: off
__all__ = [
    "LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ExponentialLR",
    "ConstantLR", "LinearLR", "PolynomialLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
    "OneCycleLR", "SequentialLR", "ChainedScheduler", "ReduceLROnPlateau", "warmup_cosine",
]
# fmt: on
