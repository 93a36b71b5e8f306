"""Plain-numpy twins of every kernel: the reference the Numba kernels are tested against.

`MINIGRAD_KERNELS=numpy` makes the engine call these instead of the Numba versions.
Each function has the same name, signature and contract as its Numba twin; the
contracts are written here once. All take and return numpy arrays and keep the
floating dtype of their input (float32 or float64).
"""

import math

import numpy as np

from ._checks import check_embedding_indices, check_targets


# ---------------------------------------------------------------- matmul

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


# ---------------------------------------------------------------- softmax family

def softmax_forward(x, scale=1.0, mask=None):
    """y = softmax(x * scale + mask) along the last axis.

    mask is None or an additive float array broadcastable to x (0 keeps, -1e9 or
    -inf drops); every row needs at least one finite entry.
    """
    z = x * x.dtype.type(scale)
    if mask is not None:
        z = z + mask.astype(x.dtype, copy=False)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_backward(y, grad_y, scale=1.0):
    """Gradient w.r.t. x of y = softmax(x * scale + mask): scale * y * (grad_y - sum(grad_y * y))."""
    dot = (grad_y * y).sum(axis=-1, keepdims=True)
    return y.dtype.type(scale) * y * (grad_y - dot)


def log_softmax_forward(x):
    """y = x - logsumexp(x) along the last axis (max-shifted, so stable)."""
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def log_softmax_backward(y, grad_y):
    """Gradient w.r.t. x of y = log_softmax(x): grad_y - exp(y) * sum(grad_y)."""
    return grad_y - np.exp(y) * grad_y.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------- cross-entropy

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


# ---------------------------------------------------------------- optimizer

def adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay):
    """One Adam step in place on param, exp_avg and exp_avg_sq (torch.optim.Adam semantics).

    weight_decay is L2 added to the gradient (not AdamW); step counts from 1 and
    drives the bias corrections. grad is not modified. Returns None.
    """
    if weight_decay != 0:
        grad = grad + weight_decay * param
    exp_avg *= beta1
    exp_avg += (1 - beta1) * grad
    exp_avg_sq *= beta2
    exp_avg_sq += (1 - beta2) * grad * grad
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    denom = np.sqrt(exp_avg_sq) / np.sqrt(bias_correction2) + eps
    param -= (lr / bias_correction1) * exp_avg / denom


# ---------------------------------------------------------------- embedding

def embedding_backward(indices, grad_out, num_embeddings, padding_idx=None):
    """Dense (num_embeddings, D) gradient of an embedding lookup, by scatter-add.

    indices int, any shape; grad_out indices.shape + (D,). Repeated indices add up;
    the row of padding_idx (negative counts from the end) stays zero.
    """
    flat, padding_idx = check_embedding_indices(indices, grad_out, num_embeddings, padding_idx)
    grad = np.zeros((num_embeddings, grad_out.shape[-1]), dtype=grad_out.dtype)
    np.add.at(grad, flat, grad_out.reshape(flat.size, grad_out.shape[-1]))
    if padding_idx is not None:
        grad[padding_idx] = 0
    return grad


# ---------------------------------------------------------------- LSTM step
# Gate order i, f, g, o (PyTorch's): columns [0:H) input gate, [H:2H) forget gate,
# [2H:3H) cell candidate, [3H:4H) output gate. kernels/lstm.py runs these over sequences.

def _sigmoid(x):
    return (np.tanh(x * 0.5) + 1) * 0.5  # no overflow for large |x|, unlike 1 / (1 + exp(-x))


def lstm_cell_forward(gates, bias, c_prev, c_out, h_out):
    """One LSTM step for n sequences, in place.

    gates (n, 4H): in: [x | h_prev] @ [weight_ih | weight_hh].T; out: the gate
    activations i, f, g, o of gates + bias. bias (4H,) = bias_ih + bias_hh.
    c_prev (n, H); writes c_out = f * c_prev + i * g and h_out = o * tanh(c_out).
    All arrays C-contiguous, one dtype; c_out and h_out do not overlap the inputs.
    """
    hidden = c_prev.shape[1]
    z = gates + bias
    gates[:, :2 * hidden] = _sigmoid(z[:, :2 * hidden])
    gates[:, 2 * hidden:3 * hidden] = np.tanh(z[:, 2 * hidden:3 * hidden])
    gates[:, 3 * hidden:] = _sigmoid(z[:, 3 * hidden:])
    i, f, g, o = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
    c_out[...] = f * c_prev + i * g
    h_out[...] = o * np.tanh(c_out)


def lstm_cell_backward(gates, c_prev, c, grad_h_out, grad_h, grad_c, grad_gates):
    """Backward of one LSTM step for n sequences.

    gates (n, 4H) the activations i, f, g, o saved by lstm_cell_forward; c_prev, c (n, H).
    grad_h_out (n, H): dL/dh of this step from the layer's output; grad_h (n, H): dL/dh
    from the next step (through weight_hh); grad_c (n, H): in dL/dc from the next step,
    out dL/dc_prev. Writes grad_gates (n, 4H): dL/d(pre-activations) in gate order.
    """
    hidden = c.shape[1]
    i, f, g, o = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
    tanh_c = np.tanh(c)
    dh = grad_h + grad_h_out
    dc = grad_c + dh * o * (1 - tanh_c * tanh_c)
    grad_gates[:, :hidden] = dc * g * i * (1 - i)
    grad_gates[:, hidden:2 * hidden] = dc * c_prev * f * (1 - f)
    grad_gates[:, 2 * hidden:3 * hidden] = dc * i * (1 - g * g)
    grad_gates[:, 3 * hidden:] = dh * tanh_c * o * (1 - o)
    grad_c[...] = dc * f


# ---------------------------------------------------------------- layer normalisation

def layer_norm_forward(x, weight=None, bias=None, eps=1e-5):
    """Normalise each row of x (..., D) over its last axis: y = (x - mean) * rstd * weight + bias.

    mean and the biased variance var are taken over the D features of a row and
    rstd = 1 / sqrt(var + eps). weight and bias are (D,) or None (then 1 and 0).
    Returns (y (..., D), mean (...,), rstd (...,)), all of x's dtype; backward needs
    mean and rstd.
    """
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    rstd = 1 / np.sqrt(var + x.dtype.type(eps))
    y = centred * rstd
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y.astype(x.dtype, copy=False), mean[..., 0], rstd[..., 0]


def layer_norm_backward(grad_y, x, mean, rstd, weight=None):
    """Gradients of layer_norm_forward: (grad_x (..., D), grad_weight (D,), grad_bias (D,)).

    With xhat = (x - mean) * rstd and g = grad_y * weight (weight None: ones),
    grad_x = rstd * (g - mean(g) - xhat * mean(g * xhat)) over each row;
    grad_weight = sum of grad_y * xhat and grad_bias = sum of grad_y over all rows
    (what a (D,) weight and bias get; the caller drops them when there are none).
    """
    xhat = (x - mean[..., None]) * rstd[..., None]
    g = grad_y if weight is None else grad_y * weight
    grad_x = rstd[..., None] * (g - g.mean(axis=-1, keepdims=True)
                                - xhat * (g * xhat).mean(axis=-1, keepdims=True))
    rows = grad_y.reshape(-1, grad_y.shape[-1])
    grad_weight = (rows * xhat.reshape(rows.shape)).sum(axis=0)
    return grad_x.astype(x.dtype, copy=False), grad_weight.astype(x.dtype), rows.sum(axis=0).astype(x.dtype)


# ---------------------------------------------------------------- GELU

_erfc = np.frompyfunc(math.erfc, 1, 1)  # numpy has no erf; a reference may be slow


def gelu_forward(x, approximate="none"):
    """GELU(x) = x * Phi(x), Phi the standard normal CDF = erfc(-x / sqrt(2)) / 2 (torch's
    approximate="none"); approximate="tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate == "tanh":
        return np.asarray(0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))).astype(x.dtype)
    cdf = 0.5 * np.asarray(_erfc(-x.astype(np.float64) / math.sqrt(2)), dtype=np.float64)
    return np.asarray(x * cdf).astype(x.dtype)


def gelu_backward(x, grad_y, approximate="none"):
    """grad_y * d GELU(x) / dx: Phi(x) + x phi(x) with phi(x) = exp(-x^2/2) / sqrt(2 pi) (exact
    form), or the derivative of the tanh form."""
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
        th = np.tanh(inner)
        slope = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x * x)
        return np.asarray(grad_y * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * slope)).astype(x.dtype)
    wide = x.astype(np.float64)
    cdf = 0.5 * np.asarray(_erfc(-wide / math.sqrt(2)), dtype=np.float64)
    return np.asarray(grad_y * (cdf + wide * np.exp(-0.5 * wide * wide) / math.sqrt(2 * math.pi))).astype(x.dtype)
