"""Schedules made of schedules: SequentialLR (one after another, at milestones) and
ChainedScheduler (all at once, their factors multiplied), as torch's
(torch.optim.lr_scheduler)."""

import bisect
from collections import OrderedDict

from .optimizer import Optimizer
from .scheduler import LRScheduler, _fresh_start, _whole_number


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
                "SequentialLR expects one milestone fewer than schedulers; "
                f"got {len(schedulers)} schedulers and {len(milestones)} milestones"
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
        # making the schedulers has moved the rates: start again
        for group in optimizer.param_groups:
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
                    "ChainedScheduler expects schedulers (not ReduceLROnPlateau) made on one "
                    "optimizer"
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


__all__ = ["SequentialLR", "ChainedScheduler"]
