"""Joining tensors (minigrad/ops/join.py: cat, stack, hstack ...): values against numpy,
gradients against float64 central differences, constants among the inputs, and errors that
name the shapes.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, DimError, ShapeError
from op_checks import assert_clear_error, check_gradient, rand, value
from parity import R, check


@pytest.mark.parametrize(
    "dim, shapes",
    [
        (0, [(2, 3), (1, 3), (4, 3)]),
        (1, [(2, 3), (2, 1), (2, 2)]),
        (-1, [(2, 2, 1), (2, 2, 3)]),
        (0, [(3,)]),
    ],
    ids=str,
)
def test_cat(dim, shapes):
    arrays = [rand(*s, seed=30 + i) for i, s in enumerate(shapes)]
    np.testing.assert_array_equal(
        value(lambda *ts: mg.cat(ts, dim), *arrays), np.concatenate(arrays, axis=dim)
    )
    check_gradient(lambda *ts: mg.cat(list(ts), dim=dim), *arrays)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim):
    arrays = [rand(2, 3, seed=40 + i) for i in range(3)]
    np.testing.assert_array_equal(
        value(lambda *ts: mg.stack(ts, dim), *arrays), np.stack(arrays, axis=dim)
    )
    check_gradient(lambda *ts: mg.stack(ts, dim=dim), *arrays)


def test_cat_and_stack_with_a_constant():
    x = rand(2, 2, seed=44)
    check_gradient(
        lambda t: (
            mg.cat([t, np.ones((1, 2))])[1:] * mg.stack([t, t * 2, np.zeros((2, 2))], 1)[:, 1]
        ),
        x,
    )


def test_cat_stack_errors_name_shapes():
    with pytest.raises(ValueError) as info:
        mg.cat([mg.zeros(2, 3), mg.zeros(2, 4)], dim=0)
    assert "(2, 3)" in str(info.value) and "(2, 4)" in str(info.value)
    with pytest.raises(ValueError) as info:
        mg.cat([mg.zeros(2, 3), mg.zeros(2, 3, 1)], dim=1)
    assert "(2, 3)" in str(info.value) and "(2, 3, 1)" in str(info.value)
    with pytest.raises(ValueError) as info:
        mg.stack([mg.zeros(2, 3), mg.zeros(3, 2)])
    assert "(2, 3)" in str(info.value) and "(3, 2)" in str(info.value)
    with pytest.raises(ValueError, match="non-empty"):
        mg.cat([])
    with pytest.raises(ValueError, match="non-empty"):
        mg.stack([])


# -- tables: against torch (parity.check), float64 gradchecks, the errors of bad arguments --


# name -> (call(B, *tensors), arrays): values, dtypes and the gradients of float inputs
TORCH_CASES = {
    "broadcast_tensors": (
        lambda B, a, b, c: B.broadcast_tensors(a, b, c),
        [R(3, 1), R(4), R(2, 1, 1)],
    ),
    "hstack vectors": (lambda B, a, b: B.hstack([a, b]), [R(3), R(2)]),
    "hstack matrices": (lambda B, a, b: B.hstack((a, b)), [R(2, 3), R(2, 1)]),
    "hstack 0-d": (lambda B, a, b: B.hstack([a, b]), [R(), R()]),
    "vstack vector and matrix": (lambda B, a, b: B.vstack([a, b]), [R(3), R(2, 3)]),
    "vstack 0-d": (lambda B, a, b: B.vstack([a, b]), [R(), R()]),
    "dstack": (lambda B, a, b, c: B.dstack([a, b, c]), [R(1, 3), R(3), R(1, 3, 2)]),
    "column_stack": (lambda B, a, b, c: B.column_stack([a, b, c]), [R(3), R(3, 2), R(3)]),
    "column_stack 0-d": (lambda B, a, b: B.column_stack([a, b]), [R(), R()]),
    "hsplit int": (lambda B, x: B.hsplit(x, 2), [R(3, 4)]),
    "hsplit vector positions": (lambda B, x: x.hsplit([1, 4]), [R(6)]),
    "hsplit past the end": (lambda B, x: B.hsplit(x, [5]), [R(2, 3)]),
    "vsplit descending positions": (lambda B, x: B.vsplit(x, [3, 1]), [R(4, 2)]),
    "vsplit negative position": (lambda B, x: B.vsplit(x, [-1]), [R(4, 2)]),
    "dsplit": (lambda B, x: x.dsplit(3), [R(2, 1, 6)]),
    "meshgrid ij": (lambda B, a, b: B.meshgrid(a, b, indexing="ij"), [R(3), R(2)]),
    "meshgrid xy": (lambda B, a, b, c: B.meshgrid([a, b, c], indexing="xy"), [R(3), R(2), R(4)]),
    "meshgrid 0-d": (lambda B, a, b: B.meshgrid(a, b, indexing="ij"), [R(), R(2)]),
    "meshgrid one": (lambda B, a: B.meshgrid(a, indexing="xy"), [R(3)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name, dtype):
    call, arrays = TORCH_CASES[name]
    check(call, *arrays, dtype=dtype)


GRADCHECK = {
    "meshgrid": (lambda a, b: mg.stack(mg.meshgrid(a, b, indexing="xy")), [R(3), R(2)]),
    "column_stack": (lambda a, b: mg.column_stack([a, b]), [R(3), R(3, 2)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_in_float64(name):
    call, arrays = GRADCHECK[name]
    check_gradient(call, *arrays)


# name -> (call, the error, a fragment of its message)
BAD_ARGUMENTS = {
    "broadcast_tensors that do not fit": (
        lambda: mg.broadcast_tensors(mg.zeros(2), mg.zeros(3)),
        ShapeError,
        "(2,) and (3,)",
    ),
    "hstack of one tensor": (lambda: mg.hstack(mg.zeros(3)), TypeError, "sequence of tensors"),
    "vstack of nothing": (lambda: mg.vstack([]), ArgumentError, "non-empty"),
    "vstack of different widths": (
        lambda: mg.vstack([mg.zeros(3), mg.zeros(2)]),
        ShapeError,
        "(1, 3) and (1, 2)",
    ),
    "hsplit into pieces that do not divide": (
        lambda: mg.hsplit(mg.zeros(2, 5), 2),
        ArgumentError,
        "size 5",
    ),
    "hsplit of a 0-d tensor": (lambda: mg.hsplit(mg.tensor(1.0), 1), DimError, "0-d"),
    "vsplit of a vector": (lambda: mg.vsplit(mg.zeros(4), 2), DimError, "(4,)"),
    "dsplit of a matrix": (lambda: mg.dsplit(mg.zeros(4, 2), 2), DimError, "(4, 2)"),
    "meshgrid of a matrix": (
        lambda: mg.meshgrid(mg.zeros(2, 2), indexing="ij"),
        DimError,
        "(2, 2)",
    ),
    "meshgrid bad indexing": (
        lambda: mg.meshgrid(mg.zeros(2), indexing="ji"),
        ArgumentError,
        "'ji'",
    ),
    "meshgrid mixed dtypes": (
        lambda: mg.meshgrid(mg.zeros(2), mg.zeros(2, dtype=mg.int64)),
        DTypeError,
        "int64",
    ),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    assert_clear_error(*BAD_ARGUMENTS[name])
