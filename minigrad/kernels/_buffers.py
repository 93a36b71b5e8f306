"""Output arrays for the kernels that make big ones (matrix products, attention, softmax),
reused once nothing refers to them any more.

Why: the operating system hands out a fresh big array as untouched pages and zeroes each one
on first write. On the 2-core VM that cost more than the arithmetic: filling a fresh
(1024, 256, 256) float32 array took 70-115 ms, filling a reused one 31 ms, and a training
step of the MHSA model spent a third of its CPU time in the kernel
(benchmarks/README-kernels.md, "Reusing output arrays"). So arrays of at least MIN_BYTES are
kept here after use and handed out again.

When is an array free? A numpy view keeps its base array alive, so a kept array whose only
references are this pool's own is referred to by no tensor, no view, no graph node: it can be
written again. `empty` is thread-safe.

Sizes are rounded up to a class (four per doubling: 2^k, 1.25, 1.5 and 1.75 x 2^k bytes), and an
array is handed out as the first bytes of a free kept one of its class, else of the next classes
up to twice its size. Why: the sentiment model's batches differ in length and in distinct
words, so most of its arrays differ in size from step to step; kept only for their exact size,
they were never asked for again and filled the pool to MAX_BYTES (the dot model's training: a
peak of 1.8-1.95 GiB instead of 0.9). A class wastes at most a quarter (on average about a
tenth) of an array, a larger class serving it at most half.

What is dropped: the pool keeps at most MAX_BYTES of arrays (least recently used ones of each
size go first), and when it has to make a new array it first drops the free ones of every size
not asked for in its last STALE_TAKES requests. Why: an evaluation on reviews sorted by length
asks for each size for a few batches only (9 big arrays per batch for the MHSA model); kept up
to MAX_BYTES, those made its evaluation peak at 1.5-1.75 GiB against PyTorch's 1.0 (with the
window, and the longest batch first so that the shorter ones reuse its arrays: 0.8 GiB). A
training step asks for the same sizes every step (the MHSA model: 17 requests, the dot model: 6),
so the window keeps them: dropped and made again, they would be paged in again.
"""

import math
import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20  # smaller arrays come from malloc's own free lists at no page-fault cost
MAX_BYTES = 1 << 30
STALE_TAKES = 20  # requests: more than a training step makes (see the docstring)
CLASSES_PER_DOUBLING = 4


def size_class(nbytes):
    """nbytes rounded up to the next of the sizes the pool keeps (see the module docstring)."""
    step = max((1 << (nbytes.bit_length() - 1)) // CLASSES_PER_DOUBLING, 1)
    return -(-nbytes // step) * step


class _Pool:
    def __init__(self):
        self.buffers = {}  # nbytes -> flat uint8 arrays of that size, least recently used first
        self.kept = 0  # bytes in self.buffers
        self.takes = 0  # requests so far
        self.asked = {}  # nbytes -> self.takes at the latest request of that size
        self.lock = threading.Lock()

    @staticmethod
    def _free(same, index):
        return sys.getrefcount(same[index]) == 2  # the list's reference and the argument's

    def take(self, nbytes):
        """A flat uint8 array of nbytes: a free kept one, or a new one (kept if big enough).
        nbytes is one of size_class's sizes. Only the arrays of that size are looked at, and
        those of the next sizes when none is free (with two threads making arrays, a scan of
        every kept one was a few ms of GIL-holding Python per training step)."""
        with self.lock:
            self.takes += 1
            self.asked[nbytes] = self.takes
            found = self._free_one(nbytes)
            if found is None:  # one of the next classes up, up to twice the size
                for size in sorted(size for size in self.buffers if nbytes < size <= 2 * nbytes):
                    found = self._free_one(size)
                    if found is not None:
                        break
            if found is not None:
                self.asked[found.nbytes] = self.takes
                return found
            self._drop(lambda size: self.takes - self.asked[size] > STALE_TAKES)
            buffer = np.empty(nbytes, np.uint8)
            if nbytes >= MIN_BYTES:
                self.buffers.setdefault(nbytes, []).append(buffer)
                self.kept += nbytes
                if self.kept > MAX_BYTES:
                    self._drop(lambda size: self.kept > MAX_BYTES, keep=buffer)
            return buffer

    def _free_one(self, size):
        """A free kept array of `size` bytes (now the most recently used of them), or None."""
        same = self.buffers.get(size, ())
        for index in range(len(same)):
            if self._free(same, index):
                same.append(same.pop(index))
                return same[-1]
        return None

    def _drop(self, wanted, keep=None):
        """Drop free arrays (least recently used first in each size) while wanted(size)."""
        for size, same in list(self.buffers.items()):
            index = 0
            while index < len(same) and wanted(size):
                if same[index] is not keep and self._free(same, index):
                    self.kept -= same.pop(index).nbytes
                else:
                    index += 1
            if not same:
                del self.buffers[size]


_pool = _Pool()


def empty(shape, dtype):
    """np.empty(shape, dtype), C-contiguous, possibly an array used before (see the module
    docstring)."""
    shape, dtype = tuple(shape), np.dtype(dtype)
    nbytes = int(math.prod(shape)) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    return _pool.take(size_class(nbytes))[:nbytes].view(dtype).reshape(shape)


def empty_like_layout(array, shape=None):
    """empty() of `shape` (default array's) laid out in memory as `array` is: the axis with the
    largest stride outermost. So a result of a permuted input can be permuted back for free."""
    shape = array.shape if shape is None else tuple(shape)
    order = sorted(range(array.ndim), key=lambda axis: -abs(array.strides[axis]))
    return empty(tuple(shape[axis] for axis in order), array.dtype).transpose(np.argsort(order))
