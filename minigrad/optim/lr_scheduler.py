"""Learning-rate schedules (torch.optim.lr_scheduler semantics): a scheduler sets each
parameter group's lr and is stepped once after each optimizer.step().

    schedule = LambdaLR(optimizer, warmup_cosine(warmup_steps=100, total_steps=1000))

Its state (base_lr, last_epoch, last_lr) is plain numbers, so it goes into a checkpoint with
mg.save next to the model's and the optimizer's (whose state dict holds the groups' current
rates). A lambda is code and is not saved: rebuild the scheduler with the same settings, then
load its state (as in torch).
"""

import bisect
import math
import numbers
from collections import OrderedDict

import numpy as np

from .optimizer import Optimizer, non_negative


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
    as numbers); one ValueError naming the scheduler lists every missing, wrong or unexpected key."""
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

    extra_state = {}  # a schedule's own state beyond the count: attribute name -> check(name, value)

    def __init__(self, optimizer, last_epoch=-1):
        _fresh_start(type(self).__name__, last_epoch)
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"{type(self).__name__} expects an mg.optim optimizer; got {type(optimizer).__name__}"
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
        return f"{type(self).__name__}(base_lr={self.base_lr}, last_epoch={self.last_epoch}, last_lr={self.last_lr})"


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
    """What lr_lambda(count) returned, as a float: a finite number >= 0 (a 0-d tensor or array too)."""
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


def _epoch(name, value):
    """A count that may be a fraction (CosineAnnealingWarmRestarts.step(epoch + i / batches)): a real >= 0."""
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
        milestones = sorted(
            _whole_number("milestones", m, 0) for m in milestones
        )  # any order; a repeat cuts twice
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
    """lr = base_lr * factor for the first total_iters counts, then base_lr, as torch's ConstantLR."""

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
                f"start_factor must be in (0, 1] and end_factor in [0, 1]; got {self.start_factor} "
                f"and {self.end_factor}"
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
        if (count - 1 - self.T_max) % (
            2 * self.T_max
        ) == 0:  # the bottom of a period: start back up
            return lr + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
        return (1 + math.cos(math.pi * count / self.T_max)) / (
            1 + math.cos(math.pi * (count - 1) / self.T_max)
        ) * (lr - self.eta_min) + self.eta_min


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from base_lr to eta_min over T_i counts, then a restart at base_lr, each
    period T_mult times longer than the last (SGDR, Loshchilov & Hutter 2017), as torch's
    CosineAnnealingWarmRestarts:

        lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2

    T_cur counts from the last restart. step() advances one count; step(epoch) jumps to
    `epoch`, which may be a fraction (step(epoch + i / batches) inside an epoch, as torch's
    documentation shows). Like torch's, the rate comes from base_lr each time: a rate set by
    hand is not carried on. T_cur and T_i are in the state dict."""

    extra_state = {"T_cur": _epoch, "T_i": lambda name, value: _whole_number(name, value, 1)}

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1):  # noqa: N803 (torch's argument names)
        self.T_0 = _whole_number("T_0", T_0, 1)
        self.T_mult = _whole_number("T_mult", T_mult, 1)
        self.eta_min = non_negative("eta_min", eta_min)
        self.T_i, self.T_cur = self.T_0, -1
        super().__init__(optimizer, last_epoch)

    def _period(self, epoch):
        """(T_cur, T_i) at `epoch` (a number >= 0) from the start."""
        if epoch < self.T_0:
            return epoch, self.T_0
        if self.T_mult == 1:
            return epoch % self.T_0, self.T_0
        start, length = 0, self.T_0  # whole periods in integers: no rounding at a restart
        while epoch >= start + length:
            start, length = start + length, length * self.T_mult
        return epoch - start, length

    def _cosine(self, base_lr, t_cur, t_i):
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2

    def _rate(self, count, base_lr, group):
        return self._cosine(base_lr, *self._period(count))

    def step(self, epoch=None):
        """Advance one count, or go to `epoch` (a number >= 0, fractions allowed)."""
        if epoch is None and self.last_epoch >= 0:
            t_cur, t_i = self.T_cur + 1, self.T_i
            if t_cur >= t_i:
                t_cur, t_i = t_cur % t_i, t_i * self.T_mult
            count = self.last_epoch + 1
        else:
            epoch = _epoch("CosineAnnealingWarmRestarts.step: epoch", 0 if epoch is None else epoch)
            (t_cur, t_i), count = self._period(epoch), math.floor(epoch)
        self._set(
            count,
            lambda g, group, base: group["lr"] if base is None else self._cosine(base, t_cur, t_i),
        )
        self.T_cur, self.T_i = t_cur, t_i

    def _jump(self, count):
        super()._jump(count)
        self.T_cur, self.T_i = self._period(count)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, 2018), as torch's OneCycleLR: the rate climbs from
    max_lr / div_factor to max_lr over the first pct_start of total_steps, then falls to
    max_lr / div_factor / final_div_factor by the end (cosine or linear), while the momentum
    (SGD's momentum, or Adam's beta1) moves the other way, from max_momentum to base_momentum
    and back. three_phase=True goes back down to the starting rate symmetrically first, then
    falls to the minimum. Give total_steps, or epochs and steps_per_epoch.

    Call step() once per batch; stepping more than total_steps times raises, as in torch. Each
    group holds its "initial_lr", "max_lr", "min_lr" (and "max_momentum", "base_momentum"), and
    like torch's the rate comes from them each time: a rate set by hand is not carried on.
    max_lr, base_momentum and max_momentum may be a list, one per parameter group."""

    def __init__(
        self,
        optimizer,
        max_lr,
        total_steps=None,
        epochs=None,
        steps_per_epoch=None,
        pct_start=0.3,
        anneal_strategy="cos",
        cycle_momentum=True,
        base_momentum=0.85,
        max_momentum=0.95,
        div_factor=25.0,
        final_div_factor=1e4,
        three_phase=False,
        last_epoch=-1,
    ):
        _fresh_start("OneCycleLR", last_epoch)
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"OneCycleLR expects an mg.optim optimizer; got {type(optimizer).__name__}"
            )
        if total_steps is not None:
            self.total_steps = _whole_number("total_steps", total_steps, 1)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = _whole_number("epochs", epochs, 1) * _whole_number(
                "steps_per_epoch", steps_per_epoch, 1
            )
        else:
            raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
        pct_start = non_negative("pct_start", pct_start)
        if pct_start > 1:
            raise ValueError(f"pct_start must be in [0, 1]; got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be 'cos' or 'linear'; got {anneal_strategy!r}")
        self.anneal_strategy, self.cycle_momentum = anneal_strategy, bool(cycle_momentum)
        div_factor = _positive_number("div_factor", div_factor)
        final_div_factor = _positive_number("final_div_factor", final_div_factor)
        up = (
            pct_start * self.total_steps - 1
        )  # the step where the climb ends (torch's float arithmetic)
        if three_phase:
            self.phases = [
                (up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (
                    2 * pct_start * self.total_steps - 2,
                    "max_lr",
                    "initial_lr",
                    "base_momentum",
                    "max_momentum",
                ),
                (self.total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self.phases = [
                (up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (self.total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        groups = optimizer.param_groups
        max_lrs = [
            non_negative("max_lr", value) for value in _per_group("max_lr", max_lr, len(groups))
        ]
        if self.cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    f"OneCycleLR: cycle_momentum needs an optimizer with momentum or betas; "
                    f"{type(optimizer).__name__} has neither (pass cycle_momentum=False)"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            highs = [
                non_negative("max_momentum", v)
                for v in _per_group("max_momentum", max_momentum, len(groups))
            ]
            lows = [
                non_negative("base_momentum", v)
                for v in _per_group("base_momentum", base_momentum, len(groups))
            ]
            for high, low in zip(highs, lows):
                if self.use_beta1 and max(high, low) >= 1:
                    raise ValueError(
                        f"OneCycleLR: with {type(optimizer).__name__} the momentum is beta1, which must "
                        f"be in [0, 1); got max_momentum={high}, base_momentum={low}"
                    )
        for g, group in enumerate(groups):
            group["initial_lr"] = max_lrs[g] / div_factor
            group["max_lr"] = max_lrs[g]
            group["min_lr"] = group["initial_lr"] / final_div_factor
            if self.cycle_momentum:
                group["max_momentum"], group["base_momentum"] = highs[g], lows[g]
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, fraction):
        if self.anneal_strategy == "linear":
            return start + (end - start) * fraction
        return end + (start - end) / 2 * (math.cos(math.pi * fraction) + 1)

    def _value(self, count, group, start_of, end_of):
        """The rate (start_of, end_of = 1, 2) or momentum (3, 4) of `group` at `count`."""
        start_step = 0.0
        for k, phase in enumerate(self.phases):
            end_step = phase[0]
            if count <= end_step or k == len(self.phases) - 1:
                fraction = (
                    (count - start_step) / (end_step - start_step)
                    if end_step != start_step
                    else 1.0
                )
                return self._anneal(group[phase[start_of]], group[phase[end_of]], fraction)
            start_step = end_step

    def _rate(self, count, base_lr, group):
        if count > self.total_steps:
            raise ValueError(
                f"OneCycleLR: stepped {count} times, more than total_steps={self.total_steps}"
            )
        return self._value(count, self.optimizer.param_groups[group], 1, 2)

    def _next(self, count, lr, base_lr, group):
        return lr if base_lr is None else self._rate(count, base_lr, group)

    def _set(self, count, rate_of):
        super()._set(count, rate_of)
        if not self.cycle_momentum:
            return
        for group in self.optimizer.param_groups:
            if "max_momentum" not in group:  # a group added later
                continue
            momentum = self._value(count, group, 3, 4)
            if self.use_beta1:
                group["betas"] = (momentum,) + tuple(group["betas"][1:])
            else:
                group["momentum"] = momentum


def _per_group(name, value, groups):
    """value as a list of one entry per parameter group: a list of that length, or one value for all."""
    if isinstance(value, (list, tuple)):
        if len(value) != groups:
            raise ValueError(
                f"{name} must be one number or a list of one per parameter group ({groups}); "
                f"got {len(value)}"
            )
        return list(value)
    return [value] * groups


class SequentialLR(LRScheduler):
    """The schedulers one after the other, switching at the milestones (counts), as torch's
    SequentialLR: scheduler k takes over at milestone k-1, starting again from count 0 with
    its closed form (from the groups' "initial_lr"), then steps on. E.g. a LinearLR warm-up
    for 100 steps, then CosineAnnealingLR."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        _fresh_start("SequentialLR", last_epoch)
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"SequentialLR expects an mg.optim optimizer; got {type(optimizer).__name__}"
            )
        schedulers, milestones = (
            list(schedulers),
            [_whole_number("milestones", m, 1) for m in milestones],
        )
        if len(milestones) != len(schedulers) - 1 or not schedulers:
            raise ValueError(
                f"SequentialLR expects one milestone fewer than schedulers; got {len(schedulers)} "
                f"schedulers and {len(milestones)} milestones"
            )
        if milestones != sorted(milestones):
            raise ValueError(f"milestones must be increasing; got {milestones}")
        for scheduler in schedulers:
            if not isinstance(scheduler, LRScheduler) or scheduler.optimizer is not optimizer:
                raise ValueError(
                    "SequentialLR expects schedulers made on the optimizer it is given"
                )
        self.optimizer, self.schedulers, self.milestones = optimizer, schedulers, milestones
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        for (
            group
        ) in optimizer.param_groups:  # making the schedulers has moved the rates: start again
            group["lr"] = group["initial_lr"]
        for scheduler in schedulers:
            scheduler.last_epoch -= 1
        schedulers[0].step()  # the first one's count 0
        self.last_epoch, self.last_lrs = 0, schedulers[0].get_last_lr()

    def _active(self, count):
        """(the scheduler running at `count`, True when it takes over just then)."""
        k = bisect.bisect_right(self.milestones, count)
        return self.schedulers[k], k > 0 and self.milestones[k - 1] == count

    def step(self):
        count = self.last_epoch + 1
        scheduler, starting = self._active(count)
        if starting:
            scheduler._jump(0)
        else:
            scheduler.step()
        self.last_epoch, self.last_lrs = count, scheduler.get_last_lr()

    def _rate(self, count, base_lr, group):
        k = bisect.bisect_right(self.milestones, count)
        scheduler = self.schedulers[k]
        return scheduler._rate(
            count - (self.milestones[k - 1] if k else 0), scheduler.base_lrs[group], group
        )

    def load_state_dict(self, state_dict):
        """As LRScheduler's, and the scheduler running at the restored count gets its own count."""
        super().load_state_dict(state_dict)
        k = bisect.bisect_right(self.milestones, self.last_epoch)
        self.schedulers[k].last_epoch = self.last_epoch - (self.milestones[k - 1] if k else 0)


class ChainedScheduler:
    """Several schedules stepped together with one step() (torch's ChainedScheduler): each
    takes the groups' current rates to the next, so their factors multiply, e.g. a ConstantLR
    warm-up chained with an ExponentialLR decay. Its state dict holds each schedule's."""

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if not schedulers:
            raise ValueError("ChainedScheduler expects at least one scheduler")
        optimizer = schedulers[0].optimizer if optimizer is None else optimizer
        for scheduler in schedulers:
            if not isinstance(scheduler, LRScheduler) or scheduler.optimizer is not optimizer:
                raise ValueError(
                    "ChainedScheduler expects schedulers (not ReduceLROnPlateau) made on one optimizer"
                )
        self.optimizer, self._schedulers = optimizer, schedulers
        self.last_lrs = [group["lr"] for group in optimizer.param_groups]

    def step(self):
        for scheduler in self._schedulers:
            scheduler.step()
        self.last_lrs = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self):
        return list(self.last_lrs)

    def state_dict(self):
        """Each schedule's state under "schedulers.<k>." (flat, for mg.save)."""
        return OrderedDict(
            (f"schedulers.{k}.{key}", value)
            for k, scheduler in enumerate(self._schedulers)
            for key, value in scheduler.state_dict().items()
        )

    def load_state_dict(self, state_dict):
        parts = [{} for _ in self._schedulers]
        for key, value in state_dict.items():
            prefix, _, rest = key.partition(".")
            k, _, name = rest.partition(".")
            if prefix != "schedulers" or not k.isdigit() or int(k) >= len(parts) or not name:
                raise ValueError(f"ChainedScheduler.load_state_dict failed: unexpected key {key!r}")
            parts[int(k)][name] = value
        for scheduler, part in zip(self._schedulers, parts):
            scheduler.load_state_dict(part)
        self.last_lrs = [group["lr"] for group in self.optimizer.param_groups]


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
                f"ReduceLROnPlateau: mode must be 'min' or 'max' and threshold_mode 'rel' or 'abs'; "
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
        """best, num_bad_epochs, cooldown_counter and last_epoch (numbers; the settings are rebuilt)."""
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


def warmup_cosine(warmup_steps, total_steps, min_ratio=0.0):
    """A lr_lambda for LambdaLR: a linear warm-up, then a cosine decay (the schedule of the
    Transformer language models, e.g. GPT-3's; same shape as torch's LinearLR then
    CosineAnnealingLR).

        step < warmup_steps:   (step + 1) / warmup_steps         (reaches 1 on the last warm-up step)
        after:                 min_ratio + (1 - min_ratio) * (1 + cos(pi * progress)) / 2,
                               progress = (step - warmup_steps) / (total_steps - warmup_steps), at most 1

    so the factor falls from 1 to min_ratio at total_steps and stays there.
    """
    warmup_steps = _whole_number("warmup_steps", warmup_steps, 0)
    total_steps = _whole_number("total_steps", total_steps, 1)
    if warmup_steps > total_steps:
        raise ValueError(f"warmup_steps must be <= total_steps; got {warmup_steps} > {total_steps}")
    min_ratio = non_negative("min_ratio", min_ratio)
    if min_ratio > 1:
        raise ValueError(f"min_ratio must be in [0, 1]; got {min_ratio}")
    decay_steps = max(1, total_steps - warmup_steps)

    def factor(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / decay_steps)
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))

    factor.__qualname__ = f"warmup_cosine({warmup_steps}, {total_steps}, min_ratio={min_ratio})"
    return factor


__all__ = [
    "LRScheduler",
    "LambdaLR",
    "MultiplicativeLR",
    "StepLR",
    "MultiStepLR",
    "ExponentialLR",
    "ConstantLR",
    "LinearLR",
    "PolynomialLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "OneCycleLR",
    "SequentialLR",
    "ChainedScheduler",
    "ReduceLROnPlateau",
    "warmup_cosine",
]
