"""SGD, Adam and clip_grad_norm_ against torch.optim; state dicts; errors; an MLP that learns."""

import numpy as np
import pytest

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
import minigrad.optim  # noqa: F401  (mg.optim)
from minigrad import nn

TOLERANCE = {np.float64: 1e-5, np.float32: 1e-4}
SHAPES = [(3, 4), (4,), ()]


def _torch():
    return pytest.importorskip("torch")


def _trajectory(dtype, steps=5):
    """Starting values and per-step gradients; parameter 1 has no gradient at step 2 (skipped)."""
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    grads = [[rng.standard_normal(shape).astype(dtype) for shape in SHAPES] for _ in range(steps)]
    grads[2][1] = None
    return start, grads


def _run_minigrad(make_optimizer, start, grads):
    params = [nn.Parameter(np.array(value)) for value in start]
    optimizer = make_optimizer(params)
    history = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else mg.tensor(g)
        optimizer.step()
        history.append([p.data.copy() for p in params])
    return history


def _run_torch(torch, make_optimizer, start, grads):
    params = [torch.tensor(value, requires_grad=True) for value in start]
    optimizer = make_optimizer(params)
    history = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else torch.tensor(g)
        optimizer.step()
        history.append([p.detach().numpy().copy() for p in params])
    return history


def _assert_same_history(ours, theirs, dtype):
    tol = TOLERANCE[dtype]
    for step, (a, b) in enumerate(zip(ours, theirs)):
        for index, (x, y) in enumerate(zip(a, b)):
            assert x.dtype == dtype
            np.testing.assert_allclose(x, y, rtol=tol, atol=tol, err_msg=f"step {step}, parameter {index}")


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("settings", [dict(lr=0.1), dict(lr=0.05, momentum=0.9, weight_decay=0.01)])
def test_sgd_matches_torch(dtype, settings):
    torch = _torch()
    start, grads = _trajectory(dtype)
    ours = _run_minigrad(lambda p: mg.optim.SGD(p, **settings), start, grads)
    theirs = _run_torch(torch, lambda p: torch.optim.SGD(p, **settings), start, grads)
    _assert_same_history(ours, theirs, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("settings", [dict(lr=0.01), dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)])
def test_adam_matches_torch(dtype, settings):
    torch = _torch()
    start, grads = _trajectory(dtype, steps=6)
    ours = _run_minigrad(lambda p: mg.optim.Adam(p, **settings), start, grads)
    theirs = _run_torch(torch, lambda p: torch.optim.Adam(p, **settings), start, grads)
    _assert_same_history(ours, theirs, dtype)


def test_sgd_momentum_first_step_uses_the_gradient_itself():
    p = nn.Parameter(np.array([1.0, 2.0]))
    optimizer = mg.optim.SGD([p], lr=0.5, momentum=0.9)
    p.grad = mg.tensor(np.array([1.0, -2.0]))
    optimizer.step()  # buf = g = [1, -2]; p = [1, 2] - 0.5 * buf
    np.testing.assert_allclose(p.data, [0.5, 3.0])
    optimizer.step()  # buf = 0.9 * [1, -2] + [1, -2] = [1.9, -3.8]; p -= 0.5 * buf
    np.testing.assert_allclose(p.data, [-0.45, 4.9])


def test_zero_grad_sets_none_and_step_skips_missing_grads():
    a, b = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(2))
    optimizer = mg.optim.Adam([a, b], lr=0.1)
    a.grad = mg.tensor(np.ones(2))
    optimizer.step()
    np.testing.assert_array_equal(b.data, [1.0, 1.0])
    assert 1 not in optimizer.state
    np.testing.assert_allclose(a.data, [0.9, 0.9])  # Adam's first step moves by lr * sign(grad)
    optimizer.zero_grad()
    assert a.grad is None and b.grad is None


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(dtype, max_norm):
    torch = _torch()
    rng = np.random.default_rng(3)
    grads = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    ours = [nn.Parameter(np.zeros(shape, dtype)) for shape in SHAPES] + [nn.Parameter(np.zeros(2, dtype))]
    theirs = [torch.zeros(shape, dtype=getattr(torch, np.dtype(dtype).name), requires_grad=True) for shape in SHAPES]
    for p, q, g in zip(ours, theirs, grads):
        p.grad, q.grad = mg.tensor(g), torch.tensor(g)
    total = mg.optim.clip_grad_norm_(iter(ours), max_norm)  # the last parameter has no grad
    total_torch = torch.nn.utils.clip_grad_norm_(theirs, max_norm)
    assert isinstance(total, float)
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(total, total_torch.item(), rtol=tol)
    np.testing.assert_allclose(total, np.sqrt(sum((g.astype(np.float64) ** 2).sum() for g in grads)), rtol=1e-6)
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.grad.data, q.grad.numpy(), rtol=tol, atol=tol)
    assert nn.utils.clip_grad_norm_ is mg.optim.clip_grad_norm_


def test_clip_grad_norm_by_hand():
    p = nn.Parameter(np.zeros(2))
    p.grad = mg.tensor(np.array([3.0, 4.0]))
    assert nn.utils.clip_grad_norm_(p, 1.0) == 5.0
    np.testing.assert_allclose(p.grad.data, [0.6, 0.8], rtol=1e-6)
    assert nn.utils.clip_grad_norm_([nn.Parameter(np.zeros(2))], 1.0) == 0.0  # no grads at all


def test_adam_state_dict_round_trip_through_a_file(tmp_path):
    start, grads = _trajectory(np.float32, steps=5)
    params = [nn.Parameter(np.array(v)) for v in start]
    optimizer = mg.optim.Adam(params, lr=0.05, betas=(0.8, 0.9))
    for step_grads in grads[:3]:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else mg.tensor(g)
        optimizer.step()
    mg.io.save(optimizer.state_dict(), tmp_path / "adam.npz")
    copies = [nn.Parameter(p.data.copy()) for p in params]
    restored = mg.optim.Adam(copies, lr=1.0)
    restored.load_state_dict(mg.io.load(tmp_path / "adam.npz"))
    assert restored.lr == 0.05 and restored.betas == (0.8, 0.9) and restored.state[0]["step"] == 3
    assert restored.state[1]["step"] == 2  # parameter 1 had no gradient at step 2
    for step_grads in grads[3:]:
        for group in (params, copies):
            for p, g in zip(group, step_grads):
                p.grad = mg.tensor(g)
        optimizer.step()
        restored.step()
    for p, q in zip(params, copies):
        np.testing.assert_array_equal(p.data, q.data)


def test_sgd_state_dict_holds_the_momentum_buffer():
    p = nn.Parameter(np.array([1.0, 2.0]))
    optimizer = mg.optim.SGD([p], lr=0.1, momentum=0.5)
    p.grad = mg.tensor(np.array([2.0, 2.0]))
    optimizer.step()
    state = optimizer.state_dict()
    assert list(state) == ["lr", "momentum", "weight_decay", "state.0.momentum_buffer"]
    np.testing.assert_array_equal(state["state.0.momentum_buffer"], [2.0, 2.0])
    with pytest.raises(ValueError, match=r"expected shape \(2,\), got \(3,\)"):
        optimizer.load_state_dict({**state, "state.0.momentum_buffer": np.zeros(3)})
    with pytest.raises(ValueError, match="missing key 'betas'.*unexpected key 'momentum'"):
        mg.optim.Adam([p]).load_state_dict(state)


def test_optimizer_argument_errors():
    p = nn.Parameter(np.zeros(2))
    with pytest.raises(ValueError, match="empty parameter list"):
        mg.optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        mg.optim.Adam(nn.Linear(2, 2, bias=False).bias for _ in range(0))
    mg.optim.SGD([p], lr=0)  # allowed, as in torch
    with pytest.raises(ValueError, match=r"lr must be in \[0, inf\); got -0.1"):
        mg.optim.Adam([p], lr=-0.1)
    with pytest.raises(TypeError, match="lr must be a number; got '0.1'"):
        mg.optim.SGD([p], lr="0.1")
    with pytest.raises(ValueError, match=r"betas\[1\] must be in \[0, 1\); got 1.0"):
        mg.optim.Adam([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="momentum"):
        mg.optim.SGD([p], lr=0.1, momentum=-1)
    with pytest.raises(TypeError, match="parameter 1 is a ndarray"):
        mg.optim.SGD([p, np.zeros(2)], lr=0.1)
    with pytest.raises(ValueError, match="more than once"):
        mg.optim.SGD([p, p], lr=0.1)
    with pytest.raises(ValueError, match="requires_grad"):
        mg.optim.SGD([mg.zeros(2)], lr=0.1)


def test_two_layer_mlp_learns_quadrants_with_adam():
    mg.manual_seed(0)
    rng = np.random.default_rng(0)
    points = rng.uniform(-1, 1, size=(400, 2)).astype(np.float32)
    labels = (points[:, 0] * points[:, 1] > 0).astype(np.int64)  # XOR of the signs: not linearly separable
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 2))
    optimizer = mg.optim.Adam(model.parameters(), lr=0.05)
    x = mg.tensor(points)
    for _ in range(300):
        optimizer.zero_grad()
        loss = mg.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
    with mg.no_grad():
        accuracy = (model(x).data.argmax(axis=1) == labels).mean()
    assert accuracy > 0.95, f"accuracy {accuracy:.3f}, final loss {loss.item():.4f}"
