"""minigrad/kernels/_buffers.py: the pool of reused output arrays."""

import numpy as np
import pytest

from minigrad.kernels import _buffers


@pytest.fixture
def pool(monkeypatch):
    fresh = _buffers._Pool()
    monkeypatch.setattr(_buffers, "_pool", fresh)
    return fresh


def test_a_buffer_is_handed_out_again_only_when_nothing_refers_to_it(pool):
    first = _buffers.empty((512, 1024), np.float32)  # 2 MiB: kept
    view = first[3:, ::2]
    del first
    # same bytes, but the view still holds the first
    second = _buffers.empty((1024, 512), np.float32)
    assert not np.shares_memory(view, second) and len(pool.buffers[2 << 20]) == 2
    del view
    # the first is free again: handed out, no new one
    third = _buffers.empty((2048, 256), np.float32)
    assert third.flags.c_contiguous and third.shape == (2048, 256) and third.dtype == np.float32
    assert not np.shares_memory(third, second) and len(pool.buffers[2 << 20]) == 2


def test_buffers_of_other_sizes_are_not_handed_out_and_small_ones_not_kept(pool):
    big = _buffers.empty((1 << 19,), np.float32)  # 2 MiB
    big_address = big.__array_interface__["data"][0]
    del big
    other = _buffers.empty((1 << 19,), np.float64)  # 4 MiB: another size
    assert other.__array_interface__["data"][0] != big_address
    small = _buffers.empty((10,), np.float32)
    assert small.nbytes < _buffers.MIN_BYTES and set(pool.buffers) == {1 << 21, 1 << 22}


@pytest.mark.parametrize(
    "nbytes, expected",
    [
        (1 << 20, 1 << 20),
        ((1 << 20) + 1, 5 << 18),  # the next class: 1.25 MiB
        (5 << 18, 5 << 18),
        ((5 << 18) + 1, 6 << 18),
        ((7 << 18) + 1, 1 << 21),
        (3_000_000_000, 3 << 30),
    ],
)
def test_sizes_are_rounded_up_to_four_classes_per_doubling(nbytes, expected):
    assert _buffers.size_class(nbytes) == expected


def test_arrays_of_nearby_sizes_share_the_kept_buffers_of_their_class(pool):
    """Batches of other lengths ask for other sizes: they reuse, the pool does not grow."""
    rng = np.random.default_rng(0)
    for rows in rng.integers(20_000, 24_000, 50):  # 2.4-2.9 MB float32 arrays, each dropped
        array = _buffers.empty((int(rows), 32), np.float32)
        assert array.shape == (rows, 32) and array.flags.c_contiguous and array.flags.writeable
        array[...] = 1.0  # the whole array is ours to write
    assert set(pool.buffers) <= {5 << 19, 3 << 20}  # 2.5 and 3 MiB classes
    # at most two of each: the previous array is still referred to while the next is made
    assert sum(len(same) for same in pool.buffers.values()) <= 4


def test_a_smaller_array_of_a_class_never_shares_memory_with_a_live_one(pool):
    live = _buffers.empty((300_000,), np.float32)  # 1.2 MB: the 1.25 MiB class
    other = _buffers.empty((290_000,), np.float32)  # same class, while the first is alive
    assert not np.shares_memory(live, other)
    del live
    again = _buffers.empty((310_000,), np.float32)
    assert not np.shares_memory(again, other) and len(pool.buffers[5 << 18]) == 2


def test_the_pool_keeps_at_most_max_bytes_of_free_buffers(pool, monkeypatch):
    monkeypatch.setattr(_buffers, "MAX_BYTES", 5 << 20)
    held = [_buffers.empty((1 << 20,), np.uint8) for _ in range(3)]  # 3 MiB in use
    for size in (2, 3, 4, 2, 3):  # MiB, each dropped at once
        _buffers.empty((size << 20,), np.uint8)
    kept = sum(b.nbytes for same in pool.buffers.values() for b in same)
    assert kept == pool.kept and kept <= max(_buffers.MAX_BYTES, 3 << 20) + (4 << 20)
    assert all(
        any(np.shares_memory(b, h) for same in pool.buffers.values() for b in same) for h in held
    )  # in use: never dropped


def test_free_buffers_of_sizes_not_asked_for_lately_are_dropped(pool):
    """An evaluation on batches sorted by length: ever larger sizes, each for a while only."""
    for mib in range(2, 40):
        for _ in range(3):
            _buffers.empty((mib << 20,), np.uint8)  # dropped at once
    # (dropped when a new array is made: the last classes, of a few sizes each, may stay)
    assert min(pool.buffers) >= 24 << 20 and pool.kept <= 6 * (40 << 20)
    assert pool.kept == sum(b.nbytes for same in pool.buffers.values() for b in same)


def test_sizes_asked_for_every_step_stay_while_other_sizes_come_and_go(pool):
    """A training loop: the same sizes each step, and one that changes (distinct words)."""
    steady = (4 << 20, 16 << 20, 8 << 20)  # more than twice the changing size
    addresses = None
    for step in range(30):
        # first a size of this step's own (1-1.6 MiB), while last step's arrays are free
        held = [_buffers.empty(((1 << 20) + step * (20 << 10),), np.uint8)]
        held += [_buffers.empty((size,), np.uint8) for size in steady]  # alive for the step
        now = [array.__array_interface__["data"][0] for array in held[1:]]
        assert addresses is None or now == addresses  # the same buffers: no new pages
        addresses = now
        del held


def test_a_free_buffer_up_to_twice_the_size_serves_a_smaller_request(pool):
    """Batches longest first: the shorter ones after the first reuse its arrays."""
    first = _buffers.empty((4 << 20,), np.uint8)
    address = first.__array_interface__["data"][0]
    del first
    smaller = _buffers.empty((3 << 20,), np.float32).view(np.uint8)  # 12 MiB: too big
    assert smaller.__array_interface__["data"][0] != address
    del smaller
    for mib in (3, 2):  # 3 MiB and 2 MiB (half): the free 4 MiB buffer
        again = _buffers.empty((mib << 20,), np.uint8)
        assert again.__array_interface__["data"][0] == address and again.nbytes == mib << 20
        del again
    tiny = _buffers.empty((3 << 19,), np.uint8)  # 1.5 MiB: under half, a buffer of its own
    assert tiny.__array_interface__["data"][0] != address


def test_a_buffer_in_use_is_never_dropped_however_old(pool, monkeypatch):
    monkeypatch.setattr(_buffers, "STALE_TAKES", 0)
    old = _buffers.empty((2 << 20,), np.uint8)
    old[:] = 7
    for mib in range(3, 12):
        _buffers.empty((mib << 20,), np.uint8)
    assert (old == 7).all() and any(b is old.base for b in pool.buffers[2 << 20])


def test_two_threads_never_get_the_same_buffer_at_once(pool):
    import threading

    errors = []

    def work(value):
        for _ in range(200):
            a = _buffers.empty((1 << 18,), np.float32)
            a.fill(value)
            if not (a == value).all():
                errors.append(value)

    threads = [threading.Thread(target=work, args=(v,)) for v in (1.0, 2.0)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
