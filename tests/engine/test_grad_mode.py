"""Grad mode (minigrad/engine/grad_mode.py) as torch code uses it: set_grad_enabled as a call, a
block and a decorator, restored after an exception, wanting a bool; inference_mode as no_grad in
every spelling, and stricter: its tensors refuse what torch's inference tensors refuse."""

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
def test_inference_mode_records_nothing(spelling):
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


def test_inference_mode_false_as_a_decorator_records():
    @mg.inference_mode(False)
    def train_step():
        return _records(), mg.is_inference_mode_enabled()

    with mg.inference_mode():
        assert train_step() == (True, False)
        assert mg.is_inference_mode_enabled()
    assert not mg.is_inference_mode_enabled()


def test_enable_grad_inside_inference_mode_records_nothing_as_torch():
    torch = pytest.importorskip("torch")
    weight = torch.ones(2, requires_grad=True)
    with torch.inference_mode(), torch.enable_grad():
        expected = (weight * 2).requires_grad, torch.is_grad_enabled()
    with mg.inference_mode(), mg.enable_grad():
        assert (_records(), mg.is_grad_enabled()) == expected == (False, True)


# What torch does with a tensor made inside inference_mode, once outside it. Each case takes
# (framework, x) with x an inference tensor of [1., 2., 3.] and w a leaf that requires grad.
INFERENCE_TENSOR_CASES = {
    "add needs nothing saved": lambda f, x, w: x + w,
    "mul saves it": lambda f, x, w: x * w,
    "mul saves it (other side)": lambda f, x, w: w * x,
    "matmul saves it": lambda f, x, w: x @ w,
    "op without a graph": lambda f, x, w: x.exp() * 2,
    "add_": lambda f, x, w: x.add_(1),
    "mul_": lambda f, x, w: x.mul_(2),
    "setitem": lambda f, x, w: x.__setitem__(0, 5.0),
    "setitem under no_grad": lambda f, x, w: _under(f.no_grad(), lambda: x.__setitem__(0, 5.0)),
    "requires_grad_": lambda f, x, w: x.requires_grad_(),
    "clone can require grad": lambda f, x, w: x.clone().requires_grad_() * w,
    "a view of it refuses add_": lambda f, x, w: x.reshape(3).add_(1),
    "inference_mode(False) changes nothing": lambda f, x, w: _under(
        f.inference_mode(False), lambda: x * w
    ),
    "add_ inside inference_mode": lambda f, x, w: _under(f.inference_mode(), lambda: x.add_(1)),
}


def _under(mode, action):
    with mode:
        return action()


@pytest.mark.parametrize("case", INFERENCE_TENSOR_CASES)
def test_inference_tensors_refuse_what_torchs_refuse(case):
    torch = pytest.importorskip("torch")
    outcomes = []
    for framework in (torch, mg):
        weight = framework.tensor([0.5, 0.25, 2.0], requires_grad=True)
        with framework.inference_mode():
            x = framework.tensor([1.0, 2.0, 3.0]) * 1
        assert x.is_inference()
        try:
            result = INFERENCE_TENSOR_CASES[case](framework, x, weight)
        except RuntimeError as error:
            outcomes.append(("raised", type(error).__name__))
            continue
        outcomes.append(("ran", x.tolist(), getattr(result, "requires_grad", None)))
    assert outcomes[1] == outcomes[0]


def test_refusals_say_what_was_made_where_and_leave_the_tensor_unchanged():
    weight = mg.tensor([0.5, 0.25, 2.0], requires_grad=True)
    with mg.inference_mode():
        x = mg.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"Mul: .*shape \(3,\).*inference_mode.*saved for"):
        x * weight
    with pytest.raises(RuntimeError, match="changed in place outside it"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="changed in place outside it"):
        x[0] = 7.0
    assert x.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match="cannot require grad outside it"):
        x.requires_grad_()


def test_which_tensors_are_inference_tensors_as_torch():
    torch = pytest.importorskip("torch")
    answers = []
    for framework in (torch, mg):
        normal = framework.tensor([1.0, 2.0])
        with framework.inference_mode():
            made, view_of_normal, result = framework.zeros(2), normal[0:1], normal * 2
            view_of_made = made[0:1]
        answers.append(
            [
                t.is_inference()
                for t in (normal, made, view_of_normal, result, view_of_made, made.clone())
            ]
        )
    assert answers[1] == answers[0] == [False, True, False, True, True, False]


def test_a_model_built_in_inference_mode_is_refused_when_trained():
    """docs/coming-from-pytorch.md: torch runs this forward and leaves weight.grad None; minigrad
    refuses it, naming the inference tensor."""
    with mg.inference_mode():
        model = mg.nn.Linear(2, 2)
    assert model.weight.is_inference() and model.weight.requires_grad
    with pytest.raises(RuntimeError, match=r"shape \(2, 2\), was made inside mg.inference_mode"):
        model(mg.ones(1, 2))
    torch = pytest.importorskip("torch")
    with torch.inference_mode():
        theirs = torch.nn.Linear(2, 2)
    theirs(torch.ones(1, 2)).sum().backward()
    assert theirs.weight.grad is None  # the quirk the docs' row describes
