"""Fused attention: out = dropout(softmax(q k^T * scale, masked)) @ v, forward and backward
(contracts: reference.attention_forward and reference.attention_backward).

Why: written as separate ops, attention makes four (..., L, S) arrays per step (scores,
weights and their two gradients) and passes over them eleven times; for the sentiment
model's 8 heads over 128 reviews of 256 tokens each array is 268 MB, and the operating
system also zeroes every fresh page of them. Here the matrices are taken a few at a time,
so that their scores stay in cache from the product through the softmax to the product with
v: the weights are written to memory once (forward) and read once (backward), or never
(attention_inference, and attention_backward with weights=None making each chunk's again: 256
MiB less for the sentiment model's MHSA step, for ~20% more time in its attention), keys past a
matrix's length are never computed, output arrays come from _buffers (reused, no fresh pages
to fault in), and the results keep the memory layout of q, k, v (heads split off by a
permute are not copied). With a causal mask the first half of the queries needs only the
first half of the keys, so each product is made in two parts that skip that empty quarter
(3/4 of the work; the LM's attention, median of 60 interleaved calls: forward 7.09 -> 6.95 ms,
backward 10.35 -> 10.14; four query blocks made the products alone no faster than two).
The products are OpenBLAS calls, the row softmax is softmax.py's; the chunks are dealt to
two threads with one OpenBLAS thread each (_threads.run_tasks).
"""

import functools
import math
from typing import NamedTuple

import numpy as np

from . import _buffers, _threads
from .reference.attention import attention_key_stops
from .softmax import _softmax_backward_rows, _softmax_rows, row_mask

# Scores of one chunk of matrices, small enough to stay in cache. The backward pass keeps two
# such arrays (the weights and their gradient) through five passes: smaller chunks measured
# a little better there (the causal LM's attention, (32, 4, 128, 32), median of 25 interleaved
# calls: backward 9.95 ms with 512 KB chunks, 10.25 with 2 MB; forward 6.87 ms with 2 MB,
# 7.12 with 512 KB).
CHUNK_BYTES = 1 << 21
BACKWARD_CHUNK_BYTES = 1 << 19
TWO_THREADS_MIN_WORK = 1 << 18  # multiply-adds (~0.05 ms) below which a call stays on one thread


# ---------------------------------------------------------------- layout and chunks


def _as_heads(array):
    """array (..., L, E) as a 4-D view (M, H, L, E): H the last batch dim, M the others
    (a copy only when the leading batch dims cannot be merged without one)."""
    batch = array.shape[:-2]
    heads = batch[-1] if batch else 1
    return array.reshape((math.prod(batch[:-1]), heads) + array.shape[-2:])


class _Chunk(NamedTuple):
    """Heads first..last-1 of batch entries m0..m1-1, whose queries need keys [0, width) only,
    and the first half of the queries keys [0, top) only (top < width: causal attention)."""

    m0: int
    m1: int
    first: int
    last: int
    width: int
    top: int

    @property
    def matrices(self):
        return (self.m1 - self.m0) * (self.last - self.first)


def _chunks(stops, queries, keys, itemsize, chunk_bytes):
    """[_Chunk]: the problem's matrices in chunks of at most ~chunk_bytes of scores. A chunk of
    several entries takes all their heads; a new chunk starts where the width changes (the
    heads of one padded review make one chunk; a causal model's whole batch makes chunks of
    entries). Fewer, bigger chunks: fewer calls from Python. stops: (M, H, L).

    Remembered for the last few stops seen: a model's every call in training has the same
    stops (a causal mask, or one batch's lengths in forward and backward), and working them
    out again was ~0.7 ms of Python per call, holding the GIL that mg.parallel's other thread
    needs."""
    stops = np.ascontiguousarray(stops, np.int64)
    return list(_chunk_plan(stops.shape, stops.tobytes(), queries, keys, itemsize, chunk_bytes))


# keys hold the stops: up to 1 MB each for a batch of 128 x 256 tokens
@functools.lru_cache(maxsize=8)
def _chunk_plan(shape, stop_bytes, queries, keys, itemsize, chunk_bytes):
    stops = np.frombuffer(stop_bytes, np.int64).reshape(shape)
    needed = stops.max(axis=2) if stops.shape[2] else np.zeros(stops.shape[:2], np.int64)
    needed_top = stops[:, :, : queries // 2].max(axis=2) if queries >= 2 else needed
    entries, heads = needed.shape
    most = max(1, chunk_bytes // max(1, queries * keys * itemsize))
    chunks = []
    for m in range(entries):
        width = int(needed[m, 0]) if heads else 0
        if heads <= most and (needed[m] == width).all():  # the entry's heads alike: whole entries
            previous = chunks[-1] if chunks else None
            top = int(needed_top[m].max()) if heads else 0
            if (
                previous
                and previous.m1 == m
                and (previous.first, previous.last, previous.width) == (0, heads, width)
                and (m + 1 - previous.m0) * heads <= most
            ):
                # one more entry
                chunks[-1] = previous._replace(m1=m + 1, top=max(previous.top, top))
            else:
                chunks.append(_Chunk(m, m + 1, 0, heads, width, top))
            continue
        first = 0
        for h in range(1, heads + 1):
            if h == heads or needed[m, h] != needed[m, first] or h - first >= most:
                chunks.append(
                    _Chunk(
                        m,
                        m + 1,
                        first,
                        h,
                        int(needed[m, first:h].max()),
                        int(needed_top[m, first:h].max()),
                    )
                )
                first = h
    return tuple(chunks)


def _halves(chunks, queries, depth):
    """The chunks in two lists of about equal work (for two threads)."""
    work = np.cumsum([chunk.matrices * chunk.width * queries * depth for chunk in chunks])
    middle = int(np.searchsorted(work, work[-1] / 2)) + 1 if len(work) else 0
    return [chunks[:middle], chunks[middle:]]


class _Problem:
    """The arguments of one call, checked and viewed as (M, H, L, .) arrays; row r of the
    softmax (matrix n = m * H + h, query i) is r = n * L + i."""

    def __init__(self, q, k, v, key_lengths, causal_offset, mask, keep, name, chunk_bytes):
        if not (
            q.ndim == k.ndim == v.ndim >= 2
            and q.shape[:-2] == k.shape[:-2] == v.shape[:-2]
            and q.shape[-1] == k.shape[-1]
            and k.shape[-2] == v.shape[-2]
        ):
            raise ValueError(
                f"{name} expects q (..., L, E), k (..., S, E), v (..., S, Ev) with the same batch "
                f"dims; got shapes {q.shape}, {k.shape}, {v.shape}"
            )
        if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (np.float32, np.float64):
            raise TypeError(
                f"{name} expects float32 or float64 q, k, v of one dtype; got {q.dtype}, "
                f"{k.dtype}, {v.dtype}"
            )
        self.batch, self.queries, self.keys = q.shape[:-2], q.shape[-2], k.shape[-2]
        self.q, self.k, self.v = _as_heads(q), _as_heads(k), _as_heads(v)
        self.dtype = q.dtype.type
        heads_shape = self.q.shape[:2]
        lengths = (
            None
            if key_lengths is None
            else np.broadcast_to(key_lengths, self.batch).reshape(heads_shape)
        )
        self.stops = attention_key_stops(
            heads_shape, self.queries, self.keys, lengths, causal_offset
        )
        self.flat_stops = self.stops.reshape(-1)
        self.allowed, self.allowed_row = row_mask(mask, self.batch + (self.queries, self.keys))
        self.keep = (
            None
            if keep is None
            else np.asarray(keep).reshape(heads_shape + (self.queries, self.keys))
        )
        self.chunks = _chunks(self.stops, self.queries, self.keys, q.dtype.itemsize, chunk_bytes)

    def rows(self, m0, m1, first, last):
        """The softmax rows of heads first..last-1 of batch entries m0..m1-1 (contiguous: a
        chunk of several entries has all their heads)."""
        heads = self.q.shape[1]
        return slice((m0 * heads + first) * self.queries, ((m1 - 1) * heads + last) * self.queries)

    def allowed_rows(self, rows):
        return self.allowed_row if self.allowed_row.shape[0] == 1 else self.allowed_row[rows]

    def run(self, work):
        """work(part) over two halves of the chunks, on two threads; small problems (one
        generated token against its cache) on this thread, where handing half of them to
        the other thread cost more than the arithmetic."""
        if not self.chunks:
            return
        depth = self.q.shape[3] + self.v.shape[3]
        work_size = (
            sum(chunk.matrices * chunk.width for chunk in self.chunks) * self.queries * depth
        )
        if work_size < TWO_THREADS_MIN_WORK or not _threads.two_threads():
            work(self.chunks)
        else:
            _threads.run_tasks(work, _halves(self.chunks, self.queries, depth))


def _work_array(part, queries, keys, dtype):
    """A function giving (entries, heads, queries, width) arrays carved from one flat array big
    enough for the largest chunk of `part` (one allocation per thread, not per chunk)."""
    largest = max((chunk.matrices for chunk in part), default=0)
    flat = _buffers.empty((largest * queries * keys,), dtype)
    return lambda entries, heads, width: flat[: entries * heads * queries * width].reshape(
        entries, heads, queries, width
    )


def _halves_of_queries(queries, width, top):
    """[(query rows, key columns)] of the products with the scores: the whole block, or, when
    the first half of the queries needs only keys [0, top) (causal attention, top < width), that
    quarter and the second half of the queries against all `width` keys: 3/4 of the work."""
    if top >= width:
        return [(slice(None), slice(0, width))]
    half = queries // 2
    return [(slice(0, half), slice(0, top)), (slice(half, None), slice(0, width))]


def _halves_of_keys(queries, width, top):
    """[(key columns, query rows)] of the products with the transposed scores (the gradients of
    the keys and values): keys [0, top) from every query, keys [top, width) from the second
    half of the queries only (the first half gives them weight 0)."""
    if top >= width:
        return [(slice(0, width), slice(None))]
    return [(slice(0, top), slice(None)), (slice(top, width), slice(queries // 2, None))]


# ---------------------------------------------------------------- forward and backward


def attention_forward(
    q, k, v, scale, key_lengths=None, causal_offset=None, mask=None, keep=None, keep_scale=1.0
):
    """(out, weights) (contract: reference.attention_forward)."""
    p = _Problem(q, k, v, key_lengths, causal_offset, mask, keep, "attention_forward", CHUNK_BYTES)
    scale, keep_scale = p.dtype(scale), p.dtype(keep_scale)
    weights = _buffers.empty(p.q.shape[:2] + (p.queries, p.keys), q.dtype)
    flat_weights = weights.reshape(math.prod(weights.shape[:3]), p.keys)
    out = _buffers.empty_like_layout(p.q, p.q.shape[:3] + (p.v.shape[3],))
    if p.keys == 0:
        out[...] = 0
    empty = np.empty(flat_weights.shape[0], np.bool_)

    def work(part):
        dropped = _work_array(part, p.queries, p.keys, q.dtype) if keep is not None else None
        for m0, m1, first, last, width, top in part:
            rows, m, h = p.rows(m0, m1, first, last), slice(m0, m1), slice(first, last)
            query, key, value = p.q[m, h], p.k[m, h, :width], p.v[m, h, :width]
            block = weights[m, h, :, :width]
            halves = _halves_of_queries(p.queries, width, top)
            _weights_into(p, flat_weights[rows], block, rows, query, key, halves, scale, empty)
            if keep is not None:
                block = np.multiply(
                    block, p.keep[m, h, :, :width], out=dropped(m1 - m0, last - first, width)
                )
                block *= keep_scale
            for upper, lower in halves:
                np.matmul(
                    block[..., upper, lower], value[..., lower, :], out=out[m, h][..., upper, :]
                )

    p.run(work)
    return out.reshape(p.batch + out.shape[2:]), weights.reshape(p.batch + weights.shape[2:])


def _weights_into(p, flat, block, rows, query, key, halves, scale, empty):
    """The weights of one chunk into flat (its softmax rows, p.keys wide), block being
    flat's (entries, heads, queries, width) view: the scores, then the row softmax, which reads
    each row up to its stop and writes the zeros past it, to the end. empty: (rows,) bool
    scratch."""
    _scores_into(block, query, key, halves)
    _softmax_rows(
        flat,
        scale,
        p.flat_stops[rows],
        p.allowed,
        p.allowed_rows(rows),
        p.dtype(0),
        flat,
        empty[rows],
        0,
        rows.stop - rows.start,
    )


def _scores_into(block, query, key, halves):
    """block[..., upper, lower] = query[..., upper, :] @ key[..., lower, :]^T for each half."""
    for upper, lower in halves:
        np.matmul(
            query[..., upper, :], key[..., lower, :].swapaxes(-1, -2), out=block[..., upper, lower]
        )


def attention_inference(q, k, v, scale, key_lengths=None, causal_offset=None, mask=None):
    """out of attention_forward without dropout, keeping no weights: each chunk's weights live
    in a buffer of its thread, reused by the next chunk, so no (..., L, S) array is written
    (contract: reference.attention_inference)."""
    p = _Problem(
        q, k, v, key_lengths, causal_offset, mask, None, "attention_inference", CHUNK_BYTES
    )
    scale = p.dtype(scale)
    out = _buffers.empty_like_layout(p.q, p.q.shape[:3] + (p.v.shape[3],))
    if p.keys == 0:
        out[...] = 0
    empty = np.empty(math.prod(p.q.shape[:3]), np.bool_)

    def work(part):
        scores_of = _work_array(part, p.queries, p.keys, q.dtype)
        for m0, m1, first, last, width, top in part:
            rows, m, h = p.rows(m0, m1, first, last), slice(m0, m1), slice(first, last)
            query, key, value = p.q[m, h], p.k[m, h, :width], p.v[m, h, :width]
            block = scores_of(m1 - m0, last - first, width)
            halves = _halves_of_queries(p.queries, width, top)
            flat = block.reshape(rows.stop - rows.start, width)
            _weights_into(p, flat, block, rows, query, key, halves, scale, empty)
            for upper, lower in halves:
                np.matmul(
                    block[..., upper, lower], value[..., lower, :], out=out[m, h][..., upper, :]
                )

    p.run(work)
    return out.reshape(p.batch + out.shape[2:])


def attention_backward(
    q,
    k,
    v,
    weights,
    grad_out,
    scale,
    key_lengths=None,
    causal_offset=None,
    mask=None,
    keep=None,
    keep_scale=1.0,
):
    """(grad_q, grad_k, grad_v) (contract: reference.attention_backward). weights=None: each
    chunk's weights are made again from q and k, as attention_forward made them (the same
    numbers), into a small array of its thread: no (..., L, S) array is kept between the passes
    (the sentiment model's 8 heads over 128 x 256 tokens: 256 MiB) for one more product q k^T
    and softmax in backward."""
    p = _Problem(
        q, k, v, key_lengths, causal_offset, mask, keep, "attention_backward", BACKWARD_CHUNK_BYTES
    )
    scale, keep_scale = p.dtype(scale), p.dtype(keep_scale)
    if weights is None:
        if keep is not None:
            raise ValueError("attention_backward: weights=None (made again) needs keep=None")
        flat_weights = None
        empty = np.empty(math.prod(p.q.shape[:3]), np.bool_)
    else:
        weights = np.ascontiguousarray(weights, dtype=q.dtype).reshape(
            p.q.shape[:2] + (p.queries, p.keys)
        )
        flat_weights = weights.reshape(math.prod(weights.shape[:3]), p.keys)
    grad_out = _as_heads(np.asarray(grad_out, dtype=q.dtype))
    grad_q, grad_k, grad_v = (_buffers.empty_like_layout(a) for a in (p.q, p.k, p.v))
    if p.keys == 0:
        grad_q[...] = 0
    no_empty_rows = np.zeros(1, np.bool_)  # an empty row has weights 0, so its gradient is 0 anyway

    def work(part):
        grad_weights_of = _work_array(part, p.queries, p.keys, q.dtype)
        dropped = _work_array(part, p.queries, p.keys, q.dtype) if keep is not None else None
        weights_of = _work_array(part, p.queries, p.keys, q.dtype) if weights is None else None
        for m0, m1, first, last, width, top in part:
            rows, m, h = p.rows(m0, m1, first, last), slice(m0, m1), slice(first, last)
            query, key, value, g = p.q[m, h], p.k[m, h, :width], p.v[m, h, :width], grad_out[m, h]
            halves, key_halves = (
                _halves_of_queries(p.queries, width, top),
                _halves_of_keys(p.queries, width, top),
            )
            if weights is None:  # made again, as attention_forward made them
                made = weights_of(m1 - m0, last - first, p.keys)
                flat_block, block = made.reshape(rows.stop - rows.start, p.keys), made[..., :width]
                _weights_into(p, flat_block, block, rows, query, key, halves, scale, empty)
            else:
                flat_block, block = flat_weights[rows], weights[m, h, :, :width]
            grad_weights = grad_weights_of(m1 - m0, last - first, p.keys)
            grad_block = grad_weights[..., :width]
            for upper, lower in halves:
                np.matmul(
                    g[..., upper, :],
                    value[..., lower, :].swapaxes(-1, -2),
                    out=grad_block[..., upper, lower],
                )
            # the quarter the products skipped (reused memory: it may hold anything)
            if top < width:
                grad_block[..., : p.queries // 2, top:] = 0
            if keep is not None:
                block = np.multiply(
                    block, p.keep[m, h, :, :width], out=dropped(m1 - m0, last - first, width)
                )
                block *= keep_scale
                grad_block *= p.keep[m, h, :, :width]
                grad_block *= keep_scale
            for columns, below in key_halves:  # block is 0 past each row's stop
                np.matmul(
                    block[..., below, columns].swapaxes(-1, -2),
                    g[..., below, :],
                    out=grad_v[m, h, columns],
                )
            # softmax backward in place
            flat_grad = grad_weights.reshape(rows.stop - rows.start, p.keys)
            _softmax_backward_rows(
                flat_block,
                flat_grad,
                scale,
                p.flat_stops[rows],
                p.allowed,
                p.allowed_rows(rows),
                no_empty_rows,
                flat_grad,
                0,
                rows.stop - rows.start,
            )
            for upper, lower in halves:
                np.matmul(
                    grad_block[..., upper, lower],
                    key[..., lower, :],
                    out=grad_q[m, h][..., upper, :],
                )
            for columns, below in key_halves:
                np.matmul(
                    grad_block[..., below, columns].swapaxes(-1, -2),
                    query[..., below, :],
                    out=grad_k[m, h, columns],
                )
            grad_k[m, h, width:] = 0  # keys past the chunk's width take no part
            grad_v[m, h, width:] = 0

    p.run(work)
    return tuple(
        grad.reshape(shape)
        for grad, shape in zip((grad_q, grad_k, grad_v), (q.shape, k.shape, v.shape))
    )
