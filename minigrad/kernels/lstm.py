"""The LSTM recurrence over whole sequences: packed layout, step kernels, forward and backward drivers.

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

Gate order i, f, g, o (PyTorch's): rows [0:H) input gate, [H:2H) forget gate,
[2H:3H) cell candidate, [3H:4H) output gate.

Speed notes (2-core dev machine, AVX-512, float32, batch 128, hidden 128):
- The cell kernel makes one pass over the step's gates; numpy's composition makes
  ~12 passes with temporaries. It vectorises because (a) each gate is a slice indexed
  from 0 (an index like `z[H + j]` needs a negative-index check that blocks LLVM's
  vectoriser), (b) error_model="numpy" (Python's ZeroDivisionError check on `1 / x`
  blocks it too), and (c) exp is plain arithmetic (see `_exp_f32`): the pip llvmlite
  has no SVML, so math.exp/math.tanh are scalar libm calls (8x slower here).
- Everything else is BLAS: per direction 6 x 2*N*128*512 flops (26 GFLOP for
  N = 32768), ~85% of the time. Measured (one thread, N = 32768, I = H = 128): a
  128x(256x512) GEMM per step runs at the same ~120 GFLOPS as a 128x(128x512) one,
  while the one big (N, 128) @ (128, 512) input projection reaches ~96 GFLOPS and
  writes a 64 MB array that the steps read back. Projecting x inside the per-step
  GEMM made forward 96 -> 88 ms and backward 169 -> 164 ms per direction, and
  removed a gather of the previous states for dL/dweight_hh.
"""

import contextlib
import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import BACKEND

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
# Step kernels: numpy twins (the reference), then the Numba versions


def _sigmoid_numpy(x):
    return (np.tanh(x * 0.5) + 1) * 0.5  # no overflow for large |x|, unlike 1 / (1 + exp(-x))


def cell_forward_numpy(gates, bias, c_prev, c_out, h_out):
    """One LSTM step for n sequences, in place.

    gates (n, 4H): in: [x | h_prev] @ [weight_ih | weight_hh].T; out: the gate
    activations i, f, g, o of gates + bias. bias (4H,) = bias_ih + bias_hh.
    c_prev (n, H); writes c_out = f * c_prev + i * g and h_out = o * tanh(c_out).
    All arrays C-contiguous, one dtype; c_out and h_out do not overlap the inputs.
    """
    hidden = c_prev.shape[1]
    z = gates + bias
    gates[:, :2 * hidden] = _sigmoid_numpy(z[:, :2 * hidden])
    gates[:, 2 * hidden:3 * hidden] = np.tanh(z[:, 2 * hidden:3 * hidden])
    gates[:, 3 * hidden:] = _sigmoid_numpy(z[:, 3 * hidden:])
    i, f, g, o = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
    c_out[...] = f * c_prev + i * g
    h_out[...] = o * np.tanh(c_out)


def cell_backward_numpy(gates, c_prev, c, grad_h_out, grad_h, grad_c, grad_gates):
    """Backward of one LSTM step for n sequences.

    gates (n, 4H) the activations i, f, g, o saved by cell_forward; c_prev, c (n, H).
    grad_h_out (n, H): dL/dh of this step from the layer's output; grad_h (n, H): dL/dh
    from the next step (through weight_hh); grad_c (n, H): in dL/dc from the next step,
    out dL/dc_prev. Writes grad_gates (n, 4H): dL/d(pre-activations) in gate order.
    """
    hidden = c.shape[1]
    i, f, g, o = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
    tanh_c = np.tanh(c)
    dh = grad_h + grad_h_out
    dc = grad_c + dh * o * (1 - tanh_c * tanh_c)
    grad_gates[:, :hidden] = dc * g * i * (1 - i)
    grad_gates[:, hidden:2 * hidden] = dc * c_prev * f * (1 - f)
    grad_gates[:, 2 * hidden:3 * hidden] = dc * i * (1 - g * g)
    grad_gates[:, 3 * hidden:] = dh * tanh_c * o * (1 - o)
    grad_c[...] = dc * f


if BACKEND == "numba":  # the numpy backend never imports Numba
    from llvmlite import ir
    from numba import njit, types
    from numba.extending import intrinsic, overload

    # FMA contraction only: no reassociation, which could fold the two-part ln2 of
    # the range reduction below back into one constant and lose accuracy.
    _FLAGS = {"contract"}

    @intrinsic
    def _float32_from_bits(typingctx, bits):
        """Reinterpret an int32's bits as a float32 (a no-op the vectoriser understands)."""
        if bits != types.int32:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.FloatType())

        return types.float32(types.int32), codegen

    @njit(cache=True, fastmath=_FLAGS)
    def _exp_f32(x):
        """exp(x) for float32 x in plain arithmetic, so that loops calling it vectorise.

        exp(x) = 2**n * exp(r) with n = round(x / ln2), r = x - n * ln2 in [-ln2/2, ln2/2]
        (ln2 split in a high part with few mantissa bits, so n * ln2_high is exact, and
        the rest); exp(r) by its Taylor series to r**7 (truncation error < 6e-9
        relative); 2**n written straight into the exponent bits. x is clamped to
        [-87.3, 88.3] so that 2**n stays a normal float: exp of anything below gives
        ~1e-38 instead of 0, of anything above ~2e38 instead of inf, which is all that
        sigmoid and tanh need. Within 2 ulp of np.exp on that range; NaN propagates.
        """
        x = min(max(x, np.float32(-87.3)), np.float32(88.3))
        n = np.floor(x * np.float32(1.4426950408889634) + np.float32(0.5))
        r = x - n * np.float32(0.693145751953125)
        r = r - n * np.float32(1.4286068203094173e-06)
        p = np.float32(1 / 5040)
        p = p * r + np.float32(1 / 720)
        p = p * r + np.float32(1 / 120)
        p = p * r + np.float32(1 / 24)
        p = p * r + np.float32(1 / 6)
        p = p * r + np.float32(1 / 2)
        p = p * r + np.float32(1)
        p = p * r + np.float32(1)
        return p * _float32_from_bits(np.int32((np.int32(n) + np.int32(127)) << np.int32(23)))

    def _sigmoid(x):
        """1 / (1 + exp(-x)), inside Numba kernels only (float32: fast exp; float64: libm)."""
        raise NotImplementedError

    def _tanh(x):
        """tanh(x), inside Numba kernels only (float32: 1 - 2 / (1 + exp(2x)); float64: libm)."""
        raise NotImplementedError

    @overload(_sigmoid)
    def _sigmoid_overload(x):
        if x == types.float32:
            return lambda x: np.float32(1) / (np.float32(1) + _exp_f32(-x))
        if x == types.float64:
            return lambda x: 1.0 / (1.0 + math.exp(-x))
        return None

    @overload(_tanh)
    def _tanh_overload(x):
        if x == types.float32:
            # absolute error ~1e-7 near 0 (where tanh(x) ~ x), a few ulp elsewhere
            return lambda x: np.float32(1) - np.float32(2) / (np.float32(1) + _exp_f32(x + x))
        if x == types.float64:
            return lambda x: math.tanh(x)
        return None

    @njit(cache=True, nogil=True, fastmath=_FLAGS, error_model="numpy")
    def cell_forward_numba(gates, bias, c_prev, c_out, h_out):
        """One LSTM step for n sequences, in place (contract: cell_forward_numpy)."""
        hidden = c_prev.shape[1]
        bias_i, bias_f = bias[:hidden], bias[hidden:2 * hidden]
        bias_g, bias_o = bias[2 * hidden:3 * hidden], bias[3 * hidden:]
        for row in range(gates.shape[0]):
            z = gates[row]
            i, f, g, o = z[:hidden], z[hidden:2 * hidden], z[2 * hidden:3 * hidden], z[3 * hidden:]
            c0, c1, h1 = c_prev[row], c_out[row], h_out[row]
            # one short loop per output array: each vectorises on its own
            for j in range(hidden):
                i[j] = _sigmoid(i[j] + bias_i[j])
            for j in range(hidden):
                f[j] = _sigmoid(f[j] + bias_f[j])
            for j in range(hidden):
                g[j] = _tanh(g[j] + bias_g[j])
            for j in range(hidden):
                o[j] = _sigmoid(o[j] + bias_o[j])
            for j in range(hidden):
                c1[j] = f[j] * c0[j] + i[j] * g[j]
            for j in range(hidden):
                h1[j] = o[j] * _tanh(c1[j])

    @njit(cache=True, nogil=True, fastmath=_FLAGS, error_model="numpy")
    def cell_backward_numba(gates, c_prev, c, grad_h_out, grad_h, grad_c, grad_gates):
        """Backward of one LSTM step for n sequences (contract: cell_backward_numpy)."""
        hidden = c.shape[1]
        one = np.float32(1)  # promotes exactly to float64 in float64 kernels
        for row in range(gates.shape[0]):
            a, d = gates[row], grad_gates[row]
            i, f, g, o = a[:hidden], a[hidden:2 * hidden], a[2 * hidden:3 * hidden], a[3 * hidden:]
            di, df, dg, do = d[:hidden], d[hidden:2 * hidden], d[2 * hidden:3 * hidden], d[3 * hidden:]
            c0, c1 = c_prev[row], c[row]
            dh_out, dh, dc = grad_h_out[row], grad_h[row], grad_c[row]
            for j in range(hidden):
                tanh_c = _tanh(c1[j])
                dh_j = dh[j] + dh_out[j]
                dc_j = dc[j] + dh_j * o[j] * (one - tanh_c * tanh_c)
                di[j] = dc_j * g[j] * i[j] * (one - i[j])
                df[j] = dc_j * c0[j] * f[j] * (one - f[j])
                dg[j] = dc_j * i[j] * (one - g[j] * g[j])
                do[j] = dh_j * tanh_c * o[j] * (one - o[j])
                dc[j] = dc_j * f[j]

    cell_forward, cell_backward = cell_forward_numba, cell_backward_numba
else:
    cell_forward, cell_backward = cell_forward_numpy, cell_backward_numpy


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


def _find_openblas_threads():
    """(set_num_threads, get_num_threads) of numpy's bundled OpenBLAS via ctypes, or None.

    Looks only at the libraries numpy's wheels ship (numpy.libs/ on Linux and Windows,
    numpy/.dylibs/ on macOS) and the symbol names their builds use."""
    import ctypes
    import glob

    here = os.path.dirname(np.__file__)
    paths = (glob.glob(os.path.join(here, os.pardir, "numpy.libs", "*openblas*"))
             + glob.glob(os.path.join(here, ".dylibs", "*openblas*")))
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("scipy_openblas", ""), ("openblas", "64_"), ("openblas", "")):
            setter = getattr(library, f"{prefix}_set_num_threads{suffix}", None)
            getter = getattr(library, f"{prefix}_get_num_threads{suffix}", None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype, getter.restype = [ctypes.c_int], None, ctypes.c_int
                return setter, getter
    return None


_openblas_threads = _find_openblas_threads()

# Run the two directions of a bidirectional layer (or two halves of the batch of a
# one-directional one) on two threads, each with single-threaded BLAS, when numpy's
# OpenBLAS thread count can be set; otherwise one after the other (each BLAS call then
# uses OpenBLAS's own threads).
parallel_directions = _openblas_threads is not None

_worker = None  # a one-thread pool for the second task, made on first use (per process)
_worker_pid = None
_blas_lock = threading.Lock()
_blas_users = 0  # layers running with single-threaded OpenBLAS right now
_blas_saved = None  # OpenBLAS's thread count before the first of them started


@contextlib.contextmanager
def _single_threaded_openblas():
    """OpenBLAS on one thread inside the block (process-wide: OpenBLAS has no per-thread
    setting; openblas_set_num_threads_local is global too in its pthreads build). Nested
    or concurrent blocks restore the original count when the last one leaves."""
    global _blas_users, _blas_saved
    set_threads, get_threads = _openblas_threads
    with _blas_lock:
        if _blas_users == 0:
            _blas_saved = get_threads()
            set_threads(1)
        _blas_users += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_users -= 1
            if _blas_users == 0:
                set_threads(_blas_saved)


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
    global _worker, _worker_pid
    if len(tasks) == 1 or not parallel_directions:
        return [run(task) for task in tasks]
    if _worker is None or _worker_pid != os.getpid():  # a forked child has no worker thread
        _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="minigrad-lstm")
        _worker_pid = os.getpid()
    with _single_threaded_openblas():
        second = _worker.submit(run, tasks[1])
        try:
            first = run(tasks[0])
        finally:
            second_result = second.result()  # wait for it even if the first task failed
    return [first, second_result]
