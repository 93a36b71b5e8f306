"""More of torch.nn's activations as modules: SELU, CELU, GLU, the hard and shrink functions,
Threshold, Softmin, RReLU and Softmax2d. Each is the function of the same name in nn.functional
(formulas in minigrad/ops/activations.py), with its settings kept and shown as torch shows them."""

from minigrad.errors import ArgumentError, ShapeError

from . import functional as F
from .layers import _Activation
from .module import Module


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
                f"Softmax2d: expected a 3-D (C, H, W) or 4-D (N, C, H, W) input; got shape {x.shape}"
            )
        return F.softmax(x, -3)


__all__ = [
    "SELU",
    "CELU",
    "GLU",
    "Hardsigmoid",
    "Hardswish",
    "Hardshrink",
    "Softshrink",
    "Tanhshrink",
    "Threshold",
    "Softmin",
    "RReLU",
    "Softmax2d",
]
