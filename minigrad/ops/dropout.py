"""Dropout: plain dropout, channel dropout and alpha dropout, as torch's F.dropout, F.dropout1d,
F.dropout2d, F.alpha_dropout and F.feature_alpha_dropout (the layers are in nn/dropout.py).

    dropout                 each element kept with probability 1 - p and scaled by 1 / (1 - p)
    dropout1d / dropout2d   each whole channel (n, c) kept with probability 1 - p and scaled by
                            1 / (1 - p), or zeroed
    alpha_dropout           for SELU networks: each element kept with probability q = 1 - p, a
                            dropped one set to SELU's negative limit -alpha'; then a * out + b with
                            a = 1 / sqrt(q * (1 + p * alpha'^2)) and b = a * alpha' * p, so a
                            standard normal input keeps mean 0 and variance 1 (Klambauer et al.,
                            2017)
    feature_alpha_dropout   alpha dropout of whole channels

Masks are drawn from minigrad's seeded generator (mg.manual_seed), so they are not torch's
numbers; the scaling rules are torch's. When not training (or p = 0) each is the identity.
"""

import warnings

import numpy as np

from ..errors import ArgumentError, ShapeError
from ..random import generator
from ..engine import Tensor
from .arithmetic import mul
from .inplace import apply_inplace
from .registry import op


@op(method=False)
def dropout(x, p=0.5, training=True):
    """Zero each element with probability p and scale the rest by 1/(1-p) (identity when not
    training)."""
    if not 0 <= p <= 1:
        raise ValueError(f"dropout: p must be in [0, 1]; got {p}")
    if not training or p == 0:
        return x
    if p == 1:  # torch: every element dropped
        return mul(x, Tensor._wrap(np.zeros(x.shape, x.dtype)))
    keep = generator().random(x.shape) >= p
    return mul(x, Tensor._wrap((keep / (1 - p)).astype(x.dtype)))


# SELU's scale * alpha: the value a dropped element takes before the affine correction
_SELU_NEGATIVE_LIMIT = 1.7580993408473766


def _masked(input, p, training, inplace, name, drawn_dims, alpha):
    """The dropout of input: one keep/drop draw per element (drawn_dims None), or one for each place
    of the first drawn_dims dims (the channels), shared by all the positions behind them."""
    if not 0 <= p <= 1:
        raise ArgumentError(f"{name}: dropout probability has to be between 0 and 1; got {p}")
    if not training or p == 0:
        return input
    if drawn_dims is not None and input.ndim < drawn_dims:
        raise ShapeError(
            f"{name}: expected an input with a batch and a channel dim (N, C, ...); "
            f"got input of shape {input.shape}"
        )
    noise_shape = (
        input.shape
        if drawn_dims is None
        else input.shape[:drawn_dims] + (1,) * (input.ndim - drawn_dims)
    )
    keep = (generator().random(noise_shape) >= p) if p < 1 else np.zeros(noise_shape, bool)
    if alpha:
        scale = 1 / np.sqrt((_SELU_NEGATIVE_LIMIT**2 * p + 1) * (1 - p)) if p < 1 else 0.0
        multiplier = Tensor._wrap((keep * scale).astype(input.dtype))
        shift = Tensor._wrap(
            ((keep - 1.0) * _SELU_NEGATIVE_LIMIT * scale + _SELU_NEGATIVE_LIMIT * scale * p).astype(
                input.dtype
            )
        )
        apply = lambda x: x * multiplier + shift  # noqa: E731
    else:
        multiplier = Tensor._wrap((keep / (1 - p) if p < 1 else keep).astype(input.dtype))
        apply = lambda x: x * multiplier  # noqa: E731
    return apply_inplace(input, f"{name}_", apply) if inplace else apply(input)


@op(method=False, public=False)
def dropout1d(input, p=0.5, training=True, inplace=False):
    """torch's F.dropout1d: input (N, C, L) or (C, L), whole channels dropped."""
    if not isinstance(input, Tensor) or input.ndim not in (2, 3):
        raise ShapeError(
            "dropout1d: expected a 2-D (C, L) or 3-D (N, C, L) input; "
            f"got {getattr(input, 'shape', type(input).__name__)}"
        )
    return _masked(input, p, training, inplace, "dropout1d", input.ndim - 1, False)


@op(method=False, public=False)
def dropout2d(input, p=0.5, training=True, inplace=False):
    """torch's F.dropout2d: input (N, C, H, W), whole channels dropped. As torch, a 3-D input is
    taken as (N, C, L) (with torch's warning, not as an unbatched (C, H, W)), and other ranks warn
    too."""
    if not isinstance(input, Tensor):
        raise TypeError(f"dropout2d: expected input to be a Tensor; got {type(input).__name__}")
    if input.ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.ndim}-D input to dropout2d, "
            "which is deprecated and will result in an error in a future release. To retain the "
            "behavior and silence this warning, please use dropout instead. Note that dropout2d "
            "exists to provide channel-wise dropout on inputs with 2 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
            stacklevel=2,
        )
    if input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
            "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
            "dim. This behavior will change in a future release to interpret the input as one "
            "without a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
            "dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _masked(input, p, training, inplace, "dropout2d", 2, False)


@op(method=False, public=False)
def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """torch's F.alpha_dropout (training is False by default, as torch's)."""
    return _masked(input, p, training, inplace, "alpha_dropout", None, True)


@op(method=False, public=False)
def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """torch's F.feature_alpha_dropout: alpha dropout of whole (n, c) channels of (N, C, ...)."""
    return _masked(input, p, training, inplace, "feature_alpha_dropout", 2, True)


__all__ = ["dropout1d", "dropout2d", "alpha_dropout", "feature_alpha_dropout"]
