"""The schedules whose rate is a formula of the step count: LambdaLR, MultiplicativeLR, StepLR,
MultiStepLR, ExponentialLR, ConstantLR, LinearLR, PolynomialLR and CosineAnnealingLR, as torch's
(torch.optim.lr_scheduler)."""

import bisect
import math
import numbers

import numpy as np

from .checks import non_negative
from .optimizer import Optimizer
from .scheduler import LRScheduler, _positive_number, _whole_number


class LambdaLR(LRScheduler):
    """lr = base_lr * lr_lambda(count) in each group, as torch's LambdaLR. lr_lambda is one
    function for every group or a list of them, one per group; it takes an int >= 0 and
    returns a finite number >= 0."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.lr_lambda, self.lr_lambdas = lr_lambda, _lambdas("LambdaLR", optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def _next(self, count, lr, base_lr, group):
        return lr if base_lr is None else self._rate(count, base_lr, group)

    def _rate(self, count, base_lr, group):
        return base_lr * _finite_factor("LambdaLR", count, self.lr_lambdas[group](count))


def _lambdas(name, optimizer, lr_lambda):
    """lr_lambda as a list of one function per parameter group (one function: the same for all)."""
    groups = len(optimizer.param_groups) if isinstance(optimizer, Optimizer) else 1
    lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
    if len(lambdas) != groups:
        raise ValueError(
            f"{name} expects one lr_lambda, or a list of one per parameter group ({groups}); "
            f"got a list of {len(lambdas)}"
        )
    for function in lambdas:
        if not callable(function):
            raise TypeError(
                f"{name} expects lr_lambda to be a function of the step count; "
                f"got {type(function).__name__}"
            )
    return lambdas


def _finite_factor(name, count, factor):
    """What lr_lambda(count) returned, as a float: a finite number >= 0 (a 0-d tensor or array
    too)."""
    if (
        getattr(factor, "ndim", None) == 0
        and getattr(factor, "dtype", np.dtype(object)).kind in "iuf"
    ):
        factor = factor.item()
    if (
        isinstance(factor, bool)
        or not isinstance(factor, numbers.Real)
        or not 0 <= factor < math.inf
    ):
        raise ValueError(
            f"{name}: lr_lambda({count}) must return a finite number >= 0; got {factor!r}"
        )
    return float(factor)


class MultiplicativeLR(LRScheduler):
    """lr times lr_lambda(count) at each step after the first, as torch's MultiplicativeLR (so
    lr = base_lr * lr_lambda(1) * ... * lr_lambda(count)). lr_lambda: one function or a list of
    one per group, returning a finite number >= 0."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.lr_lambdas = _lambdas("MultiplicativeLR", optimizer, lr_lambda)
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def _factor(self, count, group):
        return _finite_factor("MultiplicativeLR", count, self.lr_lambdas[group](count))

    def _rate(self, count, base_lr, group):
        return base_lr * math.prod(self._factor(k, group) for k in range(1, count + 1))

    def _next(self, count, lr, base_lr, group):
        return lr if count == 0 else self._times(count, lr, group)

    def _times(self, count, lr, group):
        return lr if group >= len(self.lr_lambdas) else lr * self._factor(count, group)

    def _jump(self, count):
        """As torch's, which has no closed form for it: taking over in a SequentialLR, it
        multiplies the current rate by lr_lambda(count)."""
        self._set(count, lambda g, group, base: self._times(count, group["lr"], g))


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (count // step_size), as torch's StepLR."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = _whole_number("step_size", step_size, 1)
        self.gamma = non_negative("gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def _rate(self, count, base_lr, group):
        return base_lr * self.gamma ** (count // self.step_size)

    def _next(self, count, lr, base_lr, group):
        return lr if count == 0 or count % self.step_size else lr * self.gamma


class MultiStepLR(LRScheduler):
    """lr = base_lr * gamma ** (how many milestones are <= count), as torch's MultiStepLR."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        # any order; a repeat cuts twice
        milestones = sorted(_whole_number("milestones", m, 0) for m in milestones)
        self.milestones, self.gamma = milestones, non_negative("gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def _rate(self, count, base_lr, group):
        return base_lr * self.gamma ** bisect.bisect_right(self.milestones, count)

    def _next(self, count, lr, base_lr, group):
        cuts = self.milestones.count(count)
        return lr * self.gamma**cuts if cuts else lr


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** count, as torch's ExponentialLR."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = non_negative("gamma", gamma)
        super().__init__(optimizer, last_epoch)

    def _rate(self, count, base_lr, group):
        return base_lr * self.gamma**count

    def _next(self, count, lr, base_lr, group):
        return lr if count == 0 else lr * self.gamma


class ConstantLR(LRScheduler):
    """lr = base_lr * factor for the first total_iters counts, then base_lr, as torch's
    ConstantLR."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        self.factor = non_negative("factor", factor)
        if self.factor > 1:
            raise ValueError(f"factor must be in [0, 1]; got {self.factor}")
        self.total_iters = _whole_number("total_iters", total_iters, 0)
        super().__init__(optimizer, last_epoch)

    def _rate(self, count, base_lr, group):
        return base_lr * (self.factor if count < self.total_iters else 1.0)

    def _next(self, count, lr, base_lr, group):
        if count == 0:
            return lr * self.factor
        if count != self.total_iters or self.factor == 0:  # factor 0: torch would divide by it
            return lr
        return lr / self.factor


class LinearLR(LRScheduler):
    """lr = base_lr * factor, the factor going linearly from start_factor at count 0 to
    end_factor at count total_iters and staying there, as torch's LinearLR (a warm-up when
    start_factor < 1)."""

    def __init__(
        self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5, last_epoch=-1
    ):
        self.start_factor = _positive_number("start_factor", start_factor)
        self.end_factor = non_negative("end_factor", end_factor)
        if self.start_factor > 1 or self.end_factor > 1:
            raise ValueError(
                "start_factor must be in (0, 1] and end_factor in [0, 1]; "
                f"got {self.start_factor} and {self.end_factor}"
            )
        self.total_iters = _whole_number("total_iters", total_iters, 0)
        super().__init__(optimizer, last_epoch)

    def _rate(self, count, base_lr, group):
        done = min(count, self.total_iters) / self.total_iters if self.total_iters else 1.0
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * done)

    def _next(self, count, lr, base_lr, group):
        if count == 0:
            return lr * self.start_factor
        if count > self.total_iters:
            return lr
        change = self.end_factor - self.start_factor
        return lr * (1 + change / (self.total_iters * self.start_factor + (count - 1) * change))


class PolynomialLR(LRScheduler):
    """lr = base_lr * (1 - min(count, total_iters) / total_iters) ** power, as torch's
    PolynomialLR: down to 0 at total_iters (a straight line with power 1), then 0."""

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1):
        self.total_iters = _whole_number("total_iters", total_iters, 0)
        self.power = non_negative("power", power)
        super().__init__(optimizer, last_epoch)

    def _rate(self, count, base_lr, group):
        if self.total_iters == 0:
            return base_lr
        return base_lr * (1.0 - min(count, self.total_iters) / self.total_iters) ** self.power

    def _next(self, count, lr, base_lr, group):
        if count == 0 or count > self.total_iters:
            return lr
        return (
            lr
            * ((1.0 - count / self.total_iters) / (1.0 - (count - 1) / self.total_iters))
            ** self.power
        )


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * count / T_max)) / 2, as torch's
    CosineAnnealingLR (past T_max the cosine goes on, back up, as torch's does)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):  # noqa: N803 (torch's argument name)
        self.T_max = _whole_number("T_max", T_max, 1)
        self.eta_min = non_negative("eta_min", eta_min)
        super().__init__(optimizer, last_epoch)

    def _rate(self, count, base_lr, group):
        return (
            self.eta_min
            + (base_lr - self.eta_min) * (1 + math.cos(math.pi * count / self.T_max)) / 2
        )

    def _next(self, count, lr, base_lr, group):
        if count == 0 or base_lr is None:
            return lr
        # the bottom of a period: start back up
        if (count - 1 - self.T_max) % (2 * self.T_max) == 0:
            return lr + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
        return (1 + math.cos(math.pi * count / self.T_max)) / (
            1 + math.cos(math.pi * (count - 1) / self.T_max)
        ) * (lr - self.eta_min) + self.eta_min


# fmt: off
__all__ = [
    "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ExponentialLR",
    "ConstantLR", "LinearLR", "PolynomialLR", "CosineAnnealingLR",
]
# fmt: on
