"""The shape ops (minigrad/ops/shape.py: reshape, permute, flip, squeeze, broadcast_to ...):
values against numpy and torch, gradients that move back exactly, and errors that name the
shapes and dims.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
from minigrad.errors import ArgumentError, DimError, ShapeError
from op_checks import FAST, assert_clear_error, check_gradient, rand, value
from parity import R, check

SHAPE_OPS = [
    ("reshape", lambda t: t.reshape(4, 6), lambda a: a.reshape(4, 6)),
    ("reshape_tuple", lambda t: mg.reshape(t, (3, -1)), lambda a: a.reshape(3, -1)),
    ("view", lambda t: t.view(-1), lambda a: a.reshape(-1)),
    ("transpose", lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("transpose_neg", lambda t: mg.transpose(t, -1, -2), lambda a: a.swapaxes(-1, -2)),
    ("permute", lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("permute_tuple", lambda t: mg.permute(t, (1, 2, 0)), lambda a: a.transpose(1, 2, 0)),
    ("T", lambda t: t.T, lambda a: a.T),
    ("unsqueeze", lambda t: t.unsqueeze(1), lambda a: a[:, None]),
    ("unsqueeze_end", lambda t: mg.unsqueeze(t, -1), lambda a: a[..., None]),
    ("flip", lambda t: t.flip(0), lambda a: a[::-1]),
    ("flip_dims", lambda t: mg.flip(t, (0, 2)), lambda a: a[::-1, :, ::-1]),
    ("flatten", lambda t: t.flatten(), lambda a: a.reshape(-1)),
    ("flatten_range", lambda t: mg.flatten(t, 1), lambda a: a.reshape(2, 12)),
    ("flatten_start_end", lambda t: t.flatten(0, 1), lambda a: a.reshape(6, 4)),
    (
        "expand_leading",
        lambda t: t[:, :1].expand(5, 2, 3, 4),
        lambda a: np.broadcast_to(a[:, :1], (5, 2, 3, 4)),
    ),
    ("expand_minus_one", lambda t: mg.expand(t[:1], -1, 3, 4), lambda a: a[:1]),
    (
        "expand_size1",
        lambda t: t[:, :, 1:2].expand(2, 3, 5),
        lambda a: np.broadcast_to(a[:, :, 1:2], (2, 3, 5)),
    ),
    ("clone", lambda t: t.clone(), lambda a: a),
]


@pytest.mark.parametrize("name, op, reference", SHAPE_OPS, ids=[s[0] for s in SHAPE_OPS])
def test_shape_ops(name, op, reference):
    x = rand(2, 3, 4, seed=17)
    out = value(op, x)
    np.testing.assert_array_equal(out, reference(x))
    check_gradient(op, x)


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=3), data=st.data())
def test_permute_and_flip_random(shape, data):
    order = data.draw(st.permutations(range(len(shape))))
    flips = data.draw(st.lists(st.integers(0, len(shape) - 1), max_size=len(shape), unique=True))
    x = rand(*shape, seed=len(shape))
    fn = lambda t: t.permute(*order).flip(flips) if flips else t.permute(*order)  # noqa: E731
    expected = np.transpose(x, order)
    expected = np.flip(expected, flips) if flips else expected
    np.testing.assert_array_equal(value(fn, x), expected)
    check_gradient(fn, x)


def test_squeeze():
    x = rand(2, 1, 3, 1, seed=18)
    assert value(lambda t: t.squeeze(), x).shape == (2, 3)
    assert value(lambda t: t.squeeze(1), x).shape == (2, 3, 1)
    assert value(lambda t: mg.squeeze(t, -1), x).shape == (2, 1, 3)
    assert value(lambda t: t.squeeze(0), x).shape == (2, 1, 3, 1)  # size 2: unchanged, as torch
    np.testing.assert_array_equal(value(lambda t: t.squeeze(), x), x.reshape(2, 3))
    check_gradient(lambda t: t.squeeze(), x)
    check_gradient(lambda t: t.squeeze(1), x)


def test_shape_op_gradient_moves_back_exactly():
    x = mg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    weights = mg.tensor(np.arange(6.0).reshape(3, 2) * 10)
    (x.T * weights).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), weights.numpy().T)


@pytest.mark.parametrize(
    "call, shapes",
    [
        (lambda: mg.zeros(2, 3).reshape(4, 2), [(2, 3), (4, 2)]),
        (lambda: mg.zeros(2, 3).view(-1, 4), [(2, 3)]),
        (lambda: mg.zeros(2, 3).expand(3, 3), [(2, 3), (3, 3)]),
        (lambda: mg.zeros(2, 3).expand(3), [(2, 3)]),
        (lambda: mg.zeros(2, 3).permute(0, 0), [(2, 3)]),
    ],
)
def test_shape_errors_name_shapes(call, shapes):
    with pytest.raises(ValueError) as info:
        call()
    for shape in shapes:
        assert str(shape) in str(info.value)


def test_dim_out_of_range():
    with pytest.raises(IndexError, match="3"):
        mg.zeros(2, 3).transpose(0, 3)
    with pytest.raises(IndexError):
        mg.zeros(2, 3).unsqueeze(4)


def test_mT_and_type_match_torch():
    torch = pytest.importorskip("torch")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    ours = mg.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    np.testing.assert_array_equal(ours.mT.numpy(), theirs.mT.detach().numpy())
    (ours.mT * mg.tensor(np.arange(24.0, dtype=np.float32).reshape(2, 4, 3))).sum().backward()
    (theirs.mT * torch.arange(24.0).reshape(2, 4, 3)).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    assert ours.type() == "float32" and ours.type(mg.float64).dtype == np.float64
    assert ours.type(mg.int64).numpy().tolist() == theirs.type(torch.int64).tolist()


# -- tables: against torch (parity.check), float64 gradchecks, the errors of bad arguments --


# name -> (call(B, *tensors), arrays): values, dtypes and the gradients of float inputs
TORCH_CASES = {
    "broadcast_to (3,1)->(2,3,4)": (lambda B, x: B.broadcast_to(x, (2, 3, 4)), [R(3, 1)]),
    "broadcast_to -1": (lambda B, x: x.broadcast_to(-1, 4), [R(3, 1)]),
    "broadcast_to empty": (lambda B, x: B.broadcast_to(x, (2, 0, 3)), [R(0, 1)]),
    "ravel of a transpose": (lambda B, x: x.t().ravel(), [R(3, 4)]),
    "ravel 0-d": (lambda B, x: B.ravel(x), [R()]),
    "fliplr": (lambda B, x: B.fliplr(x), [R(3, 4, 2)]),
    "flipud": (lambda B, x: x.flipud(), [R(3)]),
    "rot90 k=1": (lambda B, x: B.rot90(x), [R(2, 3)]),
    "rot90 k=2": (lambda B, x: B.rot90(x, 2), [R(2, 3)]),
    "rot90 k=-1 dims (2, 0)": (lambda B, x: x.rot90(-1, (2, 0)), [R(2, 3, 4)]),
    "rot90 k=7": (lambda B, x: B.rot90(x, 7, [1, 2]), [R(2, 3, 4)]),
    "rot90 k=0": (lambda B, x: B.rot90(x, 0), [R(2, 3)]),
    "unfold": (lambda B, x: x.unfold(0, 2, 1), [R(5)]),
    "unfold step > size": (lambda B, x: x.unfold(1, 2, 3), [R(2, 7, 2)]),
    "unfold negative dim, whole dim": (lambda B, x: x.unfold(-1, 4, 2), [R(3, 4)]),
    "unfold size 0": (lambda B, x: x.unfold(0, 0, 1), [R(3)]),
    "unfold 0-d": (lambda B, x: x.unfold(0, 1, 1), [R()]),
    "select": (lambda B, x: B.select(x, 1, -1), [R(2, 3, 4)]),
    "swapdims": (lambda B, x: B.swapdims(x, 0, -1), [R(2, 3, 4)]),
    "moveaxis": (lambda B, x: B.moveaxis(x, (0, 1), (-1, 0)), [R(2, 3, 4)]),
    "unflatten": (lambda B, x: x.unflatten(1, (2, -1)), [R(3, 4)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name, dtype):
    call, arrays = TORCH_CASES[name]
    check(call, *arrays, dtype=dtype)


GRADCHECK = {
    "unfold": (lambda x: x.unfold(1, 3, 2), [R(2, 7)]),
    "rot90": (lambda x: mg.rot90(x, 3, (1, 0)), [R(2, 3)]),
}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_in_float64(name):
    call, arrays = GRADCHECK[name]
    check_gradient(call, *arrays)


# name -> (call, the error, a fragment of its message)
BAD_ARGUMENTS = {
    "broadcast_to a smaller shape": (
        lambda: mg.broadcast_to(mg.zeros(2, 3), (3,)),
        ShapeError,
        "(2, 3)",
    ),
    "fliplr of a vector": (lambda: mg.fliplr(mg.zeros(3)), DimError, "(3,)"),
    "flipud of a 0-d tensor": (lambda: mg.flipud(mg.tensor(1.0)), DimError, "0-d"),
    "rot90 of a vector": (lambda: mg.rot90(mg.zeros(3)), DimError, "(3,)"),
    "rot90 with one dim": (lambda: mg.rot90(mg.zeros(2, 2), 1, (0,)), ArgumentError, "(0,)"),
    "rot90 with the same dim twice": (
        lambda: mg.rot90(mg.zeros(2, 2), 1, (0, -2)),
        DimError,
        "(0, -2)",
    ),
    "rot90 with a float k": (lambda: mg.rot90(mg.zeros(2, 2), 1.5), TypeError, "1.5"),
    "unfold window too long": (lambda: mg.zeros(3).unfold(0, 4, 1), ArgumentError, "size 4"),
    "unfold step 0": (lambda: mg.zeros(3).unfold(0, 2, 0), ArgumentError, "step 0"),
    "unfold dim out of range": (lambda: mg.zeros(3).unfold(1, 2, 1), DimError, "dim 1"),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    assert_clear_error(*BAD_ARGUMENTS[name])
