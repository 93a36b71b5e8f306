"""minigrad.kernels.pooling (max and average pooling over flat planes) against its numpy twins, and
the twins against formulas written out here: a dense window matrix for the weighted sums, and
torch's max_pool1d for the choice among ties, NaN and -inf. The ops over these kernels are checked
against torch in tests/ops/test_pooling.py."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minigrad.kernels import pooling as numba_pooling
from minigrad.kernels import reference
from minigrad.kernels._numba_threads import PARALLEL_MIN_SIZE

FLOATS = [np.float32, np.float64]
few = settings(max_examples=25, deadline=None)  # deadline=None: first calls compile


def close(actual, expected, dtype):
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)
    assert actual.dtype == dtype
    np.testing.assert_allclose(actual, expected, **tol)


def random_windows(rng, plane_size, outputs, slots):
    """places (outputs, slots) in [0, plane_size], plane_size (reads nothing) in some slots but
    never in every slot of a window."""
    places = rng.integers(0, plane_size, (outputs, slots))
    places[rng.random((outputs, slots)) < 0.3] = plane_size
    places[np.arange(outputs), rng.integers(0, slots, outputs)] = rng.integers(
        0, plane_size, outputs
    )
    return places


def planes_with_ties_nan_and_minus_inf(rng, shape, dtype):
    return rng.choice([-np.inf, np.nan, 0.0, 1.0, 2.0, rng.standard_normal()], size=shape).astype(
        dtype
    )


# ============================================================ twins vs formulas written here


def window_matrix(places, weights, plane_size):
    """(O, P): row o holds weight[o, k] at place[o, k] (summed where places repeat)."""
    matrix = np.zeros((places.shape[0], plane_size + 1))
    np.add.at(matrix, (np.arange(places.shape[0])[:, None], places), weights)
    return matrix[:, :plane_size]


def test_avg_pool_twins_match_window_matrix():
    rng = np.random.default_rng(0)
    planes, grad = rng.standard_normal((3, 7)), rng.standard_normal((3, 5))
    places, weights = random_windows(rng, 7, 5, 4), rng.standard_normal((5, 4))
    matrix = window_matrix(places, weights, 7)
    np.testing.assert_allclose(
        reference.avg_pool_forward(planes, places, weights), planes @ matrix.T, rtol=1e-12
    )
    np.testing.assert_allclose(
        reference.avg_pool_backward(grad, places, weights, 7), grad @ matrix, rtol=1e-12
    )


def test_max_pool_twins_match_torch_on_ties_nan_and_minus_inf():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    planes = planes_with_ties_nan_and_minus_inf(rng, (40, 9), np.float64)
    # kernel 3, stride 2, padding 1: 5 windows
    windows = np.arange(5)[:, None] * 2 - 1 + np.arange(3)
    places = np.where((windows >= 0) & (windows < 9), windows, 9)
    values, chosen = reference.max_pool_forward(planes, places)
    expected_values, expected_places = torch.nn.functional.max_pool1d(
        torch.tensor(planes[:, None]), 3, 2, 1, return_indices=True
    )
    np.testing.assert_array_equal(values, expected_values[:, 0].numpy())
    np.testing.assert_array_equal(chosen, expected_places[:, 0].numpy())
    grad = rng.standard_normal(values.shape)
    one_hot = np.eye(9)[chosen]  # (B, O, P)
    np.testing.assert_allclose(
        reference.max_pool_backward(grad, chosen, 9), (grad[..., None] * one_hot).sum(1), rtol=1e-12
    )


# ============================================================ Numba kernels vs twins


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    planes=st.integers(0, 6),
    plane_size=st.integers(1, 30),
    outputs=st.integers(0, 12),
    slots=st.integers(1, 9),
    dtype=st.sampled_from(FLOATS),
)
def test_pooling_kernels_match_twins(seed, planes, plane_size, outputs, slots, dtype):
    rng = np.random.default_rng(seed)
    x = planes_with_ties_nan_and_minus_inf(rng, (planes, plane_size), dtype)
    places = random_windows(rng, plane_size, outputs, slots)
    values, chosen = numba_pooling.max_pool_forward(x, places)
    twin_values, twin_chosen = reference.max_pool_forward(x, places)
    assert values.dtype == dtype and chosen.dtype == np.int64
    np.testing.assert_array_equal(values, twin_values)  # NaN where the twin has NaN
    np.testing.assert_array_equal(chosen, twin_chosen)
    grad = rng.standard_normal(values.shape).astype(dtype)
    close(
        numba_pooling.max_pool_backward(grad, chosen, plane_size),
        reference.max_pool_backward(grad, chosen, plane_size),
        dtype,
    )
    x = rng.standard_normal((planes, plane_size)).astype(dtype)
    weights = rng.standard_normal((outputs, slots)).astype(dtype)
    close(
        numba_pooling.avg_pool_forward(x, places, weights),
        reference.avg_pool_forward(x, places, weights),
        dtype,
    )
    close(
        numba_pooling.avg_pool_backward(grad, places, weights, plane_size),
        reference.avg_pool_backward(grad, places, weights, plane_size),
        dtype,
    )


def test_parallel_paths_match_twins():
    """Planes x places above PARALLEL_MIN_SIZE run the prange drivers."""
    rng = np.random.default_rng(2)
    dtype = np.float32
    x = planes_with_ties_nan_and_minus_inf(rng, (256, 64), dtype)
    places, weights = random_windows(rng, 64, 60, 5), rng.standard_normal((60, 5)).astype(dtype)
    assert x.shape[0] * places.size >= PARALLEL_MIN_SIZE
    values, chosen = numba_pooling.max_pool_forward(x, places)
    twin_values, twin_chosen = reference.max_pool_forward(x, places)
    np.testing.assert_array_equal(values, twin_values)
    np.testing.assert_array_equal(chosen, twin_chosen)
    grad = rng.standard_normal(values.shape).astype(dtype)
    close(
        numba_pooling.max_pool_backward(grad, chosen, 64),
        reference.max_pool_backward(grad, chosen, 64),
        dtype,
    )
    x = rng.standard_normal(x.shape).astype(dtype)
    close(
        numba_pooling.avg_pool_forward(x, places, weights),
        reference.avg_pool_forward(x, places, weights),
        dtype,
    )
    close(
        numba_pooling.avg_pool_backward(grad, places, weights, 64),
        reference.avg_pool_backward(grad, places, weights, 64),
        dtype,
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda: numba_pooling.max_pool_forward(np.zeros((1, 4)), np.array([[0, 5]])),
        lambda: numba_pooling.avg_pool_forward(
            np.zeros((1, 4)), np.array([[-1, 0]]), np.ones((1, 2))
        ),
        lambda: numba_pooling.max_pool_backward(np.zeros((1, 1)), np.array([[4]]), 4),
        lambda: numba_pooling.avg_pool_backward(
            np.zeros((1, 1)), np.array([[5]]), np.ones((1, 1)), 4
        ),
    ],
)
def test_places_outside_the_plane_are_refused(call):
    """The loops index without bounds checks: a place outside [0, P] (chosen: [0, P)) is an
    error."""
    with pytest.raises(
        ValueError,
        match=r"pooling expects (places|chosen) within \[0, [45]\) for planes of 4 "
        r"places, got values from -?\d+ to \d+",
    ):
        call()


@pytest.mark.parametrize(
    "call, pattern",
    [
        (
            lambda: numba_pooling.max_pool_backward(np.zeros((1, 2)), np.array([[0]]), 4),
            r"grad of shape \(1, 1\), got \(1, 2\)",
        ),
        (
            lambda: numba_pooling.avg_pool_forward(
                np.zeros((1, 4)), np.array([[0, 1]]), np.ones((1, 3))
            ),
            r"weights of shape \(1, 2\), got \(1, 3\)",
        ),
        (
            lambda: numba_pooling.avg_pool_backward(
                np.zeros((1, 3)), np.array([[0, 1]]), np.ones((1, 2)), 4
            ),
            r"grad of shape \(1, 1\), got \(1, 3\)",
        ),
    ],
)
def test_mismatched_shapes_are_refused(call, pattern):
    with pytest.raises(ValueError, match=r"pooling expects " + pattern):
        call()
