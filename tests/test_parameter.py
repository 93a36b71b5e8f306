"""minigrad/parameter.py: Parameter shares a tensor's array, its version counter and, for a
tensor made inside inference_mode, its being an inference tensor, so that torch's refusal of
`Parameter(inference_tensor)` outside inference mode holds here too."""

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("lib", [torch, mg], ids=["torch", "minigrad"])
def test_a_parameter_of_an_inference_tensor_is_refused_outside_inference_mode(lib):
    with lib.inference_mode():
        made_inside = lib.ones(3)
    with pytest.raises(RuntimeError, match="inference"):
        lib.nn.Parameter(made_inside)
    with lib.inference_mode():  # inside it torch allows it, and the parameter is one too
        assert lib.nn.Parameter(made_inside).is_inference()
    assert lib.nn.Parameter(made_inside.clone()).requires_grad  # a clone made outside is fine


def test_a_parameter_shares_the_tensors_array_and_version():
    tensor = mg.tensor(np.arange(3.0))
    parameter = mg.Parameter(tensor)
    assert parameter.numpy() is tensor.numpy()
    tensor.add_(1)
    assert parameter._version is tensor._version and parameter._version[0] == 1
    np.testing.assert_array_equal(parameter.detach().numpy(), [1.0, 2.0, 3.0])
