"""Three variants of Adam (adam.py), as torch.optim has them. Each keeps Adam's running average
of the gradient (exp_avg) and changes what it is divided by or how far it steps:

    Adamax (Kingma & Ba, 2015)   the largest recent |gradient| instead of the root mean square
    NAdam  (Dozat, 2016)         Nesterov momentum: a look-ahead step with a warming-up momentum
    RAdam  (Liu et al., 2020)    no adaptive division until the second moments are trustworthy
                                 (a rectification term), plain momentum SGD before that
"""

import math

import numpy as np

from .checks import betas, buffer, buffer_of, check_torch_flags, flag
from .checks import non_negative, non_negative_buffer, step_count
from .per_parameter import PerParameterOptimizer


def _update_exp_avg(exp_avg, grad, beta1):
    """exp_avg = beta1 * exp_avg + (1 - beta1) * grad, in place."""
    exp_avg += (grad - exp_avg) * exp_avg.dtype.type(1 - beta1)


def _update_exp_avg_sq(exp_avg_sq, grad, beta2):
    """exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad ** 2, in place."""
    scalar = exp_avg_sq.dtype.type
    exp_avg_sq *= scalar(beta2)
    exp_avg_sq += scalar(1 - beta2) * grad * grad


class Adamax(PerParameterOptimizer):
    """Adamax (torch.optim.Adamax): Adam with the infinity norm in place of the second moment.

        g = grad (-grad with maximize=True) + weight_decay * p
        exp_avg = beta1 * exp_avg + (1 - beta1) * g
        exp_inf = max(beta2 * exp_inf, |g| + eps)
        p -= lr / (1 - beta1 ** step) * exp_avg / exp_inf

    foreach and capturable are accepted and change nothing; differentiable=True is not
    supported. State per parameter: step, exp_avg, exp_inf. numpy updates.
    """

    hyper_parameters = {
        "lr": non_negative,
        "betas": betas,
        "eps": non_negative,
        "weight_decay": non_negative,
        "maximize": flag,
    }
    state_checks = {
        "step": step_count,
        "exp_avg": buffer,
        "exp_inf": buffer_of("decayed largest gradient magnitudes"),
    }

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        check_torch_flags(type(self).__name__, differentiable)
        super().__init__(
            params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize
        )

    def _new_state(self, param, group):
        return {"step": 0, "exp_avg": np.zeros_like(param), "exp_inf": np.zeros_like(param)}

    def _update_parameter(self, param, grad, state, group):
        scalar = param.dtype.type
        (beta1, beta2), exp_inf = group["betas"], state["exp_inf"]
        _update_exp_avg(state["exp_avg"], grad, beta1)
        exp_inf *= scalar(beta2)
        np.maximum(exp_inf, np.abs(grad) + scalar(group["eps"]), out=exp_inf)
        param -= scalar(group["lr"] / (1 - beta1 ** state["step"])) * state["exp_avg"] / exp_inf


def _momentum_product(name, value, param=None):
    """NAdam's product of the momenta so far: a number in (0, 1] (1 before the first step)."""
    value = non_negative(name, value)
    if not 0 < value <= 1:
        raise ValueError(f"{name} is a product of momenta in (0, 1]; got {value}")
    return value


class NAdam(PerParameterOptimizer):
    """NAdam (torch.optim.NAdam): Adam with Nesterov momentum. The momentum of step t,
    mu_t = beta1 * (1 - 0.96 ** (t * momentum_decay) / 2), warms up towards beta1, and each
    step looks one momentum ahead:

        g = grad (-grad with maximize=True) + weight_decay * p (or, with
            decoupled_weight_decay=True, p *= 1 - lr * weight_decay first, as NAdamW)
        exp_avg and exp_avg_sq: Adam's averages of g and g ** 2
        denom = sqrt(exp_avg_sq / (1 - beta2 ** t)) + eps
        p -= lr * (1 - mu_t) / (1 - mu_1 ... mu_t) * g / denom
        p -= lr * mu_(t+1) / (1 - mu_1 ... mu_(t+1)) * exp_avg / denom

    foreach and capturable are accepted and change nothing; differentiable=True is not
    supported. State per parameter: step, mu_product (the running product mu_1 ... mu_t, a
    float64 number; torch keeps it as a tensor of its default dtype, float32 unless changed),
    exp_avg, exp_avg_sq. numpy updates.
    """

    hyper_parameters = {
        "lr": non_negative,
        "betas": betas,
        "eps": non_negative,
        "weight_decay": non_negative,
        "momentum_decay": non_negative,
        "decoupled_weight_decay": flag,
        "maximize": flag,
    }
    state_checks = {
        "step": step_count,
        "mu_product": _momentum_product,
        "exp_avg": buffer,
        "exp_avg_sq": non_negative_buffer,
    }

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        check_torch_flags(type(self).__name__, differentiable)
        super().__init__(
            params,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            momentum_decay=momentum_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
        )

    def _new_state(self, param, group):
        return {
            "step": 0,
            "mu_product": 1.0,
            "exp_avg": np.zeros_like(param),
            "exp_avg_sq": np.zeros_like(param),
        }

    def _update_parameter(self, param, grad, state, group):
        scalar = param.dtype.type
        (beta1, beta2), step, lr = group["betas"], state["step"], group["lr"]
        momentum = beta1 * (1 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
        next_momentum = beta1 * (1 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
        state["mu_product"] *= momentum
        _update_exp_avg(state["exp_avg"], grad, beta1)
        _update_exp_avg_sq(state["exp_avg_sq"], grad, beta2)
        denominator = np.sqrt(state["exp_avg_sq"] / scalar(1 - beta2**step)) + scalar(group["eps"])
        param -= scalar(lr * (1 - momentum) / (1 - state["mu_product"])) * grad / denominator
        param -= (
            scalar(lr * next_momentum / (1 - state["mu_product"] * next_momentum))
            * state["exp_avg"]
            / denominator
        )


class RAdam(PerParameterOptimizer):
    """RAdam (torch.optim.RAdam): Adam whose adaptive division waits until the variance of the
    second moments is tractable. With rho_inf = 2 / (1 - beta2) - 1 and, at step t,
    rho_t = rho_inf - 2 t beta2 ** t / (1 - beta2 ** t):

        g = grad (-grad with maximize=True) + weight_decay * p (or, with
            decoupled_weight_decay=True, p *= 1 - lr * weight_decay first)
        exp_avg and exp_avg_sq: Adam's averages of g and g ** 2; m = exp_avg / (1 - beta1 ** t)
        rho_t > 5:  p -= lr * m * sqrt(1 - beta2 ** t) / (sqrt(exp_avg_sq) + eps) * r_t, where
                    r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
        otherwise:  p -= lr * m

    foreach and capturable are accepted and change nothing; differentiable=True is not
    supported. State per parameter: step, exp_avg, exp_avg_sq. numpy updates.
    """

    hyper_parameters = {
        "lr": non_negative,
        "betas": betas,
        "eps": non_negative,
        "weight_decay": non_negative,
        "decoupled_weight_decay": flag,
        "maximize": flag,
    }
    state_checks = {"step": step_count, "exp_avg": buffer, "exp_avg_sq": non_negative_buffer}

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        check_torch_flags(type(self).__name__, differentiable)
        super().__init__(
            params,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize,
        )

    def _new_state(self, param, group):
        return {"step": 0, "exp_avg": np.zeros_like(param), "exp_avg_sq": np.zeros_like(param)}

    def _update_parameter(self, param, grad, state, group):
        scalar = param.dtype.type
        (beta1, beta2), step, exp_avg_sq = group["betas"], state["step"], state["exp_avg_sq"]
        _update_exp_avg(state["exp_avg"], grad, beta1)
        _update_exp_avg_sq(exp_avg_sq, grad, beta2)
        bias_correction2 = 1 - beta2**step
        corrected_exp_avg = state["exp_avg"] / scalar(1 - beta1**step)
        rho_inf = 2 / (1 - beta2) - 1
        rho = rho_inf - 2 * step * beta2**step / bias_correction2
        if rho > 5:
            rectification = math.sqrt(
                (rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho)
            )
            adaptive_lr = scalar(math.sqrt(bias_correction2)) / (
                np.sqrt(exp_avg_sq) + scalar(group["eps"])
            )
            param -= corrected_exp_avg * scalar(group["lr"]) * adaptive_lr * scalar(rectification)
        else:
            param -= corrected_exp_avg * scalar(group["lr"])
