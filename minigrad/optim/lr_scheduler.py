"""Learning-rate schedules (torch.optim.lr_scheduler semantics): a scheduler sets each
parameter group's lr = base_lr * lr_lambda(step) and is stepped once after each
optimizer.step().

    schedule = LambdaLR(optimizer, warmup_cosine(warmup_steps=100, total_steps=1000))

Its state (base_lr, last_epoch, last_lr) is plain numbers, so it goes into a checkpoint with
mg.save next to the model's and the optimizer's. The lambda itself is code and is not saved:
rebuild the scheduler with the same lambda, then load its state (as in torch).
"""

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


class LambdaLR:
    """lr = base_lr * lr_lambda(last_epoch) in each parameter group, as
    torch.optim.lr_scheduler.LambdaLR.

    base_lrs are the groups' rates when the scheduler is made. lr_lambda is one function for
    every group or a list of them, one per group. Making the scheduler already applies
    lr_lambda(0) (last_epoch 0); each step() moves to the next count. lr_lambda takes an
    int >= 0 and returns a finite number >= 0. ("epoch" is torch's name: one step() per
    optimizer step is the usual use.)
    """

    def __init__(self, optimizer, lr_lambda):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"LambdaLR expects an mg.optim optimizer; got {type(optimizer).__name__}")
        groups = len(optimizer.param_groups)
        lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) else [lr_lambda] * groups
        if len(lambdas) != groups:
            raise ValueError(f"LambdaLR expects one lr_lambda, or a list of one per parameter group ({groups}); "
                             f"got a list of {len(lambdas)}")
        for function in lambdas:
            if not callable(function):
                raise TypeError(f"LambdaLR expects lr_lambda to be a function of the step count; "
                                f"got {type(function).__name__}")
        self.optimizer, self.lr_lambda, self.lr_lambdas = optimizer, lr_lambda, lambdas
        self.base_lrs = [group["lr"] for group in optimizer.param_groups]
        self.last_epoch = -1
        self.step()

    def step(self):
        """Advance one count and set each group's lr for the next optimizer step (all or none)."""
        factors = []
        for function in self.lr_lambdas:
            factor = function(self.last_epoch + 1)
            if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or not 0 <= factor < math.inf:
                raise ValueError(f"LambdaLR: lr_lambda({self.last_epoch + 1}) must return a finite number >= 0; "
                                 f"got {factor!r}")
            factors.append(float(factor))
        self.last_epoch += 1
        self.last_lrs = [base * factor for base, factor in zip(self.base_lrs, factors)]
        for group, lr in zip(self.optimizer.param_groups, self.last_lrs):
            group["lr"] = lr

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
        arrays, one entry per group)."""
        pack = (lambda values: values[0]) if len(self.base_lrs) == 1 else (lambda values: np.array(values))
        return OrderedDict(base_lr=pack(self.base_lrs), last_epoch=self.last_epoch, last_lr=pack(self.last_lrs))

    def load_state_dict(self, state_dict):
        """Restore base_lr, last_epoch and last_lr (checked; one ValueError lists each wrong
        entry). As in torch, the groups' lr is restored by the optimizer's own state dict."""
        groups = len(self.base_lrs)

        def rates(name, value):
            values = np.asarray(value).reshape(-1).tolist() if isinstance(value, (np.ndarray, list, tuple)) else [value]
            if len(values) != groups:
                raise ValueError(f"{name} must hold one rate per parameter group ({groups}); got {len(values)}")
            return [non_negative(name, v) for v in values]
        checks = {"base_lr": rates, "last_epoch": lambda name, value: _whole_number(name, value, 0), "last_lr": rates}
        problems, values = [], {}
        for key, check in checks.items():
            if key not in state_dict:
                problems.append(f"missing key {key!r}")
                continue
            value = state_dict[key]
            try:
                values[key] = check(key, value.item() if isinstance(value, np.ndarray) and value.ndim == 0 else value)
            except (TypeError, ValueError) as error:
                problems.append(str(error))
        problems += [f"unexpected key {key!r}" for key in state_dict if key not in checks]
        if problems:
            raise ValueError("LambdaLR.load_state_dict failed: " + "; ".join(problems))
        self.base_lrs, self.last_epoch, self.last_lrs = values["base_lr"], values["last_epoch"], values["last_lr"]

    def __repr__(self):
        return f"LambdaLR(base_lr={self.base_lr}, last_epoch={self.last_epoch}, last_lr={self.last_lr})"


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


__all__ = ["LambdaLR", "warmup_cosine"]
