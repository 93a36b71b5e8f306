"""Parameter: the tensor type of a module's weights, beside the engine (torch.nn.Parameter)."""

import numpy as np

from . import dtypes
from .engine import Tensor


class Parameter(Tensor):
    """A tensor that is a weight of a module: requires grad, and nn.Module registers it when it
    is assigned to an attribute. Parameter(array) copies the array; Parameter(tensor) shares
    the tensor's data, as torch.nn.Parameter does."""

    __slots__ = ()

    def __init__(self, data, requires_grad=True):
        if isinstance(data, Tensor):
            self._setup(data._data)
            # the same array: the same version counter, and an inference tensor stays one
            self._version, self._inference = data._version, data._inference
        else:
            self._setup(np.array(dtypes.to_array(data), copy=True))
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()
