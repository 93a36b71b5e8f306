"""The additive (Bahdanau) score of attention pooling, forward and backward, over each
sequence's real positions only (nn.AdditiveScore given lengths).
Contracts: reference.additive_score_forward and reference.additive_score_backward.

    hidden = tanh(x @ weight + bias)    (n, K), sequence b's first n = lengths[b] positions
    scores = hidden @ vector            (n,), 0 past n

Backward, with g = d scores: d pre = g * vector * (1 - hidden^2), then d x = d pre @ weight^T,
d weight = x^T @ d pre, d bias = sum of d pre's rows, d vector = g @ hidden.

Why a kernel: the composition (x @ W, + bias, tanh, @ v, and their backward) made every padded
position's projection and a new (B, T, K) array for each op and each gradient; here each
sequence's product is one OpenBLAS call over its n rows, and the tanh with the score (forward)
or d pre with the bias' and vector's sums (backward) is one Numba pass over those rows while
they are in cache.
d pre never leaves a thread's scratch array. The sequences are dealt to two threads with one
OpenBLAS thread each (_threads.run_tasks), each thread summing its own d weight.
"""

import numpy as np

from . import _buffers, _threads
from ._checks import check_additive_score
from ._numba_cache import cached_njit
from .lstm_cell import _tanh

# Reassociation lets LLVM vectorise the row sums (changes results by rounding only); numpy's
# error model lets it vectorise tanh's division (Python's checks each one for zero: 18x slower).
REDUCE = {"reassoc", "contract", "nsz", "arcp"}


@cached_njit(nogil=True, fastmath=REDUCE, error_model="numpy")
def _tanh_and_score(pre, bias, vector, scores):
    """pre (n, K) -> in place, tanh(pre + bias); scores[r] = that row @ vector."""
    for r in range(pre.shape[0]):
        row = pre[r]
        total = vector.dtype.type(0)
        for j in range(row.shape[0]):
            h = _tanh(row[j] + bias[j])
            row[j] = h
            total += h * vector[j]
        scores[r] = total


@cached_njit(nogil=True, fastmath=REDUCE, error_model="numpy")
def _grad_pre(hidden, grad, vector, grad_pre, grad_bias, grad_vector):
    """grad_pre (n, K) = grad[r] * vector * (1 - hidden[r]^2); adds the rows of grad_pre into
    grad_bias and grad[r] * hidden[r] into grad_vector."""
    one = vector.dtype.type(1)
    for r in range(hidden.shape[0]):
        h, out, g = hidden[r], grad_pre[r], grad[r]
        for j in range(h.shape[0]):
            d = g * vector[j] * (one - h[j] * h[j])
            out[j] = d
            grad_bias[j] += d
            grad_vector[j] += g * h[j]


def additive_score_forward(x, weight, bias, vector, lengths):
    """(scores (B, T), hidden (B, T, K)) (contract: reference.additive_score_forward)."""
    lengths = check_additive_score(x, weight, bias, vector, lengths, "additive_score_forward")
    scores = np.zeros(x.shape[:2], x.dtype)
    hidden = np.empty(x.shape[:2] + weight.shape[1:], x.dtype)

    def run(sequences):
        for b in sequences:
            n = int(lengths[b])
            np.matmul(x[b, :n], weight, out=hidden[b, :n])
            _tanh_and_score(hidden[b, :n], bias, vector, scores[b, :n])

    _threads.run_on_sequences(run, lengths)
    return scores, hidden


def additive_score_backward(x, weight, vector, hidden, grad, lengths):
    """(grad_x, grad_weight, grad_bias, grad_vector) (contract:
    reference.additive_score_backward)."""
    lengths = check_additive_score(x, weight, vector, vector, lengths, "additive_score_backward")
    grad = np.asarray(grad, dtype=x.dtype)
    if grad.shape != x.shape[:2] or hidden.shape != x.shape[:2] + weight.shape[1:]:
        raise ValueError(
            f"additive_score_backward expects hidden {x.shape[:2] + weight.shape[1:]} and grad "
            f"{x.shape[:2]}; got {hidden.shape} and {grad.shape}"
        )
    grad_x = np.empty_like(x)
    grad_x[np.arange(x.shape[1]) >= lengths[:, None]] = 0
    columns = weight.shape[1]

    def run(sequences):
        grad_weight = np.zeros_like(weight)
        grad_bias, grad_vector = np.zeros(columns, x.dtype), np.zeros(columns, x.dtype)
        scratch = _buffers.empty((int(lengths[sequences[0]]), columns), x.dtype)
        product = np.empty_like(weight)
        for b in sequences:
            n = int(lengths[b])
            grad_pre = scratch[:n]
            _grad_pre(hidden[b, :n], grad[b, :n], vector, grad_pre, grad_bias, grad_vector)
            np.matmul(grad_pre, weight.T, out=grad_x[b, :n])
            grad_weight += np.matmul(x[b, :n].T, grad_pre, out=product)
        return grad_weight, grad_bias, grad_vector

    parts = _threads.run_on_sequences(run, lengths)
    if not parts:  # no real position anywhere
        return grad_x, np.zeros_like(weight), np.zeros(columns, x.dtype), np.zeros_like(vector)
    return (grad_x, *(sum(sums) for sums in zip(*parts)))  # each thread's sums, added
