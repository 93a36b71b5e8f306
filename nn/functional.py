"""The functional names a PyTorch user reaches for as `F.<name>` (import nn.functional as F).

Each is the one implementation that already exists: engine ops from minigrad, and the
functions behind nn.Linear and nn.Embedding.
"""

from minigrad.ops import (cross_entropy, dropout, log_softmax, masked_softmax, relu, sigmoid, softmax,
                          tanh)

from .embedding import embedding
from .linear import linear

__all__ = ["linear", "embedding", "dropout", "softmax", "log_softmax", "cross_entropy", "relu", "tanh",
           "sigmoid", "masked_softmax"]
