"""The elementwise, special, NaN-skipping and product ops of ops/pointwise.py, ops/special.py,
ops/nanreduce.py and ops/products.py against torch: values, dtypes and gradients of a weighted
sum (float32 and float64, broadcasting, integer inputs, edge values), gradchecks in float64,
hypothesis shapes, and bad inputs."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from parity import assert_runs_match, run_both

torch = pytest.importorskip("torch")

TOLERANCE = {
    "float32": (2e-5, 2e-5),
    "float64": (1e-10, 1e-12),
    "trigamma": (1e-8, 1e-12),
}  # torch's polygamma(1) is within 5e-10 (ours within 6e-13 of mpmath)
inf, nan = math.inf, math.nan


def check(mg_fn, torch_fn, arrays, dtype, grad=True, grad_dtype=None):
    """mg_fn and torch_fn on the same arrays: the same output, and the same gradients of a
    weighted sum of it (weights make every element count)."""
    ours, theirs = run_both(
        lambda fn, *leaves: fn(*leaves),
        arrays,
        sides=(mg_fn, torch_fn),
        upstream=lambda shape: np.random.default_rng(0).uniform(0.5, 1.5, shape),
        grad=grad,
    )
    output_dtype = str(theirs.out.dtype).replace("torch.", "")
    rtol, atol = TOLERANCE.get(output_dtype, (0, 0))
    grad_rtol, grad_atol = TOLERANCE.get(grad_dtype or dtype, (0, 0))
    assert_runs_match(
        ours,
        theirs,
        dict(rtol=rtol, atol=atol),
        gradients=dict(rtol=grad_rtol, atol=grad_atol),
    )


def values(low, high, shape, dtype, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape).astype(dtype)


# -- unary ops: (name, low, high, edge values) ----------------------------------------------

UNARY = [
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
@pytest.mark.parametrize("name, low, high, edges", UNARY, ids=[row[0] for row in UNARY])
def test_unary_against_torch(name, low, high, edges, dtype):
    mg_fn, torch_fn = getattr(mg, name), getattr(torch, name)
    grad_dtype = "trigamma" if name == "digamma" and dtype == "float64" else dtype
    check(mg_fn, torch_fn, [values(low, high, (3, 4), dtype)], dtype, grad_dtype=grad_dtype)
    check(mg_fn, torch_fn, [np.array(edges, dtype)], dtype, grad_dtype=grad_dtype)
    check(
        getattr(mg.Tensor, name),
        getattr(torch.Tensor, name),
        [values(low, high, (5,), dtype)],
        dtype,
        grad_dtype=grad_dtype,
    )
    check(mg_fn, torch_fn, [np.array(0.25, dtype)], dtype, grad_dtype=grad_dtype)  # 0-d


@pytest.mark.parametrize("name", [row[0] for row in UNARY if row[0] != "frac"])
def test_unary_integer_and_bool_inputs_give_the_default_float(name):
    for array in (np.array([-3, -1, 0, 1, 2, 7]), np.array([True, False])):
        check(getattr(mg, name), getattr(torch, name), [array], "float32")


def test_frac_refuses_integers_as_torch():
    with pytest.raises(DTypeError, match="float32 or float64 input; got dtype int64"):
        mg.frac(mg.tensor([1, 2]))


@pytest.mark.parametrize("name, low, high", [(row[0], row[1], row[2]) for row in UNARY])
def test_unary_gradcheck(name, low, high):
    assert mg.gradcheck(
        getattr(mg, name), [values(low, high, (2, 3), "float64", seed=3)], atol=1e-6, rtol=1e-5
    )


def test_digamma_gradient_is_trigamma():
    x = np.array([-2.5, -0.3, 0.2, 1.0, 1.5, 9.9, 30.0, 1e5])
    mine = mg.tensor(x, requires_grad=True)
    mg.digamma(mine).sum().backward()
    np.testing.assert_allclose(
        mine.grad.numpy(), torch.polygamma(1, torch.tensor(x)).numpy(), rtol=1e-9
    )
    for dtype in (
        "float32",
        "float64",
    ):  # at a pole both give a huge rounding of +inf (pi^2 / sin(pi x)^2)
        pole = mg.tensor(np.array([-1.0, -3.0], dtype), requires_grad=True)
        mg.digamma(pole).sum().backward()
        assert np.all(pole.grad.numpy() > 1e14)


def test_special_functions_on_many_values():
    """lgamma, digamma and erfinv over wide ranges (Lanczos, asymptotic series, Newton steps)."""
    rng = np.random.default_rng(5)
    wide = np.concatenate(
        [rng.uniform(-30, 30, 5000), rng.uniform(0, 3, 5000), 10.0 ** rng.uniform(-300, 300, 500)]
    )
    for name in ("lgamma", "digamma"):
        mine, theirs = (
            getattr(mg, name)(mg.tensor(wide)).numpy(),
            getattr(torch, name)(torch.tensor(wide)).numpy(),
        )
        poles = np.abs(wide - np.round(wide)) < 1e-3  # near the poles both lose digits to sin(pi x)
        np.testing.assert_allclose(mine[~poles], theirs[~poles], rtol=1e-11, atol=1e-11)
    tails = np.concatenate(
        [rng.uniform(-1, 1, 5000), 1 - 10.0 ** rng.uniform(-15.9, -1, 500), [np.nextafter(1, 0)]]
    )
    np.testing.assert_allclose(
        mg.erfinv(mg.tensor(tails)).numpy(), torch.erfinv(torch.tensor(tails)).numpy(), rtol=1e-13
    )
    small = np.float32(rng.uniform(-1, 1, 5000))
    np.testing.assert_allclose(
        mg.erfinv(mg.tensor(small)).numpy(),
        torch.erfinv(torch.tensor(small)).numpy(),
        rtol=2e-7,
        atol=1e-7,
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("eps", [None, 0.1, 0.0])
def test_logit_eps(eps, dtype):
    edges = np.array([0.0, 0.05, 0.1, 0.5, 0.9, 0.95, 1.0, 1.5, -0.5, nan], dtype)
    check(lambda x: mg.logit(x, eps=eps), lambda x: torch.logit(x, eps=eps), [edges], dtype)
    check(lambda x: x.logit(eps), lambda x: x.logit(eps), [values(0.05, 0.95, (4,), dtype)], dtype)


# -- binary ops -----------------------------------------------------------------------------

BINARY = [  # name, low, high, (edge input, edge other)
    ("xlogy", 0.1, 4, ([0.0, 0.0, 1.0, 0.0, 2.0, nan, 3.0], [0.0, nan, 0.0, -1.0, -1.0, 0.0, inf])),
    ("hypot", -4, 4, ([0.0, 3.0, inf, -inf, nan], [0.0, 4.0, nan, 1.0, 1.0])),
    (
        "logaddexp",
        -30,
        30,
        ([-inf, inf, inf, 1.0, nan, 800.0], [-inf, inf, -inf, 1.0, 0.0, -800.0]),
    ),
    ("logaddexp2", -30, 30, ([-inf, inf, inf, 1.0, nan, 2000.0], [-inf, inf, -inf, 1.0, 0.0, 1.0])),
    ("copysign", -4, 4, ([0.0, -0.0, 1.0, -2.0, 3.0, nan], [1.0, -1.0, -1.0, -0.0, nan, -2.0])),
    ("float_power", 0.5, 3, ([0.0, -2.0, 2.0, 0.0, inf], [0.0, 0.5, 3.0, -1.0, -1.0])),
    ("true_divide", 0.5, 3, ([1.0, 0.0, -1.0, inf], [0.0, 0.0, 0.0, inf])),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, low, high, edges", BINARY, ids=[row[0] for row in BINARY])
def test_binary_against_torch(name, low, high, edges, dtype):
    mg_fn, torch_fn = getattr(mg, name), getattr(torch, name)
    a, b = values(low, high, (3, 1), dtype), values(low, high, (4,), dtype, seed=1)
    check(mg_fn, torch_fn, [a, b], dtype)  # broadcast to (3, 4)
    check(mg_fn, torch_fn, [np.array(edges[0], dtype), np.array(edges[1], dtype)], dtype)
    check(getattr(mg.Tensor, name), getattr(torch.Tensor, name), [b, a], dtype)
    assert mg.gradcheck(
        mg_fn, [values(low, high, (2, 3), "float64", seed=2), values(low, high, (3,), "float64", 4)]
    )


@pytest.mark.parametrize("name", ["xlogy", "copysign", "float_power", "true_divide"])
def test_binary_with_integers_and_numbers(name):
    mg_fn, torch_fn = getattr(mg, name), getattr(torch, name)
    ints, floats = np.array([1, 2, -3]), np.array([0.5, 1.0, -2.0], "float32")
    check(mg_fn, torch_fn, [ints, ints], "float32")
    check(mg_fn, torch_fn, [floats, ints], "float32")
    check(mg_fn, torch_fn, [floats, floats.astype("float64")], "float64")
    check(lambda x: mg_fn(x, 2), lambda x: torch_fn(x, 2), [floats], "float32")
    check(lambda x: mg_fn(x, 2.5), lambda x: torch_fn(x, 2.5), [floats], "float32")
    if name != "copysign":  # torch takes no number as copysign's input
        check(lambda x: mg_fn(2, x), lambda x: torch_fn(2, x), [floats], "float32")


@pytest.mark.parametrize("name", ["hypot", "logaddexp", "logaddexp2"])
def test_binary_float_only_ops_with_integers(name):
    ints, floats = np.array([1, 2, -3]), np.array([0.5, 1.0, -2.0], "float32")
    check(getattr(mg, name), getattr(torch, name), [floats, ints], "float32")
    with pytest.raises(
        DTypeError, match="at least one float32 or float64 tensor; got dtypes int64 and int64"
    ):
        getattr(mg, name)(mg.tensor(ints), mg.tensor(ints))
    with pytest.raises(TypeError, match="other must be a Tensor"):
        getattr(mg, name)(mg.tensor(floats), 2.0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_heaviside_values_and_no_gradient(dtype):
    x, v = (
        np.array([-1.5, 0.0, 2.0, -0.0, nan][: 4 if dtype == "int64" else 5]).astype(dtype),
        np.array([0.5]).astype(dtype),
    )
    check(mg.heaviside, torch.heaviside, [x, v], dtype, grad=False)
    check(
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


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_signbit(dtype):
    x = np.array(
        [-2.0, -0.0, 0.0, 3.0, -inf, inf, nan] if dtype.startswith("float") else [-2, 0, 1]
    ).astype(dtype)
    check(mg.signbit, torch.signbit, [x], dtype, grad=False)
    check(mg.Tensor.signbit, torch.Tensor.signbit, [x], dtype, grad=False)


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
    check(lambda t: mg.nan_to_num(t, **kwargs), lambda t: torch.nan_to_num(t, **kwargs), [x], dtype)
    check(lambda t: t.nan_to_num(**kwargs), lambda t: t.nan_to_num(**kwargs), [x], dtype)


def test_nan_to_num_of_integers_is_a_copy():
    for array in (np.array([1, -2]), np.array([True, False])):
        check(mg.nan_to_num, torch.nan_to_num, [array], str(array.dtype), grad=False)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weight", [0.25, 0.75, 1, 0.0, "tensor", "0-d", "0-d int"])
def test_lerp(weight, dtype):
    start, end = values(-2, 2, (3, 1), dtype), values(-2, 2, (4,), dtype, seed=1)
    if weight == "tensor":
        w = values(-0.5, 1.5, (2, 1, 1), dtype, seed=2)
        check(mg.lerp, torch.lerp, [start, end, w], dtype)
        check(mg.Tensor.lerp, torch.Tensor.lerp, [start, end, w], dtype)
    elif weight.__class__ is str:
        w = np.array(0.3, dtype) if weight == "0-d" else np.array(1)
        check(mg.lerp, torch.lerp, [start, end, w], dtype)
    else:
        check(
            lambda a, b: mg.lerp(a, b, weight),
            lambda a, b: torch.lerp(a, b, weight),
            [start, end],
            dtype,
        )
    edges = [
        np.array([0.0, 1.0, inf, nan], dtype),
        np.array([1.0, 3.0, 1.0, 0.0], dtype),
        np.array([0.25, 0.75, 0.5, 0.5], dtype),
    ]
    check(mg.lerp, torch.lerp, edges, dtype)
    assert mg.gradcheck(
        mg.lerp,
        [
            values(-2, 2, (2, 3), "float64"),
            values(-2, 2, (3,), "float64", 1),
            values(0, 1, (2, 1), "float64", 2),
        ],
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_power_result_is_float64_and_gradients_keep_the_input_dtype(dtype):
    check(
        mg.float_power,
        torch.float_power,
        [values(0.5, 2, (3,), dtype), values(-1, 2, (3,), dtype)],
        dtype,
    )
    check(
        lambda x: mg.float_power(x, -2),
        lambda x: torch.float_power(x, -2),
        [values(0.5, 2, (3,), dtype)],
        dtype,
    )
    check(lambda x: x.float_power(3), lambda x: x.float_power(3), [np.array([1, 2, -3])], dtype)


# -- reductions that skip NaN ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["nansum", "nanmean"])
@pytest.mark.parametrize(
    "dim, keepdim", [(None, False), (1, False), (0, True), ((0, 1), False), (-1, True)]
)
def test_nan_reductions(name, dim, keepdim, dtype):
    x = np.array([[1.0, nan, 3.0], [nan, nan, nan], [inf, 2.0, -1.0]], dtype)
    kwargs = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    check(
        lambda t: getattr(mg, name)(t, **kwargs),
        lambda t: getattr(torch, name)(t, **kwargs),
        [x],
        dtype,
    )
    check(
        lambda t: getattr(t, name)(**kwargs),
        lambda t: getattr(t, name)(**kwargs),
        [values(-1, 1, (3, 3), dtype)],
        dtype,
    )
    assert mg.gradcheck(
        lambda t: getattr(mg, name)(t, **kwargs), [values(-1, 1, (3, 3), "float64")]
    )


def test_nan_reductions_on_integers_and_dtype():
    ints = np.array([[1, 2], [3, 4]])
    check(mg.nansum, torch.nansum, [ints], "int64")
    check(
        lambda t: mg.nansum(t, dtype=mg.float64),
        lambda t: torch.nansum(t, dtype=torch.float64),
        [np.float32([[1, nan]])],
        "float64",
    )
    check(
        lambda t: mg.nanmean(t, dtype=mg.float64),
        lambda t: torch.nanmean(t, dtype=torch.float64),
        [np.float32([[1, nan]])],
        "float64",
    )
    for kwargs in ({}, {"dtype": mg.float64}):  # torch refuses integers even with dtype=
        with pytest.raises(
            DTypeError, match="nanmean: expected a float32 or float64 input; got dtype int64"
        ):
            mg.nanmean(mg.tensor(ints), **kwargs)


# -- products -------------------------------------------------------------------------------

PRODUCTS = [  # name, mg call, torch call, shapes of the operands
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
    (
        "addcmul",
        lambda i, a, b: mg.addcmul(i, a, b, value=0.5),
        lambda i, a, b: torch.addcmul(i, a, b, value=0.5),
        [(3, 1), (4,), (2, 1, 1)],
    ),
    (
        "addcmul method",
        lambda i, a, b: i.addcmul(a, b),
        lambda i, a, b: i.addcmul(a, b),
        [(3, 4), (4,), (3, 1)],
    ),
    (
        "addcdiv",
        lambda i, a, b: mg.addcdiv(i, a, b, value=-2),
        lambda i, a, b: torch.addcdiv(i, a, b, value=-2),
        [(3, 1), (4,), (3, 4)],
    ),
    (
        "addcdiv method",
        lambda i, a, b: i.addcdiv(a, b),
        lambda i, a, b: i.addcdiv(a, b),
        [(3, 4), (4,), (3, 4)],
    ),
    ("mv", mg.mv, torch.mv, [(3, 4), (4,)]),
    ("mv method", lambda a, b: a.mv(b), lambda a, b: a.mv(b), [(2, 4), (4,)]),
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
    ("trace", mg.trace, torch.trace, [(3, 3)]),
    ("trace wide", lambda a: a.trace(), lambda a: a.trace(), [(2, 4)]),
    ("dist", mg.dist, torch.dist, [(3, 4), (4,)]),
    ("dist p", lambda a, b: mg.dist(a, b, 3), lambda a, b: torch.dist(a, b, 3), [(3, 4), (3, 4)]),
    ("dist inf", lambda a, b: a.dist(b, inf), lambda a, b: a.dist(b, inf), [(3, 4), (3, 4)]),
    ("dist 1", lambda a, b: mg.dist(a, b, 1), lambda a, b: torch.dist(a, b, 1), [(5,), (5,)]),
    ("cdist", mg.cdist, torch.cdist, [(5, 3), (4, 3)]),
    ("cdist batched", mg.cdist, torch.cdist, [(2, 1, 5, 3), (4, 6, 3)]),
    (
        "cdist p",
        lambda a, b: mg.cdist(a, b, p=1),
        lambda a, b: torch.cdist(a, b, p=1),
        [(5, 3), (4, 3)],
    ),
    (
        "cdist p 3",
        lambda a, b: mg.cdist(a, b, p=3.0),
        lambda a, b: torch.cdist(a, b, p=3.0),
        [(5, 3), (4, 3)],
    ),
    (
        "cdist p 0.5",
        lambda a, b: mg.cdist(a, b, p=0.5),
        lambda a, b: torch.cdist(a, b, p=0.5),
        [(2, 3), (4, 3)],
    ),
    (
        "cdist p inf",
        lambda a, b: mg.cdist(a, b, p=inf),
        lambda a, b: torch.cdist(a, b, p=inf),
        [(5, 3), (4, 3)],
    ),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "name, mg_fn, torch_fn, shapes", PRODUCTS, ids=[row[0] for row in PRODUCTS]
)
def test_products_against_torch(name, mg_fn, torch_fn, shapes, dtype):
    arrays = [values(-2, 2, shape, dtype, seed=k) for k, shape in enumerate(shapes)]
    check(mg_fn, torch_fn, arrays, dtype)
    assert mg.gradcheck(
        mg_fn, [values(-2, 2, shape, "float64", seed=k + 7) for k, shape in enumerate(shapes)]
    )


# integer tensors: not the float-only ops, nor fractional beta/alpha/value (torch casts those to the
# integer type, minigrad gives a float result: a difference listed in the README)
INTEGER_PRODUCTS = [
    row
    for row in PRODUCTS
    if not row[0].startswith(("dist", "cdist", "addcdiv"))
    and row[0] not in ("addmm beta alpha", "baddbmm", "addcmul")
]


@pytest.mark.parametrize(
    "name, mg_fn, torch_fn, shapes", INTEGER_PRODUCTS, ids=[row[0] for row in INTEGER_PRODUCTS]
)
def test_products_of_integers(name, mg_fn, torch_fn, shapes):
    arrays = [np.random.default_rng(k).integers(-3, 4, shape) for k, shape in enumerate(shapes)]
    check(mg_fn, torch_fn, arrays, "int64", grad=False)


def test_products_at_special_values():
    """beta=0 ignores NaN in input (its gradient is 0); addcmul's value=0 keeps it; distances of
    equal points have gradient 0; cross warns and takes the first dim of size 3 without dim."""
    nan_input = np.array([[nan, 1.0]])
    mats = [np.ones((1, 2)), np.ones((2, 2))]
    check(
        lambda i, a, b: mg.addmm(i, a, b, beta=0),
        lambda i, a, b: torch.addmm(i, a, b, beta=0),
        [nan_input] + mats,
        "float64",
    )
    check(
        lambda i, a, b: mg.addcmul(i, a, b, value=0),
        lambda i, a, b: torch.addcmul(i, a, b, value=0),
        [nan_input, np.ones((1, 2)), np.ones(2)],
        "float64",
    )
    same = np.array([[1.0, 2.0], [3.0, 4.0]])
    for p in (2, 1, 3):
        check(
            lambda a, b: mg.cdist(a, b, p=p),
            lambda a, b: torch.cdist(a, b, p=p),
            [same, same.copy()],
            "float64",
        )
        check(
            lambda a, b: mg.dist(a, b, p),
            lambda a, b: torch.dist(a, b, p),
            [same, same.copy()],
            "float64",
        )
    arrays = [values(-1, 1, (3, 3, 3), "float64"), values(-1, 1, (3, 3, 3), "float64", 1)]
    with pytest.warns(UserWarning, match="first dim of size 3"):
        check(mg.cross, torch.cross, arrays, "float64")
    with pytest.warns(UserWarning):
        check(
            mg.cross,
            torch.cross,
            [values(-1, 1, (4, 3), "float64"), values(-1, 1, (4, 3), "float64", 1)],
            "float64",
        )


@pytest.mark.xfail(
    strict=True,
    reason="cdist(p=inf) with tied largest differences: torch gives each tie the "
    "whole gradient, minigrad shares it among them (as torch's own dist and norm do)",
)
def test_cdist_inf_ties_as_torch():
    same = np.array([[1.0, 2.0], [3.0, 4.0]])
    check(
        lambda a, b: mg.cdist(a, b, p=inf),
        lambda a, b: torch.cdist(a, b, p=inf),
        [same, same.copy()],
        "float64",
    )


# -- hypothesis: shapes and broadcasting ----------------------------------------------------

shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@settings(max_examples=40, deadline=None)
@given(
    shape_a=shapes,
    shape_b=shapes,
    name=st.sampled_from([row[0] for row in BINARY]),
    dtype=st.sampled_from(["float32", "float64"]),
)
def test_binary_broadcasting_property(shape_a, shape_b, name, dtype):
    try:
        np.broadcast_shapes(shape_a, shape_b)
    except ValueError:
        with pytest.raises(ShapeError, match="cannot be broadcast"):
            getattr(mg, name)(mg.ones(shape_a, dtype=dtype), mg.ones(shape_b, dtype=dtype))
        return
    check(
        getattr(mg, name),
        getattr(torch, name),
        [values(0.5, 2, shape_a, dtype), values(0.5, 2, shape_b, dtype, 1)],
        dtype,
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
    check(
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
    check(mg.baddbmm, torch.baddbmm, batched, "float64")
    check(mg.addbmm, torch.addbmm, batched, "float64")


# -- bad inputs -----------------------------------------------------------------------------

f32, f64, i64 = (
    (lambda *s: mg.ones(*s)),
    (lambda *s: mg.ones(*s, dtype=mg.float64)),
    (lambda *s: mg.ones(*s, dtype=mg.int64)),
)

BAD = [  # call, exception, message
    (
        lambda: mg.xlogy(f32(2, 3), f32(4)),
        ShapeError,
        r"xlogy: shapes \(2, 3\) and \(4,\) cannot be broadcast",
    ),
    (lambda: mg.xlogy(2, 3), TypeError, "expected at least one tensor; got 2 and 3"),
    (lambda: mg.hypot(f32(2), f32(3)), ShapeError, r"hypot: shapes \(2,\) and \(3,\)"),
    (lambda: mg.hypot(2.0, f32(3)), TypeError, "input must be a Tensor"),
    (lambda: mg.copysign(1.0, f32(3)), TypeError, "copysign: input must be a Tensor; got float"),
    (lambda: mg.heaviside(f32(3), f64(3)), DTypeError, "same dtype; got float32 and float64"),
    (lambda: mg.heaviside(f32(3), 0.5), TypeError, "values must be a Tensor"),
    (lambda: mg.heaviside(f32(3), f32(2)), ShapeError, "cannot be broadcast"),
    (
        lambda: mg.lerp(i64(3), i64(3), 0.5),
        DTypeError,
        "expected a float32 or float64 input; got dtype int64",
    ),
    (
        lambda: mg.lerp(f32(3), f64(3), 0.5),
        DTypeError,
        "expected end of input's dtype float32; got dtype float64",
    ),
    (
        lambda: mg.lerp(f32(3), f32(3), f64(3)),
        DTypeError,
        "expected weight of input's dtype float32; got dtype float64",
    ),
    (lambda: mg.lerp(f32(3), f32(2), 0.5), ShapeError, "cannot be broadcast"),
    (lambda: mg.float_power(2, 3), TypeError, "expected at least one tensor"),
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
    (lambda: mg.addcmul(f32(3), f32(2), f32(3)), ShapeError, "addcmul: shapes"),
    (
        lambda: mg.addcdiv(f32(3), i64(3), i64(3)),
        DTypeError,
        "integers is not supported .*; got dtypes int64 and int64",
    ),
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
    (
        lambda: mg.trace(f32(2, 3, 3)),
        ShapeError,
        r"trace: expects a matrix \(2-D\); got shape \(2, 3, 3\)",
    ),
    (lambda: mg.trace(mg.ones(2, 2, dtype=mg.bool)), DTypeError, "got dtype bool"),
    (
        lambda: mg.dist(i64(3), i64(3)),
        DTypeError,
        "norm: the input must be a float tensor; got dtype int64",
    ),
    (lambda: mg.dist(f32(2), f32(3)), ShapeError, "cannot be broadcast"),
    (
        lambda: mg.cdist(f32(3), f32(3)),
        ShapeError,
        r"cdist: expects x1 with at least 2 dims .*; got shape \(3,\)",
    ),
    (
        lambda: mg.cdist(f32(5, 3), f32(6, 4)),
        ShapeError,
        r"same number of features .*\(5, 3\) and \(6, 4\)",
    ),
    (
        lambda: mg.cdist(f32(5, 3), f32(6, 3), p=-1),
        ArgumentError,
        "p must be a number >= 0; got -1",
    ),
    (lambda: mg.cdist(i64(5, 3), i64(6, 3)), DTypeError, "x1 of dtype int64"),
    (lambda: mg.cdist(f32(5, 3), f64(6, 3)), DTypeError, "same dtype; got float32 and float64"),
    (lambda: mg.cdist(f32(2, 5, 3), f32(3, 6, 3)), ShapeError, "batch dims of shapes"),
    (lambda: mg.nansum(f32(2, 3), dim=2), mg.DimError, "dim 2 is out of range"),
    (lambda: mg.nanmean(f32(2, 3), dim=(0, 0)), ShapeError, "names a dim more than once"),
]


@pytest.mark.parametrize("call, error, message", BAD, ids=[f"bad{k}" for k in range(len(BAD))])
def test_bad_inputs(call, error, message):
    with pytest.raises(error, match=message):
        call()
    assert issubclass(
        error, (TypeError, RuntimeError)
    )  # torch raises RuntimeError (TypeError for the types)
