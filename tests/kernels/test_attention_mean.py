"""minigrad/kernels/attention_mean.py: the attention weights' mean over each sequence's queries,
against its numpy twin (any shape, lengths 0 to T, one or two threads, junk past the lengths),
the twin against a plain per-sequence softmax and float64 finite differences, and bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_checks import FLOATS, close, few
from minigrad.kernels import _threads, reference
from minigrad.kernels import attention_mean as numba_mean


def problem(seed, batch, heads, steps, features, dtype, scale=0.7):
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((batch, steps, heads, features)) * 2).astype(dtype)
    k = (rng.standard_normal((batch, steps, heads, features)) * 2).astype(dtype)
    lengths = rng.integers(0, steps + 1, batch)
    grad = rng.standard_normal((batch, heads, steps)).astype(dtype)
    # heads split off by a permute, as nn.SelfAttention passes them
    return q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3), scale, lengths, grad


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    batch=st.integers(1, 5),
    heads=st.integers(1, 3),
    steps=st.integers(1, 12),
    features=st.integers(1, 5),
    dtype=st.sampled_from(FLOATS),
    two_threads=st.booleans(),
)
def test_attention_mean_matches_twin(seed, batch, heads, steps, features, dtype, two_threads):
    """two_threads False: every sequence on this thread."""
    saved = _threads.use_two_threads
    _threads.use_two_threads = two_threads and saved
    try:
        check_against_twin(*problem(seed, batch, heads, steps, features, dtype), dtype)
    finally:
        _threads.use_two_threads = saved


def check_against_twin(q, k, scale, lengths, grad, dtype):
    close(
        numba_mean.attention_mean_forward(q, k, scale, lengths),
        reference.attention_mean_forward(q, k, scale, lengths),
        dtype,
    )
    for ours, twins in zip(
        numba_mean.attention_mean_backward(q, k, grad, scale, lengths),
        reference.attention_mean_backward(q, k, grad, scale, lengths),
    ):
        close(ours, twins, dtype)


def test_model_sized_problem_matches_twin():
    """The sentiment model's: 128 reviews, 8 heads of 32, up to 256 tokens."""
    q, k, scale, lengths, grad = problem(1, 128, 8, 256, 32, np.float32, 32**-0.5)
    lengths[:3] = (256, 1, 0)
    check_against_twin(q, k, scale, lengths, grad, np.float32)


@pytest.mark.parametrize("mean", [reference, numba_mean], ids=["twin", "numba"])
def test_attention_mean_is_the_mean_of_each_sequences_softmax(mean):
    q, k, scale, lengths, _ = problem(2, 4, 2, 6, 3, np.float64)
    lengths[:] = (6, 3, 1, 0)
    got = mean.attention_mean_forward(q, k, scale, lengths)
    for b, n in enumerate(lengths):
        for h in range(2 if n else 0):
            scores = q[b, h, :n] @ k[b, h, :n].T * scale
            weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
            np.testing.assert_allclose(got[b, h, :n], weights.mean(axis=0), rtol=1e-13)
        assert (got[b, :, n:] == 0).all()
    np.testing.assert_allclose(got[lengths > 0].sum(axis=-1), 1.0, rtol=1e-13)


@pytest.mark.parametrize("mean", [reference, numba_mean], ids=["twin", "numba"])
def test_attention_mean_backward_matches_finite_differences(mean):
    q, k, scale, lengths, grad = problem(3, 3, 2, 5, 3, np.float64)
    lengths[:] = (5, 2, 0)
    q, k = np.ascontiguousarray(q), np.ascontiguousarray(k)
    grad_q, grad_k = mean.attention_mean_backward(q, k, grad, scale, lengths)

    def loss(q_, k_):
        return float((reference.attention_mean_forward(q_, k_, scale, lengths) * grad).sum())

    eps = 1e-6
    for array, analytic, which in ((q, grad_q, 0), (k, grad_k, 1)):
        numeric = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            up, down = array.copy(), array.copy()
            up[index] += eps
            down[index] -= eps
            pair = (up, k) if which == 0 else (q, up)
            pair_down = (down, k) if which == 0 else (q, down)
            numeric[index] = (loss(*pair) - loss(*pair_down)) / (2 * eps)
        np.testing.assert_allclose(analytic, numeric, atol=1e-8, rtol=1e-6)


@pytest.mark.parametrize("mean", [reference, numba_mean], ids=["twin", "numba"])
def test_positions_past_the_lengths_are_never_read(mean):
    q, k, scale, lengths, grad = problem(4, 3, 2, 7, 4, np.float32)
    lengths[:] = (7, 4, 0)
    clean = mean.attention_mean_forward(q, k, scale, lengths)
    clean_grads = mean.attention_mean_backward(q, k, grad, scale, lengths)
    q, k = q.copy(), k.copy()
    for b, n in enumerate(lengths):
        q[b, :, n:] = np.nan
        k[b, :, n:] = np.inf
    np.testing.assert_array_equal(mean.attention_mean_forward(q, k, scale, lengths), clean)
    for ours, before in zip(mean.attention_mean_backward(q, k, grad, scale, lengths), clean_grads):
        np.testing.assert_array_equal(ours, before)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("position", [0, 3, 6])  # a score row's first, middle and last
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_inside_a_sequence_as_the_twin(dtype, position, value):
    """The row max skips NaN (llvm.maxnum), so a NaN must still reach the sums: the weights of
    a sequence with a NaN or an inf in its keys are NaN where the twin's are, finite elsewhere
    and equal to the twin's there."""
    q, k, scale, lengths, grad = problem(5, 3, 2, 7, 4, dtype)
    lengths[:] = (7, 7, 5)
    k = k.copy()
    k[0, 1, position, 2] = value  # an inf key makes +-inf scores, and exp(inf - inf) is NaN
    with np.errstate(invalid="ignore"):
        ours = numba_mean.attention_mean_forward(q, k, scale, lengths)
        twins = reference.attention_mean_forward(q, k, scale, lengths)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(twins))
    assert np.isnan(ours[0]).any() and not np.isnan(ours[1:]).any()
    finite = ~np.isnan(twins)
    close(ours[finite], twins[finite], dtype)


@pytest.mark.parametrize("mean", [reference, numba_mean], ids=["twin", "numba"])
@pytest.mark.parametrize(
    "q_shape, k_shape, dtype, lengths, words",
    [
        ((2, 1, 3, 4), (2, 1, 3, 5), np.float32, [1, 1], "one shape"),
        ((2, 3, 4), (2, 3, 4), np.float32, [1, 1], "(B, H, T, E)"),
        ((2, 1, 3, 4), (2, 1, 3, 4), np.int64, [1, 1], "float32 or float64"),
        ((2, 1, 3, 4), (2, 1, 3, 4), np.float32, [1, 4], r"in \[0, 3\]; got \[1, 4\]"),
        ((2, 1, 3, 4), (2, 1, 3, 4), np.float32, [1], r"shape \(2,\)"),
        ((2, 1, 3, 4), (2, 1, 3, 4), np.float32, [-1, 0], r"in \[0, 3\]"),
    ],
)
def test_bad_input_is_refused_naming_it(mean, q_shape, k_shape, dtype, lengths, words):
    q, k = np.zeros(q_shape, dtype), np.zeros(k_shape, dtype)
    with pytest.raises(ValueError, match=words):
        mean.attention_mean_forward(q, k, 1.0, np.array(lengths))
    with pytest.raises(ValueError, match=words):
        mean.attention_mean_backward(q, k, np.zeros(q_shape[:3]), 1.0, np.array(lengths))
