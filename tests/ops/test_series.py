"""The series ops (minigrad/ops/series.py: logspace, vander, trapezoid) against torch: values,
dtypes and gradients in float32 and float64 (vander's values only: torch's own backward fails),
float64 gradchecks, and the clear errors of bad arguments.
"""

import pytest

import minigrad as mg
from minigrad.errors import ArgumentError, DimError, ShapeError
from parity import I, N, R, check

torch = pytest.importorskip("torch")


SERIES_CASES = {
    "logspace": (lambda B: B.logspace(-1, 2, 5), []),
    "logspace base 2, float64": (lambda B: B.logspace(0, 10, 11, base=2, dtype=B.float64), []),
    "logspace one step": (lambda B: B.logspace(3, 5, 1), []),
    "trapezoid": (lambda B, y: B.trapezoid(y), [R(5)]),
    "trapezoid dx dim 0": (lambda B, y: B.trapezoid(y, dx=0.5, dim=0), [R(4, 3)]),
    "trapezoid x 1-D": (lambda B, y, x: B.trapezoid(y, x), [R(2, 4), N(0, 0.5, 2, 3)]),
    "trapezoid x full shape": (lambda B, y, x: B.trapezoid(y, x, dim=0), [R(3, 2), R(3, 2)]),
    "trapezoid one sample": (lambda B, y: B.trapezoid(y), [R(2, 1)]),
    "trapezoid ints": (lambda B, y: B.trapezoid(y), [I(1, 2, 4)]),
}


# values only: torch 2.13's vander backward fails (its own in-place cumprod); gradcheck has ours
VANDER_CASES = {
    "vander": (lambda B, x: B.vander(x), [R(4)]),
    "vander N, increasing": (lambda B, x: B.vander(x, 3, True), [N(0, 1, 2, -1)]),
    "vander N = 0": (lambda B, x: B.vander(x, N=0), [R(3)]),
    "vander ints": (lambda B, x: B.vander(x, 4), [I(1, 2, 3)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(SERIES_CASES) + list(VANDER_CASES))
def test_matches_torch(name, dtype):
    call, arrays = SERIES_CASES.get(name) or VANDER_CASES[name]
    check(call, *arrays, dtype=dtype, grad=name in SERIES_CASES)


GRADCHECK = {
    "vander": (lambda x: mg.vander(x, 4), [N(0.0, 1.5, -2.0)]),
    "trapezoid": (lambda y, x: mg.trapezoid(y, x, dim=0), [R(4, 2), R(4)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_in_float64(name):
    call, arrays = GRADCHECK[name]
    assert mg.gradcheck(call, [mg.tensor(a, requires_grad=True) for a in arrays])


BAD_ARGUMENTS = {
    "vander of a matrix": (lambda: mg.vander(mg.zeros(2, 2)), DimError, "(2, 2)"),
    "vander negative N": (lambda: mg.vander(mg.zeros(2), -1), ArgumentError, "-1"),
    "trapezoid x and dx": (
        lambda: mg.trapezoid(mg.zeros(3), mg.zeros(3), dx=1.0),
        ArgumentError,
        "not both",
    ),
    "trapezoid x of the wrong length": (
        lambda: mg.trapezoid(mg.zeros(3), mg.zeros(2)),
        ShapeError,
        "length 3",
    ),
    "logspace negative steps": (lambda: mg.logspace(0, 1, -1), ArgumentError, "-1"),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    """The error names what was expected and what was given; minigrad's errors are RuntimeErrors
    too."""
    call, error, fragment = BAD_ARGUMENTS[name]
    with pytest.raises(error) as raised:
        call()
    assert fragment in str(raised.value)
    assert isinstance(raised.value, RuntimeError) or error is TypeError
