"""Small layers without weights: Dropout, the activations, softmax and reshaping, as modules for
Sequential. Each is the function of the same name in nn.functional, with its settings kept."""

import numpy as np

from minigrad.errors import ArgumentError

from . import functional as F
from .module import Module, Parameter, parameter_dtype


class Dropout(Module):
    """Zero each element with probability p and scale the rest by 1/(1-p) while training;
    the identity after eval()."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be in [0, 1]; got {p}")
        self.p, self.inplace = float(p), bool(inplace)

    def forward(self, x):
        return F.dropout(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


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

    def __init__(self, num_parameters=1, init=0.25, dtype=None):
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
        self.weight = Parameter(np.full(num_parameters, init, dtype=parameter_dtype(dtype)))

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


class Identity(Module):
    """Returns its input unchanged (a placeholder where a layer is optional); takes and ignores
    any constructor arguments, as torch's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Flatten(Module):
    """Merge dims start_dim..end_dim into one: (N, C, H, W) -> (N, C*H*W) with the defaults."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = int(start_dim), int(end_dim)

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim `dim` into unflattened_size: Unflatten(1, (2, 5)) maps (N, 10) -> (N, 2, 5).
    One size may be -1 (inferred)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = int(dim), tuple(int(size) for size in unflattened_size)

    def forward(self, x):
        return x.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class CosineSimilarity(Module):
    """F.cosine_similarity(x1, x2, dim, eps): the cosine of the angle between x1 and x2 along dim."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """F.pairwise_distance(x1, x2, p, eps, keepdim): |x1 - x2 + eps|_p along the last dim."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim  # torch's attribute name for p

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


__all__ = [
    "Dropout",
    "Tanh",
    "ReLU",
    "Sigmoid",
    "Identity",
    "GELU",
    "SiLU",
    "LeakyReLU",
    "ELU",
    "Softplus",
    "Mish",
    "Hardtanh",
    "ReLU6",
    "LogSigmoid",
    "Softsign",
    "PReLU",
    "Softmax",
    "LogSoftmax",
    "Flatten",
    "Unflatten",
    "CosineSimilarity",
    "PairwiseDistance",
]
