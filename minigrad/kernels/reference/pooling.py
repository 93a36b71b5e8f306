"""Twins of kernels/pooling.py: max and average pooling, forward and backward.

Pooling reads planes (B, P), one flat (n, c) plane of P places each, through places (O, K) int:
slot k of window o reads place places[o, k], and the place P (one past the plane) reads nothing.
"""

import numpy as np


def max_pool_forward(planes, places):
    """(values (B, O), chosen (B, O) int64): the largest value of each window and its place, every
    window reading at least one place. Ties keep the first place, NaN is the largest and a
    window's last NaN wins, and a window of -inf keeps its first place read (torch's rules)."""
    size = planes.shape[1]
    windows = np.concatenate(
        [planes, np.full((planes.shape[0], 1), -np.inf, planes.dtype)], axis=1
    )[:, places]
    which = windows.argmax(-1)  # the first largest
    nan = np.isnan(windows)
    if nan.any():
        which = np.where(nan.any(-1), windows.shape[-1] - 1 - nan[..., ::-1].argmax(-1), which)
    outputs = np.arange(places.shape[0])
    chosen = places[outputs, which].astype(np.int64)
    # only -inf read (argmax took the first slot, maybe one reading nothing): the first place read
    chosen = np.where(chosen == size, places[outputs, (places < size).argmax(-1)], chosen)
    return np.take_along_axis(planes, chosen, axis=1), chosen


def max_pool_backward(grad, chosen, plane_size):
    """(B, plane_size) gradient of max_pool_forward's planes: grad (B, O) added at chosen (B, O)."""
    starts = np.arange(grad.shape[0])[:, None] * plane_size
    summed = np.bincount(
        (chosen + starts).ravel(), weights=grad.ravel(), minlength=grad.shape[0] * plane_size
    )
    return summed.astype(grad.dtype, copy=False).reshape(grad.shape[0], plane_size)


def avg_pool_forward(planes, places, weights):
    """(B, O): each window's weighted sum, sum over k of planes[b, places[o, k]] * weights[o, k]."""
    padded = np.concatenate([planes, np.zeros((planes.shape[0], 1), planes.dtype)], axis=1)
    return (
        padded[:, places] * np.where(places < planes.shape[1], weights, 0).astype(planes.dtype)
    ).sum(-1)


def avg_pool_backward(grad, places, weights, plane_size):
    """(B, plane_size) gradient of avg_pool_forward's planes: grad[b, o] * weights[o, k] added at
    places[o, k]."""
    starts = np.arange(grad.shape[0])[:, None, None] * (plane_size + 1)
    summed = np.bincount(
        (places + starts).ravel(),
        weights=(grad[..., None] * weights).ravel(),
        minlength=grad.shape[0] * (plane_size + 1),
    )
    return summed.astype(grad.dtype, copy=False).reshape(grad.shape[0], plane_size + 1)[:, :-1]
