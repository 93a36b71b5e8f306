"""Optimizers (torch.optim semantics), learning-rate schedules and clip_grad_norm_.

    optimizer = mg.optim.AdamW(model.parameters(), lr=2e-3)
    warmup = mg.optim.lr_scheduler.warmup_cosine(100, 1000)
    schedule = mg.optim.lr_scheduler.LambdaLR(optimizer, warmup)
    for x, y in batches:
        optimizer.zero_grad()
        mg.cross_entropy(model(x), y).backward()
        mg.optim.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()

Updates happen in place on each parameter's array (modules, state dicts and the optimizer
keep pointing at the same memory). Parameters whose .grad is None are skipped. Parameter
groups work as in torch (a list of dicts, each with "params" and its own settings; the
optimizer's `param_groups`); `opt.lr = 1e-4` sets the rate of every group. optimizer.py
holds what they share, sgd.py and adam.py the update rules; per_parameter.py the step that
torch's other everyday optimizers share (rmsprop.py, adagrad.py with Adadelta,
adam_variants.py with Adamax, NAdam and RAdam); lbfgs.py LBFGS (closure-driven, with
the strong-Wolfe line search); checks.py the checks of their settings and
state; clip_grad.py clip_grad_norm_ and clip_grad_value_; lr_scheduler.py the schedules (the
files it imports them from are listed in its docstring).
"""

from . import lr_scheduler
from .adagrad import Adadelta, Adagrad
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

# fmt: off
__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax",
    "NAdam", "RAdam", "LBFGS", "clip_grad_norm_", "clip_grad_value_", "lr_scheduler",
]
# fmt: on
