"""Activation functions beyond relu / tanh / sigmoid, with PyTorch's formulas and defaults.

Each Function states its output and its local gradient. GELU runs in a kernel (it sits in
every Transformer feed-forward layer and numpy has no erf); the others are a few numpy
ufuncs each way.

    gelu(x, approximate="none")   x * Phi(x), Phi the standard normal CDF
                                  ("tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))))
    silu(x)                       x * sigmoid(x)
    leaky_relu(x, 0.01)           x for x > 0, negative_slope * x otherwise
    elu(x, alpha=1.0)             x for x > 0, alpha * (exp(x) - 1) otherwise
    selu(x)                       scale * elu(x, alpha) with Klambauer et al.'s two constants
    celu(x, alpha=1.0)            x for x > 0, alpha * (exp(x / alpha) - 1) otherwise
    softplus(x, beta=1, threshold=20)
                                  log(1 + exp(beta x)) / beta, and x where beta x > threshold
    hardtanh(x, -1, 1)            x clipped to [min_val, max_val]
    hardsigmoid(x)                x / 6 + 1/2 clipped to [0, 1]
    hardswish(x)                  x * hardsigmoid(x)
    hardshrink(x, lambd=0.5)      x where |x| > lambd, else 0
    softshrink(x, lambd=0.5)      x - lambd * sign(x) where |x| > lambd, else 0
    tanhshrink(x)                 x - tanh(x)
    threshold(x, threshold, value) x where x > threshold, else value
    glu(x, dim=-1)                a * sigmoid(b), a and b the two halves of x along dim
    rrelu(x, lower, upper, training)
                                  x for x > 0, a * x otherwise: a drawn from U(lower, upper) per
                                  element while training, the mean (lower + upper) / 2 in eval

NaN goes where torch sends it: the comparisons are written so that a NaN input takes the
branch torch's kernels give it (the identity for elu, celu, selu, threshold and the shrinks).
"""

import math

import numpy as np

from .. import kernels
from ..errors import ArgumentError, ShapeError
from ..random import generator
from ..engine import Function, Tensor
from .args import float_tensor, normalize_dim
from .arithmetic import mul, sub
from .piecewise import masked_fill, where
from .conversion import as_float
from .unary import tanh
from .join import chunk
from .namespace import namespace
from .special import erf
from .registry import op

SELU_ALPHA = 1.6732632423543772848170429916717  # the fixed point of Klambauer et al. (2017)
SELU_SCALE = 1.0507009873554804934193349852946


def _float_input(name, x):
    return float_tensor(name, x, None)


def _sigmoid(x):
    """1 / (1 + exp(-x)) in the tanh form: no overflow warning for large |x|."""
    return (np.tanh(x * x.dtype.type(0.5)) + 1) * x.dtype.type(0.5)


class Sigmoid(Function):
    """y = 1 / (1 + e^-x); dy/dx = y (1 - y)."""

    higher_order = "backward"

    @staticmethod
    def forward(ctx, x):
        # tanh form: stable for large |x| in both directions
        y = ((np.tanh(x * 0.5) + 1) * 0.5).astype(x.dtype, copy=False)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad * y * (1 - y)


class Relu(Function):
    higher_order = "backward"  # the saved mask is a constant

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x > 0)
        return np.maximum(x, 0)

    @staticmethod
    def backward(ctx, grad):
        (positive,) = ctx.saved
        return grad * positive


@op
def sigmoid(x):
    """1 / (1 + e^-x) elementwise."""
    return Sigmoid.apply(as_float(x))


@op
def relu(x):
    """max(x, 0) elementwise (the dtype kept); gradient 1 where x > 0, else 0."""
    return Relu.apply(x)


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

    higher_order = "composite"

    @staticmethod
    def composite(ctx, x):
        if ctx.approximate == "tanh":
            inner = (x + 0.044715 * x * x * x) * math.sqrt(2 / math.pi)
            return 0.5 * x * (1 + inner.tanh())
        return 0.5 * x * (1 + erf(x * (1 / math.sqrt(2))))


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

    higher_order = "composite"

    @staticmethod
    def composite(ctx, x):
        return x * sigmoid(x)


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
        return namespace(grad).where(positive, grad, grad * ctx.slope)

    higher_order = "backward"


class ELU(Function):
    """y = x where x > 0, else alpha (exp(s x) - 1); dy/dx = 1 or alpha s exp(s x). The input
    scale s is 1 for elu and 1 / alpha for celu; NaN takes the identity side, as in torch."""

    @staticmethod
    def forward(ctx, x, alpha, input_scale):
        alpha, input_scale = x.dtype.type(alpha), x.dtype.type(input_scale)
        negative = x <= 0
        scaled = np.where(negative, x, 0) * input_scale  # no exp of the positives
        ctx.save_for_backward(negative, scaled)
        ctx.alpha, ctx.input_scale = alpha, input_scale
        return np.where(negative, alpha * np.expm1(scaled), x)

    @staticmethod
    def backward(ctx, grad):
        # alpha s e^(s x) directly: part + alpha would cancel to 0 for large -x
        negative, scaled = ctx.saved
        return np.where(negative, grad * (ctx.alpha * ctx.input_scale) * np.exp(scaled), grad)


class Softplus(Function):
    """y = log(1 + exp(beta x)) / beta, or x where beta x > threshold (linear there, as in torch);
    dy/dx = sigmoid(beta x), or 1 where beta x > threshold."""

    @staticmethod
    def forward(ctx, x, beta, threshold):
        scaled = x * x.dtype.type(beta)
        linear = scaled > threshold
        ctx.save_for_backward(scaled, linear)
        # log(1 + e^z), stable
        soft = np.logaddexp(0, scaled).astype(x.dtype, copy=False) / x.dtype.type(beta)
        return np.where(linear, x, soft)

    @staticmethod
    def backward(ctx, grad):
        scaled, linear = ctx.saved
        return np.where(linear, grad, grad * _sigmoid(scaled))


class Hardsigmoid(Function):
    """y = x / 6 + 1/2 clipped to [0, 1]; dy/dx = 1/6 strictly inside (-3, 3), else 0 (also at
    -3, 3 and NaN, as torch's kernel: the clip's kinks take no gradient)."""

    @staticmethod
    def forward(ctx, x):
        inside = (x > -3) & (x < 3)
        ctx.save_for_backward(inside)
        return np.clip(x / x.dtype.type(6) + x.dtype.type(0.5), 0, 1)

    @staticmethod
    def backward(ctx, grad):
        (inside,) = ctx.saved
        return namespace(grad).where(inside, grad / grad.dtype.type(6), 0)

    higher_order = "backward"


class Hardswish(Function):
    """y = x * hardsigmoid(x); dy/dx = 0 for x <= -3, x / 3 + 1/2 inside (-3, 3), 1 for x >= 3
    and for NaN (torch's kernel: the gradient jumps at the kinks, which no composition gives)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * (np.clip(x + x.dtype.type(3), 0, 6) / x.dtype.type(6))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        slope = np.where(x <= -3, 0, np.where(x < 3, x / x.dtype.type(3) + x.dtype.type(0.5), 1))
        return grad * slope.astype(x.dtype, copy=False)


@op(method=False, public=False)
def gelu(x, approximate="none"):
    """GELU(x) = x * Phi(x) (torch.nn.functional.gelu); approximate="tanh" for the tanh form."""
    if approximate not in ("none", "tanh"):
        raise ArgumentError(f"gelu: approximate must be 'none' or 'tanh'; got {approximate!r}")
    return GELU.apply(_float_input("gelu", x), approximate=approximate)


@op(method=False, public=False)
def silu(x):
    """SiLU (swish): x * sigmoid(x)."""
    return SiLU.apply(_float_input("silu", x))


@op(method=False, public=False)
def leaky_relu(x, negative_slope=0.01):
    """x where x > 0, negative_slope * x elsewhere."""
    return LeakyReLU.apply(_float_input("leaky_relu", x), negative_slope=float(negative_slope))


@op(method=False, public=False)
def elu(x, alpha=1.0):
    """x where x > 0, alpha * (exp(x) - 1) elsewhere."""
    return ELU.apply(_float_input("elu", x), alpha=float(alpha), input_scale=1.0)


@op(method=False, public=False)
def selu(x):
    """SELU_SCALE * elu(x, SELU_ALPHA): self-normalising units (Klambauer et al., 2017)."""
    return ELU.apply(_float_input("selu", x), alpha=SELU_ALPHA, input_scale=1.0) * SELU_SCALE


@op(method=False, public=False)
def celu(x, alpha=1.0):
    """x where x > 0, alpha * (exp(x / alpha) - 1) elsewhere (Barron, 2017): elu that stays
    continuously differentiable for every alpha."""
    if alpha == 0:
        raise ArgumentError("celu: alpha cannot be 0 (the input is divided by it); got alpha=0")
    return ELU.apply(_float_input("celu", x), alpha=float(alpha), input_scale=1.0 / alpha)


@op(method=False, public=False)
def softplus(x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta * x)) / beta, reverting to x where beta * x > threshold (as torch)."""
    return Softplus.apply(_float_input("softplus", x), beta=float(beta), threshold=float(threshold))


@op(method=False, public=False)
def hardsigmoid(x):
    """x / 6 + 1/2 clipped to [0, 1]: a piecewise-linear sigmoid (MobileNetV3)."""
    return Hardsigmoid.apply(_float_input("hardsigmoid", x))


@op(method=False, public=False)
def hardswish(x):
    """x * hardsigmoid(x) (MobileNetV3)."""
    return Hardswish.apply(_float_input("hardswish", x))


@op(method=False, public=False)
def hardtanh(x, min_val=-1.0, max_val=1.0):
    """x clipped to [min_val, max_val]; gradient 1 strictly inside, 0 elsewhere (also at the two
    bounds, as torch's, where clamp would pass it). Integer tensors stay integer."""
    if not isinstance(x, Tensor):
        raise TypeError(f"hardtanh: expected a Tensor; got {type(x).__name__}")
    if x.dtype.kind in "iu":
        min_val, max_val = int(min_val), int(max_val)
    inside = (x._data > min_val) & (x._data < max_val)
    return where(inside, x, Tensor._wrap(np.clip(x._data, min_val, max_val)))


def _inside(x, lambd):
    """Where -lambd <= x <= lambd (False at NaN): the elements the shrinks set to 0."""
    return (x._data >= -lambd) & (x._data <= lambd)


@op(method=False, public=False)
def hardshrink(x, lambd=0.5):
    """x where |x| > lambd, else 0; gradient 1 and 0 likewise."""
    x = _float_input("hardshrink", x)
    return masked_fill(x, _inside(x, lambd), 0.0)


@op(method=False, public=False)
def softshrink(x, lambd=0.5):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""
    x = _float_input("softshrink", x)
    if not lambd >= 0:
        raise ArgumentError(f"softshrink: lambd must be >= 0; got {lambd}")
    shifted = sub(x, Tensor._wrap(np.sign(x._data) * x.dtype.type(lambd)))
    return masked_fill(shifted, _inside(x, lambd), 0.0)


@op(method=False, public=False)
def tanhshrink(x):
    """x - tanh(x)."""
    x = _float_input("tanhshrink", x)
    return sub(x, tanh(x))


@op(method=False, public=False)
def threshold(x, threshold, value):
    """x where x > threshold, else value (integer tensors stay integer, as in torch)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"threshold: expected a Tensor; got {type(x).__name__}")
    if x.dtype.kind in "iu":
        value = int(value)
    return where(x._data <= threshold, value, x)


@op(method=False, public=False)
def glu(x, dim=-1):
    """a * sigmoid(b), where a and b are the first and second halves of x along dim (Dauphin et
    al., 2017): x of size 2n along dim -> size n."""
    x = _float_input("glu", x)
    if x.ndim == 0:
        raise ShapeError(
            "glu: a 0-d tensor cannot be halved; expected a tensor with an even-sized dim"
        )
    dim = normalize_dim(dim, x.ndim, "glu")
    if x.shape[dim] % 2:
        raise ShapeError(
            f"glu: the halved dim must have an even size; dim {dim} of shape {x.shape} has size "
            f"{x.shape[dim]}"
        )
    first, second = chunk(x, 2, dim)
    return mul(first, sigmoid(second))


@op(method=False, public=False)
def rrelu(x, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """Randomized leaky ReLU (Xu et al., 2015): x where x > 0, a * x elsewhere. While training
    each element draws its slope a from U(lower, upper) (minigrad's generator); in eval a is
    the mean slope (lower + upper) / 2."""
    x = _float_input("rrelu", x)
    if not lower <= upper:
        raise ArgumentError(f"rrelu: lower must be <= upper; got lower={lower} and upper={upper}")
    if not training:
        return leaky_relu(x, (lower + upper) / 2)
    slopes = generator().uniform(lower, upper, x.shape).astype(x.dtype)
    return where(x._data <= 0, mul(x, Tensor._wrap(slopes)), x)


# fmt: off
__all__ = [
    "gelu", "silu", "leaky_relu", "elu", "selu", "celu", "softplus", "hardtanh", "hardsigmoid",
    "hardswish", "hardshrink", "softshrink", "tanhshrink", "threshold", "glu", "rrelu",
]
# fmt: on
