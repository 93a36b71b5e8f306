"""The counting ops (minigrad/ops/counting.py: unique, bincount, histc, searchsorted, bucketize
...): a number as the input or the boundaries, against torch.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, DimError, ShapeError
from op_checks import assert_clear_error
from parity import I, N, R, check, raises_like_torch

torch = pytest.importorskip("torch")


def test_searchsorted_with_a_number_and_bucketize_of_a_number():
    for B in (mg, torch):
        found = (
            B.searchsorted(B.tensor([1, 3, 5]), 3).item(),
            B.bucketize(3, B.tensor([1, 3, 5])).item(),
        )
        assert found == (1, 1)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_histc_refuses_data_whose_range_is_not_finite(bad):
    raises_like_torch(
        lambda: mg.histc(mg.tensor([1.0, bad, 2.0]), bins=4),
        lambda: torch.histc(torch.tensor([1.0, bad, 2.0]), bins=4),
        must_mention=["not finite"],
    )


# -- tables: against torch (parity.check), float64 gradchecks, the errors of bad arguments --


NAN = np.nan


# name -> (call(B, *tensors), arrays): values, indices and dtypes (no gradient)
VALUES_ONLY = {
    "unique": (lambda B, x: B.unique(x), [N(3, 1, 2, 1, 3)]),
    "unique inverse, counts": (
        lambda B, x: B.unique(x, return_inverse=True, return_counts=True),
        [N(3, 1, 2, 1, 3, 3).reshape(2, 3)],
    ),
    "unique NaN kept apart": (
        lambda B, x: x.unique(return_inverse=True, return_counts=True),
        [N(3, 1, NAN, 1, NAN, 2)],
    ),
    "unique sorted=False": (lambda B, x: B.unique(x, sorted=False), [I(3, 1, 2, 1)]),
    "unique dim": (
        lambda B, x: B.unique(x, dim=0, return_inverse=True, return_counts=True),
        [I(1, 2, 1, 2, 0, 5).reshape(3, 2)],
    ),
    "unique dim -1": (
        lambda B, x: B.unique(x, return_counts=True, dim=-1),
        [I(1, 1, 0, 2, 2, 3).reshape(2, 3)],
    ),
    "unique empty": (lambda B, x: B.unique(x, return_inverse=True, return_counts=True), [R(0)]),
    "unique bools": (lambda B, x: B.unique(x > 0), [R(6)]),
    "unique_consecutive": (
        lambda B, x: B.unique_consecutive(x, return_inverse=True, return_counts=True),
        [I(1, 1, 2, 2, 3, 1, 1, 2)],
    ),
    "unique_consecutive NaN": (lambda B, x: x.unique_consecutive(), [N(NAN, NAN, 1, 1)]),
    "unique_consecutive dim": (
        lambda B, x: B.unique_consecutive(x, return_counts=True, dim=0),
        [I(1, 2, 1, 2, 0, 5, 1, 2).reshape(4, 2)],
    ),
    "unique_consecutive 2-d flat": (
        lambda B, x: B.unique_consecutive(x, return_inverse=True),
        [I(1, 1, 2, 2, 2, 1).reshape(2, 3)],
    ),
    "bincount": (lambda B, x: B.bincount(x), [I(0, 2, 2, 5)]),
    "bincount minlength": (lambda B, x: x.bincount(minlength=8), [I(0, 2, 2, 5)]),
    "bincount weights": (lambda B, x, w: B.bincount(x, w), [I(0, 2, 2, 1), R(4)]),
    "bincount int weights": (
        lambda B, x, w: B.bincount(x, weights=w),
        [I(0, 2, 2, 1), I(1, 2, 3, 4)],
    ),
    "bincount empty": (lambda B, x: B.bincount(x), [I()]),
    "histc": (lambda B, x: B.histc(x, bins=4, min=0, max=3), [N(0, 1, 1.5, 3, 3, -1, 4, 2.999)]),
    "histc data range": (lambda B, x: x.histc(5), [R(20)]),
    "histc one value": (lambda B, x: B.histc(x, bins=4), [N(1, 1)]),
    "histc empty": (lambda B, x: B.histc(x, bins=3), [R(0)]),
    "bucketize": (lambda B, x, b: B.bucketize(x, b), [N(0, 1, 2, 3, 5, 6, 9), N(1, 3, 5, 7)]),
    "bucketize right": (
        lambda B, x, b: B.bucketize(x, b, right=True),
        [N(0, 1, 2, 3, 5, 6, 9), N(1, 3, 5, 7)],
    ),
    "bucketize 2-d int32": (
        lambda B, x, b: B.bucketize(x, b, out_int32=True),
        [R(2, 3), N(-1, 0, 1)],
    ),
    "searchsorted": (lambda B, s, v: B.searchsorted(s, v), [N(1, 3, 5, 7), N(3, 6, 9, 0)]),
    "searchsorted right": (
        lambda B, s, v: B.searchsorted(s, v, right=True),
        [N(1, 3, 3, 7), N(3, 6, 9, 0)],
    ),
    "searchsorted side": (
        lambda B, s, v: B.searchsorted(s, v, side="right"),
        [N(1, 3, 3, 7), N(3, 6, 9, 0)],
    ),
    "searchsorted rows": (
        lambda B, s, v: B.searchsorted(s, v),
        [N(1, 3, 5, 2, 4, 6).reshape(2, 3), N(3, 6, 0, 5).reshape(2, 2)],
    ),
    "searchsorted sorter": (
        lambda B, s, v: B.searchsorted(s, v, sorter=B.argsort(s)),
        [N(5, 1, 3), N(2, 4)],
    ),
    "searchsorted NaN": (lambda B, s, v: B.searchsorted(s, v), [N(1, 2, NAN), N(NAN, 1.5)]),
    "searchsorted ints": (lambda B, s, v: B.searchsorted(s, v), [I(1, 3, 5), I(3, 4)]),
    "argwhere": (lambda B, x: B.argwhere(x), [N(0, 1, 0, 2, 0, 3).reshape(2, 3)]),
    "argwhere empty": (lambda B, x: x.argwhere(), [R(0, 2)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(VALUES_ONLY))
def test_matches_torch(name, dtype):
    call, arrays = VALUES_ONLY[name]
    check(call, *arrays, dtype=dtype, grad=False)


# name -> (call, the error, a fragment of its message)
BAD_ARGUMENTS = {
    "bincount of floats": (lambda: mg.bincount(mg.zeros(3)), DTypeError, "float32"),
    "bincount negative": (lambda: mg.bincount(mg.tensor([1, -1])), ArgumentError, "-1"),
    "bincount 2-d": (lambda: mg.bincount(mg.tensor([[1]])), DimError, "(1, 1)"),
    "bincount weights of another shape": (
        lambda: mg.bincount(mg.tensor([1, 2]), mg.zeros(3)),
        ShapeError,
        "(3,)",
    ),
    "histc of ints": (lambda: mg.histc(mg.tensor([1, 2])), DTypeError, "int64"),
    "histc max below min": (lambda: mg.histc(mg.zeros(3), 4, 2, 1), ArgumentError, "min=2, max=1"),
    "histc zero bins": (lambda: mg.histc(mg.zeros(3), 0), ArgumentError, "0"),
    "searchsorted side and right": (
        lambda: mg.searchsorted(mg.zeros(3), mg.zeros(1), right=True, side="left"),
        ArgumentError,
        "side='left'",
    ),
    "searchsorted rows that do not fit": (
        lambda: mg.searchsorted(mg.zeros(2, 3), mg.zeros(3, 1)),
        ShapeError,
        "(3, 1)",
    ),
    "bucketize 2-d boundaries": (
        lambda: mg.bucketize(mg.zeros(3), mg.zeros(2, 2)),
        DimError,
        "(2, 2)",
    ),
    "unique dim of a 0-d tensor": (lambda: mg.unique(mg.tensor(1.0), dim=0), DimError, "0-d"),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    assert_clear_error(*BAD_ARGUMENTS[name])
