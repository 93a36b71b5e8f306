"""The products of tensors over named dims (minigrad/ops/tensor_products.py: inner, tensordot,
kron, cross; einsum is checked in tests/parity_cases.py) against torch: values, dtypes and
gradients in float32 and float64, integer operands, cross's warning without dim, and bad inputs
named.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from op_checks import check_against_torch, values

torch = pytest.importorskip("torch")


def f32(*shape):
    return mg.ones(*shape)


def f64(*shape):
    return mg.ones(*shape, dtype=mg.float64)


def i64(*shape):
    return mg.ones(*shape, dtype=mg.int64)


PRODUCTS = [  # name, mg call, torch call, shapes of the operands
    ("inner", mg.inner, torch.inner, [(2, 3), (4, 5, 3)]),
    ("inner vectors", lambda a, b: a.inner(b), lambda a, b: a.inner(b), [(3,), (3,)]),
    ("inner 0-d", mg.inner, torch.inner, [(), (2, 3)]),
    ("tensordot 2", mg.tensordot, torch.tensordot, [(2, 3, 4), (3, 4, 5)]),
    (
        "tensordot 0",
        lambda a, b: mg.tensordot(a, b, 0),
        lambda a, b: torch.tensordot(a, b, 0),
        [(2, 3), (4,)],
    ),
    (
        "tensordot lists",
        lambda a, b: mg.tensordot(a, b, dims=([1, 2], [1, 0])),
        lambda a, b: torch.tensordot(a, b, dims=([1, 2], [1, 0])),
        [(2, 3, 4), (4, 3, 5)],
    ),
    (
        "tensordot negative",
        lambda a, b: mg.tensordot(a, b, dims=([-1], [0])),
        lambda a, b: torch.tensordot(a, b, dims=([-1], [0])),
        [(2, 3, 4), (4, 3, 5)],
    ),
    ("kron", mg.kron, torch.kron, [(2, 3), (4,)]),
    ("kron method", lambda a, b: a.kron(b), lambda a, b: a.kron(b), [(2, 1, 2), (3, 2)]),
    ("kron 0-d", mg.kron, torch.kron, [(), (3,)]),
    (
        "cross dim",
        lambda a, b: mg.cross(a, b, dim=1),
        lambda a, b: torch.cross(a, b, dim=1),
        [(2, 3, 4), (1, 3, 4)],
    ),
    (
        "cross -1",
        lambda a, b: a.cross(b, dim=-1),
        lambda a, b: a.cross(b, dim=-1),
        [(5, 3), (5, 3)],
    ),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "name, mg_fn, torch_fn, shapes", PRODUCTS, ids=[row[0] for row in PRODUCTS]
)
def test_products_against_torch(name, mg_fn, torch_fn, shapes, dtype):
    arrays = [values(-2, 2, shape, dtype, seed=k) for k, shape in enumerate(shapes)]
    check_against_torch(mg_fn, torch_fn, arrays, dtype)
    assert mg.gradcheck(
        mg_fn, [values(-2, 2, shape, "float64", seed=k + 7) for k, shape in enumerate(shapes)]
    )


# integer tensors (fractional beta/alpha/value are left out: torch casts those to the integer
# type, minigrad gives a float result, a difference listed in the README)
PRODUCTS_OF_INTEGERS = [row for row in PRODUCTS if row[0] not in []]


@pytest.mark.parametrize(
    "name, mg_fn, torch_fn, shapes",
    PRODUCTS_OF_INTEGERS,
    ids=[row[0] for row in PRODUCTS_OF_INTEGERS],
)
def test_products_of_integers(name, mg_fn, torch_fn, shapes):
    arrays = [np.random.default_rng(k).integers(-3, 4, shape) for k, shape in enumerate(shapes)]
    check_against_torch(mg_fn, torch_fn, arrays, "int64", grad=False)


def test_cross_without_dim_warns_and_takes_the_first_dim_of_size_3():
    arrays = [values(-1, 1, (3, 3, 3), "float64"), values(-1, 1, (3, 3, 3), "float64", 1)]
    with pytest.warns(UserWarning, match="first dim of size 3"):
        check_against_torch(mg.cross, torch.cross, arrays, "float64")
    with pytest.warns(UserWarning):
        check_against_torch(
            mg.cross,
            torch.cross,
            [values(-1, 1, (4, 3), "float64"), values(-1, 1, (4, 3), "float64", 1)],
            "float64",
        )


BAD = [  # call, exception, message
    (
        lambda: mg.inner(f32(2, 3), f32(4)),
        ShapeError,
        r"inner: the last dims must match; got shapes \(2, 3\) and \(4,\)",
    ),
    (lambda: mg.inner(f32(3), f64(3)), DTypeError, "inner: both operands must have the same dtype"),
    (
        lambda: mg.tensordot(f32(2, 3, 4), f32(3, 5, 5)),
        ShapeError,
        r"dim 2 of shape \(2, 3, 4\) has size 4, dim 1",
    ),
    (
        lambda: mg.tensordot(f32(2, 3), f32(2, 3), dims=-1),
        ArgumentError,
        "dims must be an int in .0, 2.*got -1",
    ),
    (lambda: mg.tensordot(f32(2, 3), f32(2, 3), dims=3), ArgumentError, "got 3"),
    (
        lambda: mg.tensordot(f32(2, 3), f32(3, 2), dims=([0, 1], [1])),
        ArgumentError,
        "same length; got .0, 1. and .1.",
    ),
    (
        lambda: mg.tensordot(f32(2, 3), f32(3, 2), dims=([5], [0])),
        mg.DimError,
        "dim 5 is out of range",
    ),
    (
        lambda: mg.tensordot(f32(2, 3), f32(3, 2), dims="x"),
        TypeError,
        "an int or a pair of dim lists; got 'x'",
    ),
    (lambda: mg.tensordot(f32(2, 3), f64(2, 3)), DTypeError, "same dtype"),
    (
        lambda: mg.cross(f32(2, 4), f32(2, 4), dim=1),
        ShapeError,
        r"dim 1 must have size 3 .*\(2, 4\) and \(2, 4\)",
    ),
    (lambda: mg.cross(f32(2, 1, 3), f32(4, 3), dim=-1), ShapeError, "same number of dims"),
    (lambda: mg.cross(f32(3), f64(3), dim=0), DTypeError, "same dtype; got float32 and float64"),
    (lambda: mg.cross(f32(3), f32(3), dim=2), mg.DimError, "dim 2 is out of range"),
]


@pytest.mark.parametrize("call, error, message", BAD, ids=[f"bad{k}" for k in range(len(BAD))])
def test_bad_inputs_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
    # torch raises RuntimeError (TypeError for the types)
    assert issubclass(error, (TypeError, RuntimeError))
