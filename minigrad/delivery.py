"""Where the gradients of the backward walk go: the one step beside the plain walk.

The walk (autograd.walk) computes the gradient of every node's outputs and inputs; a delivery
decides what becomes of them:
- `IntoGrads` (`backward()`): each leaf's gradient is added to its `.grad`, after the leaf's
  hooks (`register_hook`, run once per backward on the sum over the leaf's uses); a non-leaf
  that called `retain_grad()` keeps its gradient too.
- `ToTargets` (`mg.autograd.grad`): no `.grad` is touched; the gradient reaching each chosen
  tensor is returned.
Both run the hooks registered on non-leaf tensors (kept on the node that made them) before the
node's backward. Under `mg.parallel`, additions to `.grad` are held in a `HeldGrads` per thread
and released in the order of the batch's parts. A first reading of the engine may skip this file.
"""

import contextlib
import threading

import numpy as np

from .tensor import Tensor

# Gradients accumulate into leaves shared between threads (two models training at once
# may share an embedding): the read-add-write of `.grad` must not interleave.
_accumulate_lock = threading.Lock()


class _ThreadState(threading.local):
    def __init__(self):
        # Inside holding_grads(): the HeldGrads that this thread's backward passes fill instead
        # of the leaves' `.grad`.
        self.held = None


_state = _ThreadState()


def accumulate(tensor, grad, owned=False):
    """Add grad to tensor.grad; owned: grad is an array of the tensor's dtype that nothing else
    refers to, so it can become tensor.grad without a copy."""
    if _state.held is not None:  # mg.parallel: added later, in the order of the batch's parts
        _state.held.add(tensor, grad)
        return
    with _accumulate_lock:
        if tensor.grad is None:
            array = grad if owned else np.array(grad, dtype=tensor.dtype, copy=True)
            tensor.grad = Tensor._wrap(array)
        else:
            tensor.grad._data = tensor.grad._data + grad


def run_hooks(hooks, grad):
    """grad after each hook in turn (functions of an array that return an array)."""
    for hook in list(hooks or ()):
        grad = hook(grad)
    return grad


def hooked_outputs(node, grads):
    """The gradients of a node's outputs after the hooks registered on those tensors."""
    hooks = node.__dict__.get("_hooks")
    if not hooks:
        return grads
    return [run_hooks(hooks.get(k), g) for k, g in enumerate(grads)]


def _sum_into(sums, leaf, grad):
    """sums[id(leaf)] = (leaf, its gradients so far plus grad): a leaf's uses summed first."""
    entry = sums.get(id(leaf))
    sums[id(leaf)] = (leaf, grad if entry is None else entry[1] + grad)


class IntoGrads:
    """backward(): leaves' `.grad` (hooked leaves summed over their uses first), retain_grad()."""

    def __init__(self):
        self.hooked_leaves = {}  # id(leaf) -> (leaf, gradient summed so far)

    def at_node(self, node, grads):
        return hooked_outputs(node, grads)

    def at_leaf(self, leaf, grad):
        if leaf._hooks:
            _sum_into(self.hooked_leaves, leaf, grad)
        else:
            accumulate(leaf, grad)

    def at_made(self, tensor, node, grad):
        if tensor._retains_grad and tensor._node is node:
            accumulate(tensor, grad)

    def finish(self):
        for leaf, grad in self.hooked_leaves.values():
            accumulate(leaf, run_hooks(leaf._hooks, grad))


class ToTargets:
    """mg.autograd.grad: the gradient reaching each target (None where none does); no `.grad`
    changes. A non-leaf target is the output slot of the node that made it."""

    def __init__(self, targets):
        self.captured = [None] * len(targets)
        self.leaf_targets, self.made_targets = {}, {}  # id(leaf) / (id(node), index) -> positions
        for position, tensor in enumerate(targets):
            if tensor._node is None:
                self.leaf_targets.setdefault(id(tensor), []).append(position)
            else:
                key = (id(tensor._node), tensor._output_index)
                self.made_targets.setdefault(key, []).append(position)
        self.leaves = {}  # id(leaf) -> (leaf, gradient summed so far), for targets and hooks

    def at_node(self, node, grads):
        grads = hooked_outputs(node, grads)
        for index, g in enumerate(grads):
            for position in self.made_targets.get((id(node), index), ()):
                self.captured[position] = g
        return grads

    def at_leaf(self, leaf, grad):
        if leaf._hooks or id(leaf) in self.leaf_targets:
            _sum_into(self.leaves, leaf, grad)

    def at_made(self, tensor, node, grad):
        pass

    def finish(self):
        for leaf, grad in self.leaves.values():
            grad = run_hooks(leaf._hooks, grad) if leaf._hooks else grad
            for position in self.leaf_targets.get(id(leaf), ()):
                self.captured[position] = grad
        return self.captured


class HeldGrads:
    """Gradients that backward passes on one thread would have added to `.grad`, held back
    until `release()` adds them, in the order they first arrived. mg.parallel runs the parts of
    a batch on threads with one of these each and releases them in part order: the sums are
    then the same whichever thread finishes first, and a part that fails adds nothing."""

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
            accumulate(tensor, grad, owned)
        self.grads.clear()


@contextlib.contextmanager
def holding_grads(held):
    """Backward passes on this thread inside the block add to `held` (a HeldGrads), not `.grad`."""
    previous, _state.held = _state.held, held
    try:
        yield held
    finally:
        _state.held = previous
