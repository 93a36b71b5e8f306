"""The pooling layers (nn/pooling.py: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d,
AdaptiveMaxPool1d/2d) against torch's: reprs, values and gradients in float32 and float64,
return_indices; a small conv / pool / linear classifier trained two steps as torch's. The
functions they call are in tests/ops/test_pooling.py.
"""

import numpy as np
import pytest

import minigrad as mg
from layer_checks import FUNCTIONAL, assert_refused_as_torch, normal
from minigrad import nn
from minigrad.errors import DTypeError
from minigrad.nn import functional as F
from parity import DTYPES, assert_runs_match, run_both

# the tables compare with torch: without it the file is skipped
torch = pytest.importorskip("torch")


# (layer name, positional arguments, keyword arguments, input shape)
POOL_LAYER_CASES = [
    ("MaxPool1d", (2,), {}, (2, 3, 9)),
    ("MaxPool1d", (3, 2, 1), dict(dilation=2, ceil_mode=True), (2, 3, 10)),
    ("MaxPool2d", (2,), {}, (2, 3, 8, 8)),
    ("MaxPool2d", ((2, 3), 1, 1), dict(ceil_mode=True), (3, 6, 7)),
    ("AvgPool1d", (2,), {}, (2, 3, 9)),
    ("AvgPool1d", (3, 2, 1, True, False), {}, (2, 3, 10)),
    ("AvgPool2d", (2,), {}, (2, 3, 8, 8)),
    ("AvgPool2d", (3, 2, 1), dict(ceil_mode=True, count_include_pad=False), (2, 2, 9, 8)),
    ("AvgPool2d", (3,), dict(divisor_override=2), (1, 2, 6, 6)),
    ("AdaptiveAvgPool1d", (1,), {}, (2, 4, 7)),
    ("AdaptiveAvgPool2d", ((2, None),), {}, (2, 3, 5, 6)),
    ("AdaptiveAvgPool2d", (1,), {}, (3, 5, 6)),
    ("AdaptiveMaxPool1d", (3,), {}, (2, 4, 7)),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, (2, 3, 7, 5)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name, args, kwargs, input_shape", POOL_LAYER_CASES)
def test_pool_layers_match_torch(name, args, kwargs, input_shape, dtype):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    layers = {F: ours, torch.nn.functional: theirs}
    result, torch_result = run_both(
        lambda library, x: layers[library](x), [normal(*input_shape)], dtype, sides=FUNCTIONAL
    )
    assert_runs_match(result, torch_result, names=["input"])


@pytest.mark.parametrize(
    "name, args",
    [
        ("MaxPool1d", (2,)),
        ("MaxPool2d", (3, 2, 1)),
        ("AdaptiveMaxPool1d", (3,)),
        ("AdaptiveMaxPool2d", ((2, 3),)),
    ],
)
def test_max_pool_layers_return_indices_as_torch(name, args):
    x = normal(2, 3, 7, 8)[..., 0, :] if name.endswith("1d") else normal(2, 3, 7, 8)
    values, indices = getattr(nn, name)(*args, return_indices=True)(mg.tensor(x))
    torch_values, torch_indices = getattr(torch.nn, name)(*args, return_indices=True)(
        torch.from_numpy(x)
    )
    np.testing.assert_array_equal(values.numpy(), torch_values.numpy())
    np.testing.assert_array_equal(indices.numpy(), torch_indices.numpy())


def test_a_small_image_classifier_trains_as_torch():
    """Two steps of SGD on a conv / pool / linear model give torch's weights."""
    mg.manual_seed(10)
    ours = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(6, 3),
    )
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(4, 6, 3),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(6, 3),
    ).double()
    ours.to(mg.float64)
    theirs.load_state_dict(
        {key: torch.from_numpy(value.numpy().copy()) for key, value in ours.state_dict().items()}
    )
    images, labels = normal(8, 1, 10, 10, seed=11), np.random.default_rng(12).integers(0, 3, 8)
    optimizer, torch_optimizer = (
        mg.optim.SGD(ours.parameters(), lr=0.1),
        torch.optim.SGD(theirs.parameters(), lr=0.1),
    )
    for _ in range(2):
        optimizer.zero_grad()
        F.cross_entropy(ours(mg.tensor(images)), mg.tensor(labels)).backward()
        optimizer.step()
        torch_optimizer.zero_grad()
        torch.nn.functional.cross_entropy(
            theirs(torch.from_numpy(images)), torch.from_numpy(labels)
        ).backward()
        torch_optimizer.step()
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(
            ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-10, atol=1e-12, err_msg=key
        )


def test_a_pooling_layer_refuses_an_int_input_naming_its_dtype():
    assert_refused_as_torch(
        lambda L: L.nn.MaxPool1d(2)(L.tensor(np.ones((1, 1, 4), np.int64))),
        DTypeError,
        r"expected a float32 or float64 input; got dtype int64",
    )
