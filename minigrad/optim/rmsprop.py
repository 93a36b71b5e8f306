"""RMSprop (Hinton's lecture notes, 2012; centered: Graves, 2013), as torch.optim.RMSprop."""

import numpy as np

from .checks import buffer, check_torch_flags, flag, non_negative, non_negative_buffer, step_count
from .per_parameter import PerParameterOptimizer


class RMSprop(PerParameterOptimizer):
    """RMSprop (torch.optim.RMSprop): divide the gradient by a running root mean square of it.

        g = grad (-grad with maximize=True) + weight_decay * p
        square_avg = alpha * square_avg + (1 - alpha) * g * g
        avg = sqrt(square_avg) + eps, or with centered=True sqrt(square_avg - grad_avg ** 2) + eps,
              where grad_avg = alpha * grad_avg + (1 - alpha) * g (a running mean of g)
        p -= lr * g / avg, or with momentum > 0: buf = momentum * buf + g / avg; p -= lr * buf

    The arguments are torch's, in its order (capturable and foreach, which change nothing here,
    come before maximize); differentiable=True is not supported. State per parameter: step,
    square_avg, plus momentum_buffer (momentum > 0) and grad_avg (centered). numpy updates.
    """

    hyper_parameters = {
        "lr": non_negative,
        "alpha": non_negative,
        "eps": non_negative,
        "weight_decay": non_negative,
        "momentum": non_negative,
        "centered": flag,
        "maximize": flag,
    }
    state_checks = {
        "step": step_count,
        "square_avg": non_negative_buffer,
        "momentum_buffer": buffer,
        "grad_avg": buffer,
    }
    optional_state = ("momentum_buffer", "grad_avg")

    def __init__(
        self,
        params,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0,
        momentum=0,
        centered=False,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        check_torch_flags(type(self).__name__, differentiable)
        super().__init__(
            params,
            lr=lr,
            alpha=alpha,
            eps=eps,
            weight_decay=weight_decay,
            momentum=momentum,
            centered=centered,
            maximize=maximize,
        )

    def _new_state(self, param, group):
        state = {"step": 0, "square_avg": np.zeros_like(param)}
        if group["momentum"] > 0:
            state["momentum_buffer"] = np.zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = np.zeros_like(param)
        return state

    def _update_parameter(self, param, grad, state, group):
        scalar = param.dtype.type
        alpha = group["alpha"]
        square_avg = state["square_avg"]
        square_avg *= scalar(alpha)
        square_avg += scalar(1 - alpha) * grad * grad
        if group["centered"]:
            # centered may be set after a step
            grad_avg = state.setdefault("grad_avg", np.zeros_like(param))
            grad_avg += (grad - grad_avg) * scalar(1 - alpha)
            avg = np.sqrt(square_avg - grad_avg * grad_avg)
        else:
            avg = np.sqrt(square_avg)
        avg += scalar(group["eps"])
        if group["momentum"] > 0:
            momentum_buffer = state.setdefault("momentum_buffer", np.zeros_like(param))
            momentum_buffer *= scalar(group["momentum"])
            momentum_buffer += grad / avg
            param -= scalar(group["lr"]) * momentum_buffer
        else:
            param -= scalar(group["lr"]) * grad / avg
