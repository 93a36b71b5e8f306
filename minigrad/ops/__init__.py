"""Differentiable ops by family. Each is a Function (forward + backward on numpy arrays) and a
lowercase function that checks its arguments and applies it."""

from .elementwise import (abs, add, cast, clone, compare, div, exp, log, logical_not, masked_fill, mul, neg,
                          pow, relu, sigmoid, sqrt, sub, tanh, where)
from .linalg import matmul
from .nn import cross_entropy, dropout, log_softmax, masked_softmax, softmax
from .reduce import argmax, argmin, max, mean, min, sum, var
from .shape import cat, expand, flatten, flip, gather, getitem, permute, reshape, squeeze, stack, transpose, unsqueeze
