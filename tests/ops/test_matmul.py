"""The matrix products (minigrad/ops/matmul.py). matmul: values against numpy, gradients against
float64 central differences, batch broadcasting, float32 kept, and errors that name both shapes.
Then mv and the multiply-adds addmm, addmv, baddbmm, addbmm against torch: values, dtypes and
gradients in float32 and float64, integer operands, NaN where beta is 0, hypothesis-drawn
shapes, and bad inputs named.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.errors import DTypeError, ShapeError
from op_checks import FAST, check_against_torch, check_gradient, nan, rand, value, values

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 4), (4, 5)),  # 2-D
        ((2, 3, 4), (2, 4, 5)),  # batched
        ((2, 3, 4), (4, 5)),  # batch on the left only
        ((3, 4), (2, 4, 5)),  # batch on the right only
        ((2, 1, 3, 4), (3, 4, 2)),  # batch dims broadcast: (2, 1) with (3,)
        ((1, 3, 4), (2, 4, 5)),  # size-1 batch dim broadcast
        ((4,), (4, 5)),  # 1-D on the left
        ((3, 4), (4,)),  # 1-D on the right
        ((4,), (4,)),  # dot product
        ((4,), (2, 4, 5)),
        ((2, 3, 4), (4,)),
    ],
    ids=str,
)
def test_matmul(shapes):
    a, b = rand(*shapes[0], seed=6), rand(*shapes[1], seed=7)
    out = value(lambda x, y: x @ y, a, b)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-12, atol=1e-12)
    assert out.shape == np.matmul(a, b).shape
    check_gradient(lambda x, y: x @ y, a, b)
    check_gradient(lambda x, y: mg.matmul(x, y), a, b)


@FAST
@given(
    batch=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3),
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
    seed=st.integers(0, 1000),
)
def test_matmul_random_batch_broadcasting(batch, sizes, seed):
    n, k, m = sizes
    a = rand(*batch.input_shapes[0], n, k, seed=seed)
    b = rand(*batch.input_shapes[1], k, m, seed=seed + 1)
    out = value(lambda x, y: x @ y, a, b)
    assert out.shape == batch.result_shape + (n, m)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-12, atol=1e-12)
    check_gradient(lambda x, y: x @ y, a, b)


def test_matmul_one_side_constant():
    a, b = rand(3, 4, seed=8), rand(2, 4, 5, seed=9)
    check_gradient(lambda x: x @ mg.tensor(b), a)
    check_gradient(lambda y: mg.tensor(a) @ y, b)
    check_gradient(lambda x: np.ones((4, 2)) @ x, rand(2, 3, seed=10))  # numpy array on the left


def test_matmul_float32():
    a, b = mg.randn(3, 4), mg.randn(2, 4, 5)
    out = a @ b
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), np.matmul(a.numpy(), b.numpy()), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "shapes",
    [((3, 4), (5, 6)), ((4,), (3,)), ((2, 3, 4), (3, 5)), ((2, 3, 4), (3, 4, 5)), ((3,), (4, 5))],
    ids=str,
)
def test_matmul_mismatch_names_both_shapes(shapes):
    with pytest.raises(ValueError) as info:
        mg.zeros(*shapes[0]) @ mg.zeros(*shapes[1])
    assert str(shapes[0]) in str(info.value) and str(shapes[1]) in str(info.value)


def test_matmul_0d_and_dtype_errors():
    with pytest.raises(ValueError, match=r"\(\)"):
        mg.tensor(2.0) @ mg.zeros(3)
    with pytest.raises(TypeError, match="float64"):
        mg.zeros(2, 2) @ mg.zeros(2, 2, dtype=mg.float64)


# -- the other matrix products against torch ----------------------------------------


def f32(*shape):
    return mg.ones(*shape)


def f64(*shape):
    return mg.ones(*shape, dtype=mg.float64)


def i64(*shape):
    return mg.ones(*shape, dtype=mg.int64)


MATRIX_PRODUCTS = [  # name, mg call, torch call, shapes of the operands
    (
        "addmm",
        lambda i, a, b: mg.addmm(i, a, b),
        lambda i, a, b: torch.addmm(i, a, b),
        [(4,), (3, 2), (2, 4)],
    ),
    (
        "addmm beta alpha",
        lambda i, a, b: mg.addmm(i, a, b, beta=0.5, alpha=-2),
        lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=-2),
        [(3, 1), (3, 2), (2, 4)],
    ),
    (
        "addmm method",
        lambda i, a, b: i.addmm(a, b, alpha=3),
        lambda i, a, b: i.addmm(a, b, alpha=3),
        [(3, 4), (3, 2), (2, 4)],
    ),
    (
        "addmv",
        lambda i, a, b: mg.addmv(i, a, b, beta=2),
        lambda i, a, b: torch.addmv(i, a, b, beta=2),
        [(3,), (3, 5), (5,)],
    ),
    (
        "addmv method",
        lambda i, a, b: i.addmv(a, b),
        lambda i, a, b: i.addmv(a, b),
        [(1,), (3, 5), (5,)],
    ),
    (
        "baddbmm",
        lambda i, a, b: mg.baddbmm(i, a, b, alpha=0.5),
        lambda i, a, b: torch.baddbmm(i, a, b, alpha=0.5),
        [(4,), (2, 3, 5), (2, 5, 4)],
    ),
    (
        "baddbmm method",
        lambda i, a, b: i.baddbmm(a, b),
        lambda i, a, b: i.baddbmm(a, b),
        [(2, 3, 4), (2, 3, 5), (2, 5, 4)],
    ),
    (
        "addbmm",
        lambda i, a, b: mg.addbmm(i, a, b, beta=2),
        lambda i, a, b: torch.addbmm(i, a, b, beta=2),
        [(3, 4), (2, 3, 5), (2, 5, 4)],
    ),
    (
        "addbmm method",
        lambda i, a, b: i.addbmm(a, b),
        lambda i, a, b: i.addbmm(a, b),
        [(4,), (2, 3, 5), (2, 5, 4)],
    ),
    ("mv", mg.mv, torch.mv, [(3, 4), (4,)]),
    ("mv method", lambda a, b: a.mv(b), lambda a, b: a.mv(b), [(2, 4), (4,)]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "name, mg_fn, torch_fn, shapes", MATRIX_PRODUCTS, ids=[row[0] for row in MATRIX_PRODUCTS]
)
def test_matrix_products_against_torch(name, mg_fn, torch_fn, shapes, dtype):
    arrays = [values(-2, 2, shape, dtype, seed=k) for k, shape in enumerate(shapes)]
    check_against_torch(mg_fn, torch_fn, arrays, dtype)
    assert mg.gradcheck(
        mg_fn, [values(-2, 2, shape, "float64", seed=k + 7) for k, shape in enumerate(shapes)]
    )


# integer tensors (fractional beta/alpha/value are left out: torch casts those to the integer
# type, minigrad gives a float result, a difference listed in the README)
MATRIX_PRODUCTS_OF_INTEGERS = [
    row for row in MATRIX_PRODUCTS if row[0] not in ["addmm beta alpha", "baddbmm"]
]


@pytest.mark.parametrize(
    "name, mg_fn, torch_fn, shapes",
    MATRIX_PRODUCTS_OF_INTEGERS,
    ids=[row[0] for row in MATRIX_PRODUCTS_OF_INTEGERS],
)
def test_matrix_products_of_integers(name, mg_fn, torch_fn, shapes):
    arrays = [np.random.default_rng(k).integers(-3, 4, shape) for k, shape in enumerate(shapes)]
    check_against_torch(mg_fn, torch_fn, arrays, "int64", grad=False)


def test_addmm_with_beta_0_ignores_nan_in_input():
    """beta=0 ignores NaN in input (its gradient is 0), as torch."""
    check_against_torch(
        lambda i, a, b: mg.addmm(i, a, b, beta=0),
        lambda i, a, b: torch.addmm(i, a, b, beta=0),
        [np.array([[nan, 1.0]]), np.ones((1, 2)), np.ones((2, 2))],
        "float64",
    )


@settings(max_examples=30, deadline=None)
@given(
    batch=st.integers(1, 3),
    rows=st.integers(1, 4),
    inner=st.integers(1, 4),
    cols=st.integers(1, 4),
    input_shape=st.sampled_from(["full", "row", "column", "one"]),
)
def test_fused_matrix_products_property(batch, rows, inner, cols, input_shape):
    shape = {"full": (rows, cols), "row": (cols,), "column": (rows, 1), "one": (1,)}[input_shape]
    arrays = [
        values(-1, 1, shape, "float64"),
        values(-1, 1, (rows, inner), "float64", 1),
        values(-1, 1, (inner, cols), "float64", 2),
    ]
    check_against_torch(
        lambda i, a, b: mg.addmm(i, a, b, beta=0.5),
        lambda i, a, b: torch.addmm(i, a, b, beta=0.5),
        arrays,
        "float64",
    )
    batched = [
        arrays[0],
        values(-1, 1, (batch, rows, inner), "float64", 3),
        values(-1, 1, (batch, inner, cols), "float64", 4),
    ]
    check_against_torch(mg.baddbmm, torch.baddbmm, batched, "float64")
    check_against_torch(mg.addbmm, torch.addbmm, batched, "float64")


BAD = [  # call, exception, message
    (
        lambda: mg.addmm(f32(3), f32(4, 3), f32(4, 3)),
        ShapeError,
        r"matmul: shapes \(4, 3\) and \(4, 3\) do not match",
    ),
    (
        lambda: mg.addmm(f32(4), f32(4, 3), f32(3, 3)),
        ShapeError,
        r"input of shape \(4,\) does not broadcast to .* \(4, 3\)",
    ),
    (lambda: mg.addmm(f32(3), f32(3), f32(3, 3)), ShapeError, "addmm: expects 2-D tensors"),
    (
        lambda: mg.addmm(f64(3), f32(2, 3), f32(3, 3)),
        DTypeError,
        "same dtype; got float64 and float32",
    ),
    (
        lambda: mg.addmm(f32(3), f32(2, 3), f64(3, 3)),
        DTypeError,
        "same dtype; got float32 and float64",
    ),
    (
        lambda: mg.addmv(f32(3), f32(3, 4), f32(3)),
        ShapeError,
        r"shapes \(3, 4\) and \(3,\) do not match",
    ),
    (
        lambda: mg.mv(f32(3), f32(3)),
        ShapeError,
        r"mv: expects a 2-D matrix and a 1-D vector; got shapes \(3,\) and \(3,\)",
    ),
    (lambda: mg.mv(f32(2, 3), f64(3)), DTypeError, "mv: both operands must have the same dtype"),
    (
        lambda: mg.baddbmm(f32(3), f32(2, 4, 5), f32(3, 5, 3)),
        ShapeError,
        "baddbmm: batch sizes differ",
    ),
    (lambda: mg.addbmm(f32(3), f32(4, 5), f32(5, 3)), ShapeError, "addbmm: expects 3-D tensors"),
]


@pytest.mark.parametrize("call, error, message", BAD, ids=[f"bad{k}" for k in range(len(BAD))])
def test_bad_inputs_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
    # torch raises RuntimeError (TypeError for the types)
    assert issubclass(error, (TypeError, RuntimeError))
