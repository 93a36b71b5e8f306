"""minigrad/kernels/embedding.py: the embedding backward (a scatter-add) against its numpy twin,
the twin against a one-hot matmul, and indices out of range refused.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_checks import FLOATS, close, few
from minigrad.kernels import embedding as numba_embedding
from minigrad.kernels import reference


def test_embedding_twin_matches_one_hot_matmul():
    rng = np.random.default_rng(5)
    indices, grad_out = rng.integers(0, 6, (4, 3)), rng.standard_normal((4, 3, 2))
    one_hot = np.eye(6)[indices.reshape(-1)]  # (12, 6)
    expected = one_hot.T @ grad_out.reshape(12, 2)
    np.testing.assert_allclose(
        reference.embedding_backward(indices, grad_out, 6), expected, rtol=1e-13
    )
    expected[4] = 0
    np.testing.assert_allclose(
        reference.embedding_backward(indices, grad_out, 6, padding_idx=-2), expected
    )


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    index_shape=st.lists(st.integers(0, 6), min_size=1, max_size=3),
    num_embeddings=st.integers(1, 12),
    dim=st.integers(1, 9),
    dtype=st.sampled_from(FLOATS),
    padding_idx=st.sampled_from([None, 0, -1]),
)
def test_embedding_backward_matches_twin(
    seed, index_shape, num_embeddings, dim, dtype, padding_idx
):
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, num_embeddings, index_shape)
    grad_out = rng.standard_normal(tuple(index_shape) + (dim,)).astype(dtype)
    out = numba_embedding.embedding_backward(indices, grad_out, num_embeddings, padding_idx)
    close(out, reference.embedding_backward(indices, grad_out, num_embeddings, padding_idx), dtype)


@pytest.mark.parametrize("module", [reference, numba_embedding], ids=["numpy", "numba"])
def test_embedding_rejects_indices_out_of_range(module):
    with pytest.raises(ValueError, match=r"index 9 is out of range .*num_embeddings=4"):
        module.embedding_backward(np.array([1, 9]), np.zeros((2, 3)), 4)
    with pytest.raises(ValueError, match=r"grad_out of shape \(2,\) \+ \(D,\)"):
        module.embedding_backward(np.array([1, 2]), np.zeros((3, 3)), 4)


@pytest.mark.parametrize("module", [reference, numba_embedding], ids=["numpy", "numba"])
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_backward_adds_into_out(module, padding_idx):
    rng = np.random.default_rng(3)
    indices, grad_out = rng.integers(0, 4, (2, 5)), rng.standard_normal((2, 5, 3))
    start = rng.standard_normal((4, 3))
    out = start.copy()
    returned = module.embedding_backward(indices, grad_out, 4, padding_idx, out=out)
    assert returned is out
    expected = start + reference.embedding_backward(indices, grad_out, 4, padding_idx)
    np.testing.assert_allclose(out, expected, rtol=1e-13)
    if padding_idx is not None:
        np.testing.assert_array_equal(out[padding_idx], start[padding_idx])  # left as it was


@pytest.mark.parametrize("module", [reference, numba_embedding], ids=["numpy", "numba"])
@pytest.mark.parametrize(
    "out, message",
    [
        (np.zeros((3, 3)), r"out to be a float64 array of shape \(4, 3\), got float64 \(3, 3\)"),
        (np.zeros((4, 3), np.float32), r"float64 array of shape \(4, 3\), got float32 \(4, 3\)"),
        ([[0.0] * 3] * 4, r"got list"),
        (np.broadcast_to(np.zeros(3), (4, 3)), "writable out"),
    ],
    ids=["shape", "dtype", "list", "read-only"],
)
def test_embedding_backward_refuses_a_bad_out(module, out, message):
    with pytest.raises(ValueError, match=message):
        module.embedding_backward(np.array([1, 2]), np.ones((2, 3)), 4, out=out)
