"""The float32 row kernels of attention compute in float32: no float64 arithmetic slips into
their compiled loops. In Numba a float32 scalar times a Python int (`scale * 0`) or divided by
an int is float64, and an accumulator started that way makes the whole loop convert each
element to float64 and back at half the vector width (measured: the attention mean's softmax
pass 1.44 -> 0.81 ms per sequence of 256, benchmarks/README.md). Each kernel is compiled
afresh here (the on-disk cache keeps no IR to inspect) and its LLVM IR searched for a float
widened to a double; the row max of the softmax family's kernels is searched for a vector max
(kernels/_maxnum.py)."""

import re

import numpy as np
import pytest
from numba import njit

from minigrad.kernels import attention_mean, cross_entropy, softmax

F32 = np.float32
KERNELS = {
    "attention_mean._softmax_into_mean": (
        attention_mean._softmax_into_mean,
        lambda: (np.ones((2, 3, 3), F32), F32(0.5), np.empty((2, 3), F32)),
    ),
    "attention_mean._softmax_mean_backward": (
        attention_mean._softmax_mean_backward,
        lambda: (np.ones((2, 3, 3), F32), np.ones((2, 3), F32), F32(0.5)),
    ),
    "softmax._softmax_rows": (
        softmax._softmax_rows,
        lambda: (
            np.ones((2, 3), F32),
            F32(0.5),
            np.array([3]),
            np.ones((2, 3), bool),
            np.array([0, 1]),
            F32(0),
            np.empty((2, 3), F32),
            np.empty(2, bool),
            0,
            2,
        ),
    ),
    "softmax._softmax_backward_rows": (
        softmax._softmax_backward_rows,
        lambda: (
            np.ones((2, 3), F32),
            np.ones((2, 3), F32),
            F32(0.5),
            np.array([3]),
            np.ones((2, 3), bool),
            np.array([0, 1]),
            np.zeros(1, bool),
            np.empty((2, 3), F32),
            0,
            2,
        ),
    ),
}


def fresh_ir(kernel, arguments):
    """The LLVM IR of kernel compiled afresh with its own options, for arguments()."""
    options = {k: v for k, v in kernel.targetoptions.items() if k not in ("cache", "nopython")}
    fresh = njit(**options)(kernel.py_func)
    fresh(*arguments())
    return fresh.inspect_llvm(fresh.signatures[0])


@pytest.mark.parametrize("name", KERNELS)
def test_float32_kernel_has_no_float64_arithmetic(name):
    ir = fresh_ir(*KERNELS[name])
    widened = re.findall(r"fpext (?:<\d+ x )?float>? .* to (?:<\d+ x )?double", ir)
    assert not widened, f"{name}: float32 widened to float64 {len(widened)} times: {widened[:3]}"


VECTOR_MAX = {
    **{
        name: KERNELS[name]
        for name in ("attention_mean._softmax_into_mean", "softmax._softmax_rows")
    },
    "softmax._log_softmax_rows": (
        softmax._log_softmax_rows,
        lambda: (np.ones((2, 3), F32), np.empty((2, 3), F32), 0, 2),
    ),
    "cross_entropy._cross_entropy_rows": (
        cross_entropy._cross_entropy_rows,
        lambda: (
            np.ones((2, 3), F32),
            np.zeros(2, np.int64),
            -100,
            np.empty((2, 3), F32),
            np.empty(2),
            0,
            2,
        ),
    ),
}


@pytest.mark.parametrize("name", VECTOR_MAX)
def test_row_max_is_vectorised(name):
    """The softmax family's row max is llvm.maxnum (kernels/_maxnum.py), which LLVM vectorises
    (a compare-and-select max stayed scalar: 0.69 against 0.12 ns per float32 element)."""
    ir = fresh_ir(*VECTOR_MAX[name])
    assert re.search(r"llvm\.(?:vector\.reduce\.fmax|maxnum\.v\d+f32)", ir), name
