"""Careless and hostile input to the core: each case raises a clear error (or behaves as torch)."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


@pytest.mark.parametrize("register", ["add_module", "register_parameter"])
@pytest.mark.parametrize(
    "name, error",
    [
        ("", KeyError),
        ("a.b", KeyError),
        (3, TypeError),
        ("forward", KeyError),
        ("training", KeyError),
    ],
)
def test_module_names_are_checked_as_torch_checks_them(register, name, error):
    module = nn.Linear(2, 2)
    value = nn.Linear(1, 1) if register == "add_module" else nn.Parameter(np.zeros(1, np.float32))
    with pytest.raises(error):
        getattr(module, register)(name, value)


def test_register_parameter_refuses_a_plain_tensor_and_add_module_a_non_module():
    module = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Parameter"):
        module.register_parameter("extra", mg.zeros(2))
    with pytest.raises(TypeError, match="Module"):
        module.add_module("extra", mg.zeros(2))


def test_a_registered_name_can_be_replaced():
    module = nn.Linear(2, 2)
    module.register_parameter("bias", nn.Parameter(np.ones(2, np.float32)))
    np.testing.assert_array_equal(module.bias.numpy(), [1, 1])
    assert [n for n, _ in module.named_parameters()] == ["weight", "bias"]


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


def test_backward_twice_without_retain_graph_names_the_op():
    x = mg.ones(2, requires_grad=True)
    y = x.exp().sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time.*retain_graph"):
        y.backward()


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


def test_softmax_of_a_0d_tensor_is_one_as_in_torch():
    torch = pytest.importorskip("torch")
    for ours, theirs in ((mg.softmax, torch.softmax), (mg.log_softmax, torch.log_softmax)):
        x = mg.tensor(3.0, requires_grad=True)
        t = torch.tensor(3.0, requires_grad=True)
        y, u = ours(x, 0), theirs(t, 0)
        y.backward()
        u.backward()
        assert y.shape == () and y.item() == u.item()
        assert x.grad.item() == t.grad.item()


def test_dropout_with_p_one_drops_everything_as_in_torch():
    x = mg.ones(2, 3, requires_grad=True)
    y = nn.functional.dropout(x, p=1.0)
    y.sum().backward()
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(nn.Dropout(1.0)(mg.ones(4)).numpy(), np.zeros(4))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        nn.Dropout(1.5)
