"""Numba kernels for cross-entropy over classes: softmax and the negative log-likelihood of
each row's target in one pass, and the backward (probs - onehot(target)) * coef.

Why: one pass per row each way, the row in L1 cache for the max, exp, sum and scale steps, as in
softmax.py (whose row helpers and fast-math flags these share). Contracts are in
reference/cross_entropy.py (the numpy twins, same names and signatures). The per-element step
whose rewriting would lose precision, the negative log-likelihood, runs without fastmath (see
softmax.py's docstring).
"""

import math

import numpy as np
from numba import prange

from . import _buffers, _numba_threads
from ._checks import check_targets
from ._exp import fast_exp
from ._maxnum import maxnum
from ._numba_cache import cached_njit
from .softmax import REDUCE, _rows


@cached_njit(nogil=True, fastmath=False)
def _nll(log_total, target_logit, top):
    """-log softmax(logits)[t] = log(sum exp(logits - top)) - (logits[t] - top), in this order."""
    return log_total - (target_logit - top)


@cached_njit(nogil=True, fastmath=REDUCE)
def _cross_entropy_rows(logits, target, ignore_index, probs, nll, start, stop):
    """probs[r] = softmax(logits[r]); nll[r] = -log probs[r, target[r]] (0 if ignored).

    logits, probs (N, C); target (N,) int64, already checked to be in [0, C) or
    ignore_index; nll (N,) float64.
    """
    for r in range(start, stop):
        top = logits[r, 0]  # a NaN in the row reaches the sum below whatever top is
        for j in range(logits.shape[1]):
            top = maxnum(top, logits[r, j])
        row = probs[r]
        for j in range(row.shape[0]):
            row[j] = fast_exp(logits[r, j] - top)
        total = top * 0
        for j in range(row.shape[0]):
            total += row[j]
        inverse = np.float32(1) / total  # float32 stays float32, float64 stays float64
        for j in range(row.shape[0]):
            row[j] *= inverse
        t = target[r]
        nll[r] = 0.0 if t == ignore_index else _nll(math.log(total), logits[r, t], top)


@cached_njit(nogil=True)
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
# one per row kernel, as in softmax.py


@cached_njit(parallel=True)
def _cross_entropy_parallel(logits, target, ignore_index, probs, nll, bounds):
    for c in prange(bounds.shape[0] - 1):
        _cross_entropy_rows(logits, target, ignore_index, probs, nll, bounds[c], bounds[c + 1])


@cached_njit(parallel=True)
def _cross_entropy_backward_parallel(probs, target, ignore_index, coef, out, bounds):
    for c in prange(bounds.shape[0] - 1):
        _cross_entropy_backward_rows(
            probs, target, ignore_index, coef, out, bounds[c], bounds[c + 1]
        )


# ---------------------------------------------------------------- entry points


def cross_entropy_forward(logits, target, ignore_index=-100):
    """(loss, probs, count) (contract: reference.cross_entropy_forward)."""
    logits = np.asarray(logits)
    target = check_targets(logits, target, ignore_index)
    logits = _rows(logits, "cross_entropy_forward")
    probs = _buffers.empty(logits.shape, logits.dtype)
    nll = np.empty(logits.shape[0], np.float64)
    if logits.size:
        _numba_threads.launch(
            _cross_entropy_rows,
            _cross_entropy_parallel,
            (logits, target, ignore_index, probs, nll),
            logits.shape[0],
            logits.size,
        )
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
        _numba_threads.launch(
            _cross_entropy_backward_rows,
            _cross_entropy_backward_parallel,
            (probs, target, ignore_index, coef, out),
            probs.shape[0],
            probs.size,
        )
    return out
