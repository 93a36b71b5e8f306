"""Twins of kernels/gelu.py: GELU, exact (erf) and tanh-approximated, forward and backward."""

import math

import numpy as np


_erfc = np.frompyfunc(math.erfc, 1, 1)  # numpy has no erf; a reference may be slow


def gelu_forward(x, approximate="none"):
    """GELU(x) = x * Phi(x), Phi the standard normal CDF = erfc(-x / sqrt(2)) / 2 (torch's
    approximate="none"); approximate="tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate == "tanh":
        return np.asarray(
            0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
        ).astype(x.dtype)
    cdf = 0.5 * np.asarray(_erfc(-x.astype(np.float64) / math.sqrt(2)), dtype=np.float64)
    return np.asarray(x * cdf).astype(x.dtype)


def gelu_backward(x, grad_y, approximate="none"):
    """grad_y * d GELU(x) / dx: Phi(x) + x phi(x) with phi(x) = exp(-x^2/2) / sqrt(2 pi) (exact
    form), or the derivative of the tanh form."""
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        th = np.tanh(inner)
        slope = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x * x)
        return np.asarray(grad_y * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * slope)).astype(
            x.dtype
        )
    wide = x.astype(np.float64)
    cdf = 0.5 * np.asarray(_erfc(-wide / math.sqrt(2)), dtype=np.float64)
    return np.asarray(
        grad_y * (cdf + wide * np.exp(-0.5 * wide * wide) / math.sqrt(2 * math.pi))
    ).astype(x.dtype)
