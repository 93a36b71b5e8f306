"""Differentiable ops by family. Each is a Function (forward + backward on numpy arrays) and a
lowercase function that checks its arguments and applies it.

    elementwise.py  + - * / **, exp log sqrt abs tanh sigmoid relu, where, masked_fill, casts
    math.py         sin cos erf rsqrt square log1p expm1, floor round sign %, clamp, maximum, isnan ...
    pointwise.py    asin ... atanh tan sinh cosh exp2 sinc frac hypot copysign lerp nan_to_num heaviside ...
    special.py      lgamma digamma erfinv logit xlogy logaddexp logaddexp2
    nanreduce.py    nansum nanmean
    reduce.py       sum mean prod max min amax amin argmax argmin any all cumsum cummax logcumsumexp diff
    statistics.py   var std logsumexp norm median nanmedian kthvalue mode quantile nanquantile
    shape.py        reshape permute transpose movedim squeeze flatten expand flip rot90 roll narrow unfold tril
    diagonal.py     diagonal diag diag_embed tril_indices triu_indices
    join.py         cat stack hstack ... split chunk hsplit ... unbind broadcast_tensors meshgrid repeat tile
    indexing.py     x[index] gather take index_select masked_select scatter_add nonzero
    index_write.py  scatter_reduce index_add index_copy index_fill
    counting.py     unique unique_consecutive bincount histc bucketize searchsorted argwhere
    series.py       logspace vander trapezoid
    selection.py    sort argsort topk
    linalg.py       matmul mm bmm dot outer einsum
    products.py     mv inner tensordot kron cross trace addmm addmv addbmm baddbmm addcmul addcdiv dist cdist
    conversion.py   to type_as contiguous allclose isclose equal
    nn.py ...       softmax family, cross-entropy, dropout (and the layers' own ops)
    conv.py pooling.py  conv1d conv2d; max, average and adaptive pooling (nn.functional's names)
    conv_transpose.py   conv_transpose1d/2d, unfold, fold; resample.py interpolate, pixel shuffles
    dropout.py      dropout1d/2d, alpha dropout
    inplace.py      add_ mul_ ... x[index] = value, uniform_ normal_ ... random_, with the version counter

This package also gives Tensor its methods (`x.exp()`, `x + y`, `x.sum(1)`): each is the
function of the same name here, so `x.exp()` and `mg.exp(x)` reach the same Function.
"""

import numpy as np

from ..tensor import Tensor

# Names the layers (nn/) import: nn reaches the ops only through this package. First, so that the
# functions imported below (dropout) take the names of the modules these lines import.
from .activations import (
    celu,
    elu,
    gelu,
    glu,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    rrelu,
    selu,
    silu,
    softplus,
    softshrink,
    tanhshrink,
    threshold,
)
from .args import check_device, integer_array, lengths_to_mask
from .attention import scaled_dot_product_attention
from .conv import conv1d, conv2d, padding_amounts, per_dim
from .conv_transpose import conv_transpose1d, conv_transpose2d, fold
from .distance import cosine_similarity, pairwise_distance, pdist
from .dropout import alpha_dropout, dropout1d, dropout2d, feature_alpha_dropout
from .embedding import padding_index
from .inplace import apply_inplace
from .likelihood_loss import gaussian_nll_loss, poisson_nll_loss
from .loss import (
    REDUCTIONS,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    huber_loss,
    kl_div,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
)
from .lstm import lstm_layer
from .margin_loss import (
    cosine_embedding_loss,
    hinge_embedding_loss,
    margin_ranking_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from .normalization import layer_norm, rms_norm
from .pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from .resample import channel_shuffle, interpolate, pixel_shuffle, pixel_unshuffle
from .conversion import (
    allclose,
    contiguous,
    element_size,
    equal,
    is_floating_point,
    isclose,
    numel,
    to,
    type_as,
)
from .counting import argwhere, bincount, bucketize, histc, searchsorted, unique, unique_consecutive
from .diagonal import diag, diag_embed, diagonal, tril_indices, triu_indices
from .elementwise import (
    abs,
    add,
    bitwise_not,
    cast,
    clone,
    compare,
    div,
    exp,
    floor_divide,
    log,
    masked_fill,
    mul,
    neg,
    pow,
    relu,
    sigmoid,
    sqrt,
    sub,
    tanh,
    where,
)
from .indexing import (
    gather,
    getitem,
    index_select,
    masked_select,
    nonzero,
    scatter,
    scatter_add,
    take,
    take_along_dim,
)
from .index_write import index_add, index_copy, index_fill, scatter_reduce
from .inplace import randint_like, setitem
from .join import (
    broadcast_tensors,
    cat,
    chunk,
    column_stack,
    concat,
    concatenate,
    dsplit,
    dstack,
    hsplit,
    hstack,
    meshgrid,
    repeat,
    repeat_interleave,
    split,
    stack,
    tile,
    unbind,
    vsplit,
    vstack,
)
from .linalg import bmm, dot, einsum, matmul, mm, outer
from .math import (
    atan2,
    ceil,
    clamp,
    clip,
    cos,
    erf,
    expm1,
    floor,
    fmod,
    isfinite,
    isinf,
    isnan,
    log1p,
    log2,
    log10,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    reciprocal,
    remainder,
    round,
    rsqrt,
    sign,
    sin,
    square,
    trunc,
)
from .nn import cross_entropy, dropout, log_softmax, masked_softmax, softmax
from .nanreduce import nanmean, nansum
from .pointwise import (
    acos,
    acosh,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctanh,
    asin,
    asinh,
    atan,
    atanh,
    copysign,
    cosh,
    deg2rad,
    exp2,
    float_power,
    frac,
    heaviside,
    hypot,
    lerp,
    nan_to_num,
    rad2deg,
    signbit,
    sinc,
    sinh,
    tan,
    true_divide,
)
from .products import (
    addbmm,
    addcdiv,
    addcmul,
    addmm,
    addmv,
    baddbmm,
    cdist,
    cross,
    dist,
    inner,
    kron,
    mv,
    tensordot,
    trace,
)
from .special import digamma, erfinv, lgamma, logaddexp, logaddexp2, logit, xlogy
from .reduce import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    cummax,
    cummin,
    cumprod,
    cumsum,
    diff,
    logcumsumexp,
    max,
    mean,
    min,
    prod,
    sum,
)
from .selection import argsort, sort, topk
from .series import logspace, trapezoid, vander
from .shape import (
    broadcast_to,
    expand,
    expand_as,
    flatten,
    flip,
    fliplr,
    flipud,
    movedim,
    moveaxis,
    narrow,
    permute,
    ravel,
    reshape,
    roll,
    rot90,
    squeeze,
    swapaxes,
    swapdims,
    t,
    transpose,
    tril,
    triu,
    unflatten,
    unfold,
    unsqueeze,
    view,
    view_as,
)
from .statistics import (
    kthvalue,
    logsumexp,
    median,
    mode,
    nanmedian,
    nanquantile,
    norm,
    quantile,
    std,
    std_mean,
    var,
    var_mean,
)
from . import inplace
from .args import normalize_dim


def _reflected(op):
    def method(self, other):
        return op(other, self)

    return method


def _comparison(ufunc):
    def method(self, other):
        return compare(ufunc, self, other)

    return method


def _iterate(self):
    """for row in x: the slices along dim 0 (one graph node for all of them, as torch's unbind)."""
    if self.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(unbind(self, 0))


# Comparisons by name (torch.eq(a, b), x.ne(pad)): bool tensors without gradient, as the operators.
eq, ne, lt, le, gt, ge = (
    _comparison(ufunc)
    for ufunc in (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal)
)


def select(x, dim, index):
    """The slice at position `index` along dim, that dim gone (torch.select): x[:, index] for dim 1."""
    dim = normalize_dim(dim, x.ndim, "select")
    return getitem(x, (slice(None),) * dim + (index,))


# Methods that are the op of the same name (torch has both spellings).
for _name in (
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "matmul",
    "neg",
    "exp",
    "log",
    "sqrt",
    "abs",
    "tanh",
    "sigmoid",
    "relu",
    "clone",
    "sin",
    "cos",
    "erf",
    "rsqrt",
    "square",
    "log1p",
    "log2",
    "log10",
    "expm1",
    "clamp",
    "clip",
    "maximum",
    "minimum",
    "isnan",
    "isinf",
    "isfinite",
    "logical_and",
    "logical_or",
    "logical_xor",
    "logical_not",
    "sum",
    "mean",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "any",
    "all",
    "cumsum",
    "var",
    "std",
    "logsumexp",
    "norm",
    "reshape",
    "view_as",
    "permute",
    "transpose",
    "swapaxes",
    "swapdims",
    "t",
    "movedim",
    "moveaxis",
    "unsqueeze",
    "squeeze",
    "expand",
    "expand_as",
    "flip",
    "roll",
    "narrow",
    "flatten",
    "unflatten",
    "tril",
    "triu",
    "split",
    "chunk",
    "unbind",
    "repeat",
    "tile",
    "repeat_interleave",
    "gather",
    "index_select",
    "masked_select",
    "scatter",
    "scatter_add",
    "sort",
    "argsort",
    "topk",
    "masked_fill",
    "softmax",
    "log_softmax",
    "mm",
    "bmm",
    "dot",
    "outer",
    "to",
    "type_as",
    "contiguous",
    "allclose",
    "isclose",
    "equal",
    "element_size",
    "is_floating_point",
    "sign",
    "floor",
    "ceil",
    "round",
    "trunc",
    "reciprocal",
    "remainder",
    "fmod",
    "floor_divide",
    "nonzero",
    "cumprod",
    "take_along_dim",
    "atan2",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "broadcast_to",
    "ravel",
    "fliplr",
    "flipud",
    "rot90",
    "unfold",
    "diag",
    "diagonal",
    "diag_embed",
    "take",
    "hsplit",
    "vsplit",
    "dsplit",
    "select",
    "diff",
    "cummax",
    "cummin",
    "logcumsumexp",
    "count_nonzero",
    "median",
    "nanmedian",
    "kthvalue",
    "mode",
    "quantile",
    "nanquantile",
    "argwhere",
    "bincount",
    "histc",
    "unique",
    "unique_consecutive",
    "scatter_reduce",
    "index_add",
    "index_copy",
    "index_fill",
    "asin",
    "acos",
    "atan",
    "tan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "exp2",
    "logit",
    "xlogy",
    "hypot",
    "lerp",
    "lgamma",
    "digamma",
    "erfinv",
    "logaddexp",
    "logaddexp2",
    "sinc",
    "frac",
    "float_power",
    "true_divide",
    "nan_to_num",
    "signbit",
    "rad2deg",
    "deg2rad",
    "heaviside",
    "copysign",
    "nansum",
    "nanmean",
    "addmm",
    "addmv",
    "addcmul",
    "addcdiv",
    "baddbmm",
    "addbmm",
    "mv",
    "inner",
    "kron",
    "cross",
    "trace",
    "dist",
):
    setattr(Tensor, _name, globals()[_name])

# Python's operators.
for _dunder, _op in (
    ("add", add),
    ("sub", sub),
    ("mul", mul),
    ("truediv", div),
    ("pow", pow),
    ("matmul", matmul),
    ("floordiv", floor_divide),
    ("mod", remainder),
):
    setattr(Tensor, f"__{_dunder}__", _op)
    setattr(Tensor, f"__r{_dunder}__", _reflected(_op))
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
Tensor.__neg__ = neg
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = abs
Tensor.__invert__ = bitwise_not
Tensor.__getitem__ = getitem
Tensor.__iter__ = _iterate
Tensor.__setitem__ = setitem

# Other spellings torch has.
Tensor.view = view
Tensor.reshape_as = lambda self, other: reshape(self, other.shape)
Tensor.where = lambda self, condition, other: where(condition, self, other)
Tensor.float = lambda self: cast(self, np.float32)
Tensor.double = lambda self: cast(self, np.float64)
Tensor.long = lambda self: cast(self, np.int64)
Tensor.int = lambda self: cast(self, np.int32)
Tensor.bool = lambda self: cast(self, np.bool_)
Tensor.cpu = lambda self: self
Tensor.device = property(lambda self: "cpu", doc="Where the data lives: always the CPU.")
Tensor.is_contiguous = lambda self: bool(self._data.flags.c_contiguous)
Tensor.nelement = Tensor.numel
Tensor.mT = property(
    lambda self: transpose(self, -2, -1), doc="The last two dims swapped (torch's x.mT)."
)


def _type(self, dtype=None):
    """x.type(): the dtype's name; x.type(dtype): x cast to dtype (torch's Tensor.type)."""
    return str(self.dtype) if dtype is None else cast(self, dtype)


Tensor.type = _type


inplace.attach_methods(Tensor)
