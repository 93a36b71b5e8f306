"""The special functions (minigrad/ops/special.py: digamma, logit, xlogy, erf ...) against torch
over many values and at their poles, and their gradients (digamma's is trigamma).
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import ShapeError
from op_checks import check_against_torch, nan, values
from parity import assert_close

torch = pytest.importorskip("torch")


def test_digamma_gradient_is_trigamma():
    x = np.array([-2.5, -0.3, 0.2, 1.0, 1.5, 9.9, 30.0, 1e5])
    mine = mg.tensor(x, requires_grad=True)
    mg.digamma(mine).sum().backward()
    np.testing.assert_allclose(
        mine.grad.numpy(), torch.polygamma(1, torch.tensor(x)).numpy(), rtol=1e-9
    )
    # at a pole both give a huge rounding of +inf (pi^2 / sin(pi x)^2)
    for dtype in ("float32", "float64"):
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
    check_against_torch(
        lambda x: mg.logit(x, eps=eps), lambda x: torch.logit(x, eps=eps), [edges], dtype
    )
    check_against_torch(
        lambda x: x.logit(eps), lambda x: x.logit(eps), [values(0.05, 0.95, (4,), dtype)], dtype
    )


def test_xlogy_gradient_in_x_is_log_y_also_where_x_is_zero():
    x, y = np.array([0.0, 0.0, 1.0, 0.0, 2.0]), np.array([2.0, 0.0, 3.0, -1.0, 0.5])
    ours = [mg.tensor(v, requires_grad=True) for v in (x, y)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (x, y)]
    mg.xlogy(*ours).sum().backward()
    torch.xlogy(*theirs).sum().backward()
    for a, b in zip(ours, theirs):
        assert_close(a.grad, b.grad)


def f32(*shape):
    return mg.ones(*shape)


def f64(*shape):
    return mg.ones(*shape, dtype=mg.float64)


def i64(*shape):
    return mg.ones(*shape, dtype=mg.int64)


BAD_XLOGY = [  # call, exception, message
    (
        lambda: mg.xlogy(f32(2, 3), f32(4)),
        ShapeError,
        r"xlogy: shapes \(2, 3\) and \(4,\) cannot be broadcast",
    ),
    (lambda: mg.xlogy(2, 3), TypeError, "expected at least one tensor; got 2 and 3"),
]


@pytest.mark.parametrize(
    "call, error, message", BAD_XLOGY, ids=[f"bad{k}" for k in range(len(BAD_XLOGY))]
)
def test_bad_xlogy_inputs_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
    # torch raises RuntimeError (TypeError for the types)
    assert issubclass(error, (TypeError, RuntimeError))
