"""The optimizers' base (minigrad/optim/optimizer.py, checks.py) through SGD, Adam and AdamW
(sgd.py, adam.py) against torch.optim, step by step; state dicts (saved with mg.save, checked on
load against what the constructor accepts); errors; frozen, strided, shared and read-only
parameters. Clipping is in test_clip_grad.py, the schedules in test_lr_scheduler.py."""

import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
import minigrad.optim  # noqa: F401  (mg.optim)
from minigrad import nn
from optim_checks import flat_state_dict, torch_or_skip, trajectory
from parity import assert_same_steps, tolerance


def _run_minigrad(make_optimizer, start, grads):
    params = [nn.Parameter(np.array(value)) for value in start]
    optimizer = make_optimizer(params)
    history = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else mg.tensor(g)
        optimizer.step()
        history.append([p.numpy().copy() for p in params])
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


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "settings",
    [
        dict(lr=0.1),
        dict(lr=0.05, momentum=0.9, weight_decay=0.01),
        dict(),
        dict(lr=0.1, momentum=0.9, nesterov=True),
        dict(lr=0.1, momentum=0.9, dampening=0.3),
        dict(lr=0.1, momentum=0.5, dampening=-0.5, weight_decay=0.1),
        dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.1, maximize=True),
        dict(lr=0.1, maximize=True),
    ],
)
def test_sgd_matches_torch(dtype, settings):
    torch = torch_or_skip()
    start, grads = trajectory(dtype)
    ours = _run_minigrad(lambda p: mg.optim.SGD(p, **settings), start, grads)
    theirs = _run_torch(torch, lambda p: torch.optim.SGD(p, **settings), start, grads)
    assert_same_steps(ours, theirs, tolerance("optimizer steps", dtype), dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "settings",
    [
        dict(lr=0.01),
        dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
        dict(lr=0.01, weight_decay=0.1, maximize=True),
        dict(lr=0.02, amsgrad=True),
        dict(lr=0.02, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True, maximize=True),
    ],
)
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_and_adamw_match_torch(name, dtype, settings):
    """AdamW without weight_decay in `settings` uses its default, 0.01 in both libraries."""
    torch = torch_or_skip()
    start, grads = trajectory(dtype, steps=6)
    ours = _run_minigrad(lambda p: getattr(mg.optim, name)(p, **settings), start, grads)
    theirs = _run_torch(torch, lambda p: getattr(torch.optim, name)(p, **settings), start, grads)
    assert_same_steps(ours, theirs, tolerance("optimizer steps", dtype), dtype)


def test_adamw_decay_is_decoupled_from_the_gradient_scale():
    """With a zero gradient Adam's moments stay 0 and the step is 0: AdamW only shrinks the
    weights by lr * weight_decay; Adam's L2 term goes through the moments instead."""
    start = np.array([2.0, -4.0])
    decoupled, coupled = nn.Parameter(start), nn.Parameter(start)
    adamw = mg.optim.AdamW([decoupled], lr=0.1, weight_decay=0.5)
    adam = mg.optim.Adam([coupled], lr=0.1, weight_decay=0.5)
    for p in (decoupled, coupled):
        p.grad = mg.tensor(np.zeros(2))
    adamw.step()
    adam.step()
    np.testing.assert_allclose(decoupled.numpy(), start * (1 - 0.1 * 0.5), rtol=1e-15)
    # first step: lr * sign, up to eps
    np.testing.assert_allclose(coupled.numpy(), start - 0.1 * np.sign(start), rtol=1e-8)
    assert mg.optim.AdamW([decoupled]).weight_decay == 0.01


def test_sgd_momentum_first_step_uses_the_gradient_itself():
    p = nn.Parameter(np.array([1.0, 2.0]))
    optimizer = mg.optim.SGD([p], lr=0.5, momentum=0.9)
    p.grad = mg.tensor(np.array([1.0, -2.0]))
    optimizer.step()  # buf = g = [1, -2]; p = [1, 2] - 0.5 * buf
    np.testing.assert_allclose(p.numpy(), [0.5, 3.0])
    optimizer.step()  # buf = 0.9 * [1, -2] + [1, -2] = [1.9, -3.8]; p -= 0.5 * buf
    np.testing.assert_allclose(p.numpy(), [-0.45, 4.9])


def test_zero_grad_sets_none_and_step_skips_missing_grads():
    a, b = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(2))
    optimizer = mg.optim.Adam([a, b], lr=0.1)
    a.grad = mg.tensor(np.ones(2))
    optimizer.step()
    np.testing.assert_array_equal(b.numpy(), [1.0, 1.0])
    assert 1 not in optimizer.state
    np.testing.assert_allclose(a.numpy(), [0.9, 0.9])  # Adam's first step moves by lr * sign(grad)
    optimizer.zero_grad()
    assert a.grad is None and b.grad is None


def test_adam_state_dict_round_trip_through_a_file(tmp_path):
    start, grads = trajectory(np.float32, steps=5)
    params = [nn.Parameter(np.array(v)) for v in start]
    optimizer = mg.optim.Adam(params, lr=0.05, betas=(0.8, 0.9))
    for step_grads in grads[:3]:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else mg.tensor(g)
        optimizer.step()
    mg.io.save(optimizer.state_dict(), tmp_path / "adam.npz")
    copies = [nn.Parameter(p.numpy().copy()) for p in params]
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
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_sgd_state_dict_holds_the_momentum_buffer():
    p = nn.Parameter(np.array([1.0, 2.0]))
    optimizer = mg.optim.SGD([p], lr=0.1, momentum=0.5)
    p.grad = mg.tensor(np.array([2.0, 2.0]))
    optimizer.step()
    torch = torch_or_skip()
    saved = optimizer.state_dict()
    reference = torch.nn.Parameter(torch.tensor([1.0, 2.0], dtype=torch.float64))
    theirs = torch.optim.SGD([reference], lr=0.1, momentum=0.5)
    reference.grad = torch.tensor([2.0, 2.0], dtype=torch.float64)
    theirs.step()
    theirs = theirs.state_dict()  # torch's layout: state by index, then the groups
    assert list(saved) == list(theirs) == ["state", "param_groups"]
    assert list(saved["state"]) == list(theirs["state"]) == [0]
    assert list(saved["state"][0]) == list(theirs["state"][0]) == ["momentum_buffer"]
    np.testing.assert_array_equal(saved["state"][0]["momentum_buffer"], [2.0, 2.0])
    (group,), (their_group,) = saved["param_groups"], theirs["param_groups"]
    assert group == {key: their_group[key] for key in group}  # torch has more flags (foreach ...)
    state = flat_state_dict(optimizer)  # the names load_state_dict reports entries by
    np.testing.assert_array_equal(state["state.0.momentum_buffer"], [2.0, 2.0])
    with pytest.raises(
        ValueError, match=r"state.0.momentum_buffer.*shape \(2,\).*got float64 of shape \(3,\)"
    ):
        optimizer.load_state_dict({**state, "state.0.momentum_buffer": np.zeros(3)})
    with pytest.raises(ValueError, match="missing key 'betas'.*unexpected key 'momentum'"):
        mg.optim.Adam([p]).load_state_dict(state)


def test_sgd_nesterov_needs_momentum_and_no_dampening_as_in_torch():
    p = nn.Parameter(np.zeros(2))
    for settings in (dict(nesterov=True), dict(momentum=0.9, dampening=0.1, nesterov=True)):
        with pytest.raises(
            ValueError, match="Nesterov momentum needs momentum > 0 and dampening 0"
        ):
            mg.optim.SGD([p], lr=0.1, **settings)
    optimizer = mg.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True)
    with pytest.raises(ValueError, match="Nesterov"):
        optimizer.add_param_group({"params": [nn.Parameter(np.zeros(1))], "momentum": 0.0})
    with pytest.raises(TypeError, match="nesterov must be True or False; got 1"):
        mg.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=1)
    with pytest.raises(ValueError, match="dampening must be finite; got nan"):
        mg.optim.SGD([p], lr=0.1, dampening=float("nan"))
    with pytest.raises(TypeError, match="maximize must be True or False"):
        mg.optim.Adam([p], maximize="yes")


def test_amsgrad_state_is_saved_and_loaded_and_older_state_dicts_still_load(tmp_path):
    """max_exp_avg_sq is in the state only with amsgrad; a state dict saved without amsgrad (or
    before it existed) loads into an amsgrad optimizer, which then starts its maximum afresh."""
    torch = torch_or_skip()
    start, grads = trajectory(np.float64, steps=6)
    params = [nn.Parameter(np.array(value)) for value in start]
    optimizer = mg.optim.Adam(params, lr=0.02, amsgrad=True)
    for step_grads in grads[:3]:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else mg.tensor(g)
        optimizer.step()
    assert "max_exp_avg_sq" in optimizer.state[0] and optimizer.param_groups[0]["amsgrad"] is True
    mg.io.save(optimizer.state_dict(), tmp_path / "adam.npz")
    resumed = mg.optim.Adam([nn.Parameter(p.numpy().copy()) for p in params], lr=0.5)
    resumed.load_state_dict(mg.io.load(tmp_path / "adam.npz"))
    assert resumed.param_groups[0]["amsgrad"] is True and resumed.lr == 0.02
    reference = [torch.tensor(value, requires_grad=True) for value in start]
    torch_optimizer = torch.optim.Adam(reference, lr=0.02, amsgrad=True)
    for step_grads in grads:
        for p, g in zip(reference, step_grads):
            p.grad = None if g is None else torch.tensor(g)
        torch_optimizer.step()
    for step_grads in grads[3:]:
        for p, g in zip(resumed.params, step_grads):
            p.grad = None if g is None else mg.tensor(g)
        resumed.step()
    for mine, theirs in zip(resumed.params, reference):
        np.testing.assert_allclose(mine.numpy(), theirs.detach().numpy(), rtol=1e-12, atol=1e-14)
    plain = mg.optim.Adam(params, lr=0.02)
    plain.load_state_dict(
        {
            key: value
            for key, value in flat_state_dict(optimizer).items()
            if "max_exp_avg_sq" not in key and key != "amsgrad"
        }
    )
    assert "max_exp_avg_sq" not in plain.state[0] and plain.param_groups[0]["amsgrad"] is False


def test_torchs_device_flags_are_accepted_and_the_unsupported_ones_refused():
    """nanoGPT-style `AdamW(groups, lr, betas, fused=True)` runs; differentiable=True says it is
    not supported instead of a TypeError about an unknown argument."""
    p = nn.Parameter(np.ones(2))
    for name in ("Adam", "AdamW"):
        optimizer = getattr(mg.optim, name)(
            [p], lr=0.1, betas=(0.9, 0.95), foreach=False, fused=True, capturable=True
        )
        assert "fused" not in optimizer.param_groups[0]
        with pytest.raises(ValueError, match="differentiable=True .* is not supported"):
            getattr(mg.optim, name)([p], differentiable=True)
    mg.optim.SGD([p], lr=0.1, foreach=True, fused=False)
    with pytest.raises(ValueError, match="SGD: differentiable=True"):
        mg.optim.SGD([p], lr=0.1, differentiable=True)


def test_state_dicts_from_before_nesterov_dampening_and_maximize_still_load(tmp_path):
    """Settings added later are optional on load (they keep the optimizer's own value), as torch
    fills in the settings an older checkpoint lacks."""
    p = nn.Parameter(np.array([1.0, -1.0]))
    old = {
        "lr": 0.5,
        "momentum": 0.9,
        "weight_decay": 0.0,
        "state.0.momentum_buffer": np.array([1.0, 2.0]),
    }
    optimizer = mg.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True)
    optimizer.load_state_dict(old)
    assert optimizer.lr == 0.5 and optimizer.param_groups[0]["nesterov"] is True
    path = str(tmp_path / "sgd.npz")
    mg.io.save(optimizer.state_dict(), path)
    again = mg.optim.SGD([p], lr=0.1, momentum=0.9)
    again.load_state_dict(mg.io.load(path))
    assert again.param_groups[0]["nesterov"] is True and again.param_groups[0]["maximize"] is False
    adam = mg.optim.Adam([p])
    adam.load_state_dict(
        {"lr": 0.01, "betas": np.array([0.9, 0.999]), "eps": 1e-8, "weight_decay": 0.0}
    )
    assert adam.lr == 0.01 and adam.param_groups[0]["maximize"] is False


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
    leaf = mg.zeros(2, requires_grad=True)
    with pytest.raises(
        ValueError,
        match=r"parameter 0 \(shape \(2,\)\) must be a leaf tensor .*not the result of an op",
    ):
        mg.optim.SGD([leaf * 2], lr=0.1)


def test_frozen_parameters_are_accepted_and_skipped_as_in_torch():
    torch = torch_or_skip()
    frozen, trained = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(3))
    frozen.requires_grad_(False)
    optimizer = mg.optim.AdamW([frozen, trained], lr=0.1)
    reference = torch.optim.AdamW(
        [torch.ones(2), torch.ones(3, dtype=torch.float64, requires_grad=True)], lr=0.1
    )
    trained.grad = mg.tensor(np.full(3, 0.5))
    reference.param_groups[0]["params"][1].grad = torch.full((3,), 0.5, dtype=torch.float64)
    optimizer.step()
    reference.step()
    np.testing.assert_array_equal(frozen.numpy(), np.ones(2))
    np.testing.assert_allclose(
        trained.numpy(), reference.param_groups[0]["params"][1].detach().numpy(), rtol=1e-12
    )
    frozen.requires_grad_(True)  # unfrozen later: stepped from then on
    frozen.grad = mg.tensor(np.full(2, 1.0))
    optimizer.step()
    assert (frozen.numpy() < 1).all()


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
@pytest.mark.parametrize("layout", ["transposed view", "fortran copy"])
def test_parameters_that_are_not_c_contiguous_match_torch_in_their_own_memory(name, layout):
    torch = torch_or_skip()
    rng = np.random.default_rng(4)
    start = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((3, 4)) for _ in range(4)]
    base = start.copy()
    p = nn.Parameter(np.zeros((3, 4)))
    p.data = base.T if layout == "transposed view" else np.asfortranarray(start.T)
    array = p.numpy()
    assert not array.flags.c_contiguous
    settings = dict(lr=0.05, weight_decay=0.1) if name != "SGD" else dict(lr=0.05, momentum=0.9)
    optimizer = getattr(mg.optim, name)([p], **settings)
    q = torch.nn.Parameter(torch.tensor(start).t())  # torch's own non-contiguous parameter
    reference = getattr(torch.optim, name)([q], **settings)
    for g in grads:
        p.grad, q.grad = mg.tensor(g), torch.tensor(g)
        optimizer.step()
        reference.step()
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert p.numpy() is array  # updated where it lives: views and state dicts see the new values
    if layout == "transposed view":
        np.testing.assert_array_equal(base, p.numpy().T)


def _parameter_over(array):
    """A parameter whose .data is `array` itself (not a copy), as from_numpy or .data = give."""
    p = nn.Parameter(np.zeros(array.shape))
    p.data = array
    return p


def test_parameters_that_share_memory_are_refused_naming_both():
    matrix = np.arange(12.0).reshape(3, 4)
    whole, other, row = (
        _parameter_over(matrix),
        nn.Parameter(np.zeros(2)),
        _parameter_over(matrix[1]),
    )
    with pytest.raises(
        ValueError, match=r"parameters 0 \(shape \(3, 4\)\) and 2 \(shape \(4,\)\) share memory"
    ):
        mg.optim.Adam([whole, other, row])
    with pytest.raises(
        ValueError, match=r"parameters 0 \(shape \(3, 4\)\) and 1 \(shape \(4, 3\)\) share memory"
    ):
        mg.optim.SGD([whole, _parameter_over(matrix.T)], lr=0.1)
    twins = [mg.from_numpy(matrix).requires_grad_(True) for _ in range(2)]  # two tensors, one array
    with pytest.raises(ValueError, match="share memory"):
        mg.optim.AdamW(twins)
    every_other = _parameter_over(matrix.ravel()[::2])
    with pytest.raises(ValueError, match="share memory"):
        mg.optim.SGD([_parameter_over(matrix.ravel()[1:3]), every_other], lr=0.1)  # 2 overlaps
    # pieces of one array that do not overlap are separate parameters
    mg.optim.Adam([_parameter_over(matrix[0]), _parameter_over(matrix[1])])
    mg.optim.Adam([every_other, _parameter_over(matrix.ravel()[1::2])])


def test_read_only_parameters_are_refused():
    p = _parameter_over(np.broadcast_to(np.zeros(1), (3,)))
    with pytest.raises(ValueError, match=r"parameter 0 \(shape \(3,\)\) holds a read-only array"):
        mg.optim.SGD([p], lr=0.1)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_a_step_tells_each_updated_parameter_it_changed_in_place(name, monkeypatch):
    bumped = []
    monkeypatch.setattr(
        nn.Parameter, "_bump_version", lambda self: bumped.append(self), raising=False
    )
    a, b = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(3))
    optimizer = getattr(mg.optim, name)([a, b], lr=0.1)
    a.grad = mg.tensor(np.ones(2))
    optimizer.step()
    assert bumped == [a]  # b has no gradient: untouched


def test_adam_refuses_a_gradient_of_another_shape_before_changing_anything():
    p = nn.Parameter(np.ones(3))
    optimizer = mg.optim.AdamW([p], lr=0.1)
    p.grad = mg.tensor(np.ones(4))
    with pytest.raises(
        ValueError, match=r"parameter 0 has shape \(3,\) but its grad has shape \(4,\)"
    ):
        optimizer.step()
    np.testing.assert_array_equal(p.numpy(), np.ones(3))
    assert optimizer.state == {}


# -- load_state_dict checks what the constructor checks -------------------------------------


def _stepped_adam(steps=2):
    params = [nn.Parameter(np.ones((3, 4))), nn.Parameter(np.ones(2))]
    optimizer = mg.optim.Adam(params, lr=0.01, weight_decay=0.1)
    for _ in range(steps):
        for p in params:
            p.grad = mg.tensor(np.full(p.shape, 0.5))
        optimizer.step()
    return optimizer


def _nan_at_one(value):
    value = np.array(value)
    value.flat[5] = np.nan
    return value


BAD_ENTRIES = [
    ("lr", -0.5, r"lr must be in \[0, inf\); got -0.5"),
    ("lr", np.array(np.nan), r"lr must be in \[0, inf\); got nan"),
    ("lr", np.array(True), "lr must be a number"),
    ("betas", np.array([0.9, 1.0]), r"betas\[1\] must be in \[0, 1\); got 1.0"),
    ("betas", np.array([-0.1, 0.9]), r"betas\[0\] must be in \[0, inf\); got -0.1"),
    ("betas", np.array([0.9, 0.99, 0.5]), r"betas must be a pair \(beta1, beta2\)"),
    ("eps", np.array(-1e-8), "eps must be in"),
    ("weight_decay", np.array(np.inf), "weight_decay must be in"),
    ("state.0.step", np.array(0), "state.0.step must be an integer >= 1; got 0"),
    ("state.0.step", np.array(2.5), "state.0.step must be an integer >= 1; got array.2.5"),
    ("state.1.step", np.array([1, 2]), "state.1.step must be an integer >= 1"),
    (
        "state.0.exp_avg_sq",
        lambda v: v - 1.0,
        r"state.0.exp_avg_sq holds averages of squared gradients, "
        r"which are >= 0; got -0.9\d+ at index \(0, 0\)",
    ),
    ("state.0.exp_avg_sq", _nan_at_one, r"state.0.exp_avg_sq .* >= 0; got nan at index \(1, 1\)"),
    (
        "state.0.exp_avg",
        np.zeros(5),
        r"state.0.exp_avg must be a float array of shape \(3, 4\) .*got float64 of shape \(5,\)",
    ),
    (
        "state.1.exp_avg",
        np.zeros(2, np.int64),
        r"state.1.exp_avg must be a float array .*got int64",
    ),
    ("state.7.step", np.array(1), "state.7.step: parameter index 7 out of range for 2 parameters"),
    ("state.0.velocity", np.zeros(3), "unexpected key 'state.0.velocity'"),
]


@pytest.mark.parametrize(
    "key, bad, message",
    BAD_ENTRIES,
    ids=[f"{key}-{i}" for i, (key, _, _) in enumerate(BAD_ENTRIES)],
)
def test_load_state_dict_names_the_wrong_entry_and_changes_nothing(tmp_path, key, bad, message):
    saved = flat_state_dict(_stepped_adam())
    saved[key] = bad(saved[key]) if callable(bad) else bad
    mg.io.save(saved, tmp_path / "adam.npz")
    target = _stepped_adam(steps=1)
    before = flat_state_dict(target)
    with pytest.raises(ValueError, match=message):
        target.load_state_dict(mg.io.load(tmp_path / "adam.npz"))
    after = flat_state_dict(target)
    assert list(after) == list(before)
    for name in before:
        np.testing.assert_array_equal(after[name], before[name])


def test_load_state_dict_wants_all_of_a_parameters_state_and_lists_every_problem():
    saved = flat_state_dict(_stepped_adam())
    del saved["state.1.exp_avg"]
    saved["lr"] = -1.0
    with pytest.raises(ValueError, match=r"lr must be .* got -1.0; state.1: missing exp_avg"):
        _stepped_adam().load_state_dict(saved)


HYPER_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-3, 3), st.booleans()
)


@settings(max_examples=150, deadline=None)
@given(key=st.sampled_from(["lr", "eps", "weight_decay", "beta1", "beta2"]), value=HYPER_VALUES)
def test_load_state_dict_accepts_exactly_what_the_constructor_accepts(key, value):
    p = nn.Parameter(np.ones(2))
    chosen = {"lr": 0.01, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0}
    if key.startswith("beta"):
        assume(not isinstance(value, bool))  # a saved pair is a float array: a bool cannot be in it
        betas = list(chosen["betas"])
        betas[int(key[-1]) - 1] = value
        chosen["betas"] = tuple(betas)
    else:
        chosen[key] = value
    try:
        mg.optim.Adam([p], **chosen)
        constructor_error = None
    except (TypeError, ValueError) as error:
        constructor_error = error
    state = flat_state_dict(mg.optim.Adam([p]))
    for name, setting in chosen.items():
        state[name] = np.asarray(setting)  # as mg.load gives it back
    optimizer = mg.optim.Adam([p])
    if constructor_error is None:
        optimizer.load_state_dict(state)
        assert optimizer.betas == tuple(float(b) for b in chosen["betas"])
        assert all(
            getattr(optimizer, name) == float(chosen[name])
            for name in ("lr", "eps", "weight_decay")
        )
    else:
        # "lr", "betas[1]", ...: the message names it
        entry = str(constructor_error).split(" must ")[0]
        with pytest.raises(ValueError, match=re.escape(f"load_state_dict failed: {entry} must ")):
            optimizer.load_state_dict(state)


# -- learning-rate schedules ------------------------------------------------------------------


def test_optimizers_take_named_parameters_and_a_closure_as_torch():
    model = nn.Linear(3, 2)
    optimizer = mg.optim.SGD(model.named_parameters(), lr=0.1)
    assert optimizer.param_groups[0]["param_names"] == ["weight", "bias"]
    assert optimizer.params == [model.weight, model.bias]
    with pytest.raises(ValueError, match="all be tensors or all"):
        mg.optim.SGD([("weight", model.weight), model.bias])
    before = model.weight.numpy().copy()
    x = mg.tensor(np.ones((4, 3), np.float32))

    def closure():
        optimizer.zero_grad()
        loss = model(x).sum()
        loss.backward()
        return loss

    with mg.no_grad():  # the closure still records its graph
        loss = optimizer.step(closure)
    assert loss.item() == pytest.approx(
        float((x.numpy() @ before.T + model.bias.numpy() * 0).sum()), abs=10
    )
    # d(sum)/dW = 4 per entry
    np.testing.assert_allclose(model.weight.numpy(), before - 0.1 * 4, rtol=1e-6)
    assert optimizer.step() is None
    with pytest.raises(TypeError, match="closure must be a function"):
        optimizer.step(1.0)


def test_adam_state_dict_without_decoupled_weight_decay_still_loads():
    p = nn.Parameter(np.ones(2, np.float32))
    optimizer = mg.optim.AdamW([p], lr=0.1)
    state = optimizer.state_dict()
    assert state["param_groups"][0]["decoupled_weight_decay"] is True
    del state["param_groups"][0]["decoupled_weight_decay"]  # saved before the setting existed
    optimizer.load_state_dict(state)
    assert optimizer.param_groups[0]["decoupled_weight_decay"] is True


def test_a_state_dict_of_fewer_parameters_is_refused_as_in_torch():
    """One group: the state dict carries its parameter count, so the state of a 2-parameter model
    does not load into an optimizer of 4 (torch raises ValueError too)."""
    small, big = nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    optimizer = mg.optim.Adam(small.parameters())
    small(mg.ones(1, 2)).sum().backward()
    optimizer.step()
    other = mg.optim.Adam(big.parameters())
    with pytest.raises(ValueError, match="group holds 4 parameters"):
        other.load_state_dict(optimizer.state_dict())
    legacy = {k: v for k, v in flat_state_dict(optimizer).items() if k != "param_groups.0.params"}
    mg.optim.Adam(nn.Linear(2, 2).parameters()).load_state_dict(legacy)  # files saved before
