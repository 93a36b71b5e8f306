"""The normalisation layers and functions (nn/normalization.py: GroupNorm, InstanceNorm1d/2d/3d,
LocalResponseNorm, group_norm, instance_norm ...) against torch: values, the gradients of the
input and of every parameter, running statistics, state dicts moved to torch and back, float64
gradchecks and torch's warnings.
"""

import numpy as np
import pytest

import minigrad as mg
from layer_checks import FUNCTIONAL, check_layer, normal
from minigrad import nn
from minigrad.nn import functional as F
from parity import DTYPE_IDS, DTYPES, TOLERANCE, assert_close, assert_runs_match, run_both

torch = pytest.importorskip(
    "torch"
)  # the tables compare with torch: without it the file is skipped


# (layer name, positional arguments, keyword arguments, input shape, training)
NORM_LAYERS = [
    ("GroupNorm", (3, 6), {}, (2, 6, 5, 3), True),
    ("GroupNorm", (1, 4), {}, (3, 4, 7), True),
    ("GroupNorm", (4, 4), dict(eps=1e-3), (2, 4, 3, 3), True),
    ("GroupNorm", (2, 6), dict(affine=False), (2, 6, 5), True),
    ("GroupNorm", (2, 4), dict(bias=False), (2, 4), True),
    ("InstanceNorm1d", (3,), {}, (2, 3, 7), True),
    ("InstanceNorm1d", (3,), {}, (3, 5), True),
    ("InstanceNorm1d", (4,), dict(affine=True), (2, 4, 6), True),
    ("InstanceNorm1d", (4,), dict(affine=True, bias=False), (2, 4, 6), True),
    ("InstanceNorm1d", (3,), dict(track_running_stats=True, momentum=0.3), (2, 3, 5), True),
    ("InstanceNorm1d", (3,), dict(track_running_stats=True), (2, 3, 5), False),
    ("InstanceNorm2d", (3,), {}, (2, 3, 5, 4), True),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True), (2, 3, 5, 4), True),
    ("InstanceNorm2d", (3,), dict(affine=True, track_running_stats=True), (3, 5, 4), True),
    ("InstanceNorm2d", (3,), dict(track_running_stats=True, momentum=None), (2, 3, 3, 3), True),
    ("InstanceNorm2d", (2,), dict(affine=True, track_running_stats=True), (2, 2, 3, 3), False),
    ("InstanceNorm2d", (3,), dict(affine=True), (3, 4, 5), False),
    ("LocalResponseNorm", (3,), {}, (2, 6, 5), True),
    ("LocalResponseNorm", (2,), dict(alpha=0.5, beta=0.6, k=2.0), (2, 5, 4, 3), True),
    ("LocalResponseNorm", (7,), dict(alpha=1.0), (1, 4, 3, 2, 2), True),
    ("LocalResponseNorm", (1,), {}, (2, 3, 4), True),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name, args, kwargs, input_shape, training", NORM_LAYERS)
def test_norm_layers_match_torch(name, args, kwargs, input_shape, training, dtype):
    check_layer(name, args, kwargs, input_shape, dtype, training)


@pytest.mark.parametrize(
    "name, args, kwargs, input_shape, training", [NORM_LAYERS[i] for i in (0, 7, 12, 15, 18)]
)
def test_norm_layer_gradcheck(name, args, kwargs, input_shape, training, gradcheck_module):
    layer = getattr(nn, name)(*args, **kwargs).to(np.float64)
    layer.train(training)
    gradcheck_module(layer, normal(*input_shape))


# name -> (call(F, *tensors), input shapes)
NORM_FUNCTIONS = {
    "group_norm": (lambda F, x, w, b: F.group_norm(x, 2, w, b, eps=1e-4), [(3, 4, 5), (4,), (4,)]),
    "group_norm, no affine, 2-D": (lambda F, x: F.group_norm(x, 3), [(2, 6)]),
    "instance_norm": (lambda F, x: F.instance_norm(x), [(2, 3, 6)]),
    "instance_norm, affine": (
        lambda F, x, w, b: F.instance_norm(x, weight=w, bias=b),
        [(2, 3, 4, 3), (3,), (3,)],
    ),
    "local_response_norm": (
        lambda F, x: F.local_response_norm(x, 4, alpha=0.3, beta=0.5, k=1.5),
        [(2, 7, 3)],
    ),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", NORM_FUNCTIONS)
def test_norm_functions_match_torch(case, dtype):
    call, shapes = NORM_FUNCTIONS[case]
    assert_runs_match(
        *run_both(
            call,
            [normal(*shape, seed=i) for i, shape in enumerate(shapes)],
            dtype,
            sides=FUNCTIONAL,
        )
    )


@pytest.mark.parametrize("case", NORM_FUNCTIONS)
def test_norm_functions_gradcheck(case):
    call, shapes = NORM_FUNCTIONS[case]
    assert mg.gradcheck(
        lambda *xs: call(F, *xs), [normal(*shape, seed=i) for i, shape in enumerate(shapes)]
    )


@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm_running_statistics_as_torch(use_input_stats):
    x = normal(4, 3, 6)
    running = [normal(3, seed=1), np.abs(normal(3, seed=2)) + 0.5]
    ours = [mg.tensor(r.copy()) for r in running]
    theirs = [torch.tensor(r.copy()) for r in running]
    out = F.instance_norm(mg.tensor(x), *ours, use_input_stats=use_input_stats, momentum=0.2)
    torch_out = torch.nn.functional.instance_norm(
        torch.tensor(x), *theirs, use_input_stats=use_input_stats, momentum=0.2
    )
    assert_close(out, torch_out, TOLERANCE[np.float64], "output")
    for mine, torchs in zip(ours, theirs):
        assert_close(mine, torchs, TOLERANCE[np.float64], "running statistics")


def test_norm_state_dicts_move_to_torch_and_back():
    mg.manual_seed(1)
    ours = nn.Sequential(
        nn.Conv2d(2, 4, 3),
        nn.GroupNorm(2, 4),
        nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
    )
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3),
        torch.nn.GroupNorm(2, 4),
        torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
    )
    x = normal(2, 2, 6, 6).astype(np.float32)
    ours(mg.tensor(x))  # a training step moves the running statistics
    theirs.load_state_dict(
        {key: torch.from_numpy(np.array(value.numpy())) for key, value in ours.state_dict().items()}
    )
    ours.eval()
    theirs.eval()
    assert_close(
        ours(mg.tensor(x)),
        theirs(torch.from_numpy(x)),
        TOLERANCE[np.float32],
        "eval output, ours -> torch",
    )
    torch.manual_seed(2)
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3),
        torch.nn.GroupNorm(2, 4),
        torch.nn.InstanceNorm2d(4, affine=True, track_running_stats=True),
    )
    theirs.train()(torch.from_numpy(x))
    ours.load_state_dict({key: value.numpy() for key, value in theirs.state_dict().items()})
    assert_close(
        ours(mg.tensor(x)),
        theirs.eval()(torch.from_numpy(x)),
        TOLERANCE[np.float32],
        "eval output, torch -> ours",
    )


def test_instance_norm_warns_as_torch_when_channels_differ_without_affine():
    with pytest.warns(UserWarning, match="does not match num_features"):
        nn.InstanceNorm1d(4)(mg.tensor(normal(2, 3, 5)))
