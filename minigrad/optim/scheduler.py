"""LRScheduler, what every learning-rate schedule of torch.optim.lr_scheduler shares (stepping,
last_lr, state dicts, the chainable form), and the checks of its settings that the schedules
share. The schedules themselves: step_schedules.py, cyclic_schedules.py, combined_schedules.py,
reduce_lr_on_plateau.py; all of them are imported under torch's path by lr_scheduler.py."""

import math
import numbers
from collections import OrderedDict

import numpy as np

from .checks import non_negative
from .optimizer import Optimizer


def _whole_number(name, value, low):
    """An int >= low (a bool, float or array is refused), as a Python int."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}; got {value!r}")
    return int(value)


def _count(name, value):
    return _whole_number(name, value, 0)


def _checked_state(scheduler, state_dict, checks):
    """{key: check(key, value)} for every key of checks (0-d arrays, as mg.load gives numbers, read
    as numbers); one ValueError naming the scheduler lists every missing, wrong or unexpected
    key."""
    problems, values = [], {}
    for key, check in checks.items():
        if key not in state_dict:
            problems.append(f"missing key {key!r}")
            continue
        value = state_dict[key]
        try:
            values[key] = check(
                key, value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value
            )
        except (TypeError, ValueError) as error:
            problems.append(str(error))
    problems += [f"unexpected key {key!r}" for key in state_dict if key not in checks]
    if problems:
        raise ValueError(
            f"{type(scheduler).__name__}.load_state_dict failed: " + "; ".join(problems)
        )
    return values


def _fresh_start(name, last_epoch):
    """torch's last_epoch argument: -1 (a fresh schedule, the default) is the only value taken. A
    schedule resumes from a checkpoint through load_state_dict, which restores the count."""
    if isinstance(last_epoch, np.ndarray) and last_epoch.ndim == 0:
        last_epoch = last_epoch.item()
    if (
        isinstance(last_epoch, bool)
        or not isinstance(last_epoch, numbers.Integral)
        or last_epoch != -1
    ):
        raise ValueError(
            f"{name}: last_epoch must be -1 (a fresh schedule); got {last_epoch!r}. To resume a "
            f"schedule, make it fresh and call load_state_dict with the saved state_dict()."
        )


def _epoch(name, value):
    """A count that may be a fraction (CosineAnnealingWarmRestarts.step(epoch + i / batches)): a
    real >= 0."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a number >= 0; got {value!r}")
    return value


def _positive_number(name, value):
    value = non_negative(name, value)
    if value == 0:
        raise ValueError(f"{name} must be > 0; got {value}")
    return value


def _per_group(name, value, groups):
    """value as a list of one entry per parameter group: a list of that length, or one value for
    all."""
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ValueError(
                f"{name} must be one number or a list of one per parameter group ({groups}); "
                f"got {len(value)}"
            )
        return list(value)
    return [value] * groups


class LRScheduler:
    """What every schedule shares (torch.optim.lr_scheduler semantics).

    base_lrs: the groups' rates when the first scheduler on the optimizer was made (kept in
    each group as "initial_lr", as torch does, so that a second scheduler starts from them
    too). last_epoch: the count of step() calls (0 right after making it, which already sets
    the rates for count 0). As in torch, step() takes each group's current rate to the next
    one (_next: StepLR multiplies it by gamma at each step_size-th count ...), so schedules
    stepped together compound and a rate set by hand between steps is carried on; _rate is the
    same schedule as a closed form of the count, from the base rate (LambdaLR's only form;
    SequentialLR starts each schedule from it). ("epoch" is torch's name: one step() per
    optimizer step is the usual use.)"""

    extra_state = {}  # a schedule's own state beyond the count: attribute -> check(name, value)

    def __init__(self, optimizer, last_epoch=-1):
        _fresh_start(type(self).__name__, last_epoch)
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"{type(self).__name__} expects an mg.optim optimizer; "
                f"got {type(optimizer).__name__}"
            )
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # the first scheduler notes the rates it started from
            group.setdefault("initial_lr", group["lr"])
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = -1
        self.step()

    def _rate(self, count, base_lr, group):
        raise NotImplementedError

    def _next(self, count, lr, base_lr, group):
        """The rate for `count` from the group's current rate `lr` (torch's chainable form)."""
        return self._rate(count, base_lr, group)

    def _set(self, count, rate_of):
        """Set every group's lr to rate_of(group index, group) (all computed first: a failure
        changes nothing); a group added since the scheduler was made has no base rate: None."""
        groups = self.optimizer.param_groups
        rates = [
            rate_of(g, group, self.base_lrs[g] if g < len(self.base_lrs) else None)
            for g, group in enumerate(groups)
        ]
        self.last_epoch = count
        for group, rate in zip(groups, rates):
            group["lr"] = float(rate)
        self.last_lrs = [group["lr"] for group in groups]

    def step(self):
        """Advance one count and set each group's lr for the next optimizer step (all or none)."""
        count = self.last_epoch + 1
        self._set(count, lambda g, group, base: self._next(count, group["lr"], base, g))

    def _jump(self, count):
        """Set the rates of `count` by the closed form (SequentialLR's switch to this schedule)."""
        self._set(
            count,
            lambda g, group, base: group["lr"] if base is None else self._rate(count, base, g),
        )

    def get_last_lr(self):
        """The lr each group got from the last step() (a list, one entry per parameter group)."""
        return list(self.last_lrs)

    # one group (the usual case): single numbers, as the state dict stores them
    base_lr = property(lambda self: self._single(self.base_lrs))
    last_lr = property(lambda self: self._single(self.last_lrs))

    def _single(self, values):
        return values[0] if len(values) == 1 else list(values)

    def state_dict(self):
        """base_lr, last_epoch and last_lr: numbers (with several groups, base_lr and last_lr are
        arrays, one entry per group). The settings (gamma, T_max ...) are not saved: make the
        scheduler with the same ones, then load its state (as in torch)."""
        pack = (
            (lambda values: values[0])
            if len(self.base_lrs) == 1
            else (lambda values: np.array(values))
        )
        return OrderedDict(
            base_lr=pack(self.base_lrs),
            last_epoch=self.last_epoch,
            last_lr=pack(self.last_lrs),
            **{key: getattr(self, key) for key in self.extra_state},
        )

    def load_state_dict(self, state_dict):
        """Restore base_lr, last_epoch and last_lr (checked; one ValueError lists each wrong
        entry). As in torch, the groups' lr is restored by the optimizer's own state dict."""
        groups = len(self.base_lrs)

        def rates(name, value):
            values = (
                np.asarray(value).reshape(-1).tolist()
                if isinstance(value, (np.ndarray, list, tuple))
                else [value]
            )
            if len(values) != groups:
                raise ValueError(
                    f"{name} must hold one rate per parameter group ({groups}); got {len(values)}"
                )
            return [non_negative(name, v) for v in values]

        values = _checked_state(
            self,
            state_dict,
            {"base_lr": rates, "last_epoch": _count, "last_lr": rates, **self.extra_state},
        )
        self.base_lrs, self.last_epoch, self.last_lrs = (
            values["base_lr"],
            values["last_epoch"],
            values["last_lr"],
        )
        for key in self.extra_state:
            setattr(self, key, values[key])

    def __repr__(self):
        return (
            f"{type(self).__name__}(base_lr={self.base_lr}, last_epoch={self.last_epoch}, "
            f"last_lr={self.last_lr})"
        )


__all__ = ["LRScheduler"]
