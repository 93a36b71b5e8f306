"""The comparison ops (minigrad/ops/comparison.py: signbit, isclose, eq ...): values and dtypes
against torch for float, integer and bool inputs.
"""

import numpy as np
import pytest

import minigrad as mg
from op_checks import check_against_torch, inf, nan

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_signbit(dtype):
    x = np.array(
        [-2.0, -0.0, 0.0, 3.0, -inf, inf, nan] if dtype.startswith("float") else [-2, 0, 1]
    ).astype(dtype)
    check_against_torch(mg.signbit, torch.signbit, [x], dtype, grad=False)
    check_against_torch(mg.Tensor.signbit, torch.Tensor.signbit, [x], dtype, grad=False)
