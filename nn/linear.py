"""torch.nn.modules.linear: Linear, y = x W^T + b, the affine map every network is made of, and
Identity, the placeholder where a layer is optional. Their function, F.linear, is the op
minigrad.ops.linear (ops/matmul.py)."""

import math

import numpy as np

from minigrad.ops import linear

from . import init
from .module import Module, Parameter, parameter_dtype


class Linear(Module):
    """y = x @ weight.T + bias for inputs of shape (..., in_features) -> (..., out_features).

    weight: (out_features, in_features); bias: (out_features,) or None when bias=False.
    Initialised as torch.nn.Linear: weight by kaiming_uniform_(a=sqrt(5)), i.e.
    U(-1/sqrt(in_features), 1/sqrt(in_features)), and bias U(-1/sqrt(in_features),
    1/sqrt(in_features)). dtype: float32 unless given (float64 for gradient checks); device: the
    CPU (torch's factory keywords).
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        if in_features < 1 or out_features < 1:
            raise ValueError(
                f"Linear: in_features and out_features must be >= 1; "
                f"got {in_features} and {out_features}"
            )
        dtype = parameter_dtype(dtype, device, "Linear")
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = Parameter(np.empty((out_features, in_features), dtype=dtype))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            self.bias = Parameter(np.empty(out_features, dtype=dtype))
            bound = 1 / math.sqrt(in_features)
            init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return linear(x, self.weight, self.bias)

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Identity(Module):
    """Returns its input unchanged (a placeholder where a layer is optional); takes and ignores
    any constructor arguments, as torch's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


__all__ = ["Linear", "Identity"]
