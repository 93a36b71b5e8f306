"""The LSTM recurrence over whole sequences, arrays in and out (its Function and the input
projection before it: minigrad/ops/lstm.py).

The input projection comes in done: `input_gates` (R, 4H) per direction holds rows of
x @ weight_ih.T + bias_ih + bias_hh, and `rows` (B, T) (or (T, B)) names the row each position
reads, so that many positions may share one (an embedding's repeated tokens). Three pieces:
- layout: `PackedLayout` packs a right-padded batch step by step, like PyTorch's
  PackedSequence: sequences sorted by length, step s holding the batch_sizes[s] still
  running (a prefix of the previous step's rows), padded positions left out. The reverse
  direction uses the same layout with other time indices (lengths[b] - 1 - s);
- recurrence: `direction_forward` / `direction_backward` run one direction. Each step is one
  GEMM gates = h_{t-1} @ weight_hh.T and one step kernel (kernels.lstm_cell_forward) that adds
  the position's input gates and writes the activations, c and h; backward runs the steps in
  reverse (the step kernel, then one GEMM giving dL/dh_{t-1}), in blocks of steps; after each
  block one GEMM adds its share of dL/dweight_hh = grad_gates.T @ h_prev, and a scatter-add
  its grad_gates into the input gates' rows (kernels.embedding_backward: the same sum as an
  embedding's);
- threads: `layer_forward` / `layer_backward` cut a layer into independent tasks (its two
  directions, or two halves of the batch for one direction) for `_threads.run_tasks`;
- inference: `layer_inference` is layer_forward for when no backward will follow (no_grad,
  inference_mode, or nothing that needs a gradient). It keeps no gates or cells:
  kernels.lstm_cell_inference updates the state (h, c) in place. Same numbers as
  layer_forward up to float rounding.
"""

import numpy as np

from . import _threads, embedding_backward, lstm_cell_backward
from . import lstm_cell_forward, lstm_cell_inference

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


def direction_forward(input_gates, packed_rows, weight_hh, h0, c0, layout):
    """Run one direction.

    input_gates (R, 4H); packed_rows (N,): the row of input_gates of each packed position;
    weight_hh (4H, H); h0, c0 (B, H) sorted. Returns gates (N, 4H) activations, cell (N, H)
    and hidden (N, H), packed.
    """
    gates = np.empty((layout.total, weight_hh.shape[0]), dtype=h0.dtype)
    cell = np.empty((layout.total, h0.shape[1]), dtype=h0.dtype)
    hidden = np.empty_like(cell)
    # a contiguous copy (256 KiB at H = 128): BLAS's no-transpose kernel is faster for these
    # short products than reading the transposed view (13% at 128 rows, 43% at 16)
    weight_t = np.ascontiguousarray(weight_hh.T)
    for start, size, previous in layout.steps:
        stop = start + size
        if previous is None:
            h_prev, c_prev = h0[:size], c0[:size]
        else:  # the sequences still running are a prefix of the previous step's
            h_prev, c_prev = hidden[previous : previous + size], cell[previous : previous + size]
        np.matmul(h_prev, weight_t, out=gates[start:stop])
        lstm_cell_forward(
            gates[start:stop],
            input_gates,
            packed_rows[start:stop],
            c_prev,
            cell[start:stop],
            hidden[start:stop],
        )
    return gates, cell, hidden


# backward's rows per block of steps: a block's gate gradients (~4 MiB at 4H = 512, float32)
# stay in cache for the two sums made from them (benchmarks/README.md, "The LSTM backward in
# blocks of steps")
BLOCK_ROWS = 2048


def step_blocks(steps, rows):
    """Consecutive steps in blocks of about `rows` packed rows (a step is never split), in
    order: [(begin, end, the block's steps)], rows [begin, end) being the block's."""
    blocks, first = [], 0
    for s in range(1, len(steps) + 1):
        if s == len(steps) or steps[s][0] + steps[s][1] - steps[first][0] > rows:
            blocks.append((steps[first][0], steps[s - 1][0] + steps[s - 1][1], steps[first:s]))
            first = s
    return blocks


def direction_backward(
    weight_hh, h0, c0, layout, gates, cell, hidden, grad_hidden, grad_h, grad_c, packed_rows, rows
):
    """Backward of direction_forward.

    grad_hidden (N, H): dL/dh from the layer's output, packed; grad_h, grad_c (B, H): in
    dL/dh_n, dL/dc_n in sorted order, out dL/dh0, dL/dc0 (updated in place); packed_rows (N,)
    as in direction_forward, rows: the input gates' row count R. Returns (grad_input_gates
    (R, 4H), each row the sum of the gate gradients of the positions that read it, and
    grad_weight_hh (4H, H)).

    The steps run in reverse, in blocks of about BLOCK_ROWS packed rows: the gate gradients
    of a block are made in a small buffer, and once the block is done its two sums over
    positions are made while the buffer is still in cache: dL/dweight_hh += grad_gates.T @
    h_prev (one GEMM per block) and the scatter-add into the input gates' rows
    (kernels.embedding_backward). No (N, 4H) array of gate gradients is made.
    """
    four_h, hidden_size = weight_hh.shape
    grad_table = np.zeros((rows, four_h), dtype=gates.dtype)
    grad_weight_hh = np.zeros((four_h, hidden_size), dtype=gates.dtype)
    product = np.empty_like(grad_weight_hh)
    blocks = step_blocks(layout.steps, BLOCK_ROWS)
    longest = max((end - begin for begin, end, _ in blocks), default=0)
    block_grads = np.empty((longest, four_h), dtype=gates.dtype)
    block_h_prev = np.empty((longest, hidden_size), dtype=gates.dtype)  # h_{t-1} of each row
    for begin, end, block_steps in reversed(blocks):
        for start, size, previous in reversed(block_steps):
            stop = start + size
            grads = block_grads[start - begin : stop - begin]
            if previous is None:
                c_prev, h_prev = c0[:size], h0[:size]
            else:
                c_prev, h_prev = (
                    cell[previous : previous + size],
                    hidden[previous : previous + size],
                )
            block_h_prev[start - begin : stop - begin] = h_prev
            lstm_cell_backward(
                gates[start:stop],
                c_prev,
                cell[start:stop],
                grad_hidden[start:stop],
                grad_h[:size],
                grad_c[:size],
                grads,
            )
            np.matmul(grads, weight_hh, out=grad_h[:size])
        grads = block_grads[: end - begin]
        grad_weight_hh += np.matmul(grads.T, block_h_prev[: end - begin], out=product)
        embedding_backward(packed_rows[begin:end], grads, rows, out=grad_table)
    return grad_table, grad_weight_hh


# ---------------------------------------------------------------------------------------
# A layer: its directions (or halves of the batch) as tasks on two threads


class LayerState:
    """What layer_forward leaves for layer_backward (kept on the autograd context)."""

    def __init__(self, tasks, table_rows, weights_hh, h0, c0, batch_first):
        self.tasks, self.table_rows = tasks, table_rows
        self.weights_hh, self.h0, self.c0, self.batch_first = weights_hh, h0, c0, batch_first
        self.saved = []  # per task: (packed_rows, gates, cell, hidden)


def _plan(lengths, directions):
    """The independent tasks of a layer as (direction, PackedLayout): one per direction,
    or, for one direction on two threads, the batch dealt out in two halves (alternate
    sequences in length order, so that both halves get the same amount of work)."""
    if directions == 2 or not _threads.two_threads() or len(lengths) < 2:
        return [(d, PackedLayout(lengths, reverse=(d == 1))) for d in range(directions)]
    by_length = np.argsort(-lengths, kind="stable")
    return [(0, PackedLayout(lengths, members=by_length[half::2])) for half in (0, 1)]


def layer_forward(input_gates, rows, weights_hh, h0, c0, lengths, batch_first):
    """One LSTM layer, one or two directions, over a right-padded batch.

    input_gates: per direction (forward first) (R, 4H), C-contiguous; rows (B, T) if
    batch_first else (T, B) int64 in [0, R): the row each position reads (any value where
    padded); weights_hh: per direction (4H, H); h0, c0 (D, B, H), D = len(weights_hh);
    lengths (B,) int64 in [1, T]. The second direction runs in reverse within each
    sequence's length.
    Returns output (B, T, D*H) or (T, B, D*H) with zeros at padded positions, h_n and c_n
    (D, B, H) (states at each sequence's last step), and a LayerState for layer_backward.
    """
    hidden_size, directions = h0.shape[2], len(weights_hh)
    output = np.zeros(rows.shape + (directions * hidden_size,), dtype=h0.dtype)
    tasks = _plan(lengths, directions)
    table_rows = [table.shape[0] for table in input_gates]
    state = LayerState(tasks, table_rows, weights_hh, h0, c0, batch_first)
    h_n, c_n = np.empty_like(h0), np.empty_like(c0)

    def run(task):
        d, layout = task
        packed_rows = layout.gather(rows, batch_first)
        gates, cell, hidden = direction_forward(
            input_gates[d],
            packed_rows,
            weights_hh[d],
            h0[d][layout.order],
            c0[d][layout.order],
            layout,
        )
        layout.scatter(hidden, output[..., d * hidden_size : (d + 1) * hidden_size], batch_first)
        h_n[d][layout.order] = hidden[layout.last]
        c_n[d][layout.order] = cell[layout.last]
        return packed_rows, gates, cell, hidden

    state.saved = _threads.run_tasks(run, tasks)
    return output, h_n, c_n, state


def layer_backward(state, grad_output, grad_h_n, grad_c_n):
    """Gradients of layer_forward's outputs with respect to its inputs.

    Returns per direction grad_input_gates (R, 4H), then grad_h0, grad_c0 (D, B, H) and per
    direction grad_weight_hh (4H, H).
    """
    hidden_size = state.h0.shape[2]
    grad_h0, grad_c0 = np.empty_like(state.h0), np.empty_like(state.c0)

    def run(task_and_saved):
        (d, layout), (packed_rows, gates, cell, hidden) = task_and_saved
        grad_hidden = layout.gather(
            grad_output[..., d * hidden_size : (d + 1) * hidden_size], state.batch_first
        )
        grad_h, grad_c = grad_h_n[d][layout.order], grad_c_n[d][layout.order]  # copies
        grad_table, grad_weight_hh = direction_backward(
            state.weights_hh[d],
            state.h0[d][layout.order],
            state.c0[d][layout.order],
            layout,
            gates,
            cell,
            hidden,
            grad_hidden,
            grad_h,
            grad_c,
            packed_rows,
            state.table_rows[d],
        )
        grad_h0[d][layout.order] = grad_h
        grad_c0[d][layout.order] = grad_c
        return grad_table, grad_weight_hh

    results = _threads.run_tasks(run, list(zip(state.tasks, state.saved)))
    grad_tables, grad_weights_hh = [], []
    for d in range(len(state.weights_hh)):  # a direction split over two threads adds its halves
        shares = [result for (direction, _), result in zip(state.tasks, results) if direction == d]
        grad_table, grad_weight_hh = (sum(parts) for parts in zip(*shares))
        grad_tables.append(grad_table)
        grad_weights_hh.append(grad_weight_hh)
    return grad_tables, grad_h0, grad_c0, grad_weights_hh


# ---------------------------------------------------------------------------------------
# Inference: the forward pass alone, nothing kept for a backward


def direction_inference(input_gates, packed_rows, weight_hh, h, c, layout):
    """Run one direction forward only.

    input_gates, packed_rows, weight_hh as in direction_forward; h, c (B, H) in the layout's
    sorted order: in the initial state, out each sequence's state after its last step.
    Returns hidden (N, H), packed.
    """
    hidden = np.empty((layout.total, h.shape[1]), dtype=h.dtype)
    hidden_gates = np.empty((h.shape[0], weight_hh.shape[0]), dtype=h.dtype)
    weight_t = np.ascontiguousarray(weight_hh.T)  # as in direction_forward
    for start, size, _ in layout.steps:
        np.matmul(h[:size], weight_t, out=hidden_gates[:size])
        lstm_cell_inference(
            input_gates, packed_rows[start : start + size], hidden_gates[:size], c[:size], h[:size]
        )
        hidden[start : start + size] = h[:size]
    return hidden


def layer_inference(input_gates, rows, weights_hh, h0, c0, lengths, batch_first):
    """layer_forward's output, h_n and c_n (same arguments), computed without keeping anything
    for a backward."""
    hidden_size = h0.shape[2]
    output = np.zeros(rows.shape + (len(weights_hh) * hidden_size,), dtype=h0.dtype)
    h_n, c_n = np.empty_like(h0), np.empty_like(c0)

    def run(task):
        d, layout = task
        h, c = h0[d][layout.order], c0[d][layout.order]  # copies, updated in place
        packed_rows = layout.gather(rows, batch_first)
        hidden = direction_inference(input_gates[d], packed_rows, weights_hh[d], h, c, layout)
        layout.scatter(hidden, output[..., d * hidden_size : (d + 1) * hidden_size], batch_first)
        h_n[d][layout.order], c_n[d][layout.order] = h, c

    _threads.run_tasks(run, _plan(lengths, len(weights_hh)))
    return output, h_n, c_n
