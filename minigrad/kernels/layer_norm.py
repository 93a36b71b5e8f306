"""Layer normalisation over the last axis, forward and backward, one pass per row each way.

A row of a Transformer's activations (128 features) fits in L1 cache, so each kernel reads
the row from memory once and makes its two or three sweeps (sum, centred sum of squares,
normalise) in cache. The numpy composition (reference/layer_norm.py) makes about ten passes over the
whole array with as many temporaries, forward and again backward.

Every kernel works on C-contiguous 2-D (rows, D) arrays; the wrappers at the bottom reshape,
fill in absent weight/bias and choose a serial or a parallel driver. Contracts are in
reference/layer_norm.py (the numpy twins). The backward kernel also sums the weight and bias
gradients over its rows; each parallel chunk sums into its own row of a (chunks, D) array, added
up afterwards, so no two threads write the same memory.
"""

import math

import numpy as np
from numba import prange

from . import _buffers
from ._numba_cache import cached_njit
from ._numba_threads import chunk_count, use_pool

# Elements from which the thread pool pays: a row costs ~0.1 us, a parallel launch with sleeping
# workers ~0.2 ms. The language model's (4096, 128) rows, median after 0.5 ms idle: forward 0.41 ms
# serial vs 0.46 parallel, backward 0.48 vs 0.57. (_numba_threads.PARALLEL_MIN_SIZE, 2^16, is for
# kernels with more work per element.)
PARALLEL_MIN_SIZE = 1 << 20

# Reassociation lets LLVM vectorise the row sums; error_model="numpy" drops Numba's
# division-by-zero check, which would keep the loops scalar.
REDUCE = {"reassoc", "contract", "nsz", "arcp"}


@cached_njit(nogil=True, fastmath=REDUCE, error_model="numpy")
def _normalise_row(x, r, weight, bias, eps, inverse_width, out):
    """out[r] = (x[r] - mean) * rstd * weight + bias for row r of x (R, D); returns (mean,
    rstd = 1/sqrt(var + eps)), the biased variance computed from the centred row. weight, bias
    (D,); eps, inverse_width (1/D) scalars of x's dtype."""
    total = eps * 0
    for j in range(x.shape[1]):
        total += x[r, j]
    centre = total * inverse_width
    squares = eps * 0
    for j in range(x.shape[1]):
        deviation = x[r, j] - centre
        squares += deviation * deviation
    scale = np.float32(1) / np.sqrt(squares * inverse_width + eps)  # float32 stays float32
    for j in range(x.shape[1]):
        out[r, j] = (x[r, j] - centre) * scale * weight[j] + bias[j]
    return centre, scale


@cached_njit(nogil=True, fastmath=REDUCE, error_model="numpy")
def _forward_rows(x, weight, bias, eps, inverse_width, out, mean, rstd, start, stop):
    """_normalise_row for rows start..stop-1, keeping each row's mean and rstd (for backward)."""
    for r in range(start, stop):
        mean[r], rstd[r] = _normalise_row(x, r, weight, bias, eps, inverse_width, out)


@cached_njit(nogil=True, fastmath=REDUCE, error_model="numpy")
def _inference_rows(x, weight, bias, eps, inverse_width, out, start, stop):
    """_normalise_row for rows start..stop-1, keeping nothing else."""
    for r in range(start, stop):
        _normalise_row(x, r, weight, bias, eps, inverse_width, out)


@cached_njit(nogil=True, fastmath=REDUCE, error_model="numpy")
def _backward_rows(
    grad_out, x, mean, rstd, weight, inverse_width, grad_x, grad_weight, grad_bias, start, stop
):
    """Rows start..stop-1: with xhat = (x - mean) * rstd and g = grad_out * weight,
    grad_x[r] = rstd[r] * (g - mean(g) - xhat * mean(g * xhat)); adds grad_out * xhat to
    grad_weight (D,) and grad_out to grad_bias (D,)."""
    for r in range(start, stop):
        centre, scale = mean[r], rstd[r]
        sum_g = inverse_width * 0
        sum_g_xhat = inverse_width * 0
        for j in range(x.shape[1]):
            xhat = (x[r, j] - centre) * scale
            g = grad_out[r, j] * weight[j]
            sum_g += g
            sum_g_xhat += g * xhat
            grad_weight[j] += grad_out[r, j] * xhat
            grad_bias[j] += grad_out[r, j]
        mean_g = sum_g * inverse_width
        mean_g_xhat = sum_g_xhat * inverse_width
        for j in range(x.shape[1]):
            xhat = (x[r, j] - centre) * scale
            grad_x[r, j] = scale * (grad_out[r, j] * weight[j] - mean_g - xhat * mean_g_xhat)


@cached_njit(nogil=True)
def _chunk(c, chunks, rows):
    """Row range [start, stop) of chunk c out of `chunks` over `rows` rows."""
    return c * rows // chunks, (c + 1) * rows // chunks


@cached_njit(parallel=True)
def _forward_parallel(x, weight, bias, eps, inverse_width, out, mean, rstd, chunks):
    """_forward_rows over all rows, split into `chunks` ranges run on the thread pool."""
    for c in prange(chunks):
        start, stop = _chunk(c, chunks, x.shape[0])
        _forward_rows(x, weight, bias, eps, inverse_width, out, mean, rstd, start, stop)


@cached_njit(parallel=True)
def _inference_parallel(x, weight, bias, eps, inverse_width, out, chunks):
    """_inference_rows over all rows, split into `chunks` ranges run on the thread pool."""
    for c in prange(chunks):
        start, stop = _chunk(c, chunks, x.shape[0])
        _inference_rows(x, weight, bias, eps, inverse_width, out, start, stop)


@cached_njit(parallel=True)
def _backward_parallel(
    grad_out,
    x,
    mean,
    rstd,
    weight,
    inverse_width,
    grad_x,
    grad_weight_parts,
    grad_bias_parts,
    chunks,
):
    """_backward_rows over all rows in `chunks` ranges; chunk c sums its parameter gradients
    into row c of grad_weight_parts and grad_bias_parts (chunks, D)."""
    for c in prange(chunks):
        start, stop = _chunk(c, chunks, x.shape[0])
        _backward_rows(
            grad_out,
            x,
            mean,
            rstd,
            weight,
            inverse_width,
            grad_x,
            grad_weight_parts[c],
            grad_bias_parts[c],
            start,
            stop,
        )


# ---------------------------------------------------------------- public wrappers


def _rows(array, name, dtype=None):
    """array as a C-contiguous (R, D) array of a float dtype; raises on other dtypes."""
    array = np.asarray(array)
    if array.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name} expects a float32 or float64 array, got dtype {array.dtype}")
    if array.ndim == 0:
        raise ValueError(f"{name} expects at least 1 dimension, got a 0-d array")
    array = np.ascontiguousarray(array, dtype=dtype)
    return array.reshape(math.prod(array.shape[:-1]), array.shape[-1])


def _affine(weight, bias, width, dtype, name):
    """(weight, bias) as contiguous (D,) arrays of dtype; ones / zeros where None."""
    arrays = []
    for label, value, default in (("weight", weight, 1), ("bias", bias, 0)):
        if value is None:
            arrays.append(np.full(width, default, dtype))
            continue
        value = np.asarray(value)
        if value.shape != (width,):
            raise ValueError(
                f"{name} expects {label} of shape ({width},) for rows of {width} features, "
                f"got {value.shape}"
            )
        arrays.append(np.ascontiguousarray(value, dtype=dtype))
    return arrays


def layer_norm_forward(x, weight=None, bias=None, eps=1e-5):
    """(y, mean, rstd) (contract: reference.layer_norm_forward)."""
    rows = _rows(x, "layer_norm_forward")
    dtype, width = rows.dtype, rows.shape[1]
    weight, bias = _affine(weight, bias, width, dtype, "layer_norm_forward")
    out = _buffers.empty(rows.shape, dtype)  # reused: no fresh pages to fault in
    mean = np.empty(rows.shape[0], dtype)
    rstd = np.empty(rows.shape[0], dtype)
    if rows.size:
        args = (rows, weight, bias, dtype.type(eps), dtype.type(1 / width), out, mean, rstd)
        if use_pool(rows.size, PARALLEL_MIN_SIZE):
            _forward_parallel(*args, chunk_count(rows.shape[0]))
        else:
            _forward_rows(*args, 0, rows.shape[0])
    shape = np.shape(x)
    return out.reshape(shape), mean.reshape(shape[:-1]), rstd.reshape(shape[:-1])


def layer_norm_inference(x, weight=None, bias=None, eps=1e-5):
    """y alone, keeping no mean or rstd (contract: reference.layer_norm_inference)."""
    rows = _rows(x, "layer_norm_inference")
    dtype, width = rows.dtype, rows.shape[1]
    weight, bias = _affine(weight, bias, width, dtype, "layer_norm_inference")
    out = _buffers.empty(rows.shape, dtype)
    if rows.size:
        args = (rows, weight, bias, dtype.type(eps), dtype.type(1 / width), out)
        if use_pool(rows.size, PARALLEL_MIN_SIZE):
            _inference_parallel(*args, chunk_count(rows.shape[0]))
        else:
            _inference_rows(*args, 0, rows.shape[0])
    return out.reshape(np.shape(x))


def layer_norm_backward(grad_y, x, mean, rstd, weight=None):
    """(grad_x, grad_weight, grad_bias) (contract: reference.layer_norm_backward)."""
    if np.shape(grad_y) != np.shape(x):
        raise ValueError(
            f"layer_norm_backward expects grad_y of x's shape {np.shape(x)}, got {np.shape(grad_y)}"
        )
    rows = _rows(x, "layer_norm_backward")
    dtype, width = rows.dtype, rows.shape[1]
    grad_rows = _rows(grad_y, "layer_norm_backward", dtype)
    mean = np.ascontiguousarray(mean, dtype=dtype).reshape(-1)
    rstd = np.ascontiguousarray(rstd, dtype=dtype).reshape(-1)
    if mean.shape != (rows.shape[0],) or rstd.shape != (rows.shape[0],):
        raise ValueError(
            f"layer_norm_backward expects mean and rstd of shape {np.shape(x)[:-1]}, "
            f"got {np.shape(mean)} and {np.shape(rstd)}"
        )
    weight = _affine(weight, None, width, dtype, "layer_norm_backward")[0]
    grad_x = _buffers.empty(rows.shape, dtype)
    chunks = chunk_count(rows.shape[0]) if use_pool(rows.size, PARALLEL_MIN_SIZE) else 1
    grad_weight = np.zeros((chunks, width), dtype)
    grad_bias = np.zeros((chunks, width), dtype)
    if rows.size:
        args = (grad_rows, rows, mean, rstd, weight, dtype.type(1 / width), grad_x)
        if chunks > 1:
            _backward_parallel(*args, grad_weight, grad_bias, chunks)
        else:
            _backward_rows(*args, grad_weight[0], grad_bias[0], 0, rows.shape[0])
    return grad_x.reshape(np.shape(x)), grad_weight.sum(axis=0), grad_bias.sum(axis=0)
