"""The LSTM step kernels: one fused call per time step for the gates, the cell and the
hidden state (forward), and their gradients (backward). numpy twins first (the
reference, and the numpy backend), then the Numba versions. lstm.py runs them over
whole sequences.

Gate order i, f, g, o (PyTorch's): rows [0:H) input gate, [H:2H) forget gate,
[2H:3H) cell candidate, [3H:4H) output gate.

Speed notes (2-core dev machine, AVX-512, float32, batch 128, hidden 128):
- The cell kernel makes one pass over the step's gates; numpy's composition makes
  ~12 passes with temporaries. It vectorises because (a) each gate is a slice indexed
  from 0 (an index like `z[H + j]` needs a negative-index check that blocks LLVM's
  vectoriser), (b) error_model="numpy" (Python's ZeroDivisionError check on `1 / x`
  blocks it too), and (c) exp is plain arithmetic (see `_exp_f32`): the pip llvmlite
  has no SVML, so math.exp/math.tanh are scalar libm calls (8x slower here).
"""

import math

import numpy as np

from . import BACKEND


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


