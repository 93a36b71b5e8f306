"""Losses against torch: every loss, every reduction, float32 and float64, over hypothesis-drawn
shapes (empty batches, unbatched inputs, extra dims) and options (class weights, ignore_index,
label smoothing, probability targets, pos_weight, beta); values and the gradients of input and of
float targets. Then float64 gradchecks, the errors torch raises, the fused fast path, the modules.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from minigrad import nn
from minigrad.errors import DTypeError, ShapeError
from op_checks import check_gradient, np_softmax, rand, value
from parity import assert_close, tolerance

torch = pytest.importorskip("torch")

few = settings(max_examples=25, deadline=None)  # no wall-clock limits (first calls compile)
REDUCTIONS = ["mean", "sum", "none"]


class Library:
    def __init__(self, functional, tensor, numpy):
        self.F, self.tensor, self.numpy = functional, tensor, numpy


MINIGRAD = Library(F, mg.tensor, lambda t: t.numpy())
TORCH = Library(torch.nn.functional, torch.tensor, lambda t: t.detach().numpy())


def run(library, loss, arrays, differentiable, options, seed):
    """(value, {name: gradient}) of library.F.<loss>(input, target, **options), backward with an
    upstream gradient drawn from `seed`; or the exception raised."""
    tensors = {name: library.tensor(array) for name, array in arrays.items()}
    for name in differentiable:
        tensors[name].requires_grad_(True)
    kwargs = {
        key: library.tensor(value) if isinstance(value, np.ndarray) else value
        for key, value in options.items()
    }
    try:
        out = getattr(library.F, loss)(tensors["input"], tensors["target"], **kwargs)
        value = library.numpy(out)
        upstream = np.random.default_rng(seed).standard_normal(value.shape).astype(value.dtype)
        out.backward(library.tensor(upstream))
    except Exception as error:  # noqa: BLE001 -- compared with the other library's behaviour
        return error
    return value, {name: library.numpy(tensors[name].grad) for name in differentiable}


# -- cases: each draws arrays and options; returns (loss name, arrays, differentiable, options) ----


def _class_shapes(data):
    classes = data.draw(st.integers(1, 4), label="classes")
    if data.draw(st.booleans(), label="unbatched"):
        return (classes,), ()
    batch = data.draw(st.integers(0, 4), label="batch")
    extra = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2), label="extra dims"))
    return (batch, classes) + extra, (batch,) + extra


def _class_ids(data, rng, input_shape, target_shape, ignore_index):
    target = rng.integers(0, input_shape[0 if len(input_shape) == 1 else 1], size=target_shape)
    if ignore_index is not None and target.size:
        target = np.where(rng.random(target_shape) < 0.3, ignore_index, target)
    return np.asarray(target, dtype=np.int64)


def _class_options(data, rng, dtype, classes, smoothing):
    options = {}
    if data.draw(st.booleans(), label="weight"):
        options["weight"] = rng.uniform(0.2, 2.0, classes).astype(dtype)
    if smoothing and data.draw(st.booleans(), label="smoothing"):
        options["label_smoothing"] = data.draw(
            st.sampled_from([0.1, 0.5, 1.0]), label="label_smoothing"
        )
    return options


def cross_entropy_ids(data, rng, dtype):
    input_shape, target_shape = _class_shapes(data)
    ignore_index = data.draw(st.sampled_from([None, -100, 1]), label="ignore_index")
    options = _class_options(
        data, rng, dtype, input_shape[min(1, len(input_shape) - 1)], smoothing=True
    )
    if ignore_index is not None:
        options["ignore_index"] = ignore_index
    arrays = {
        "input": (rng.standard_normal(input_shape) * 3).astype(dtype),
        "target": _class_ids(data, rng, input_shape, target_shape, ignore_index),
    }
    return "cross_entropy", arrays, ["input"], options


def cross_entropy_probabilities(data, rng, dtype):
    input_shape, _ = _class_shapes(data)
    class_dim = 0 if len(input_shape) == 1 else 1
    raw = rng.standard_normal(input_shape)
    target = np.exp(raw) / np.exp(raw).sum(axis=class_dim, keepdims=True)
    options = _class_options(data, rng, dtype, input_shape[class_dim], smoothing=True)
    arrays = {
        "input": (rng.standard_normal(input_shape) * 3).astype(dtype),
        "target": target.astype(dtype),
    }
    return "cross_entropy", arrays, ["input", "target"], options


def nll(data, rng, dtype):
    input_shape, target_shape = _class_shapes(data)
    ignore_index = data.draw(st.sampled_from([None, 0]), label="ignore_index")
    options = _class_options(
        data, rng, dtype, input_shape[min(1, len(input_shape) - 1)], smoothing=False
    )
    if ignore_index is not None:
        options["ignore_index"] = ignore_index
    arrays = {
        "input": rng.standard_normal(input_shape).astype(dtype),
        "target": _class_ids(data, rng, input_shape, target_shape, ignore_index),
    }
    return "nll_loss", arrays, ["input"], options


def _elementwise_shape(data):
    return tuple(data.draw(st.lists(st.integers(0, 4), max_size=3), label="shape"))


def bce(data, rng, dtype):
    shape = _elementwise_shape(data)
    options = {}
    if shape and data.draw(st.booleans(), label="weight"):
        options["weight"] = rng.uniform(0.2, 2.0, shape[-1:]).astype(dtype)
    probabilities = 1 / (1 + np.exp(-3 * rng.standard_normal(shape)))
    arrays = {"input": probabilities.astype(dtype), "target": rng.random(shape).astype(dtype)}
    return "binary_cross_entropy", arrays, ["input", "target"], options


def bce_with_logits(data, rng, dtype):
    shape = _elementwise_shape(data)
    options = {}
    if shape and data.draw(st.booleans(), label="weight"):
        options["weight"] = rng.uniform(0.2, 2.0, shape[-1:]).astype(dtype)
    if shape and data.draw(st.booleans(), label="pos_weight"):
        options["pos_weight"] = rng.uniform(0.2, 3.0, shape[-1:]).astype(dtype)
    arrays = {
        "input": (rng.standard_normal(shape) * 5).astype(dtype),
        "target": rng.random(shape).astype(dtype),
    }
    return "binary_cross_entropy_with_logits", arrays, ["input", "target"], options


def regression(name, option=None, values=()):
    def case(data, rng, dtype):
        shape = _elementwise_shape(data)
        target = rng.standard_normal(shape)
        if target.size:  # exact ties and differences on the smooth losses' knee
            target.reshape(-1)[0] = 0.0
        input_ = target + rng.standard_normal(shape) * 1.5
        if input_.size:
            input_.reshape(-1)[0] = 0.0
        options = {option: data.draw(st.sampled_from(values), label=option)} if option else {}
        return (
            name,
            {"input": input_.astype(dtype), "target": target.astype(dtype)},
            ["input", "target"],
            options,
        )

    return case


def kl(data, rng, dtype):
    """Log-probabilities against probabilities (or log-probabilities, log_target=True), all > 0:
    at a target of exactly 0 torch's target gradient is NaN, minigrad's finite (the loss agrees)."""
    shape = _elementwise_shape(data)
    scores, weights = rng.standard_normal(shape), rng.random(shape) + 0.05
    last = max(len(shape) - 1, 0)
    log_probabilities = (
        scores - np.log(np.exp(scores).sum(axis=last, keepdims=True)) if shape else scores
    )
    probabilities = weights / weights.sum(axis=last, keepdims=True) if shape else weights
    log_target = data.draw(st.booleans(), label="log_target")
    target = np.log(probabilities) if log_target else probabilities
    return (
        "kl_div",
        {"input": log_probabilities.astype(dtype), "target": target.astype(dtype)},
        ["input", "target"],
        {"log_target": log_target},
    )


CASES = {
    "kl_div": kl,
    "cross_entropy_ids": cross_entropy_ids,
    "cross_entropy_probabilities": cross_entropy_probabilities,
    "nll_loss": nll,
    "binary_cross_entropy": bce,
    "binary_cross_entropy_with_logits": bce_with_logits,
    "mse_loss": regression("mse_loss"),
    "l1_loss": regression("l1_loss"),
    "smooth_l1_loss": regression("smooth_l1_loss", "beta", [1.0, 0.5, 0.0, 2.0]),
    "huber_loss": regression("huber_loss", "delta", [1.0, 0.3, 2.0]),
}


@pytest.mark.parametrize("case", CASES)
@few
@given(
    data=st.data(),
    dtype=st.sampled_from([np.float32, np.float64]),
    reduction=st.sampled_from(REDUCTIONS),
)
def test_matches_torch_values_and_gradients(case, data, dtype, reduction):
    seed = data.draw(st.integers(0, 2**16), label="seed")
    loss, arrays, differentiable, options = CASES[case](data, np.random.default_rng(seed), dtype)
    options["reduction"] = reduction
    theirs = run(TORCH, loss, arrays, differentiable, options, seed)
    ours = run(MINIGRAD, loss, arrays, differentiable, options, seed)
    assert not isinstance(theirs, Exception), theirs  # every drawn case is valid input
    assert not isinstance(ours, Exception), f"minigrad raised {ours!r} where torch did not"
    (value, grads), (torch_value, torch_grads) = ours, theirs
    assert value.shape == torch_value.shape and value.dtype == torch_value.dtype
    np.testing.assert_allclose(value, torch_value, **tolerance("losses", dtype))
    for name in differentiable:
        assert grads[name].dtype == dtype, name
        np.testing.assert_allclose(
            grads[name],
            torch_grads[name],
            **tolerance("losses", dtype),
            err_msg=f"gradient of {name}",
        )


# -- gradchecks (float64 finite differences) -------------------------------------------------------

rng = np.random.default_rng(11)
LOGITS = rng.standard_normal((3, 4, 2))
IDS = np.array([[0, 3], [-100, 1], [2, 2]])
PROBABILITIES = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)
WEIGHT = np.array([0.5, 1.0, 2.0, 1.5])
VALUES = rng.standard_normal((3, 4))
GRADCHECKS = {
    "cross_entropy_weighted_smoothed": (
        lambda x: F.cross_entropy(x, IDS, WEIGHT, label_smoothing=0.2),
        [LOGITS],
    ),
    "cross_entropy_sum": (lambda x: F.cross_entropy(x, IDS, reduction="sum"), [LOGITS]),
    "cross_entropy_probabilities": (
        lambda x, p: F.cross_entropy(x, p, WEIGHT, label_smoothing=0.1),
        [LOGITS, PROBABILITIES],
    ),
    "nll_loss_none": (lambda x: F.nll_loss(x, IDS, WEIGHT, reduction="none"), [LOGITS]),
    "binary_cross_entropy": (
        lambda p, y: F.binary_cross_entropy(p, y, WEIGHT),
        [1 / (1 + np.exp(-VALUES)), np.abs(np.sin(VALUES))],
    ),
    "binary_cross_entropy_with_logits": (
        lambda x, y: F.binary_cross_entropy_with_logits(
            x, y, WEIGHT, pos_weight=WEIGHT[::-1].copy()
        ),
        [VALUES, np.abs(np.cos(VALUES))],
    ),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), [VALUES, VALUES[::-1].copy()]),
    "l1_loss": (lambda x, y: F.l1_loss(x, y, reduction="sum"), [VALUES, VALUES[::-1] + 0.1]),
    "smooth_l1_loss": (lambda x, y: F.smooth_l1_loss(x, y, beta=0.7), [VALUES, VALUES[::-1] + 0.1]),
    "huber_loss": (
        lambda x, y: F.huber_loss(x, y, delta=0.6, reduction="none"),
        [VALUES, VALUES[::-1] + 0.1],
    ),
    "kl_div_batchmean": (
        lambda x, q: F.kl_div(x, q, reduction="batchmean"),
        [LOGITS, PROBABILITIES],
    ),
    "kl_div_log_target": (
        lambda x, q: F.kl_div(x, q, reduction="sum", log_target=True),
        [LOGITS, LOGITS[::-1] * 0.5],
    ),
}


@pytest.mark.parametrize("name", GRADCHECKS)
def test_gradcheck(name):
    function, inputs = GRADCHECKS[name]
    assert mg.gradcheck(function, [mg.tensor(array) for array in inputs])


# -- the cases the general path must get right -----------------------------------------------------


def test_every_target_ignored_or_empty_batch_gives_nan_and_zero_gradient_as_torch():
    for target in (np.array([-100, -100]), np.zeros(0, np.int64)):
        logits = np.ones((len(target), 3))
        for label_smoothing in (0.0, 0.3):
            x = mg.tensor(logits, requires_grad=True)
            loss = F.cross_entropy(x, target, label_smoothing=label_smoothing)
            loss.backward()
            reference = torch.tensor(logits, requires_grad=True)
            torch.nn.functional.cross_entropy(
                reference, torch.tensor(target), label_smoothing=label_smoothing
            ).backward()
            assert np.isnan(loss.item())
            np.testing.assert_array_equal(x.grad.numpy(), reference.grad.numpy())
    assert np.isnan(F.mse_loss(mg.zeros(0), mg.zeros(0)).item())
    assert F.mse_loss(mg.zeros(0, 2), mg.zeros(0, 2), reduction="sum").item() == 0


def test_plain_case_runs_the_fused_kernel_and_the_rest_composes():
    logits, target = mg.randn(5, 3, requires_grad=True), np.array([0, 2, 1, 1, 0])
    assert mg.cross_entropy(logits, target).grad_fn.name == "CrossEntropy"  # the one fused node
    assert F.cross_entropy(logits, target, reduction="sum").grad_fn.name == "NLLLoss"
    assert F.cross_entropy(logits, target, np.ones(3, np.float32)).grad_fn.name == "NLLLoss"
    np.testing.assert_allclose(
        mg.cross_entropy(logits, target).item(),
        F.cross_entropy(logits, target, reduction="sum").item() / 5,
        rtol=1e-6,
    )
    # any integer ids
    assert mg.cross_entropy(logits, mg.tensor(target, dtype=mg.int32)).dtype == np.float32


def test_binary_cross_entropy_at_zero_and_one_is_clamped_as_torch():
    p, y = np.array([0.0, 1.0, 0.5]), np.array([1.0, 0.0, 0.5])
    ours_p, ours_y = mg.tensor(p, requires_grad=True), mg.tensor(y, requires_grad=True)
    theirs_p, theirs_y = torch.tensor(p, requires_grad=True), torch.tensor(y, requires_grad=True)
    loss = F.binary_cross_entropy(ours_p, ours_y, reduction="sum")
    torch_loss = torch.nn.functional.binary_cross_entropy(theirs_p, theirs_y, reduction="sum")
    loss.backward()
    torch_loss.backward()
    np.testing.assert_allclose(loss.item(), torch_loss.item())  # 100 + 100 + log 2
    np.testing.assert_allclose(ours_p.grad.numpy(), theirs_p.grad.numpy())  # +-1e12
    np.testing.assert_array_equal(ours_y.grad.numpy(), theirs_y.grad.numpy())  # inf, -inf, 0


def test_binary_cross_entropy_with_logits_is_stable_for_huge_logits():
    x = mg.tensor([1000.0, -1000.0, 50.0], requires_grad=True)
    loss = F.binary_cross_entropy_with_logits(x, mg.tensor([0.0, 1.0, 1.0]), reduction="none")
    loss.sum().backward()
    np.testing.assert_allclose(loss.numpy(), [1000.0, 1000.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, 0.0], atol=1e-6)


def test_mse_broadcasts_a_different_target_shape_with_torchs_warning():
    with pytest.warns(UserWarning, match="target size"):
        loss = F.mse_loss(mg.tensor([[1.0, 2.0], [3.0, 4.0]]), mg.tensor([1.0, 2.0]))
    assert loss.item() == 2.0  # (0 + 0 + 4 + 4) / 4
    assert F.mse_loss(mg.tensor([1.0]), mg.tensor([3], dtype=mg.int64)).item() == 4.0


# -- errors ----------------------------------------------------------------------------------------

X = np.zeros((3, 4), np.float32)
# name -> (call(library), minigrad's exception, message fragment, does torch raise too). Shape and
# dtype errors are mg.ShapeError / mg.DTypeError: ValueError / TypeError and RuntimeError at once,
# so code written for torch (except RuntimeError) catches them too.
ERRORS = {
    "bad reduction": (
        lambda L: L.F.cross_entropy(L.tensor(X), L.tensor(np.array([0, 1, 2])), reduction="avg"),
        ValueError,
        "avg is not a valid value for reduction",
        True,
    ),
    "smoothing above 1": (
        lambda L: L.F.cross_entropy(
            L.tensor(X), L.tensor(np.array([0, 1, 2])), label_smoothing=1.5
        ),
        ValueError,
        "between 0.0 and 1.0",
        True,
    ),
    "smoothing below 0": (
        lambda L: L.F.cross_entropy(
            L.tensor(X), L.tensor(np.array([0, 1, 2])), label_smoothing=-0.1
        ),
        ValueError,
        "between 0.0 and 1.0",
        False,
    ),
    "target out of bounds": (
        lambda L: L.F.cross_entropy(L.tensor(X), L.tensor(np.array([0, 1, 4]))),
        IndexError,
        "target 4 is out of bounds",
        True,
    ),
    "negative target": (
        lambda L: L.F.nll_loss(L.tensor(X), L.tensor(np.array([0, -1, 2]))),
        IndexError,
        "target -1 is out of bounds",
        True,
    ),
    "batch mismatch": (
        lambda L: L.F.cross_entropy(L.tensor(X), L.tensor(np.array([0, 1]))),
        mg.ShapeError,
        r"batch_size \(3\).*batch_size \(2\)",
        True,
    ),
    "target shape": (
        lambda L: L.F.cross_entropy(
            L.tensor(np.zeros((2, 4, 5), np.float32)), L.tensor(np.zeros((2, 4), np.int64))
        ),
        mg.ShapeError,
        r"target of shape \(2, 5\)",
        True,
    ),
    "bool target": (
        lambda L: L.F.cross_entropy(L.tensor(X), L.tensor(np.array([True, False, True]))),
        mg.DTypeError,
        "integer class ids.*bool",
        True,
    ),
    "integer logits": (
        lambda L: L.F.cross_entropy(L.tensor(X.astype(np.int64)), L.tensor(np.array([0, 1, 2]))),
        mg.DTypeError,
        "float32 or float64 input",
        True,
    ),
    "0-d logits": (
        lambda L: L.F.cross_entropy(L.tensor(np.float32(1)), L.tensor(np.int64(0))),
        mg.ShapeError,
        "0-d",
        True,
    ),
    "unbatched target shape": (
        lambda L: L.F.cross_entropy(
            L.tensor(np.zeros(4, np.float32)), L.tensor(np.array([0, 1, 2, 0]))
        ),
        mg.ShapeError,
        r"unbatched input of shape \(4,\)",
        True,
    ),
    "weight shape": (
        lambda L: L.F.cross_entropy(
            L.tensor(X), L.tensor(np.array([0, 1, 2])), L.tensor(np.ones(3, np.float32))
        ),
        mg.ShapeError,
        "4 classes",
        True,
    ),
    "probabilities shape": (
        lambda L: L.F.cross_entropy(L.tensor(X), L.tensor(np.ones((3, 5), np.float32))),
        mg.DTypeError,
        r"class ids \(or float class probabilities of input's shape\)",
        True,
    ),
    "probabilities with ignore_index": (
        lambda L: L.F.cross_entropy(
            L.tensor(X), L.tensor(np.ones((3, 4), np.float32)), ignore_index=1
        ),
        ValueError,
        "ignore_index",
        True,
    ),
    "bce outside [0, 1]": (
        lambda L: L.F.binary_cross_entropy(L.tensor(X + 2), L.tensor(X)),
        ValueError,
        "between 0 and 1",
        True,
    ),
    "bce target shape": (
        lambda L: L.F.binary_cross_entropy(L.tensor(X), L.tensor(np.zeros(3, np.float32))),
        mg.ShapeError,
        r"target size \(3,\)",
        True,
    ),
    "bce logits target shape": (
        lambda L: L.F.binary_cross_entropy_with_logits(
            L.tensor(X), L.tensor(np.zeros(4, np.float32))
        ),
        mg.ShapeError,
        "must be the same as input size",
        True,
    ),
    "pos_weight shape": (
        lambda L: L.F.binary_cross_entropy_with_logits(
            L.tensor(X), L.tensor(X), pos_weight=L.tensor(np.ones(3, np.float32))
        ),
        mg.ShapeError,
        "pos_weight of shape",
        True,
    ),
    "mse shapes": (
        lambda L: L.F.mse_loss(L.tensor(X), L.tensor(np.zeros(5, np.float32))),
        mg.ShapeError,
        "does not broadcast",
        True,
    ),
    "negative beta": (
        lambda L: L.F.smooth_l1_loss(L.tensor(X), L.tensor(X), beta=-1.0),
        ValueError,
        "negative values for beta",
        True,
    ),
    "weight that wants a gradient": (
        lambda L: L.F.cross_entropy(
            L.tensor(X),
            L.tensor(np.array([0, 1, 2])),
            L.tensor(np.ones(4, np.float32)).requires_grad_(),
        ),
        RuntimeError,
        "takes no gradient",
        True,
    ),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_name_what_was_expected(name):
    call, error, match, torch_raises = ERRORS[name]
    with pytest.raises(error, match=match):
        call(MINIGRAD)
    if torch_raises:
        with pytest.raises(Exception):
            call(TORCH).backward()


# -- modules ---------------------------------------------------------------------------------------


def test_loss_modules_call_their_function_with_their_settings():
    logits, ids = mg.randn(6, 3), np.array([0, 2, 1, -1, 2, 0])
    weight = np.array([1.0, 2.0, 0.5], np.float32)
    criterion = nn.CrossEntropyLoss(
        weight=weight, ignore_index=-1, reduction="sum", label_smoothing=0.2
    )
    np.testing.assert_allclose(
        criterion(logits, ids).item(),
        F.cross_entropy(
            logits, ids, weight, ignore_index=-1, reduction="sum", label_smoothing=0.2
        ).item(),
        rtol=1e-6,
    )
    log_probs = F.log_softmax(logits, dim=1)
    assert (
        nn.NLLLoss(ignore_index=-1)(log_probs, ids).item()
        == F.nll_loss(log_probs, ids, ignore_index=-1).item()
    )
    p, y = mg.rand(4, 3), mg.rand(4, 3)
    assert nn.BCELoss(reduction="none")(p, y).shape == (4, 3)
    assert (
        nn.BCEWithLogitsLoss(pos_weight=mg.ones(3) * 2)(p, y).item()
        == F.binary_cross_entropy_with_logits(p, y, pos_weight=mg.ones(3) * 2).item()
    )
    assert nn.MSELoss()(p, y).item() == F.mse_loss(p, y).item()
    assert nn.L1Loss(reduction="sum")(p, y).item() == F.l1_loss(p, y, reduction="sum").item()
    assert nn.SmoothL1Loss(beta=0.1)(p, y).item() == F.smooth_l1_loss(p, y, beta=0.1).item()
    assert nn.HuberLoss(delta=0.1)(p, y).item() == F.huber_loss(p, y, delta=0.1).item()
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="average")
    with pytest.raises(ValueError, match="label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=2)


def test_loss_weights_are_buffers_as_in_torch():
    ours = nn.BCEWithLogitsLoss(weight=np.ones(3, np.float32), pos_weight=mg.ones(3))
    theirs = torch.nn.BCEWithLogitsLoss(weight=torch.ones(3), pos_weight=torch.ones(3))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight", "pos_weight"]
    assert (
        list(nn.CrossEntropyLoss().state_dict())
        == list(torch.nn.CrossEntropyLoss().state_dict())
        == []
    )
    assert ours.double().pos_weight.dtype == np.float64
    x = mg.randn(2, 3, dtype=mg.float64)
    assert ours(x, mg.rand(2, 3, dtype=mg.float64)).dtype == np.float64


def test_kl_div_batchmean_zero_targets_and_its_module_match_torch():
    torch = pytest.importorskip("torch")
    log_probabilities = np.log(PROBABILITIES[:, :, 0])
    target = PROBABILITIES[::-1, :, 1].copy()
    target[0, 2] = 0.0  # x log x = 0 at 0: the loss stays finite
    ours, theirs = (
        mg.tensor(log_probabilities, requires_grad=True),
        torch.tensor(log_probabilities, requires_grad=True),
    )
    value = nn.KLDivLoss(reduction="batchmean")(ours, mg.tensor(target))
    reference = torch.nn.KLDivLoss(reduction="batchmean")(theirs, torch.tensor(target))
    np.testing.assert_allclose(value.item(), reference.item(), rtol=1e-12)
    value.backward()
    reference.backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-12, atol=1e-15)
    with pytest.warns(UserWarning, match="reduction='mean' divides the total by every element"):
        F.kl_div(ours, mg.tensor(target))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.kl_div(ours, mg.tensor(target), reduction="avg")
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.KLDivLoss(reduction="avg")
    with pytest.raises(DTypeError, match="expected a float target"):
        F.kl_div(ours, mg.tensor([[0, 1, 0, 0]] * 3))
    with pytest.raises(ShapeError, match=r"target of shape \(2,\) does not broadcast"):
        F.kl_div(ours, mg.tensor([0.5, 0.5]))


def np_cross_entropy(logits, target, ignore_index=-100):
    keep = target != ignore_index
    log_probs = np.log(np_softmax(logits, 1))
    return -log_probs[np.nonzero(keep)[0], target[keep]].mean()


@pytest.mark.parametrize("target", [np.array([0, 2, 1, 2, 0]), np.array([3, 3, 3, 3, 3])])
def test_cross_entropy(target):
    logits = rand(5, 4, low=-3, high=3, seed=70)
    out = value(lambda t: mg.cross_entropy(t, target), logits)
    assert out.shape == ()
    np.testing.assert_allclose(out, np_cross_entropy(logits, target), rtol=1e-12)
    check_gradient(lambda t: mg.cross_entropy(t, mg.tensor(target)), logits)


@pytest.mark.parametrize("ignore_index", [-100, 1, -1])
def test_cross_entropy_ignore_index(ignore_index):
    logits = rand(6, 3, low=-3, high=3, seed=71)
    target = np.array([0, ignore_index, 2, 1, ignore_index, 0])
    out = value(lambda t: mg.cross_entropy(t, target, ignore_index=ignore_index), logits)
    np.testing.assert_allclose(out, np_cross_entropy(logits, target, ignore_index), rtol=1e-12)
    check_gradient(lambda t: mg.cross_entropy(t, target, ignore_index=ignore_index), logits)
    x = mg.tensor(logits, requires_grad=True)
    mg.cross_entropy(x, target, ignore_index=ignore_index).backward()
    ignored = target == ignore_index
    np.testing.assert_array_equal(x.grad.numpy()[ignored], 0.0)


def test_cross_entropy_every_row_ignored_is_nan_with_zero_gradient():
    x = mg.tensor(rand(2, 3, seed=72), requires_grad=True)
    loss = mg.cross_entropy(x, [-100, -100])
    assert np.isnan(loss.item())  # 0 / 0, as in torch
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_cross_entropy_float32_and_stability():
    logits = mg.tensor([[1000.0, 0.0], [0.0, -1000.0]], requires_grad=True)
    loss = mg.cross_entropy(logits, mg.tensor([1, 1]))
    assert loss.dtype == np.float32
    np.testing.assert_allclose(loss.item(), 1000.0, rtol=1e-6)  # mean of 1000 and 1000
    loss.backward()
    np.testing.assert_allclose(logits.grad.numpy(), [[0.5, -0.5], [0.5, -0.5]], atol=1e-6)


def test_cross_entropy_errors():
    logits = mg.zeros(4, 3)
    with pytest.raises(ValueError) as info:
        mg.cross_entropy(logits, [0, 1])
    assert "(4, 3)" in str(info.value) and "(2,)" in str(info.value)
    with pytest.raises(ValueError, match=r"\(4,\)"):
        mg.cross_entropy(mg.zeros(4), [0, 1, 2, 0])
    with pytest.raises(TypeError, match="float"):
        mg.cross_entropy(logits, np.zeros(4))
    with pytest.raises(IndexError, match="3"):  # as torch
        mg.cross_entropy(logits, [0, 1, 3, 0])


def test_cross_entropy_with_ignore_index_matches_torch():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(6, 5))
    target = np.array([1, -1, 4, 0, -1, 2])
    for dtype in (np.float64, np.float32):
        close = tolerance("losses with ignore_index", dtype)
        ours = mg.tensor(logits.astype(dtype), requires_grad=True)
        theirs = torch.tensor(logits.astype(dtype), requires_grad=True)
        loss = mg.cross_entropy(ours, target, ignore_index=-1)
        torch_loss = torch.nn.functional.cross_entropy(
            theirs, torch.from_numpy(target), ignore_index=-1
        )
        loss.backward()
        torch_loss.backward()
        assert_close(loss, torch_loss, dict(rtol=close["rtol"], atol=0), "the loss")
        assert_close(ours.grad, theirs.grad, close, "the gradient of the logits")
