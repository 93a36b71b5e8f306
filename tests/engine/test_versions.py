"""minigrad/engine/versions.py: a backward that would read an array changed since forward raises,
for float arrays saved by a node and for the integer and bool arrays it holds (indices, masks,
targets); and an in-place op whose result does not depend on the old value cuts its history."""

import numpy as np
import pytest
from parity import assert_close, raises_like_torch

import minigrad as mg

torch = pytest.importorskip("torch")

CHANGED = "modified by an in-place operation"


def _index_cases(lib):
    """name -> (forward, change): forward() -> (loss, the integer or bool tensor it used, the
    leaves); change(that tensor) changes it in place with the library's own ops."""
    functional = lib.nn.functional
    weight = lib.tensor(np.arange(15.0).reshape(5, 3), requires_grad=True)
    x = lib.tensor(np.linspace(-1, 1, 12).reshape(4, 3), requires_grad=True)

    def embedding():
        ids = lib.tensor([0, 1, 2])
        return (functional.embedding(ids, weight) ** 2).sum(), ids, [weight]

    def gather():
        index = lib.tensor([[0], [2], [1], [0]])
        return (x.gather(1, index) ** 2).sum(), index, [x]

    def where():
        mask = lib.tensor([True, False, True])
        return (lib.where(mask, x, x * 2) ** 2).sum(), mask, [x]

    def cross_entropy():
        target = lib.tensor([0, 1, 2, 0])
        return functional.cross_entropy(x, target), target, [x]

    def nll_loss():
        target = lib.tensor([2, 1, 0, 0])
        return functional.nll_loss(functional.log_softmax(x, 1), target), target, [x]

    def masked_fill():
        mask = lib.tensor([[True, False, False]] * 4)
        return ((x * 3).masked_fill(mask, 0.0) ** 2).sum(), mask, [x]

    return {
        "embedding ids": (embedding, lambda ids: ids.__setitem__(0, 4)),
        "gather index": (gather, lambda index: index.add_(1)),
        "where mask": (where, lambda mask: mask.fill_(True)),
        "cross-entropy targets": (cross_entropy, lambda target: target.__setitem__(0, 2)),
        "nll_loss targets": (nll_loss, lambda target: target.fill_(1)),
        "masked_fill mask": (masked_fill, lambda mask: mask.fill_(False)),
    }


# nll_loss keeps a copy of its targets (ignore_index resolved): a change after forward cannot
# reach its backward, which gives forward's gradient (torch raises)
COPIED = {"nll_loss targets"}
HELD = [name for name in _index_cases(mg) if name not in COPIED]


@pytest.mark.parametrize("name", HELD)
def test_an_index_mask_or_target_changed_in_place_after_forward_raises_as_in_torch(name):
    def run(lib):
        forward, change = _index_cases(lib)[name]
        loss, held, _ = forward()
        change(held)
        loss.backward()

    raises_like_torch(lambda: run(mg), lambda: run(torch), must_mention=[CHANGED])


@pytest.mark.parametrize("name", HELD)
def test_an_index_mask_or_target_changed_through_numpy_raises(name):
    """No counter sees a write into the array behind the tensor: the node's CRC-32 of it does."""
    forward, _ = _index_cases(mg)[name]
    loss, held, _ = forward()
    array = held.numpy()
    array.reshape(-1)[0] = np.logical_not(array.reshape(-1)[0]) if array.dtype == bool else 1
    with pytest.raises(RuntimeError, match=CHANGED):
        loss.backward()


@pytest.mark.parametrize("name", sorted(COPIED))
def test_a_copied_target_changed_after_forward_keeps_forwards_gradient(name):
    grads = []
    for change in (False, True):
        forward, changer = _index_cases(mg)[name]
        loss, held, leaves = forward()
        if change:
            changer(held)
        loss.backward()
        grads.append(leaves[0].grad)
    assert_close(grads[1], grads[0], 0)


@pytest.mark.parametrize("name", list(_index_cases(mg)))
def test_an_unchanged_index_still_gives_torchs_gradients(name):
    runs = []
    for lib in (mg, torch):
        forward, _ = _index_cases(lib)[name]
        loss, _, leaves = forward()
        loss.backward()
        runs.append([loss.detach()] + [leaf.grad for leaf in leaves])
    for ours, theirs in zip(*runs):
        assert_close(ours, theirs, 1e-12)


@pytest.mark.parametrize("function", ["exp", "tanh", "sigmoid", "sqrt"])
def test_a_saved_output_changed_through_numpy_raises(function):
    x = mg.tensor(np.linspace(0.1, 2, 40), requires_grad=True)
    out = getattr(x, function)()
    out.numpy()[:] = 0  # backward of exp, tanh, sigmoid and sqrt reads the output
    with pytest.raises(RuntimeError, match="changed outside minigrad"):
        out.sum().backward()


def test_copy_into_a_result_cuts_its_history_as_in_torch():
    """y = a * 2; y.copy_(source): y no longer depends on a (a's gradient 0), source gets one."""
    results = []
    for lib in (mg, torch):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        source = lib.tensor([4.0, 5.0, 6.0], requires_grad=True)
        y = a * 2
        y.copy_(source)
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        results.append((y, a.grad, source.grad))
    for ours, theirs in zip(results[0], results[1]):
        assert_close(ours.detach(), theirs.detach())


@pytest.mark.parametrize("source", ["tensor", "numpy", "number"])
def test_copy_into_a_view_of_a_result_cuts_that_part_of_its_history(source):
    results = []
    for lib in (mg, torch):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = a * 2
        value = {"tensor": lib.tensor(7.0), "numpy": np.float32(7.0), "number": 7.0}[source]
        if lib is torch and source != "tensor":
            value = torch.tensor(float(value))
        y[0].copy_(value)
        (y * 3).sum().backward()
        results.append((y.detach(), a.grad))
    assert_close(results[0][0], results[1][0])
    assert_close(results[0][1], results[1][1])
