"""Numba kernels for softmax (masked) and log-softmax over the last axis; cross-entropy is in
cross_entropy.py.

Why: one pass per row each way. A row is read from memory once and stays in L1 cache for
the max, exp, sum and scale steps, where numpy's composition makes 5-7 passes over the whole
array; masked keys are skipped, never computed (benchmarks/README-kernels.md has the numbers).
Contracts are in reference/softmax.py (the numpy twins, same names and signatures).

Every row kernel takes C-contiguous 2-D (rows, L) arrays and a row range [start, stop) and
writes only those rows of its outputs, so chunks of rows can run on different threads
(`_numba_threads.launch`); all are nogil, so kernels/attention.py can also call them from its own
two threads. exp is `_exp.fast_exp`.

Fast math: reductions (max, sums) may be reassociated, which changes a result only by
rounding. The per-element steps whose rewriting would lose precision, x - max - log(sum) of
log-softmax (and cross_entropy.py's negative log-likelihood), run in helpers without
fastmath: reassociated to x - (max + log(sum)) they lost 1e-6 at logits of 1e10 in float64.
"""

import math

import numpy as np
from numba import prange, types
from numba.extending import overload

from . import _buffers, _numba_threads
from ._exp import fast_exp
from ._maxnum import maxnum
from ._numba_cache import cached_njit

# Reassociation lets LLVM vectorise the row sums. No nnan/ninf: -inf marks a masked key.
# No contract: x * scale - top fused into one FMA is not rounded where the max's x * scale
# was, and the max key's exp is then not exactly 1 (4e-4 off at scores of 3,000).
REDUCE = {"reassoc", "nsz", "arcp"}


def _minus_inf(array):
    """-inf in the dtype of `array` (so that float32 code stays float32); Numba only."""
    raise NotImplementedError


@overload(_minus_inf)
def _minus_inf_overload(array):
    if array.dtype == types.float32:
        return lambda array: np.float32(-np.inf)
    return lambda array: -np.inf


# ---------------------------------------------------------------- row kernels


@cached_njit(nogil=True)
def _every_key_allowed(allowed, width):
    """True when allowed has one row for every row (shape (1, >= width)) and it is all True:
    then the row kernels can skip the mask (no mask, or a causal mask given by key_stop)."""
    if allowed.shape[0] != 1:
        return False
    for j in range(width):
        if not allowed[0, j]:
            return False
    return True


@cached_njit(nogil=True)
def _has_nan(x, scale, keep, every_key, n):
    """True when an allowed score x[j] * scale, j < n, is NaN (the rare path of _softmax_rows)."""
    for j in range(n):
        z = x[j] * scale
        if z != z and (every_key or keep[j]):
            return True
    return False


@cached_njit(nogil=True, fastmath=REDUCE)
def _softmax_rows(x, scale, key_stop, allowed, allowed_row, empty_value, out, empty, start, stop):
    """out[r] = softmax of x[r] * scale over the allowed keys of row r, exactly 0 at the others.

    Key j of row r is allowed when j < key_stop[r] and allowed[allowed_row[r], j]: key_stop
    (R,) int64, or (1,) for every row; allowed (M, >= L) bool, allowed_row (R,) int64, or
    (1,) for every row. A row with no allowed score above -inf (and no NaN) is filled with
    empty_value and gets empty[r] = True, else False. x, out (R, L); out may be x (in place);
    empty (R,) bool.

    The max is a loop of its own (with a store in it, LLVM leaves it scalar), then the exps,
    their sum and the scale by 1 / sum, the row in L1 cache.
    """
    width, minus_inf = x.shape[1], _minus_inf(x)
    # out's dtype: not scale * 0, which Numba makes float64 for a float32 scale
    zero, one = out.dtype.type(0), out.dtype.type(1)
    every_key = _every_key_allowed(allowed, width)
    for r in range(start, stop):
        n = min(key_stop[r if key_stop.shape[0] > 1 else 0], width)
        keep = allowed[allowed_row[r if allowed_row.shape[0] > 1 else 0]]
        scores, row = x[r], out[r]
        top = minus_inf  # maxnum skips NaN; a NaN still reaches the sum, or _has_nan below
        if every_key:  # the same loops without the mask (causal attention's case)
            for j in range(n):
                top = maxnum(top, scores[j] * scale)
        else:
            for j in range(n):
                top = maxnum(top, scores[j] * scale if keep[j] else minus_inf)
        if not top > minus_inf and not _has_nan(scores, scale, keep, every_key, n):
            for j in range(width):
                row[j] = empty_value
            empty[r] = True
            continue
        empty[r] = False
        if every_key:
            for j in range(n):
                row[j] = fast_exp(scores[j] * scale - top)
        else:
            for j in range(n):
                row[j] = fast_exp(scores[j] * scale - top) if keep[j] else zero
        total = zero
        for j in range(n):  # one loop for both: a mask and its key_stop give the same bits
            total += row[j]
        inverse = one / total
        for j in range(n):
            row[j] *= inverse
        # NaN or inf from an allowed key spread over the row: not to masked keys
        if not total < np.inf:
            for j in range(n):
                row[j] = row[j] if keep[j] else 0
        for j in range(n, width):
            row[j] = 0


@cached_njit(nogil=True, fastmath=REDUCE)
def _softmax_backward_rows(
    y, grad_y, scale, key_stop, allowed, allowed_row, empty, out, start, stop
):
    """out[r] = scale * y[r] * (grad_y[r] - <grad_y[r], y[r]>) over the allowed keys of row r
    (as in _softmax_rows), exactly 0 at the others and in rows marked empty. y, grad_y, out
    (R, L); empty (R,) bool, or (1,) for every row."""
    width = y.shape[1]
    zero = out.dtype.type(0)  # as in _softmax_rows
    every_key = _every_key_allowed(allowed, width)
    for r in range(start, stop):
        n = (
            0
            if empty[r if empty.shape[0] > 1 else 0]
            else min(key_stop[r if key_stop.shape[0] > 1 else 0], width)
        )
        keep = allowed[allowed_row[r if allowed_row.shape[0] > 1 else 0]]
        dot = zero
        if every_key:  # the same loops without the mask: vectorised, 2-4x faster
            for j in range(n):
                dot += grad_y[r, j] * y[r, j]
            for j in range(n):
                out[r, j] = scale * y[r, j] * (grad_y[r, j] - dot)
        else:
            for j in range(n):
                dot += grad_y[r, j] * y[r, j] if keep[j] else zero  # masked keys' junk stays out
            for j in range(n):
                out[r, j] = scale * y[r, j] * (grad_y[r, j] - dot) if keep[j] else zero
        for j in range(n, width):
            out[r, j] = 0


# fastmath=False explicit: a callee left unset inherits its caller's flags
@cached_njit(nogil=True, fastmath=False)
def _minus_shift(x, top, log_total, out):
    """out[j] = (x[j] - top) - log_total, in this order (no fastmath: see the module docstring)."""
    for j in range(x.shape[0]):
        out[j] = (x[j] - top) - log_total


@cached_njit(nogil=True, fastmath=REDUCE)
def _log_softmax_rows(x, out, start, stop):
    """out[r] = (x[r] - max) - log(sum(exp(x[r] - max))); x, out (R, L)."""
    for r in range(start, stop):
        top = x[r, 0]  # a NaN in the row reaches the sum below whatever top is
        for j in range(x.shape[1]):
            top = maxnum(top, x[r, j])
        row = out[r]
        for j in range(row.shape[0]):
            row[j] = fast_exp(x[r, j] - top)
        total = top * 0
        for j in range(row.shape[0]):
            total += row[j]
        _minus_shift(x[r], top, math.log(total), row)


@cached_njit(nogil=True, fastmath=REDUCE)
def _log_softmax_backward_rows(y, grad_y, out, start, stop):
    """out[r] = grad_y[r] - exp(y[r]) * sum(grad_y[r]); all (R, L)."""
    for r in range(start, stop):
        total = grad_y[r, 0] * 0
        for j in range(y.shape[1]):
            total += grad_y[r, j]
        row = out[r]
        for j in range(row.shape[0]):
            row[j] = fast_exp(y[r, j])
        for j in range(row.shape[0]):
            row[j] = grad_y[r, j] - row[j] * total


# ---------------------------------------------------------------- parallel drivers
# One per row kernel (Numba cannot cache a driver that takes the kernel as an argument);
# chunk c is rows bounds[c]:bounds[c + 1] (_numba_threads.chunk_bounds).


@cached_njit(parallel=True)
def _softmax_parallel(x, scale, key_stop, allowed, allowed_row, empty_value, out, empty, bounds):
    for c in prange(bounds.shape[0] - 1):
        _softmax_rows(
            x,
            scale,
            key_stop,
            allowed,
            allowed_row,
            empty_value,
            out,
            empty,
            bounds[c],
            bounds[c + 1],
        )


@cached_njit(parallel=True)
def _softmax_backward_parallel(
    y, grad_y, scale, key_stop, allowed, allowed_row, empty, out, bounds
):
    for c in prange(bounds.shape[0] - 1):
        _softmax_backward_rows(
            y, grad_y, scale, key_stop, allowed, allowed_row, empty, out, bounds[c], bounds[c + 1]
        )


@cached_njit(parallel=True)
def _log_softmax_parallel(x, out, bounds):
    for c in prange(bounds.shape[0] - 1):
        _log_softmax_rows(x, out, bounds[c], bounds[c + 1])


@cached_njit(parallel=True)
def _log_softmax_backward_parallel(y, grad_y, out, bounds):
    for c in prange(bounds.shape[0] - 1):
        _log_softmax_backward_rows(y, grad_y, out, bounds[c], bounds[c + 1])


# ---------------------------------------------------------------- arguments


def _rows(array, name):
    """array as a C-contiguous float32/float64 (R, L) array; raises on other dtypes."""
    array = np.asarray(array)
    if array.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name} expects a float32 or float64 array, got dtype {array.dtype}")
    if array.ndim == 0:
        raise ValueError(f"{name} expects at least 1 dimension, got a 0-d array")
    return np.ascontiguousarray(array).reshape(math.prod(array.shape[:-1]), array.shape[-1])


def _same_shape(a, b, name):
    if np.shape(a) != np.shape(b):
        raise ValueError(
            f"{name} expects y and grad_y of the same shape, got {np.shape(a)} and {np.shape(b)}"
        )


def row_mask(mask, shape):
    """(allowed (M, L) bool, allowed_row (R,) or (1,) int64) so that row r of an x of `shape`
    uses allowed[allowed_row[r]]; a mask that broadcasts along rows is not copied out to them.
    mask None allows every key (one all-True row)."""
    rows = math.prod(shape[:-1])
    if mask is None:
        return np.ones((1, shape[-1]), np.bool_), np.zeros(1, np.int64)
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"softmax mask must be bool (True = may attend), got dtype {mask.dtype}")
    try:
        fits = mask.ndim <= len(shape) and np.broadcast_shapes(mask.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"softmax mask of shape {mask.shape} does not broadcast to x of shape {tuple(shape)}"
        )
    mask = mask.reshape((1,) * (len(shape) - mask.ndim) + mask.shape)
    lead = mask.shape[:-1]
    allowed = np.ascontiguousarray(np.broadcast_to(mask, lead + (shape[-1],))).reshape(
        math.prod(lead), shape[-1]
    )
    if allowed.shape[0] == 1:
        return allowed, np.zeros(1, np.int64)
    allowed_row = np.broadcast_to(np.arange(allowed.shape[0]).reshape(lead), tuple(shape[:-1]))
    return allowed, np.ascontiguousarray(allowed_row, dtype=np.int64).reshape(rows)


def row_key_stop(key_stop, shape):
    """key_stop (None, or integers broadcastable to shape[:-1]) as int64 (R,), or (1,) when
    one number serves every row."""
    if key_stop is None:
        return np.array([shape[-1]], np.int64)
    key_stop = np.asarray(key_stop)
    if key_stop.dtype.kind not in "iu":
        raise TypeError(f"softmax key_stop must hold integers, got dtype {key_stop.dtype}")
    if key_stop.size == 1:
        return key_stop.astype(np.int64).reshape(1)
    try:
        full = np.broadcast_to(key_stop, tuple(shape[:-1]))
    except ValueError:
        raise ValueError(
            f"softmax key_stop of shape {key_stop.shape} does not broadcast to the rows "
            f"{tuple(shape[:-1])} of x"
        ) from None
    return np.ascontiguousarray(full, dtype=np.int64).reshape(-1)


# ---------------------------------------------------------------- public wrappers


def softmax_forward(x, scale=1.0, mask=None, key_stop=None, empty_value=np.nan, empty=None):
    """Softmax over the allowed keys of each row (contract: reference.softmax_forward)."""
    x2 = _rows(x, "softmax_forward")
    allowed, allowed_row = row_mask(mask, np.shape(x))
    stops = row_key_stop(key_stop, np.shape(x))
    out = _buffers.empty(x2.shape, x2.dtype)
    empty_rows = np.empty(x2.shape[0], np.bool_)
    if x2.size:
        dtype = x2.dtype.type
        _numba_threads.launch(
            _softmax_rows,
            _softmax_parallel,
            (x2, dtype(scale), stops, allowed, allowed_row, dtype(empty_value), out, empty_rows),
            x2.shape[0],
            x2.size,
        )
    else:
        empty_rows[:] = x2.shape[1] == 0  # rows without keys
    if empty is not None:
        empty[...] = empty_rows.reshape(np.shape(x)[:-1])
    return out.reshape(np.shape(x))


def softmax_backward(y, grad_y, scale=1.0, mask=None, key_stop=None, empty=None):
    """Gradient w.r.t. x of softmax_forward (contract: reference.softmax_backward)."""
    _same_shape(y, grad_y, "softmax_backward")
    y2 = _rows(y, "softmax_backward")
    g2 = _rows(np.asarray(grad_y, dtype=y2.dtype), "softmax_backward")
    allowed, allowed_row = row_mask(mask, np.shape(y))
    stops = row_key_stop(key_stop, np.shape(y))
    empty = (
        np.zeros(1, np.bool_)
        if empty is None
        else np.ascontiguousarray(empty, np.bool_).reshape(-1)
    )
    out = _buffers.empty(y2.shape, y2.dtype)
    if y2.size:
        _numba_threads.launch(
            _softmax_backward_rows,
            _softmax_backward_parallel,
            (y2, g2, y2.dtype.type(scale), stops, allowed, allowed_row, empty, out),
            y2.shape[0],
            y2.size,
        )
    return out.reshape(np.shape(y))


def log_softmax_forward(x):
    """x - logsumexp(x) along the last axis (contract: reference.log_softmax_forward)."""
    x2 = _rows(x, "log_softmax_forward")
    out = _buffers.empty(x2.shape, x2.dtype)
    if x2.size:
        _numba_threads.launch(
            _log_softmax_rows, _log_softmax_parallel, (x2, out), x2.shape[0], x2.size
        )
    return out.reshape(np.shape(x))


def log_softmax_backward(y, grad_y):
    """grad_y - exp(y) * sum(grad_y, -1) (contract: reference.log_softmax_backward)."""
    _same_shape(y, grad_y, "log_softmax_backward")
    y2 = _rows(y, "log_softmax_backward")
    g2 = _rows(np.asarray(grad_y, dtype=y2.dtype), "log_softmax_backward")
    out = _buffers.empty(y2.shape, y2.dtype)
    if y2.size:
        _numba_threads.launch(
            _log_softmax_backward_rows,
            _log_softmax_backward_parallel,
            (y2, g2, out),
            y2.shape[0],
            y2.size,
        )
    return out.reshape(np.shape(y))
