"""The dropout op (minigrad/ops/dropout.py): what training zeroes and scales, identity in eval
and at p=0, seeding, gradients, and bad p; its statistics as torch's.
"""

import numpy as np
import pytest

import minigrad as mg
from layer_checks import assert_refused_as_torch, floats
from minigrad import nn
from minigrad.errors import ArgumentError, ShapeError
from op_checks import check_gradient, rand

torch = pytest.importorskip("torch")


def test_dropout_training_zeroes_and_scales():
    mg.manual_seed(0)
    x = mg.ones(200, 100, requires_grad=True)
    y = mg.dropout(x, p=0.3)
    out = y.numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    assert y.dtype == np.float32
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 1 / 0.7, 0.0), rtol=1e-6)


def test_dropout_eval_and_p_zero_are_identity():
    x = mg.randn(3, 4)
    assert mg.dropout(x, 0.5, training=False) is x
    assert mg.dropout(x, 0.0) is x


def test_dropout_is_seeded():
    x = mg.ones(50)
    mg.manual_seed(7)
    first = mg.dropout(x, 0.5).numpy()
    mg.manual_seed(7)
    np.testing.assert_array_equal(mg.dropout(x, 0.5).numpy(), first)
    assert not np.array_equal(mg.dropout(x, 0.5).numpy(), first)  # the generator moved on


def test_dropout_gradcheck():
    def fn(t):
        mg.manual_seed(3)  # the same mask on every evaluation
        return mg.dropout(t, 0.4)

    check_gradient(fn, rand(4, 5, seed=80))


def test_dropout_bad_p():
    with pytest.raises(ValueError, match="1.5"):
        mg.dropout(mg.ones(3), 1.5)
    with pytest.raises(ValueError, match="-0.1"):
        mg.dropout(mg.ones(3), -0.1)


def test_dropout_statistics_match_torch_semantics():
    # masks come from different generators, so compare what they promise: zeros at rate p,
    # survivors scaled by 1 / (1 - p), and the gradient equal to the mask
    mg.manual_seed(0)
    x = mg.ones(100, 100, requires_grad=True)
    y = mg.dropout(x, p=0.25)
    y.sum().backward()
    t = torch.ones(100, 100)
    torch_y = torch.nn.functional.dropout(t, p=0.25)
    assert set(np.unique(y.numpy()).round(6)) == set(np.unique(torch_y.numpy()).round(6))
    assert abs((y.numpy() == 0).mean() - 0.25) < 0.02
    np.testing.assert_array_equal(x.grad.numpy(), y.numpy())


def test_dropout_with_p_one_drops_everything_as_in_torch():
    x = mg.ones(2, 3, requires_grad=True)
    y = nn.functional.dropout(x, p=1.0)
    y.sum().backward()
    np.testing.assert_array_equal(y.numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(nn.Dropout(1.0)(mg.ones(4)).numpy(), np.zeros(4))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        nn.Dropout(1.5)


# name -> (call(library), our error class, a pattern our message matches: what was expected and
# given)
BAD_INPUTS = {
    "dropout1d: 4-D input": (
        lambda L: L.F.dropout1d(L.tensor(floats(2, 3, 4, 5))),
        ShapeError,
        r"2-D \(C, L\) or 3-D \(N, C, L\) input; got \(2, 3, 4, 5\)",
    ),
    "dropout2d: p above 1": (
        lambda L: L.F.dropout2d(L.tensor(floats(2, 3, 4, 5)), 1.5),
        ArgumentError,
        r"between 0 and 1; got 1.5",
    ),
    "alpha_dropout: negative p": (
        lambda L: L.F.alpha_dropout(L.tensor(floats(4)), -0.1, True),
        ArgumentError,
        r"between 0 and 1; got -0.1",
    ),
    "feature_alpha_dropout: 1-D input": (
        lambda L: L.F.feature_alpha_dropout(L.tensor(floats(4)), 0.5, True),
        ShapeError,
        r"batch and a channel dim \(N, C, \.\.\.\); got input of shape \(4,\)",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_runtime_errors(case):
    assert_refused_as_torch(*BAD_INPUTS[case])
