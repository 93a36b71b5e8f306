"""The LSTM step as fused Numba kernels: gates, cell and hidden state (forward), their
gradients (backward), and the forward step that keeps no gates (inference). Contracts:
reference.lstm_cell_forward, reference.lstm_cell_backward and reference.lstm_cell_inference;
kernels/lstm.py runs them over whole sequences.

Why a kernel: numpy's composition makes ~12 passes over a step's gates with temporaries;
this makes one. Its loops vectorise because each gate is a slice indexed from 0, the error
model is numpy's, and float32 exp is `_exp.fast_exp` (plain arithmetic; math.exp would be a
scalar libm call). Measurements: benchmarks/README-kernels.md, "LSTM".
"""

import math

import numpy as np
from numba import types
from numba.extending import overload

from ._exp import fast_exp
from ._numba_cache import cached_njit

# FMA contraction only: a cell's few operations gain nothing from reassociation.
_FLAGS = {"contract"}


def _sigmoid(x):
    """1 / (1 + exp(-x)), inside Numba kernels only (float32: fast exp; float64: libm)."""
    raise NotImplementedError


def _tanh(x):
    """tanh(x), inside Numba kernels only (float32: 1 - 2 / (1 + exp(2x)); float64: libm)."""
    raise NotImplementedError


@overload(_sigmoid)
def _sigmoid_overload(x):
    if x == types.float32:
        return lambda x: np.float32(1) / (np.float32(1) + fast_exp(-x))
    if x == types.float64:
        return lambda x: 1.0 / (1.0 + math.exp(-x))
    return None


@overload(_tanh)
def _tanh_overload(x):
    if x == types.float32:
        # absolute error ~1e-7 near 0 (where tanh(x) ~ x), a few ulp elsewhere
        return lambda x: np.float32(1) - np.float32(2) / (np.float32(1) + fast_exp(x + x))
    if x == types.float64:
        return lambda x: math.tanh(x)
    return None


@cached_njit(nogil=True, fastmath=_FLAGS, error_model="numpy")
def lstm_cell_forward(gates, input_gates, rows, c_prev, c_out, h_out):
    """One LSTM step for n sequences, in place (contract: reference.lstm_cell_forward)."""
    hidden = c_prev.shape[1]
    for row in range(gates.shape[0]):
        z, x_part = gates[row], input_gates[rows[row]]
        i, f, g, o = z[:hidden], z[hidden : 2 * hidden], z[2 * hidden : 3 * hidden], z[3 * hidden :]
        x_i, x_f = x_part[:hidden], x_part[hidden : 2 * hidden]
        x_g, x_o = x_part[2 * hidden : 3 * hidden], x_part[3 * hidden :]
        c0, c1, h1 = c_prev[row], c_out[row], h_out[row]
        # one short loop per output array: each vectorises on its own
        for j in range(hidden):
            i[j] = _sigmoid(i[j] + x_i[j])
        for j in range(hidden):
            f[j] = _sigmoid(f[j] + x_f[j])
        for j in range(hidden):
            g[j] = _tanh(g[j] + x_g[j])
        for j in range(hidden):
            o[j] = _sigmoid(o[j] + x_o[j])
        for j in range(hidden):
            c1[j] = f[j] * c0[j] + i[j] * g[j]
        for j in range(hidden):
            h1[j] = o[j] * _tanh(c1[j])


@cached_njit(nogil=True, fastmath=_FLAGS, error_model="numpy")
def lstm_cell_backward(gates, c_prev, c, grad_h_out, grad_h, grad_c, grad_gates):
    """Backward of one LSTM step for n sequences (contract: reference.lstm_cell_backward)."""
    hidden = c.shape[1]
    one = np.float32(1)  # promotes exactly to float64 in float64 kernels
    for row in range(gates.shape[0]):
        a, d = gates[row], grad_gates[row]
        i, f, g, o = a[:hidden], a[hidden : 2 * hidden], a[2 * hidden : 3 * hidden], a[3 * hidden :]
        di, df, dg, do = (
            d[:hidden],
            d[hidden : 2 * hidden],
            d[2 * hidden : 3 * hidden],
            d[3 * hidden :],
        )
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


@cached_njit(nogil=True, fastmath=_FLAGS, error_model="numpy")
def lstm_cell_inference(input_gates, rows, hidden_gates, c, h):
    """One LSTM step for n sequences, keeping nothing for a backward (contract:
    reference.lstm_cell_inference)."""
    hidden = c.shape[1]
    for row in range(c.shape[0]):
        x_part, h_part = input_gates[rows[row]], hidden_gates[row]
        c_row, h_row = c[row], h[row]
        for j in range(hidden):  # each gate a local: nothing written but c and h
            i = _sigmoid(x_part[j] + h_part[j])
            f = _sigmoid(x_part[hidden + j] + h_part[hidden + j])
            k = 2 * hidden + j
            g = _tanh(x_part[k] + h_part[k])
            k = 3 * hidden + j
            o = _sigmoid(x_part[k] + h_part[k])
            cell = f * c_row[j] + i * g
            c_row[j] = cell
            h_row[j] = o * _tanh(cell)
