"""minigrad's kernels: numpy arrays in, numpy arrays out, no Tensors, no autograd.

KERNELS_BY_FILE below is the one list of them. A kernel's Numba version is in
kernels/<file>.py and its plain-numpy twin in kernels/reference/<file>.py, with the same name,
signature and contract (written in the twin). The environment variable MINIGRAD_KERNELS chooses,
once at import, which of the two every `kernels.<name>` is:

    numba (default)  the Numba kernels
    numpy            their twins; Numba is not imported

This is the one place the backend is chosen: code above this package calls `kernels.<name>`,
never a backend's module. (kernels/lstm.py, the LSTM recurrence over whole sequences, is numpy
and BLAS glue around the step kernels lstm_cell_forward and lstm_cell_backward, so it serves
both backends.) `minigrad.kernels.reference` is always importable, and the Numba versions are
always reachable as minigrad.kernels.<file>.<name>, so tests can compare the two whatever
BACKEND is. Every kernel keeps the floating dtype of its input (float32 or float64).

Importing this package changes nothing outside minigrad: no other library's settings, no
process-wide allocator. A program that wants glibc's malloc to keep freed memory for the next
arrays asks for it with `tune_malloc()` (kernels/_malloc.py), as the training scripts of the
examples and the benchmarks do.
"""

import importlib
import os

KERNELS_BY_FILE = {
    "batched_matmul": (
        "matmul",
        "matmul_grad_a",
        "matmul_grad_b",
        "matmul_grads",
        "linear_forward",
        "linear_backward",
    ),
    "softmax": (
        "softmax_forward",
        "softmax_backward",
        "log_softmax_forward",
        "log_softmax_backward",
    ),
    "cross_entropy": ("cross_entropy_forward", "cross_entropy_backward"),
    "adam": ("adam_update",),
    "embedding": ("embedding_backward",),
    "lstm_cell": ("lstm_cell_forward", "lstm_cell_backward", "lstm_cell_inference"),
    "layer_norm": ("layer_norm_forward", "layer_norm_backward", "layer_norm_inference"),
    "gelu": ("gelu_forward", "gelu_backward"),
    "attention": (
        "attention_forward",
        "attention_backward",
        "attention_inference",
        "attention_key_stops",
    ),
    "attention_mean": ("attention_mean_forward", "attention_mean_backward"),
    "additive_score": ("additive_score_forward", "additive_score_backward"),
    "pooling": ("max_pool_forward", "max_pool_backward", "avg_pool_forward", "avg_pool_backward"),
}
KERNELS = tuple(name for names in KERNELS_BY_FILE.values() for name in names)

BACKEND = os.environ.get("MINIGRAD_KERNELS", "numba").strip().lower() or "numba"
if BACKEND not in ("numba", "numpy"):
    raise ValueError(f"MINIGRAD_KERNELS must be 'numba' or 'numpy', got {BACKEND!r}")


def _kernels_of(package):
    """{name: function} of every kernel in KERNELS_BY_FILE, from `package`'s files (this
    package's Numba kernels, or its reference twins)."""
    found = {}
    for file, names in KERNELS_BY_FILE.items():
        module = importlib.import_module(f"{package}.{file}")
        found.update((name, getattr(module, name)) for name in names)
    return found


from . import reference  # noqa: E402  (its names come from KERNELS_BY_FILE, defined above)
from ._malloc import tune_malloc  # noqa: E402

if BACKEND == "numpy":
    globals().update((name, getattr(reference, name)) for name in KERNELS)
else:
    globals().update(_kernels_of(__name__))

__all__ = ["BACKEND", "KERNELS", "KERNELS_BY_FILE", "reference", "tune_malloc", *KERNELS]
