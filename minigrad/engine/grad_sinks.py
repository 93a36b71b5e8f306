"""Where the walk's gradients go: the fourth file of the engine, the one step beside the walk.

The walk (walk.py) computes the gradient of every node's outputs and inputs; a sink decides
what becomes of them:
- `AccumulateGrads` (`backward()`): each leaf's gradient is added to its `.grad` (torch's
  AccumulateGrad), after the leaf's hooks (`register_hook`, run once per backward on the sum
  over the leaf's uses); a non-leaf that called `retain_grad()` keeps its gradient too.
- `mg.autograd.grad`'s sink, `CaptureGrads` (in minigrad/autograd.py), touches no `.grad`:
  it returns the gradient reaching each chosen tensor.
Both run the hooks registered on non-leaf tensors (kept on the node that made them) before the
node's backward. A sink has four steps: `before_node`, `at_leaf`, `at_intermediate`, `finish`.
"""

import contextlib
import threading

# Gradients accumulate into leaves shared between threads (two models training at once
# may share an embedding): the read-add-write of `.grad` must not interleave.
_accumulate_lock = threading.Lock()


class _ThreadState(threading.local):
    def __init__(self):
        # Inside holding_grads() (mg.parallel): where this thread's additions to `.grad` go
        self.held = None


_state = _ThreadState()


def accumulate(tensor, grad, owned=False):
    """Add grad (an array) to tensor.grad; owned: nothing else refers to grad (no copy)."""
    if _state.held is not None:  # mg.parallel: added later, in the order of the batch's parts
        _state.held.add(tensor, grad)
        return
    with _accumulate_lock:
        tensor._add_to_grad(grad, owned)


@contextlib.contextmanager
def holding_grads(held):
    """Backward passes on this thread inside the block add to `held` (an object with
    `add(tensor, grad)`: parallel.HeldGrads), not to `.grad`."""
    previous, _state.held = _state.held, held
    try:
        yield held
    finally:
        _state.held = previous


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


def sum_into(sums, leaf, grad):
    """sums[id(leaf)] = (leaf, its gradients so far plus grad): a leaf's uses summed first."""
    entry = sums.get(id(leaf))
    sums[id(leaf)] = (leaf, grad if entry is None else entry[1] + grad)


class AccumulateGrads:
    """backward(): leaves' `.grad` (hooked leaves summed over their uses first), retain_grad()."""

    def __init__(self):
        self.hooked_leaves = {}  # id(leaf) -> (leaf, gradient summed so far)

    def before_node(self, node, grads):
        return hooked_outputs(node, grads)

    def at_leaf(self, leaf, grad):
        if leaf._hooks:
            sum_into(self.hooked_leaves, leaf, grad)
        else:
            accumulate(leaf, grad)

    def at_intermediate(self, tensor, node, grad):
        if tensor._retains_grad and tensor._node is node:
            accumulate(tensor, grad)

    def finish(self):
        for leaf, grad in self.hooked_leaves.values():
            accumulate(leaf, run_hooks(leaf._hooks, grad))
