"""Data parallelism on the CPU's cores: the forward and backward pass of each part of a batch on
its own thread.

    loss = mg.parallel.forward_backward(model.loss, inputs, targets)   # instead of:
    # loss = model.loss(inputs, targets); loss.backward()

The gradient of a mean over a batch is the weighted sum of the gradients of the means over its
parts, so the batch can be cut along its first axis, each part's loss computed and
differentiated on a core of its own, and the gradients added up. While another part runs,
each part's kernels run on its thread alone: no hand-over between threads inside an op, and one
thread's Python runs while the other's kernels run (they release the GIL); the last part
running gets the other cores back (_threads.run_threads). The language model's training step is
8-10% faster this way on 2 cores than with each op split over both (0.217 -> 0.200 and 0.221
-> 0.198 s in two alternating runs; README, "Speed").

What stays the same: each leaf's `.grad` gets the gradient of the whole batch's loss (to
float rounding: the sums over the batch are made in parts), added in the order of the parts
whichever thread finishes first, and nothing at all if any part raises. Dropout in part k
draws from a generator of its own, spawned from minigrad's seeded one (so runs repeat).
"""

import numpy as np

from . import autograd
from . import random as _random
from .errors import ShapeError
from .kernels import _openblas, _threads
from .engine import Tensor, grad_sinks

REDUCTIONS = ("mean", "sum")


def default_parts():
    """How many parts forward_backward cuts a batch into by default: one per thread minigrad may
    run (NUMBA_NUM_THREADS, by default one per core), or 1 when numpy's OpenBLAS thread count
    cannot be set (the parts would then have to share OpenBLAS's threads)."""
    if _openblas.openblas_threads is None or not _threads.use_two_threads:
        return 1
    return max(1, _threads.cores())


def _rows(batch):
    """The batch's arrays and tensors (lists become arrays) and their common first-axis length."""
    items, lengths = [], []
    for position, item in enumerate(batch):
        if not isinstance(item, (Tensor, np.ndarray)):
            try:
                item = np.asarray(item)
            except Exception as error:
                raise TypeError(
                    f"forward_backward: batch argument {position} must be a Tensor or an array; "
                    f"got {type(item).__name__}"
                ) from error
        if item.dtype == object:
            raise TypeError(
                f"forward_backward: batch argument {position} must be a Tensor or an array of "
                f"numbers; got an object array (from {type(batch[position]).__name__})"
            )
        if item.ndim == 0:
            raise ShapeError(
                f"forward_backward: batch argument {position} must have a batch axis (first axis); "
                f"got a 0-d {type(item).__name__}"
            )
        items.append(item)
        lengths.append(item.shape[0])
    if len(set(lengths)) > 1:
        raise ShapeError(
            f"forward_backward: every batch argument must have the same length along the first "
            f"axis; got lengths {lengths}"
        )
    return items, lengths[0]


def _part_loss(loss_fn, part, weight):
    """loss_fn(*part), differentiated with weight as d(total)/d(loss); returns the loss as a
    float."""
    loss = loss_fn(*part)
    if not isinstance(loss, Tensor):
        raise TypeError(
            f"forward_backward: loss_fn must return a Tensor; got {type(loss).__name__}"
        )
    if loss.numel() != 1:
        raise ShapeError(
            "forward_backward: loss_fn must return a single number (a scalar Tensor); "
            f"got shape {loss.shape}. Reduce it first (.mean() or .sum())."
        )
    loss.backward(np.full(loss.shape, weight, dtype=loss.dtype))
    return loss.item(), loss.dtype


def forward_backward(loss_fn, *batch, parts=None, reduction="mean"):
    """`loss = loss_fn(*batch); loss.backward()` with the batch cut into `parts` along its first
    axis, each part's forward and backward pass on its own thread. Returns the loss of the
    whole batch as a 0-d tensor without a graph (`.item()` gives the number).

    loss_fn: called as loss_fn(*part) with each batch argument cut to the part's rows; it must
        return a scalar Tensor that is the mean (reduction="mean") or the sum ("sum") of
        per-example terms. Each part's gradient is weighted by its share of the rows (mean) or
        by 1 (sum), so the result is the whole batch's gradient. A loss that is not such a
        mean (a mean over a varying number of unmasked tokens, batch statistics) is not cut
        exactly: use plain backward() for it.
    batch: Tensors or arrays (lists are made arrays), all of one length along the first axis.
    parts: how many parts (default: default_parts(), one per core); at most one per row.
        Without a second core to use, or nested inside another part, the parts run one after
        the other on this thread (as gradient accumulation over micro-batches: less memory).
    """
    if not callable(loss_fn):
        raise TypeError(f"forward_backward: loss_fn must be callable; got {type(loss_fn).__name__}")
    if not batch:
        raise TypeError(
            "forward_backward: give the batch after loss_fn (forward_backward(loss_fn, inputs, "
            "targets))"
        )
    if reduction not in REDUCTIONS:
        raise ValueError(f"forward_backward: reduction must be 'mean' or 'sum'; got {reduction!r}")
    if parts is None:
        parts = default_parts()
    elif isinstance(parts, bool) or not isinstance(parts, (int, np.integer)) or parts < 1:
        raise ValueError(f"forward_backward: parts must be a positive integer; got {parts!r}")
    if not autograd.is_grad_enabled():
        raise RuntimeError(
            "forward_backward: called under no_grad(); gradients need graph recording"
        )
    items, rows = _rows(batch)
    # A batch tensor computed from parameters (an encoder's output) is cut as a leaf of its own:
    # the parts' backward passes stop there, and its gradient, once summed, goes through the
    # graph that made it once, here (two parts walking that shared graph would each free it).
    upstream = {
        k: item for k, item in enumerate(items) if isinstance(item, Tensor) and not item.is_leaf
    }
    for k, item in upstream.items():
        items[k] = item.detach().requires_grad_()
    parts = max(1, min(int(parts), rows))
    bounds = [rows * k // parts for k in range(parts + 1)]
    slices = [slice(bounds[k], bounds[k + 1]) for k in range(parts)]
    weights = [(s.stop - s.start) / rows if reduction == "mean" and rows else 1.0 for s in slices]
    generators = _random.generator().spawn(parts) if parts > 1 else [_random.generator()]
    held = [HeldGrads() for _ in range(parts)]

    def run(k):
        with grad_sinks.holding_grads(held[k]), _random.using_generator(generators[k]):
            return _part_loss(loss_fn, [item[slices[k]] for item in items], weights[k])

    if parts > 1 and _threads.two_threads():
        results = _threads.run_threads(run, list(range(parts)))
    else:
        results = [run(k) for k in range(parts)]
    for grads in held:
        grads.release()
    for k, item in upstream.items():
        if items[k].grad is not None:
            item.backward(items[k].grad)
    total = sum(weight * value for weight, (value, _) in zip(weights, results))
    return Tensor._wrap(np.asarray(total, dtype=results[0][1]))


class HeldGrads:
    """Gradients that backward passes on one thread would have added to `.grad`, held back
    until `release()` adds them, in the order they first arrived. The parts of a batch run on
    threads with one of these each and are released in part order: the sums are then the same
    whichever thread finishes first, and a part that fails adds nothing."""

    def __init__(self):
        # id(tensor) -> [tensor, gradient, owned]: owned when the array is a sum made here, which
        # nothing else refers to; the first gradient may be an array the backward pass shares.
        self.grads = {}

    def add(self, tensor, grad):
        entry = self.grads.get(id(tensor))
        if entry is None:
            self.grads[id(tensor)] = [tensor, grad, False]
        elif entry[2]:
            entry[1] += grad
        else:
            entry[1], entry[2] = np.add(entry[1], grad, dtype=tensor.dtype), True

    def release(self):
        for tensor, grad, owned in self.grads.values():
            grad_sinks.accumulate(tensor, grad, owned)
        self.grads.clear()
