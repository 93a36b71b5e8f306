"""The distance functions (minigrad/ops/distance.py: cosine_similarity, pairwise_distance, pdist)
against torch: values and the gradient of every input in float32 and float64 on rows with a zero
vector, equal rows and large values; float64 gradchecks. Their modules (CosineSimilarity,
PairwiseDistance) are in tests/nn/test_distance.py.
"""

import math

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from layer_checks import MINIGRAD, assert_same, distance_inputs
from minigrad.errors import ArgumentError, DimError, DTypeError, ShapeError
from op_checks import check_against_torch, inf, values
from parity import DTYPES

torch = pytest.importorskip("torch")


# name -> (differentiable names, call(library, **tensors)); pdist takes the rows of `a` alone
DISTANCES = {
    "cosine_similarity": (["a", "b"], lambda L, a, b: L.F.cosine_similarity(a, b)),
    "cosine_similarity_broadcast": (
        ["a", "b"],
        lambda L, a, b: L.F.cosine_similarity(a, b[:1], dim=-1),
    ),
    "pairwise_distance": (["a", "b"], lambda L, a, b: L.F.pairwise_distance(a, b)),
    "pairwise_distance_p3": (["a", "b"], lambda L, a, b: L.F.pairwise_distance(a, b, 3.0)),
    "pairwise_distance_inf": (["a", "b"], lambda L, a, b: L.F.pairwise_distance(a, b, math.inf)),
    "pairwise_distance_vectors": (["a", "b"], lambda L, a, b: L.F.pairwise_distance(a[0], b[0])),
    "pdist": (["a"], lambda L, a: L.F.pdist(a)),
    "pdist_p1": (["a"], lambda L, a: L.F.pdist(a, 1.0)),
    "pdist_p_half": (["a"], lambda L, a: L.F.pdist(a * 1 + 0.5, 0.5)),
}


@pytest.mark.parametrize("name", DISTANCES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_distances_match_torch_values_and_gradients(name, dtype):
    differentiable, call = DISTANCES[name]
    arrays = {key: value for key, value in distance_inputs(dtype).items() if key in differentiable}
    assert_same(arrays, differentiable, call, dtype)


@pytest.mark.parametrize("name", DISTANCES)
def test_distances_gradcheck_float64(name):
    # smooth inputs: no two rows equal (the distance of equal rows is eps, too close to its kink
    # for finite differences of step 1e-6)
    differentiable, call = DISTANCES[name]
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((4, 3)) for _ in differentiable]
    assert mg.gradcheck(
        lambda *tensors: call(MINIGRAD, **dict(zip(differentiable, tensors))), arrays
    )


# -- torch.dist and torch.cdist ------------------------------------------------------------


def f32(*shape):
    return mg.ones(*shape)


def f64(*shape):
    return mg.ones(*shape, dtype=mg.float64)


def i64(*shape):
    return mg.ones(*shape, dtype=mg.int64)


DIST_AND_CDIST = [  # name, mg call, torch call, shapes of the operands
    ("dist", mg.dist, torch.dist, [(3, 4), (4,)]),
    ("dist p", lambda a, b: mg.dist(a, b, 3), lambda a, b: torch.dist(a, b, 3), [(3, 4), (3, 4)]),
    ("dist inf", lambda a, b: a.dist(b, inf), lambda a, b: a.dist(b, inf), [(3, 4), (3, 4)]),
    ("dist 1", lambda a, b: mg.dist(a, b, 1), lambda a, b: torch.dist(a, b, 1), [(5,), (5,)]),
    ("cdist", mg.cdist, torch.cdist, [(5, 3), (4, 3)]),
    ("cdist batched", mg.cdist, torch.cdist, [(2, 1, 5, 3), (4, 6, 3)]),
    (
        "cdist p",
        lambda a, b: mg.cdist(a, b, p=1),
        lambda a, b: torch.cdist(a, b, p=1),
        [(5, 3), (4, 3)],
    ),
    (
        "cdist p 3",
        lambda a, b: mg.cdist(a, b, p=3.0),
        lambda a, b: torch.cdist(a, b, p=3.0),
        [(5, 3), (4, 3)],
    ),
    (
        "cdist p 0.5",
        lambda a, b: mg.cdist(a, b, p=0.5),
        lambda a, b: torch.cdist(a, b, p=0.5),
        [(2, 3), (4, 3)],
    ),
    (
        "cdist p inf",
        lambda a, b: mg.cdist(a, b, p=inf),
        lambda a, b: torch.cdist(a, b, p=inf),
        [(5, 3), (4, 3)],
    ),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "name, mg_fn, torch_fn, shapes", DIST_AND_CDIST, ids=[row[0] for row in DIST_AND_CDIST]
)
def test_dist_and_cdist_against_torch(name, mg_fn, torch_fn, shapes, dtype):
    arrays = [values(-2, 2, shape, dtype, seed=k) for k, shape in enumerate(shapes)]
    check_against_torch(mg_fn, torch_fn, arrays, dtype)
    assert mg.gradcheck(
        mg_fn, [values(-2, 2, shape, "float64", seed=k + 7) for k, shape in enumerate(shapes)]
    )


@pytest.mark.parametrize("p", [2, 1, 3])
def test_distances_of_equal_points_have_gradient_0_as_torch(p):
    same = np.array([[1.0, 2.0], [3.0, 4.0]])
    check_against_torch(
        lambda a, b: mg.cdist(a, b, p=p),
        lambda a, b: torch.cdist(a, b, p=p),
        [same, same.copy()],
        "float64",
    )
    check_against_torch(
        lambda a, b: mg.dist(a, b, p),
        lambda a, b: torch.dist(a, b, p),
        [same, same.copy()],
        "float64",
    )


@pytest.mark.xfail(
    strict=True,
    reason="cdist(p=inf) with tied largest differences: torch gives each tie the "
    "whole gradient, minigrad shares it among them (as torch's own dist and norm do)",
)
def test_cdist_inf_ties_as_torch():
    same = np.array([[1.0, 2.0], [3.0, 4.0]])
    check_against_torch(
        lambda a, b: mg.cdist(a, b, p=inf),
        lambda a, b: torch.cdist(a, b, p=inf),
        [same, same.copy()],
        "float64",
    )


BAD_DIST_AND_CDIST = [  # call, exception, message
    (
        lambda: mg.dist(i64(3), i64(3)),
        DTypeError,
        "norm: the input must be a float tensor; got dtype int64",
    ),
    (lambda: mg.dist(f32(2), f32(3)), ShapeError, "cannot be broadcast"),
    (
        lambda: mg.cdist(f32(3), f32(3)),
        ShapeError,
        r"cdist: expects x1 with at least 2 dims .*; got shape \(3,\)",
    ),
    (
        lambda: mg.cdist(f32(5, 3), f32(6, 4)),
        ShapeError,
        r"same number of features .*\(5, 3\) and \(6, 4\)",
    ),
    (
        lambda: mg.cdist(f32(5, 3), f32(6, 3), p=-1),
        ArgumentError,
        "p must be a number >= 0; got -1",
    ),
    (lambda: mg.cdist(i64(5, 3), i64(6, 3)), DTypeError, "x1 of dtype int64"),
    (lambda: mg.cdist(f32(5, 3), f64(6, 3)), DTypeError, "same dtype; got float32 and float64"),
    (lambda: mg.cdist(f32(2, 5, 3), f32(3, 6, 3)), ShapeError, "batch dims of shapes"),
]


@pytest.mark.parametrize(
    "call, error, message",
    BAD_DIST_AND_CDIST,
    ids=[f"bad{k}" for k in range(len(BAD_DIST_AND_CDIST))],
)
def test_bad_dist_and_cdist_inputs_are_named(call, error, message):
    with pytest.raises(error, match=message):
        call()
    # torch raises RuntimeError (TypeError for the types)
    assert issubclass(error, (TypeError, RuntimeError))


BAD_DISTANCES = [  # call, exception, message
    (lambda: F.pdist(mg.ones(3)), ShapeError, "2-D input .* got shape \\(3,\\)"),
    (lambda: F.pdist(mg.ones(3, 2), p=-1), ArgumentError, "p must be >= 0; got -1"),
    (
        lambda: F.cosine_similarity(mg.ones(2, 3), mg.ones(3, 3)),
        ShapeError,
        "\\(2, 3\\) and \\(3, 3\\) cannot be broadcast",
    ),
    (
        lambda: F.cosine_similarity(mg.ones(2, 3), mg.ones(2, 3), dim=2),
        DimError,
        "dim 2 is out of range",
    ),
    (
        lambda: F.pairwise_distance(mg.ones(2, 3), mg.tensor([[1, 2, 3]])),
        DTypeError,
        "x2 of dtype int64",
    ),
]


@pytest.mark.parametrize("index", range(len(BAD_DISTANCES)))
def test_bad_distance_arguments_raise_clearly(index):
    call, error, message = BAD_DISTANCES[index]
    with pytest.raises(error, match=message) as raised:
        call()
    assert isinstance(raised.value, RuntimeError)
