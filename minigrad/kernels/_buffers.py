"""Output arrays for the kernels that make big ones (matrix products, attention, softmax),
reused once nothing refers to them any more.

Why: the operating system hands out a fresh big array as untouched pages and zeroes each one
on first write. On the 2-core VM that cost more than the arithmetic: filling a fresh
(1024, 256, 256) float32 array took 70-115 ms, filling a reused one 31 ms, and a training
step of the MHSA model spent a third of its CPU time in the kernel
(benchmarks/README-kernels.md, "Reusing output arrays"). So arrays of at least MIN_BYTES are
kept here after use and handed out again.

When is an array free? A numpy view keeps its base array alive, so a kept array whose only
references are this pool's own is referred to by no tensor, no view, no graph node: it can
be written again. The pool keeps at most MAX_BYTES of arrays (least recently used ones go
first). `empty` is thread-safe.
"""

import math
import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20  # smaller arrays come from malloc's own free lists at no page-fault cost
MAX_BYTES = 1 << 30


class _Pool:
    def __init__(self):
        self.buffers = []  # flat uint8 arrays, least recently used first
        self.lock = threading.Lock()

    def _free(self, index):
        return sys.getrefcount(self.buffers[index]) == 2  # the list's reference and the argument's

    def take(self, nbytes):
        """A flat uint8 array of nbytes: a free kept one, or a new one (kept if big enough)."""
        with self.lock:
            for index in range(len(self.buffers)):
                if self.buffers[index].nbytes == nbytes and self._free(index):
                    self.buffers.append(self.buffers.pop(index))
                    return self.buffers[-1]
            buffer = np.empty(nbytes, np.uint8)
            if nbytes >= MIN_BYTES:
                self.buffers.append(buffer)
                kept = sum(b.nbytes for b in self.buffers)
                index = 0
                while kept > MAX_BYTES and index < len(self.buffers) - 1:
                    if self._free(index):
                        kept -= self.buffers.pop(index).nbytes
                    else:
                        index += 1
            return buffer


_pool = _Pool()


def empty(shape, dtype):
    """np.empty(shape, dtype), C-contiguous, possibly an array used before (see the module docstring)."""
    shape, dtype = tuple(shape), np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    return _pool.take(nbytes).view(dtype).reshape(shape)


def empty_like_layout(array, shape=None):
    """empty() of `shape` (default array's) laid out in memory as `array` is: the axis with the
    largest stride outermost. So a result of a permuted input can be permuted back for free."""
    shape = array.shape if shape is None else tuple(shape)
    order = sorted(range(array.ndim), key=lambda axis: -abs(array.strides[axis]))
    return empty(tuple(shape[axis] for axis in order), array.dtype).transpose(np.argsort(order))
