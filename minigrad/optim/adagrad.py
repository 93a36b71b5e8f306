"""Adagrad (Duchi et al., 2011) and Adadelta (Zeiler, 2012), as torch.optim has them: each
divides the gradient by the root of its accumulated squares, Adagrad by their sum (so the step
only shrinks), Adadelta by a running average, scaled by a running average of its own steps."""

import numpy as np

from .checks import buffer_of, check_torch_flags, flag
from .checks import non_negative, non_negative_buffer, step_count
from .per_parameter import PerParameterOptimizer


def _steps_taken(name, value, param=None):
    """Adagrad's step count: an integer >= 0 (its state exists from construction, before any
    step)."""
    array = np.asarray(value)
    if array.shape or array.dtype.kind not in "iuf" or not float(array).is_integer() or array < 0:
        raise ValueError(f"{name} must be an integer >= 0; got {value!r}")
    return int(array)


class Adagrad(PerParameterOptimizer):
    """Adagrad (torch.optim.Adagrad): each weight's step is divided by the root of the sum of
    all its squared gradients so far.

        g = grad (-grad with maximize=True) + weight_decay * p
        sum += g * g                    (sum starts at initial_accumulator_value)
        p -= lr / (1 + (step - 1) * lr_decay) * g / (sqrt(sum) + eps)

    As in torch, the state exists from construction (step 0, sum full of
    initial_accumulator_value), so opt.state[p] and state_dict() hold it before the first step.
    Each group's sum starts at that group's initial_accumulator_value (torch fills every group's
    with the constructor's). foreach and fused are accepted and change nothing; differentiable=True
    is not supported. numpy updates.
    """

    hyper_parameters = {
        "lr": non_negative,
        "lr_decay": non_negative,
        "weight_decay": non_negative,
        "initial_accumulator_value": non_negative,
        "eps": non_negative,
        "maximize": flag,
    }
    state_checks = {"step": _steps_taken, "sum": buffer_of("sums of squared gradients")}

    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0,
        weight_decay=0,
        initial_accumulator_value=0,
        eps=1e-10,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        fused=None,
    ):
        check_torch_flags(type(self).__name__, differentiable)
        super().__init__(
            params,
            lr=lr,
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
            eps=eps,
            maximize=maximize,
        )

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        first = len(self.params) - len(group["params"])
        for index, p in enumerate(group["params"], start=first):
            self.state[index] = self._new_state(p._data, group)

    def _new_state(self, param, group):
        return {
            "step": 0,
            "sum": np.full(param.shape, group["initial_accumulator_value"], param.dtype),
        }

    def _update_parameter(self, param, grad, state, group):
        scalar = param.dtype.type
        decayed_lr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state["sum"] += grad * grad
        param -= scalar(decayed_lr) * grad / (np.sqrt(state["sum"]) + scalar(group["eps"]))


def _decay_rate(name, value):
    """Adadelta's rho: a number in [0, 1], as torch checks it."""
    value = non_negative(name, value)
    if value > 1:
        raise ValueError(f"{name} must be in [0, 1]; got {value}")
    return value


class Adadelta(PerParameterOptimizer):
    """Adadelta (torch.optim.Adadelta): steps sized by the running root mean square of earlier
    steps over that of the gradients, so that lr=1 needs no tuning.

        g = grad (-grad with maximize=True) + weight_decay * p
        square_avg = rho * square_avg + (1 - rho) * g * g
        delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta * delta
        p -= lr * delta

    foreach and capturable are accepted and change nothing; differentiable=True is not
    supported. State per parameter: step, square_avg, acc_delta. numpy updates.
    """

    hyper_parameters = {
        "lr": non_negative,
        "rho": _decay_rate,
        "eps": non_negative,
        "weight_decay": non_negative,
        "maximize": flag,
    }
    state_checks = {
        "step": step_count,
        "square_avg": non_negative_buffer,
        "acc_delta": buffer_of("averages of squared steps"),
    }

    def __init__(
        self,
        params,
        lr=1.0,
        rho=0.9,
        eps=1e-6,
        weight_decay=0,
        foreach=None,
        *,
        capturable=False,
        maximize=False,
        differentiable=False,
    ):
        check_torch_flags(type(self).__name__, differentiable)
        super().__init__(
            params, lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize
        )

    def _new_state(self, param, group):
        return {"step": 0, "square_avg": np.zeros_like(param), "acc_delta": np.zeros_like(param)}

    def _update_parameter(self, param, grad, state, group):
        scalar = param.dtype.type
        rho, eps = group["rho"], scalar(group["eps"])
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg *= scalar(rho)
        square_avg += scalar(1 - rho) * grad * grad
        delta = np.sqrt(acc_delta + eps) / np.sqrt(square_avg + eps) * grad
        acc_delta *= scalar(rho)
        acc_delta += scalar(1 - rho) * delta * delta
        param -= scalar(group["lr"]) * delta
