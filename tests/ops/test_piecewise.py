"""The piecewise ops (minigrad/ops/piecewise.py: where, masked_fill, heaviside, nan_to_num ...):
values against numpy and torch, gradients, broadcasting masks, and errors.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import DTypeError, ShapeError
from op_checks import check_against_torch, check_gradient, inf, nan, rand, value

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 4), (3, 4), (3, 4)),
        ((3, 1), (1, 4), (3, 4)),
        ((4,), (3, 4), (3, 1)),
        ((2, 3, 4), (3, 4), (4,)),
    ],
    ids=str,
)
def test_where(shapes):
    cond_shape, x_shape, y_shape = shapes
    condition = np.random.default_rng(1).random(cond_shape) < 0.5
    x, y = rand(*x_shape, seed=50), rand(*y_shape, seed=51)
    np.testing.assert_array_equal(
        value(lambda a, b: mg.where(condition, a, b), x, y), np.where(condition, x, y)
    )
    check_gradient(lambda a, b: mg.where(mg.tensor(condition), a, b), x, y)


def test_where_with_scalar_branch():
    x = rand(3, 4, seed=52)
    check_gradient(lambda t: mg.where(mg.tensor(x) > 0, t, 0.0), x)
    out = mg.where(mg.tensor([True, False]), mg.tensor([1.0, 2.0]), 0.0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [1.0, 0.0])


def test_where_errors():
    with pytest.raises(TypeError, match="bool"):
        mg.where(np.array([1, 0]), mg.zeros(2), mg.zeros(2))
    with pytest.raises(ValueError) as info:
        mg.where(np.array([True, False]), mg.zeros(2), mg.zeros(3))
    assert "(2,)" in str(info.value) and "(3,)" in str(info.value)


@pytest.mark.parametrize("mask_shape", [(3, 4), (4,), (3, 1), ()], ids=str)
def test_masked_fill(mask_shape):
    mask = np.random.default_rng(2).random(mask_shape) < 0.5
    x = rand(3, 4, seed=53)
    np.testing.assert_array_equal(
        value(lambda t: t.masked_fill(mask, -7.0), x), np.where(mask, -7.0, x)
    )
    check_gradient(lambda t: mg.masked_fill(t, mg.tensor(mask), -5.0), x)


def test_masked_fill_errors():
    with pytest.raises(ValueError) as info:
        mg.zeros(3, 4).masked_fill(np.zeros((2, 4), dtype=bool), 0.0)
    assert "(2, 4)" in str(info.value) and "(3, 4)" in str(info.value)
    with pytest.raises(ValueError, match=r"\(2, 3, 4\)"):  # would grow the tensor
        mg.zeros(3, 4).masked_fill(np.zeros((2, 3, 4), dtype=bool), 0.0)
    with pytest.raises(TypeError, match="bool"):
        mg.zeros(3).masked_fill(np.zeros(3), 0.0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_heaviside_values_and_no_gradient(dtype):
    x, v = (
        np.array([-1.5, 0.0, 2.0, -0.0, nan][: 4 if dtype == "int64" else 5]).astype(dtype),
        np.array([0.5]).astype(dtype),
    )
    check_against_torch(mg.heaviside, torch.heaviside, [x, v], dtype, grad=False)
    check_against_torch(
        lambda a, b: a.heaviside(b),
        lambda a, b: a.heaviside(b),
        [x.reshape(-1, 1), x],
        dtype,
        grad=False,
    )
    if dtype != "int64":
        out = mg.heaviside(mg.tensor(x, requires_grad=True), mg.tensor(v))
        assert (
            out.requires_grad
            == torch.heaviside(torch.tensor(x, requires_grad=True), torch.tensor(v)).requires_grad
        )
        with pytest.raises(RuntimeError, match="derivative of heaviside is not implemented"):
            out.sum().backward()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"nan": 1.5},
        {"posinf": 9.0},
        {"neginf": -9.0, "nan": -1.0},
        {"nan": 1, "posinf": 2, "neginf": 3},
    ],
)
def test_nan_to_num(kwargs, dtype):
    x = np.array([1.0, nan, inf, -inf, -2.5], dtype)
    check_against_torch(
        lambda t: mg.nan_to_num(t, **kwargs), lambda t: torch.nan_to_num(t, **kwargs), [x], dtype
    )
    check_against_torch(
        lambda t: t.nan_to_num(**kwargs), lambda t: t.nan_to_num(**kwargs), [x], dtype
    )


def test_nan_to_num_of_integers_is_a_copy():
    for array in (np.array([1, -2]), np.array([True, False])):
        check_against_torch(mg.nan_to_num, torch.nan_to_num, [array], str(array.dtype), grad=False)


def f32(*shape):
    return mg.ones(*shape)


def f64(*shape):
    return mg.ones(*shape, dtype=mg.float64)


def i64(*shape):
    return mg.ones(*shape, dtype=mg.int64)


BAD_OPERANDS = [  # call, exception, message
    (lambda: mg.copysign(1.0, f32(3)), TypeError, "copysign: input must be a Tensor; got float"),
    (lambda: mg.heaviside(f32(3), f64(3)), DTypeError, "same dtype; got float32 and float64"),
    (lambda: mg.heaviside(f32(3), 0.5), TypeError, "values must be a Tensor"),
    (lambda: mg.heaviside(f32(3), f32(2)), ShapeError, "cannot be broadcast"),
]


@pytest.mark.parametrize(
    "call, error, message", BAD_OPERANDS, ids=[f"bad{k}" for k in range(len(BAD_OPERANDS))]
)
def test_bad_operands_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
    # torch raises RuntimeError (TypeError for the types)
    assert issubclass(error, (TypeError, RuntimeError))
