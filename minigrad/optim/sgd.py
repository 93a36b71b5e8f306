"""Stochastic gradient descent with momentum (torch.optim.SGD)."""

import numpy as np

from .checks import buffer, check_torch_flags, finite, flag, non_negative
from .optimizer import Optimizer, changed_in_place


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum and L2 weight decay (torch.optim.SGD):

        g = grad (-grad with maximize=True) + weight_decay * p
        buf = g (first step), then buf = momentum * buf + (1 - dampening) * g
        p -= lr * (g + momentum * buf if nesterov else buf if momentum else g)

    Nesterov momentum needs momentum > 0 and dampening 0, as in torch. foreach and fused are
    accepted and change nothing; differentiable=True is not supported.
    """

    hyper_parameters = {
        "lr": non_negative,
        "momentum": non_negative,
        "dampening": finite,
        "weight_decay": non_negative,
        "nesterov": flag,
        "maximize": flag,
    }
    optional_hyper_parameters = ("dampening", "nesterov", "maximize")  # older state dicts lack them
    state_checks = {"momentum_buffer": buffer}

    def __init__(
        self,
        params,
        lr=1e-3,
        momentum=0.0,
        dampening=0.0,
        weight_decay=0.0,
        nesterov=False,
        *,
        maximize=False,
        foreach=None,
        differentiable=False,
        fused=None,
    ):
        # lr = 0 is allowed, as in torch (a warm-up may start at 0)
        check_torch_flags("SGD", differentiable)
        super().__init__(
            params,
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
        )
        for group in self.param_groups:
            _check_nesterov(group)

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        _check_nesterov(self.param_groups[-1])

    def _update(self):
        for index, p, group in self._each_parameter():
            if p.grad is None:
                continue
            param, g = p._data, p.grad._data
            scalar = param.dtype.type
            if group["maximize"]:
                g = -g
            if group["weight_decay"]:
                g = g + scalar(group["weight_decay"]) * param
            if group["momentum"]:
                momentum = scalar(group["momentum"])
                state = self.state.setdefault(index, {})
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = np.array(g, dtype=param.dtype, order="C")
                else:
                    momentum_buffer = state["momentum_buffer"]
                    momentum_buffer *= momentum
                    momentum_buffer += (
                        g if group["dampening"] == 0 else scalar(1 - group["dampening"]) * g
                    )
                g = (
                    g + momentum * state["momentum_buffer"]
                    if group["nesterov"]
                    else state["momentum_buffer"]
                )
            param -= scalar(group["lr"]) * g  # into the array itself
            changed_in_place(p)


def _check_nesterov(group):
    if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
        raise ValueError(
            "SGD: Nesterov momentum needs momentum > 0 and dampening 0; "
            f"got momentum={group['momentum']}, dampening={group['dampening']}"
        )
