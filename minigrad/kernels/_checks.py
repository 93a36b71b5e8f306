"""Argument checks shared by both backends.

The Numba kernels index arrays without bounds checks, so every index a user
supplies is validated here, in Python, before a kernel sees it.
"""

import numpy as np


def check_targets(logits, target, ignore_index):
    """Return target as int64 (N,) after checking it against logits (N, C)."""
    if logits.ndim != 2:
        raise ValueError(f"cross_entropy expects logits of shape (N, C), got shape {logits.shape}")
    target = np.asarray(target)
    if target.dtype.kind not in "iu":
        raise ValueError(f"cross_entropy expects integer targets, got dtype {target.dtype}")
    target = target.astype(np.int64, copy=False)
    if target.shape != (logits.shape[0],):
        raise ValueError(
            f"cross_entropy expects target of shape ({logits.shape[0]},) for logits "
            f"{logits.shape}, got shape {target.shape}"
        )
    num_classes = logits.shape[1]
    bad = (target != ignore_index) & ((target < 0) | (target >= num_classes))
    if bad.any():
        value = int(target[np.argmax(bad)])
        raise ValueError(
            f"cross_entropy target {value} is out of range for {num_classes} classes "
            f"(expected 0 <= target < {num_classes} or target == ignore_index={ignore_index})"
        )
    return target


def check_embedding_indices(indices, grad_out, num_embeddings, padding_idx):
    """Return (indices flattened to int64, padding_idx normalised to >= 0 or None)."""
    indices = np.asarray(indices)
    if indices.dtype.kind not in "iu":
        raise ValueError(f"embedding expects integer indices, got dtype {indices.dtype}")
    if grad_out.shape[:-1] != indices.shape:
        raise ValueError(
            f"embedding_backward expects grad_out of shape {indices.shape} + (D,), "
            f"got {grad_out.shape}"
        )
    flat = indices.reshape(-1).astype(np.int64, copy=False)
    if flat.size and (flat.min() < 0 or flat.max() >= num_embeddings):
        value = int(flat.min() if flat.min() < 0 else flat.max())
        raise ValueError(
            f"embedding index {value} is out of range "
            f"(expected 0 <= index < num_embeddings={num_embeddings})"
        )
    if padding_idx is not None:
        if not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(
                f"padding_idx must be within [-{num_embeddings}, {num_embeddings}), got "
                f"{padding_idx}"
            )
        padding_idx = int(padding_idx) % num_embeddings
    return flat, padding_idx


def check_embedding_out(out, num_embeddings, grad_out):
    """embedding_backward's `out`: a writable (num_embeddings, D) array of grad_out's dtype."""
    expected = (num_embeddings, grad_out.shape[-1])
    if not isinstance(out, np.ndarray) or out.shape != expected or out.dtype != grad_out.dtype:
        given = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise ValueError(
            f"embedding_backward expects out to be a {grad_out.dtype} array of shape "
            f"{expected}, got {given}"
        )
    if not out.flags.writeable:
        raise ValueError("embedding_backward expects a writable out array")


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
            f"{name} expects x (B, T, D), weight (D, K), bias (K,) and vector (K,) of one dtype; "
            f"got {x.shape} {x.dtype}, {weight.shape} {weight.dtype}, "
            f"{bias.shape} {bias.dtype} and {vector.shape} {vector.dtype}"
        )
    if x.dtype not in (np.float32, np.float64):
        raise ValueError(f"{name} expects float32 or float64 arrays; got {x.dtype}")
    return _checked_lengths(lengths, x.shape[0], x.shape[1], name)
