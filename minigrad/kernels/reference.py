"""Plain-numpy twins of every kernel: the reference the Numba kernels are tested against.

`MINIGRAD_KERNELS=numpy` makes the engine call these instead of the Numba versions.
Each function has the same name, signature and contract as its Numba twin; the
contracts are written here once. All take and return numpy arrays and keep the
floating dtype of their input (float32 or float64).
"""

import math

import numpy as np

from ._checks import check_embedding_indices, check_embedding_out, check_targets


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


# ---------------------------------------------------------------- softmax family


def _allowed_keys(shape, mask, key_stop):
    """bool array of `shape`: True where a row may attend to a key (see softmax_forward)."""
    allowed = (
        np.ones(shape, np.bool_)
        if mask is None
        else np.broadcast_to(np.asarray(mask, np.bool_), shape)
    )
    if key_stop is not None:
        allowed = allowed & (np.arange(shape[-1]) < np.asarray(key_stop)[..., None])
    return allowed


def softmax_forward(x, scale=1.0, mask=None, key_stop=None, empty_value=np.nan, empty=None):
    """y = softmax of x * scale along the last axis over the allowed keys of each row, exactly
    0 at the other keys whatever x holds there.

    Key j of a row is allowed where `mask` (bool, broadcastable to x, True = may attend; None:
    every key) is True and j < key_stop (integers broadcastable to x.shape[:-1]; None: no
    limit), so a causal mask or sequence lengths need no (..., L, L) array. A row with no
    allowed score above -inf (and no NaN) is filled with empty_value; if `empty` (a bool
    array of shape x.shape[:-1]) is given, it receives True for those rows and False for the
    others. A NaN or +inf score at an allowed key makes the row's allowed weights NaN, as in
    torch.
    """
    allowed = _allowed_keys(x.shape, mask, key_stop)
    z = np.where(allowed, x * x.dtype.type(scale), -np.inf)
    top = (
        z.max(axis=-1, keepdims=True)
        if x.shape[-1]
        else np.full(x.shape[:-1] + (1,), -np.inf, x.dtype)
    )
    empty_rows = ~(top[..., 0] > -np.inf) & ~np.isnan(z).any(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        e = np.exp(z - np.where(empty_rows[..., None], 0, top))
        y = e / e.sum(axis=-1, keepdims=True)
    if empty is not None:
        empty[...] = empty_rows
    y = np.where(empty_rows[..., None], empty_value, np.where(allowed, y, 0))
    return y.astype(x.dtype, copy=False)


def softmax_backward(y, grad_y, scale=1.0, mask=None, key_stop=None, empty=None):
    """Gradient w.r.t. x of softmax_forward(x, scale, mask, key_stop): at the allowed keys
    scale * y * (grad_y - sum(grad_y * y)) with the sum over the allowed keys; exactly 0 at
    the others and in the rows marked `empty` (their output does not depend on x). A row that
    forward filled with NaN and that is not marked gets NaN, as torch's softmax gradient."""
    allowed = _allowed_keys(y.shape, mask, key_stop)
    if empty is not None:
        allowed = allowed & ~np.asarray(empty, np.bool_)[..., None]
    grad_y = np.where(allowed, grad_y, 0)
    dot = (grad_y * y).sum(axis=-1, keepdims=True)
    return np.where(allowed, y.dtype.type(scale) * y * (grad_y - dot), 0).astype(
        y.dtype, copy=False
    )


# ---------------------------------------------------------------- attention


def attention_key_stops(batch, queries, keys, key_lengths=None, causal_offset=None):
    """int64 of shape batch + (queries,): query i of matrix n may attend only to keys
    j < stops[n, i].

    key_lengths: integers in [0, keys] broadcastable to `batch` (a shape), or None: matrix n
    has key_lengths[n] keys. causal_offset: an int or None: query i sees keys j <= i +
    causal_offset (0: the usual causal mask; the number of cached keys when the queries are
    the last positions of the sequence).
    """
    stops = np.full(tuple(batch) + (queries,), keys, np.int64)
    if key_lengths is not None:
        stops = np.minimum(stops, np.asarray(key_lengths, np.int64)[..., None])
    if causal_offset is not None:
        stops = np.minimum(stops, np.arange(1, queries + 1) + int(causal_offset))
    return np.maximum(stops, 0)


def _drop_past_lengths(k, v, key_lengths):
    """k and v with the keys at or past each matrix's length set to 0."""
    if key_lengths is None:
        return k, v
    real = (np.arange(k.shape[-2]) < np.asarray(key_lengths)[..., None])[..., None]
    return np.where(real, k, 0).astype(k.dtype, copy=False), np.where(real, v, 0).astype(
        v.dtype, copy=False
    )


def attention_forward(
    q, k, v, scale, key_lengths=None, causal_offset=None, mask=None, keep=None, keep_scale=1.0
):
    """(out, weights): weights = softmax(q @ k^T * scale) over the keys each query may attend
    to, out = (weights * keep * keep_scale) @ v (no dropout when keep is None).

    q (..., L, E), k (..., S, E), v (..., S, Ev) with the same batch dims (...), one float
    dtype; out (..., L, Ev), weights (..., L, S). A query may attend to key j where j <
    attention_key_stops(...) and mask (bool, broadcastable to (..., L, S), True = may attend;
    None: everywhere) is True. A query that may attend to no key gets all-zero weights (and
    output 0), as in torch's scaled_dot_product_attention. Keys and values at or past a
    matrix's key_lengths are never read: whatever they hold (NaN, inf) changes nothing.
    keep: bool (..., L, S), the weights the dropout keeps, or None.
    """
    k, v = _drop_past_lengths(k, v, key_lengths)
    stops = attention_key_stops(q.shape[:-2], q.shape[-2], k.shape[-2], key_lengths, causal_offset)
    scores = np.matmul(q, np.swapaxes(k, -1, -2))
    weights = softmax_forward(scores, scale, mask, stops, empty_value=0.0)
    dropped = weights if keep is None else weights * keep * weights.dtype.type(keep_scale)
    return np.matmul(dropped, v), weights


def attention_inference(q, k, v, scale, key_lengths=None, causal_offset=None, mask=None):
    """attention_forward's out (no dropout) without keeping its (..., L, S) weights whole: the
    matrices are taken one entry of the first batch dim at a time."""
    if q.ndim == 2:
        return attention_forward(q, k, v, scale, key_lengths, causal_offset, mask)[0]
    batch, queries, keys = q.shape[:-2], q.shape[-2], k.shape[-2]
    lengths = None if key_lengths is None else np.broadcast_to(key_lengths, batch)
    masks = None if mask is None else np.broadcast_to(mask, batch + (queries, keys))
    out = np.empty(batch + (queries, v.shape[-1]), q.dtype)
    for n in range(batch[0]):
        out[n] = attention_forward(
            q[n],
            k[n],
            v[n],
            scale,
            None if lengths is None else lengths[n],
            causal_offset,
            None if masks is None else masks[n],
        )[0]
    return out


def attention_backward(
    q,
    k,
    v,
    weights,
    grad_out,
    scale,
    key_lengths=None,
    causal_offset=None,
    mask=None,
    keep=None,
    keep_scale=1.0,
):
    """(grad_q, grad_k, grad_v) of attention_forward with the same arguments, given its
    weights (None: made again by attention_forward; then keep must be None) and grad_out
    (..., L, Ev)."""
    if weights is None:
        if keep is not None:
            raise ValueError("attention_backward: weights=None (made again) needs keep=None")
        weights = attention_forward(q, k, v, scale, key_lengths, causal_offset, mask)[1]
    k, v = _drop_past_lengths(k, v, key_lengths)
    stops = attention_key_stops(q.shape[:-2], q.shape[-2], k.shape[-2], key_lengths, causal_offset)
    dropout = 1 if keep is None else keep * weights.dtype.type(keep_scale)
    grad_v = np.matmul(np.swapaxes(weights * dropout, -1, -2), grad_out)
    grad_weights = np.matmul(grad_out, np.swapaxes(v, -1, -2)) * dropout
    grad_scores = softmax_backward(weights, grad_weights, scale, mask, stops)
    return (
        np.matmul(grad_scores, k),
        np.matmul(np.swapaxes(grad_scores, -1, -2), q),
        grad_v.astype(v.dtype),
    )


def _checked_lengths(lengths, batch, steps, name):
    """lengths as int64, after checking them: (batch,) in [0, steps]."""
    lengths = np.asarray(lengths)
    if lengths.shape != (batch,) or ((lengths < 0) | (lengths > steps)).any():
        raise ValueError(
            f"{name} expects lengths of shape ({batch},) in [0, {steps}]; got {lengths.tolist()}"
        )
    return lengths.astype(np.int64)


def check_attention_mean(q, k, lengths, name):
    """lengths as int64, after checking q, k (B, H, T, E) of one float dtype and lengths (B,)
    in [0, T]."""
    if not (q.ndim == 4 and k.shape == q.shape and q.dtype == k.dtype) or q.dtype not in (
        np.float32,
        np.float64,
    ):
        raise ValueError(
            f"{name} expects q and k of one shape (B, H, T, E) and dtype float32 or float64; "
            f"got {q.shape} {q.dtype} and {k.shape} {k.dtype}"
        )
    return _checked_lengths(lengths, q.shape[0], q.shape[2], name)


def _weights_of_sequence(q, k, n, scale):
    """softmax(q k^T * scale) of one sequence's first n positions: q, k (H, T, E) -> (H, n, n)."""
    scores = np.matmul(q[:, :n], np.swapaxes(k[:, :n], -1, -2)) * q.dtype.type(scale)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def attention_mean_forward(q, k, scale, lengths):
    """mean (B, H, T): mean[b, h, j] = (1 / L) sum_{i < L} softmax(q[b, h] k[b, h]^T * scale)[i, j]
    over keys j < L, L = lengths[b]; 0 for j >= L and for L = 0. q, k (B, H, T, E) of one
    float dtype; positions at or past a length are never read."""
    lengths = check_attention_mean(q, k, lengths, "attention_mean_forward")
    mean = np.zeros(q.shape[:3], q.dtype)
    for b, n in enumerate(lengths.tolist()):
        if n:
            mean[b, :, :n] = _weights_of_sequence(q[b], k[b], n, scale).mean(axis=1)
    return mean


def attention_mean_backward(q, k, grad, scale, lengths):
    """(grad_q, grad_k) of attention_mean_forward(q, k, scale, lengths), given grad (B, H, T):
    with w the weights and g = grad[b] / L, d scores = scale * w * (g - w @ g); 0 past each
    length."""
    lengths = check_attention_mean(q, k, lengths, "attention_mean_backward")
    grad = np.asarray(grad, dtype=q.dtype)
    grad_q, grad_k = np.zeros_like(q), np.zeros_like(k)
    for b, n in enumerate(lengths.tolist()):
        if n:
            weights = _weights_of_sequence(q[b], k[b], n, scale)
            g = grad[b, :, None, :n] / n  # (H, 1, n): the same for every query row
            grad_scores = weights * (g - (weights * g).sum(axis=-1, keepdims=True))
            grad_scores *= q.dtype.type(scale)
            grad_q[b, :, :n] = np.matmul(grad_scores, k[b, :, :n])
            grad_k[b, :, :n] = np.matmul(np.swapaxes(grad_scores, -1, -2), q[b, :, :n])
    return grad_q, grad_k


def check_additive_score(x, weight, bias, vector, lengths, name):
    """lengths as int64, after checking x (B, T, D), weight (D, K), bias (K,) and vector (K,) of
    one float dtype and lengths (B,) in [0, T]."""
    shapes_fit = (
        x.ndim == 3
        and weight.ndim == 2
        and weight.shape[0] == x.shape[2]
        and bias.shape == vector.shape == weight.shape[1:]
    )
    if not shapes_fit or len({x.dtype, weight.dtype, bias.dtype, vector.dtype}) != 1:
        raise ValueError(
            f"{name} expects x (B, T, D), weight (D, K), bias (K,) and vector (K,) of one "
            f"dtype; got {x.shape} {x.dtype}, {weight.shape} {weight.dtype}, {bias.shape} "
            f"{bias.dtype} and {vector.shape} {vector.dtype}"
        )
    if x.dtype not in (np.float32, np.float64):
        raise ValueError(f"{name} expects float32 or float64 arrays; got {x.dtype}")
    return _checked_lengths(lengths, x.shape[0], x.shape[1], name)


def _real_positions(x, lengths):
    """(B, T, 1) bool: True where t < lengths[b]."""
    return (np.arange(x.shape[1]) < lengths[:, None])[:, :, None]


def additive_score_forward(x, weight, bias, vector, lengths):
    """(scores (B, T), hidden (B, T, K)): hidden = tanh(x @ weight + bias) and scores =
    hidden @ vector at the positions t < lengths[b]; scores are 0 past each length and hidden
    is undefined there (what additive_score_backward reads). Positions at or past a length
    are never read."""
    lengths = check_additive_score(x, weight, bias, vector, lengths, "additive_score_forward")
    real = _real_positions(x, lengths)
    hidden = np.tanh(np.where(real, x, 0) @ weight + bias)
    return np.where(real[..., 0], hidden @ vector, 0).astype(x.dtype), hidden


def additive_score_backward(x, weight, vector, hidden, grad, lengths):
    """(grad_x, grad_weight, grad_bias, grad_vector) of additive_score_forward, given hidden
    (its second result) and grad (B, T); grad_x is 0 past each length, and nothing there is
    read (d pre-activation = grad * vector * (1 - hidden^2))."""
    lengths = check_additive_score(x, weight, vector, vector, lengths, "additive_score_backward")
    real = _real_positions(x, lengths)
    grad = np.where(real[..., 0], np.asarray(grad, dtype=x.dtype), 0)[..., None]  # (B, T, 1)
    hidden = np.where(real, hidden, 0)
    grad_pre = grad * vector * (1 - hidden * hidden)  # (B, T, K), 0 past each length
    x = np.where(real, x, 0).reshape(-1, x.shape[2])
    return (
        grad_pre @ weight.T,
        x.T @ grad_pre.reshape(-1, weight.shape[1]),
        grad_pre.sum(axis=(0, 1)),
        (grad * hidden).sum(axis=(0, 1)),
    )


def log_softmax_forward(x):
    """y = x - logsumexp(x) along the last axis (max-shifted, so stable)."""
    if x.size == 0:
        return x.copy()
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
    bias_correction1 = 1 - beta1**step
    bias_correction2 = 1 - beta2**step
    denom = np.sqrt(exp_avg_sq) / np.sqrt(bias_correction2) + eps
    param -= (lr / bias_correction1) * exp_avg / denom


# ---------------------------------------------------------------- embedding


def embedding_backward(indices, grad_out, num_embeddings, padding_idx=None, out=None):
    """Dense (num_embeddings, D) gradient of an embedding lookup, by scatter-add.

    indices int, any shape; grad_out indices.shape + (D,). Repeated indices add up;
    the row of padding_idx (negative counts from the end) gets nothing. out: a
    (num_embeddings, D) array of grad_out's dtype to add into and return, instead of a new
    zeroed one.
    """
    flat, padding_idx = check_embedding_indices(indices, grad_out, num_embeddings, padding_idx)
    if out is None:
        out = np.zeros((num_embeddings, grad_out.shape[-1]), dtype=grad_out.dtype)
    else:
        check_embedding_out(out, num_embeddings, grad_out)
    rows = grad_out.reshape(flat.size, grad_out.shape[-1])
    if padding_idx is not None:
        keep = flat != padding_idx
        flat, rows = flat[keep], rows[keep]
    np.add.at(out, flat, rows)
    return out


# ---------------------------------------------------------------- LSTM step
# Gate order i, f, g, o (PyTorch's): columns [0:H) input gate, [H:2H) forget gate,
# [2H:3H) cell candidate, [3H:4H) output gate. kernels/lstm.py runs these over sequences.


def _sigmoid(x):
    return (np.tanh(x * 0.5) + 1) * 0.5  # no overflow for large |x|, unlike 1 / (1 + exp(-x))


def lstm_cell_forward(gates, input_gates, rows, c_prev, c_out, h_out):
    """One LSTM step for n sequences, in place.

    gates (n, 4H): in h_prev @ weight_hh.T; out: the gate activations i, f, g, o of
    gates + input_gates[rows]. input_gates (R, 4H): rows of x @ weight_ih.T + bias_ih + bias_hh
    (read only); rows (n,) int64: the row of input_gates of each sequence at this step.
    c_prev (n, H); writes c_out = f * c_prev + i * g and h_out = o * tanh(c_out).
    All arrays C-contiguous, one dtype; c_out and h_out do not overlap the inputs.
    """
    hidden = c_prev.shape[1]
    z = gates + input_gates[rows]
    gates[:, : 2 * hidden] = _sigmoid(z[:, : 2 * hidden])
    gates[:, 2 * hidden : 3 * hidden] = np.tanh(z[:, 2 * hidden : 3 * hidden])
    gates[:, 3 * hidden :] = _sigmoid(z[:, 3 * hidden :])
    i, f, g, o = (gates[:, k * hidden : (k + 1) * hidden] for k in range(4))
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
    i, f, g, o = (gates[:, k * hidden : (k + 1) * hidden] for k in range(4))
    tanh_c = np.tanh(c)
    dh = grad_h + grad_h_out
    dc = grad_c + dh * o * (1 - tanh_c * tanh_c)
    grad_gates[:, :hidden] = dc * g * i * (1 - i)
    grad_gates[:, hidden : 2 * hidden] = dc * c_prev * f * (1 - f)
    grad_gates[:, 2 * hidden : 3 * hidden] = dc * i * (1 - g * g)
    grad_gates[:, 3 * hidden :] = dh * tanh_c * o * (1 - o)
    grad_c[...] = dc * f


def lstm_cell_inference(input_gates, rows, hidden_gates, c, h):
    """One LSTM step for n sequences that keeps nothing for a backward: no gate is written.

    input_gates (R, 4H) and rows (n,) as in lstm_cell_forward; hidden_gates (n, 4H) =
    h_prev @ weight_hh.T (read only). c (n, H): in c_prev, out c = f * c_prev + i * g;
    h (n, H): out h = o * tanh(c) (its input values are not read, so it may be the array
    hidden_gates was computed from). All arrays C-contiguous rows, one dtype.
    """
    hidden = c.shape[1]
    z = input_gates[rows] + hidden_gates
    i, f, o = (_sigmoid(z[:, k * hidden : (k + 1) * hidden]) for k in (0, 1, 3))
    c[...] = f * c + i * np.tanh(z[:, 2 * hidden : 3 * hidden])
    h[...] = o * np.tanh(c)


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


def layer_norm_inference(x, weight=None, bias=None, eps=1e-5):
    """layer_norm_forward's y alone, for when no backward follows (no mean or rstd kept)."""
    return layer_norm_forward(x, weight, bias, eps)[0]


def layer_norm_backward(grad_y, x, mean, rstd, weight=None):
    """Gradients of layer_norm_forward: (grad_x (..., D), grad_weight (D,), grad_bias (D,)).

    With xhat = (x - mean) * rstd and g = grad_y * weight (weight None: ones),
    grad_x = rstd * (g - mean(g) - xhat * mean(g * xhat)) over each row;
    grad_weight = sum of grad_y * xhat and grad_bias = sum of grad_y over all rows
    (what a (D,) weight and bias get; the caller drops them when there are none).
    """
    xhat = (x - mean[..., None]) * rstd[..., None]
    g = grad_y if weight is None else grad_y * weight
    grad_x = rstd[..., None] * (
        g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True)
    )
    rows = grad_y.reshape(-1, grad_y.shape[-1])
    grad_weight = (rows * xhat.reshape(rows.shape)).sum(axis=0)
    return (
        grad_x.astype(x.dtype, copy=False),
        grad_weight.astype(x.dtype),
        rows.sum(axis=0).astype(x.dtype),
    )


# ---------------------------------------------------------------- GELU

_erfc = np.frompyfunc(math.erfc, 1, 1)  # numpy has no erf; a reference may be slow


def gelu_forward(x, approximate="none"):
    """GELU(x) = x * Phi(x), Phi the standard normal CDF = erfc(-x / sqrt(2)) / 2 (torch's
    approximate="none"); approximate="tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    if approximate == "tanh":
        return np.asarray(
            0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
        ).astype(x.dtype)
    cdf = 0.5 * np.asarray(_erfc(-x.astype(np.float64) / math.sqrt(2)), dtype=np.float64)
    return np.asarray(x * cdf).astype(x.dtype)


def gelu_backward(x, grad_y, approximate="none"):
    """grad_y * d GELU(x) / dx: Phi(x) + x phi(x) with phi(x) = exp(-x^2/2) / sqrt(2 pi) (exact
    form), or the derivative of the tanh form."""
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
        th = np.tanh(inner)
        slope = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * x * x)
        return np.asarray(grad_y * (0.5 * (1 + th) + 0.5 * x * (1 - th * th) * slope)).astype(
            x.dtype
        )
    wide = x.astype(np.float64)
    cdf = 0.5 * np.asarray(_erfc(-wide / math.sqrt(2)), dtype=np.float64)
    return np.asarray(
        grad_y * (cdf + wide * np.exp(-0.5 * wide * wide) / math.sqrt(2 * math.pi))
    ).astype(x.dtype)


# ---------------------------------------------------------------- pooling
# Pooling reads planes (B, P), one flat (n, c) plane of P places each, through places (O, K) int:
# slot k of window o reads place places[o, k], and the place P (one past the plane) reads nothing.


def max_pool_forward(planes, places):
    """(values (B, O), chosen (B, O) int64): the largest value of each window and its place, every
    window reading at least one place. Ties keep the first place, NaN is the largest and a
    window's last NaN wins, and a window of -inf keeps its first place read (torch's rules)."""
    size = planes.shape[1]
    windows = np.concatenate(
        [planes, np.full((planes.shape[0], 1), -np.inf, planes.dtype)], axis=1
    )[:, places]
    which = windows.argmax(-1)  # the first largest
    nan = np.isnan(windows)
    if nan.any():
        which = np.where(nan.any(-1), windows.shape[-1] - 1 - nan[..., ::-1].argmax(-1), which)
    outputs = np.arange(places.shape[0])
    chosen = places[outputs, which].astype(np.int64)
    # only -inf read (argmax took the first slot, maybe one reading nothing): the first place read
    chosen = np.where(chosen == size, places[outputs, (places < size).argmax(-1)], chosen)
    return np.take_along_axis(planes, chosen, axis=1), chosen


def max_pool_backward(grad, chosen, plane_size):
    """(B, plane_size) gradient of max_pool_forward's planes: grad (B, O) added at chosen (B, O)."""
    starts = np.arange(grad.shape[0])[:, None] * plane_size
    summed = np.bincount(
        (chosen + starts).ravel(), weights=grad.ravel(), minlength=grad.shape[0] * plane_size
    )
    return summed.astype(grad.dtype, copy=False).reshape(grad.shape[0], plane_size)


def avg_pool_forward(planes, places, weights):
    """(B, O): each window's weighted sum, sum over k of planes[b, places[o, k]] * weights[o, k]."""
    padded = np.concatenate([planes, np.zeros((planes.shape[0], 1), planes.dtype)], axis=1)
    return (
        padded[:, places] * np.where(places < planes.shape[1], weights, 0).astype(planes.dtype)
    ).sum(-1)


def avg_pool_backward(grad, places, weights, plane_size):
    """(B, plane_size) gradient of avg_pool_forward's planes: grad[b, o] * weights[o, k] added at
    places[o, k]."""
    starts = np.arange(grad.shape[0])[:, None, None] * (plane_size + 1)
    summed = np.bincount(
        (places + starts).ravel(),
        weights=(grad[..., None] * weights).ravel(),
        minlength=grad.shape[0] * (plane_size + 1),
    )
    return summed.astype(grad.dtype, copy=False).reshape(grad.shape[0], plane_size + 1)[:, :-1]
