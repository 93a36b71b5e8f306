"""The schedules that go up and down: CosineAnnealingWarmRestarts and OneCycleLR, as torch's
(torch.optim.lr_scheduler), and warmup_cosine, the factor of a linear warm-up then a cosine
decay, for LambdaLR."""

import math

from .checks import non_negative
from .optimizer import Optimizer
from .scheduler import LRScheduler, _epoch, _fresh_start
from .scheduler import _per_group, _positive_number, _whole_number


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
        # the step where the climb ends (torch's float arithmetic)
        up = pct_start * self.total_steps - 1
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
                        f"OneCycleLR: with {type(optimizer).__name__} the momentum is beta1, which "
                        f"must be in [0, 1); got max_momentum={high}, base_momentum={low}"
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


def warmup_cosine(warmup_steps, total_steps, min_ratio=0.0):
    """A lr_lambda for LambdaLR: a linear warm-up, then a cosine decay (the schedule of the
    Transformer language models, e.g. GPT-3's; same shape as torch's LinearLR then
    CosineAnnealingLR).

        step < warmup_steps:  (step + 1) / warmup_steps    (reaches 1 on the last warm-up step)
        after:                min_ratio + (1 - min_ratio) * (1 + cos(pi * progress)) / 2

    with progress = min(1, (step - warmup_steps) / (total_steps - warmup_steps)), so the factor
    falls from 1 to min_ratio at total_steps and stays there.
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


__all__ = ["CosineAnnealingWarmRestarts", "OneCycleLR", "warmup_cosine"]
