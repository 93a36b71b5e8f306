"""Twins of kernels/batched_matmul.py: matrix products and the linear layer's, as np.matmul."""

import numpy as np


def matmul(a, b):
    """a (..., n, k) @ b (..., k, m) -> (..., n, m), batch dims broadcast as in np.matmul."""
    return np.matmul(a, b)


def matmul_grad_a(grad, b):
    """grad (..., n, m) @ swapaxes(b, -1, -2) -> (broadcast batch..., n, k).

    The result keeps the broadcast batch shape; the caller sums it back to a's shape.
    """
    return np.matmul(grad, np.swapaxes(b, -1, -2))


def matmul_grad_b(a, grad):
    """swapaxes(a, -1, -2) @ grad (..., n, m) -> (broadcast batch..., k, m)."""
    return np.matmul(np.swapaxes(a, -1, -2), grad)


def matmul_grads(a, b, grad):
    """Both gradients of a (n, k) @ b (k, m): (grad @ b^T (n, k), a^T @ grad (k, m))."""
    return matmul_grad_a(grad, b), matmul_grad_b(a, grad)


def linear_forward(x, weight, bias=None):
    """x (n, k) @ weight (m, k)^T + bias (m,) (or no bias) -> (n, m), a new array."""
    out = np.matmul(x, weight.T)
    return out if bias is None else out + bias


def linear_backward(x, weight, grad, needs=(True, True, True)):
    """Gradients of linear_forward for grad (n, m): (grad @ weight (n, k), grad^T @ x (m, k),
    grad summed over its rows (m,)), each None where needs (three bools) says False."""
    return (
        np.matmul(grad, weight) if needs[0] else None,
        np.matmul(grad.T, x) if needs[1] else None,
        grad.sum(axis=0) if needs[2] else None,
    )
