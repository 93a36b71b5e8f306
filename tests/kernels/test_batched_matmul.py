"""minigrad/kernels/batched_matmul.py: batched matrix products, their gradients and the linear
layer's kernels against their numpy twins (small and big stacks, broadcast batches, one and two
threads, transposed operands), the twins against einsum, and bad shapes named.
"""

import contextlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad.kernels as kernels
from kernel_checks import FLOATS, close, few
from minigrad.kernels import batched_matmul as numba_matmul
from minigrad.kernels import reference


def test_matmul_twins_match_einsum():
    rng = np.random.default_rng(6)
    a, b, grad = (
        rng.standard_normal((2, 1, 3, 4)),
        rng.standard_normal((5, 4, 6)),
        rng.standard_normal((2, 5, 3, 6)),
    )
    np.testing.assert_allclose(
        reference.matmul(a, b), np.einsum("xyik,ykj->xyij", a, b), rtol=1e-12
    )
    np.testing.assert_allclose(
        reference.matmul_grad_a(grad, b), np.einsum("xyij,ykj->xyik", grad, b), rtol=1e-12
    )
    np.testing.assert_allclose(
        reference.matmul_grad_b(a, grad), np.einsum("xzik,xyij->xykj", a, grad), rtol=1e-12
    )


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    batches=st.sampled_from(
        [((), ()), ((3,), ()), ((), (2, 3)), ((2, 1), (3,)), ((1, 4), (2, 1)), ((2, 3), (1,))]
    ),
    n=st.integers(1, 9),
    k=st.integers(1, 9),
    m=st.integers(1, 9),
    dtype=st.sampled_from(FLOATS),
)
def test_matmul_matches_twin(seed, batches, n, k, m, dtype):
    a_batch, b_batch = batches
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(a_batch + (n, k)).astype(dtype)
    b = rng.standard_normal(b_batch + (k, m)).astype(dtype)
    out = numba_matmul.matmul(a, b)
    close(out, reference.matmul(a, b), dtype)
    grad = rng.standard_normal(out.shape).astype(dtype)
    close(numba_matmul.matmul_grad_a(grad, b), reference.matmul_grad_a(grad, b), dtype)
    close(numba_matmul.matmul_grad_b(a, grad), reference.matmul_grad_b(a, grad), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
def test_small_matrix_numba_path_with_broadcast_batch(dtype):
    """Stacks of tiny matrices take the Numba loop (serial and parallel); batch dims broadcast."""
    rng = np.random.default_rng(7)
    for a_shape, b_shape in [((2, 1, 600, 2, 3), (3, 1, 3, 2)), ((70000, 2, 2), (2, 2))]:
        a, b = (
            rng.standard_normal(a_shape).astype(dtype),
            rng.standard_normal(b_shape).astype(dtype),
        )
        assert numba_matmul._small_batch(a, b) is not None
        out = numba_matmul.matmul(a, b)
        close(out, np.matmul(a, b), dtype)
        grad = rng.standard_normal(out.shape).astype(dtype)
        close(numba_matmul.matmul_grad_a(grad, b), reference.matmul_grad_a(grad, b), dtype)
        close(numba_matmul.matmul_grad_b(a, grad), reference.matmul_grad_b(a, grad), dtype)


@pytest.mark.skipif(
    kernels._openblas.openblas_threads is None, reason="numpy's OpenBLAS thread count cannot be set"
)
@pytest.mark.parametrize("dtype", FLOATS)
def test_big_stacks_split_over_two_threads_with_broadcast_batch(dtype, monkeypatch):
    """Products big enough to split (the MHSA shapes, scaled down; stacks by their first batch
    axis, single products by the longer side of the result) give np.matmul's result, whatever
    operand carries the batch; OpenBLAS's thread count is restored."""
    set_threads, get_threads = kernels._openblas.openblas_threads
    monkeypatch.setattr(numba_matmul, "SPLIT_MIN_WORK", 1 << 12)
    split_calls = []
    real_run_threads = kernels._threads.run_threads
    monkeypatch.setattr(
        kernels._threads,
        "run_threads",
        lambda run, tasks: split_calls.append(1) or real_run_threads(run, tasks),
    )
    saved = get_threads()
    set_threads(2)
    try:
        rng = np.random.default_rng(8)
        for a_shape, b_shape in [
            ((9, 16, 8), (9, 8, 16)),
            ((5, 16, 16), (16, 16)),
            ((16, 16), (5, 16, 8)),
            ((4, 1, 16, 8), (1, 3, 8, 16)),
            ((1, 6, 16, 8), (6, 8, 16)),
            ((64, 16), (16, 8)),
            ((8, 64), (64, 32)),
            ((4, 512), (512, 16)),
        ]:
            a, b = (
                rng.standard_normal(a_shape).astype(dtype),
                rng.standard_normal(b_shape).astype(dtype),
            )
            before = len(split_calls)
            out = numba_matmul.matmul(a, b)
            close(out, np.matmul(a, b), dtype)
            assert len(split_calls) == before + 1
            grad = rng.standard_normal(out.shape).astype(dtype)
            close(numba_matmul.matmul_grad_a(grad, b), reference.matmul_grad_a(grad, b), dtype)
            close(numba_matmul.matmul_grad_b(a, grad), reference.matmul_grad_b(a, grad), dtype)
            assert get_threads() == 2
    finally:
        set_threads(saved)


@contextlib.contextmanager
def _small_products_split(threads):
    """Inside: OpenBLAS on `threads` threads (when its count can be set) and products from 2^10
    multiply-adds worth two threads, so small test shapes take the two-thread paths."""
    saved_work = numba_matmul.SPLIT_MIN_WORK
    saved_threads = (
        kernels._openblas.openblas_threads[1]() if kernels._openblas.openblas_threads else None
    )
    try:
        if saved_threads is not None:
            kernels._openblas.openblas_threads[0](threads)
        numba_matmul.SPLIT_MIN_WORK = 1 << 10
        yield
    finally:
        numba_matmul.SPLIT_MIN_WORK = saved_work
        if saved_threads is not None:
            kernels._openblas.openblas_threads[0](saved_threads)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "n, k, m, transposed",
    [
        (0, 3, 4, False),
        (5, 0, 2, False),
        (3, 4, 0, False),
        (7, 5, 3, False),
        (256, 32, 48, False),
        (256, 32, 48, True),
    ],
)
def test_matmul_grads_match_twin(dtype, threads, n, k, m, transposed):
    """Both gradients at once: each product whole on its own thread when big enough (and
    OpenBLAS's thread count can be set), else one after the other; b may be a transposed view
    (nn.Linear's weight.T)."""
    if threads == 2 and kernels._openblas.openblas_threads is None:
        pytest.skip("numpy's OpenBLAS thread count cannot be set")
    rng = np.random.default_rng(n * 100 + k * 10 + m)
    a = rng.standard_normal((n, k)).astype(dtype)
    b = (
        rng.standard_normal((m, k)).astype(dtype).T
        if transposed
        else rng.standard_normal((k, m)).astype(dtype)
    )
    grad = rng.standard_normal((n, m)).astype(dtype)
    with _small_products_split(threads):
        grad_a, grad_b = numba_matmul.matmul_grads(a, b, grad)
    expected_a, expected_b = reference.matmul_grads(a, b, grad)
    assert grad_a.shape == (n, k) and grad_b.shape == (k, m)
    close(grad_a, expected_a, dtype)
    close(grad_b, expected_b, dtype)
    np.testing.assert_allclose(expected_a, grad @ b.T, rtol=1e-5)  # the twin against the formula
    np.testing.assert_allclose(expected_b, a.T @ grad, rtol=1e-5)
    with pytest.raises(
        ValueError, match=r"matmul_grads expects a \(n, k\), b \(k, m\) and grad \(n, m\)"
    ):
        numba_matmul.matmul_grads(a, b, np.zeros((n + 1, m), dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    "n, k, m", [(0, 3, 4), (5, 0, 2), (3, 4, 0), (7, 5, 3), (256, 32, 48), (3, 32, 300)]
)
@pytest.mark.parametrize("bias", [True, False])
def test_linear_kernels_match_twin(dtype, threads, n, k, m, bias):
    """linear_forward (rows split when n >= m, else columns; the bias added by each half) and
    linear_backward (grad_x and grad_weight at once, grad_bias with grad_weight), each part
    on or off, against the numpy twin and the formula; x may be a non-contiguous view."""
    if threads == 2 and kernels._openblas.openblas_threads is None:
        pytest.skip("numpy's OpenBLAS thread count cannot be set")
    rng = np.random.default_rng(n * 100 + k * 10 + m)
    x = rng.standard_normal((k, n)).astype(dtype).T  # a transposed view
    weight = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal(m).astype(dtype) if bias else None
    grad = rng.standard_normal((n, m)).astype(dtype)
    with _small_products_split(threads):
        out = numba_matmul.linear_forward(x, weight, b)
        grads = [
            numba_matmul.linear_backward(x, weight, grad, needs)
            for needs in (
                (True, True, True),
                (False, True, False),
                (True, False, False),
                (False, False, True),
            )
        ]
    expected = reference.linear_forward(x, weight, b)
    np.testing.assert_allclose(
        expected, x @ weight.T + (0 if b is None else b), rtol=1e-5, atol=1e-5
    )
    assert out.shape == (n, m) and out.dtype == dtype
    close(out, expected, dtype)
    full = reference.linear_backward(x, weight, grad)
    # the twin against the formula
    np.testing.assert_allclose(full[0], grad @ weight, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(full[1], grad.T @ x, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(full[2], grad.sum(axis=0), rtol=1e-5, atol=1e-5)
    for needs, got in zip(
        ((True, True, True), (False, True, False), (True, False, False), (False, False, True)),
        grads,
    ):
        for wanted, value, twin in zip(needs, got, full):
            if wanted:
                assert value.shape == twin.shape and value.dtype == dtype
                close(value, twin, dtype)
            else:
                assert value is None
    assert grads[0][1].flags.c_contiguous  # weight's layout, for the optimizer


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: numba_matmul.linear_forward(
                np.zeros((2, 3), np.float32), np.zeros((4, 5), np.float32)
            ),
            r"linear_forward expects x \(n, k\) and weight \(m, k\); "
            r"got shapes \(2, 3\) and \(4, 5\)",
        ),
        (
            lambda: numba_matmul.linear_forward(
                np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float64)
            ),
            r"linear_forward expects x and weight of one float dtype .*float32 and float64",
        ),
        (
            lambda: numba_matmul.linear_forward(
                np.zeros((2, 3), np.int64), np.zeros((4, 3), np.int64)
            ),
            r"linear_forward expects x and weight of one float dtype .*int64 and int64",
        ),
        (
            lambda: numba_matmul.linear_forward(
                np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32), np.zeros(5, np.float32)
            ),
            r"linear_forward expects bias of shape \(4,\) and dtype float32; got \(5,\) float32",
        ),
        (
            lambda: numba_matmul.linear_backward(
                np.zeros((2, 3), np.float32),
                np.zeros((4, 3), np.float32),
                np.zeros((2, 5), np.float32),
            ),
            r"linear_backward expects grad of shape \(2, 4\); got \(2, 5\)",
        ),
    ],
)
def test_linear_kernels_name_what_was_expected(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()
