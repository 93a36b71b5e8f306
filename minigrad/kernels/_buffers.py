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
written again. The pool keeps at most MAX_BYTES of arrays (least recently used ones of each size go
first). `empty` is thread-safe.

Sizes are rounded up to a class (four per doubling: 2^k, 1.25, 1.5 and 1.75 x 2^k bytes), and an
array is handed out as the first bytes of a kept one of its class. Why: the sentiment model's
batches differ in length and in distinct words, so most of its arrays differ in size from step
to step; kept only for their exact size, they were never asked for again and filled the pool to
MAX_BYTES (the dot model's training: a peak of 1.8-1.95 GiB instead of 0.9). A class wastes at
most a quarter (on average about a tenth) of an array.
"""

import math
import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20  # smaller arrays come from malloc's own free lists at no page-fault cost
MAX_BYTES = 1 << 30
CLASSES_PER_DOUBLING = 4


def size_class(nbytes):
    """nbytes rounded up to the next of the sizes the pool keeps (see the module docstring)."""
    step = max((1 << (nbytes.bit_length() - 1)) // CLASSES_PER_DOUBLING, 1)
    return -(-nbytes // step) * step


class _Pool:
    def __init__(self):
        self.buffers = {}  # nbytes -> flat uint8 arrays of that size, least recently used first
        self.kept = 0  # bytes in self.buffers
        self.lock = threading.Lock()

    @staticmethod
    def _free(same, index):
        return sys.getrefcount(same[index]) == 2  # the list's reference and the argument's

    def take(self, nbytes):
        """A flat uint8 array of nbytes: a free kept one, or a new one (kept if big enough).
        nbytes is one of size_class's sizes. Only the arrays of that size are looked at (with
        two threads making arrays, a scan of every kept one was a few ms of GIL-holding Python
        per training step)."""
        with self.lock:
            same = self.buffers.get(nbytes)
            if same:
                for index in range(len(same)):
                    if self._free(same, index):
                        same.append(same.pop(index))
                        return same[-1]
            buffer = np.empty(nbytes, np.uint8)
            if nbytes >= MIN_BYTES:
                self.buffers.setdefault(nbytes, []).append(buffer)
                self.kept += nbytes
                if self.kept > MAX_BYTES:
                    self._shrink(buffer)
            return buffer

    def _shrink(self, keep):
        """Drop free arrays (least recently used first in each size) until MAX_BYTES is kept."""
        for size, same in list(self.buffers.items()):
            index = 0
            while self.kept > MAX_BYTES and index < len(same):
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
