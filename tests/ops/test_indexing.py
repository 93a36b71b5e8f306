"""Indexing (minigrad/ops/indexing.py: x[index], gather, take_along_dim, scatter ...): values
against numpy and torch, repeated indices whose gradients add up, and out-of-range indices
that name the shape.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import DTypeError
from op_checks import assert_clear_error, check_gradient, rand, value
from parity import R, assert_close, check, raises_like_torch

INDEXES = [
    ("int", 1),
    ("negative_int", -1),
    ("slice", slice(1, None)),
    ("step_slice", (slice(None), slice(None, None, 2))),
    ("int_and_slice", (0, slice(1, 3))),
    ("none_and_ellipsis", (None, Ellipsis, 2)),
    ("int_array_repeated", np.array([2, 0, 2, 2])),
    ("list_repeated", [1, 1, 0]),
    ("two_int_arrays", (np.array([0, 2, 2]), np.array([1, 1, 3]))),
    ("array_and_slice", (slice(None), np.array([3, 0, 3]))),
    ("bool_mask_rows", np.array([True, False, True])),
    ("bool_mask_full", "mask"),
    ("2d_int_array", np.array([[0, 1], [2, 0]])),
]


@pytest.mark.parametrize("name, index", INDEXES, ids=[i[0] for i in INDEXES])
def test_getitem(name, index):
    x = rand(3, 4, seed=19)
    if isinstance(index, str):
        index = x > 0.3
    np.testing.assert_array_equal(value(lambda t: t[index], x), x[index])
    check_gradient(lambda t: t[index], x)


def test_getitem_with_tensor_indices():
    x = rand(3, 4, seed=20)
    rows = mg.tensor([2, 2, 0])
    mask = mg.tensor(x) > 0
    np.testing.assert_array_equal(value(lambda t: t[rows], x), x[[2, 2, 0]])
    np.testing.assert_array_equal(value(lambda t: t[mask], x), x[x > 0])
    check_gradient(lambda t: t[rows, 1:], x)
    check_gradient(lambda t: t[mask], x)


def test_repeated_index_gradients_add_up():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 2, 2, 2]].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 3.0])


def test_getitem_out_of_range_names_shape():
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        mg.zeros(3, 4)[5]


def test_getitem_negative_step_is_refused_as_in_torch():
    with pytest.raises(ValueError, match="flip"):
        mg.zeros(3, 4)[::-1]


@pytest.mark.parametrize(
    "dim, index",
    [
        (0, np.array([[0, 1, 2, 0], [2, 2, 2, 1]])),
        (1, np.array([[3, 3, 0], [1, 1, 1], [0, 2, 3]])),  # repeated indices, fewer columns
        (-1, np.array([[0], [3], [2]])),
        (1, np.array([[1, 2], [0, 0]])),  # fewer rows than the input
    ],
)
def test_gather(dim, index):
    x = rand(3, 4, seed=21)
    expected = np.empty(index.shape)
    for i, j in np.ndindex(*index.shape):  # the definition, element by element
        expected[i, j] = x[index[i, j], j] if dim == 0 else x[i, index[i, j]]
    np.testing.assert_array_equal(value(lambda t: t.gather(dim, mg.tensor(index)), x), expected)
    check_gradient(lambda t: mg.gather(t, dim, index), x)


def test_gather_1d_and_3d():
    x = rand(5, seed=22)
    index = np.array([4, 4, 0])
    np.testing.assert_array_equal(value(lambda t: t.gather(0, index), x), x[index])
    check_gradient(lambda t: t.gather(0, index), x)
    cube = rand(2, 3, 4, seed=23)
    index3 = np.random.default_rng(0).integers(0, 3, size=(2, 5, 4))
    check_gradient(lambda t: t.gather(1, index3), cube)


def test_gather_errors():
    x = mg.zeros(3, 4)
    with pytest.raises(ValueError) as info:
        x.gather(1, np.zeros((4, 2), dtype=np.int64))
    assert "(4, 2)" in str(info.value) and "(3, 4)" in str(info.value)
    with pytest.raises(ValueError, match=r"\(3,\)"):
        x.gather(1, np.zeros(3, dtype=np.int64))
    with pytest.raises(IndexError, match="4"):
        x.gather(1, np.array([[4], [0], [0]]))
    with pytest.raises(TypeError, match="float"):
        x.gather(1, np.zeros((3, 1)))


@pytest.mark.parametrize(
    "shape, dim, count",
    [((4, 5), 0, 3), ((4, 5), 1, 5), ((3, 4, 6), 2, 2), ((3, 4, 6), -2, 4), ((7,), 0, 7)],
)
def test_scatter_matches_torch_values_and_gradients(shape, dim, count):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(shape) + dim)
    x = rng.standard_normal(shape)
    axis = dim % len(shape)
    index_shape = shape[:axis] + (count,) + shape[axis + 1 :]
    # distinct places along dim (a place written twice keeps an unspecified one of the values, in
    # torch)
    index = np.argsort(rng.random(shape), axis=axis)[tuple(slice(0, s) for s in index_shape)]
    src = rng.standard_normal(index_shape)
    ours, ours_src = mg.tensor(x, requires_grad=True), mg.tensor(src, requires_grad=True)
    theirs, theirs_src = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    out = ours.scatter(dim, mg.tensor(index), ours_src)
    reference = theirs.scatter(dim, torch.from_numpy(index), theirs_src)
    np.testing.assert_array_equal(out.numpy(), reference.detach().numpy())
    grad = rng.standard_normal(shape)
    (out * mg.tensor(grad)).sum().backward()
    (reference * torch.from_numpy(grad)).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    np.testing.assert_array_equal(ours_src.grad.numpy(), theirs_src.grad.numpy())
    np.testing.assert_array_equal(
        mg.scatter(mg.tensor(x), dim, mg.tensor(index), value=2.5).numpy(),
        torch.scatter(torch.tensor(x), dim, torch.from_numpy(index), value=2.5).numpy(),
    )


def test_scatter_in_place_and_top_p_sampling_as_torch_code_writes_it():
    torch = pytest.importorskip("torch")
    logits = np.random.default_rng(1).standard_normal((3, 10)).astype(np.float32)

    def top_p(B, F, logits, p=0.8):
        sorted_logits, sorted_indices = B.sort(logits, descending=True)
        cumulative = B.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        remove = cumulative > p
        remove[..., 1:] = remove[..., :-1].clone()
        remove[..., 0] = False
        indices_to_remove = remove.scatter(1, sorted_indices, remove)
        return logits.masked_fill(indices_to_remove, float("-inf"))

    import torch.nn.functional as torch_functional

    import minigrad.nn.functional as mg_functional

    np.testing.assert_array_equal(
        top_p(mg, mg_functional, mg.tensor(logits)).numpy(),
        top_p(torch, torch_functional, torch.tensor(logits)).numpy(),
    )
    ours, theirs = mg.zeros(3, 4), torch.zeros(3, 4)
    index = np.array([[1, 3], [0, 2], [2, 1]])
    ours.scatter_(1, mg.tensor(index), value=1.0)
    theirs.scatter_(1, torch.from_numpy(index), value=1.0)
    ours.scatter_add_(1, mg.tensor(index), mg.ones(3, 2))
    theirs.scatter_add_(1, torch.from_numpy(index), torch.ones(3, 2))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(
        mg.errors.ArgumentError, match="give src .* or value .*, not both or neither"
    ):
        ours.scatter(1, mg.tensor(index))
    with pytest.raises(mg.errors.ShapeError, match="index of shape"):
        ours.scatter(1, mg.tensor(np.zeros((3, 2, 1), np.int64)), value=1.0)


def test_a_tuple_inside_an_index_is_a_sequence_as_a_list_is():
    torch = pytest.importorskip("torch")
    x = np.arange(2 * 3 * 4 * 5 * 6 * 7, dtype=np.float32).reshape(2, 3, 4, 5, 6, 7)
    for index in [
        (1, (2, 1, 0), None, [0, 1, 2], (2, 1, 0), slice(None)),
        (1, (2, 1, 0), None, slice(1, 3), (2, 1, 0), 2),
        (0, (1,), Ellipsis, (3, 0)),
    ]:
        leaf = mg.tensor(x, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        ours, expected = leaf[index], theirs[index]
        assert_close(ours, expected, what=str(index))
        upstream = np.random.default_rng(0).standard_normal(tuple(expected.shape))
        ours.backward(mg.tensor(upstream.astype(np.float32)))
        expected.backward(torch.tensor(upstream, dtype=torch.float32))
        assert_close(leaf.grad, theirs.grad, what=f"gradient of {index}")


@pytest.mark.parametrize("value", [1.0, 0.0])
def test_a_0d_float_tensor_is_no_index(value):
    torch = pytest.importorskip("torch")
    raises_like_torch(
        lambda: mg.arange(5)[mg.tensor(value)],
        lambda: torch.arange(5)[torch.tensor(value)],
        must_mention=["float32"],
    )


# -- tables: against torch (parity.check), float64 gradchecks, the errors of bad arguments --


# name -> (call(B, *tensors), arrays): values, dtypes and the gradients of float inputs
TORCH_CASES = {
    "take": (lambda B, x: B.take(x, B.tensor([[0, -1], [5, 2]])), [R(2, 3)]),
    "take repeated": (lambda B, x: x.take(B.tensor([1, 1, 1])), [R(4)]),
    "take empty index": (lambda B, x: B.take(x, B.tensor([], dtype=B.int64)), [R(4)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(TORCH_CASES))
def test_matches_torch(name, dtype):
    call, arrays = TORCH_CASES[name]
    check(call, *arrays, dtype=dtype)


GRADCHECK = {"take": (lambda x: mg.take(x, mg.tensor([0, 0, -1, 3])), [R(2, 2)])}


@pytest.mark.parametrize("name", list(GRADCHECK))
def test_gradcheck_in_float64(name):
    call, arrays = GRADCHECK[name]
    check_gradient(call, *arrays)


# name -> (call, the error, a fragment of its message)
BAD_ARGUMENTS = {
    "take with a float index": (
        lambda: mg.take(mg.zeros(3), mg.tensor([0.0])),
        DTypeError,
        "float32",
    ),
    "take out of range": (lambda: mg.take(mg.zeros(3), mg.tensor([3])), IndexError, "[-3, 3)"),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    assert_clear_error(*BAD_ARGUMENTS[name])
