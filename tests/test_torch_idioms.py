"""Small things PyTorch code does everywhere: set_grad_enabled as a call, a block and a
decorator; inference_mode; f"{loss:.4f}"; x.mT and x.type(); the normal initialisers."""

import math

import numpy as np
import pytest

import minigrad as mg
import nn


def _records():
    return (mg.tensor([1.0], requires_grad=True) * 2).requires_grad


def test_set_grad_enabled_as_a_block_restores_the_previous_mode():
    for outer in (True, False):
        with mg.set_grad_enabled(outer):
            for inner in (True, False):
                with mg.set_grad_enabled(inner):
                    assert _records() is inner and mg.is_grad_enabled() is inner
                assert _records() is outer
    assert mg.is_grad_enabled()


def test_set_grad_enabled_as_a_block_restores_after_an_exception():
    with pytest.raises(KeyError):
        with mg.set_grad_enabled(False):
            raise KeyError("x")
    assert mg.is_grad_enabled()


def test_set_grad_enabled_as_a_call_switches_until_switched_back():
    try:
        mg.set_grad_enabled(False)
        assert not mg.is_grad_enabled() and not _records()
    finally:
        mg.set_grad_enabled(True)
    assert _records()


def test_set_grad_enabled_as_a_decorator_switches_only_inside_each_call():
    @mg.set_grad_enabled(False)
    def evaluate():
        return _records()
    assert mg.is_grad_enabled()  # making the decorator changed nothing
    assert evaluate() is False and evaluate() is False
    assert mg.is_grad_enabled()


@pytest.mark.parametrize("spelling", ["block", "call", "bare decorator", "decorator", "False"])
def test_inference_mode_is_no_grad(spelling):
    if spelling == "block":
        with mg.inference_mode():
            assert not _records()
    elif spelling == "False":
        with mg.no_grad(), mg.inference_mode(False):
            assert _records()
    else:
        decorate = {"call": mg.inference_mode(), "decorator": mg.inference_mode(),
                    "bare decorator": mg.inference_mode}[spelling]
        assert decorate(_records)() is False
    assert mg.is_grad_enabled()


def test_zero_dim_tensors_format_as_numbers():
    loss = mg.tensor(2.718281828, dtype=mg.float64)
    assert f"{loss:.4f}" == "2.7183" and "{:>8.2e}".format(loss) == "2.72e+00" and f"{mg.tensor(7):03d}" == "007"
    assert f"{mg.tensor([1.0, 2.0])}" == str(mg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"only a 0-d tensor formats as a number"):
        f"{mg.tensor([1.0, 2.0]):.2f}"


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


@pytest.mark.parametrize("name, settings, expected_std", [
    ("xavier_normal_", {}, math.sqrt(2 / (300 + 200))),
    ("xavier_normal_", {"gain": 2.0}, 2 * math.sqrt(2 / (300 + 200))),
    ("kaiming_normal_", {"nonlinearity": "relu"}, math.sqrt(2) / math.sqrt(300)),
    ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(2) / math.sqrt(200)),
    ("kaiming_normal_", {}, math.sqrt(2) / math.sqrt(300)),  # leaky_relu with a=0 has relu's gain
])
def test_normal_initialisers_have_torchs_spread(name, settings, expected_std):
    weight = nn.Parameter(np.empty((200, 300), np.float32))  # fan_in 300, fan_out 200
    mg.manual_seed(0)
    getattr(nn.init, name)(weight, **settings)
    values = weight.numpy()
    assert abs(values.mean()) < 4 * expected_std / math.sqrt(values.size)
    assert values.std() == pytest.approx(expected_std, rel=0.01)


def test_trunc_normal_stays_inside_its_bounds():
    weight = nn.Parameter(np.empty((100, 100), np.float32))
    mg.manual_seed(0)
    nn.init.trunc_normal_(weight, mean=0.5, std=1.0, a=0.0, b=1.5)
    values = weight.numpy()
    assert values.min() >= 0.0 and values.max() <= 1.5
    assert values.mean() == pytest.approx(0.5 + (0.3521 - 0.2420) / (0.8413 - 0.3085), abs=0.02)  # the truncated mean
    nn.init.trunc_normal_(weight, std=0.02)  # nanoGPT's call: the bounds are +-2, far away
    assert weight.numpy().std() == pytest.approx(0.02, rel=0.02)
    with pytest.raises(ValueError, match="expected a < b"):
        nn.init.trunc_normal_(weight, a=1.0, b=0.0)
    with pytest.raises(ValueError, match="holds almost none"):
        nn.init.trunc_normal_(weight, mean=0.0, std=1e-3, a=5.0, b=6.0)
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        nn.init.kaiming_normal_(weight, mode="fan")
