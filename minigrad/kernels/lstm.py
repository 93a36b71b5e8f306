"""The LSTM recurrence over whole sequences: packed layout, forward and backward drivers.
The step kernels (one fused call per time step) are in lstm_cell.py.

Arrays in, arrays out; the autograd Function that calls these lives in nn/lstm.py.

Packed layout. A batch of right-padded sequences is sorted by length (longest first)
and laid out step by step, like PyTorch's PackedSequence: step s holds the
`batch_sizes[s]` sequences still running, so the rows of step s are
`offsets[s] : offsets[s] + batch_sizes[s]` of every packed (N, .) array, N = sum of
the lengths. The sequences still running at step s are always the first
batch_sizes[s] of the sorted order, so the previous step's state for them is a
contiguous prefix of the previous step's rows. For the reverse direction, step s of
sequence b reads time step lengths[b] - 1 - s: the same layout, other time indices.
Padded positions never enter the computation.

Per direction, with xh (N, I + H) the packed [x_t | h_{t-1}] rows and
weight = [weight_ih | weight_hh] (4H, I + H):
    for each step s:
        gates[s] = xh[s] @ weight.T               one GEMM (BLAS)
        c[s], h[s] = cell(gates[s] + bias, c[s-1])  one fused kernel call
        xh[s+1][:, I:] = h[s]
and backward runs the steps in reverse (one kernel call + one GEMM each, giving
dL/dx_t and dL/dh_{t-1} together), then one GEMM over all steps for
dL/d[weight_ih | weight_hh] = grad_gates.T @ xh.

Speed notes (2-core dev machine, AVX-512, float32, batch 128, hidden 128):
- Besides the cell kernel (lstm_cell.py), everything is BLAS: per direction 6 x 2*N*128*512 flops (26 GFLOP for
  N = 32768), ~85% of the time. Measured (one thread, N = 32768, I = H = 128): a
  128x(256x512) GEMM per step runs at the same ~120 GFLOPS as a 128x(128x512) one,
  while the one big (N, 128) @ (128, 512) input projection reaches ~96 GFLOPS and
  writes a 64 MB array that the steps read back. Projecting x inside the per-step
  GEMM made forward 96 -> 88 ms and backward 169 -> 164 ms per direction, and
  removed a gather of the previous states for dL/dweight_hh.
"""

import numpy as np

from . import _runtime
from .lstm_cell import cell_backward, cell_forward

# ---------------------------------------------------------------------------------------
# Packed layout


class PackedLayout:
    """Where each (sequence, time step) of a right-padded batch sits in the packed arrays.

    order (B,)         batch index of each sorted slot (longest sequence first)
    lengths (B,)       lengths in sorted order
    (B here is the number of sequences the layout covers: all, or a share of the batch)
    batch_sizes (S,)   sequences running at step s (S = the longest length)
    offsets (S,)       first packed row of step s
    rows, times (N,)   packed row p holds sequence rows[p] at time step times[p]
    last (B,)          packed row of the final step of each sorted slot
    steps              list of (start, size, previous_start) per step, as Python ints
                       (previous_start None for step 0)
    """

    def __init__(self, lengths, reverse=False, members=None):
        """lengths (B,) of the whole batch; members: the batch rows this layout covers
        (default all). order, rows and every batch index above are indices into the batch."""
        lengths = np.asarray(lengths, dtype=np.int64)
        members = np.arange(lengths.shape[0]) if members is None else np.asarray(members)
        batch = members.shape[0]
        self.order = members[np.argsort(-lengths[members], kind="stable")]
        self.lengths = lengths[self.order]
        longest = int(self.lengths[0])
        # batch_sizes[s] = number of sequences longer than s
        self.batch_sizes = batch - np.searchsorted(self.lengths[::-1], np.arange(longest), side="right")
        self.offsets = np.concatenate(([0], np.cumsum(self.batch_sizes)[:-1]))
        total = int(self.batch_sizes.sum())
        step = np.repeat(np.arange(longest), self.batch_sizes)
        slot = np.arange(total) - self.offsets[step]
        self.rows = self.order[slot]
        self.times = self.lengths[slot] - 1 - step if reverse else step
        self.last = self.offsets[self.lengths - 1] + np.arange(batch)
        starts = self.offsets.tolist()
        sizes = self.batch_sizes.tolist()
        self.steps = [(starts[s], sizes[s], starts[s - 1] if s else None) for s in range(longest)]
        self.total = total

    def gather(self, array, batch_first):
        """Packed (N, F) copy of the valid positions of a (B, T, F) or (T, B, F) array."""
        return array[self.rows, self.times] if batch_first else array[self.times, self.rows]

    def scatter(self, packed, out, batch_first):
        """out[valid positions] = packed (N, F); out is (B, T, F) or (T, B, F), possibly a view."""
        if batch_first:
            out[self.rows, self.times] = packed
        else:
            out[self.times, self.rows] = packed


# ---------------------------------------------------------------------------------------
# One direction over the whole packed batch


def direction_forward(xh, weight, bias, c0, layout):
    """Run one direction.

    xh (N, I + H): x packed in columns [:I], the initial state h0 (sorted) in rows [:B]
    of columns [I:]; the loop fills the rest of columns [I:] with h of the previous step.
    weight = [weight_ih | weight_hh] (4H, I + H); bias (4H,); c0 (B, H) sorted.
    Returns gates (N, 4H) activations, cell (N, H) and hidden (N, H), packed.
    """
    input_size = xh.shape[1] - c0.shape[1]
    gates = np.empty((layout.total, weight.shape[0]), dtype=xh.dtype)
    cell = np.empty((layout.total, c0.shape[1]), dtype=xh.dtype)
    hidden = np.empty_like(cell)
    weight_t = weight.T  # a view: BLAS reads it transposed, no copy
    steps = layout.steps
    for s, (start, size, previous) in enumerate(steps):
        stop = start + size
        np.matmul(xh[start:stop], weight_t, out=gates[start:stop])
        c_prev = c0[:size] if previous is None else cell[previous:previous + size]
        cell_forward(gates[start:stop], bias, c_prev, cell[start:stop], hidden[start:stop])
        if s + 1 < len(steps):  # the sequences still running start the next step from this h
            next_start, next_size, _ = steps[s + 1]
            xh[next_start:next_start + next_size, input_size:] = hidden[start:start + next_size]
    return gates, cell, hidden


def direction_backward(xh, weight, c0, layout, gates, cell, grad_hidden, grad_h_last, grad_c_last,
                       need_grad_x=True):
    """Backward of direction_forward.

    grad_hidden (N, H): dL/dh from the layer's output, packed; grad_h_last, grad_c_last
    (B, H): dL/dh_n, dL/dc_n in sorted order. Returns (grad_x_packed (N, I) or None,
    grad_weight (4H, I + H), grad_bias (4H,), grad_h0, grad_c0), the last two sorted.
    """
    hidden_size = c0.shape[1]
    input_size = xh.shape[1] - hidden_size
    grad_gates = np.empty_like(gates)
    grad_h = np.array(grad_h_last, copy=True)
    grad_c = np.array(grad_c_last, copy=True)
    # per step: [dL/dx_t | dL/dh_{t-1}] = grad_gates[s] @ [weight_ih | weight_hh]
    grad_xh = np.empty_like(xh) if need_grad_x else None
    weight_hh = weight[:, input_size:]
    for start, size, previous in reversed(layout.steps):
        stop = start + size
        c_prev = c0[:size] if previous is None else cell[previous:previous + size]
        cell_backward(gates[start:stop], c_prev, cell[start:stop], grad_hidden[start:stop],
                      grad_h[:size], grad_c[:size], grad_gates[start:stop])
        if need_grad_x:
            np.matmul(grad_gates[start:stop], weight, out=grad_xh[start:stop])
            grad_h[:size] = grad_xh[start:stop, input_size:]
        else:
            np.matmul(grad_gates[start:stop], weight_hh, out=grad_h[:size])
    grad_weight = grad_gates.T @ xh  # sums over all steps in one GEMM
    grad_bias = grad_gates.sum(axis=0)
    grad_x_packed = grad_xh[:, :input_size] if need_grad_x else None
    return grad_x_packed, grad_weight, grad_bias, grad_h, grad_c


# ---------------------------------------------------------------------------------------
# A layer: one or two directions over a padded batch


class LayerState:
    """What layer_forward leaves for layer_backward (kept on the autograd context)."""

    def __init__(self, x_shape, tasks, weights, c0, batch_first):
        self.x_shape, self.tasks, self.weights = x_shape, tasks, weights
        self.c0, self.batch_first = c0, batch_first
        self.saved = []  # per task: (xh, gates, cell)


def _plan(lengths, directions):
    """The independent pieces of a layer as (direction, PackedLayout): one per direction,
    or, for one direction on two threads, the batch dealt out in two halves (alternate
    sequences in length order, so that both halves get the same amount of work)."""
    if directions == 2 or not parallel_directions or len(lengths) < 2:
        return [(d, PackedLayout(lengths, reverse=(d == 1))) for d in range(directions)]
    by_length = np.argsort(-lengths, kind="stable")
    return [(0, PackedLayout(lengths, members=by_length[half::2])) for half in (0, 1)]


def layer_forward(x, weights, h0, c0, lengths, batch_first):
    """One LSTM layer, one or two directions, over a right-padded batch.

    x (B, T, I) if batch_first else (T, B, I); weights: per direction (weight_ih (4H, I),
    weight_hh (4H, H), bias (4H,) = bias_ih + bias_hh); h0, c0 (D, B, H), D = len(weights);
    lengths (B,) int64 in [1, T]. The second direction, if any, runs in reverse within
    each sequence's length.
    Returns output (B, T, D*H) or (T, B, D*H) with zeros at padded positions, h_n and c_n
    (D, B, H) (states at each sequence's last step), and a LayerState for layer_backward.
    """
    input_size, hidden_size = x.shape[2], weights[0][1].shape[1]
    tasks = _plan(lengths, len(weights))
    concatenated = [(np.concatenate([weight_ih, weight_hh], axis=1), bias) for weight_ih, weight_hh, bias in weights]
    state = LayerState(x.shape, tasks, concatenated, c0, batch_first)
    output = np.zeros(x.shape[:2] + (len(weights) * hidden_size,), dtype=x.dtype)
    h_n, c_n = np.empty_like(h0), np.empty_like(c0)

    def run(task):
        d, layout = task
        weight, bias = concatenated[d]
        xh = np.empty((layout.total, input_size + hidden_size), dtype=x.dtype)
        xh[:, :input_size] = layout.gather(x, batch_first)
        xh[:len(layout.order), input_size:] = h0[d][layout.order]
        gates, cell, hidden = direction_forward(xh, weight, bias, c0[d][layout.order], layout)
        layout.scatter(hidden, output[..., d * hidden_size:(d + 1) * hidden_size], batch_first)
        h_n[d][layout.order] = hidden[layout.last]
        c_n[d][layout.order] = cell[layout.last]
        return xh, gates, cell

    state.saved = _run_tasks(run, tasks)
    return output, h_n, c_n, state


def layer_backward(state, grad_output, grad_h_n, grad_c_n, need_grad_x=True):
    """Gradients of layer_forward's outputs with respect to its inputs.

    Returns grad_x (or None), grad_h0, grad_c0 (D, B, H) and, per direction,
    (grad_weight_ih, grad_weight_hh, grad_bias).
    """
    input_size, hidden_size = state.x_shape[2], state.c0.shape[2]
    directions = len(state.weights)
    grad_h0, grad_c0 = np.empty_like(state.c0), np.empty_like(state.c0)
    # one dL/dx per direction, so that two directions can scatter at once (two halves of
    # one direction write disjoint rows of the same array)
    grad_xs = [np.zeros(state.x_shape, dtype=state.c0.dtype) for _ in range(directions)] if need_grad_x else None

    def run(task_and_saved):
        (d, layout), (xh, gates, cell) = task_and_saved
        grad_hidden = layout.gather(grad_output[..., d * hidden_size:(d + 1) * hidden_size], state.batch_first)
        grad_x_packed, grad_weight, grad_bias, grad_h, grad_c = direction_backward(
            xh, state.weights[d][0], state.c0[d][layout.order], layout, gates, cell, grad_hidden,
            grad_h_n[d][layout.order], grad_c_n[d][layout.order], need_grad_x)
        grad_h0[d][layout.order] = grad_h
        grad_c0[d][layout.order] = grad_c
        if need_grad_x:
            layout.scatter(grad_x_packed, grad_xs[d], state.batch_first)
        return grad_weight, grad_bias

    results = _run_tasks(run, list(zip(state.tasks, state.saved)))
    grad_weights = []
    for d in range(directions):  # sum the halves of a direction split over two threads
        shares = [result for (direction, _), result in zip(state.tasks, results) if direction == d]
        grad_weight, grad_bias = shares[0]
        for weight_share, bias_share in shares[1:]:
            grad_weight, grad_bias = grad_weight + weight_share, grad_bias + bias_share
        grad_weights.append((grad_weight[:, :input_size], grad_weight[:, input_size:], grad_bias))
    grad_x = None
    if need_grad_x:
        grad_x = grad_xs[0]
        for other in grad_xs[1:]:
            grad_x += other
    return grad_x, grad_h0, grad_c0, grad_weights


# ---------------------------------------------------------------------------------------
# Two threads

# Run the two directions of a bidirectional layer (or two halves of the batch of a
# one-directional one) on two threads, each with single-threaded BLAS, when numpy's
# OpenBLAS thread count can be set; otherwise one after the other (each BLAS call then
# uses OpenBLAS's own threads).
parallel_directions = _runtime.openblas_threads is not None

def _run_tasks(run, tasks):
    """[run(task) for task in tasks]; two tasks run concurrently when possible.

    Why threads: per step, a direction does one small GEMM and one cell kernel, too
    little to split well over OpenBLAS's threads (and the kernel is serial), while the
    two directions (or two halves of the batch) are independent: each gets a core. The
    cell kernels release the GIL (nogil), and so do numpy's matmul and copies. Measured
    on the 2-core machine (bidirectional, batch 128, length 256, 128 -> 128, forward +
    backward, median of 6): 283 ms on two threads with one OpenBLAS thread each, 332 ms
    one direction after the other with two OpenBLAS threads. With other processes busy
    on the machine, the second setting degraded far more (OpenBLAS's threads wait for
    each other: 2.7-41 s per step against 1.1-2.3 s).
    """
    if len(tasks) == 1 or not parallel_directions:
        return [run(task) for task in tasks]
    return _runtime.run_pair(run, tasks)
