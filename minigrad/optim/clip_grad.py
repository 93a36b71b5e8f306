"""clip_grad_norm_ and clip_grad_value_ (torch.nn.utils.clip_grad): gradients changed in place
between backward() and optimizer.step()."""

import math

import numpy as np

from ..engine import Tensor


def _with_grads(parameters):
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad._data for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale all gradients together so that their joint norm is at most max_norm.

    As torch.nn.utils.clip_grad_norm_: the norm (norm_type: 2 by default, any p > 0, or inf for
    the largest |g|) is taken over all gradients as one vector; when it exceeds max_norm every
    gradient is multiplied by max_norm / (total_norm + 1e-6). Returns the total norm before
    clipping as a 0-d tensor of the gradients' dtype (`.item()` gives the number).
    error_if_nonfinite: raise when the norm is NaN or inf (otherwise, as in torch, a NaN norm
    makes every gradient NaN and an inf norm makes finite gradients 0). foreach is accepted for
    torch's sake.
    """
    max_norm = float(max_norm)
    if not max_norm >= 0:  # inf is allowed: no clipping
        raise ValueError(f"clip_grad_norm_: max_norm must be >= 0; got {max_norm}")
    try:
        norm_type = float(norm_type)
    except (TypeError, ValueError):
        raise ValueError(
            f"clip_grad_norm_: norm_type must be a number > 0 or inf; got {norm_type!r}"
        ) from None
    if not norm_type > 0:
        raise ValueError(f"clip_grad_norm_: norm_type must be > 0 (or inf); got {norm_type}")
    grads = _with_grads(parameters)
    # memory order: no copy of a transposed gradient
    flats = [g.ravel(order="K") for g in grads if g.size]
    if not flats:
        total = 0.0
    elif norm_type == math.inf:
        total = float(np.max([np.abs(flat).max() for flat in flats]))  # np.max, not max(): NaN wins
    elif norm_type == 2:
        total = math.sqrt(sum(float(np.dot(flat, flat)) for flat in flats))
    else:
        total = sum(
            float((np.abs(flat.astype(np.float64)) ** norm_type).sum()) for flat in flats
        ) ** (1 / norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of order {norm_type} of the gradients is {total}, so "
            "they cannot be clipped. Pass error_if_nonfinite=False to go on anyway."
        )
    scale = max_norm / (total + 1e-6)
    if not scale >= 1:  # NaN too
        # an inf gradient times 0 (an inf norm): NaN, as in torch
        with np.errstate(invalid="ignore"):
            for g in grads:
                g *= g.dtype.type(scale)
    return Tensor._wrap(np.asarray(total, dtype=grads[0].dtype if grads else np.float32))


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value], in place (torch's
    clip_grad_value_)."""
    clip_value = float(clip_value)
    if not clip_value >= 0:
        raise ValueError(f"clip_grad_value_: clip_value must be >= 0; got {clip_value}")
    for g in _with_grads(parameters):
        np.clip(g, -clip_value, clip_value, out=g)
