"""Numba kernels for softmax, log-softmax and cross-entropy over the last axis.

Every kernel works on C-contiguous 2-D (rows, L) arrays; the Python wrappers at
the bottom reshape, broadcast the mask and choose a serial or a parallel driver.
Each row is read once from memory and then stays in L1 cache for the remaining
steps (max, exp, sum, scale), where the numpy composition makes 5-7 passes over
the whole array. Contracts are in reference.py (the numpy twins); the functions
here have the same names and signatures.

exp over a row is written so LLVM vectorises it. The pip build of llvmlite has
no SVML, so `math.exp` inside a Numba loop is a scalar libm call: a masked
softmax over (1024, 256, 256) float32 took 245 ms with it, the same as numpy's
composition. `exp_shifted` is plain arithmetic (Cody-Waite range reduction, a
polynomial, 2**n built from exponent bits) that LLVM turns into AVX-512 code:
27 ms for the same softmax (kernel only). float32 is within 2 ulp of np.exp (Cephes expf
polynomial); float64 uses a degree-13 Taylor polynomial on |r| <= ln2/2 (error
< 1e-16 relative). Arguments below the normal range (-87.3 for float32, -708
for float64; np.exp would give subnormals there) give exactly 0, so -1e9 and
-inf masks vanish; NaN propagates. The exp helpers say fastmath=False
explicitly (Numba would otherwise give them the fastmath flags of the kernel that
first calls them): reassociating `c - n*ln2_hi - n*ln2_lo` into `c - n*ln2` undoes
the range reduction (measured: 114 ulp at exp(-700)). exp lives in this file
because Numba's cache is invalidated only by changes to the caller's own file.
"""

import math

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

from ._checks import check_targets
from ._runtime import PARALLEL_MIN_SIZE, chunk_count

# Reassociation lets LLVM vectorise the row sums. No nnan/ninf: -inf is a valid mask value.
REDUCE = {"reassoc", "contract", "nsz", "arcp"}


LOG2E = 1.4426950408889634


def exp_shifted(row, shift, scratch):
    """row[j] = exp(row[j] - shift), in place on a 1-D row; scratch is a work row of the
    same length and dtype. Callable from jitted code only.

    In place on purpose: with separate source and destination arrays LLVM must
    assume they may overlap, and its runtime overlap check sends an aliased call
    down the scalar path (6x slower)."""
    raise NotImplementedError("exp_shifted is only available inside Numba kernels")


@njit(cache=True, fastmath=False)  # explicit, so it is not inherited from a fastmath caller
def _exp_shifted_f32(row, shift, scratch):
    """exp_shifted for float32 rows (Cephes expf polynomial)."""
    two_to_n = scratch.view(np.int32)
    for j in range(row.shape[0]):
        t = row[j] - shift
        underflow = t < np.float32(-87.3)
        c = max(t, np.float32(-87.3))
        n = np.floor(c * np.float32(LOG2E) + np.float32(0.5))
        r = c - n * np.float32(0.693359375) - n * np.float32(-2.12194440e-4)
        p = np.float32(1.9875691500e-4)
        p = p * r + np.float32(1.3981999507e-3)
        p = p * r + np.float32(8.3334519073e-3)
        p = p * r + np.float32(4.1665795894e-2)
        p = p * r + np.float32(1.6666665459e-1)
        p = p * r + np.float32(5.0000001201e-1)
        p = p * r * r + r + np.float32(1.0)
        row[j] = np.float32(0.0) if underflow else (p if t == t else t)
        two_to_n[j] = (np.int32(n) + np.int32(127)) << 23
    for j in range(row.shape[0]):
        row[j] *= scratch[j]


@njit(cache=True, fastmath=False)
def _exp_shifted_f64(row, shift, scratch):
    """exp_shifted for float64 rows (degree-13 Taylor polynomial)."""
    two_to_n = scratch.view(np.int64)
    for j in range(row.shape[0]):
        t = row[j] - shift
        underflow = t < -708.0
        c = max(t, -708.0)
        n = np.floor(c * LOG2E + 0.5)
        r = c - n * 6.93145751953125e-1 - n * 1.42860682030941723212e-6
        p = 1.0 / 6227020800.0
        p = p * r + 1.0 / 479001600.0
        p = p * r + 1.0 / 39916800.0
        p = p * r + 1.0 / 3628800.0
        p = p * r + 1.0 / 362880.0
        p = p * r + 1.0 / 40320.0
        p = p * r + 1.0 / 5040.0
        p = p * r + 1.0 / 720.0
        p = p * r + 1.0 / 120.0
        p = p * r + 1.0 / 24.0
        p = p * r + 1.0 / 6.0
        p = p * r + 0.5
        p = p * r * r + r + 1.0
        row[j] = 0.0 if underflow else (p if t == t else t)
        two_to_n[j] = (np.int64(n) + np.int64(1023)) << 52
    for j in range(row.shape[0]):
        row[j] *= scratch[j]


@overload(exp_shifted)
def _exp_shifted_overload(row, shift, scratch):
    # Numba compiles a callee with its caller's fastmath flags unless the callee sets
    # fastmath itself; the two @njit(fastmath=False) helpers do, the forwarders are trivial.
    if row.dtype == types.float32:
        return lambda row, shift, scratch: _exp_shifted_f32(row, shift, scratch)
    if row.dtype == types.float64:
        return lambda row, shift, scratch: _exp_shifted_f64(row, shift, scratch)
    return None


# ---------------------------------------------------------------- row kernels
# Each takes C-contiguous 2-D arrays and a row range [start, stop); it writes only
# rows start..stop-1 of its output, so chunks of rows can run on different threads.

@njit(cache=True, fastmath=REDUCE)
def _softmax_rows(x, mask, mask_row, scale, out, start, stop):
    """out[r] = softmax(x[r] * scale + mask[mask_row[r]]); x, out (R, L), mask (M, L)."""
    scratch = np.empty(x.shape[1], x.dtype)
    for r in range(start, stop):
        row, mask_values = out[r], mask[mask_row[r]]
        top = x[r, 0] * scale + mask_values[0]
        for j in range(x.shape[1]):
            z = x[r, j] * scale + mask_values[j]
            row[j] = z
            top = max(top, z)
        exp_shifted(row, top, scratch)
        total = scale * 0
        for j in range(row.shape[0]):
            total += row[j]
        inverse = np.float32(1) / total  # float32 stays float32, float64 stays float64
        for j in range(row.shape[0]):
            row[j] *= inverse


@njit(cache=True, fastmath=REDUCE)
def _softmax_backward_rows(y, grad_y, scale, out, start, stop):
    """out[r] = scale * y[r] * (grad_y[r] - <grad_y[r], y[r]>); all (R, L)."""
    for r in range(start, stop):
        dot = scale * 0
        for j in range(y.shape[1]):
            dot += grad_y[r, j] * y[r, j]
        for j in range(y.shape[1]):
            out[r, j] = scale * y[r, j] * (grad_y[r, j] - dot)


@njit(cache=True, fastmath=REDUCE)
def _log_softmax_rows(x, out, start, stop):
    """out[r] = (x[r] - max) - log(sum(exp(x[r] - max))); x, out (R, L)."""
    scratch = np.empty(x.shape[1], x.dtype)
    for r in range(start, stop):
        top = x[r, 0]
        for j in range(x.shape[1]):
            top = max(top, x[r, j])
        row = out[r]
        for j in range(row.shape[0]):  # explicit loops: slice assignment costs ~3 s of compile time
            row[j] = x[r, j]
        exp_shifted(row, top, scratch)
        total = top * 0
        for j in range(row.shape[0]):
            total += row[j]
        log_total = math.log(total)
        for j in range(x.shape[1]):
            out[r, j] = (x[r, j] - top) - log_total


@njit(cache=True, fastmath=REDUCE)
def _log_softmax_backward_rows(y, grad_y, out, start, stop):
    """out[r] = grad_y[r] - exp(y[r]) * sum(grad_y[r]); all (R, L)."""
    scratch = np.empty(y.shape[1], y.dtype)
    for r in range(start, stop):
        total = grad_y[r, 0] * 0
        for j in range(y.shape[1]):
            total += grad_y[r, j]
        row = out[r]
        for j in range(row.shape[0]):
            row[j] = y[r, j]
        exp_shifted(row, total * 0, scratch)
        for j in range(row.shape[0]):
            row[j] = grad_y[r, j] - row[j] * total


@njit(cache=True, fastmath=REDUCE)
def _cross_entropy_rows(logits, target, ignore_index, probs, nll, start, stop):
    """probs[r] = softmax(logits[r]); nll[r] = -log probs[r, target[r]] (0 if ignored).

    logits, probs (N, C); target (N,) int64, already checked to be in [0, C) or
    ignore_index; nll (N,) float64.
    """
    scratch = np.empty(logits.shape[1], logits.dtype)
    for r in range(start, stop):
        top = logits[r, 0]
        for j in range(logits.shape[1]):
            top = max(top, logits[r, j])
        row = probs[r]
        for j in range(row.shape[0]):
            row[j] = logits[r, j]
        exp_shifted(row, top, scratch)
        total = top * 0
        for j in range(row.shape[0]):
            total += row[j]
        inverse = np.float32(1) / total  # float32 stays float32, float64 stays float64
        for j in range(row.shape[0]):
            row[j] *= inverse
        t = target[r]
        nll[r] = 0.0 if t == ignore_index else math.log(total) - (logits[r, t] - top)


@njit(cache=True)
def _cross_entropy_backward_rows(probs, target, ignore_index, coef, out, start, stop):
    """out[r] = (probs[r] - onehot(target[r])) * coef, or 0 where target[r] == ignore_index."""
    for r in range(start, stop):
        t = target[r]
        if t == ignore_index:
            for j in range(probs.shape[1]):
                out[r, j] = 0
        else:
            for j in range(probs.shape[1]):
                out[r, j] = probs[r, j] * coef
            out[r, t] -= coef


# ---------------------------------------------------------------- parallel drivers
# One per kernel (Numba cannot cache a driver that takes the row kernel as an argument).
# `chunks` comes from chunk_count().

@njit(cache=True)
def _chunk(c, chunks, rows):
    """Row range [start, stop) of chunk c out of `chunks` over `rows` rows."""
    return c * rows // chunks, (c + 1) * rows // chunks


@njit(cache=True, parallel=True)
def _softmax_parallel(x, mask, mask_row, scale, out, chunks):
    """_softmax_rows over all rows, split into `chunks` ranges run on the thread pool."""
    for c in prange(chunks):
        start, stop = _chunk(c, chunks, x.shape[0])
        _softmax_rows(x, mask, mask_row, scale, out, start, stop)


@njit(cache=True, parallel=True)
def _softmax_backward_parallel(y, grad_y, scale, out, chunks):
    """_softmax_backward_rows over all rows, split into `chunks` ranges run on the thread pool."""
    for c in prange(chunks):
        start, stop = _chunk(c, chunks, y.shape[0])
        _softmax_backward_rows(y, grad_y, scale, out, start, stop)


@njit(cache=True, parallel=True)
def _log_softmax_parallel(x, out, chunks):
    """_log_softmax_rows over all rows, split into `chunks` ranges run on the thread pool."""
    for c in prange(chunks):
        start, stop = _chunk(c, chunks, x.shape[0])
        _log_softmax_rows(x, out, start, stop)


@njit(cache=True, parallel=True)
def _log_softmax_backward_parallel(y, grad_y, out, chunks):
    """_log_softmax_backward_rows over all rows, split into `chunks` ranges run on the thread pool."""
    for c in prange(chunks):
        start, stop = _chunk(c, chunks, y.shape[0])
        _log_softmax_backward_rows(y, grad_y, out, start, stop)


@njit(cache=True, parallel=True)
def _cross_entropy_parallel(logits, target, ignore_index, probs, nll, chunks):
    """_cross_entropy_rows over all rows, split into `chunks` ranges run on the thread pool."""
    for c in prange(chunks):
        start, stop = _chunk(c, chunks, logits.shape[0])
        _cross_entropy_rows(logits, target, ignore_index, probs, nll, start, stop)


@njit(cache=True, parallel=True)
def _cross_entropy_backward_parallel(probs, target, ignore_index, coef, out, chunks):
    """_cross_entropy_backward_rows over all rows, split into `chunks` ranges run on the thread pool."""
    for c in prange(chunks):
        start, stop = _chunk(c, chunks, probs.shape[0])
        _cross_entropy_backward_rows(probs, target, ignore_index, coef, out, start, stop)


# ---------------------------------------------------------------- public wrappers

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
        raise ValueError(f"{name} expects y and grad_y of the same shape, got {np.shape(a)} and {np.shape(b)}")


def _broadcast_mask(mask, shape, dtype):
    """Return (mask (M, L) contiguous, mask_row (R,) int64) so that row r of x uses mask[mask_row[r]]."""
    rows = int(np.prod(shape[:-1]))
    if mask is None:
        return np.zeros((1, shape[-1]), dtype), np.zeros(rows, np.int64)
    mask = np.asarray(mask, dtype=dtype)
    try:
        fits = mask.ndim <= len(shape) and np.broadcast_shapes(mask.shape, shape) == tuple(shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"softmax mask of shape {mask.shape} does not broadcast to x of shape {tuple(shape)}")
    mask = mask.reshape((1,) * (len(shape) - mask.ndim) + mask.shape)
    lead = mask.shape[:-1]
    mask2d = np.ascontiguousarray(np.broadcast_to(mask, lead + (shape[-1],))).reshape(-1, shape[-1])
    mask_row = np.broadcast_to(np.arange(mask2d.shape[0]).reshape(lead), tuple(shape[:-1]))
    return mask2d, np.ascontiguousarray(mask_row, dtype=np.int64).reshape(rows)


def softmax_forward(x, scale=1.0, mask=None):
    """y = softmax(x * scale + mask) along the last axis (contract: reference.softmax_forward)."""
    x2 = _rows(x, "softmax_forward")
    mask2d, mask_row = _broadcast_mask(mask, np.shape(x), x2.dtype)
    out = np.empty_like(x2)
    if x2.size:
        scale = x2.dtype.type(scale)
        if x2.size >= PARALLEL_MIN_SIZE:
            _softmax_parallel(x2, mask2d, mask_row, scale, out, chunk_count(x2.shape[0]))
        else:
            _softmax_rows(x2, mask2d, mask_row, scale, out, 0, x2.shape[0])
    return out.reshape(np.shape(x))


def softmax_backward(y, grad_y, scale=1.0):
    """scale * y * (grad_y - sum(grad_y * y, -1)) (contract: reference.softmax_backward)."""
    _same_shape(y, grad_y, "softmax_backward")
    y2 = _rows(y, "softmax_backward")
    g2 = _rows(np.asarray(grad_y, dtype=y2.dtype), "softmax_backward")
    out = np.empty_like(y2)
    if y2.size:
        scale = y2.dtype.type(scale)
        if y2.size >= PARALLEL_MIN_SIZE:
            _softmax_backward_parallel(y2, g2, scale, out, chunk_count(y2.shape[0]))
        else:
            _softmax_backward_rows(y2, g2, scale, out, 0, y2.shape[0])
    return out.reshape(np.shape(y))


def log_softmax_forward(x):
    """x - logsumexp(x) along the last axis (contract: reference.log_softmax_forward)."""
    x2 = _rows(x, "log_softmax_forward")
    out = np.empty_like(x2)
    if x2.size:
        if x2.size >= PARALLEL_MIN_SIZE:
            _log_softmax_parallel(x2, out, chunk_count(x2.shape[0]))
        else:
            _log_softmax_rows(x2, out, 0, x2.shape[0])
    return out.reshape(np.shape(x))


def log_softmax_backward(y, grad_y):
    """grad_y - exp(y) * sum(grad_y, -1) (contract: reference.log_softmax_backward)."""
    _same_shape(y, grad_y, "log_softmax_backward")
    y2 = _rows(y, "log_softmax_backward")
    g2 = _rows(np.asarray(grad_y, dtype=y2.dtype), "log_softmax_backward")
    out = np.empty_like(y2)
    if y2.size:
        if y2.size >= PARALLEL_MIN_SIZE:
            _log_softmax_backward_parallel(y2, g2, out, chunk_count(y2.shape[0]))
        else:
            _log_softmax_backward_rows(y2, g2, out, 0, y2.shape[0])
    return out.reshape(np.shape(y))


def cross_entropy_forward(logits, target, ignore_index=-100):
    """(loss, probs, count) (contract: reference.cross_entropy_forward)."""
    logits = np.asarray(logits)
    target = check_targets(logits, target, ignore_index)
    logits = _rows(logits, "cross_entropy_forward")
    probs = np.empty_like(logits)
    nll = np.empty(logits.shape[0], np.float64)
    if logits.size:
        if logits.size >= PARALLEL_MIN_SIZE:
            _cross_entropy_parallel(logits, target, ignore_index, probs, nll, chunk_count(logits.shape[0]))
        else:
            _cross_entropy_rows(logits, target, ignore_index, probs, nll, 0, logits.shape[0])
    count = int(np.count_nonzero(target != ignore_index))
    loss = nll.sum() / count if count else 0.0
    return np.asarray(loss, dtype=logits.dtype), probs, count


def cross_entropy_backward(probs, target, ignore_index, count, grad_loss):
    """Gradient w.r.t. logits (contract: reference.cross_entropy_backward)."""
    probs = _rows(probs, "cross_entropy_backward")
    out = np.empty_like(probs) if count else np.zeros_like(probs)
    if count and probs.size:
        target = np.ascontiguousarray(target, dtype=np.int64)
        coef = probs.dtype.type(float(grad_loss) / count)
        if probs.size >= PARALLEL_MIN_SIZE:
            _cross_entropy_backward_parallel(probs, target, ignore_index, coef, out, chunk_count(probs.shape[0]))
        else:
            _cross_entropy_backward_rows(probs, target, ignore_index, coef, out, 0, probs.shape[0])
    return out
