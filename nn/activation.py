"""torch.nn.modules.activation: the activations as modules, for Sequential. Each is the function
of the same name in nn.functional (formulas in minigrad/ops/activations.py), with its settings
kept at construction and shown in repr as torch shows them; PReLU learns its slope."""

import numpy as np

from minigrad.errors import ArgumentError, ShapeError

from . import functional as F
from .module import Module, Parameter, parameter_dtype


class _Activation(Module):
    """An elementwise function of F whose settings (the attributes named in `settings`) are fixed
    at construction and shown in repr."""

    function = None  # the F function, called as function(x, **settings)
    settings = ()

    def forward(self, x):
        return type(self).function(x, **{name: getattr(self, name) for name in self.settings})

    def extra_repr(self):
        return ", ".join(
            f"{name}={getattr(self, name)!r}"
            for name in self.settings
            if not (name == "inplace" and not self.inplace)
        )


class Tanh(_Activation):
    function = staticmethod(F.tanh)


class Sigmoid(_Activation):
    function = staticmethod(F.sigmoid)


class ReLU(_Activation):
    """max(x, 0)."""

    function, settings = staticmethod(F.relu), ("inplace",)

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = bool(inplace)


class GELU(_Activation):
    """x * Phi(x), Phi the standard normal CDF; approximate="tanh" for GPT-2's tanh form."""

    function, settings = staticmethod(F.gelu), ("approximate",)

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ArgumentError(f"GELU: approximate must be 'none' or 'tanh'; got {approximate!r}")
        self.approximate = approximate


class SiLU(_Activation):
    """x * sigmoid(x) (swish)."""

    function, settings = staticmethod(F.silu), ("inplace",)

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = bool(inplace)


class LeakyReLU(_Activation):
    """x where x > 0, negative_slope * x elsewhere."""

    function, settings = staticmethod(F.leaky_relu), ("negative_slope", "inplace")

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = float(negative_slope), bool(inplace)


class ELU(_Activation):
    """x where x > 0, alpha * (exp(x) - 1) elsewhere."""

    function, settings = staticmethod(F.elu), ("alpha", "inplace")

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = float(alpha), bool(inplace)


class Mish(_Activation):
    """x * tanh(softplus(x))."""

    function = staticmethod(F.mish)


class Hardtanh(_Activation):
    """x clipped to [min_val, max_val]."""

    function, settings = staticmethod(F.hardtanh), ("min_val", "max_val", "inplace")

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if not min_val < max_val:
            raise ValueError(
                f"Hardtanh: min_val must be below max_val; got {min_val} and {max_val}"
            )
        self.min_val, self.max_val, self.inplace = float(min_val), float(max_val), bool(inplace)


class ReLU6(_Activation):
    """min(max(x, 0), 6)."""

    function = staticmethod(F.relu6)


class LogSigmoid(_Activation):
    """log(sigmoid(x)), finite for large |x|."""

    function = staticmethod(F.logsigmoid)


class Softsign(_Activation):
    """x / (1 + |x|)."""

    function = staticmethod(F.softsign)


class PReLU(Module):
    """x where x > 0, a * x elsewhere, with the slope a learned (He et al., 2015): one slope, or
    num_parameters of them (one per channel, dim 1), all starting at `init`, as torch's PReLU."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        if (
            isinstance(num_parameters, bool)
            or not isinstance(num_parameters, int)
            or num_parameters < 1
        ):
            raise ValueError(
                f"PReLU: num_parameters must be an integer >= 1; got {num_parameters!r}"
            )
        self.num_parameters = num_parameters
        dtype = parameter_dtype(dtype, device, "PReLU")
        self.weight = Parameter(np.full(num_parameters, init, dtype=dtype))

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softplus(_Activation):
    """log(1 + exp(beta x)) / beta, and x where beta x > threshold."""

    function, settings = staticmethod(F.softplus), ("beta", "threshold")

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = float(beta), float(threshold)


class Softmax(_Activation):
    """softmax along `dim` (torch's implicit choice, with its warning, when dim is None)."""

    function, settings = staticmethod(F.softmax), ("dim",)

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim


class LogSoftmax(_Activation):
    """log softmax along `dim`."""

    function, settings = staticmethod(F.log_softmax), ("dim",)

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim


class SELU(_Activation):
    """scale * elu(x, alpha) with the self-normalising constants."""

    function, settings = staticmethod(F.selu), ("inplace",)

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = bool(inplace)


class CELU(_Activation):
    """x where x > 0, alpha * (exp(x / alpha) - 1) elsewhere."""

    function, settings = staticmethod(F.celu), ("alpha", "inplace")

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = float(alpha), bool(inplace)


class GLU(_Activation):
    """a * sigmoid(b), a and b the halves of the input along dim."""

    function, settings = staticmethod(F.glu), ("dim",)

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim


class Hardsigmoid(_Activation):
    """x / 6 + 1/2 clipped to [0, 1]."""

    function = staticmethod(F.hardsigmoid)


class Hardswish(_Activation):
    """x * hardsigmoid(x)."""

    function = staticmethod(F.hardswish)


class _Shrink(_Activation):
    settings = ("lambd",)

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def extra_repr(self):
        return f"{self.lambd}"  # torch shows the bare number: Hardshrink(0.5)


class Hardshrink(_Shrink):
    """x where |x| > lambd, else 0."""

    function = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    """x - lambd * sign(x) where |x| > lambd, else 0."""

    function = staticmethod(F.softshrink)

    def __init__(self, lambd=0.5):
        if not lambd >= 0:
            raise ArgumentError(f"Softshrink: lambd must be >= 0; got {lambd}")
        super().__init__(lambd)


class Tanhshrink(_Activation):
    """x - tanh(x)."""

    function = staticmethod(F.tanhshrink)


class Threshold(_Activation):
    """x where x > threshold, else value."""

    function, settings = staticmethod(F.threshold), ("threshold", "value", "inplace")

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, bool(inplace)


class Softmin(_Activation):
    """softmax(-x) along dim: the smallest input gets the largest weight."""

    function, settings = staticmethod(F.softmin), ("dim",)

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim


class RReLU(Module):
    """x where x > 0, a * x elsewhere: a drawn from U(lower, upper) per element while training,
    (lower + upper) / 2 after eval()."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        if not lower <= upper:
            raise ArgumentError(
                f"RReLU: lower must be <= upper; got lower={lower} and upper={upper}"
            )
        self.lower, self.upper, self.inplace = lower, upper, bool(inplace)

    def forward(self, x):
        return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (
            ", inplace=True" if self.inplace else ""
        )


class Softmax2d(Module):
    """softmax over the channels at every position: (N, C, H, W) or (C, H, W), along dim -3."""

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ShapeError(
                "Softmax2d: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input; "
                f"got shape {x.shape}"
            )
        return F.softmax(x, -3)


# fmt: off
__all__ = [
    "Tanh", "Sigmoid", "ReLU", "GELU", "SiLU", "LeakyReLU", "ELU", "Mish",
    "Hardtanh", "ReLU6", "LogSigmoid", "Softsign", "PReLU", "Softplus", "Softmax",
    "LogSoftmax", "SELU", "CELU", "GLU", "Hardsigmoid", "Hardswish", "Hardshrink",
    "Softshrink", "Tanhshrink", "Threshold", "Softmin", "RReLU", "Softmax2d",
]
# fmt: on
