"""minigrad/kernels/softmax.py: softmax, log_softmax and the fused cross-entropy (forward and
backward, masked rows, key stops) against their numpy twins, and the twins against exp over sum,
Jacobians, loops, finite differences and torch; targets out of range refused.
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


def test_cross_entropy_twin_matches_loop_and_finite_differences():
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((6, 4))
    target = np.array([0, 3, -100, 2, 1, -100])
    loss, probs, count = reference.cross_entropy_forward(logits, target)
    kept = [(row, t) for row, t in enumerate(target) if t != -100]
    expected = np.mean([np.log(np.exp(logits[r]).sum()) - logits[r, t] for r, t in kept])
    assert count == 4 and loss.shape == () and loss.dtype == np.float64
    assert loss == pytest.approx(expected, rel=1e-13)
    np.testing.assert_allclose(
        probs, np.exp(logits) / np.exp(logits).sum(1, keepdims=True), rtol=1e-13
    )

    grad = reference.cross_entropy_backward(probs, target, -100, count, 2.0)
    numeric = np.zeros_like(logits)
    for index in np.ndindex(*logits.shape):
        step = np.zeros_like(logits)
        step[index] = 1e-6
        numeric[index] = (
            2.0
            * (
                reference.cross_entropy_forward(logits + step, target)[0]
                - reference.cross_entropy_forward(logits - step, target)[0]
            )
            / 2e-6
        )
    np.testing.assert_allclose(grad, numeric, atol=1e-8)
    assert (grad[[2, 5]] == 0).all()


def test_cross_entropy_all_ignored_gives_zero_loss_and_grad():
    for module in (reference, numba_softmax):
        loss, probs, count = module.cross_entropy_forward(
            np.ones((3, 2), np.float32), np.full(3, -1), -1
        )
        assert count == 0 and loss == 0.0 and loss.dtype == np.float32
        assert (module.cross_entropy_backward(probs, np.full(3, -1), -1, 0, 1.0) == 0).all()


def test_cross_entropy_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((9, 5)).astype(np.float32)
    target = np.array([4, 0, 7, 7, 1, 2, 3, 7, 0])  # 7 is the ignore_index here
    torch_logits = torch.tensor(logits, requires_grad=True)
    torch_loss = torch.nn.functional.cross_entropy(
        torch_logits, torch.tensor(target), ignore_index=7
    )
    torch_loss.backward(torch.tensor(1.5))
    for module in (reference, numba_softmax):
        loss, probs, count = module.cross_entropy_forward(logits, target, ignore_index=7)
        assert float(loss) == pytest.approx(torch_loss.item(), rel=1e-5)
        close(
            module.cross_entropy_backward(probs, target, 7, count, 1.5),
            torch_logits.grad.numpy(),
            np.float32,
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


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 40),
    classes=st.integers(1, 30),
    dtype=st.sampled_from(FLOATS),
    ignore_index=st.sampled_from([-100, 0, 3]),
    grad_loss=st.floats(-2, 2),
)
def test_cross_entropy_matches_twin(seed, rows, classes, dtype, ignore_index, grad_loss):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((rows, classes)) * 3).astype(dtype)
    target = rng.integers(0, classes, rows)
    target[rng.random(rows) < 0.3] = ignore_index
    loss, probs, count = numba_softmax.cross_entropy_forward(logits, target, ignore_index)
    ref_loss, ref_probs, ref_count = reference.cross_entropy_forward(logits, target, ignore_index)
    assert count == ref_count and isinstance(count, int)
    close(loss, ref_loss, dtype)
    close(probs, ref_probs, dtype)
    close(
        numba_softmax.cross_entropy_backward(probs, target, ignore_index, count, grad_loss),
        reference.cross_entropy_backward(ref_probs, target, ignore_index, count, grad_loss),
        dtype,
    )


def test_softmax_row_with_one_allowed_entry_is_one_hot():
    x = np.array([[1.0, 2.0, np.inf], [5.0, np.nan, 1e30]], np.float32)
    mask = np.array([[False, True, False], [True, False, False]])
    for module in (numba_softmax, reference):
        np.testing.assert_array_equal(module.softmax_forward(x, 1.0, mask), [[0, 1, 0], [1, 0, 0]])


@pytest.mark.parametrize("module", [reference, numba_softmax], ids=["numpy", "numba"])
def test_cross_entropy_rejects_targets_out_of_range(module):
    logits = np.zeros((3, 5), np.float32)
    with pytest.raises(ValueError, match=r"target 7 .*5 classes"):
        module.cross_entropy_forward(logits, np.array([1, 7, 0]))
    with pytest.raises(ValueError, match=r"target -1 .*5 classes"):
        module.cross_entropy_forward(logits, np.array([1, -1, 0]))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        module.cross_entropy_forward(logits, np.array([1, 2]))


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
