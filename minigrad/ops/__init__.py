"""Differentiable ops by family. Each is a Function (forward + backward on numpy arrays) and a
lowercase function that checks its arguments (with args.py) and applies it, declared once
with `@op` (registry.py): the declaration makes it an attribute here, a Tensor method and an
`mg.` name as it says. tests/test_architecture.py checks this index against the files and the
declarations.

    arithmetic.py   add sub mul div pow neg floor_divide remainder fmod reciprocal atan2 hypot
                    lerp addcmul addcdiv ...
    unary.py        exp tanh unary
    pointwise.py    log sqrt abs sin cos tan asin ... atanh sinc exp2 square rsqrt sign floor
                    ceil round trunc frac
    special.py      erf lgamma digamma erfinv logit xlogy logaddexp logaddexp2
    piecewise.py    where masked_fill clamp clip maximum minimum copysign heaviside nan_to_num
    comparison.py   eq ne lt le gt ge logical_and ... isnan isinf isfinite signbit isclose allclose
    conversion.py   cast clone to type_as contiguous numel element_size is_floating_point
    reductions.py   sum mean prod max min amax amin argmax argmin any all cumsum cummax diff ...
    nanreduce.py    nansum nanmean
    statistics.py   var std logsumexp norm median nanmedian kthvalue mode quantile nanquantile
    shape.py        reshape view permute transpose squeeze flatten expand flip roll unfold select
    diagonal.py     diagonal diag diag_embed trace tril_indices triu_indices
    join.py         cat stack hstack split chunk unbind broadcast_tensors meshgrid repeat tile ...
    indexing.py     gather take index_select masked_select scatter scatter_add nonzero
    index_write.py  scatter_reduce index_add index_copy index_fill
    counting.py     unique unique_consecutive bincount histc bucketize searchsorted argwhere
    series.py       logspace vander trapezoid
    selection.py    sort argsort topk
    matmul.py       matmul mm bmm mv dot outer linear addmm addmv baddbmm addbmm
    tensor_products.py  einsum tensordot inner kron cross
    softmax.py      softmax log_softmax masked_softmax
    losses/         cross_entropy nll_loss mse_loss l1_loss binary_cross_entropy kl_div ...
    activations.py  sigmoid relu gelu silu elu celu selu softplus hardtanh leaky_relu glu ...
    dropout.py      dropout dropout1d dropout2d alpha_dropout feature_alpha_dropout
    distance.py     cosine_similarity pairwise_distance pdist dist cdist
    conv.py         conv1d conv2d
    conv_transpose.py  conv_transpose1d conv_transpose2d fold unfold
    pooling.py      max_pool1d max_pool2d avg_pool1d avg_pool2d adaptive_avg_pool2d ...
    resample.py     interpolate pixel_shuffle pixel_unshuffle channel_shuffle
    normalization.py  layer_norm rms_norm
    attention.py    scaled_dot_product_attention attention
    lookup.py       embedding padding_index
    padding.py      pad
    lstm.py         lstm_layer
    inplace.py      apply_inplace WriteIntoView ViewOf
    inplace_methods.py  setitem add_ sub_ mul_ div_ zero_ fill_ copy_ ... exp_ ... index_add_ ...
    random_fills.py  uniform_ normal_ exponential_ bernoulli_ random_ randint_like

Each line names ops its file defines (losses/ is a package: one file per kind of loss). In
unary.py, Exp and Tanh are written out as worked examples of a Function; the ops of
pointwise.py are one `unary(...)` declaration each.
Beside the families: args.py (the argument checks), registry.py (the declarations) and
namespace.py (numpy's names on Tensors, for backwards that create_graph=True records).
This package gives Tensor its methods and operators (`x.exp()`, `x + y`, `x.sum(1)`): a method
is the function of the same name, so `x.exp()` and `mg.exp(x)` reach the same Function.
"""

import numpy as np

from ..engine import Tensor
from . import registry

# Importing a family declares its ops. Modules whose name is also an op's (softmax, dropout)
# give that name to the op below.
from . import activations, arithmetic, attention, comparison, conv, conv_transpose, conversion
from . import counting, diagonal, distance, dropout, index_write, indexing, inplace
from . import inplace_methods, join, matmul, lookup, losses, lstm, nanreduce, normalization
from . import piecewise, padding, pointwise, pooling, random_fills, tensor_products, reductions
from . import resample, selection, series, shape, softmax, special, statistics, unary

FAMILIES = (
    arithmetic,
    unary,
    pointwise,
    special,
    piecewise,
    comparison,
    conversion,
    reductions,
    nanreduce,
    statistics,
    shape,
    diagonal,
    join,
    indexing,
    index_write,
    counting,
    series,
    selection,
    matmul,
    tensor_products,
    softmax,
    *losses.FAMILIES,
    activations,
    dropout,
    distance,
    conv,
    conv_transpose,
    pooling,
    resample,
    normalization,
    attention,
    lookup,
    padding,
    lstm,
    inplace,
    inplace_methods,
    random_fills,
)

globals().update((name, entry.function) for name, entry in registry.OPS.items())
for _name, _function in registry.methods().items():
    setattr(Tensor, _name, _function)

# Helpers the layers (nn/) import: nn reaches the ops only through this package.
from .args import check_device, integer_array, lengths_to_mask, normalize_dim  # noqa: E402
from .comparison import bitwise_not, compare  # noqa: E402
from .conv import padding_amounts, per_dim  # noqa: E402
from .lookup import padding_index  # noqa: E402
from .indexing import getitem  # noqa: E402
from .inplace import apply_inplace  # noqa: E402
from .inplace_methods import setitem  # noqa: E402
from .losses import REDUCTIONS  # noqa: E402

# -- Python's operators -------------------------------------------------------------------


def _reflected(function):
    def method(self, other):
        return function(other, self)

    return method


def _comparison(ufunc):
    def method(self, other):
        return compare(ufunc, self, other)

    return method


def _iterate(self):
    """for row in x: the slices along dim 0 (one graph node for all of them, as torch's unbind)."""
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(join.unbind(self, 0))


for _dunder, _function in (
    ("add", arithmetic.add),
    ("sub", arithmetic.sub),
    ("mul", arithmetic.mul),
    ("truediv", arithmetic.div),
    ("pow", arithmetic.pow),
    ("matmul", matmul),
    ("floordiv", arithmetic.floor_divide),
    ("mod", arithmetic.remainder),
):
    setattr(Tensor, f"__{_dunder}__", _function)
    setattr(Tensor, f"__r{_dunder}__", _reflected(_function))
for _dunder, _ufunc in (
    ("eq", np.equal),
    ("ne", np.not_equal),
    ("lt", np.less),
    ("le", np.less_equal),
    ("gt", np.greater),
    ("ge", np.greater_equal),
    ("and", np.bitwise_and),
    ("or", np.bitwise_or),
    ("xor", np.bitwise_xor),
):
    setattr(Tensor, f"__{_dunder}__", _comparison(_ufunc))
for _dunder, _ufunc in (("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor)):
    setattr(Tensor, f"__r{_dunder}__", _reflected(_comparison(_ufunc)))
Tensor.__neg__ = arithmetic.neg
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = pointwise.abs
Tensor.__invert__ = bitwise_not
Tensor.__getitem__ = getitem
Tensor.__iter__ = _iterate
Tensor.__setitem__ = setitem

# -- other spellings torch has ------------------------------------------------------------

Tensor.reshape_as = lambda self, other: shape.reshape(self, other.shape)
Tensor.where = lambda self, condition, other: piecewise.where(condition, self, other)
Tensor.float = lambda self: conversion.cast(self, np.float32)
Tensor.double = lambda self: conversion.cast(self, np.float64)
Tensor.long = lambda self: conversion.cast(self, np.int64)
Tensor.int = lambda self: conversion.cast(self, np.int32)
Tensor.bool = lambda self: conversion.cast(self, np.bool_)
# Tensor.device, is_cuda, cpu() and cuda(): minigrad/device.py, beside mg.device
Tensor.is_contiguous = lambda self: bool(self._data.flags.c_contiguous)
Tensor.nelement = Tensor.numel
Tensor.mT = property(
    lambda self: shape.transpose(self, -2, -1), doc="The last two dims swapped (torch's x.mT)."
)


def _type(self, dtype=None):
    """x.type(): the dtype's name; x.type(dtype): x cast to dtype (torch's Tensor.type)."""
    return str(self.dtype) if dtype is None else conversion.cast(self, dtype)


Tensor.type = _type


inplace_methods.attach_methods(Tensor)
