"""The diagonal ops (minigrad/ops/diagonal.py: diagonal, diag_embed ...) and unfold: views that
write into their base, and values and gradients against torch for any shape, offset and dims.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from parity import R, check

torch = pytest.importorskip("torch")


def test_diagonal_is_a_view_that_writes_into_its_base():
    for B in (mg, torch):
        x = B.zeros(3, 3)
        B.diagonal(x).fill_(2.0)
        x.diagonal(1).add_(1.0)
        y = B.arange(9.0).reshape(3, 3).requires_grad_(True) * 1
        y.diagonal().mul_(10)
        y.sum().backward()
        if B is mg:
            ours = (x.numpy(), y.numpy())
        else:
            np.testing.assert_array_equal(ours[0], x.numpy())
            np.testing.assert_array_equal(ours[1], y.detach().numpy())


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=2, max_size=4),
    offset=st.integers(-5, 5),
    dims=st.permutations(range(4)),
    data=st.data(),
)
def test_diagonal_and_unfold_match_torch_for_any_shape(shape, offset, dims, data):
    dim1, dim2 = dims[0] % len(shape), dims[1] % len(shape)
    if dim1 == dim2:
        dim2 = (dim1 + 1) % len(shape)
    array = R(*shape)
    check(lambda B, x: B.diagonal(x, offset, dim1, dim2), array)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = data.draw(st.integers(0, shape[dim]))
    step = data.draw(st.integers(1, 3))
    check(lambda B, x: x.unfold(dim, size, step), array)
