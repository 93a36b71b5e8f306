"""The elementwise math functions of minigrad/ops/pointwise.py (asin ... atanh and their arc*
names, exp2, sinc, rad2deg, deg2rad, frac, sign, floor), and beside them in one table the unary
functions of special.py (lgamma, digamma, erfinv, logit), against torch: random values and edge
values (0, +-1, inf, nan), float32 and float64, 0-d, as methods, on integer and bool inputs;
float64 gradchecks; sinc's gradient next to 0.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import DTypeError
from op_checks import check_against_torch, inf, nan, values
from parity import assert_close, raises_like_torch

torch = pytest.importorskip("torch")


TORCH_UNARY = [
    ("asin", -0.99, 0.99, [0.0, 1.0, -1.0, 2.0, -inf, nan]),
    ("acos", -0.99, 0.99, [0.0, 1.0, -1.0, 2.0, inf, nan]),
    ("atan", -5, 5, [0.0, inf, -inf, nan]),
    ("tan", -1.5, 1.5, [0.0, nan]),
    ("sinh", -5, 5, [0.0, inf, -inf, nan]),
    ("cosh", -5, 5, [0.0, inf, -inf, nan]),
    ("asinh", -5, 5, [0.0, inf, -inf, nan]),
    ("acosh", 1.01, 5, [1.0, 0.5, inf, nan]),
    ("atanh", -0.99, 0.99, [0.0, 1.0, -1.0, 2.0, nan]),
    ("arcsin", -0.99, 0.99, [1.0]),
    ("arccos", -0.99, 0.99, [-1.0]),
    ("arctan", -3, 3, [inf]),
    ("arcsinh", -3, 3, [0.0]),
    ("arccosh", 1.1, 3, [1.0]),
    ("arctanh", -0.9, 0.9, [1.0]),
    ("exp2", -10, 10, [0.0, inf, -inf, nan]),
    ("sinc", -3, 3, [0.0, 1.0, -0.5, 1e-20, inf, nan]),
    ("rad2deg", -7, 7, [0.0, inf, nan]),
    ("deg2rad", -400, 400, [0.0, -inf, nan]),
    ("lgamma", -5, 8, [0.0, -1.0, -2.5, 1.0, 2.0, inf, -inf, 1e-30, 0.5, nan]),
    ("digamma", -5, 8, [0.0, -2.5, 1.0, 2.0, inf, 1e-30, 0.5, 1e10, nan]),
    ("erfinv", -0.999, 0.999, [0.0, 1.0, -1.0, 0.5, 1.5, -0.999999, nan]),
    ("logit", 0.01, 0.99, [0.0, 1.0, 0.5, -0.5, 1.5, nan]),
    ("frac", -5, 5, [1.5, -1.5, 2.0, inf, -inf, nan]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, low, high, edges", TORCH_UNARY, ids=[row[0] for row in TORCH_UNARY])
def test_unary_against_torch(name, low, high, edges, dtype):
    mg_fn, torch_fn = getattr(mg, name), getattr(torch, name)
    gradients = "trigamma" if name == "digamma" and dtype == "float64" else "elementwise"
    check_against_torch(
        mg_fn, torch_fn, [values(low, high, (3, 4), dtype)], dtype, gradients=gradients
    )
    check_against_torch(mg_fn, torch_fn, [np.array(edges, dtype)], dtype, gradients=gradients)
    check_against_torch(
        getattr(mg.Tensor, name),
        getattr(torch.Tensor, name),
        [values(low, high, (5,), dtype)],
        dtype,
        gradients=gradients,
    )
    check_against_torch(mg_fn, torch_fn, [np.array(0.25, dtype)], dtype, gradients=gradients)  # 0-d


@pytest.mark.parametrize("name", [row[0] for row in TORCH_UNARY if row[0] != "frac"])
def test_unary_integer_and_bool_inputs_give_the_default_float(name):
    for array in (np.array([-3, -1, 0, 1, 2, 7]), np.array([True, False])):
        check_against_torch(getattr(mg, name), getattr(torch, name), [array], "float32")


def test_frac_refuses_integers_as_torch():
    with pytest.raises(DTypeError, match="float32 or float64 input; got dtype int64"):
        mg.frac(mg.tensor([1, 2]))


@pytest.mark.parametrize("name, low, high", [(row[0], row[1], row[2]) for row in TORCH_UNARY])
def test_unary_gradcheck(name, low, high):
    assert mg.gradcheck(
        getattr(mg, name), [values(low, high, (2, 3), "float64", seed=3)], atol=1e-6, rtol=1e-5
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sinc_has_a_finite_gradient_next_to_zero(dtype):
    x = np.array([0.0, 1e-31, -1e-35, 1e-20, 1e-8, 1e-4, 0.3, -2.5], dtype)
    if dtype == np.float64:
        x = np.concatenate([x, [1e-300, 1e-170]])
    leaf, theirs = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    mg.sinc(leaf).sum().backward()
    torch.sinc(theirs).sum().backward()
    assert np.isfinite(leaf.grad.numpy()).all()
    assert_close(leaf.grad, theirs.grad, "sinc gradient near 0")


def test_the_sign_of_a_bool_tensor_is_itself_as_in_torch():
    assert_close(mg.sign(mg.tensor([True, False])), torch.sign(torch.tensor([True, False])))


def test_floor_of_a_bool_tensor_gets_minigrads_own_message():
    error = raises_like_torch(
        lambda: mg.floor(mg.tensor([True, False])),
        lambda: torch.floor(torch.tensor([True, False])),
        must_mention=["bool"],
    )
    assert type(error).__module__ in ("builtins", "minigrad.errors")
