"""minigrad: a tensor autograd framework written from scratch (numpy + Numba).

    import minigrad as mg
    from minigrad import nn

    x = mg.randn(4, 3, requires_grad=True)
    loss = mg.cross_entropy(x @ w, mg.tensor([0, 1, 1, 0]))
    loss.backward()
"""

import numpy as np

from .autograd import Function, enable_grad, is_grad_enabled, no_grad
from .creation import (arange, from_numpy, full, full_like, ones, ones_like, rand, rand_like, randn, randn_like,
                       tensor, zeros, zeros_like)
from . import optim, viz
from .gradcheck import GradcheckError, gradcheck
from .io import load, save
from .ops import (abs, argmax, argmin, cat, cross_entropy, dropout, exp, expand, flatten, flip, gather, log,
                  log_softmax, masked_fill, masked_softmax, matmul, max, mean, min, permute, relu, reshape,
                  sigmoid, softmax, sqrt, squeeze, stack, sum, tanh, transpose, unsqueeze, var, where)
from .random import manual_seed
from .tensor import Tensor

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
int32 = np.dtype(np.int32)
bool = np.dtype(np.bool_)

__version__ = "0.1.0"

import nn  # noqa: E402  (the top-level nn package builds on everything above; mg.nn is that package)
