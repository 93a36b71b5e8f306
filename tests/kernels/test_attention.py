"""minigrad/kernels/attention.py: fused attention against its numpy twin (any shape, mask, key
stops, model-sized problems, chunks, permuted heads), the twin against the composition of ops and
torch, and the weights array reused only when it is free.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel_checks import FLOATS, close, few
from minigrad.kernels import _buffers, reference
from minigrad.kernels import attention as numba_attention


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
    grads = numba_attention.attention_backward(q, k, v, weights, grad_out, scale, **settings)
    twin_grads = reference.attention_backward(q, k, v, twin_weights, grad_out, scale, **settings)
    for ours, theirs in zip(grads, twin_grads):
        close(ours, theirs, dtype)
    if settings.get("keep") is None:  # weights=None: made again in backward, the same numbers
        for backward, kept in (
            (numba_attention.attention_backward, grads),
            (reference.attention_backward, twin_grads),
        ):
            for made_again, same in zip(backward(q, k, v, None, grad_out, scale, **settings), kept):
                np.testing.assert_array_equal(made_again, same)


@pytest.mark.parametrize(
    "backward", [numba_attention.attention_backward, reference.attention_backward]
)
def test_attention_backward_makes_weights_again_only_without_dropout(backward):
    q = np.ones((2, 3, 4), np.float32)
    keep = np.ones((2, 3, 3), bool)
    with pytest.raises(ValueError, match="weights=None.*keep=None"):
        backward(q, q, q, None, q, 0.5, keep=keep, keep_scale=1.0)


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
    # at most 4 matrices
    chunks = numba_attention._chunks(stops, 4, 4, 4, chunk_bytes=4 * 4 * 4 * 4)
    assert chunks == [
        (0, 2, 0, 2, 4, 4),
        (2, 3, 0, 1, 4, 4),
        (2, 3, 1, 2, 2, 2),
        (3, 5, 0, 2, 4, 4),
    ]
    causal = np.broadcast_to(np.arange(1, 5), (5, 2, 4))  # query i sees keys 0..i
    chunks = numba_attention._chunks(causal, 4, 4, 4, chunk_bytes=4 * 4 * 4 * 4)
    # the first 2 queries: 2 keys
    assert chunks == [(0, 2, 0, 2, 4, 2), (2, 4, 0, 2, 4, 2), (4, 5, 0, 2, 4, 2)]


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
    # now free: reused, no fresh pages to fault in
    assert third.__array_interface__["data"][0] == address
