"""Grad mode (minigrad/grad_mode.py) as torch code uses it: set_grad_enabled as a call, a block
and a decorator, restored after an exception, wanting a bool; inference_mode as no_grad in every
spelling.
"""

import pytest

import minigrad as mg


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


@pytest.mark.parametrize("mode", [None, "yes", 1, 0.0])
def test_set_grad_enabled_wants_a_bool_as_torch(mode):
    with pytest.raises(TypeError, match="mode must be a bool"):
        mg.set_grad_enabled(mode)
    assert mg.is_grad_enabled()


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
        decorate = {
            "call": mg.inference_mode(),
            "decorator": mg.inference_mode(),
            "bare decorator": mg.inference_mode,
        }[spelling]
        assert decorate(_records)() is False
    assert mg.is_grad_enabled()
