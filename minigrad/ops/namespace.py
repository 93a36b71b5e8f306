"""The namespace a backward computes in: numpy for arrays, `tensors()` for Tensors.

An op whose derivative serves create_graph=True (engine/higher_order.py) writes its backward
once, over `xp = namespace(grad)`. On the first-order walk the gradient is an array and xp is
numpy itself: the backward runs as it always did. On a recorded walk the gradient is a Tensor
and xp is `tensors()`: numpy's names and signatures for the ops that record a graph, so the
same lines build the graph of the derivative. Masks and shapes stay numpy in both.
"""

import functools
import types

import numpy as np

from ..engine import Tensor


def namespace(value):
    """numpy for an array, `tensors` for a Tensor (as the array API's array_namespace)."""
    return tensors() if isinstance(value, Tensor) else np


def _constant(array):
    return Tensor._wrap(np.asarray(array))


def _data(value):
    return value._data if isinstance(value, Tensor) else value


def _expand_dims(x, axis):
    axes = axis if isinstance(axis, tuple) else (axis,)
    return x.reshape(np.expand_dims(np.empty(x.shape, np.bool_), axes).shape)


def _split(x, cuts, axis):
    """np.split(x, cuts, axis) for a list of cut positions."""
    edges = [0, *(int(c) for c in cuts), x.shape[axis]]
    return [x.narrow(axis, start, stop - start) for start, stop in zip(edges, edges[1:])]


@functools.cache
def tensors():
    """numpy's names for the ops (made on first use: the families import this file)."""
    from . import arithmetic, join, piecewise, pointwise, reductions, shape, unary
    from .matmul import matmul

    return types.SimpleNamespace(
        errstate=np.errstate,
        where=lambda condition, a, b: piecewise.where(_data(condition), a, b),
        exp=unary.exp,
        tanh=unary.tanh,
        log=pointwise.log,
        sqrt=pointwise.sqrt,
        sin=pointwise.sin,
        cos=pointwise.cos,
        sinh=pointwise.sinh,
        cosh=pointwise.cosh,
        sign=lambda x: _constant(np.sign(_data(x))),
        zeros_like=lambda x, dtype=None: _constant(np.zeros_like(_data(x), dtype)),
        ones_like=lambda x, dtype=None: _constant(np.ones_like(_data(x), dtype)),
        sum=lambda x, axis=None, keepdims=False, dtype=None: reductions.sum(x, axis, keepdims),
        expand_dims=_expand_dims,
        broadcast_to=lambda x, shape_: shape.expand(x, *shape_),
        transpose=lambda x, axes: shape.permute(x, *axes),
        moveaxis=lambda x, source, destination: shape.movedim(x, source, destination),
        swapaxes=lambda x, a, b: shape.transpose(x, a, b),
        split=lambda x, cuts, axis=0: _split(x, cuts, axis),
        matmul=matmul,
        concatenate=lambda arrays, axis=0: join.cat(list(arrays), axis),
        negative=arithmetic.neg,
    )
