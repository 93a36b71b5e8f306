"""ReduceLROnPlateau (torch.optim.lr_scheduler): the rate cut by a factor when a measured
metric has stopped improving for `patience` steps."""

import math
import numbers
from collections import OrderedDict

from .checks import non_negative
from .optimizer import Optimizer
from .scheduler import _checked_state, _count, _per_group, _whole_number


class ReduceLROnPlateau:
    """Cut each group's lr by `factor` when a metric has not improved for `patience` steps, as
    torch.optim.lr_scheduler.ReduceLROnPlateau: call step(metric) after each evaluation.

    mode "min" (a loss) or "max" (an accuracy); an improvement beats the best so far by more than
    threshold, relative (threshold_mode "rel") or absolute ("abs"). After a cut, `cooldown`
    steps pass before bad steps count again. No rate goes below min_lr (a number, or one per
    group), and a cut smaller than eps is not made.
    """

    def __init__(
        self,
        optimizer,
        mode="min",
        factor=0.1,
        patience=10,
        threshold=1e-4,
        threshold_mode="rel",
        cooldown=0,
        min_lr=0,
        eps=1e-8,
    ):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"ReduceLROnPlateau expects an mg.optim optimizer; got {type(optimizer).__name__}"
            )
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError(
                "ReduceLROnPlateau: mode must be 'min' or 'max' and threshold_mode 'rel' or 'abs'; "
                f"got {mode!r} and {threshold_mode!r}"
            )
        self.factor = non_negative("factor", factor)
        if self.factor >= 1:
            raise ValueError(f"factor must be < 1 (a cut); got {self.factor}")
        min_lrs = _per_group("min_lr", min_lr, len(optimizer.param_groups))
        self.optimizer, self.mode, self.threshold_mode = optimizer, mode, threshold_mode
        self.min_lrs = [non_negative("min_lr", value) for value in min_lrs]
        self.patience = _whole_number("patience", patience, 0)
        self.cooldown = _whole_number("cooldown", cooldown, 0)
        self.threshold, self.eps = non_negative("threshold", threshold), non_negative("eps", eps)
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs, self.cooldown_counter, self.last_epoch = 0, 0, 0
        self.last_lrs = [group["lr"] for group in optimizer.param_groups]

    def _better(self, value):
        if self.mode == "min":
            return value < (
                self.best * (1 - self.threshold)
                if self.threshold_mode == "rel"
                else self.best - self.threshold
            )
        return value > (
            self.best * (1 + self.threshold)
            if self.threshold_mode == "rel"
            else self.best + self.threshold
        )

    def step(self, metrics):
        """Count one evaluation with its metric (a number or a 0-d tensor)."""
        try:
            value = float(metrics)
        except (TypeError, ValueError):
            raise TypeError(
                f"ReduceLROnPlateau.step: expected the metric as a number or a 0-d tensor; "
                f"got {metrics!r}"
            ) from None
        self.last_epoch += 1
        if self._better(value):
            self.best, self.num_bad_epochs = value, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
                cut = max(group["lr"] * self.factor, floor)
                if group["lr"] - cut > self.eps:
                    group["lr"] = cut
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self.last_lrs = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        return list(self.last_lrs)

    def state_dict(self):
        """best, num_bad_epochs, cooldown_counter and last_epoch (numbers; the settings are
        rebuilt)."""
        return OrderedDict(
            best=self.best,
            num_bad_epochs=self.num_bad_epochs,
            cooldown_counter=self.cooldown_counter,
            last_epoch=self.last_epoch,
        )

    def load_state_dict(self, state_dict):
        def best(name, value):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
                raise ValueError(f"best must be a number; got {value!r}")
            return float(value)

        self.__dict__.update(
            _checked_state(
                self,
                state_dict,
                {
                    "best": best,
                    "num_bad_epochs": _count,
                    "cooldown_counter": _count,
                    "last_epoch": _count,
                },
            )
        )


__all__ = ["ReduceLROnPlateau"]
