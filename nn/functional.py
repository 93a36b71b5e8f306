"""torch.nn.functional's names: `import minigrad.nn.functional as F` (or `from nn import functional
as F`).

Each name is the one implementation that exists: engine ops (minigrad.ops: activations,
softmax, dropout, losses, padding, layer_norm, the embedding lookup, convolution and pooling) and
the function behind nn.Linear. What this file adds is torch's spelling where the engine's differs
(inplace=, dtype=, the implicit softmax dim) and two short compositions, one_hot and normalize.
"""

import math
import warnings

import numpy as np

import minigrad as mg

from minigrad.errors import DTypeError
from minigrad.ops import dropout as _dropout
from minigrad.ops import log_softmax as _log_softmax
from minigrad.ops import masked_softmax, sigmoid, tanh
from minigrad.ops import relu as _relu
from minigrad.ops import softmax as _softmax
from minigrad.ops import celu as _celu
from minigrad.ops import elu as _elu
from minigrad.ops import hardtanh as _hardtanh
from minigrad.ops import gelu, glu, hardshrink, hardsigmoid
from minigrad.ops import hardswish, softplus, softshrink, tanhshrink
from minigrad.ops import leaky_relu as _leaky_relu
from minigrad.ops import rrelu as _rrelu
from minigrad.ops import selu as _selu
from minigrad.ops import threshold as _threshold
from minigrad.ops import silu as _silu
from minigrad.ops import integer_array
from minigrad.ops import scaled_dot_product_attention
from minigrad.ops import conv1d, conv2d
from minigrad.ops import conv_transpose1d, conv_transpose2d, fold
from minigrad.ops.conv_transpose import unfold
from minigrad.ops import cosine_similarity, pairwise_distance, pdist
from minigrad.ops import alpha_dropout, dropout1d, dropout2d, feature_alpha_dropout
from minigrad.ops import embedding
from minigrad.ops import apply_inplace
from minigrad.ops import gaussian_nll_loss, poisson_nll_loss
from minigrad.ops import binary_cross_entropy, binary_cross_entropy_with_logits
from minigrad.ops import huber_loss, kl_div, l1_loss, mse_loss, nll_loss, smooth_l1_loss
from minigrad.ops import cross_entropy
from minigrad.ops import cosine_embedding_loss, hinge_embedding_loss, margin_ranking_loss
from minigrad.ops import multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss
from minigrad.ops import soft_margin_loss, triplet_margin_loss, triplet_margin_with_distance_loss
from minigrad.ops import layer_norm, rms_norm
from minigrad.ops import pad
from minigrad.ops import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d
from minigrad.ops import adaptive_max_pool2d, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from minigrad.ops import channel_shuffle, interpolate, pixel_shuffle, pixel_unshuffle
from minigrad.engine import Tensor

from .batchnorm import batch_norm
from .linear import linear
from .normalization import group_norm, instance_norm, local_response_norm


def _maybe_in_place(op, name, input, inplace, **settings):
    """op(input), or with inplace=True written into input (torch's `inplace=`; see
    ops/inplace.py)."""
    if inplace:
        return apply_inplace(input, name, lambda x: op(x, **settings))
    return op(input, **settings)


# -- activations ------------------------------------------------------------------------------


def relu(input, inplace=False):
    return _maybe_in_place(_relu, "relu_", input, inplace)


def silu(input, inplace=False):
    return _maybe_in_place(_silu, "silu_", input, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _maybe_in_place(
        _leaky_relu, "leaky_relu_", input, inplace, negative_slope=negative_slope
    )


def elu(input, alpha=1.0, inplace=False):
    return _maybe_in_place(_elu, "elu_", input, inplace, alpha=alpha)


def selu(input, inplace=False):
    return _maybe_in_place(_selu, "selu_", input, inplace)


def celu(input, alpha=1.0, inplace=False):
    return _maybe_in_place(_celu, "celu_", input, inplace, alpha=alpha)


def threshold(input, threshold, value, inplace=False):
    return _maybe_in_place(
        _threshold, "threshold_", input, inplace, threshold=threshold, value=value
    )


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    return _maybe_in_place(
        _rrelu, "rrelu_", input, inplace, lower=lower, upper=upper, training=training
    )


def mish(input):
    """x * tanh(softplus(x)) (Misra, 2019), as torch's F.mish."""
    return input * softplus(input).tanh()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val] (gradient 1 inside, 0 outside), as torch's F.hardtanh."""
    if not min_val < max_val:
        raise ValueError(f"hardtanh: min_val must be below max_val; got {min_val} and {max_val}")
    return _maybe_in_place(_hardtanh, "hardtanh_", input, inplace, min_val=min_val, max_val=max_val)


# torch's underscore spellings: the same functions with inplace=True
def relu_(input):
    return relu(input, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):
    return _maybe_in_place(_threshold, "threshold_", input, True, threshold=threshold, value=value)


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def relu6(input):
    """min(max(x, 0), 6), as torch's F.relu6."""
    return hardtanh(input, 0.0, 6.0)


def logsigmoid(input):
    """log(sigmoid(x)), computed as -log(1 + exp(-x)) without overflow (softplus with no switch to
    the identity, so the gradient is sigmoid(-x) everywhere)."""
    return -softplus(-input, threshold=math.inf)


def softsign(input):
    """x / (1 + |x|), as torch's F.softsign."""
    return input / (input.abs() + 1.0)


def prelu(input, weight):
    """x where x > 0, weight * x elsewhere, as torch's F.prelu: weight holds one slope, or one per
    channel (dim 1 of the input). The slopes get gradients too."""
    if not isinstance(input, mg.Tensor) or not isinstance(weight, mg.Tensor):
        raise TypeError(
            f"prelu: input and weight must be Tensors; got {type(input).__name__} and "
            f"{type(weight).__name__}"
        )
    if weight.ndim != 1:
        raise ValueError(
            f"prelu: weight must be 1-D (one slope, or one per channel); got shape {weight.shape}"
        )
    if weight.shape[0] == 1:
        # one slope for every element: the output keeps the input's shape
        slopes = weight.reshape(())
    else:
        if input.ndim < 2 or input.shape[1] != weight.shape[0]:
            raise ValueError(
                f"prelu: {weight.shape[0]} slopes need an input with {weight.shape[0]} channels in "
                f"dim 1; got input of shape {input.shape}"
            )
        slopes = weight.reshape((weight.shape[0],) + (1,) * (input.ndim - 2))
    return mg.where(input > 0, input, slopes * input)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1/(1-p); the identity when not
    training (then nothing is written, even with inplace=True)."""
    if not training or p == 0:
        return _dropout(input, p, training)
    return _maybe_in_place(_dropout, "dropout_", input, inplace, p=p, training=training)


# -- softmax family -----------------------------------------------------------------------------


def _implicit_dim(name, ndim):
    """torch's legacy choice when dim is not given (0 for 0-, 1- and 3-dim inputs, else 1), with its
    warning."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, dtype=None):
    """softmax along dim; dtype= casts the input first (as torch's)."""
    input = input if dtype is None else input.to(dtype)
    return _softmax(input, _implicit_dim("softmax", input.ndim) if dim is None else dim)


def log_softmax(input, dim=None, dtype=None):
    """log softmax along dim; dtype= casts the input first (as torch's)."""
    input = input if dtype is None else input.to(dtype)
    return _log_softmax(input, _implicit_dim("log_softmax", input.ndim) if dim is None else dim)


def softmin(input, dim=None, dtype=None):
    """softmax(-input) along dim; dtype= casts the input first (as torch's)."""
    input = input if dtype is None else input.to(dtype)
    return _softmax(-input, _implicit_dim("softmin", input.ndim) if dim is None else dim)


# -- small compositions -------------------------------------------------------------------------


def one_hot(tensor, num_classes=-1):
    """Class ids (...) of an integer dtype -> int64 (..., num_classes), 1 at each id and 0
    elsewhere. num_classes=-1 takes the largest id + 1."""
    ids = integer_array(tensor, "one_hot", "tensor")
    if num_classes == -1:
        if ids.size == 0:
            raise ValueError(
                "one_hot: cannot infer the number of classes from an empty tensor; pass num_classes"
            )
        num_classes = int(ids.max()) + 1
    if ids.size and ids.min() < 0:
        raise ValueError(f"one_hot: class values must be non-negative; got {ids.min()}")
    if ids.size and ids.max() >= num_classes:
        raise ValueError(
            f"one_hot: class values must be smaller than num_classes={num_classes}; got {ids.max()}"
        )
    return Tensor._wrap((ids[..., None] == np.arange(num_classes)).astype(np.int64))


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(||input||_p, eps), the p-norm taken along dim (rows of length 1 by default),
    for every p torch takes: p > 0, inf, 0 (the count of non-zeros), negative p and -inf. Where
    the floor eps applies, no gradient flows through the norm, as in torch."""
    if not isinstance(input, Tensor) or input.dtype.kind != "f":
        raise DTypeError(
            "normalize: expected a float32 or float64 tensor; "
            f"got {getattr(input, 'dtype', type(input).__name__)}"
        )
    return input / mg.clamp(mg.norm(input, p, dim, keepdim=True), min=eps)


# fmt: off
__all__ = [
    "linear", "embedding", "dropout", "relu", "gelu", "silu", "leaky_relu", "elu", "softplus",
    "sigmoid", "selu", "celu", "threshold", "rrelu", "glu", "hardsigmoid", "hardswish",
    "hardshrink", "softshrink", "tanhshrink", "softmin", "relu_", "elu_", "leaky_relu_",
    "hardtanh_", "threshold_", "selu_", "celu_", "rrelu_", "mish", "hardtanh", "relu6",
    "logsigmoid", "softsign", "prelu", "batch_norm", "tanh", "softmax", "log_softmax",
    "masked_softmax", "one_hot", "pad", "normalize", "layer_norm", "rms_norm", "cross_entropy",
    "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "mse_loss",
    "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "scaled_dot_product_attention",
    "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "poisson_nll_loss", "gaussian_nll_loss", "cosine_similarity", "pairwise_distance",
    "pdist", "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
]
# fmt: on

# the normalisation, dropout, resampling and transposed convolution functions
__all__ += [
    "group_norm",
    "instance_norm",
    "local_response_norm",
    "dropout1d",
    "dropout2d",
    "alpha_dropout",
    "feature_alpha_dropout",
    "conv_transpose1d",
    "conv_transpose2d",
    "unfold",
    "fold",
    "interpolate",
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
]
