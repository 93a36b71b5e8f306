"""Joining tensors (minigrad/ops/join.py: cat, stack, hstack ...): values against numpy,
gradients against float64 central differences, constants among the inputs, and errors that
name the shapes.
"""

import numpy as np
import pytest

import minigrad as mg
from op_checks import check_gradient, rand, value


@pytest.mark.parametrize(
    "dim, shapes",
    [
        (0, [(2, 3), (1, 3), (4, 3)]),
        (1, [(2, 3), (2, 1), (2, 2)]),
        (-1, [(2, 2, 1), (2, 2, 3)]),
        (0, [(3,)]),
    ],
    ids=str,
)
def test_cat(dim, shapes):
    arrays = [rand(*s, seed=30 + i) for i, s in enumerate(shapes)]
    np.testing.assert_array_equal(
        value(lambda *ts: mg.cat(ts, dim), *arrays), np.concatenate(arrays, axis=dim)
    )
    check_gradient(lambda *ts: mg.cat(list(ts), dim=dim), *arrays)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim):
    arrays = [rand(2, 3, seed=40 + i) for i in range(3)]
    np.testing.assert_array_equal(
        value(lambda *ts: mg.stack(ts, dim), *arrays), np.stack(arrays, axis=dim)
    )
    check_gradient(lambda *ts: mg.stack(ts, dim=dim), *arrays)


def test_cat_and_stack_with_a_constant():
    x = rand(2, 2, seed=44)
    check_gradient(
        lambda t: (
            mg.cat([t, np.ones((1, 2))])[1:] * mg.stack([t, t * 2, np.zeros((2, 2))], 1)[:, 1]
        ),
        x,
    )


def test_cat_stack_errors_name_shapes():
    with pytest.raises(ValueError) as info:
        mg.cat([mg.zeros(2, 3), mg.zeros(2, 4)], dim=0)
    assert "(2, 3)" in str(info.value) and "(2, 4)" in str(info.value)
    with pytest.raises(ValueError) as info:
        mg.cat([mg.zeros(2, 3), mg.zeros(2, 3, 1)], dim=1)
    assert "(2, 3)" in str(info.value) and "(2, 3, 1)" in str(info.value)
    with pytest.raises(ValueError) as info:
        mg.stack([mg.zeros(2, 3), mg.zeros(3, 2)])
    assert "(2, 3)" in str(info.value) and "(3, 2)" in str(info.value)
    with pytest.raises(ValueError, match="non-empty"):
        mg.cat([])
    with pytest.raises(ValueError, match="non-empty"):
        mg.stack([])
