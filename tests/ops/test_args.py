"""The argument checks of minigrad/ops/args.py, one rule each: dims normalised as torch's
(negative dims, a 0-d tensor's dim 0 and -1), shapes given both ways, broadcasting as numpy's,
float and integer dtypes, bool masks, key lengths and sequence lengths, the CPU device. Each bad
argument gets its error class (also a RuntimeError where torch raises one) and a message naming
the op, what was expected and what was given.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import ArgumentError, DimError, DTypeError, ShapeError
from minigrad.ops import args


@pytest.mark.parametrize(
    "dim, ndim, expected", [(0, 3, 0), (2, 3, 2), (-1, 3, 2), (-3, 3, 0), (0, 0, 0), (-1, 0, 0)]
)
def test_normalize_dim_as_torch(dim, ndim, expected):
    assert args.normalize_dim(dim, ndim) == expected
    assert args.normalize_dim(np.int64(dim), ndim) == expected
    assert args.normalize_dim(mg.tensor(dim), ndim) == expected


def test_normalize_dims_gives_sorted_distinct_dims():
    assert args.normalize_dims(None, 3) == (0, 1, 2)
    assert args.normalize_dims((-1, 0), 3) == (0, 2)
    assert args.normalize_dims(1, 3) == (1,)
    assert args.normalize_dims(0, 0) == ()


def test_shapes_given_both_ways_and_broadcasting_as_numpy():
    assert args.shape_args((2, 3)) == args.shape_args(((2, 3),)) == (2, 3)
    assert args.shape_args(([np.int64(4)],)) == (4,)
    operands = [np.zeros((2, 1, 3)), mg.zeros(4, 1), 1.5]
    assert args.check_broadcast("op", *operands) == np.broadcast_shapes((2, 1, 3), (4, 1), ())
    assert args.broadcasts_to((1, 3), (2, 3)) and not args.broadcasts_to((2, 3), (3,))
    assert not args.broadcasts_to((2, 3), (1, 3))  # never beyond the target


def test_dtype_checks_keep_what_is_valid():
    x = mg.zeros(2, dtype=mg.float64)
    assert args.float_tensor("op", x) is x
    assert args.float_tensors("op", mg.zeros(2), mg.zeros(2, dtype=mg.int64)) == np.float32
    assert args.integer_array(np.array([1, 2], np.int32), "op").dtype == np.int64
    np.testing.assert_array_equal(args.bool_mask([[True], [False]], "op", (2, 3)), [[1], [0]])
    assert args.tensor_operand([[1, 2]]).dtype == mg.int64
    args.check_same_dtype("op", mg.zeros(1), mg.zeros(1))
    args.check_device(None)
    args.check_device("cpu:0")
    args.check_device(mg.device("cpu"))


def test_lengths_become_the_mask_of_the_leading_positions():
    mask = args.lengths_to_mask(np.array([3, 0, 1]), 3, 3)
    np.testing.assert_array_equal(mask, [[1, 1, 1], [0, 0, 0], [1, 0, 0]])
    stops = args.key_stops([[2], [0]], (2, 4), "op", "the rows")
    assert stops.dtype == np.int64 and stops.tolist() == [[2], [0]]


# call -> (the error, fragments of its message: the op, what was expected, what was given)
BAD = {
    "dim out of range": (
        lambda: args.normalize_dim(3, 3, "sum"),
        DimError,
        ["sum:", "dim 3", "[-3, 2]"],
    ),
    "dim of 0-d out of range": (lambda: args.normalize_dim(1, 0, "sum"), DimError, ["[-1, 0]"]),
    "dim not an int": (
        lambda: args.normalize_dim(1.0, 2, "sum"),
        TypeError,
        ["sum:", "int", "float 1.0"],
    ),
    "dim a bool": (lambda: args.normalize_dim(True, 2, "sum"), TypeError, ["bool True"]),
    "a dim twice": (lambda: args.normalize_dims((0, -2), 2, "sum"), ShapeError, ["(0, -2)"]),
    "shape not ints": (lambda: args.shape_args(("a", 2), "zeros"), TypeError, ["zeros:", "'a'"]),
    "shapes that do not broadcast": (
        lambda: args.check_broadcast("add", mg.zeros(2), mg.zeros(3)),
        ShapeError,
        ["add:", "(2,) and (3,)"],
    ),
    "two dtypes": (
        lambda: args.check_same_dtype("mm", mg.zeros(1), mg.zeros(1, dtype=mg.float64)),
        DTypeError,
        ["mm:", "float32 and float64"],
    ),
    "integer input": (
        lambda: args.float_tensor("erf", mg.zeros(1, dtype=mg.int64)),
        DTypeError,
        ["erf:", "float32 or float64 input", "int64"],
    ),
    "not a tensor": (
        lambda: args.float_tensor("erf", np.zeros(1)),
        TypeError,
        ["erf:", "Tensor", "ndarray"],
    ),
    "two integer tensors": (
        lambda: args.float_tensors(
            "hypot", mg.zeros(1, dtype=mg.int64), mg.zeros(1, dtype=mg.int64)
        ),
        DTypeError,
        ["hypot:", "int64 and int64"],
    ),
    "a number for a tensor": (
        lambda: args.float_tensors("hypot", mg.zeros(1), 2.0),
        TypeError,
        ["other must be a Tensor", "float"],
    ),
    "a mask of ints": (lambda: args.bool_mask([1, 0], "where"), DTypeError, ["where:", "int64"]),
    "a mask of another shape": (
        lambda: args.bool_mask([True, False], "where", (2, 3)),
        ShapeError,
        ["mask of shape (2,)", "shape (2, 3)"],
    ),
    "float ids": (
        lambda: args.integer_array([0.5], "gather"),
        DTypeError,
        ["gather:", "integer", "float64"],
    ),
    "negative key lengths": (
        lambda: args.key_stops([-1], (2, 1), "softmax", "the rows"),
        ArgumentError,
        ["softmax:", ">= 0", "-1"],
    ),
    "key lengths of another shape": (
        lambda: args.key_stops([1, 2, 3], (2,), "softmax", "the rows (2,)"),
        ShapeError,
        ["(3,)", "the rows (2,)"],
    ),
    "lengths of another batch": (
        lambda: args.lengths_to_mask([1, 2], 3, 4),
        ShapeError,
        ["(3,)", "(2,)"],
    ),
    "float lengths": (
        lambda: args.lengths_to_mask(np.array([1.0]), 1, 4),
        DTypeError,
        ["integers", "float64"],
    ),
    "lengths past the steps": (
        lambda: args.lengths_to_mask([5], 1, 4),
        ArgumentError,
        ["[0, 4]", "[5, 5]"],
    ),
    "another device": (
        lambda: args.check_device("cuda:1", "zeros"),
        ArgumentError,
        ["zeros:", "CPU", "'cuda:1'"],
    ),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_arguments_name_what_was_expected_and_given(name):
    call, error, fragments = BAD[name]
    with pytest.raises(error) as raised:
        call()
    for fragment in fragments:
        assert fragment in str(raised.value), (fragment, str(raised.value))
    if error is not TypeError:  # torch raises RuntimeError (or IndexError) for these
        assert isinstance(raised.value, RuntimeError)
