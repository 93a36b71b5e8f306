"""BatchNorm1d and BatchNorm2d (nn/batchnorm.py) against torch's in training and in eval (running
statistics, momentum, affine and not), and bad input refused.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def _torch():
    return pytest.importorskip("torch")


BATCH_NORMS = [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (2, 3, 4, 4))]


BATCH_NORM_SETTINGS = [
    {},
    {"momentum": None},
    {"affine": False},
    {"track_running_stats": False},
    {"momentum": 0.3, "eps": 1e-3},
]


@pytest.mark.parametrize("settings", BATCH_NORM_SETTINGS, ids=lambda s: ",".join(s) or "defaults")
@pytest.mark.parametrize("name, shape", BATCH_NORMS)
def test_batch_norm_matches_torch_in_training_and_in_eval(name, shape, settings):
    """Three training steps (outputs, input and parameter gradients, running statistics and the
    batch count), then eval() with the running statistics."""
    torch = _torch()
    rng = np.random.default_rng(len(shape) + len(settings))
    ours, theirs = (
        getattr(nn, name)(3, **settings, dtype=np.float64),
        getattr(torch.nn, name)(3, **settings, dtype=torch.float64),
    )
    if ours.weight is not None:
        with torch.no_grad():
            for p, q in ((ours.weight, theirs.weight), (ours.bias, theirs.bias)):
                p.numpy()[...] = rng.standard_normal(3)
                q.copy_(torch.from_numpy(p.numpy().copy()))
    assert set(ours.state_dict()) == set(theirs.state_dict())
    for _ in range(3):
        x = rng.standard_normal(shape) * 2 + 1
        mine, reference = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, their_out = ours(mine), theirs(reference)
        grad = rng.standard_normal(shape)
        out.backward(mg.tensor(grad))
        their_out.backward(torch.from_numpy(grad))
        np.testing.assert_allclose(out.numpy(), their_out.detach().numpy(), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(
            mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10, atol=1e-12
        )
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(
            ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-12, atol=1e-14, err_msg=key
        )
    if ours.weight is not None:
        np.testing.assert_allclose(
            ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10, atol=1e-12
        )
        np.testing.assert_allclose(
            ours.bias.grad.numpy(), theirs.bias.grad.numpy(), rtol=1e-10, atol=1e-12
        )
    ours.eval()
    theirs.eval()
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(
        ours(mg.tensor(x)).numpy(),
        theirs(torch.from_numpy(x)).detach().numpy(),
        rtol=1e-12,
        atol=1e-13,
    )


def test_batch_norm_refuses_bad_input():
    with pytest.raises(
        ValueError, match=r"2 or 3 dims and num_features=3 channels in dim 1; got \(4, 2\)"
    ):
        nn.BatchNorm1d(3)(mg.ones(4, 2))
    with pytest.raises(ValueError, match="4 dims"):
        nn.BatchNorm2d(3)(mg.ones(4, 3))
    with pytest.raises(ValueError, match="more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(mg.ones(1, 3))
    with pytest.raises(ValueError, match="momentum must be in"):
        nn.BatchNorm1d(3, momentum=2.0)
    with pytest.raises(ValueError, match="num_features must be an integer >= 1"):
        nn.BatchNorm2d(0)
    assert nn.BatchNorm1d(3).eval()(mg.ones(1, 3)).shape == (1, 3)  # one sample is fine in eval
