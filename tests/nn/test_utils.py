"""nn.utils (nn/utils/__init__.py): parameters_to_vector and vector_to_parameters against torch, and
a wrong vector refused before anything changes.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def test_parameters_to_vector_and_back_match_torch():
    torch = pytest.importorskip("torch")
    ours = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2, bias=False))
    theirs = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 2, bias=False)
    )
    theirs.load_state_dict(
        {key: torch.from_numpy(value.numpy().copy()) for key, value in ours.state_dict().items()}
    )
    vector, torch_vector = (
        nn.utils.parameters_to_vector(ours.parameters()),
        torch.nn.utils.parameters_to_vector(theirs.parameters()),
    )
    np.testing.assert_array_equal(vector.numpy(), torch_vector.detach().numpy())
    weights = np.random.default_rng(0).standard_normal(vector.shape[0]).astype(np.float32)
    (vector * mg.tensor(weights)).sum().backward()  # the vector is a graph result
    (torch_vector * torch.from_numpy(weights)).sum().backward()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    nn.utils.vector_to_parameters(mg.tensor(weights), ours.parameters())
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(torch.from_numpy(weights.copy()), theirs.parameters())
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(
        ours(mg.tensor(x)).numpy(), theirs(torch.from_numpy(x)).detach().numpy(), atol=1e-6
    )


def test_vector_to_parameters_refuses_a_wrong_vector_before_changing_anything():
    layer = nn.Linear(3, 2)
    before = nn.utils.parameters_to_vector(layer.parameters()).numpy().copy()
    with pytest.raises(
        ValueError,
        match=r"vec must be 1-D with 8 numbers \(the parameters' count\); got shape \(7,\)",
    ):
        nn.utils.vector_to_parameters(mg.zeros(7), layer.parameters())
    with pytest.raises(ValueError, match="got shape \\(2, 4\\)"):
        nn.utils.vector_to_parameters(mg.zeros(2, 4), layer.parameters())
    with pytest.raises(TypeError, match="vec must be a Tensor; got ndarray"):
        nn.utils.vector_to_parameters(np.zeros(8), layer.parameters())
    with pytest.raises(TypeError, match="parameter 1 must be a Tensor; got ndarray"):
        nn.utils.parameters_to_vector([layer.weight, np.zeros(2)])
    with pytest.raises(ValueError, match="got no parameters"):
        nn.utils.parameters_to_vector([])
    np.testing.assert_array_equal(nn.utils.parameters_to_vector(layer.parameters()).numpy(), before)
