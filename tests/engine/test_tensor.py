"""Tensor: mg.tensor and its dtype rules, properties, repr, and the errors a user can cause (the
filled, ranged and random creation functions: tests/test_creation.py)."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import Tensor, nn

# -- mg.tensor dtype rules (as torch.tensor) ----------------------------------------------


@pytest.mark.parametrize(
    "data, dtype",
    [
        (1.5, np.float32),
        ([1.0, 2.0], np.float32),
        ([[1, 2.5], [3, 4]], np.float32),  # mixed ints and floats: floating
        (3, np.int64),
        ([1, 2, 3], np.int64),
        ([True, False], np.bool_),
        (np.zeros(3), np.float64),  # a numpy array keeps its dtype
        (np.zeros(3, np.float32), np.float32),
        (np.arange(3, dtype=np.int32), np.int32),
        (np.float64(2.0), np.float64),
    ],
)
def test_tensor_dtype_rules(data, dtype):
    t = mg.tensor(data)
    assert t.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(t.numpy(), np.asarray(data))


def test_tensor_explicit_dtype_overrides():
    t = mg.tensor([1, 2], dtype=mg.float64)
    assert t.dtype == np.float64
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    assert mg.tensor(np.zeros(2), dtype=np.float32).dtype == np.float32


def test_tensor_copies_but_from_numpy_shares_memory():
    array = np.array([1.0, 2.0, 3.0])
    copied = mg.tensor(array)
    shared = mg.from_numpy(array)
    array[0] = 10.0
    assert copied.numpy()[0] == 1.0
    assert shared.numpy()[0] == 10.0
    shared.numpy()[1] = -5.0
    assert array[1] == -5.0
    assert shared.dtype == np.float64


def test_from_numpy_rejects_non_arrays():
    with pytest.raises(TypeError, match="list"):
        mg.from_numpy([1.0, 2.0])


@pytest.mark.parametrize("bad", [np.zeros(2, np.float16), np.zeros(2, np.complex128), ["a", "b"]])
def test_unsupported_dtype_raises_naming_it(bad):
    with pytest.raises(TypeError) as info:
        mg.tensor(bad)
    assert str(np.asarray(bad).dtype) in str(info.value)


@pytest.mark.parametrize("data", [[1, 2, 3], np.arange(3), [True, False]])
def test_int_tensor_cannot_require_grad(data):
    with pytest.raises(TypeError, match="floating point"):
        mg.tensor(data, requires_grad=True)
    t = mg.tensor(data)
    with pytest.raises(TypeError, match=str(t.dtype)):
        t.requires_grad_()


def test_scalar_operand_keeps_float32():
    x = mg.tensor([1.0, 2.0])
    for y in (
        x * 2,
        x * 2.5,
        2.5 * x,
        x + 1,
        1 - x,
        x / 3,
        3 / x,
        x**2,
        x**0.5,
        2**x,
        -x,
        x * np.float64(2.0),
    ):
        assert y.dtype == np.float32
    np.testing.assert_allclose((3 / x).numpy(), [3.0, 1.5])
    np.testing.assert_allclose((2**x).numpy(), [2.0, 4.0])


def test_numpy_scalar_operand_keeps_float32():
    x = mg.tensor([2.0, 4.0])
    for y in (
        x * np.int64(2),
        x / np.int64(2),
        np.int64(3) - x,
        x + np.float32(1),
        x * np.float64(0.5),
    ):
        assert y.dtype == np.float32
    np.testing.assert_array_equal((x / np.int64(2)).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal((np.int64(3) - x).numpy(), [1.0, -1.0])


def test_int_operand_keeps_int64():
    i = mg.tensor([1, 2, 3])
    assert (i + 1).dtype == np.int64
    assert (i * 2).dtype == np.int64
    np.testing.assert_array_equal((i * 2).numpy(), [2, 4, 6])


def test_float64_tensor_meets_scalar():
    x = mg.tensor(np.array([1.0, 2.0]))
    assert (x * 2.5).dtype == np.float64
    assert (0.5 - x).dtype == np.float64


# -- properties -------------------------------------------------------------------------------


def test_shape_dtype_ndim_size():
    x = mg.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4)
    assert x.ndim == 3 and x.dim() == 3
    assert x.size() == (2, 3, 4) and x.size(1) == 3
    assert x.numel() == 24
    assert len(x) == 2
    assert x.dtype == mg.float32


def test_transpose_property_T():
    data = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(mg.tensor(data).T.numpy(), data.T)
    cube = np.arange(24.0).reshape(2, 3, 4)
    assert mg.tensor(cube).T.shape == (4, 3, 2)
    np.testing.assert_array_equal(mg.tensor(cube).T.numpy(), cube.transpose(2, 1, 0))


def test_numpy_item_tolist():
    x = mg.tensor([[1.5, 2.5]])
    assert x.numpy() is x.data.numpy()
    assert mg.tensor([3.25]).item() == 3.25
    assert isinstance(mg.tensor(7).item(), int)
    assert float(mg.tensor(2.5)) == 2.5 and int(mg.tensor(4)) == 4
    assert x.tolist() == [[1.5, 2.5]]
    with pytest.raises(ValueError, match=r"\(1, 2\)"):
        x.item()


def test_detach_shares_data_and_cuts_graph():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    np.testing.assert_array_equal(d.numpy(), [3.0, 6.0])
    assert np.shares_memory(d.numpy(), y.numpy())
    (d * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 6.0])  # d counted as a constant


def test_requires_grad_flag():
    x = mg.tensor([1.0])
    assert not x.requires_grad
    assert x.requires_grad_() is x and x.requires_grad
    x.requires_grad_(False)
    assert not x.requires_grad
    y = mg.tensor([1.0], requires_grad=True) * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)


def test_repr():
    assert repr(mg.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(mg.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(mg.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert repr(mg.tensor(np.array([0.5]))) == "tensor([0.5], dtype=float64)"
    y = mg.tensor([1.0], requires_grad=True).exp()
    assert repr(y) == "tensor([2.7183], grad_fn=<ExpBackward>)"
    assert repr(mg.tensor([[1.0, 2.0], [3.0, 4.0]])) == "tensor([[1., 2.],\n        [3., 4.]])"
    big = repr(mg.zeros(1000))
    assert "..." in big and len(big) < 200


def test_comparisons_give_bool_tensors():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for result, expected in [
        (x > 1.5, [False, True, True]),
        (x <= 2, [True, True, False]),
        (x == 2, [False, True, False]),
        (x != 2, [True, False, True]),
        (~(x < 2), [False, True, True]),
        ((x > 1) & (x < 3), [False, True, False]),
        ((x < 1.5) | (x > 2.5), [True, False, True]),
    ]:
        assert result.dtype == np.bool_ and not result.requires_grad
        np.testing.assert_array_equal(result.numpy(), expected)


def test_numpy_array_on_the_left_gives_a_tensor():
    x = mg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = np.array([10.0, 20.0]) * x
    assert isinstance(y, Tensor)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 20.0])
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0])


def test_python_protocols_iterate_abs_pos_and_reflected_bitwise():
    x = mg.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    rows = list(x)
    assert len(rows) == 2 and rows[1].tolist() == [3.0, 4.0]
    (rows[0].sum() + 2 * rows[1].sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 1.0], [2.0, 2.0]])
    assert abs(x).tolist() == [[1.0, 2.0], [3.0, 4.0]] and (+x) is x
    assert (True & mg.tensor([True, False])).tolist() == [True, False]
    assert (6 | mg.tensor([1, 8])).tolist() == [7, 14] and (5 ^ mg.tensor([1])).tolist() == [4]
    assert list(mg.zeros(0, 3)) == []
    with pytest.raises(TypeError, match="0-d"):
        iter(mg.tensor(1.0))


@pytest.mark.parametrize(
    "data", [np.array(["a", "b"]), np.array([1 + 2j]), object(), np.float16(1.0)]
)
def test_tensor_refuses_dtypes_it_cannot_hold(data):
    with pytest.raises(TypeError, match="minigrad tensors hold"):
        mg.tensor(data)


def test_data_assignment_checks_what_it_gets():
    t = mg.zeros(2, requires_grad=True)
    with pytest.raises(TypeError, match="numpy array"):
        t.data = [1.0, 2.0]
    with pytest.raises(TypeError, match="float"):
        t.data = np.zeros(2, np.int64)
    t.data = np.ones(3, np.float64)  # as torch: another shape or float dtype is allowed
    assert t.shape == (3,) and t.dtype == mg.float64


def test_errors_about_shapes_dims_and_dtypes_are_also_runtime_errors():
    x = mg.zeros(2, 3)
    with pytest.raises(RuntimeError):
        x + mg.zeros(4)
    with pytest.raises(ValueError):
        x + mg.zeros(4)
    with pytest.raises(RuntimeError):
        x.sum(dim=5)
    with pytest.raises(IndexError):
        x.sum(dim=5)
    with pytest.raises(RuntimeError):
        mg.tensor([1, 2]).requires_grad_()


def test_set_default_dtype_refuses_integers_and_round_trips():
    with pytest.raises(TypeError, match="float32 or float64"):
        mg.set_default_dtype(mg.int64)
    try:
        mg.set_default_dtype(mg.float64)
        assert mg.tensor([1.5]).dtype == mg.float64 and mg.zeros(1).dtype == mg.float64
        assert mg.get_default_dtype() == mg.float64
    finally:
        mg.set_default_dtype(mg.float32)
    assert mg.tensor([1.5]).dtype == mg.float32


def test_zero_dim_tensors_format_as_numbers():
    loss = mg.tensor(2.718281828, dtype=mg.float64)
    assert (
        f"{loss:.4f}" == "2.7183"
        and "{:>8.2e}".format(loss) == "2.72e+00"
        and f"{mg.tensor(7):03d}" == "007"
    )
    assert f"{mg.tensor([1.0, 2.0])}" == str(mg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"only a 0-d tensor formats as a number"):
        f"{mg.tensor([1.0, 2.0]):.2f}"


def test_clear_messages_for_torch_values_given_where_minigrad_needs_its_own():
    torch = pytest.importorskip("torch")
    with pytest.raises(
        mg.errors.DTypeError, match="expected a dtype such as mg.float32; got torch.float64"
    ):
        mg.set_default_dtype(torch.float64)
    assert mg.get_default_dtype() == np.float32
    p = nn.Parameter(np.ones(2))
    p.grad = mg.ones(2, dtype=mg.float64)
    with pytest.raises(ValueError, match="norm_type must be a number > 0 or inf; got 'fro'"):
        nn.utils.clip_grad_norm_([p], 1.0, norm_type="fro")
