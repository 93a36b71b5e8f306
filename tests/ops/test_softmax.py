"""The softmax family against PyTorch over hypothesis-drawn inputs: softmax, log_softmax,
masked_softmax (mask, key_lengths, causal) and cross_entropy, values and gradients, float32 and
float64, with junk (NaN, inf, huge numbers) at masked positions, large offsets and zero-size
dims. Masked positions must come out exactly 0, whatever they hold.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from op_checks import check_gradient, np_softmax, rand, value
from parity import assert_close, run_both, tolerance

torch = pytest.importorskip("torch")

# deadline=None: no wall-clock limits (first calls compile Numba kernels).
cases = settings(max_examples=60, deadline=None)
JUNK = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 3e38])

shapes = st.lists(st.integers(0, 6), min_size=1, max_size=4).map(tuple)
dtypes = st.sampled_from([np.float32, np.float64])
offsets = st.sampled_from([0.0, 1e3, -1e4, 1e6])


def _inputs(seed, shape, dtype, offset=0.0, spread=4.0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * spread + offset).astype(dtype)
    return x, rng.standard_normal(shape).astype(dtype), rng


# ---------------------------------------------------------------------------------------
# softmax and log_softmax


@cases
@given(seed=st.integers(0, 2**16), shape=shapes, dtype=dtypes, offset=offsets, data=st.data())
def test_softmax_and_log_softmax_match_torch(seed, shape, dtype, offset, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    x, upstream, _ = _inputs(seed, shape, dtype, offset)
    for ours, theirs in ((mg.softmax, torch.softmax), (mg.log_softmax, torch.log_softmax)):
        run, torch_run = run_both(
            None, [x], sides=(lambda t: ours(t, dim), lambda t: theirs(t, dim)), upstream=upstream
        )
        out, grad = run.value, run.grads[0]
        out_torch, grad_torch = torch_run.value, torch_run.grads[0]
        assert_close(out, out_torch, tolerance("softmax", dtype), same_dtype=True)
        assert_close(grad, grad_torch, tolerance("softmax", dtype), same_dtype=True)


@pytest.mark.parametrize("offset", [1e10, -1e12, 1e15, 1e300])
def test_float64_log_softmax_and_cross_entropy_stay_exact_at_large_offsets(offset):
    # torch stays within 1e-15 here; minigrad lost 1e-6 at 1e10 and 0.06 at 1e15 when fast math
    # reassociated (x - max) - log(sum) into x - (max + log(sum))
    rng = np.random.default_rng(0)
    spread = np.spacing(offset) * rng.integers(-64, 64, (16, 9))  # distinct numbers near the offset
    logits = offset + spread
    target = rng.integers(0, 9, 16)
    out = mg.log_softmax(mg.tensor(logits), -1).numpy()
    expected = torch.log_softmax(torch.tensor(logits), -1).numpy()
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-14)
    loss = mg.cross_entropy(mg.tensor(logits), mg.tensor(target)).item()
    loss_torch = torch.nn.functional.cross_entropy(
        torch.tensor(logits), torch.tensor(target)
    ).item()
    assert abs(loss - loss_torch) <= 1e-14 * max(1.0, abs(loss_torch))


INF, NAN = np.inf, np.nan
# rows of edge values: all -inf (softmax NaN, and a NaN gradient, as torch), some -inf, NaN, +inf
EDGE_ROWS = {
    "all -inf": [[-INF, -INF, -INF], [0.0, 1.0, 2.0]],
    "some -inf": [[-INF, 0.0, -INF], [-INF, -INF, 3.0]],
    "nan": [[NAN, 0.0, 1.0], [0.0, 1.0, 2.0]],
    "+inf": [[INF, 0.0, 1.0], [INF, INF, -INF]],
    "nan and -inf": [[NAN, -INF, -INF], [-INF, -INF, -INF]],
    "one -inf": [[-INF], [2.0]],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim", [-1, 0])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("rows", list(EDGE_ROWS))
def test_softmax_family_of_edge_rows_matches_torch_values_and_gradients(rows, name, dim, dtype):
    x = np.array(EDGE_ROWS[rows], dtype)
    upstream = np.random.default_rng(0).standard_normal(x.shape).astype(dtype)
    run, torch_run = run_both(
        None,
        [x],
        sides=(lambda t: getattr(mg, name)(t, dim), lambda t: getattr(torch, name)(t, dim)),
        upstream=upstream,
    )
    out, grad = run.value, run.grads[0]
    out_torch, grad_torch = torch_run.value, torch_run.grads[0]
    np.testing.assert_array_equal(np.isnan(out), np.isnan(out_torch))
    np.testing.assert_array_equal(np.isnan(grad), np.isnan(grad_torch))
    assert_close(
        np.nan_to_num(out, nan=0.0),
        np.nan_to_num(out_torch, nan=0.0),
        tolerance("softmax", dtype),
        same_dtype=True,
    )
    assert_close(
        np.nan_to_num(grad, nan=0.0),
        np.nan_to_num(grad_torch, nan=0.0),
        tolerance("softmax", dtype),
        same_dtype=True,
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_of_a_0d_minus_inf_and_f_softmax_dtype_give_torch_nan_gradients(dtype):
    import minigrad.nn.functional as F

    for x, call, theirs in (
        (np.array(-INF, dtype), lambda t: t.softmax(0), lambda t: t.softmax(0)),
        (
            np.array([[-INF, -INF]], np.float32),
            lambda t: F.softmax(t, 1, dtype=dtype),
            lambda t: torch.softmax(t, 1, dtype=getattr(torch, np.dtype(dtype).name)),
        ),
    ):
        upstream = np.ones(x.shape, dtype)
        run, torch_run = run_both(None, [x], sides=(call, theirs), upstream=upstream)
        out, grad = run.value, run.grads[0]
        out_torch, grad_torch = torch_run.value, torch_run.grads[0]
        np.testing.assert_array_equal(out, out_torch)
        np.testing.assert_array_equal(grad, grad_torch)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_softmax_kernels_pass_nan_back_through_a_nan_row_unless_it_is_marked_empty(backend, dtype):
    """The contract Softmax relies on, for the Numba kernel and its numpy twin alike: a row that
    forward filled with NaN gives a NaN gradient when `empty` is not passed back (plain softmax,
    torch's result), and exactly 0 when it is (masked softmax's rows with nothing to attend to)."""
    from minigrad.kernels import reference
    from minigrad.kernels import softmax as numba_softmax

    module = numba_softmax if backend == "numba" else reference
    x = np.array([[-INF, -INF, -INF], [0.5, -1.0, 2.0], [-INF, 1.0, -INF]], dtype)
    empty = np.empty(3, np.bool_)
    y = module.softmax_forward(x, 1.0, None, None, np.nan, empty)
    np.testing.assert_array_equal(empty, [True, False, False])
    grad_y = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    passed_back = module.softmax_backward(y, grad_y)
    skipped = module.softmax_backward(y, grad_y, 1.0, None, None, empty)
    assert np.isnan(passed_back[0]).all() and (skipped[0] == 0).all()
    expected = y[1:] * (grad_y[1:] - (grad_y[1:] * y[1:]).sum(-1, keepdims=True))
    for grad_x in (passed_back, skipped):
        assert_close(grad_x[1:], expected, tolerance("softmax", dtype), same_dtype=True)


# ---------------------------------------------------------------------------------------
# masked_softmax: junk at masked positions changes nothing


def _masks(rng, shape, draw):
    """A bool mask broadcastable to shape, key lengths per row (or None) and causal."""
    mask_shape = tuple(size if rng.random() < 0.7 else 1 for size in shape)
    mask = rng.random(mask_shape) < 0.6 if draw(st.booleans()) else None
    key_lengths = rng.integers(0, shape[-1] + 2, shape[:-1]) if draw(st.booleans()) else None
    causal = len(shape) >= 2 and draw(st.booleans())
    return mask, key_lengths, causal


def _allowed(shape, mask, key_lengths, causal):
    allowed = np.ones(shape, bool) if mask is None else np.broadcast_to(mask, shape).copy()
    if key_lengths is not None:
        allowed &= np.arange(shape[-1]) < key_lengths[..., None]
    if causal:
        allowed &= np.tril(np.ones(shape[-2:], bool))
    return allowed


@cases
@given(
    seed=st.integers(0, 2**16),
    shape=shapes,
    dtype=dtypes,
    offset=offsets,
    scale=st.sampled_from([1.0, 0.125, 3.0]),
    empty_rows=st.sampled_from(["uniform", "zero"]),
    data=st.data(),
)
def test_masked_softmax_matches_torch_with_junk_at_masked_positions(
    seed, shape, dtype, offset, scale, empty_rows, data
):
    x, upstream, rng = _inputs(seed, shape, dtype, offset)
    mask, key_lengths, causal = _masks(rng, shape, data.draw)
    allowed = _allowed(shape, mask, key_lengths, causal)
    x[~allowed] = rng.choice(JUNK, size=int((~allowed).sum())).astype(dtype)
    # torch's side: the textbook composition, -inf at the masked positions (NaN: a row with none)
    run, torch_run = run_both(
        None,
        [x],
        sides=(
            lambda t: mg.masked_softmax(
                t, mask, scale, key_lengths=key_lengths, causal=causal, empty_rows=empty_rows
            ),
            lambda t: torch.softmax(
                (t * scale).masked_fill(torch.tensor(~allowed), float("-inf")), -1
            ),
        ),
        upstream=upstream,
    )
    out, grad = run.value, run.grads[0]
    out_torch, grad_torch = torch_run.value, torch_run.grads[0]
    # exactly 0, whatever x held there
    assert np.all(out[~allowed & allowed.any(-1, keepdims=True)] == 0)
    live = allowed.any(-1)
    assert_close(out[live], out_torch[live], tolerance("softmax", dtype), same_dtype=True)
    assert_close(
        grad[live],
        np.where(allowed, grad_torch, 0)[live],
        tolerance("softmax", dtype),
        same_dtype=True,
    )
    # a row with nothing to attend to: uniform or zero, and no gradient
    fill = 1 / shape[-1] if empty_rows == "uniform" and shape[-1] else 0
    np.testing.assert_allclose(out[~live], np.full_like(out[~live], fill))
    assert np.all(grad[~live] == 0)


def test_masked_softmax_with_key_lengths_and_causal_equals_the_mask():
    rng = np.random.default_rng(3)
    scores = mg.tensor(rng.standard_normal((2, 3, 5, 5)))
    lengths = np.array([5, 2])
    mask = (np.arange(5) < lengths[:, None])[:, None, None, :] & np.tril(np.ones((5, 5), bool))
    by_mask = mg.masked_softmax(scores, mask, 0.5)
    by_lengths = mg.masked_softmax(
        scores, scale=0.5, key_lengths=lengths[:, None, None], causal=True
    )
    np.testing.assert_array_equal(by_lengths.numpy(), by_mask.numpy())


@pytest.mark.parametrize("junk", [np.nan, np.inf, -np.inf, 1e31])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_softmax_ignores_what_masked_positions_hold(junk, dtype):
    # the reproducers of issue 14: NaN or inf at a masked position turned the row NaN, 1e31
    # took all the weight, scale=1e30 gave a masked position 0.5
    scores = np.array([[1.0, 2.0, junk]], dtype)
    mask = np.array([True, True, False])
    expected = np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum()
    out = mg.masked_softmax(mg.tensor(scores), mask).numpy()
    np.testing.assert_allclose(out[0, :2], expected, rtol=1e-6)
    assert out[0, 2] == 0
    big = mg.masked_softmax(mg.tensor(np.array([[0.0, 1.0, 5.0]], dtype)), mask, scale=1e30).numpy()
    np.testing.assert_array_equal(big, [[0, 1, 0]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_softmax_zero_size_dims(dtype):
    for shape in [(0, 4), (3, 0), (2, 0, 3), (0,)]:
        x = mg.tensor(np.zeros(shape, dtype), requires_grad=True)
        out = mg.masked_softmax(x, np.ones(shape, bool), 0.5)
        assert out.shape == shape and out.dtype == dtype
        out.sum().backward()
        assert x.grad.shape == shape


def test_masked_softmax_rejects_bad_masks():
    scores = mg.zeros(2, 3)
    with pytest.raises(ValueError, match=r"key_lengths of shape \(3,\).*\(2,\)"):
        mg.masked_softmax(scores, key_lengths=np.array([1, 2, 3]))
    with pytest.raises(ValueError, match="key_lengths must be >= 0"):
        mg.masked_softmax(scores, key_lengths=np.array([1, -1]))
    with pytest.raises(TypeError, match="key_lengths must be an integer"):
        mg.masked_softmax(scores, key_lengths=np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="empty_rows"):
        mg.masked_softmax(scores, empty_rows="nan")
    with pytest.raises(ValueError, match=r"causal=True needs scores of shape \(\.\.\., L, S\)"):
        mg.masked_softmax(mg.zeros(3), causal=True)


# ---------------------------------------------------------------------------------------
# cross_entropy


@cases
@given(
    seed=st.integers(0, 2**16),
    rows=st.integers(0, 9),
    classes=st.integers(1, 7),
    dtype=dtypes,
    offset=st.sampled_from([0.0, 50.0, -1e4, 1e6]),
)
def test_cross_entropy_matches_torch(seed, rows, classes, dtype, offset):
    x, _, rng = _inputs(seed, (rows, classes), dtype, offset)
    target = rng.integers(0, classes, rows)
    if rows:
        target[rng.random(rows) < 0.2] = -100
    if rows == 0 or np.all(target == -100):
        return  # the mean over no rows: NaN in torch; covered by the loss tests
    run, torch_run = run_both(
        None,
        [x],
        sides=(
            lambda t: mg.cross_entropy(t, mg.tensor(target)),
            lambda t: torch.nn.functional.cross_entropy(t, torch.tensor(target)),
        ),
        upstream=np.array(1.0, dtype),
    )
    out, grad = run.value, run.grads[0]
    out_torch, grad_torch = torch_run.value, torch_run.grads[0]
    assert_close(np.asarray(out), out_torch, tolerance("softmax", dtype), same_dtype=True)
    assert_close(grad, grad_torch, tolerance("softmax", dtype), same_dtype=True)


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_softmax_and_log_softmax(dim):
    x = rand(2, 3, 4, low=-3, high=3, seed=60)
    np.testing.assert_allclose(value(lambda t: t.softmax(dim), x), np_softmax(x, dim), rtol=1e-12)
    np.testing.assert_allclose(
        value(lambda t: mg.log_softmax(t, dim), x), np.log(np_softmax(x, dim)), rtol=1e-12
    )
    check_gradient(lambda t: mg.softmax(t, dim), x)
    check_gradient(lambda t: t.log_softmax(dim), x)


def test_softmax_is_stable_for_large_inputs():
    x = mg.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, 0.0]])
    out = mg.softmax(x, -1).numpy()
    np.testing.assert_allclose(out[0], np_softmax(np.array([0.0, 1.0, 2.0]), 0), rtol=1e-6)
    np.testing.assert_allclose(out[1], [0.0, 0.0, 1.0], atol=1e-7)
    log = mg.log_softmax(x, -1).numpy()
    assert np.isfinite(log).all()
    np.testing.assert_allclose(log[0], np.log(np_softmax(np.array([0.0, 1.0, 2.0]), 0)), rtol=1e-6)
    np.testing.assert_allclose(log[1], [-1000.0, -1000.0, 0.0], rtol=1e-6)


def test_softmax_float32():
    x = mg.randn(4, 5, requires_grad=True)
    y = mg.softmax(x, 0)
    assert y.dtype == np.float32
    (y * mg.randn(4, 5)).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(y.numpy().sum(0), np.ones(5), rtol=1e-6)


@pytest.mark.parametrize("mask_shape", [(2, 3, 5), (2, 1, 5), (5,)], ids=str)
@pytest.mark.parametrize("scale", [1.0, 0.125])
def test_masked_softmax(mask_shape, scale):
    scores = rand(2, 3, 5, low=-3, high=3, seed=61)
    mask = np.random.default_rng(3).random(mask_shape) < 0.6
    mask[..., 0] = True  # every row keeps at least one position
    expected = np_softmax(np.where(mask, scores * scale, -np.inf), -1)
    out = value(lambda s: mg.masked_softmax(s, mask, scale), scores)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-300)
    assert (out[np.broadcast_to(~mask, out.shape)] == 0).all()
    check_gradient(lambda s: mg.masked_softmax(s, mg.tensor(mask), scale=scale), scores)


def test_masked_softmax_without_mask_is_scaled_softmax():
    scores = rand(3, 4, seed=62)
    np.testing.assert_allclose(
        value(lambda s: mg.masked_softmax(s, scale=0.5), scores),
        np_softmax(scores * 0.5, -1),
        rtol=1e-12,
    )
    check_gradient(lambda s: mg.masked_softmax(s, None, 2.0), scores)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_softmax_fully_masked_row_is_uniform_and_passes_no_gradient(dtype):
    scores = mg.tensor(rand(2, 4, seed=63).astype(dtype), requires_grad=True)
    mask = np.array([[True, True, False, True], [False, False, False, False]])
    out = mg.masked_softmax(scores, mask)
    np.testing.assert_allclose(out.numpy()[1], [0.25] * 4)
    (out * mg.tensor(rand(2, 4, seed=64))).sum().backward()
    assert np.isfinite(scores.grad.numpy()).all()
    np.testing.assert_array_equal(scores.grad.numpy()[0, 2], 0.0)
    # the dead row's output does not depend on its scores: finite differences give 0
    np.testing.assert_array_equal(scores.grad.numpy()[1], 0.0)


def test_masked_softmax_dead_rows_against_finite_differences():
    scores = rand(2, 3, 4, seed=65)
    mask = np.array([[[True, False, True, True]], [[False, False, False, False]]])  # (2, 1, 4)
    check_gradient(
        lambda s: mg.masked_softmax(s, mask, scale=0.5) * mg.tensor(rand(2, 3, 4, seed=66)), scores
    )


def test_masked_softmax_errors():
    with pytest.raises(ValueError) as info:
        mg.masked_softmax(mg.zeros(2, 3), np.ones((2, 4), dtype=bool))
    assert "(2, 4)" in str(info.value) and "(2, 3)" in str(info.value)
    with pytest.raises(TypeError, match="bool"):
        mg.masked_softmax(mg.zeros(2, 3), np.ones((2, 3)))


def test_softmax_of_a_0d_tensor_is_one_as_in_torch():
    torch = pytest.importorskip("torch")
    for ours, theirs in ((mg.softmax, torch.softmax), (mg.log_softmax, torch.log_softmax)):
        x = mg.tensor(3.0, requires_grad=True)
        t = torch.tensor(3.0, requires_grad=True)
        y, u = ours(x, 0), theirs(t, 0)
        y.backward()
        u.backward()
        assert y.shape == () and y.item() == u.item()
        assert x.grad.item() == t.grad.item()
