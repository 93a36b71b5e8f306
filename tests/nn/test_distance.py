"""The distance modules (nn/distance.py: CosineSimilarity, PairwiseDistance) against torch's:
values and the gradient of both inputs in float32 and float64, float64 gradchecks. The functions
they call are in tests/ops/test_distance.py; both take layer_checks.distance_inputs.
"""

import numpy as np
import pytest

import minigrad as mg
from layer_checks import MINIGRAD, assert_same, distance_inputs
from parity import DTYPES

torch = pytest.importorskip("torch")


# name -> (differentiable names, call(library, **tensors))
DISTANCES = {
    "cosine_similarity_dim_0_eps": (
        ["a", "b"],
        lambda L, a, b: L.nn.CosineSimilarity(0, 1e-3)(a, b),
    ),
    "pairwise_distance_p1_keepdim": (
        ["a", "b"],
        lambda L, a, b: L.nn.PairwiseDistance(1.0, 1e-3, True)(a, b),
    ),
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
