"""minigrad.kernels: every Numba kernel against its numpy twin, and every twin against a
formula written out here (or PyTorch, or finite differences), so the twins are not
only checked against themselves. The backend switch, threads and the on-disk cache:
tests/kernels/test_runtime.py."""

import contextlib
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad.kernels as kernels
from minigrad.kernels import _buffers, reference
from minigrad.kernels import adam as numba_adam
from minigrad.kernels import attention as numba_attention
from minigrad.kernels import batched_matmul as numba_matmul
from minigrad.kernels import embedding as numba_embedding
from minigrad.kernels import softmax as numba_softmax
from minigrad.kernels._runtime import PARALLEL_MIN_SIZE

FLOATS = [np.float32, np.float64]
# deadline=None: no wall-clock limits in tests (first calls include Numba compilation).
few = settings(max_examples=15, deadline=None)


def close(actual, expected, dtype):
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)
    assert actual.dtype == dtype
    np.testing.assert_allclose(actual, expected, **tol)


def padding_mask(rng, batch, length, shape):
    """Key-padding mask (True = keep) with at least one kept key per row."""
    lengths = rng.integers(1, length + 1, batch)
    return (np.arange(length)[None, :] < lengths[:, None]).reshape(shape)


# ============================================================ twins vs formulas written here


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


def test_adam_twin_matches_scalar_formula_and_torch():
    rng = np.random.default_rng(4)
    param, grads = rng.standard_normal(5), rng.standard_normal((3, 5))
    lr, beta1, beta2, eps, decay = 0.1, 0.8, 0.95, 1e-3, 0.05
    twin = (param.copy(), np.zeros(5), np.zeros(5))
    by_hand = [float(v) for v in param], [0.0] * 5, [0.0] * 5
    for step, grad in enumerate(grads, start=1):
        reference.adam_update(twin[0], grad, twin[1], twin[2], step, lr, beta1, beta2, eps, decay)
        p, m, v = by_hand
        for i in range(5):
            g = grad[i] + decay * p[i]
            m[i] = beta1 * m[i] + (1 - beta1) * g
            v[i] = beta2 * v[i] + (1 - beta2) * g * g
            p[i] -= lr * (m[i] / (1 - beta1**step)) / ((v[i] / (1 - beta2**step)) ** 0.5 + eps)
    np.testing.assert_allclose(twin[0], by_hand[0], rtol=1e-13)
    np.testing.assert_allclose(twin[2], by_hand[2], rtol=1e-13)

    torch = pytest.importorskip("torch")
    torch_param = torch.tensor(param, requires_grad=True)
    optimizer = torch.optim.Adam(
        [torch_param], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=decay
    )
    for grad in grads:
        torch_param.grad = torch.tensor(grad)
        optimizer.step()
    np.testing.assert_allclose(twin[0], torch_param.detach().numpy(), rtol=1e-12)


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


# ============================================================ Numba kernels vs twins


def test_backend_exposes_every_kernel():
    assert kernels.BACKEND == os.environ.get("MINIGRAD_KERNELS", "numba")
    for name in kernels.KERNELS:
        assert callable(getattr(kernels, name)) and callable(getattr(reference, name))


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
    allowed = reference._allowed_keys(shape, mask, key_stop)
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
    batch=st.lists(st.integers(0, 5), min_size=1, max_size=2),
    queries=st.integers(0, 9),
    keys=st.integers(0, 9),
    features=st.integers(0, 5),
    dtype=st.sampled_from(FLOATS),
    lengths=st.booleans(),
    causal_offset=st.sampled_from([None, 0, 2]),
    masked=st.booleans(),
    dropout=st.booleans(),
    two_threads=st.booleans(),
)
def test_attention_matches_twin(
    seed,
    batch,
    queries,
    keys,
    features,
    dtype,
    lengths,
    causal_offset,
    masked,
    dropout,
    two_threads,
):
    """two_threads: also small problems are dealt to two threads (else they stay on one)."""
    saved = numba_attention.TWO_THREADS_MIN_WORK
    numba_attention.TWO_THREADS_MIN_WORK = 0 if two_threads else saved
    try:
        _attention_matches_twin(
            seed, batch, queries, keys, features, dtype, lengths, causal_offset, masked, dropout
        )
    finally:
        numba_attention.TWO_THREADS_MIN_WORK = saved


def _attention_matches_twin(
    seed, batch, queries, keys, features, dtype, lengths, causal_offset, masked, dropout
):
    rng = np.random.default_rng(seed)
    batch = tuple(batch)
    q = rng.standard_normal(batch + (queries, features)).astype(dtype)
    k = rng.standard_normal(batch + (keys, features)).astype(dtype)
    v = rng.standard_normal(batch + (keys, 3)).astype(dtype)
    key_lengths = (
        rng.integers(0, keys + 1, batch[:1] + (1,) * (len(batch) - 1)) if lengths else None
    )
    mask = rng.random(batch[-1:] + (1, keys)) < 0.7 if masked else None
    keep = rng.random(batch + (queries, keys)) < 0.8 if dropout else None
    attention_matches_twin(
        rng,
        q,
        k,
        v,
        0.7,
        dtype,
        key_lengths=key_lengths,
        causal_offset=causal_offset,
        mask=mask,
        keep=keep,
        keep_scale=1.25,
    )


def attention_matches_twin(rng, q, k, v, scale, dtype, **settings):
    """The Numba attention kernels give the twin's weights, output and gradients (for a random
    output gradient drawn from rng)."""
    out, weights = numba_attention.attention_forward(q, k, v, scale, **settings)
    twin_out, twin_weights = reference.attention_forward(q, k, v, scale, **settings)
    close(weights, twin_weights, dtype)
    close(out, twin_out, dtype)
    grad_out = rng.standard_normal(out.shape).astype(dtype)
    for ours, theirs in zip(
        numba_attention.attention_backward(q, k, v, weights, grad_out, scale, **settings),
        reference.attention_backward(q, k, v, twin_weights, grad_out, scale, **settings),
    ):
        close(ours, theirs, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("one_matrix_chunks", [False, True])
@pytest.mark.parametrize(
    "queries, keys, causal_offset, lengths",
    [
        (130, 130, 0, None),  # causal: chunks of whole batch entries
        (128, 128, 0, "entries"),  # causal and a key length per batch entry
        (70, 200, 130, None),  # the last 70 positions against a cache of 130 earlier keys
        (150, 150, None, "heads"),  # a key length per head: an entry's heads split into chunks
    ],
)
def test_attention_of_model_sized_problems_matches_twin(
    dtype, one_matrix_chunks, queries, keys, causal_offset, lengths, monkeypatch
):
    """Problems big enough for two threads and chunks of several batch entries, causal, with a
    cache offset, key lengths per entry or per head; also with one matrix per chunk."""
    if one_matrix_chunks:
        monkeypatch.setattr(numba_attention, "CHUNK_BYTES", 1)
        monkeypatch.setattr(numba_attention, "BACKWARD_CHUNK_BYTES", 1)
    rng = np.random.default_rng(queries + keys)
    q = rng.standard_normal((4, 3, queries, 8)).astype(dtype)
    k = rng.standard_normal((4, 3, keys, 8)).astype(dtype)
    v = rng.standard_normal((4, 3, keys, 5)).astype(dtype)
    key_lengths = {
        None: None,
        "entries": np.array([[keys], [keys], [keys // 3], [keys]]),
        "heads": np.array([[keys, keys // 2, 7], [3, keys, keys], [0, 0, 0], [keys] * 3]),
    }[lengths]
    attention_matches_twin(
        rng, q, k, v, 0.3, dtype, key_lengths=key_lengths, causal_offset=causal_offset
    )


def test_attention_chunks_merge_whole_entries_of_one_width():
    """Chunks: whole batch entries while their heads need the same keys (up to the size limit),
    heads of an entry apart where they differ."""
    stops = np.full((5, 2, 4), 4)
    stops[2, 1] = 2  # entry 2: its two heads need 4 and 2 keys
    chunks = numba_attention._chunks(
        stops, 4, 4, 4, chunk_bytes=4 * 4 * 4 * 4
    )  # at most 4 matrices
    assert chunks == [
        (0, 2, 0, 2, 4, 4),
        (2, 3, 0, 1, 4, 4),
        (2, 3, 1, 2, 2, 2),
        (3, 5, 0, 2, 4, 4),
    ]
    causal = np.broadcast_to(np.arange(1, 5), (5, 2, 4))  # query i sees keys 0..i
    chunks = numba_attention._chunks(causal, 4, 4, 4, chunk_bytes=4 * 4 * 4 * 4)
    assert chunks == [
        (0, 2, 0, 2, 4, 2),
        (2, 4, 0, 2, 4, 2),
        (4, 5, 0, 2, 4, 2),
    ]  # the first 2 queries: 2 keys


def test_attention_keeps_the_layout_of_heads_split_by_a_permute():
    """q, k, v as (B, H, T, dh) views of (B, T, H, dh) arrays (how SelfAttention splits heads):
    same numbers as the twin, and the results come back in that layout (no copies needed)."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((3, 7, 4, 5)).transpose(0, 2, 1, 3) for _ in range(3))
    out, weights = numba_attention.attention_forward(
        q, k, v, 0.5, np.array([[7], [3], [0]]), causal_offset=0
    )
    twin_out, twin_weights = reference.attention_forward(
        q, k, v, 0.5, np.array([[7], [3], [0]]), causal_offset=0
    )
    close(out, twin_out, np.float64)
    close(weights, twin_weights, np.float64)
    assert out.transpose(0, 2, 1, 3).flags.c_contiguous
    grad_out = rng.standard_normal((3, 7, 4, 5)).transpose(0, 2, 1, 3)
    grads = numba_attention.attention_backward(
        q, k, v, weights, grad_out, 0.5, np.array([[7], [3], [0]]), 0
    )
    for ours, theirs in zip(
        grads,
        reference.attention_backward(q, k, v, weights, grad_out, 0.5, np.array([[7], [3], [0]]), 0),
    ):
        close(ours, theirs, np.float64)
        assert ours.transpose(0, 2, 1, 3).flags.c_contiguous


def test_attention_twin_matches_the_composition_and_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    q, k, v = (
        rng.standard_normal((2, 3, 4, 5)),
        rng.standard_normal((2, 3, 6, 5)),
        rng.standard_normal((2, 3, 6, 2)),
    )
    key_lengths = np.array([[6], [2]])
    allowed = (np.arange(6) < key_lengths[..., None, None]) & (
        np.arange(6) <= np.arange(4)[:, None] + 2
    )
    out, weights = reference.attention_forward(q, k, v, 0.4, key_lengths, causal_offset=2)
    leaves = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    expected = torch.nn.functional.scaled_dot_product_attention(
        *leaves, attn_mask=torch.tensor(allowed), scale=0.4
    )
    np.testing.assert_allclose(out, expected.detach().numpy(), rtol=1e-12)
    scores = np.where(allowed, q @ np.swapaxes(k, -1, -2) * 0.4, -np.inf)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(weights, e / e.sum(-1, keepdims=True), rtol=1e-12)
    grad_out = rng.standard_normal(out.shape)
    expected.backward(torch.tensor(grad_out))
    for ours, leaf in zip(
        reference.attention_backward(q, k, v, weights, grad_out, 0.4, key_lengths, 2), leaves
    ):
        np.testing.assert_allclose(ours, leaf.grad.numpy(), rtol=1e-11, atol=1e-13)


def test_attention_reuses_the_weights_array_only_when_it_is_free(monkeypatch):
    # a pool of its own: free arrays of the same size left by earlier tests would be taken first
    monkeypatch.setattr(_buffers, "_pool", _buffers._Pool())
    q = np.random.default_rng(4).standard_normal((64, 64, 8)).astype(np.float32)  # weights of 1 MiB
    _, first = numba_attention.attention_forward(q, q, q, 0.5)
    _, second = numba_attention.attention_forward(q, q, q, 0.5)
    assert not np.shares_memory(first, second)  # `first` is still held here
    address = first.__array_interface__["data"][0]
    del first
    _, third = numba_attention.attention_forward(q, q, q, 0.5)
    assert (
        third.__array_interface__["data"][0] == address
    )  # now free: reused, no fresh pages to fault in


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
    kernels._runtime.openblas_threads is None, reason="numpy's OpenBLAS thread count cannot be set"
)
@pytest.mark.parametrize("dtype", FLOATS)
def test_big_stacks_split_over_two_threads_with_broadcast_batch(dtype, monkeypatch):
    """Products big enough to split (the MHSA shapes, scaled down; stacks by their first batch
    axis, single products by the longer side of the result) give np.matmul's result, whatever
    operand carries the batch; OpenBLAS's thread count is restored."""
    set_threads, get_threads = kernels._runtime.openblas_threads
    monkeypatch.setattr(numba_matmul, "SPLIT_MIN_WORK", 1 << 12)
    split_calls = []
    real_run_threads = kernels._runtime.run_threads
    monkeypatch.setattr(
        kernels._runtime,
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
        kernels._runtime.openblas_threads[1]() if kernels._runtime.openblas_threads else None
    )
    try:
        if saved_threads is not None:
            kernels._runtime.openblas_threads[0](threads)
        numba_matmul.SPLIT_MIN_WORK = 1 << 10
        yield
    finally:
        numba_matmul.SPLIT_MIN_WORK = saved_work
        if saved_threads is not None:
            kernels._runtime.openblas_threads[0](saved_threads)


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
    if threads == 2 and kernels._runtime.openblas_threads is None:
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
    if threads == 2 and kernels._runtime.openblas_threads is None:
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
    np.testing.assert_allclose(
        full[0], grad @ weight, rtol=1e-5, atol=1e-5
    )  # the twin against the formula
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
            r"linear_forward expects x \(n, k\) and weight \(m, k\); got shapes \(2, 3\) and \(4, "
            r"5\)",
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


@few
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=st.lists(st.integers(1, 7), min_size=1, max_size=3),
    dtype=st.sampled_from(FLOATS),
    decay=st.sampled_from([0.0, 0.01]),
    steps=st.integers(1, 3),
)
def test_adam_matches_twin(seed, shape, dtype, decay, steps):
    rng = np.random.default_rng(seed)
    state = [
        rng.standard_normal(shape).astype(dtype),
        np.zeros(shape, dtype),
        np.zeros(shape, dtype),
    ]
    twin = [array.copy() for array in state]
    for step in range(1, steps + 1):
        grad = rng.standard_normal(shape).astype(dtype)
        numba_adam.adam_update(
            state[0], grad, state[1], state[2], step, 1e-2, 0.9, 0.999, 1e-8, decay
        )
        reference.adam_update(twin[0], grad, twin[1], twin[2], step, 1e-2, 0.9, 0.999, 1e-8, decay)
    for mine, theirs in zip(state, twin):
        close(mine, theirs, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "size", [numba_adam.PARALLEL_MIN_SIZE - 1, numba_adam.PARALLEL_MIN_SIZE + 3]
)
def test_adam_serial_and_parallel_paths_match_twin(dtype, size):
    """Both sides of the parallel threshold, the same numbers as the twin (to rounding:
    both compute in the parameter's dtype, vectorised or not)."""
    rng = np.random.default_rng(size)
    state = [rng.standard_normal(size).astype(dtype), np.zeros(size, dtype), np.zeros(size, dtype)]
    twin = [array.copy() for array in state]
    for step in (1, 2):
        grad = rng.standard_normal(size).astype(dtype)
        numba_adam.adam_update(
            state[0], grad, state[1], state[2], step, 1e-2, 0.9, 0.999, 1e-8, 0.01
        )
        reference.adam_update(twin[0], grad, twin[1], twin[2], step, 1e-2, 0.9, 0.999, 1e-8, 0.01)
    for mine, theirs in zip(state, twin):
        close(mine, theirs, dtype)


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


def test_parallel_paths_match_twins():
    """Inputs above PARALLEL_MIN_SIZE run the prange drivers (float32, as in training)."""
    rng = np.random.default_rng(8)
    dtype = np.float32
    x = rng.standard_normal((4, 2, 64, 150)).astype(dtype)
    assert x.size >= PARALLEL_MIN_SIZE
    mask = padding_mask(rng, 4, 150, (4, 1, 1, 150))
    y = numba_softmax.softmax_forward(
        x, 0.125, mask, np.arange(1, 65)
    )  # and causal-like key limits
    close(y, reference.softmax_forward(x, 0.125, mask, np.arange(1, 65)), dtype)
    close(
        numba_softmax.softmax_backward(y, x, 0.125, mask, np.arange(1, 65)),
        reference.softmax_backward(y, x, 0.125, mask, np.arange(1, 65)),
        dtype,
    )
    logits = x.reshape(-1, 150)
    log_y = numba_softmax.log_softmax_forward(logits)
    close(log_y, reference.log_softmax_forward(logits), dtype)
    close(
        numba_softmax.log_softmax_backward(log_y, logits),
        reference.log_softmax_backward(log_y, logits),
        dtype,
    )
    target = rng.integers(0, 150, logits.shape[0])
    target[::5] = -100
    loss, probs, count = numba_softmax.cross_entropy_forward(logits, target)
    close(loss, reference.cross_entropy_forward(logits, target)[0], dtype)
    close(
        numba_softmax.cross_entropy_backward(probs, target, -100, count, 1.0),
        reference.cross_entropy_backward(probs, target, -100, count, 1.0),
        dtype,
    )
    param, grad = x.copy(), rng.standard_normal(x.shape).astype(dtype)
    state, twin = (
        [param, np.zeros_like(x), np.zeros_like(x)],
        [param.copy(), np.zeros_like(x), np.zeros_like(x)],
    )
    numba_adam.adam_update(state[0], grad, state[1], state[2], 1, 1e-3, 0.9, 0.999, 1e-8, 0.0)
    reference.adam_update(twin[0], grad, twin[1], twin[2], 1, 1e-3, 0.9, 0.999, 1e-8, 0.0)
    close(state[0], twin[0], dtype)


def test_softmax_row_with_one_allowed_entry_is_one_hot():
    x = np.array([[1.0, 2.0, np.inf], [5.0, np.nan, 1e30]], np.float32)
    mask = np.array([[False, True, False], [True, False, False]])
    for module in (numba_softmax, reference):
        np.testing.assert_array_equal(module.softmax_forward(x, 1.0, mask), [[0, 1, 0], [1, 0, 0]])


def test_exp_is_accurate_over_the_whole_range():
    """kernels._exp.fast_exp (the exp of every Numba kernel), called directly and probed through
    log_softmax_backward (grad - exp(y) * sum(grad)) with grad = [-1, 0]: output[1] = exp(y[1])."""
    from numba import njit

    from minigrad.kernels._exp import fast_exp

    @njit
    def exp_all(x, out):
        for i in range(x.shape[0]):
            out[i] = fast_exp(x[i])

    for dtype, low, high in ((np.float32, -87.3, 88.72), (np.float64, -708.0, 709.78)):
        x = np.linspace(low, high, 200_001).astype(dtype)
        out = np.empty_like(x)
        exp_all(x, out)
        assert (np.abs(out - np.exp(x)) <= 2 * np.spacing(np.exp(x))).all()
        special = np.array([-np.inf, low - 1, np.inf, high + 1, np.nan, 0.0], dtype)
        exp_all(special, out[:6])
        np.testing.assert_array_equal(out[:6], [0, 0, np.inf, np.inf, np.nan, 1])
    for dtype, ulps in ((np.float32, 2), (np.float64, 2)):
        y = np.linspace(-700 if dtype == np.float64 else -87, 0, 5001).astype(dtype)
        pairs = np.stack([np.zeros_like(y), y], axis=1)
        grad = np.tile(np.array([-1.0, 0.0], dtype), (y.size, 1))
        ours = numba_softmax.log_softmax_backward(pairs, grad)[:, 1]
        spacing = np.spacing(np.exp(y).astype(dtype))
        assert (np.abs(ours - np.exp(y)) <= ulps * spacing).all()
    y = np.array([[0.0, -90.0, -np.inf, -1e30]], np.float32)
    assert (
        numba_softmax.log_softmax_backward(y, np.array([[-1.0, 0, 0, 0]], np.float32))[0, 1:] == 0
    ).all()


# ============================================================ errors a user can cause


@pytest.mark.parametrize("module", [reference, numba_softmax], ids=["numpy", "numba"])
def test_cross_entropy_rejects_targets_out_of_range(module):
    logits = np.zeros((3, 5), np.float32)
    with pytest.raises(ValueError, match=r"target 7 .*5 classes"):
        module.cross_entropy_forward(logits, np.array([1, 7, 0]))
    with pytest.raises(ValueError, match=r"target -1 .*5 classes"):
        module.cross_entropy_forward(logits, np.array([1, -1, 0]))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        module.cross_entropy_forward(logits, np.array([1, 2]))


@pytest.mark.parametrize("module", [reference, numba_embedding], ids=["numpy", "numba"])
def test_embedding_rejects_indices_out_of_range(module):
    with pytest.raises(ValueError, match=r"index 9 is out of range .*num_embeddings=4"):
        module.embedding_backward(np.array([1, 9]), np.zeros((2, 3)), 4)
    with pytest.raises(ValueError, match=r"grad_out of shape \(2,\) \+ \(D,\)"):
        module.embedding_backward(np.array([1, 2]), np.zeros((3, 3)), 4)


def test_numba_kernels_reject_bad_shapes_and_dtypes():
    with pytest.raises(ValueError, match=r"does not broadcast to x of shape \(2, 3\)"):
        numba_softmax.softmax_forward(np.zeros((2, 3)), 1.0, np.zeros((2, 2), bool))
    with pytest.raises(TypeError, match="mask must be bool.*float64"):
        numba_softmax.softmax_forward(np.zeros((2, 3)), 1.0, np.zeros((2, 3)))
    with pytest.raises(
        ValueError, match=r"q \(\.\.\., L, E\), k \(\.\.\., S, E\).*\(2, 3, 4\), \(2, 5, 3\)"
    ):
        numba_attention.attention_forward(
            np.zeros((2, 3, 4)), np.zeros((2, 5, 3)), np.zeros((2, 5, 3)), 1.0
        )
    with pytest.raises(TypeError, match="int64"):
        numba_softmax.log_softmax_forward(np.zeros((2, 3), np.int64))
    with pytest.raises(ValueError, match=r"shapes \(2, 3\) and \(4, 5\)"):
        numba_matmul.matmul(np.zeros((2, 3)), np.zeros((4, 5)))
    param = np.zeros((4, 4))[:, ::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        numba_adam.adam_update(
            param, param, param.copy(), param.copy(), 1, 1e-3, 0.9, 0.999, 1e-8, 0.0
        )


# ---------------------------------------------------------------- the row kernels' unmasked path


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
    assert (
        empty[9] and not empty[5] and np.isnan(out[5, 0])
    )  # all -inf: empty; NaN spreads over its row
    assert (out[np.arange(width)[None, :] >= stops[:, None]] == 0).all()  # past each row's stop
    np.testing.assert_allclose(np.delete(out, [5, 9], axis=0).sum(axis=1), 1, rtol=1e-5)
