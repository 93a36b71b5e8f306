"""Optimizers: SGD and Adam (torch.optim semantics), and clip_grad_norm_.

    opt = mg.optim.Adam(model.parameters(), lr=1e-3)
    for x, y in batches:
        opt.zero_grad()
        mg.cross_entropy(model(x), y).backward()
        mg.optim.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()

Updates happen in place on each parameter's array (modules, state dicts and the
optimizer keep pointing at the same memory). Parameters whose .grad is None are skipped.
There are no param_groups: one optimizer has one set of hyper-parameters, kept as
attributes (opt.lr = 1e-4 changes the learning rate).
"""

import math
import numbers
from collections import OrderedDict

import numpy as np

from . import kernels
from .tensor import Tensor


def clip_grad_norm_(parameters, max_norm):
    """Scale all gradients together so that their joint L2 norm is at most max_norm.

    As torch.nn.utils.clip_grad_norm_: when the total norm exceeds max_norm every gradient is
    multiplied by max_norm / (total_norm + 1e-6). Returns the total norm before clipping (a float).
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    max_norm = float(max_norm)
    if not max_norm >= 0:
        raise ValueError(f"clip_grad_norm_: max_norm must be >= 0; got {max_norm}")
    grads = [p.grad.data for p in parameters if p.grad is not None]
    total = math.sqrt(sum(float(np.dot(g.ravel(), g.ravel())) for g in grads if g.size))
    scale = max_norm / (total + 1e-6)
    if scale < 1:
        for g in grads:
            g *= g.dtype.type(scale)
    return total


def _number(name, value, low, high=None):
    """Check a hyper-parameter: a real number in [low, high)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number; got {value!r} of type {type(value).__name__}")
    value = float(value)
    if value < low or (high is not None and value >= high) or math.isnan(value):
        bounds = f"[{low}, " + (f"{high})" if high is not None else "inf)")
        raise ValueError(f"{name} must be in {bounds}; got {value}")
    return value


class Optimizer:
    """Holds the parameters, per-parameter state and hyper-parameters; subclasses define step().

    `hyper_parameters` names the attributes that state_dict() saves and load_state_dict() restores.
    `state[i]` is a dict of arrays/numbers for the i-th parameter (created on its first step).
    """

    hyper_parameters = ()

    def __init__(self, params):
        params = [params] if isinstance(params, Tensor) else list(params)
        if not params:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        seen = set()
        for index, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__} optimizes Tensors; parameter {index} is a "
                                f"{type(p).__name__}")
            if not p.requires_grad or not p.is_leaf:
                raise ValueError(f"{type(self).__name__}: parameter {index} (shape {p.shape}) must be a leaf "
                                 f"tensor with requires_grad=True")
            if id(p) in seen:
                raise ValueError(f"{type(self).__name__}: parameter {index} (shape {p.shape}) appears more "
                                 f"than once in the parameter list")
            seen.add(id(p))
        self.params = params
        self.state = {}

    def zero_grad(self):
        """Forget the gradients (sets .grad to None, as torch does by default)."""
        for p in self.params:
            p.grad = None

    def step(self):
        raise NotImplementedError

    # -- state --------------------------------------------------------------------------------
    def state_dict(self):
        """A flat OrderedDict that mg.save can store: hyper-parameters by name (numbers; betas as
        a 2-element array) and 'state.<param index>.<name>' -> copies of the per-parameter arrays."""
        result = OrderedDict((name, self._get_hyper(name)) for name in self.hyper_parameters)
        for index in sorted(self.state):
            for name, value in self.state[index].items():
                result[f"state.{index}.{name}"] = value if isinstance(value, numbers.Number) else np.array(value)
        return result

    def load_state_dict(self, state_dict):
        """Restore hyper-parameters and per-parameter state from state_dict() (or mg.load of it).

        The optimizer must hold the same parameters in the same order; shapes are checked.
        """
        problems = [f"missing key {name!r}" for name in self.hyper_parameters if name not in state_dict]
        state = {}
        for key, value in state_dict.items():
            if key in self.hyper_parameters:
                continue
            parts = key.split(".")
            if len(parts) != 3 or parts[0] != "state" or not parts[1].isdigit():
                problems.append(f"unexpected key {key!r}")
                continue
            index, name = int(parts[1]), parts[2]
            if index >= len(self.params):
                problems.append(f"{key}: parameter index {index} out of range for {len(self.params)} parameters")
                continue
            value = np.asarray(value)
            param = self.params[index]
            if value.shape == param.shape and value.dtype.kind == "f":  # a buffer like exp_avg
                state.setdefault(index, {})[name] = np.array(value, dtype=param.dtype, copy=True)
            elif value.ndim == 0:  # a count like Adam's step
                state.setdefault(index, {})[name] = value.item()
            else:
                problems.append(f"{key}: expected shape {param.shape}, got {value.shape}")
        if problems:
            raise ValueError(f"{type(self).__name__}.load_state_dict failed: " + "; ".join(problems))
        for name in self.hyper_parameters:
            self._set_hyper(name, state_dict[name])
        self.state = state

    def _get_hyper(self, name):
        value = getattr(self, name)
        return np.array(value, dtype=np.float64) if isinstance(value, tuple) else value

    def _set_hyper(self, name, value):
        value = np.asarray(value)
        setattr(self, name, tuple(float(v) for v in value) if value.ndim else value.item())

    def __repr__(self):
        settings = ", ".join(f"{name}={getattr(self, name)}" for name in self.hyper_parameters)
        return f"{type(self).__name__}({len(self.params)} parameters, {settings})"


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum and L2 weight decay (torch.optim.SGD):

        g = grad + weight_decay * p
        buf = g (first step), then buf = momentum * buf + g
        p -= lr * (buf if momentum else g)
    """

    hyper_parameters = ("lr", "momentum", "weight_decay")

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        super().__init__(params)
        self.lr = _number("lr", lr, 0)  # 0 is allowed, as in torch (e.g. a warm-up that starts at 0)
        self.momentum = _number("momentum", momentum, 0)
        self.weight_decay = _number("weight_decay", weight_decay, 0)

    def step(self):
        for index, p in enumerate(self.params):
            if p.grad is None:
                continue
            g = p.grad.data
            if self.weight_decay:
                g = g + p.data.dtype.type(self.weight_decay) * p.data
            if self.momentum:
                state = self.state.setdefault(index, {})
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = np.array(g, dtype=p.dtype, copy=True)
                else:
                    buffer = state["momentum_buffer"]
                    buffer *= p.data.dtype.type(self.momentum)
                    buffer += g
                g = state["momentum_buffer"]
            p.data -= p.data.dtype.type(self.lr) * g


class Adam(Optimizer):
    """Adam (torch.optim.Adam, L2 weight decay added to the gradient, not AdamW).

    Per parameter, one kernel pass (kernels.adam_update) updates exp_avg, exp_avg_sq and the
    parameter in place with bias-corrected moments.
    """

    hyper_parameters = ("lr", "betas", "eps", "weight_decay")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params)
        self.lr = _number("lr", lr, 0)  # 0 is allowed, as in torch (e.g. a warm-up that starts at 0)
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2); got {betas!r}")
        self.betas = (_number("betas[0]", betas[0], 0, high=1), _number("betas[1]", betas[1], 0, high=1))
        self.eps = _number("eps", eps, 0)
        self.weight_decay = _number("weight_decay", weight_decay, 0)

    def step(self):
        beta1, beta2 = self.betas
        for index, p in enumerate(self.params):
            if p.grad is None:
                continue
            state = self.state.setdefault(index, {})
            if not state:
                state["step"] = 0
                state["exp_avg"] = np.zeros(p.shape, p.dtype)
                state["exp_avg_sq"] = np.zeros(p.shape, p.dtype)
            state["step"] += 1
            kernels.adam_update(p.data, p.grad.data, state["exp_avg"], state["exp_avg_sq"], state["step"],
                                self.lr, beta1, beta2, self.eps, self.weight_decay)


__all__ = ["Optimizer", "SGD", "Adam", "clip_grad_norm_"]
