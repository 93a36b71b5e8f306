"""Fused Adam update (contract: reference.adam_update): one pass over param, grad and both
moment buffers, where the numpy twin makes about ten passes with temporaries. Same arithmetic
as torch.optim.Adam, in the parameter's own dtype.
"""

import numpy as np

from . import _threads
from ._numba_cache import cached_njit

# At 0.7 ns per float32 element on one thread, two threads pay only from about a million
# elements (65,536: 45 us serial, 122 us on Numba's pool; 262,144: 168 vs 186 us). Two halves on
# two threads (_threads.run_tasks), not a prange driver: the update is bound by memory, which two
# cores already fill, and the parallel=True driver's compilation and the start of Numba's pool
# had cost the first step with an empty cache ~1 s (benchmarks/README.md, "One training step of
# the IMDB model").
TWO_THREADS_MIN_SIZE = 1 << 20


# error_model="numpy": no division-by-zero check, which kept the loop scalar (7 ns per element,
# now 1-2 ns); the arithmetic is unchanged (no fastmath: IEEE division and sqrt, no FMA).
@cached_njit(nogil=True, error_model="numpy")
def _adam_range(
    param,
    grad,
    exp_avg,
    exp_avg_sq,
    step_size,
    beta1,
    beta2,
    one_minus_beta1,
    one_minus_beta2,
    eps,
    weight_decay,
    sqrt_bias_correction2,
    start,
    stop,
):
    """Adam on elements start..stop-1 of 1-D arrays of one dtype; scalars are of that dtype.

    exp_avg = beta1 * exp_avg + (1 - beta1) * g, exp_avg_sq likewise with g * g, where
    g = grad + weight_decay * param; then
    param -= step_size * exp_avg / (sqrt(exp_avg_sq) / sqrt_bias_correction2 + eps).
    Writes param, exp_avg, exp_avg_sq in place, nothing else.
    """
    # Slices and a loop from 0: an index that cannot be negative needs no wraparound check,
    # so the loop vectorises.
    param, grad = param[start:stop], grad[start:stop]
    exp_avg, exp_avg_sq = exp_avg[start:stop], exp_avg_sq[start:stop]
    for i in range(param.shape[0]):
        g = grad[i] + weight_decay * param[i]
        m = beta1 * exp_avg[i] + one_minus_beta1 * g
        v = beta2 * exp_avg_sq[i] + one_minus_beta2 * (g * g)
        exp_avg[i] = m
        exp_avg_sq[i] = v
        param[i] -= step_size * m / (np.sqrt(v) / sqrt_bias_correction2 + eps)


def _flat_view(array, name, like):
    """array as a 1-D view sharing memory (so in-place updates land), checked against like."""
    if not isinstance(array, np.ndarray) or array.shape != like.shape or array.dtype != like.dtype:
        raise ValueError(
            f"adam_update expects {name} as a numpy array of shape {like.shape} and dtype "
            f"{like.dtype}, got {type(array).__name__} {getattr(array, 'shape', '')} "
            f"{getattr(array, 'dtype', '')}"
        )
    if not array.flags.c_contiguous or not array.flags.writeable:
        raise ValueError(
            f"adam_update updates {name} in place and needs it C-contiguous and writeable"
        )
    return array.reshape(-1)


def adam_update(param, grad, exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps, weight_decay):
    """One Adam step in place (contract: reference.adam_update)."""
    if param.dtype not in (np.float32, np.float64):
        raise TypeError(f"adam_update expects float32 or float64 parameters, got {param.dtype}")
    if step < 1:
        raise ValueError(
            f"adam_update expects step >= 1 (bias corrections count from 1), got {step}"
        )
    flat_param = _flat_view(param, "param", param)
    flat_avg = _flat_view(exp_avg, "exp_avg", param)
    flat_avg_sq = _flat_view(exp_avg_sq, "exp_avg_sq", param)
    grad = np.asarray(grad)
    if grad.shape != param.shape:
        raise ValueError(f"adam_update expects grad of shape {param.shape}, got {grad.shape}")
    flat_grad = np.ascontiguousarray(grad, dtype=param.dtype).reshape(-1)
    scalar = param.dtype.type
    args = (
        flat_param,
        flat_grad,
        flat_avg,
        flat_avg_sq,
        scalar(lr / (1 - beta1**step)),
        scalar(beta1),
        scalar(beta2),
        scalar(1 - beta1),
        scalar(1 - beta2),
        scalar(eps),
        scalar(weight_decay),
        scalar(np.sqrt(1 - beta2**step)),
    )
    size = flat_param.size
    halves = [(0, size // 2), (size // 2, size)] if size >= TWO_THREADS_MIN_SIZE else [(0, size)]
    _threads.run_tasks(lambda bounds: _adam_range(*args, *bounds), halves)
