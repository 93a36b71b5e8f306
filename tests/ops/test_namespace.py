"""ops/namespace.py: numpy's names on Tensors give numpy's numbers, and record a graph."""

import numpy as np

import minigrad as mg
from minigrad.ops.namespace import namespace, tensors


def test_an_array_gets_numpy_and_a_tensor_the_recorded_names():
    values = np.arange(6.0).reshape(2, 3) + 0.5
    assert namespace(values) is np
    x = mg.tensor(values, requires_grad=True)
    xp = namespace(x)
    assert xp is tensors()
    pairs = [
        (xp.expand_dims(x, (0, 2)), np.expand_dims(values, (0, 2))),
        (xp.broadcast_to(x[:1], (4, 3)), np.broadcast_to(values[:1], (4, 3))),
        (xp.transpose(x, (1, 0)), values.T),
        (xp.sum(x, 1, True), values.sum(1, keepdims=True)),
        (xp.where(values > 2, x, 0), np.where(values > 2, values, 0)),
        (xp.log(x), np.log(values)),
        (xp.concatenate([x, x], axis=1), np.concatenate([values, values], axis=1)),
    ]
    for ours, expected in pairs:
        assert ours.grad_fn is not None
        np.testing.assert_allclose(ours.numpy(), expected)
    for ours, expected in zip(xp.split(x, [1, 2], axis=1), np.split(values, [1, 2], axis=1)):
        np.testing.assert_allclose(ours.numpy(), expected)
