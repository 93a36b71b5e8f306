"""minigrad/kernels/additive_score.py: attention pooling's additive score over each sequence's
real positions, against its numpy twin (any shape, lengths 0 to T, one or two threads, junk past
the lengths), the twin against the score written out per position and float64 finite
differences, and bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_checks import FLOATS, few
from kernel_checks import close as close_in_dtype
from minigrad.kernels import _threads, reference
from minigrad.kernels import additive_score as numba_score

TWIN_AND_NUMBA = pytest.mark.parametrize("score", [reference, numba_score], ids=["twin", "numba"])


def problem(seed, batch, steps, features, hidden, dtype):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, steps, features)).astype(dtype)
    weight = rng.standard_normal((features, hidden)).astype(dtype)
    bias, vector = (rng.standard_normal(hidden).astype(dtype) for _ in range(2))
    lengths = rng.integers(0, steps + 1, batch)
    grad = rng.standard_normal((batch, steps)).astype(dtype)
    return x, weight, bias, vector, lengths, grad


def check_against_twin(x, weight, bias, vector, lengths, grad, dtype, atol=None):
    """atol: for sums of many float32 terms (the score, the weight's gradient) that cancel,
    whose rounding depends on the order of the sum."""

    def close(actual, expected, dtype):
        assert actual.dtype == dtype
        if atol is None:
            return close_in_dtype(actual, expected, dtype)
        np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=atol)

    scores, hidden = numba_score.additive_score_forward(x, weight, bias, vector, lengths)
    twin_scores, twin_hidden = reference.additive_score_forward(x, weight, bias, vector, lengths)
    close(scores, twin_scores, dtype)
    real = np.arange(x.shape[1]) < lengths[:, None]
    close(hidden[real], twin_hidden[real], dtype)  # undefined past the lengths
    ours = numba_score.additive_score_backward(x, weight, vector, hidden, grad, lengths)
    twins = reference.additive_score_backward(x, weight, vector, twin_hidden, grad, lengths)
    for name, a, b in zip(("x", "weight", "bias", "vector"), ours, twins):
        assert a.shape == b.shape, name
        close(a, b, dtype)


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 6),
    steps=st.integers(1, 10),
    features=st.integers(1, 7),
    hidden=st.integers(1, 7),
    dtype=st.sampled_from(FLOATS),
    two_threads=st.booleans(),
)
def test_additive_score_matches_twin(seed, batch, steps, features, hidden, dtype, two_threads):
    """two_threads False: every sequence on this thread."""
    saved = _threads.use_two_threads
    _threads.use_two_threads = two_threads and saved
    try:
        check_against_twin(*problem(seed, batch, steps, features, hidden, dtype), dtype)
    finally:
        _threads.use_two_threads = saved


def test_model_sized_problem_matches_twin():
    """The sentiment model's: 128 reviews of up to 256 tokens, 256 features and hidden units."""
    x, weight, bias, vector, lengths, grad = problem(1, 128, 256, 256, 256, np.float32)
    weight *= np.float32(256**-0.5)  # pre-activations of order 1, as after Xavier init
    lengths[:3] = (256, 1, 0)
    # terms of order 1, sums of 256 (scores) to 32,000 (the weight's gradient) of them
    check_against_twin(x, weight, bias, vector, lengths, grad, np.float32, atol=3e-4)


@TWIN_AND_NUMBA
def test_scores_are_the_formula_at_each_real_position(score):
    x, weight, bias, vector, lengths, _ = problem(2, 4, 6, 3, 5, np.float64)
    lengths[:] = (6, 3, 1, 0)
    scores, _ = score.additive_score_forward(x, weight, bias, vector, lengths)
    for b, n in enumerate(lengths):
        for t in range(6):
            expected = sum(
                vector[k] * np.tanh(sum(x[b, t, d] * weight[d, k] for d in range(3)) + bias[k])
                for k in range(5)
            )
            assert scores[b, t] == pytest.approx(expected if t < n else 0.0, abs=1e-13, rel=1e-12)


@TWIN_AND_NUMBA
def test_backward_matches_finite_differences(score):
    x, weight, bias, vector, lengths, grad = problem(3, 3, 5, 3, 4, np.float64)
    lengths[:] = (5, 2, 0)
    arrays = [x, weight, bias, vector]
    _, hidden = score.additive_score_forward(*arrays, lengths)
    analytic = score.additive_score_backward(x, weight, vector, hidden, grad, lengths)

    def loss(values):
        return float((reference.additive_score_forward(*values, lengths)[0] * grad).sum())

    eps = 1e-6
    for which, array in enumerate(arrays):
        numeric = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            up, down = array.copy(), array.copy()
            up[index] += eps
            down[index] -= eps
            numeric[index] = (
                loss(arrays[:which] + [up] + arrays[which + 1 :])
                - loss(arrays[:which] + [down] + arrays[which + 1 :])
            ) / (2 * eps)
        np.testing.assert_allclose(analytic[which], numeric, atol=1e-8, rtol=1e-6)


@TWIN_AND_NUMBA
def test_positions_past_the_lengths_are_never_read(score):
    x, weight, bias, vector, lengths, grad = problem(4, 3, 7, 4, 3, np.float32)
    lengths[:] = (7, 4, 0)
    clean_scores, hidden = score.additive_score_forward(x, weight, bias, vector, lengths)
    clean_grads = score.additive_score_backward(x, weight, vector, hidden, grad, lengths)
    x, hidden, grad = x.copy(), hidden.copy(), grad.copy()
    for b, n in enumerate(lengths):
        x[b, n:], hidden[b, n:], grad[b, n:] = np.nan, np.inf, np.nan
    scores, _ = score.additive_score_forward(x, weight, bias, vector, lengths)
    np.testing.assert_array_equal(scores, clean_scores)
    grads = score.additive_score_backward(x, weight, vector, hidden, grad, lengths)
    for ours, before in zip(grads, clean_grads):
        np.testing.assert_array_equal(ours, before)
    assert (grads[0][1, 4:] == 0).all() and (grads[0][2] == 0).all()


@TWIN_AND_NUMBA
def test_no_real_position_anywhere_gives_zeros(score):
    x, weight, bias, vector, _, grad = problem(5, 2, 3, 4, 3, np.float32)
    lengths = np.zeros(2, np.int64)
    scores, hidden = score.additive_score_forward(x, weight, bias, vector, lengths)
    assert (scores == 0).all()
    grads = score.additive_score_backward(x, weight, vector, hidden, grad, lengths)
    assert [g.shape for g in grads] == [x.shape, weight.shape, bias.shape, vector.shape]
    assert all((g == 0).all() for g in grads)


@TWIN_AND_NUMBA
@pytest.mark.parametrize(
    "x_shape, weight_shape, hidden, dtype, lengths, words",
    [
        ((2, 3, 4), (5, 2), 2, np.float32, [1, 1], r"x \(B, T, D\), weight \(D, K\)"),
        ((2, 3), (3, 2), 2, np.float32, [1, 1], r"x \(B, T, D\)"),
        ((2, 3, 4), (4, 2), 3, np.float32, [1, 1], r"bias \(K,\)"),
        ((2, 3, 4), (4, 2), 2, np.int64, [1, 1], "float32 or float64"),
        ((2, 3, 4), (4, 2), 2, np.float32, [1, 4], r"in \[0, 3\]; got \[1, 4\]"),
        ((2, 3, 4), (4, 2), 2, np.float32, [1], r"shape \(2,\)"),
        ((2, 3, 4), (4, 2), 2, np.float32, [-1, 0], r"in \[0, 3\]"),
    ],
)
def test_bad_input_is_refused_naming_it(
    score, x_shape, weight_shape, hidden, dtype, lengths, words
):
    x, weight = np.zeros(x_shape, dtype), np.zeros(weight_shape, dtype)
    bias = vector = np.zeros(hidden, dtype)
    lengths = np.array(lengths)
    with pytest.raises(ValueError, match=words):
        score.additive_score_forward(x, weight, bias, vector, lengths)
    with pytest.raises(ValueError, match=words):
        score.additive_score_backward(x, weight, vector, np.zeros(x_shape), np.zeros(2), lengths)


@TWIN_AND_NUMBA
def test_mixed_dtypes_are_refused(score):
    x, weight, bias, vector, lengths, _ = problem(6, 2, 3, 4, 3, np.float32)
    with pytest.raises(ValueError, match="of one dtype; got .* float64"):
        score.additive_score_forward(x, weight.astype(np.float64), bias, vector, lengths)


def test_a_backward_gradient_of_the_wrong_shape_is_refused():
    x, weight, bias, vector, lengths, grad = problem(7, 2, 3, 4, 3, np.float32)
    _, hidden = numba_score.additive_score_forward(x, weight, bias, vector, lengths)
    with pytest.raises(ValueError, match=r"grad \(2, 3\); got .* and \(3, 2\)"):
        numba_score.additive_score_backward(x, weight, vector, hidden, grad.T, lengths)
