"""mg.autograd.detect_anomaly (minigrad/engine/anomaly.py): the first op whose forward made NaN,
or whose backward returned NaN or inf, is named with its inputs' shapes and the caller's line;
a NaN made from an inf names the op that made the inf. The mode is per thread and leaves
nothing behind after its block."""

import threading
import warnings

import numpy as np
import pytest

import minigrad as mg
from minigrad.engine import hooks
from minigrad.engine.anomaly import AnomalyError


def unstable_softmax(z):
    exps = z.exp()  # the line that overflows
    return exps / exps.sum(-1, keepdim=True)  # the line that makes NaN


@pytest.fixture(autouse=True)
def quiet_numpy():
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def test_a_students_unstable_softmax_is_named_at_the_division_and_the_overflow():
    z = mg.tensor([[1.0, 1000.0, 2.0], [0.0, 1.0, 2.0]], requires_grad=True)
    with pytest.raises(AnomalyError) as caught, mg.autograd.detect_anomaly():
        unstable_softmax(z)
    message = str(caught.value)
    assert isinstance(caught.value, RuntimeError)
    assert message.startswith("detect_anomaly: Div made nan in its output 0 (shape (2, 3))")
    assert "its inputs' shapes: (2, 3), (2, 1)" in message
    assert f"{__file__}:" in message
    assert "`return exps / exps.sum(-1, keepdim=True)  # the line" in message
    assert "Its input 0 holds inf, made by Exp from finite inputs at" in message
    assert "`exps = z.exp()  # the line that overflows`" in message
    # the stable one runs through without a word, and equals minigrad's
    with mg.autograd.detect_anomaly():
        shifted = z - z.max(-1, keepdim=True)[0]
        stable = unstable_softmax(shifted)
        stable.sum().backward()
    assert np.allclose(stable.numpy(), mg.softmax(z, -1).numpy())


def test_a_backward_that_returns_inf_is_named_with_the_line_that_applied_its_op():
    x = mg.tensor([0.0, 4.0], requires_grad=True)
    with mg.autograd.detect_anomaly():
        root = x.sqrt()
        total = root.sum()
        with pytest.raises(AnomalyError) as caught:
            total.backward()
    message = str(caught.value)
    assert "Function 'SqrtBackward' returned inf values in its 0th output" in message
    assert "for input 0 (shape (2,)); the gradients it was given were finite" in message
    assert "`root = x.sqrt()`" in message


def test_a_backward_that_returns_nan_is_named():
    x = mg.tensor([-1.0, 4.0], requires_grad=True)
    with pytest.raises(AnomalyError, match=r"Log made nan in its output 0 \(shape \(2,\)\)"):
        with mg.autograd.detect_anomaly():
            x.log()
    # a NaN that arrives in the data is not the op's doing; its backward's NaN is named
    data = mg.tensor([np.nan, 2.0], requires_grad=True)
    with mg.autograd.detect_anomaly():
        squared = data * data
        with pytest.raises(AnomalyError, match="'MulBackward' returned nan values in its 0th"):
            squared.sum().backward()


def test_an_inf_alone_is_not_an_anomaly_in_forward_as_a_mask_of_minus_inf_is_wanted():
    scores = mg.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    mask = mg.tensor([[True, True, False]])
    with mg.autograd.detect_anomaly():
        weights = mg.softmax(scores.masked_fill(~mask, float("-inf")), -1)
        weights[0, 0].backward()
    assert np.isfinite(scores.grad.numpy()).all()


def test_check_nan_false_raises_nothing_and_the_mode_is_off_after_the_block():
    z = mg.tensor([[1.0, 1000.0]], requires_grad=True)
    assert not mg.autograd.is_anomaly_enabled()
    with mg.autograd.detect_anomaly(check_nan=False):
        assert mg.autograd.is_anomaly_enabled()
        assert np.isnan(unstable_softmax(z).numpy()).any()
    assert not mg.autograd.is_anomaly_enabled() and hooks.active() == ()
    with pytest.raises(AnomalyError):
        with mg.autograd.detect_anomaly():
            unstable_softmax(z)
    assert hooks.active() == ()  # also after the block raised
    assert np.isnan(unstable_softmax(z).numpy()).any()  # nothing raises outside


def test_set_detect_anomaly_switches_now_or_for_a_block_and_detect_anomaly_decorates():
    z = mg.tensor([[1.0, 1000.0]])
    mg.autograd.set_detect_anomaly(True)
    try:
        assert mg.autograd.is_anomaly_enabled()
        with mg.autograd.set_detect_anomaly(False):
            assert not mg.autograd.is_anomaly_enabled()
            unstable_softmax(z)
        assert mg.autograd.is_anomaly_enabled()
    finally:
        mg.autograd.set_detect_anomaly(False)
    assert hooks.active() == ()

    @mg.autograd.detect_anomaly()
    def run():
        return unstable_softmax(z)

    with pytest.raises(AnomalyError, match="Div made nan"):
        run()
    assert not mg.autograd.is_anomaly_enabled()
    with pytest.raises(TypeError, match="check_nan must be a bool; got 'yes'"):
        mg.autograd.detect_anomaly(check_nan="yes")
    with pytest.raises(TypeError, match="mode and check_nan must be bools; got 1"):
        mg.autograd.set_detect_anomaly(1)


def test_the_mode_is_per_thread():
    z = mg.tensor([[1.0, 1000.0]])
    seen = {}

    def other():
        seen["enabled"] = mg.autograd.is_anomaly_enabled()
        seen["nan"] = bool(np.isnan(unstable_softmax(z).numpy()).any())  # no error here

    with mg.autograd.detect_anomaly():
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    assert seen == {"enabled": False, "nan": True}


def test_an_op_inside_a_layer_is_named_at_the_users_line_not_inside_minigrad():
    norm = mg.nn.LayerNorm(2)
    x = mg.tensor([[np.inf, 1.0]])
    with pytest.raises(AnomalyError) as caught, mg.autograd.detect_anomaly():
        norm(x)  # the mean is inf; inf - inf is nan, inside LayerNorm
    message = str(caught.value)
    assert "made nan in its output 0 (shape (1, 2))" in message
    assert f"applied at {__file__}:" in message and "`norm(x)  # the mean is inf" in message
    assert "An input holds inf" in message or "Its input" in message
