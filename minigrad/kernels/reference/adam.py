"""Twin of kernels/adam.py: one Adam step in place."""

import numpy as np


def adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay):
    """One Adam step in place on param, exp_avg and exp_avg_sq (torch.optim.Adam semantics).

    weight_decay is L2 added to the gradient (not AdamW); step counts from 1 and
    drives the bias corrections. grad is not modified. Returns None.
    """
    if weight_decay != 0:
        grad = grad + weight_decay * param
    exp_avg *= beta1
    exp_avg += (1 - beta1) * grad
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    denom = np.sqrt(exp_avg_sq) / np.sqrt(bias_correction2) + eps
    param -= (lr / bias_correction1) * exp_avg / denom
