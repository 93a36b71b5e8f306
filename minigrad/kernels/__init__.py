"""minigrad's kernels: numpy arrays in, numpy arrays out, no Tensors, no autograd.

The functions below are those of the active backend, chosen once at import by
the environment variable MINIGRAD_KERNELS:

    numba (default)  Numba kernels (softmax.py, batched_matmul.py, adam.py, embedding.py,
                     lstm_cell.py, layer_norm.py, gelu.py, pooling.py, attention.py,
                     attention_mean.py, additive_score.py)
    numpy            their plain-numpy twins (reference.py); Numba is not imported

This is the one place the backend is chosen: code above this package calls
`kernels.<name>`, never a backend's module. (kernels/lstm.py, the LSTM recurrence over
whole sequences, is numpy and BLAS glue around the step kernels lstm_cell_forward and
lstm_cell_backward, so it serves both backends.)

Both backends have the same names, signatures and contracts; the contracts are
written in reference.py. `minigrad.kernels.reference` is always importable, and
the Numba versions are always reachable as minigrad.kernels.<file>.<name>, so
tests can compare the two whatever BACKEND is. Every kernel keeps the floating
dtype of its input (float32 or float64).
"""

import os

KERNELS = (
    "matmul",
    "matmul_grad_a",
    "matmul_grad_b",
    "matmul_grads",
    "linear_forward",
    "linear_backward",
    "softmax_forward",
    "softmax_backward",
    "log_softmax_forward",
    "log_softmax_backward",
    "cross_entropy_forward",
    "cross_entropy_backward",
    "adam_update",
    "embedding_backward",
    "lstm_cell_forward",
    "lstm_cell_backward",
    "lstm_cell_inference",
    "layer_norm_forward",
    "layer_norm_backward",
    "layer_norm_inference",
    "gelu_forward",
    "gelu_backward",
    "attention_forward",
    "attention_backward",
    "attention_inference",
    "attention_key_stops",
    "attention_mean_forward",
    "attention_mean_backward",
    "additive_score_forward",
    "additive_score_backward",
    "max_pool_forward",
    "max_pool_backward",
    "avg_pool_forward",
    "avg_pool_backward",
)

BACKEND = os.environ.get("MINIGRAD_KERNELS", "numba").strip().lower() or "numba"
if BACKEND not in ("numba", "numpy"):
    raise ValueError(f"MINIGRAD_KERNELS must be 'numba' or 'numpy', got {BACKEND!r}")

from . import _runtime, reference  # noqa: E402

_runtime.tune_malloc()  # freed arrays kept for the next ones: no fresh pages to fault in

if BACKEND == "numba":
    _runtime.prepare_numba()  # before the first @njit(cache=True)
    from .adam import adam_update
    from .embedding import embedding_backward
    from .gelu import gelu_backward, gelu_forward
    from .layer_norm import layer_norm_backward, layer_norm_forward, layer_norm_inference
    from .lstm_cell import lstm_cell_backward, lstm_cell_forward, lstm_cell_inference
    from .attention import attention_backward, attention_forward, attention_inference
    from .attention import attention_key_stops
    from .attention_mean import attention_mean_backward, attention_mean_forward
    from .additive_score import additive_score_backward, additive_score_forward
    from .pooling import avg_pool_backward, avg_pool_forward, max_pool_backward, max_pool_forward
    from .batched_matmul import (
        linear_backward,
        linear_forward,
        matmul,
        matmul_grad_a,
        matmul_grad_b,
        matmul_grads,
    )
    from .softmax import (
        cross_entropy_backward,
        cross_entropy_forward,
        log_softmax_backward,
        log_softmax_forward,
        softmax_backward,
        softmax_forward,
    )
else:
    from .reference import (
        adam_update,
        cross_entropy_backward,
        cross_entropy_forward,
        embedding_backward,
        log_softmax_backward,
        log_softmax_forward,
        linear_backward,
        linear_forward,
        lstm_cell_backward,
        lstm_cell_forward,
        lstm_cell_inference,
        matmul,
        matmul_grad_a,
        matmul_grad_b,
        matmul_grads,
        softmax_backward,
        softmax_forward,
    )
    from .reference import gelu_backward, gelu_forward, layer_norm_backward, layer_norm_forward
    from .reference import layer_norm_inference
    from .reference import attention_backward, attention_forward, attention_inference
    from .reference import attention_key_stops, attention_mean_backward, attention_mean_forward
    from .reference import additive_score_backward, additive_score_forward
    from .reference import avg_pool_backward, avg_pool_forward, max_pool_backward, max_pool_forward

__all__ = ["BACKEND", "KERNELS", "reference", *KERNELS]
