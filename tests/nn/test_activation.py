"""The activation modules (nn/activation.py): their formulas, gradchecks, values, gradients and
reprs against torch, settings checked and used when changed.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

TOLERANCE = {np.float64: 1e-5, np.float32: 1e-4}


def _torch():
    return pytest.importorskip("torch")


def test_activations_compute_their_formulas():
    values = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    x = mg.tensor(values)
    np.testing.assert_allclose(nn.Tanh()(x).data, np.tanh(values), rtol=1e-12)
    np.testing.assert_allclose(nn.Sigmoid()(x).data, 1 / (1 + np.exp(-values)), rtol=1e-12)
    np.testing.assert_array_equal(nn.ReLU()(x).data, [0, 0, 0, 0.5, 3.0])
    assert nn.Identity()(x) is x


def test_activation_modules_gradcheck():
    x = mg.tensor(np.array([[-1.3, 0.2, 0.7], [2.1, -0.4, 0.9]]))
    for layer in (nn.Tanh(), nn.Sigmoid(), nn.ReLU()):
        assert mg.gradcheck(layer, [x])


ACTIVATIONS = {  # name -> (minigrad module, torch module given torch.nn)
    "GELU": (lambda: nn.GELU(), lambda T: T.GELU()),
    "GELU_tanh": (lambda: nn.GELU("tanh"), lambda T: T.GELU("tanh")),
    "SiLU": (lambda: nn.SiLU(), lambda T: T.SiLU()),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.3), lambda T: T.LeakyReLU(0.3)),
    "ELU": (lambda: nn.ELU(alpha=0.5), lambda T: T.ELU(alpha=0.5)),
    "Softplus": (
        lambda: nn.Softplus(beta=2.0, threshold=4.0),
        lambda T: T.Softplus(beta=2.0, threshold=4.0),
    ),
    "Softmax": (lambda: nn.Softmax(dim=1), lambda T: T.Softmax(dim=1)),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=-1), lambda T: T.LogSoftmax(dim=-1)),
    "ReLU_inplace": (lambda: nn.ReLU(inplace=True), lambda T: T.ReLU(inplace=True)),
    "Flatten": (lambda: nn.Flatten(), lambda T: T.Flatten()),
    "Flatten_0_1": (lambda: nn.Flatten(0, 1), lambda T: T.Flatten(0, 1)),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 3)), lambda T: T.Unflatten(1, (2, 3))),
    "Unflatten_inferred": (lambda: nn.Unflatten(-1, (-1, 2)), lambda T: T.Unflatten(-1, (-1, 2))),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_modules_match_torch_values_grads_and_repr(name, dtype):
    torch = _torch()
    ours, theirs = ACTIVATIONS[name][0](), ACTIVATIONS[name][1](torch.nn)
    assert repr(ours) == repr(theirs)
    array = np.random.default_rng(0).standard_normal((2, 6, 2)).astype(dtype) * 3
    upstream = (
        np.random.default_rng(1).standard_normal(theirs(torch.tensor(array)).shape).astype(dtype)
    )
    x, x_torch = mg.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    y, y_torch = ours(x * 1), theirs(x_torch * 1)  # * 1: in-place modules may not write into a leaf
    y.backward(upstream)
    y_torch.backward(torch.from_numpy(upstream))
    tol = TOLERANCE[dtype]
    assert y.shape == tuple(y_torch.shape) and y.dtype == dtype
    np.testing.assert_allclose(y.data, y_torch.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(x.grad.data, x_torch.grad.numpy(), rtol=tol, atol=tol)


def test_module_settings_are_checked_and_used_when_changed():
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("erf")
    layer = nn.LeakyReLU(0.1)
    layer.negative_slope = 0.5  # read at each call, as torch's
    assert layer(mg.tensor([-2.0])).item() == -1.0
    with pytest.raises(ValueError, match=r"cannot view 6 elements as shape \(4, 2\)"):
        nn.Unflatten(1, (4, 2))(mg.zeros(2, 6))
    with pytest.raises(IndexError, match="out of range"):
        nn.Unflatten(3, (2, 3))(mg.zeros(2, 6))
    assert nn.Identity(54, unused="ignored")(mg.ones(2)).shape == (2,)
    assert nn.Flatten()(mg.zeros(0, 2, 3)).shape == (0, 6)
