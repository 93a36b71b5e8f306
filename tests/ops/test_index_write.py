"""The index writes (minigrad/ops/index_write.py: scatter_reduce, index_add_, index_copy_ ...)
done in place: they follow the graph and the version counter as torch's do, a write after a saved
use raises in backward, and a write into a leaf that requires grad is refused.
"""

import pytest

import minigrad as mg
from parity import R, check

torch = pytest.importorskip("torch")


IN_PLACE_WRITES = {
    "scatter_reduce_": lambda B, h, s: h.scatter_reduce_(
        0, B.tensor([[0, 1], [0, 0], [1, 1]]), s, "amax", include_self=False
    ),
    "index_add_": lambda B, h, s: h.index_add_(0, B.tensor([2, 2, 0]), s, alpha=3),
    "index_copy_": lambda B, h, s: h.index_copy_(0, B.tensor([1, 0, 2]), s),
    "index_fill_": lambda B, h, s: h.index_fill_(0, B.tensor([1]), s[0, 0]),
}


@pytest.mark.parametrize("name", list(IN_PLACE_WRITES))
def test_in_place_writes_follow_the_graph_and_the_version_counter(name):
    """h = x * 2; h.op_(..., s); a view of h sees it; the gradients of x and s are torch's."""

    def call(B, x, s):
        h = x * 2
        row = h[1]
        before = h._version if B is torch else h._version[0]
        out = IN_PLACE_WRITES[name](B, h, s)
        assert out is h and (h._version if B is torch else h._version[0]) == before + 1
        return h, row * 1

    check(call, R(3, 2), R(3, 2))


def test_an_in_place_write_after_a_saved_use_raises_in_backward():
    x = mg.tensor(R(3), requires_grad=True)
    h = x * 1
    y = h * h  # saves h
    h.index_add_(0, mg.tensor([0]), mg.tensor(R(1)))
    with pytest.raises(RuntimeError, match="modified|changed|version"):
        y.sum().backward()


def test_an_in_place_write_into_a_leaf_that_requires_grad_is_refused():
    w = mg.zeros(3, requires_grad=True)
    for fill in (
        lambda: w.index_fill_(0, mg.tensor([0]), 1.0),
        lambda: w.uniform_(),
        lambda: w.normal_(),
    ):
        with pytest.raises(RuntimeError, match="leaf"):
            fill()
    with mg.no_grad():
        w.uniform_(-1, 1)
    assert w._version[0] == 1 and w.requires_grad
