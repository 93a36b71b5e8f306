"""What the tests that run a minigrad module beside its torch twin share."""

import numpy as np

import minigrad as mg


def assert_same_parameter_grads(ours, theirs, rtol, atol):
    """Each parameter of the minigrad module `ours` has the gradient of the torch module's
    parameter of the same name (a name torch's lacks raises KeyError)."""
    torch_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(
            p.grad.numpy(), torch_params[name].grad.numpy(), rtol=rtol, atol=atol, err_msg=name
        )


def assert_layer_matches_torch(ours, theirs, x, tolerance, seed=4):
    """The minigrad layer `ours` and its torch twin `theirs` (holding the same weights) on the array x:
    the outputs, and under one random upstream gradient the input's and every parameter's
    gradients, agree to `tolerance` (relative and absolute)."""
    import torch  # only the callers need torch installed

    leaf, torch_leaf = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, torch_out = ours(leaf), theirs(torch_leaf)
    upstream = np.random.default_rng(seed).standard_normal(tuple(torch_out.shape)).astype(x.dtype)
    (out * mg.tensor(upstream)).sum().backward()
    (torch_out * torch.from_numpy(upstream)).sum().backward()
    np.testing.assert_allclose(
        out.numpy(), torch_out.detach().numpy(), rtol=tolerance, atol=tolerance
    )
    np.testing.assert_allclose(
        leaf.grad.numpy(), torch_leaf.grad.numpy(), rtol=tolerance, atol=tolerance
    )
    assert_same_parameter_grads(ours, theirs, tolerance, tolerance)


def plain(value):
    """A batch (or any nest of tensors, arrays, dicts, lists and tuples) as plain Python and numpy,
    whichever library made it, so a minigrad batch and a torch batch compare with ==."""
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().numpy()
    if isinstance(value, mg.Tensor):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return ("array", str(value.dtype), value.tolist())
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [plain(item) for item in value])
    return value
