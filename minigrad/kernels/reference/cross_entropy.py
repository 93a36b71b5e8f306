"""Twins of kernels/cross_entropy.py: cross-entropy over classes and its backward."""

import numpy as np

from .._checks import check_targets


def cross_entropy_forward(logits, target, ignore_index=-100):
    """Mean negative log-likelihood of target under softmax(logits).

    logits (N, C) float, target (N,) int. Rows whose target == ignore_index are left
    out of the mean. Returns (loss, probs, count): loss a 0-d array of the logits
    dtype (0.0 when count == 0), probs = softmax(logits) (N, C), count the number of
    rows that were not ignored (int). A target outside [0, C) that is not
    ignore_index raises ValueError.
    """
    target = check_targets(logits, target, ignore_index)
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    sums = exp.sum(axis=1, keepdims=True)
    probs = exp / sums
    keep = target != ignore_index
    count = int(keep.sum())
    rows = np.nonzero(keep)[0]
    # -log p[t] = log(sum exp) - shifted[t], without taking log of a rounded probability
    nll = np.log(sums[rows, 0]) - shifted[rows, target[rows]]
    loss = nll.sum(dtype=np.float64) / count if count else 0.0
    return np.asarray(loss, dtype=logits.dtype), probs, count


def cross_entropy_backward(probs, target, ignore_index, count, grad_loss):
    """Gradient w.r.t. logits: (probs - onehot(target)) * grad_loss / count, 0 on ignored rows."""
    grad = np.zeros_like(probs)
    if count == 0:
        return grad
    keep = np.asarray(target) != ignore_index
    rows = np.nonzero(keep)[0]
    grad[rows] = probs[rows]
    grad[rows, np.asarray(target)[rows]] -= 1
    grad *= probs.dtype.type(float(grad_loss) / count)
    return grad
