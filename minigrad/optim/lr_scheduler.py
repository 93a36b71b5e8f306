"""Learning-rate schedules (torch.optim.lr_scheduler semantics): a scheduler sets
optimizer.lr = base_lr * lr_lambda(step) and is stepped once after each optimizer.step().

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
    """lr = base_lr * lr_lambda(last_epoch), as torch.optim.lr_scheduler.LambdaLR.

    base_lr is the optimizer's lr when the scheduler is made. Making it already applies
    lr_lambda(0) (last_epoch 0); each step() moves to the next count. lr_lambda takes an
    int >= 0 and returns a finite number >= 0. ("epoch" is torch's name: one step() per
    optimizer step is the usual use.)
    """

    def __init__(self, optimizer, lr_lambda):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"LambdaLR expects an mg.optim optimizer; got {type(optimizer).__name__}")
        if not callable(lr_lambda):
            raise TypeError(f"LambdaLR expects lr_lambda to be a function of the step count; "
                            f"got {type(lr_lambda).__name__}")
        self.optimizer, self.lr_lambda = optimizer, lr_lambda
        self.base_lr = optimizer.lr
        self.last_epoch = -1
        self.step()

    def step(self):
        """Advance one count and set the optimizer's lr for the next optimizer step."""
        factor = self.lr_lambda(self.last_epoch + 1)
        if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or not 0 <= factor < math.inf:
            raise ValueError(f"LambdaLR: lr_lambda({self.last_epoch + 1}) must return a finite number >= 0; "
                             f"got {factor!r}")
        self.last_epoch += 1
        self.optimizer.lr = self.last_lr = self.base_lr * float(factor)

    def get_last_lr(self):
        """[the lr set by the last step()] (a list, one entry per parameter group, as in torch)."""
        return [self.last_lr]

    def state_dict(self):
        return OrderedDict(base_lr=self.base_lr, last_epoch=self.last_epoch, last_lr=self.last_lr)

    def load_state_dict(self, state_dict):
        """Restore base_lr, last_epoch and last_lr (checked; one ValueError lists each wrong
        entry). As in torch, the optimizer's lr is restored by the optimizer's own state dict."""
        checks = {"base_lr": non_negative, "last_epoch": lambda name, value: _whole_number(name, value, 0),
                  "last_lr": non_negative}
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
        self.__dict__.update(values)

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
