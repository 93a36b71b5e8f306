"""Activation functions beyond relu / tanh / sigmoid, with PyTorch's formulas and defaults.

Each Function states its output and its local gradient. GELU runs in a kernel (it sits in
every Transformer feed-forward layer and numpy has no erf); the others are a few numpy
ufuncs each way.

    gelu(x, approximate="none")   x * Phi(x), Phi the standard normal CDF
                                  ("tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))))
    silu(x)                       x * sigmoid(x)
    leaky_relu(x, 0.01)           x for x > 0, negative_slope * x otherwise
    elu(x, alpha=1.0)             x for x > 0, alpha * (exp(x) - 1) otherwise
    softplus(x, beta=1, threshold=20)
                                  log(1 + exp(beta x)) / beta, and x where beta x > threshold
"""

import numpy as np

from .. import kernels
from ..errors import ArgumentError, DTypeError
from ..tensor import Function, Tensor


def _float_input(name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor; got {type(x).__name__}")
    if x.dtype.kind != "f":
        raise DTypeError(f"{name}: expected a float32 or float64 tensor; got dtype {x.dtype}")
    return x


def _sigmoid(x):
    """1 / (1 + exp(-x)) in the tanh form: no overflow warning for large |x|."""
    return (np.tanh(x * x.dtype.type(0.5)) + 1) * x.dtype.type(0.5)


class GELU(Function):
    """y = x Phi(x); dy/dx = Phi(x) + x phi(x) (or the tanh form's derivative)."""

    @staticmethod
    def forward(ctx, x, approximate):
        ctx.save_for_backward(x)
        ctx.approximate = approximate
        return kernels.gelu_forward(x, approximate)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return kernels.gelu_backward(x, grad, ctx.approximate)


class SiLU(Function):
    """y = x s with s = sigmoid(x); dy/dx = s (1 + x (1 - s))."""

    @staticmethod
    def forward(ctx, x):
        s = _sigmoid(x)
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved
        return grad * s * (1 + x * (1 - s))


class LeakyReLU(Function):
    """y = x where x > 0, else slope x; dy/dx = 1 or slope (slope at 0, as in torch)."""

    @staticmethod
    def forward(ctx, x, negative_slope):
        positive = x > 0
        ctx.save_for_backward(positive)
        ctx.slope = x.dtype.type(negative_slope)
        return np.where(positive, x, x * ctx.slope)

    @staticmethod
    def backward(ctx, grad):
        (positive,) = ctx.saved
        return np.where(positive, grad, grad * ctx.slope)


class ELU(Function):
    """y = x where x > 0, else alpha (exp(x) - 1); dy/dx = 1 or alpha exp(x)."""

    @staticmethod
    def forward(ctx, x, alpha):
        alpha = x.dtype.type(alpha)
        negative_part = alpha * np.expm1(np.minimum(x, 0))  # exp only where it cannot overflow
        ctx.save_for_backward(x, negative_part)
        ctx.alpha = alpha
        return np.where(x > 0, x, negative_part)

    @staticmethod
    def backward(ctx, grad):
        x, negative_part = ctx.saved
        return np.where(x > 0, grad, grad * (negative_part + ctx.alpha))  # alpha exp(x) = part + alpha


class Softplus(Function):
    """y = log(1 + exp(beta x)) / beta, or x where beta x > threshold (linear there, as in torch);
    dy/dx = sigmoid(beta x), or 1 where beta x > threshold."""

    @staticmethod
    def forward(ctx, x, beta, threshold):
        scaled = x * x.dtype.type(beta)
        linear = scaled > threshold
        ctx.save_for_backward(scaled, linear)
        soft = np.logaddexp(0, scaled).astype(x.dtype, copy=False) / x.dtype.type(beta)  # log(1 + e^z), stable
        return np.where(linear, x, soft)

    @staticmethod
    def backward(ctx, grad):
        scaled, linear = ctx.saved
        return np.where(linear, grad, grad * _sigmoid(scaled))


def gelu(x, approximate="none"):
    """GELU(x) = x * Phi(x) (torch.nn.functional.gelu); approximate="tanh" for the tanh form."""
    if approximate not in ("none", "tanh"):
        raise ArgumentError(f"gelu: approximate must be 'none' or 'tanh'; got {approximate!r}")
    return GELU.apply(_float_input("gelu", x), approximate=approximate)


def silu(x):
    """SiLU (swish): x * sigmoid(x)."""
    return SiLU.apply(_float_input("silu", x))


def leaky_relu(x, negative_slope=0.01):
    """x where x > 0, negative_slope * x elsewhere."""
    return LeakyReLU.apply(_float_input("leaky_relu", x), negative_slope=float(negative_slope))


def elu(x, alpha=1.0):
    """x where x > 0, alpha * (exp(x) - 1) elsewhere."""
    return ELU.apply(_float_input("elu", x), alpha=float(alpha))


def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, reverting to x where beta * x > threshold (as torch)."""
    return Softplus.apply(_float_input("softplus", x), beta=float(beta), threshold=float(threshold))


__all__ = ["gelu", "silu", "leaky_relu", "elu", "softplus"]
