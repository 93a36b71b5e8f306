"""Max and average pooling over flat planes (contracts: reference.max_pool_forward and the
three after it): one pass over each window's places, where the numpy twins gather every
window into a (planes, outputs, slots) array first and argmax over its short last axis.
Each (n, c) plane is independent, so planes are split between threads above a size, and a
backward's scatter-add stays race-free (one plane, one thread). On 2 cores, for (32, 32, 32, 32)
float32 and 2x2 windows, the split measured 3.3 ms against 6.0 ms serial for the max forward
(0.45 vs 0.49 ms backward), and for 3x3 windows of stride 2 1.7 vs 3.4 ms for the average's
forward and 2.3 vs 4.0 ms for its backward.
"""

import numpy as np
from numba import prange

from . import _numba_threads
from ._numba_cache import cached_njit


@cached_njit(nogil=True)
def _max_planes(planes, places, values, chosen, start, stop):
    """For planes start..stop-1 and every output o: the largest of planes[b, places[o, k]]
    (slots holding the plane's size read nothing) into values[b, o], its place into
    chosen[b, o]. Ties keep the first place, a NaN beats everything and the last NaN wins,
    and a window of -inf keeps its first place read."""
    size = planes.shape[1]
    for b in range(start, stop):
        for o in range(places.shape[0]):
            best, best_value = -1, planes.dtype.type(0)
            for k in range(places.shape[1]):
                p = places[o, k]
                if p < size:
                    value = planes[b, p]
                    if best < 0 or value > best_value or value != value:
                        best, best_value = p, value
            values[b, o], chosen[b, o] = best_value, best


@cached_njit(parallel=True)
def _max_parallel(planes, places, values, chosen, bounds):
    for c in prange(bounds.shape[0] - 1):
        _max_planes(planes, places, values, chosen, bounds[c], bounds[c + 1])


@cached_njit(nogil=True)
def _max_grad_planes(grad, chosen, out, start, stop):
    """out[b, chosen[b, o]] += grad[b, o] for planes start..stop-1."""
    for b in range(start, stop):
        for o in range(chosen.shape[1]):
            out[b, chosen[b, o]] += grad[b, o]


@cached_njit(parallel=True)
def _max_grad_parallel(grad, chosen, out, bounds):
    for c in prange(bounds.shape[0] - 1):
        _max_grad_planes(grad, chosen, out, bounds[c], bounds[c + 1])


@cached_njit(nogil=True)
def _sum_planes(planes, places, weights, out, start, stop):
    """out[b, o] = sum over k of planes[b, places[o, k]] * weights[o, k] for planes start..stop-1
    (slots holding the plane's size read nothing)."""
    size = planes.shape[1]
    for b in range(start, stop):
        for o in range(places.shape[0]):
            total = planes.dtype.type(0)
            for k in range(places.shape[1]):
                p = places[o, k]
                if p < size:
                    total += planes[b, p] * weights[o, k]
            out[b, o] = total


@cached_njit(parallel=True)
def _sum_parallel(planes, places, weights, out, bounds):
    for c in prange(bounds.shape[0] - 1):
        _sum_planes(planes, places, weights, out, bounds[c], bounds[c + 1])


@cached_njit(nogil=True)
def _sum_grad_planes(grad, places, weights, out, start, stop):
    """out[b, places[o, k]] += grad[b, o] * weights[o, k] for planes start..stop-1 (slots holding
    the plane's size add nothing)."""
    size = out.shape[1]
    for b in range(start, stop):
        for o in range(places.shape[0]):
            for k in range(places.shape[1]):
                p = places[o, k]
                if p < size:
                    out[b, p] += grad[b, o] * weights[o, k]


@cached_njit(parallel=True)
def _sum_grad_parallel(grad, places, weights, out, bounds):
    for c in prange(bounds.shape[0] - 1):
        _sum_grad_planes(grad, places, weights, out, bounds[c], bounds[c + 1])


def _checked(places, plane_size, upper, name):
    """places as C-contiguous int64, after checking 0 <= places < upper (the loops do not)."""
    places = np.ascontiguousarray(places, dtype=np.int64)
    if places.size and (places.min() < 0 or places.max() >= upper):
        raise ValueError(
            f"pooling expects {name} within [0, {upper}) for planes of {plane_size} places, got "
            f"values from {places.min()} to {places.max()}"
        )
    return places


def _check_shape(array, shape, name):
    if array.shape != shape:
        raise ValueError(f"pooling expects {name} of shape {shape}, got {array.shape}")


def max_pool_forward(planes, places):
    """(values, chosen) of every window (contract: reference.max_pool_forward)."""
    planes = np.ascontiguousarray(planes)
    places = _checked(places, planes.shape[1], planes.shape[1] + 1, "places")
    values = np.empty((planes.shape[0], places.shape[0]), planes.dtype)
    chosen = np.empty(values.shape, np.int64)
    _numba_threads.launch(
        _max_planes,
        _max_parallel,
        (planes, places, values, chosen),
        planes.shape[0],
        size=planes.shape[0] * places.size,
    )
    return values, chosen


def max_pool_backward(grad, chosen, plane_size):
    """The (B, plane_size) gradient of max_pool_forward's planes
    (contract: reference.max_pool_backward)."""
    chosen = _checked(chosen, plane_size, plane_size, "chosen")
    _check_shape(grad, chosen.shape, "grad")
    out = np.zeros((grad.shape[0], plane_size), grad.dtype)
    _numba_threads.launch(
        _max_grad_planes,
        _max_grad_parallel,
        (np.ascontiguousarray(grad), chosen, out),
        out.shape[0],
        size=chosen.size,
    )
    return out


def avg_pool_forward(planes, places, weights):
    """The weighted sum of every window (contract: reference.avg_pool_forward)."""
    planes = np.ascontiguousarray(planes)
    places = _checked(places, planes.shape[1], planes.shape[1] + 1, "places")
    _check_shape(weights, places.shape, "weights")
    out = np.empty((planes.shape[0], places.shape[0]), planes.dtype)
    _numba_threads.launch(
        _sum_planes,
        _sum_parallel,
        (planes, places, np.ascontiguousarray(weights, planes.dtype), out),
        out.shape[0],
        size=out.shape[0] * places.size,
    )
    return out


def avg_pool_backward(grad, places, weights, plane_size):
    """The (B, plane_size) gradient of avg_pool_forward's planes
    (contract: reference.avg_pool_backward)."""
    places = _checked(places, plane_size, plane_size + 1, "places")
    _check_shape(weights, places.shape, "weights")
    _check_shape(grad, (grad.shape[0], places.shape[0]), "grad")
    out = np.zeros((grad.shape[0], plane_size), grad.dtype)
    _numba_threads.launch(
        _sum_grad_planes,
        _sum_grad_parallel,
        (np.ascontiguousarray(grad), places, np.ascontiguousarray(weights, grad.dtype), out),
        out.shape[0],
        size=out.shape[0] * places.size,
    )
    return out
