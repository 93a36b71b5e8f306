"""The padding layers (nn/padding.py: ZeroPad, ConstantPad, ReflectionPad, ReplicationPad,
CircularPad in 1, 2 and 3 dims) against torch: values, gradients and reprs, float64 gradchecks.
"""

import pytest

from layer_checks import assert_refused_as_torch, check_layer, floats, normal
from minigrad import nn
from minigrad.errors import ArgumentError, ShapeError
from parity import DTYPE_IDS, DTYPES

# the tables compare with torch: without it the file is skipped
torch = pytest.importorskip("torch")


PAD_LAYERS = [
    ("ZeroPad1d", (2,), (2, 3, 4)),
    ("ZeroPad1d", ((1, 3),), (3, 5)),
    ("ZeroPad2d", (1,), (2, 3, 4, 5)),
    ("ZeroPad2d", ((1, 2, 0, 3),), (3, 4, 5)),
    ("ZeroPad2d", ((-1, 2, 1, -2),), (1, 2, 4, 5)),
    ("ConstantPad1d", (2, 3.5), (2, 3, 4)),
    ("ConstantPad1d", ((0, 2), -1.0), (3, 5)),
    ("ConstantPad2d", (1, 0), (2, 2, 3, 3)),
    ("ConstantPad2d", ((2, 0, 1, 3), 0.5), (2, 3, 4)),
    ("ReflectionPad1d", (2,), (2, 3, 5)),
    ("ReflectionPad1d", ((3, 1),), (3, 4)),
    ("ReflectionPad2d", (1,), (2, 2, 3, 4)),
    ("ReflectionPad2d", ((2, 0, 1, 3),), (2, 5, 4)),
    ("ReplicationPad1d", ((4, 1),), (2, 3, 2)),
    ("ReplicationPad2d", ((1, 2, 3, 0),), (2, 2, 3, 3)),
    ("ReplicationPad2d", (2,), (3, 1, 2)),
    ("CircularPad1d", ((2, 1),), (2, 3, 4)),
    ("CircularPad2d", (1,), (2, 2, 3, 4)),
    ("CircularPad2d", ((3, 0, 1, 2),), (2, 3, 5)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name, args, input_shape", PAD_LAYERS)
def test_pad_layers_match_torch(name, args, input_shape, dtype):
    check_layer(name, args, {}, input_shape, dtype)


@pytest.mark.parametrize("name, args, input_shape", PAD_LAYERS[::3])
def test_pad_layer_gradcheck(name, args, input_shape, gradcheck_module):
    gradcheck_module(getattr(nn, name)(*args), normal(*input_shape))


# name -> (call(library), our error class, a pattern our message matches: what was expected and
# given)
BAD_INPUTS = {
    "ZeroPad2d: padding of 3 numbers": (
        lambda L: L.nn.ZeroPad2d((1, 2, 3))(L.tensor(floats(1, 2, 3))),
        ArgumentError,
        r"an int or a tuple of 4 ints; got \(1, 2, 3\)",
    ),
    "ReflectionPad1d: padding as wide as the input": (
        lambda L: L.nn.ReflectionPad1d(3)(L.tensor(floats(1, 2, 3))),
        ShapeError,
        r"reflect padding of \(3, 3\) does not fit dim 2 of size 3.*at most 2",
    ),
    "ReflectionPad2d: 2-D input": (
        lambda L: L.nn.ReflectionPad2d(1)(L.tensor(floats(4, 4))),
        ShapeError,
        r"3-D or 4-D input \(C, H, W\) or \(N, C, H, W\); got input of shape \(4, 4\)",
    ),
    "ReplicationPad1d: 4-D input": (
        lambda L: L.nn.ReplicationPad1d(1)(L.tensor(floats(1, 1, 4, 4))),
        ShapeError,
        r"2-D or 3-D input \(C, L\) or \(N, C, L\); got input of shape \(1, 1, 4, 4\)",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_inputs_raise_clear_runtime_errors(case):
    assert_refused_as_torch(*BAD_INPUTS[case])
