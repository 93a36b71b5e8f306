"""Stochastic gradient descent with momentum (torch.optim.SGD)."""

import numpy as np

from .optimizer import Optimizer, buffer, changed_in_place, non_negative


class SGD(Optimizer):
    """Stochastic gradient descent with optional momentum and L2 weight decay (torch.optim.SGD):

        g = grad + weight_decay * p
        buf = g (first step), then buf = momentum * buf + g
        p -= lr * (buf if momentum else g)
    """

    hyper_parameters = {"lr": non_negative, "momentum": non_negative, "weight_decay": non_negative}
    state_checks = {"momentum_buffer": buffer}

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0):
        # lr = 0 is allowed, as in torch (a warm-up may start at 0)
        super().__init__(params, lr=lr, momentum=momentum, weight_decay=weight_decay)

    def step(self):
        for index, p, group in self._each_parameter():
            if p.grad is None:
                continue
            param, g = p.data, p.grad.data
            scalar = param.dtype.type
            if group["weight_decay"]:
                g = g + scalar(group["weight_decay"]) * param
            if group["momentum"]:
                state = self.state.setdefault(index, {})
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = np.array(g, dtype=param.dtype, order="C")
                else:
                    momentum_buffer = state["momentum_buffer"]
                    momentum_buffer *= scalar(group["momentum"])
                    momentum_buffer += g
                g = state["momentum_buffer"]
            param -= scalar(group["lr"]) * g  # on the array itself: `p.data -=` would also reassign it
            changed_in_place(p)
