"""The mean over a sequence's queries of its attention weights, forward and backward: what
self-attention followed by mean pooling needs (nn.self_attention_mean).
Contracts: reference.attention_mean_forward and reference.attention_mean_backward.

    weights_b = softmax(q_b k_b^T * scale)            (H, L, L), sequence b's first L positions
    mean_b[h, j] = (1 / L) sum_i weights_b[h, i, j]   (H, L), 0 past L

The mean of the attention's outputs over the L positions is then mean_b @ v_b, so the caller
never makes an output per position: no weights @ v product (L x L x head_dim per head) and, as
v = x W_v, no value projection of every position either (mean_b @ x, then W_v). Backward: with
g = d mean, the weights' gradient is g / L in every row, so the scores' is
    d scores = scale * weights * (g - weights @ g) / L
and d q = d scores @ k, d k = d scores^T @ q. Each sequence is taken alone over its own L x L
block (padding is never computed) and its weights are made again in backward (nothing is kept
between the passes but q and k). The products are OpenBLAS calls; the softmax with the column
sums (forward) or the gradient (backward) is one Numba pass per row, the row still in cache
from the product (numpy's composition made nine passes over each block, twice as slow); the
sequences are dealt to two threads with one OpenBLAS thread each (_threads.run_tasks).
"""

import numpy as np

from . import _buffers, _threads
from ._checks import check_attention_mean
from ._exp import fast_exp
from ._maxnum import maxnum
from ._numba_cache import cached_njit

# Reassociation lets LLVM vectorise the row sums (changes results by rounding only).
# No contract: x * scale - top fused into one FMA is not rounded where the max's x * scale
# was, and the max key's exp is then not exactly 1 (4e-4 off at scores of 3,000).
REDUCE = {"reassoc", "nsz", "arcp"}


@cached_njit(nogil=True, fastmath=REDUCE, error_model="numpy")
def _exps_of_row(row, scale):
    """row -> in place, exp(row * scale - its max); returns 1 / their sum, so that
    row * the result is softmax(row * scale)."""
    top = row[0] * scale  # a NaN in the row gives NaN exps, whatever top is
    for j in range(row.shape[0]):
        top = maxnum(top, row[j] * scale)
    total = row.dtype.type(0)
    for j in range(row.shape[0]):
        e = fast_exp(row[j] * scale - top)
        row[j] = e
        total += e
    return row.dtype.type(1) / total


@cached_njit(nogil=True, fastmath=REDUCE, error_model="numpy")
def _softmax_into_mean(scores, scale, mean):
    """mean[h, j] = mean over rows i of softmax(scores[h, i] * scale)[j]; scores (H, n, n) is
    overwritten (each row by its exps)."""
    heads, rows, width = scores.shape
    count = mean.dtype.type(rows)
    for h in range(heads):
        total_h = mean[h]
        for j in range(width):
            total_h[j] = 0
        for i in range(rows):
            row = scores[h, i]
            inverse = _exps_of_row(row, scale)
            for j in range(width):
                total_h[j] += row[j] * inverse
        for j in range(width):
            total_h[j] /= count


@cached_njit(nogil=True, fastmath=REDUCE, error_model="numpy")
def _softmax_mean_backward(scores, grad, scale):
    """scores (H, n, n) -> in place, the scores' gradient scale * w * (g - w . g) / n, w the
    row's softmax(scores * scale) and g = grad[h] (H, n)."""
    heads, rows, width = scores.shape
    factor = scale / scores.dtype.type(rows)
    for h in range(heads):
        g = grad[h]
        for i in range(rows):
            row = scores[h, i]
            inverse = _exps_of_row(row, scale)
            dot = scores.dtype.type(0)
            for j in range(width):
                row[j] *= inverse
                dot += row[j] * g[j]
            for j in range(width):
                row[j] = factor * row[j] * (g[j] - dot)


def _scores(query, key, scratch):
    """query key^T of one sequence, (H, n, n), in the thread's scratch array."""
    heads, n = query.shape[:2]
    scores = scratch[: heads * n * n].reshape(heads, n, n)
    return np.matmul(query, key.swapaxes(-1, -2), out=scores)


def attention_mean_forward(q, k, scale, lengths):
    """mean (B, H, T) of the weights over each sequence's queries (contract:
    reference.attention_mean_forward)."""
    lengths = check_attention_mean(q, k, lengths, "attention_mean_forward")
    mean = np.zeros(q.shape[:3], q.dtype)
    scale = q.dtype.type(scale)

    def run(sequences):
        longest = int(lengths[sequences[0]])
        scratch = _buffers.empty((q.shape[1] * longest * longest,), q.dtype)
        for b in sequences:
            n = int(lengths[b])  # >= 1: run_on_sequences leaves out the empty ones
            means = np.empty((q.shape[1], n), q.dtype)
            _softmax_into_mean(_scores(q[b, :, :n], k[b, :, :n], scratch), scale, means)
            mean[b, :, :n] = means

    _threads.run_on_sequences(run, lengths, power=2)
    return mean


def attention_mean_backward(q, k, grad, scale, lengths):
    """(grad_q, grad_k) of attention_mean_forward (contract: reference.attention_mean_backward)."""
    lengths = check_attention_mean(q, k, lengths, "attention_mean_backward")
    grad = np.asarray(grad, dtype=q.dtype)
    grad_q, grad_k = np.zeros_like(q), np.zeros_like(k)
    scale = q.dtype.type(scale)

    def run(sequences):
        longest = int(lengths[sequences[0]])
        scratch = _buffers.empty((q.shape[1] * longest * longest,), q.dtype)
        for b in sequences:
            n = int(lengths[b])
            query, key = q[b, :, :n], k[b, :, :n]
            grad_scores = _scores(query, key, scratch)  # the weights made again, in place
            _softmax_mean_backward(grad_scores, np.ascontiguousarray(grad[b, :, :n]), scale)
            np.matmul(grad_scores, key, out=grad_q[b, :, :n])
            np.matmul(grad_scores.swapaxes(-1, -2), query, out=grad_k[b, :, :n])

    _threads.run_on_sequences(run, lengths, power=2)
    return grad_q, grad_k
