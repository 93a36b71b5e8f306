"""The class losses of minigrad/ops/losses/classification.py, cross_entropy and nll_loss, against
torch: hypothesis-drawn shapes (empty batches, unbatched inputs, extra dims) and options (class
weights, ignore_index, label smoothing, probability targets), every reduction, float32 and
float64; float64 gradchecks; the fused fast path; every row ignored; the errors torch raises.
"""

import numpy as np
import pytest
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as F
from loss_checks import IDS, LOGITS, PROBABILITIES, WEIGHT, X, class_shapes, refuses, torch_sweep
from op_checks import check_gradient, np_softmax, rand, value
from parity import assert_close, tolerance

torch = pytest.importorskip("torch")


def _class_ids(rng, input_shape, target_shape, ignore_index):
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
    input_shape, target_shape = class_shapes(data)
    ignore_index = data.draw(st.sampled_from([None, -100, 1]), label="ignore_index")
    options = _class_options(
        data, rng, dtype, input_shape[min(1, len(input_shape) - 1)], smoothing=True
    )
    if ignore_index is not None:
        options["ignore_index"] = ignore_index
    arrays = {
        "input": (rng.standard_normal(input_shape) * 3).astype(dtype),
        "target": _class_ids(rng, input_shape, target_shape, ignore_index),
    }
    return "cross_entropy", arrays, ["input"], options


def cross_entropy_probabilities(data, rng, dtype):
    input_shape, _ = class_shapes(data)
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
    input_shape, target_shape = class_shapes(data)
    ignore_index = data.draw(st.sampled_from([None, 0]), label="ignore_index")
    options = _class_options(
        data, rng, dtype, input_shape[min(1, len(input_shape) - 1)], smoothing=False
    )
    if ignore_index is not None:
        options["ignore_index"] = ignore_index
    arrays = {
        "input": rng.standard_normal(input_shape).astype(dtype),
        "target": _class_ids(rng, input_shape, target_shape, ignore_index),
    }
    return "nll_loss", arrays, ["input"], options


CASES = {
    "cross_entropy_ids": cross_entropy_ids,
    "cross_entropy_probabilities": cross_entropy_probabilities,
    "nll_loss": nll,
}
test_matches_torch_values_and_gradients = torch_sweep(CASES)


# -- gradchecks (float64 finite differences) -------------------------------------------------------

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


# -- errors ----------------------------------------------------------------------------------------

# name -> (call(library), minigrad's exception, message fragment, does torch raise too). Shape and
# dtype errors are mg.ShapeError / mg.DTypeError: ValueError / TypeError and RuntimeError at once,
# so code written for torch (except RuntimeError) catches them too.
ERRORS = {
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
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_name_what_was_expected(name):
    refuses(*ERRORS[name])


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
