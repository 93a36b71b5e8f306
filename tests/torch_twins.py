"""What the tests that run a minigrad module beside its torch twin share."""

import numpy as np


def assert_same_parameter_grads(ours, theirs, rtol, atol):
    """Each parameter of the minigrad module `ours` has the gradient of the torch module's
    parameter of the same name (a name torch's lacks raises KeyError)."""
    torch_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), torch_params[name].grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=name)
