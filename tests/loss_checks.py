"""What the loss tests share (tests/ops/losses/, one file per module of minigrad/ops/losses/, and
tests/nn/test_loss.py for the modules).

Three kinds of check:
- torch_sweep(cases): one test drawing, with hypothesis, each case of cases (name -> draw(data,
  rng, dtype) -> (loss name, arrays, differentiable names, options)) in float32 and float64 and
  every reduction, and comparing the value and the gradients with torch's
  (TOLERANCES["losses"]); the draws of shapes, class ids and options are here;
- table_tests(table): the two tests of a fixed table, name -> (arrays(dtype), differentiable
  names, call(library, reduction, **tensors)): against torch and a float64 gradcheck;
- refuses(call, error, match, torch_raises): a bad argument gets minigrad's clear error.
LOGITS, IDS, PROBABILITIES, WEIGHT and VALUES are the gradchecks' inputs.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from layer_checks import MINIGRAD, REDUCTIONS, TORCH, assert_same
from parity import DTYPES, assert_close, to_numpy

few = settings(max_examples=25, deadline=None)  # no wall-clock limits (first calls compile)


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
        value = to_numpy(out)
        upstream = np.random.default_rng(seed).standard_normal(value.shape).astype(value.dtype)
        out.backward(library.tensor(upstream))
    except Exception as error:  # noqa: BLE001 -- compared with the other library's behaviour
        return error
    return value, {name: to_numpy(tensors[name].grad) for name in differentiable}


def torch_sweep(cases):
    """The test of a table of drawn cases against torch: values and the gradients of every
    differentiable input, same shapes and dtypes, within TOLERANCES["losses"]."""

    @pytest.mark.parametrize("case", cases)
    @few
    @given(data=st.data(), dtype=st.sampled_from(DTYPES), reduction=st.sampled_from(REDUCTIONS))
    def test(case, data, dtype, reduction):
        seed = data.draw(st.integers(0, 2**16), label="seed")
        loss, arrays, differentiable, options = cases[case](
            data, np.random.default_rng(seed), dtype
        )
        options["reduction"] = reduction
        theirs = run(TORCH, loss, arrays, differentiable, options, seed)
        ours = run(MINIGRAD, loss, arrays, differentiable, options, seed)
        assert not isinstance(theirs, Exception), theirs  # every drawn case is valid input
        assert not isinstance(ours, Exception), f"minigrad raised {ours!r} where torch did not"
        (value, grads), (torch_value, torch_grads) = ours, theirs
        assert_close(value, torch_value, "losses", "value", same_dtype=True)
        for name in differentiable:
            assert grads[name].dtype == dtype, name
            assert_close(grads[name], torch_grads[name], "losses", f"gradient of {name}")

    return test


# -- the draws of the sweeps -------------------------------------------------------------------


def class_shapes(data):
    """(input shape, target shape) of a class loss: unbatched (C,), or (N, C, d1, ...)."""
    classes = data.draw(st.integers(1, 4), label="classes")
    if data.draw(st.booleans(), label="unbatched"):
        return (classes,), ()
    batch = data.draw(st.integers(0, 4), label="batch")
    extra = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2), label="extra dims"))
    return (batch, classes) + extra, (batch,) + extra


def elementwise_shape(data):
    return tuple(data.draw(st.lists(st.integers(0, 4), max_size=3), label="shape"))


# -- the fixed tables --------------------------------------------------------------------------


def table_tests(table):
    """The two tests of a fixed table, name -> (arrays(dtype), differentiable names,
    call(library, reduction, **tensors)): every row against torch in float32 and float64 and
    every reduction (values and gradients, TOLERANCES["functions of layers"]), and the float64
    gradcheck of the 'sum' loss of every row not on a kink (no "boundary" or "zero" in its name),
    its inputs moved off the kinks the torch table visits on purpose (equal rows in the triplets,
    a count of exactly 1 in Stirling's term, a variance at eps)."""

    @pytest.mark.parametrize("name", table)
    @pytest.mark.parametrize("reduction", REDUCTIONS)
    @pytest.mark.parametrize("dtype", DTYPES)
    def matches_torch(name, reduction, dtype):
        arrays, differentiable, call = table[name]
        assert_same(
            arrays(dtype), differentiable, lambda L, **tensors: call(L, reduction, **tensors), dtype
        )

    @pytest.mark.parametrize(
        "name", [name for name in table if "boundary" not in name and "zero" not in name]
    )
    def gradcheck(name):
        arrays, differentiable, call = table[name]
        arrays = arrays(np.float64)
        fixed = {
            key: mg.tensor(value) for key, value in arrays.items() if key not in differentiable
        }
        rng = np.random.default_rng(5)
        smooth = [
            arrays[key] / (3 if key != "v" else 1) + rng.uniform(0.01, 0.1, arrays[key].shape)
            for key in differentiable
        ]

        def loss(*tensors):
            return call(MINIGRAD, "sum", **fixed, **dict(zip(differentiable, tensors)))

        assert mg.gradcheck(loss, smooth)

    return matches_torch, gradcheck


def signs(shape, dtype=np.float64, seed=1):
    return np.where(np.random.default_rng(seed).random(shape) < 0.5, -1.0, 1.0).astype(dtype)


def class_ids(rows, classes, seed=2):
    return np.random.default_rng(seed).integers(0, classes, rows)


def multilabel_targets(rows, classes, seed=3):
    """Class ids first (one repeated), then -1, then junk after the -1 that must be ignored."""
    rng = np.random.default_rng(seed)
    target = np.full((rows, classes), -1)
    for row in range(rows):
        listed = rng.permutation(classes)[: rng.integers(0, classes)]
        target[row, : len(listed)] = listed
        if len(listed) + 1 < classes:
            target[row, len(listed) + 1] = rng.integers(0, classes)
    target[0, :2] = [1, 1]
    return target


# -- the gradchecks' inputs (float64) ----------------------------------------------------------

_rng = np.random.default_rng(11)
LOGITS = _rng.standard_normal((3, 4, 2))
IDS = np.array([[0, 3], [-100, 1], [2, 2]])
PROBABILITIES = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)
WEIGHT = np.array([0.5, 1.0, 2.0, 1.5])
VALUES = _rng.standard_normal((3, 4))

# -- errors ------------------------------------------------------------------------------------

X = np.zeros((3, 4), np.float32)  # the input of the error tables


def refuses(call, error, match, torch_raises):
    """call(library) raises error naming what was expected (match) in minigrad; torch raises too
    when torch_raises (perhaps only in backward)."""
    with pytest.raises(error, match=match):
        call(MINIGRAD)
    if torch_raises:
        with pytest.raises(Exception):
            call(TORCH).backward()


def refuses_clearly(call, error, message):
    """call() raises error matching message, which is also a RuntimeError (as torch's)."""
    with pytest.raises(error, match=message) as raised:
        call()
    assert isinstance(raised.value, RuntimeError)
