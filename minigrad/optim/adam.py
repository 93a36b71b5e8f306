"""Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019), as torch.optim has them.

Both keep two running averages per parameter, of the gradient (exp_avg) and of its square
(exp_avg_sq), and step each weight by lr * (bias-corrected exp_avg) / (sqrt(bias-corrected
exp_avg_sq) + eps). They differ only in weight decay: Adam adds weight_decay * p to the
gradient (L2), so the decay is rescaled by the second moments like the gradient is; AdamW
shrinks the weights directly, p *= 1 - lr * weight_decay, which is what "weight decay" means.
One fused kernel pass per parameter (kernels.adam_update) does the rest.
"""

import numpy as np

from .. import kernels
from .checks import betas, buffer, check_torch_flags, flag
from .checks import non_negative, non_negative_buffer, step_count
from .optimizer import Optimizer, changed_in_place


class Adam(Optimizer):
    """Adam (torch.optim.Adam): L2 weight decay added to the gradient. See AdamW for decoupled
    decay. decoupled_weight_decay=True makes it AdamW (torch 2.13's Adam has the same switch).
    maximize=True climbs the objective (steps along +grad), as in torch; amsgrad=True divides by the
    largest second moment seen so far (state "max_exp_avg_sq"). foreach, fused and capturable (how
    torch runs the update on its devices) are accepted and change nothing; differentiable=True is
    not supported (ValueError).

    State per parameter: step (an int), exp_avg, exp_avg_sq (arrays of its shape and dtype).
    Parameters that are not C-contiguous (a transposed view, say) are updated through a
    contiguous copy that is written back into their own memory.
    """

    hyper_parameters = {
        "lr": non_negative,
        "betas": betas,
        "eps": non_negative,
        "weight_decay": non_negative,
        "amsgrad": flag,
        "maximize": flag,
        "decoupled_weight_decay": flag,
    }
    # older state dicts lack them
    optional_hyper_parameters = ("amsgrad", "maximize", "decoupled_weight_decay")
    state_checks = {
        "step": step_count,
        "exp_avg": buffer,
        "exp_avg_sq": non_negative_buffer,
        "max_exp_avg_sq": non_negative_buffer,
    }
    optional_state = ("max_exp_avg_sq",)  # amsgrad's only

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
        decoupled_weight_decay=False,
    ):
        # lr = 0 is allowed, as in torch (a warm-up may start at 0)
        check_torch_flags(type(self).__name__, differentiable)
        super().__init__(
            params,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            decoupled_weight_decay=decoupled_weight_decay,
        )

    def _update(self):
        for index, p, group in self._parameters_with_grads():
            lr, (beta1, beta2), weight_decay = group["lr"], group["betas"], group["weight_decay"]
            state = self.state.setdefault(index, {})
            if not state:
                state.update(
                    step=0,
                    exp_avg=np.zeros(p.shape, p.dtype),
                    exp_avg_sq=np.zeros(p.shape, p.dtype),
                )
            state["step"] += 1
            param = p._data
            work = param if param.flags.c_contiguous else np.ascontiguousarray(param)
            decoupled = group["decoupled_weight_decay"]
            if decoupled and weight_decay:
                work *= work.dtype.type(1 - lr * weight_decay)
            grad = -p.grad._data if group["maximize"] else p.grad._data
            l2 = 0.0 if decoupled else weight_decay
            if group["amsgrad"]:
                _amsgrad_update(work, grad, state, lr, beta1, beta2, group["eps"], l2)
            else:
                kernels.adam_update(
                    work,
                    grad,
                    state["exp_avg"],
                    state["exp_avg_sq"],
                    state["step"],
                    lr,
                    beta1,
                    beta2,
                    group["eps"],
                    l2,
                )
            if work is not param:
                param[...] = work
            changed_in_place(p)


class AdamW(Adam):
    """AdamW (torch.optim.AdamW): decoupled weight decay, default weight_decay=0.01.

    Each step first shrinks the parameter, p *= 1 - lr * weight_decay, then takes the Adam
    step with the plain gradient. Same state and state dict as Adam (whose
    decoupled_weight_decay is True here).
    """

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
    ):
        super().__init__(
            params,
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )


def _amsgrad_update(param, grad, state, lr, beta1, beta2, eps, weight_decay):
    """Adam with amsgrad (Reddi et al., 2018), as torch's: the denominator uses the largest second
    moment seen so far (state "max_exp_avg_sq"), so the step size never grows back. numpy, in
    place, in the parameter's dtype (the fused kernel covers the usual case)."""
    scalar = param.dtype.type
    grad = np.asarray(grad, dtype=param.dtype)
    if weight_decay:
        grad = grad + scalar(weight_decay) * param
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg += (grad - exp_avg) * scalar(1 - beta1)
    exp_avg_sq *= scalar(beta2)
    exp_avg_sq += scalar(1 - beta2) * grad * grad
    largest = state.setdefault("max_exp_avg_sq", np.zeros_like(exp_avg_sq))
    np.maximum(largest, exp_avg_sq, out=largest)
    step = state["step"]
    denominator = np.sqrt(largest) / scalar(np.sqrt(1 - beta2**step)) + scalar(eps)
    param -= scalar(lr / (1 - beta1**step)) * exp_avg / denominator
