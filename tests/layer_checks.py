"""What the torch comparisons of nn's layers and functions share (tests/nn/).

layer_pair(name, args, kwargs, dtype) builds a layer of minigrad and torch's twin holding the
same random parameters; check_layer runs both forward and backward and compares the output, the
gradients of the input and of every parameter, and the state dicts. assert_same(arrays,
differentiable, call, dtype) runs call(library, **tensors) with MINIGRAD and TORCH (a Library
each: its nn.functional, nn and tensor constructor) and compares the output and the gradients;
assert_refused_as_torch(call, error, pattern) checks that both refuse call(library), minigrad
with a clear message.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F
from parity import assert_close, copy_state_to_torch, to_numpy, tolerance

torch = pytest.importorskip("torch")

TORCH_DTYPE = {np.float64: torch.float64, np.float32: torch.float32}
FUNCTIONAL = (F, torch.nn.functional)  # what each call of the tables gets as F


def normal(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def layer_pair(name, args, kwargs, dtype):
    """Our layer and torch's, torch's with our parameters and buffers."""
    ours = getattr(nn, name)(*args, **kwargs)
    theirs = getattr(torch.nn, name)(*args, **kwargs)
    if list(ours.parameters()) or list(ours.buffers()):
        ours = ours.to(dtype) if hasattr(ours, "to") else ours
        # not the init's ones and zeros: every gradient then shows
        for parameter in ours.parameters():
            parameter.numpy()[...] = normal(*parameter.shape, seed=9) * 0.5 + 1
        theirs = copy_state_to_torch(ours, theirs, dtype)
    return ours, theirs


def check_layer(name, args, kwargs, input_shape, dtype, training=True):
    ours, theirs = layer_pair(name, args, kwargs, dtype)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.train(training)
    theirs.train(training)
    x = normal(*input_shape).astype(dtype)
    leaf, torch_leaf = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, torch_out = ours(leaf), theirs(torch_leaf)
    assert out.dtype == dtype
    assert_close(out, torch_out, tolerance("default", dtype), "output")
    upstream = normal(*torch_out.shape, seed=4).astype(dtype)
    (out * mg.tensor(upstream)).sum().backward()
    (torch_out * torch.from_numpy(upstream)).sum().backward()
    assert_close(leaf.grad, torch_leaf.grad, tolerance("default", dtype), "gradient of the input")
    torch_parameters = dict(theirs.named_parameters())
    for parameter_name, parameter in ours.named_parameters():
        assert_close(
            parameter.grad,
            torch_parameters[parameter_name].grad,
            tolerance("default", dtype),
            f"gradient of {parameter_name}",
        )
    torch_state = theirs.state_dict()
    for key, value in ours.state_dict().items():
        assert_close(value, torch_state[key], tolerance("default", dtype), key)


REDUCTIONS = ["mean", "sum", "none"]


class Library:
    """One side of a comparison: its nn.functional, nn and tensor constructor."""

    def __init__(self, functional, modules, tensor):
        self.F, self.nn, self.tensor = functional, modules, tensor


MINIGRAD = Library(F, nn, mg.tensor)
TORCH = Library(torch.nn.functional, torch.nn, torch.tensor)


def run(library, call, arrays, differentiable):
    """(output, {name: gradient}) of call(library, **tensors), backward with an upstream
    gradient of ones and a ramp (so that each output element weighs differently)."""
    tensors = {
        name: library.tensor(array, requires_grad=name in differentiable)
        for name, array in arrays.items()
    }
    out = call(library, **tensors)
    value = to_numpy(out)
    if differentiable:
        upstream = (1 + np.arange(value.size) % 5 * 0.25).reshape(value.shape).astype(value.dtype)
        out.backward(library.tensor(upstream))
    return value, {name: to_numpy(tensors[name].grad) for name in differentiable}


def assert_same(arrays, differentiable, call, dtype, tolerance=None):
    tolerance = tolerance or "functions of layers"
    mine, mine_grads = run(MINIGRAD, call, arrays, differentiable)
    theirs, their_grads = run(TORCH, call, arrays, differentiable)
    assert_close(mine, theirs, tolerance, "output", same_dtype=True)
    for name in differentiable:
        assert_close(mine_grads[name], their_grads[name], tolerance, f"gradient of {name}")


def floats(*shape, seed=0):
    """normal(*shape) in float32: the inputs of the bad-input tables."""
    return normal(*shape, seed=seed).astype(np.float32)


def assert_refused_as_torch(call, error, pattern):
    """call(library) is refused by both libraries: minigrad raises error (also a RuntimeError,
    as torch raises it, unless error is ValueError) with a message matching pattern, which names
    what was expected and what was given; torch raises too."""
    with pytest.raises(error, match=pattern) as caught:
        call(MINIGRAD)
    if error is not ValueError:
        assert isinstance(caught.value, RuntimeError)  # what torch raises, so torch code catches it
    with pytest.raises((RuntimeError, ValueError, NotImplementedError, IndexError)):
        call(TORCH)


def scores(shape, dtype, seed=0):
    """Standard normal inputs times 2 of the loss and distance tests, the first three 0, 30 and
    -30 (zero and large, both signs)."""
    values = np.random.default_rng(seed).standard_normal(shape) * 2
    values.reshape(-1)[:3] = [0.0, 30.0, -30.0][: values.size]  # 0 and large, both signs
    return values.astype(dtype)


def distance_inputs(dtype):
    """The inputs a and b of the distance tests (tests/ops/ and tests/nn/test_distance.py): rows
    with a zero vector, equal rows (distance 0) and large values."""
    a, b = scores((5, 3), dtype), scores((5, 3), dtype, 1)
    a[1], b[1] = 0, 0
    a[2] = a[3]
    b[2] = a[2]
    return dict(a=a, b=b)


# The functions and state copies of the Transformer-API sweep (tests/nn/test_transformer.py) and
# of the families it reaches: normalization, activation, multi-head attention, attention, optim
# (their tolerances: parity.TOLERANCES["transformer"] and ["transformer gradient"]).
TF = torch.nn.functional


def copy_to_torch(ours, theirs, randomize=None, seed=0):
    """Load ours' state dict into theirs by name (after filling ours with random values when
    randomize is a scale); the key sets must be equal."""
    if randomize:
        rng = np.random.default_rng(seed)
        for p in ours.parameters():
            p.numpy()[...] = (rng.standard_normal(p.shape) * randomize).astype(p.dtype)
    copy_state_to_torch(ours, theirs)


def weighting(shape, dtype, seed=123):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)
