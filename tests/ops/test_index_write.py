"""The index writes (minigrad/ops/index_write.py: scatter_reduce, index_add_, index_copy_ ...)
done in place: they follow the graph and the version counter as torch's do, a write after a saved
use raises in backward, and a write into a leaf that requires grad is refused.
"""

import pytest

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, DimError, ShapeError
from op_checks import assert_clear_error, check_gradient
from parity import I, N, R, check

torch = pytest.importorskip("torch")


IN_PLACE_WRITES = {
    "scatter_reduce_": lambda B, h, s: h.scatter_reduce_(
        0, B.tensor([[0, 1], [0, 0], [1, 1]]), s, "amax", include_self=False
    ),
    "index_add_": lambda B, h, s: h.index_add_(0, B.tensor([2, 2, 0]), s, alpha=3),
    "index_copy_": lambda B, h, s: h.index_copy_(0, B.tensor([1, 0, 2]), s),
    "index_fill_": lambda B, h, s: h.index_fill_(0, B.tensor([1]), s[0, 0]),
}


@pytest.mark.parametrize("name", list(IN_PLACE_WRITES))
def test_in_place_writes_follow_the_graph_and_the_version_counter(name):
    """h = x * 2; h.op_(..., s); a view of h sees it; the gradients of x and s are torch's."""

    def call(B, x, s):
        h = x * 2
        row = h[1]
        before = h._version if B is torch else h._version[0]
        out = IN_PLACE_WRITES[name](B, h, s)
        assert out is h and (h._version if B is torch else h._version[0]) == before + 1
        return h, row * 1

    check(call, R(3, 2), R(3, 2))


def test_an_in_place_write_after_a_saved_use_raises_in_backward():
    x = mg.tensor(R(3), requires_grad=True)
    h = x * 1
    y = h * h  # saves h
    h.index_add_(0, mg.tensor([0]), mg.tensor(R(1)))
    with pytest.raises(RuntimeError, match="modified|changed|version"):
        y.sum().backward()


def test_an_in_place_write_into_a_leaf_that_requires_grad_is_refused():
    w = mg.zeros(3, requires_grad=True)
    for fill in (
        lambda: w.index_fill_(0, mg.tensor([0]), 1.0),
        lambda: w.uniform_(),
        lambda: w.normal_(),
    ):
        with pytest.raises(RuntimeError, match="leaf"):
            fill()
    with mg.no_grad():
        w.uniform_(-1, 1)
    assert w._version[0] == 1 and w.requires_grad


# -- tables: against torch (parity.check), float64 gradchecks, the errors of bad arguments --


def _scatter_case(reduce, include_self, x, index, src, dim=0):
    return (
        lambda B, x_, s_: B.scatter_reduce(
            x_, dim, B.tensor(index), s_, reduce, include_self=include_self
        ),
        [x, src],
    )


SCATTER_INDEX = I(0, 1, 0, 1, 2, 1, 2, 0, 0).reshape(3, 3)


# name -> (call(B, *tensors), arrays): values, dtypes and the gradients of float inputs
TORCH_CASES = {
    **{
        f"scatter_reduce {reduce} include_self={flag}": _scatter_case(
            reduce, flag, R(3, 3), SCATTER_INDEX, R(3, 3)
        )
        for reduce in ("sum", "prod", "mean", "amax", "amin")
        for flag in (True, False)
    },
    "scatter_reduce prod zeros": _scatter_case(
        "prod", True, N(0, 2, 3, 0, 1, 2), I(0, 0, 1, 1, 1, 2), N(2, 0, 0, 4, 0, 5)
    ),
    "scatter_reduce prod zeros without self": _scatter_case(
        "prod", False, N(0, 2, 3, 1), I(0, 0, 1, 1, 3), N(2, 0, 0, 4, 5)
    ),
    "scatter_reduce amax ties": _scatter_case(
        "amax", True, N(1, 5, 0), I(0, 0, 1, 1, 2), N(1, 1, 5, 2, -1)
    ),
    "scatter_reduce amin ties without self": _scatter_case(
        "amin", False, N(1, 5, 0), I(0, 0, 1, 1), N(1, 1, 5, 5)
    ),
    "scatter_reduce dim 1": _scatter_case(
        "mean", True, R(2, 4), I(3, 0, 3, 1).reshape(2, 2), R(2, 2), dim=1
    ),
    "scatter_reduce method, ints": (
        lambda B, x, s: x.scatter_reduce(0, B.tensor([0, 0, 2]), s, "mean"),
        [I(5, 5, 5), I(2, 3, 7)],
    ),
    "scatter_reduce ints amax": (
        lambda B, x, s: B.scatter_reduce(x, 0, B.tensor([0, 0, 2]), s, "amax", include_self=False),
        [I(5, 5, 5), I(2, 3, 7)],
    ),
    "index_add": (lambda B, x, s: B.index_add(x, 0, B.tensor([2, 0, 2]), s), [R(3, 2), R(3, 2)]),
    "index_add alpha, dim -1": (
        lambda B, x, s: x.index_add(-1, B.tensor([1]), s, alpha=-2.5),
        [R(2, 3), R(2, 1)],
    ),
    "index_add 0-d": (lambda B, x, s: B.index_add(x, 0, B.tensor([0]), s), [R(), R()]),
    "index_copy": (lambda B, x, s: B.index_copy(x, 1, B.tensor([2, 0]), s), [R(2, 3), R(2, 2)]),
    "index_copy method": (lambda B, x, s: x.index_copy(0, B.tensor(1), s), [R(2, 3), R(1, 3)]),
    "index_fill": (lambda B, x: B.index_fill(x, 1, B.tensor([0, 2, 0]), -1.5), [R(2, 3)]),
    "index_fill negative index": (lambda B, x: x.index_fill(0, B.tensor([-1]), 2.0), [R(3, 2)]),
    "index_fill tensor value": (
        lambda B, x, v: B.index_fill(x, 0, B.tensor([1, 1, 2]), v),
        [R(3, 2), R()],
    ),
    "index_add ints": (
        lambda B, x, s: B.index_add(x, 0, B.tensor([1, 1]), s),
        [I(1, 2, 3), I(10, 20)],
    ),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name, dtype):
    call, arrays = TORCH_CASES[name]
    check(call, *arrays, dtype=dtype)


GRADCHECK = {
    "scatter_reduce prod": (
        lambda x, s: mg.scatter_reduce(x, 0, mg.tensor([0, 0, 1, 2]), s, "prod"),
        [R(3), R(4)],
    ),
    "scatter_reduce mean": (
        lambda x, s: mg.scatter_reduce(x, 0, mg.tensor([0, 0, 2]), s, "mean", include_self=False),
        [R(3), R(3)],
    ),
    "scatter_reduce amin": (
        lambda x, s: mg.scatter_reduce(x, 0, mg.tensor([1, 0, 2]), s, "amin"),
        [R(3), R(3)],
    ),
    "index_add": (
        lambda x, s: mg.index_add(x, 1, mg.tensor([0, 0]), s, alpha=2),
        [R(2, 2), R(2, 2)],
    ),
    "index_copy": (lambda x, s: mg.index_copy(x, 0, mg.tensor([1]), s), [R(2, 2), R(1, 2)]),
    "index_fill": (lambda x, v: mg.index_fill(x, 0, mg.tensor([1, 1]), v), [R(2, 2), R()]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_in_float64(name):
    call, arrays = GRADCHECK[name]
    check_gradient(call, *arrays)


# name -> (call, the error, a fragment of its message)
BAD_ARGUMENTS = {
    "scatter_reduce bad reduce": (
        lambda: mg.scatter_reduce(mg.zeros(3), 0, mg.tensor([0]), mg.zeros(1), "max"),
        ArgumentError,
        "'max'",
    ),
    "scatter_reduce index out of range": (
        lambda: mg.scatter_reduce(mg.zeros(3), 0, mg.tensor([3]), mg.zeros(1), "sum"),
        IndexError,
        "[0, 3)",
    ),
    "scatter_reduce src of another dtype": (
        lambda: mg.scatter_reduce(
            mg.zeros(3), 0, mg.tensor([0]), mg.zeros(1, dtype=mg.float64), "sum"
        ),
        DTypeError,
        "float64",
    ),
    "index_add 2-d index": (
        lambda: mg.index_add(mg.zeros(3), 0, mg.tensor([[0]]), mg.zeros(1)),
        DimError,
        "(1, 1)",
    ),
    "index_add source of the wrong shape": (
        lambda: mg.index_add(mg.zeros(3, 2), 0, mg.tensor([0, 1]), mg.zeros(2, 3)),
        ShapeError,
        "(2, 2)",
    ),
    "index_add negative index": (
        lambda: mg.index_add(mg.zeros(3), 0, mg.tensor([-1]), mg.zeros(1)),
        IndexError,
        "[0, 3)",
    ),
    "index_copy float index": (
        lambda: mg.index_copy(mg.zeros(3), 0, mg.tensor([0.0]), mg.zeros(1)),
        DTypeError,
        "float32",
    ),
    "index_fill value not a number": (
        lambda: mg.index_fill(mg.zeros(3), 0, mg.tensor([0]), mg.zeros(2)),
        ArgumentError,
        "(2,)",
    ),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    assert_clear_error(*BAD_ARGUMENTS[name])
