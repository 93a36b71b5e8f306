"""Every op of tests/parity_cases.py against PyTorch: values, dtypes, gradients and errors.

Hypothesis draws the shapes (0-d, empty dims, broadcasting), the dims (negative ones too),
the dtype and the memory layout of minigrad's inputs (contiguous, transposed, strided); the
same call then runs in both libraries. Where torch raises, minigrad must raise too (an error
of its own or a builtin one, never numpy's); where torch returns, minigrad must return the
same dtype, shape and values, say the same about requires_grad, and give the same gradient
of a weighted sum of the outputs. Each differentiable case is also gradchecked in float64.
"""

import math
import warnings
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minigrad as mg
from parity import assert_close, to_numpy, tolerance
from parity_cases import CASES, Draw

torch = pytest.importorskip("torch")

POOLS = {
    "ties": [-2.0, -1.0, 0.0, 1.0, 2.0],
    "nonfinite": [-math.inf, -1.5, 0.0, 0.5, 2.0, math.inf, math.nan],
}
LAYOUTS = ("contiguous", "transposed", "strided")


def make_array(shape, dtype, case, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        values = rng.random(shape) < 0.5
    elif case.values != "random":
        values = rng.choice(
            [v for v in POOLS[case.values] if dtype != "int64" or math.isfinite(v)], size=shape
        )
    elif dtype == "int64":
        values = rng.integers(math.ceil(case.low), math.floor(case.high) + 1, size=shape)
    else:
        values = rng.uniform(case.low, case.high, size=shape)
    return np.asarray(values).astype(dtype)


def leaf(lib, array, layout):
    """A leaf of lib holding `array` (requiring grad if float); minigrad's may be a strided view."""
    wants_grad = array.dtype.kind == "f"
    if lib is torch:
        return torch.tensor(array, requires_grad=wants_grad)
    if layout == "transposed" and array.ndim >= 2:
        storage = np.asfortranarray(array)
    elif layout == "strided" and array.ndim >= 1:
        storage = np.repeat(array, 2, axis=-1)[..., ::2]
    else:
        storage = array.copy()
    tensor = mg.from_numpy(storage)
    return tensor.requires_grad_() if wants_grad else tensor


def is_tensor(value):
    return isinstance(value, (mg.Tensor, torch.Tensor))


def dtype_name(tensor):
    return str(tensor.dtype).replace("torch.", "")


class Outcome:
    """What one library did with one example: outputs, gradients, or the error it raised."""

    def __init__(self, lib, case, arrays, params, layout):
        self.error = self.error_in_backward = None
        self.outputs, self.grads = [], None
        leaves = [leaf(lib, a, layout) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns where it returns nan (var of one element)
            try:
                result = case.call(lib, params, *leaves)
            except Exception as error:  # noqa: BLE001 (compared with the other library's)
                self.error = error
                return
            self.outputs = flatten(result)
            differentiable = [o for o in self.outputs if is_tensor(o) and o.requires_grad]
            if not differentiable:
                return
            loss = sum(
                (o * lib.tensor(weights(o.shape, k, dtype_name(o)))).sum()
                for k, o in enumerate(differentiable)
            )
            try:
                loss.backward()
            except Exception as error:  # noqa: BLE001
                self.error_in_backward = error
                return
            self.grads = [
                np.zeros(a.shape) if x.grad is None else to_numpy(x.grad)
                for a, x in zip(arrays, leaves)
                if a.dtype.kind == "f"
            ]


def flatten(result):
    """The outputs of a call as a flat list: tuples (also (values, indices) pairs) are opened."""
    if isinstance(result, tuple) and not isinstance(result, torch.Size):
        return [item for part in result for item in flatten(part)]
    return [result]


def weights(shape, k, dtype):
    return np.random.default_rng(1000 + k).uniform(0.5, 1.5, size=tuple(shape)).astype(dtype)


def assert_same_error_kind(ours, theirs, where):
    assert ours is not None, (
        f"{where}: torch raises {type(theirs).__name__}: {theirs}; minigrad does not"
    )
    kinds = (
        (IndexError,)
        if isinstance(theirs, IndexError)
        else (ValueError, TypeError, IndexError, RuntimeError)
    )
    assert isinstance(ours, kinds) and type(ours).__module__ in ("builtins", "minigrad.errors"), (
        f"{where}: torch raises {type(theirs).__name__}: {theirs}; "
        f"minigrad raises {type(ours).__module__}.{type(ours).__name__}: {ours}"
    )


def same_value(mine, reference):
    if isinstance(reference, torch.Size):
        return tuple(mine) == tuple(reference)
    return not is_tensor(mine) and np.array_equal(
        np.asarray(mine, dtype=object), np.asarray(reference, dtype=object)
    )


def compare(ours, theirs, dtype, where):
    if theirs.error is not None:
        assert_same_error_kind(ours.error, theirs.error, where)
        return
    if ours.error is not None:
        raise AssertionError(f"{where}: torch returns, minigrad raises") from ours.error
    assert len(ours.outputs) == len(theirs.outputs), where
    for k, (mine, reference) in enumerate(zip(ours.outputs, theirs.outputs)):
        what = f"{where}, output {k}"
        if not is_tensor(reference):  # a Python value: a bool, an int, a size, a list
            assert same_value(mine, reference), f"{what}: {mine!r} != {reference!r}"
            continue
        assert is_tensor(mine), f"{what}: expected a tensor, got {type(mine).__name__}"
        assert dtype_name(mine) == dtype_name(reference), (
            f"{what}: dtype {mine.dtype} != torch's {reference.dtype}"
        )
        assert tuple(mine.shape) == tuple(reference.shape), (
            f"{what}: shape {mine.shape} != torch's {reference.shape}"
        )
        assert mine.requires_grad == reference.requires_grad, (
            f"{what}: requires_grad {mine.requires_grad}"
        )
        assert_close(mine, reference, "hypothesis table", what, scaled=True)
    if theirs.error_in_backward is not None:
        assert_same_error_kind(
            ours.error_in_backward, theirs.error_in_backward, f"{where}, backward"
        )
        return
    if ours.error_in_backward is not None:
        raise AssertionError(f"{where}: minigrad's backward raises") from ours.error_in_backward
    assert (ours.grads is None) == (theirs.grads is None), where
    for k, (mine, reference) in enumerate(zip(ours.grads or [], theirs.grads or [])):
        assert mine.shape == reference.shape, (
            f"{where}: gradient {k} has shape {mine.shape}, torch's {reference.shape}"
        )
        what = f"{where}, gradient of input {k}"
        assert_close(mine, reference, tolerance("hypothesis table", dtype), what, scaled=True)


def run_example(case, draw):
    shapes, dtype, layout, params = case.draw(draw)
    arrays = [make_array(shape, dtype, case, params.seed + k) for k, shape in enumerate(shapes)]
    where = (
        f"{case.name}: shapes {shapes}, {dtype}, {layout}, dim={params.dim}, dim2={params.dim2}, "
        f"dims={params.dims}, keepdim={params.keepdim}, option={params.option}"
    )
    compare(
        Outcome(mg, case, arrays, params, layout),
        Outcome(torch, case, arrays, params, layout),
        dtype,
        where,
    )


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_op_matches_torch(name, data):
    run_example(CASES[name], Draw(data))


# -- float64 gradcheck ----------------------------------------------------------------------


def gradcheck_example(case):
    """A small non-empty float64 example of the case whose output is differentiable, or None."""
    for attempt in range(30):
        draw = Draw(seed=zlib.crc32(case.name.encode()) + attempt)
        shapes, _, _, params = case.draw(draw)
        sizes = [int(np.prod(s)) for s in shapes]
        if not shapes or min(sizes) == 0 or sum(sizes) > 130:
            continue
        arrays = [make_array(s, "float64", case, params.seed + k) for k, s in enumerate(shapes)]
        try:
            outputs = case.call(mg, params, *[mg.tensor(a, requires_grad=True) for a in arrays])
        except (ValueError, TypeError, IndexError, RuntimeError):
            continue
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        if any(
            isinstance(o, mg.Tensor) and o.requires_grad and o.dtype == mg.float64 and o.numel()
            for o in outputs
        ):
            return arrays, params
    return None


GRADCHECKED = {
    name: example
    for name, case in CASES.items()
    if case.smooth
    and case.values == "random"
    and "float64" in case.dtypes
    and (example := gradcheck_example(case)) is not None
}


@pytest.mark.parametrize("name", list(GRADCHECKED))
def test_float64_gradcheck(name):
    case, (arrays, params) = CASES[name], GRADCHECKED[name]

    def differentiable_outputs(*inputs):
        outputs = case.call(mg, params, *inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        return mg.cat(
            [o.reshape(-1) for o in outputs if isinstance(o, mg.Tensor) and o.dtype == mg.float64]
        )

    assert mg.gradcheck(differentiable_outputs, arrays)


def test_the_table_gradchecks_every_new_differentiable_op():
    for name in (
        "sin",
        "erf",
        "rsqrt",
        "clamp(x, low, high)",
        "maximum",
        "prod(dim)",
        "std(dims, correction)",
        "logsumexp(dims)",
        "norm(p=3)",
        "cumsum(dim)",
        "split(sizes)",
        "repeat",
        "tile",
        "unflatten",
        "movedim",
        "narrow",
        "roll(shift, dim)",
        "tril",
        "gather",
        "index_select",
        "masked_select",
        "scatter_add",
        "topk",
        "sort",
        "einsum bhqd,bhkd->bhqk",
        "einsum ii->i",
        "outer",
        "bmm",
    ):
        assert name in GRADCHECKED, name


# -- bad arguments: both libraries refuse, minigrad says what it expected and what it got -----

BAD_CALLS = {
    "clamp without bounds": (lambda B: B.clamp(B.ones(2)), "min and max"),
    "maximum with a number": (lambda B: B.maximum(B.ones(2), 1.0), "tensors"),
    "amax over an empty dim": (lambda B: B.zeros(0, 3).amax(0), "dim 0 of size 0"),
    "max of no elements": (lambda B: B.zeros(0).max(), "size 0"),
    "max(dim) over an empty dim": (lambda B: B.zeros(2, 0).max(1), "dim 1 of size 0"),
    "argmax of no elements": (lambda B: B.zeros(0).argmax(), "no elements"),
    "mean of an int tensor": (lambda B: B.tensor([1, 2]).mean(), "int64"),
    "var of an int tensor": (lambda B: B.tensor([1, 2]).var(), "int64"),
    "norm of an int tensor": (lambda B: B.tensor([1, 2]).norm(), "int64"),
    "norm(inf) of no elements": (lambda B: B.zeros(0).norm(float("inf")), "size 0"),
    "sum over dim 3 of a 2-D tensor": (lambda B: B.zeros(2, 3).sum(3), "dim 3"),
    "cumsum over dim -3 of a 2-D tensor": (lambda B: B.zeros(2, 3).cumsum(-3), "dim -3"),
    "flip((0, 0))": (lambda B: B.zeros(2, 3).flip((0, 0)), "more than once"),
    "gather with a negative index": (lambda B: B.arange(3.0).gather(0, B.tensor([-1])), "[0, 3)"),
    "gather with a float index": (lambda B: B.arange(3.0).gather(0, B.tensor([0.0])), "float"),
    "index_select with a 2-D index": (
        lambda B: B.arange(3.0).index_select(0, B.tensor([[1]])),
        "1-D",
    ),
    "index_select out of range": (lambda B: B.arange(3.0).index_select(0, B.tensor([3])), "[0, 3)"),
    "masked_select with an int mask": (
        lambda B: B.arange(3.0).masked_select(B.tensor([1, 0, 1])),
        "bool",
    ),
    "scatter_add with a negative index": (
        lambda B: B.zeros(3).scatter_add(0, B.tensor([-1]), B.ones(1)),
        "[0, 3)",
    ),
    "split sizes that do not add up": (lambda B: B.zeros(4).split([1, 2]), "add up to 4"),
    "split size 0": (lambda B: B.zeros(4).split(0), "positive"),
    "chunk(0)": (lambda B: B.zeros(4).chunk(0), "positive"),
    "unbind a 0-d tensor": (lambda B: B.tensor(1.0).unbind(), "0-d"),
    "repeat with fewer sizes than dims": (lambda B: B.zeros(2, 3).repeat(2), "(2, 3)"),
    "repeat_interleave with negative repeats": (
        lambda B: B.zeros(3).repeat_interleave(-1),
        "non-negative",
    ),
    "repeat_interleave with the wrong count": (
        lambda B: B.zeros(3).repeat_interleave(B.tensor([1, 2])),
        "3",
    ),
    "unflatten into sizes of another product": (
        lambda B: B.zeros(3, 4).unflatten(1, (3, -1)),
        "(3, -1)",
    ),
    "movedim with a repeated dim": (lambda B: B.zeros(2, 3, 4).movedim((0, 0), (1, 2)), "repeated"),
    "narrow past the end": (lambda B: B.zeros(3, 4).narrow(1, 3, 2), "size 4"),
    "roll with shifts and dims of different lengths": (
        lambda B: B.zeros(3, 4).roll((1, 2), 0),
        "same length",
    ),
    "tril of a 1-D tensor": (lambda B: B.ones(3).tril(), "(3,)"),
    "t of a 3-D tensor": (lambda B: B.ones(1, 2, 3).t(), "(1, 2, 3)"),
    "topk with k larger than the dim": (lambda B: B.arange(3.0).topk(4), "[0, 3]"),
    "einsum with too few operands": (lambda B: B.einsum("ij,jk->ik", B.ones(2, 3)), "2 operands"),
    "einsum with mismatched sizes": (
        lambda B: B.einsum("ij,jk->ik", B.ones(2, 3), B.ones(4, 4)),
        "size",
    ),
    "einsum of float32 and int64": (
        lambda B: B.einsum("i,i->", B.ones(2), B.tensor([1, 2])),
        "int64",
    ),
    "matmul of float32 and int64": (lambda B: B.ones(2, 2) @ B.tensor([[1, 2], [3, 4]]), "int64"),
    "bmm of 2-D tensors": (lambda B: B.bmm(B.ones(2, 3), B.ones(3, 4)), "3-D"),
    "bmm with different batch sizes": (
        lambda B: B.bmm(B.ones(2, 2, 3), B.ones(1, 3, 4)),
        "(1, 3, 4)",
    ),
    "outer of a 2-D tensor": (lambda B: B.outer(B.ones(2, 1), B.ones(3)), "1-D"),
    "cat of 0-d tensors": (lambda B: B.cat([B.tensor(1.0), B.tensor(2.0)]), "zero-dimensional"),
    "stack of different shapes": (lambda B: B.stack([B.ones(2), B.ones(3)]), "(3,)"),
    "expand to a smaller shape": (lambda B: B.ones(2, 3).expand(3), "(2, 3)"),
    "multinomial of negative weights": (
        lambda B: B.multinomial(B.tensor([0.5, -1.0]), 1),
        "non-negative",
    ),
    "multinomial of too many samples": (lambda B: B.multinomial(B.tensor([0.5, 0.5]), 3), "got 3"),
    "multinomial of int weights": (lambda B: B.multinomial(B.tensor([1, 2]), 1), "int64"),
    "multinomial of 3-D weights": (lambda B: B.multinomial(B.ones(2, 2, 2), 1), "(2, 2, 2)"),
    "randint with low >= high": (lambda B: B.randint(5, 5, (2,)), "low=5"),
    "linspace with negative steps": (lambda B: B.linspace(0, 1, -1), "-1"),
    "x.to another device": (lambda B: B.ones(2).to("cuda"), "cuda"),
}


@pytest.mark.parametrize("name", list(BAD_CALLS))
def test_bad_arguments_are_refused_as_torch_does_with_a_clear_message(name):
    call, fragment = BAD_CALLS[name]
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(Exception) as ours:
        call(mg)
    assert_same_error_kind(ours.value, theirs.value, name)
    assert fragment in str(ours.value), f"{name}: {ours.value}"


# -- the behaviours issue 11 lists, one fixed example each -------------------------------------

MAX_TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 1.0]])
TORCH_BEHAVIOUR = {  # name -> (call(B, p, *tensors), input arrays)
    "x[1, :, [0, 2]] on (2, 3, 3) has shape (3, 2)": (
        lambda B, p, x: x[1, :, [0, 2]],
        [np.arange(18.0).reshape(2, 3, 3)],
    ),
    "max(dim) sends the gradient to the returned index": (lambda B, p, x: x.max(1), [MAX_TIES]),
    "min(dim) too": (lambda B, p, x: x.min(0), [MAX_TIES]),
    "amax shares it among ties": (lambda B, p, x: x.amax(1), [MAX_TIES]),
    "max() shares it among ties": (lambda B, p, x: x.max(), [MAX_TIES]),
    "x ** 0 at x = 0 has gradient 0": (lambda B, p, x: x**0, [np.array([0.0, 1.0, -2.0])]),
    "0 ** x": (lambda B, p, x: B.zeros_like(x) ** x, [np.array([0.0, 1.0, -1.0, 0.5, 2.0])]),
    "negative bases": (
        lambda B, p, a, b: a**b,
        [np.array([-2.0, -2.0, -0.5, -3.0]), np.array([2.0, 0.5, -1.0, 3.0])],
    ),
    "unary float ops on an int tensor give float32": (
        lambda B, p, x: (
            x.exp(),
            x.log(),
            x.sqrt(),
            x.tanh(),
            x.sigmoid(),
            x.sin(),
            x.rsqrt(),
            x.erf(),
        ),
        [np.array([1, 2, 3])],
    ),
    "sigmoid of a bool tensor": (lambda B, p, x: B.sigmoid(x), [np.array([True, False])]),
    "where(cond, int_tensor, 0.5) is float32": (
        lambda B, p, x: B.where(x > 1, x, 0.5),
        [np.array([1, 2, 3])],
    ),
    "mean of an int tensor raises": (lambda B, p, x: x.mean(), [np.array([1, 2])]),
    "dim 0 and -1 on a 0-d tensor": (
        lambda B, p, x: (
            x.sum(0),
            x.mean(-1),
            x.max(0),
            x.amax(-1),
            x.cumsum(0),
            x.argmax(0),
            x.unsqueeze(-1),
            x.squeeze(0),
            x.flip(0),
            x.logsumexp(0),
            x.sort(0),
            x.topk(1, -1),
            x.prod(0),
        ),
        [np.array(2.5)],
    ),
    "var and std over an empty dim are nan": (
        lambda B, p, x: (x.var(0), x.std(0), x.var(1)),
        [np.zeros((0, 3))],
    ),
    "empty dims: sum 0, prod 1, mean nan, logsumexp -inf": (
        lambda B, p, x: (x.sum(0), x.prod(0), x.mean(0), x.logsumexp(0), x.amax(1), x.norm(dim=0)),
        [np.zeros((0, 3))],
    ),
    "& | ^ ~ on integer tensors are bitwise": (
        lambda B, p, a, b: (a & b, a | b, a ^ b, ~a),
        [np.array([12, -3, 5]), np.array([10, 6, -1])],
    ),
    "& | ^ ~ on bool tensors are logical": (
        lambda B, p, a, b: (a & b, a | b, a ^ b, ~a),
        [np.array([True, True, False]), np.array([True, False, False])],
    ),
    "clamp with min > max gives max": (
        lambda B, p, x: x.clamp(1.0, -1.0),
        [np.array([-2.0, 0.0, 2.0])],
    ),
    "std of equal values has gradient 0": (lambda B, p, x: x.std(), [np.ones(4)]),
    "norm of zeros has gradient 0": (
        lambda B, p, x: (x.norm(), x.norm(3), x.norm(0.5)),
        [np.zeros(3)],
    ),
}


@pytest.mark.parametrize("name", list(TORCH_BEHAVIOUR))
def test_torch_behaviour(name):
    call, arrays = TORCH_BEHAVIOUR[name]
    case = type("Call", (), {"name": name, "call": staticmethod(call)})
    compare(
        Outcome(mg, case, arrays, None, "contiguous"),
        Outcome(torch, case, arrays, None, "contiguous"),
        str(arrays[0].dtype),
        name,
    )


def test_default_dtype_float64_changes_what_torch_changes():
    calls = {
        "tensor(1.5)": lambda B: B.tensor(1.5),
        "tensor([1, 2.5])": lambda B: B.tensor([1, 2.5]),
        "zeros": lambda B: B.zeros(2),
        "ones": lambda B: B.ones(2),
        "empty": lambda B: B.empty(2),
        "eye": lambda B: B.eye(2),
        "full(1.5)": lambda B: B.full((2,), 1.5),
        "full(1)": lambda B: B.full((2,), 1),
        "arange(0.5, 2)": lambda B: B.arange(0.5, 2),
        "arange(3)": lambda B: B.arange(3),
        "linspace": lambda B: B.linspace(0, 1, 3),
        "rand": lambda B: B.rand(2),
        "randn": lambda B: B.randn(2),
        "int * 1.5": lambda B: B.tensor([1, 2]) * 1.5,
        "int / int": lambda B: B.tensor([1, 2]) / B.tensor([2, 2]),
        "int.exp()": lambda B: B.tensor([1, 2]).exp(),
        "where(c, int, 0.5)": lambda B: B.where(B.tensor([True, False]), B.tensor([1, 2]), 0.5),
        "float32 * 1.5": lambda B: B.ones(2, dtype=B.float32) * 1.5,
        "int.mean(dtype)": lambda B: B.tensor([1, 2]).float(),
    }
    assert mg.get_default_dtype() == mg.float32 and torch.get_default_dtype() == torch.float32
    try:
        mg.set_default_dtype(mg.float64)
        torch.set_default_dtype(torch.float64)
        assert mg.get_default_dtype() == mg.float64
        for name, call in calls.items():
            assert dtype_name(call(mg)) == dtype_name(call(torch)), name
    finally:
        mg.set_default_dtype(mg.float32)
        torch.set_default_dtype(torch.float32)
    for name, call in calls.items():
        assert dtype_name(call(mg)) == dtype_name(call(torch)), f"{name} (float32 again)"
