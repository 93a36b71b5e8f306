"""The distance functions (minigrad/ops/distance.py: cosine_similarity, pairwise_distance, pdist)
against torch: values and the gradient of every input in float32 and float64 on rows with a zero
vector, equal rows and large values; float64 gradchecks. Their modules (CosineSimilarity,
PairwiseDistance) are in tests/nn/test_distance.py.
"""

import math

import numpy as np
import pytest

import minigrad as mg
from layer_checks import MINIGRAD, assert_same, distance_inputs
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
