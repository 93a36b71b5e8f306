"""The comparison ops (minigrad/ops/comparison.py: signbit, isclose, eq ...): values and dtypes
against torch for float, integer and bool inputs.
"""

import numpy as np
import pytest

import minigrad as mg
from op_checks import check_against_torch, inf, nan
from parity import assert_close

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_signbit(dtype):
    x = np.array(
        [-2.0, -0.0, 0.0, 3.0, -inf, inf, nan] if dtype.startswith("float") else [-2, 0, 1]
    ).astype(dtype)
    check_against_torch(mg.signbit, torch.signbit, [x], dtype, grad=False)
    check_against_torch(mg.Tensor.signbit, torch.Tensor.signbit, [x], dtype, grad=False)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
@pytest.mark.parametrize("value", [0xFFFFFFFF, 0xFF, -1, 2**40 + 5, 7])
@pytest.mark.parametrize("method", ["__or__", "__and__", "__xor__", "__ror__", "__rxor__"])
def test_bitwise_ops_read_a_large_python_int_by_its_bits(dtype, value, method):
    ours = getattr(mg.tensor([1, 2, 200], dtype=getattr(mg, dtype)), method)(value)
    theirs = getattr(torch.tensor([1, 2, 200], dtype=getattr(torch, dtype)), method)(value)
    assert_close(ours, theirs, same_dtype=True)
