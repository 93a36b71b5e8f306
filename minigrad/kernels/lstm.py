"""The LSTM over whole sequences, arrays in and out (its Function: minigrad/ops/lstm.py).

Three pieces:
- layout: `PackedLayout` packs a right-padded batch step by step, like PyTorch's
  PackedSequence: sequences sorted by length, step s holding the batch_sizes[s] still
  running (a prefix of the previous step's rows), padded positions left out. The reverse
  direction uses the same layout with other time indices (lengths[b] - 1 - s);
- recurrence: `direction_forward` / `direction_backward` run one direction. With xh the
  packed [x_t | h_{t-1}] rows and weight = [weight_ih | weight_hh], each step is one GEMM
  gates = xh[s] @ weight.T and one step kernel (kernels.lstm_cell_forward) that writes
  c[s], h[s] and h into the next step's xh; backward runs the steps in reverse (the step
  kernel, then one GEMM giving dL/dx_t and dL/dh_{t-1}) and ends with one GEMM over all
  steps, dL/dweight = grad_gates.T @ xh;
- threads: `layer_forward` / `layer_backward` cut a layer into independent tasks (its two
  directions, or two halves of the batch for one direction) for `_runtime.run_tasks`;
- inference: `layer_inference` is layer_forward for when no backward will follow (no_grad,
  inference_mode, or nothing that needs a gradient). It keeps no gates, cells or [x | h] rows:
  the input projection x @ weight_ih.T is one GEMM per block of steps (BLOCK_ROWS rows, a
  buffer reused), each step adds h_{t-1} @ weight_hh.T, and kernels.lstm_cell_inference
  updates the state (h, c) in place. Same numbers as layer_forward up to float rounding.
"""

import numpy as np

from . import _runtime, lstm_cell_backward, lstm_cell_forward, lstm_cell_inference

# ---------------------------------------------------------------------------------------
# Layout


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
    total              N, the number of packed rows
    """

    def __init__(self, lengths, reverse=False, members=None):
        """lengths (B,) of the whole batch, each >= 1; members: the batch rows this layout
        covers (default all). order, rows and every batch index above index the batch."""
        lengths = np.asarray(lengths, dtype=np.int64)
        members = np.arange(lengths.shape[0]) if members is None else np.asarray(members)
        batch = members.shape[0]
        self.order = members[np.argsort(-lengths[members], kind="stable")]
        self.lengths = lengths[self.order]
        longest = int(self.lengths[0]) if batch else 0
        # batch_sizes[s] = number of sequences longer than s
        self.batch_sizes = batch - np.searchsorted(
            self.lengths[::-1], np.arange(longest), side="right"
        )
        self.offsets = np.cumsum(self.batch_sizes) - self.batch_sizes
        self.total = int(self.batch_sizes.sum())
        step = np.repeat(np.arange(longest), self.batch_sizes)
        slot = np.arange(self.total) - self.offsets[step]
        self.rows = self.order[slot]
        self.times = self.lengths[slot] - 1 - step if reverse else step
        self.last = self.offsets[self.lengths - 1] + np.arange(batch)
        starts, sizes = self.offsets.tolist(), self.batch_sizes.tolist()
        self.steps = [(starts[s], sizes[s], starts[s - 1] if s else None) for s in range(longest)]

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
# Recurrence: one direction over the packed rows


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
        c_prev = c0[:size] if previous is None else cell[previous : previous + size]
        lstm_cell_forward(gates[start:stop], bias, c_prev, cell[start:stop], hidden[start:stop])
        if s + 1 < len(steps):  # the sequences still running start the next step from this h
            next_start, next_size, _ = steps[s + 1]
            xh[next_start : next_start + next_size, input_size:] = hidden[start : start + next_size]
    return gates, cell, hidden


def direction_backward(
    xh, weight, c0, layout, gates, cell, grad_hidden, grad_h_last, grad_c_last, need_grad_x=True
):
    """Backward of direction_forward.

    grad_hidden (N, H): dL/dh from the layer's output, packed; grad_h_last, grad_c_last
    (B, H): dL/dh_n, dL/dc_n in sorted order. Returns (grad_x_packed (N, I) or None,
    grad_weight (4H, I + H), grad_bias (4H,), grad_h0, grad_c0), the last two sorted.
    """
    input_size = xh.shape[1] - c0.shape[1]
    grad_gates = np.empty_like(gates)
    grad_h = np.array(grad_h_last, copy=True)
    grad_c = np.array(grad_c_last, copy=True)
    # per step: [dL/dx_t | dL/dh_{t-1}] = grad_gates[s] @ [weight_ih | weight_hh]
    grad_xh = np.empty_like(xh) if need_grad_x else None
    weight_hh = weight[:, input_size:]
    for start, size, previous in reversed(layout.steps):
        stop = start + size
        c_prev = c0[:size] if previous is None else cell[previous : previous + size]
        lstm_cell_backward(
            gates[start:stop],
            c_prev,
            cell[start:stop],
            grad_hidden[start:stop],
            grad_h[:size],
            grad_c[:size],
            grad_gates[start:stop],
        )
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
# A layer: its directions (or halves of the batch) as tasks on two threads


class LayerState:
    """What layer_forward leaves for layer_backward (kept on the autograd context)."""

    def __init__(self, x_shape, tasks, weights, c0, batch_first):
        self.x_shape, self.tasks, self.weights = x_shape, tasks, weights
        self.c0, self.batch_first = c0, batch_first
        self.saved = []  # per task: (xh, gates, cell)


def _plan(lengths, directions):
    """The independent tasks of a layer as (direction, PackedLayout): one per direction,
    or, for one direction on two threads, the batch dealt out in two halves (alternate
    sequences in length order, so that both halves get the same amount of work)."""
    if directions == 2 or not _runtime.two_threads() or len(lengths) < 2:
        return [(d, PackedLayout(lengths, reverse=(d == 1))) for d in range(directions)]
    by_length = np.argsort(-lengths, kind="stable")
    return [(0, PackedLayout(lengths, members=by_length[half::2])) for half in (0, 1)]


def layer_forward(x, directions, h0, c0, lengths, batch_first):
    """One LSTM layer, one or two directions, over a right-padded batch.

    x (B, T, I) if batch_first else (T, B, I); directions: per direction (forward first)
    (weight_ih (4H, I), weight_hh (4H, H), bias (4H,) = bias_ih + bias_hh); h0, c0
    (D, B, H), D = len(directions); lengths (B,) int64 in [1, T]. The second direction
    runs in reverse within each sequence's length.
    Returns output (B, T, D*H) or (T, B, D*H) with zeros at padded positions, h_n and c_n
    (D, B, H) (states at each sequence's last step), and a LayerState for layer_backward.
    """
    input_size, hidden_size = x.shape[2], h0.shape[2]
    tasks = _plan(lengths, len(directions))
    concatenated = [
        (np.concatenate([weight_ih, weight_hh], axis=1), bias)
        for weight_ih, weight_hh, bias in directions
    ]
    state = LayerState(x.shape, tasks, concatenated, c0, batch_first)
    output = np.zeros(x.shape[:2] + (len(directions) * hidden_size,), dtype=x.dtype)
    h_n, c_n = np.empty_like(h0), np.empty_like(c0)

    def run(task):
        d, layout = task
        weight, bias = concatenated[d]
        xh = np.empty((layout.total, input_size + hidden_size), dtype=x.dtype)
        xh[:, :input_size] = layout.gather(x, batch_first)
        xh[: len(layout.order), input_size:] = h0[d][layout.order]
        gates, cell, hidden = direction_forward(xh, weight, bias, c0[d][layout.order], layout)
        layout.scatter(hidden, output[..., d * hidden_size : (d + 1) * hidden_size], batch_first)
        h_n[d][layout.order] = hidden[layout.last]
        c_n[d][layout.order] = cell[layout.last]
        return xh, gates, cell

    state.saved = _runtime.run_tasks(run, tasks)
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
    grad_xs = (
        [np.zeros(state.x_shape, dtype=state.c0.dtype) for _ in range(directions)]
        if need_grad_x
        else None
    )

    def run(task_and_saved):
        (d, layout), (xh, gates, cell) = task_and_saved
        grad_hidden = layout.gather(
            grad_output[..., d * hidden_size : (d + 1) * hidden_size], state.batch_first
        )
        grad_x_packed, grad_weight, grad_bias, grad_h, grad_c = direction_backward(
            xh,
            state.weights[d][0],
            state.c0[d][layout.order],
            layout,
            gates,
            cell,
            grad_hidden,
            grad_h_n[d][layout.order],
            grad_c_n[d][layout.order],
            need_grad_x,
        )
        grad_h0[d][layout.order] = grad_h
        grad_c0[d][layout.order] = grad_c
        if need_grad_x:
            layout.scatter(grad_x_packed, grad_xs[d], state.batch_first)
        return grad_weight, grad_bias

    results = _runtime.run_tasks(run, list(zip(state.tasks, state.saved)))
    grad_weights = []
    for d in range(directions):  # a direction split over two threads adds up its halves
        shares = [result for (direction, _), result in zip(state.tasks, results) if direction == d]
        grad_weight, grad_bias = (sum(parts) for parts in zip(*shares))
        grad_weights.append((grad_weight[:, :input_size], grad_weight[:, input_size:], grad_bias))
    if need_grad_x:
        for other in grad_xs[1:]:
            grad_xs[0] += other
    return (grad_xs[0] if need_grad_x else None), grad_h0, grad_c0, grad_weights


# ---------------------------------------------------------------------------------------
# Inference: the forward pass alone, nothing kept for a backward

# Rows of the input projection made at once: one GEMM of this many rows runs as fast per row as
# a bigger one, and its (rows, 4H) result (2 MB at H = 128, float32) stays in cache until the
# steps of the block have read it.
BLOCK_ROWS = 1024


def _blocks(steps):
    """The steps in blocks of consecutive steps of about BLOCK_ROWS packed rows (at least one
    step each), as (first step, stop step, first packed row, stop packed row)."""
    blocks, first = [], 0
    while first < len(steps):
        stop = first + 1
        while stop < len(steps) and steps[stop][0] + steps[stop][1] - steps[first][0] <= BLOCK_ROWS:
            stop += 1
        last_start, last_size, _ = steps[stop - 1]
        blocks.append((first, stop, steps[first][0], last_start + last_size))
        first = stop
    return blocks


def direction_inference(x, weight_ih, weight_hh, bias, h, c, layout, out, batch_first):
    """Run one direction forward only.

    x (B, T, I) or (T, B, I); weight_ih (4H, I), weight_hh (4H, H), bias (4H,); h, c (B', H)
    in the layout's sorted order: in the initial state, out each sequence's state after its
    last step (B' = the sequences the layout covers). out: (B, T, H) or (T, B, H) (a view),
    written at the valid positions.
    """
    size_all, hidden_size = h.shape
    weight_ih_t, weight_hh_t = weight_ih.T, weight_hh.T  # views: BLAS reads them transposed
    largest = max((stop - start for _, _, start, stop in _blocks(layout.steps)), default=0)
    input_gates = np.empty((largest, weight_ih.shape[0]), dtype=x.dtype)
    hidden_gates = np.empty((size_all, weight_ih.shape[0]), dtype=x.dtype)
    hidden = np.empty((largest, hidden_size), dtype=x.dtype)
    for first, stop, row0, row1 in _blocks(layout.steps):
        rows, times = layout.rows[row0:row1], layout.times[row0:row1]
        block_x = x[rows, times] if batch_first else x[times, rows]
        np.matmul(block_x, weight_ih_t, out=input_gates[: row1 - row0])
        for start, size, _ in layout.steps[first:stop]:
            local = start - row0
            np.matmul(h[:size], weight_hh_t, out=hidden_gates[:size])
            lstm_cell_inference(
                input_gates[local : local + size], hidden_gates[:size], bias, c[:size], h[:size]
            )
            hidden[local : local + size] = h[:size]
        if batch_first:
            out[rows, times] = hidden[: row1 - row0]
        else:
            out[times, rows] = hidden[: row1 - row0]


def layer_inference(x, directions, h0, c0, lengths, batch_first):
    """layer_forward's output, h_n and c_n, computed without keeping anything for a backward
    (the arguments are layer_forward's; weights as (weight_ih, weight_hh, bias) per direction)."""
    hidden_size = h0.shape[2]
    output = np.zeros(x.shape[:2] + (len(directions) * hidden_size,), dtype=x.dtype)
    h_n, c_n = np.empty_like(h0), np.empty_like(c0)

    def run(task):
        d, layout = task
        weight_ih, weight_hh, bias = directions[d]
        h, c = h0[d][layout.order], c0[d][layout.order]  # copies, updated in place
        out = output[..., d * hidden_size : (d + 1) * hidden_size]
        direction_inference(x, weight_ih, weight_hh, bias, h, c, layout, out, batch_first)
        h_n[d][layout.order], c_n[d][layout.order] = h, c

    _runtime.run_tasks(run, _plan(lengths, len(directions)))
    return output, h_n, c_n
