"""minigrad/kernels/softmax.py: softmax and log_softmax (forward and backward, masked rows, key
stops) against their numpy twins, and the twins against exp over sum and Jacobians
(cross-entropy: test_cross_entropy.py).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_checks import FLOATS, close, few
from minigrad.kernels import reference
from minigrad.kernels import softmax as numba_softmax


def test_softmax_twin_matches_exp_over_sum():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 6))
    mask = np.ones((3, 1, 6), bool)
    mask[0, 0, 4:] = False
    mask[1, 0, :2] = False
    key_stop = np.array([[6, 5, 6, 3]])  # per row (broadcast over the first dim)
    allowed = mask & (np.arange(6) < key_stop[..., None])
    e = np.where(allowed, np.exp(x * 0.5), 0)
    x[~allowed] = np.nan  # what masked keys hold does not matter
    empty = np.zeros((3, 4), bool)
    y = reference.softmax_forward(x, 0.5, mask, key_stop, empty=empty)
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=1e-13)
    assert (y[~allowed] == 0).all() and not empty.any()
    np.testing.assert_allclose(
        reference.softmax_forward(x[2]),
        np.exp(x[2]) / np.exp(x[2]).sum(-1, keepdims=True),
        rtol=1e-13,
    )
    # a row with no allowed key holds empty_value and is reported in `empty`
    y = reference.softmax_forward(
        x, 0.5, mask, np.array([[0], [6], [6]]), empty_value=0.25, empty=empty
    )
    assert (y[0] == 0.25).all() and empty[0].all() and not empty[1:].any()


def test_softmax_and_log_softmax_backward_twins_match_jacobians():
    rng = np.random.default_rng(1)
    x, grad_y, scale = rng.standard_normal((5, 7)), rng.standard_normal((5, 7)), 0.3
    y = reference.softmax_forward(x, scale)
    log_y = reference.log_softmax_forward(x)
    np.testing.assert_allclose(
        log_y, np.log(np.exp(x) / np.exp(x).sum(-1, keepdims=True)), rtol=1e-13
    )
    for r in range(5):
        softmax_jacobian = scale * (np.diag(y[r]) - np.outer(y[r], y[r]))  # d y_i / d x_j
        np.testing.assert_allclose(
            reference.softmax_backward(y, grad_y, scale)[r],
            softmax_jacobian.T @ grad_y[r],
            rtol=1e-12,
        )
        p = np.exp(log_y[r])
        log_jacobian = np.eye(7) - p[None, :]  # d log_y_i / d x_j = delta_ij - p_j
        np.testing.assert_allclose(
            reference.log_softmax_backward(log_y, grad_y)[r], log_jacobian.T @ grad_y[r], rtol=1e-12
        )


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    lead=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    length=st.integers(0, 40),
    dtype=st.sampled_from(FLOATS),
    scale=st.floats(0.1, 3.0),
    masked=st.booleans(),
    stopped=st.booleans(),
    mask_dims=st.integers(0, 3),
    empty_value=st.sampled_from([0.0, 0.5]),
)
def test_softmax_matches_twin(
    seed, lead, length, dtype, scale, masked, stopped, mask_dims, empty_value
):
    rng = np.random.default_rng(seed)
    shape = tuple(lead) + (length,)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    mask = key_stop = None
    if masked:  # mask broadcast over some leading dims, as (B,1,1,L) or (B,1,L) masks are
        mask_shape = tuple(1 if i < len(lead) - mask_dims else d for i, d in enumerate(lead)) + (
            length,
        )
        mask = rng.random(mask_shape) < 0.6
    if stopped:
        key_stop = rng.integers(0, length + 2, shape[:-1])
    allowed = reference.softmax._allowed_keys(shape, mask, key_stop)
    x[~allowed] = rng.choice([np.nan, np.inf, -np.inf, 1e30], size=int((~allowed).sum()))
    empties = [np.ones(shape[:-1], bool), np.ones(shape[:-1], bool)]
    y = numba_softmax.softmax_forward(x, scale, mask, key_stop, empty_value, empties[0])
    close(y, reference.softmax_forward(x, scale, mask, key_stop, empty_value, empties[1]), dtype)
    np.testing.assert_array_equal(empties[0], empties[1])
    assert (y[~allowed & allowed.any(-1, keepdims=True)] == 0).all()
    grad_y = rng.standard_normal(shape).astype(dtype)
    close(
        numba_softmax.softmax_backward(y, grad_y, scale, mask, key_stop, empties[0]),
        reference.softmax_backward(y, grad_y, scale, mask, key_stop, empties[1]),
        dtype,
    )


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 30),
    length=st.integers(1, 50),
    dtype=st.sampled_from(FLOATS),
    spread=st.sampled_from([1.0, 30.0]),
)
def test_log_softmax_matches_twin(seed, rows, length, dtype, spread):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((rows, length)) * spread).astype(dtype)
    y = numba_softmax.log_softmax_forward(x)
    close(y, reference.log_softmax_forward(x), dtype)
    grad_y = rng.standard_normal(x.shape).astype(dtype)
    close(
        numba_softmax.log_softmax_backward(y, grad_y),
        reference.log_softmax_backward(y, grad_y),
        dtype,
    )


def test_softmax_row_with_one_allowed_entry_is_one_hot():
    x = np.array([[1.0, 2.0, np.inf], [5.0, np.nan, 1e30]], np.float32)
    mask = np.array([[False, True, False], [True, False, False]])
    for module in (numba_softmax, reference):
        np.testing.assert_array_equal(module.softmax_forward(x, 1.0, mask), [[0, 1, 0], [1, 0, 0]])


def test_every_key_allowed_only_for_one_all_true_row():
    check = numba_softmax._every_key_allowed
    assert check(np.ones((1, 8), np.bool_), 8) and check(np.array([[True] * 5 + [False] * 3]), 5)
    assert not check(np.array([[True] * 5 + [False] * 3]), 6)
    assert not check(np.ones((2, 8), np.bool_), 8)  # a row per matrix: the masked path


@pytest.mark.parametrize("dtype", FLOATS)
def test_row_kernels_give_the_same_rows_with_and_without_the_mask_path(dtype):
    """Causal rows (key_stop) with no mask take the loops without the mask; an all-True mask of
    two rows forces the masked loops: both give the same softmax and gradient (to rounding),
    NaN rows and all -inf rows included."""
    rng = np.random.default_rng(31)
    rows, width = 64, 40
    x = rng.standard_normal((rows, width)).astype(dtype) * 4
    x[5, :3] = np.nan
    x[9] = -np.inf
    stops = (np.arange(rows) % width + 1).astype(np.int64)
    grad = rng.standard_normal((rows, width)).astype(dtype)
    scale, zero = dtype(0.3), dtype(0)
    results = []
    for allowed, allowed_row in (
        (np.ones((1, width), np.bool_), np.zeros(1, np.int64)),
        (np.ones((2, width), np.bool_), np.arange(rows, dtype=np.int64) % 2),
    ):
        out, empty = np.empty_like(x), np.empty(rows, np.bool_)
        numba_softmax._softmax_rows(
            x, scale, stops, allowed, allowed_row, zero, out, empty, 0, rows
        )
        grad_x = np.empty_like(x)
        numba_softmax._softmax_backward_rows(
            out, grad, scale, stops, allowed, allowed_row, empty, grad_x, 0, rows
        )
        results.append((out, empty, grad_x))
    (out, empty, grad_x), (out_masked, empty_masked, grad_masked) = results
    np.testing.assert_array_equal(empty, empty_masked)
    tolerance = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(out, out_masked, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(grad_x, grad_masked, rtol=tolerance, atol=tolerance)
    # all -inf: empty; NaN spreads over its row
    assert empty[9] and not empty[5] and np.isnan(out[5, 0])
    assert (out[np.arange(width)[None, :] >= stops[:, None]] == 0).all()  # past each row's stop
    np.testing.assert_allclose(np.delete(out, [5, 9], axis=0).sum(axis=1), 1, rtol=1e-5)
