"""The diagonal ops (minigrad/ops/diagonal.py: diagonal, diag_embed ...) and unfold: views that
write into their base, and values and gradients against torch for any shape, offset and dims.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, DimError, ShapeError
from op_checks import assert_clear_error, check_against_torch, check_gradient, values
from parity import I, R, check

torch = pytest.importorskip("torch")


def test_diagonal_is_a_view_that_writes_into_its_base():
    for B in (mg, torch):
        x = B.zeros(3, 3)
        B.diagonal(x).fill_(2.0)
        x.diagonal(1).add_(1.0)
        y = B.arange(9.0).reshape(3, 3).requires_grad_(True) * 1
        y.diagonal().mul_(10)
        y.sum().backward()
        if B is mg:
            ours = (x.numpy(), y.numpy())
        else:
            np.testing.assert_array_equal(ours[0], x.numpy())
            np.testing.assert_array_equal(ours[1], y.detach().numpy())


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=2, max_size=4),
    offset=st.integers(-5, 5),
    dims=st.permutations(range(4)),
    data=st.data(),
)
def test_diagonal_and_unfold_match_torch_for_any_shape(shape, offset, dims, data):
    dim1, dim2 = dims[0] % len(shape), dims[1] % len(shape)
    if dim1 == dim2:
        dim2 = (dim1 + 1) % len(shape)
    array = R(*shape)
    check(lambda B, x: B.diagonal(x, offset, dim1, dim2), array)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = data.draw(st.integers(0, shape[dim]))
    step = data.draw(st.integers(1, 3))
    check(lambda B, x: x.unfold(dim, size, step), array)


# -- tables: against torch (parity.check), float64 gradchecks, the errors of bad arguments --


# name -> (call(B, *tensors), arrays): values, dtypes and the gradients of float inputs
TORCH_CASES = {
    "diag of a vector": (lambda B, x: B.diag(x), [R(3)]),
    "diag of a vector offset 2": (lambda B, x: x.diag(2), [R(3)]),
    "diag of a vector offset -1": (lambda B, x: B.diag(x, -1), [R(3)]),
    "diag of a matrix": (lambda B, x: B.diag(x), [R(3, 4)]),
    "diag of a matrix offset 1": (lambda B, x: B.diag(x, 1), [R(3, 4)]),
    "diag of a matrix offset -2": (lambda B, x: x.diag(-2), [R(3, 4)]),
    "diag of a matrix offset past it": (lambda B, x: B.diag(x, 5), [R(3, 4)]),
    "diag of an empty vector": (lambda B, x: B.diag(x), [R(0)]),
    "diag of ints": (lambda B, x: B.diag(x), [I(1, 2, 3)]),
    "diagonal": (lambda B, x: B.diagonal(x), [R(3, 4)]),
    "diagonal offset, dims": (lambda B, x: x.diagonal(1, 2, 0), [R(3, 4, 5)]),
    "diagonal negative dims": (lambda B, x: B.diagonal(x, -1, -1, -2), [R(2, 3, 4)]),
    "diagonal then sum": (lambda B, x: B.diagonal(x, 0, 0, 1).sum(-1), [R(3, 3, 2)]),
    "diag_embed": (lambda B, x: B.diag_embed(x), [R(2, 3)]),
    "diag_embed offset, dims": (lambda B, x: x.diag_embed(1, 0, 2), [R(2, 3)]),
    "diag_embed negative offset": (lambda B, x: B.diag_embed(x, -2, -1, 0), [R(2, 3)]),
    "tril_indices": (lambda B: B.tril_indices(4, 3), []),
    "tril_indices offset": (lambda B: B.tril_indices(3, 5, 1), []),
    "triu_indices offset": (lambda B: B.triu_indices(4, 3, -1), []),
    "triu_indices empty": (lambda B: B.triu_indices(0, 3), []),
    "tril_indices int32": (lambda B: B.tril_indices(3, 3, dtype=B.int32), []),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name, dtype):
    call, arrays = TORCH_CASES[name]
    check(call, *arrays, dtype=dtype)


GRADCHECK = {
    "diagonal": (lambda x: mg.diagonal(x, 1, 0, 2), [R(3, 2, 4)]),
    "diag_embed": (lambda x: mg.diag_embed(x, -1, 0, 2), [R(2, 3)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_in_float64(name):
    call, arrays = GRADCHECK[name]
    check_gradient(call, *arrays)


# name -> (call, the error, a fragment of its message)
BAD_ARGUMENTS = {
    "diag of a 3-d tensor": (lambda: mg.diag(mg.zeros(2, 2, 2)), DimError, "(2, 2, 2)"),
    "diagonal of a vector": (lambda: mg.diagonal(mg.zeros(3)), DimError, "(3,)"),
    "diagonal with the same dim twice": (
        lambda: mg.diagonal(mg.zeros(3, 3), 0, 1, -1),
        DimError,
        "both are 1",
    ),
    "diagonal dim out of range": (lambda: mg.diagonal(mg.zeros(3, 3), 0, 0, 2), DimError, "dim 2"),
    "diag_embed of a 0-d tensor": (lambda: mg.diag_embed(mg.tensor(1.0)), DimError, "0-d"),
    "tril_indices negative rows": (lambda: mg.tril_indices(-1, 3), ArgumentError, "row=-1"),
    "triu_indices float dtype": (
        lambda: mg.triu_indices(3, 3, dtype=mg.float32),
        DTypeError,
        "float32",
    ),
    "tril_indices float size": (lambda: mg.tril_indices(2.5, 3), TypeError, "2.5"),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    assert_clear_error(*BAD_ARGUMENTS[name])


def f32(*shape):
    return mg.ones(*shape)


def f64(*shape):
    return mg.ones(*shape, dtype=mg.float64)


def i64(*shape):
    return mg.ones(*shape, dtype=mg.int64)


TRACES = [  # name, mg call, torch call, shapes of the operands
    ("trace", mg.trace, torch.trace, [(3, 3)]),
    ("trace wide", lambda a: a.trace(), lambda a: a.trace(), [(2, 4)]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, mg_fn, torch_fn, shapes", TRACES, ids=[row[0] for row in TRACES])
def test_trace_against_torch(name, mg_fn, torch_fn, shapes, dtype):
    arrays = [values(-2, 2, shape, dtype, seed=k) for k, shape in enumerate(shapes)]
    check_against_torch(mg_fn, torch_fn, arrays, dtype)
    assert mg.gradcheck(
        mg_fn, [values(-2, 2, shape, "float64", seed=k + 7) for k, shape in enumerate(shapes)]
    )


# integer tensors (fractional beta/alpha/value are left out: torch casts those to the integer
# type, minigrad gives a float result, a difference listed in the README)
TRACES_OF_INTEGERS = [row for row in TRACES if row[0] not in []]


@pytest.mark.parametrize(
    "name, mg_fn, torch_fn, shapes", TRACES_OF_INTEGERS, ids=[row[0] for row in TRACES_OF_INTEGERS]
)
def test_trace_of_integers(name, mg_fn, torch_fn, shapes):
    arrays = [np.random.default_rng(k).integers(-3, 4, shape) for k, shape in enumerate(shapes)]
    check_against_torch(mg_fn, torch_fn, arrays, "int64", grad=False)


BAD_TRACES = [  # call, exception, message
    (
        lambda: mg.trace(f32(2, 3, 3)),
        ShapeError,
        r"trace: expects a matrix \(2-D\); got shape \(2, 3, 3\)",
    ),
    (lambda: mg.trace(mg.ones(2, 2, dtype=mg.bool)), DTypeError, "got dtype bool"),
]


@pytest.mark.parametrize(
    "call, error, message", BAD_TRACES, ids=[f"bad{k}" for k in range(len(BAD_TRACES))]
)
def test_bad_traces_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
    # torch raises RuntimeError (TypeError for the types)
    assert issubclass(error, (TypeError, RuntimeError))
