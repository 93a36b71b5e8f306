"""Parameter groups, as a torch user writes them: per-group settings in the optimizers,
param_groups read and changed between steps, add_param_group, LambdaLR over several groups,
zero_grad(set_to_none=False), and state dicts of grouped optimizers. Every update is compared
with torch.optim on the same float64 numbers."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import nn
from optim_checks import flat_state_dict

OPTIMIZERS = {
    "SGD": dict(lr=0.1, momentum=0.9, weight_decay=0.01),
    "Adam": dict(lr=0.01, betas=(0.8, 0.99), eps=1e-8, weight_decay=0.05),
    "AdamW": dict(lr=0.01, betas=(0.9, 0.95), eps=1e-6, weight_decay=0.1),
}


def _torch():
    return pytest.importorskip("torch")


def _values(seed, shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


def _twins(shapes, seed=0):
    """The same float64 numbers as minigrad parameters and as torch leaf tensors."""
    torch = _torch()
    values = _values(seed, shapes)
    return (
        [nn.Parameter(v.copy()) for v in values],
        [torch.tensor(v.copy(), requires_grad=True) for v in values],
    )


def _set_grads(ours, theirs, seed):
    torch = _torch()
    for p, q, g in zip(ours, theirs, _values(seed, [p.shape for p in ours])):
        p.grad = mg.tensor(g)
        q.grad = torch.tensor(g)


def _groups(params, splits, settings):
    """params cut at `splits` into groups; settings[k] is group k's own dict of settings."""
    bounds = [0, *splits, len(params)]
    return [
        {"params": params[a:b], **extra} for (a, b), extra in zip(zip(bounds, bounds[1:]), settings)
    ]


def _assert_same(ours, theirs, rtol=1e-12):
    for p, q in zip(ours, theirs):
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=rtol, atol=1e-14)


SHAPES = [(3, 4), (4,), (2, 2), (5,)]
GROUP_SETTINGS = {
    "SGD": [{}, {"lr": 0.05, "weight_decay": 0.0}, {"momentum": 0.0}],
    "Adam": [{"weight_decay": 0.0}, {"lr": 0.003}, {"betas": (0.5, 0.9), "eps": 1e-4}],
    "AdamW": [{}, {"weight_decay": 0.0}, {"lr": 0.02, "betas": (0.7, 0.999)}],
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_groups_with_their_own_settings_match_torch(name):
    torch = _torch()
    ours, theirs = _twins(SHAPES)
    optimizer = getattr(mg.optim, name)(
        _groups(ours, [1, 3], GROUP_SETTINGS[name]), **OPTIMIZERS[name]
    )
    reference = getattr(torch.optim, name)(
        _groups(theirs, [1, 3], GROUP_SETTINGS[name]), **OPTIMIZERS[name]
    )
    for step in range(6):
        _set_grads(ours, theirs, seed=100 + step)
        optimizer.step()
        reference.step()
        _assert_same(ours, theirs)
    for group, torch_group in zip(optimizer.param_groups, reference.param_groups):
        for key in OPTIMIZERS[name]:
            assert group[key] == pytest.approx(torch_group[key]), key


def test_param_groups_hold_every_setting_and_keep_extra_entries():
    ours, _ = _twins(SHAPES)
    optimizer = mg.optim.AdamW(
        [
            {"params": ours[:2], "name": "decay"},
            {"params": ours[2:], "weight_decay": 0.0, "name": "no decay"},
        ],
        lr=0.002,
    )
    first, second = optimizer.param_groups
    assert first == {
        "params": ours[:2],
        "lr": 0.002,
        "betas": (0.9, 0.999),
        "eps": 1e-8,
        "weight_decay": 0.01,
        "amsgrad": False,
        "maximize": False,
        "decoupled_weight_decay": True,
        "name": "decay",
    }
    assert second["weight_decay"] == 0.0 and second["lr"] == 0.002 and second["name"] == "no decay"
    assert optimizer.defaults == {
        "lr": 0.002,
        "betas": (0.9, 0.999),
        "eps": 1e-8,
        "weight_decay": 0.01,
        "amsgrad": False,
        "maximize": False,
        "decoupled_weight_decay": True,
    }
    assert optimizer.params == ours


def test_changing_a_groups_lr_between_steps_matches_torch():
    torch = _torch()
    ours, theirs = _twins(SHAPES)
    optimizer = mg.optim.SGD(_groups(ours, [2], [{}, {}]), lr=0.1, momentum=0.5)
    reference = torch.optim.SGD(_groups(theirs, [2], [{}, {}]), lr=0.1, momentum=0.5)
    for step in range(5):
        for k, (group, torch_group) in enumerate(
            zip(optimizer.param_groups, reference.param_groups)
        ):
            # each group its own rate, as a torch loop does
            group["lr"] = torch_group["lr"] = 0.1 / (1 + step + k)
        _set_grads(ours, theirs, seed=step)
        optimizer.step()
        reference.step()
        _assert_same(ours, theirs)


def test_lr_attribute_reads_a_shared_value_and_sets_every_group():
    ours, _ = _twins(SHAPES)
    optimizer = mg.optim.Adam(_groups(ours, [2], [{}, {"lr": 0.5}]), lr=0.1)
    with pytest.raises(
        AttributeError,
        match=re.escape(
            "Adam.lr: the parameter groups have different values [0.1, 0.5]; "
            "read param_groups[i]['lr']"
        ),
    ):
        optimizer.lr
    assert optimizer.betas == (0.9, 0.999)  # the same in both groups
    optimizer.lr = 0.25
    assert [group["lr"] for group in optimizer.param_groups] == [
        0.25,
        0.25,
    ] and optimizer.lr == 0.25
    with pytest.raises(ValueError, match=r"lr must be in \[0, inf\); got -1.0"):
        optimizer.lr = -1
    assert optimizer.lr == 0.25
    with pytest.raises(AttributeError, match="no attribute 'learning_rate'"):
        optimizer.learning_rate


def test_add_param_group_matches_torch():
    torch = _torch()
    ours, theirs = _twins(SHAPES)
    optimizer = mg.optim.AdamW(ours[:2], lr=0.01)
    reference = torch.optim.AdamW(theirs[:2], lr=0.01)
    for step in range(6):
        if step == 3:  # unfreeze the rest, with their own rate
            optimizer.add_param_group({"params": ours[2:], "lr": 0.001})
            reference.add_param_group({"params": theirs[2:], "lr": 0.001})
        count = 2 if step < 3 else 4
        _set_grads(ours[:count], theirs[:count], seed=step)
        optimizer.step()
        reference.step()
        _assert_same(ours, theirs)
    assert (
        [g["lr"] for g in optimizer.param_groups]
        == [g["lr"] for g in reference.param_groups]
        == [0.01, 0.001]
    )


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_matches_torch(set_to_none):
    torch = _torch()
    ours, theirs = _twins(SHAPES)
    optimizer, reference = mg.optim.SGD(ours, lr=0.1), torch.optim.SGD(theirs, lr=0.1)
    _set_grads(ours, theirs, seed=1)
    kept = ours[0].grad.numpy()
    optimizer.zero_grad(set_to_none=set_to_none)
    reference.zero_grad(set_to_none=set_to_none)
    for p, q in zip(ours, theirs):
        assert (p.grad is None) == (q.grad is None) == set_to_none
        if not set_to_none:
            np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    if not set_to_none:
        # zeroed in place, as torch's grad.zero_()
        assert kept is ours[0].grad.numpy() and not kept.any()


def test_lambda_lr_with_one_function_per_group_matches_torch():
    torch = _torch()
    ours, theirs = _twins(SHAPES)
    warm = mg.optim.lr_scheduler.warmup_cosine(3, 10)
    decay = lambda step: 0.9**step  # noqa: E731
    optimizer = mg.optim.AdamW(_groups(ours, [2], [{}, {"lr": 0.02}]), lr=0.01)
    reference = torch.optim.AdamW(_groups(theirs, [2], [{}, {"lr": 0.02}]), lr=0.01)
    schedule = mg.optim.lr_scheduler.LambdaLR(optimizer, [warm, decay])
    torch_schedule = torch.optim.lr_scheduler.LambdaLR(reference, [warm, decay])
    assert schedule.base_lrs == torch_schedule.base_lrs == [0.01, 0.02]
    for step in range(12):
        assert schedule.get_last_lr() == pytest.approx(torch_schedule.get_last_lr(), rel=1e-15)
        _set_grads(ours, theirs, seed=step)
        optimizer.step()
        reference.step()
        schedule.step()
        torch_schedule.step()
        _assert_same(ours, theirs)
    assert [g["lr"] for g in optimizer.param_groups] == pytest.approx(
        [g["lr"] for g in reference.param_groups]
    )


def test_lambda_lr_with_one_function_sets_every_group():
    ours, _ = _twins(SHAPES)
    optimizer = mg.optim.SGD(_groups(ours, [1, 2], [{}, {"lr": 0.2}, {"lr": 0.0}]), lr=0.1)
    schedule = mg.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.5**step)
    schedule.step()
    schedule.step()
    assert schedule.get_last_lr() == [0.025, 0.05, 0.0]
    assert [g["lr"] for g in optimizer.param_groups] == [0.025, 0.05, 0.0]


def test_lambda_lr_refuses_a_wrong_number_of_functions_and_a_bad_factor_changes_nothing():
    ours, _ = _twins(SHAPES)
    optimizer = mg.optim.SGD(_groups(ours, [2], [{}, {}]), lr=0.1)
    with pytest.raises(
        ValueError,
        match=r"one lr_lambda, or a list of one per parameter group \(2\); got a list of 3",
    ):
        mg.optim.lr_scheduler.LambdaLR(optimizer, [abs, abs, abs])
    with pytest.raises(TypeError, match="function of the step count; got int"):
        mg.optim.lr_scheduler.LambdaLR(optimizer, [abs, 3])
    schedule = mg.optim.lr_scheduler.LambdaLR(
        optimizer, [lambda s: 1.0, lambda s: 1.0 if s < 1 else -1.0]
    )
    with pytest.raises(
        ValueError, match=r"lr_lambda\(1\) must return a finite number >= 0; got -1.0"
    ):
        schedule.step()
    assert schedule.last_epoch == 0 and [g["lr"] for g in optimizer.param_groups] == [0.1, 0.1]


def test_grouped_state_dicts_round_trip_through_a_file(tmp_path):
    def build():
        params = [nn.Parameter(np.ones(shape)) for shape in SHAPES]
        optimizer = mg.optim.AdamW(
            _groups(params, [1], [{"weight_decay": 0.0}, {"lr": 0.003}]), lr=0.01
        )
        return (
            params,
            optimizer,
            mg.optim.lr_scheduler.LambdaLR(optimizer, [lambda s: 1 / (s + 1), abs]),
        )

    params, optimizer, schedule = build()
    for step in range(3):
        for p in params:
            p.grad = mg.tensor(np.full(p.shape, 0.5 + step))
        optimizer.step()
        schedule.step()
    mg.io.save(
        {
            **{f"optim.{k}": v for k, v in optimizer.state_dict().items()},
            **{f"schedule.{k}": v for k, v in schedule.state_dict().items()},
        },
        tmp_path / "ckpt.npz",
    )
    loaded = mg.io.load(tmp_path / "ckpt.npz")
    _, restored, restored_schedule = build()
    restored.load_state_dict({k[6:]: v for k, v in loaded.items() if k.startswith("optim.")})
    restored_schedule.load_state_dict(
        {k[9:]: v for k, v in loaded.items() if k.startswith("schedule.")}
    )
    for group, saved in zip(restored.param_groups, optimizer.param_groups):
        assert {k: group[k] for k in restored.defaults} == {k: saved[k] for k in optimizer.defaults}
    assert (
        restored_schedule.get_last_lr() == schedule.get_last_lr()
        and restored_schedule.last_epoch == 3
    )
    assert restored_schedule.base_lrs == schedule.base_lrs == [0.01, 0.003]
    for index, state in optimizer.state.items():
        for key, value in state.items():
            np.testing.assert_array_equal(restored.state[index][key], value)


def test_grouped_state_dict_must_fit_the_optimizers_groups():
    params = [nn.Parameter(np.ones(shape)) for shape in SHAPES]
    two = mg.optim.Adam(_groups(params, [1], [{}, {}]), lr=0.1)
    assert [group["params"] for group in two.state_dict()["param_groups"]] == [[0], [1, 2, 3]]
    saved = flat_state_dict(two)
    assert saved["param_groups.0.params"] == 1 and "lr" not in saved
    other = mg.optim.Adam(_groups(params, [2], [{}, {}]), lr=0.1)
    with pytest.raises(
        ValueError,
        match=r"param_groups.0.params: this optimizer's group holds 2 parameters; "
        r"the state dict's holds 1",
    ):
        other.load_state_dict(saved)
    single = mg.optim.Adam(params, lr=0.1)
    with pytest.raises(
        ValueError,
        match=r"unexpected key 'param_groups.0.lr' \(the state dict is of an optimizer "
        r"with 2 parameter group\(s\); this one has 1\)",
    ):
        single.load_state_dict(saved)
    with pytest.raises(ValueError, match=r"missing key 'param_groups.0.lr'"):
        two.load_state_dict(single.state_dict())
    bad = {**saved, "param_groups.1.betas": np.array([0.9, 1.5])}
    before = [dict(group) for group in two.param_groups]
    with pytest.raises(ValueError, match=r"param_groups.1.betas\[1\] must be in \[0, 1\); got 1.5"):
        two.load_state_dict(bad)
    assert two.param_groups == before


@pytest.mark.parametrize(
    "params, error, message",
    [
        ([{"lr": 0.1}], TypeError, "parameter group 0 must be a dict with a 'params' entry"),
        (["not a group"], TypeError, "optimizes Tensors; parameter 0 is a str"),
        ({"params": []}, TypeError, "got a dict. For one group, wrap it in a list"),
        ([{"params": []}, {"params": []}], ValueError, "got an empty parameter list"),
    ],
)
def test_bad_groups_are_refused_by_name(params, error, message):
    with pytest.raises(error, match=re.escape(message)):
        mg.optim.SGD(params, lr=0.1)


def test_a_parameter_in_two_groups_or_a_mix_or_a_set_is_refused():
    p, q = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(3))
    with pytest.raises(
        ValueError,
        match=r"parameter 1 \(shape \(2,\)\) appears more than once .*first as parameter 0",
    ):
        mg.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)
    with pytest.raises(TypeError, match="all Tensors or all dicts"):
        mg.optim.SGD([p, {"params": [q]}], lr=0.1)
    with pytest.raises(TypeError, match="are a set, whose order changes"):
        mg.optim.SGD([{"params": {p, q}}], lr=0.1)
    optimizer = mg.optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="appears more than once"):
        optimizer.add_param_group({"params": [q, p]})
    # the failed group was not added
    assert len(optimizer.param_groups) == 1 and optimizer.params == [p]


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("lr", -0.1, r"parameter group 1: lr must be in \[0, inf\); got -0.1"),
        ("betas", (0.9, 1.0), r"parameter group 1: betas\[1\] must be in \[0, 1\); got 1.0"),
        ("weight_decay", "0.1", "parameter group 1: weight_decay must be a number; got '0.1'"),
    ],
)
def test_a_bad_setting_in_a_group_names_the_group(key, value, message):
    p, q = nn.Parameter(np.ones(2)), nn.Parameter(np.ones(3))
    with pytest.raises((TypeError, ValueError), match=message):
        mg.optim.Adam([{"params": [p]}, {"params": [q], key: value}])


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted(OPTIMIZERS)),
    cut=st.integers(0, 4),
    lrs=st.lists(st.floats(0.0, 0.5), min_size=2, max_size=2),
    decays=st.lists(st.floats(0.0, 0.2), min_size=2, max_size=2),
    seed=st.integers(0, 1000),
)
def test_any_split_into_two_groups_matches_torch(name, cut, lrs, decays, seed):
    torch = _torch()
    ours, theirs = _twins(SHAPES, seed=seed)
    settings_ = [{"lr": lr, "weight_decay": decay} for lr, decay in zip(lrs, decays)]
    optimizer = getattr(mg.optim, name)(_groups(ours, [cut], settings_), **OPTIMIZERS[name])
    reference = getattr(torch.optim, name)(_groups(theirs, [cut], settings_), **OPTIMIZERS[name])
    for step in range(3):
        _set_grads(ours, theirs, seed=seed + step)
        optimizer.step()
        reference.step()
    _assert_same(ours, theirs, rtol=1e-10)


# -- the other schedules, against torch's, with one group and with two ------------------------

SCHEDULES = {
    "StepLR": lambda lr, opt: lr.StepLR(opt, step_size=4, gamma=0.5),
    "MultiStepLR": lambda lr, opt: lr.MultiStepLR(opt, milestones=[3, 7, 8], gamma=0.3),
    "MultiStepLR, unsorted, a repeat": lambda lr, opt: lr.MultiStepLR(
        opt, milestones=[8, 3, 8], gamma=0.5
    ),
    "LambdaLR returning 0-d tensors": lambda lr, opt: lr.LambdaLR(
        opt,
        lambda step: (
            (mg.tensor(0.9, dtype=mg.float64) if lr is mg.optim.lr_scheduler else 0.9) ** step
        ),
    ),
    "ExponentialLR": lambda lr, opt: lr.ExponentialLR(opt, gamma=0.9),
    "LinearLR": lambda lr, opt: lr.LinearLR(opt, start_factor=0.1, end_factor=0.8, total_iters=6),
    "LinearLR-defaults": lambda lr, opt: lr.LinearLR(opt),
    "ConstantLR": lambda lr, opt: lr.ConstantLR(opt, factor=0.25, total_iters=4),
    "CosineAnnealingLR": lambda lr, opt: lr.CosineAnnealingLR(opt, T_max=10, eta_min=1e-4),
    "MultiplicativeLR": lambda lr, opt: lr.MultiplicativeLR(
        opt, lambda step: 0.9 if step % 3 else 0.5
    ),
    "PolynomialLR": lambda lr, opt: lr.PolynomialLR(opt, total_iters=10, power=2.0),
    "PolynomialLR-defaults": lambda lr, opt: lr.PolynomialLR(opt),
    "PolynomialLR, square root, total_iters 0": lambda lr, opt: lr.PolynomialLR(
        opt, total_iters=0, power=0.5
    ),
    "warm-up then polynomial": lambda lr, opt: lr.SequentialLR(
        opt,
        [
            lr.LinearLR(opt, start_factor=0.1, total_iters=4),
            lr.PolynomialLR(opt, total_iters=12, power=0.5),
        ],
        milestones=[4],
    ),
    "warm-up then multiplicative": lambda lr, opt: lr.SequentialLR(
        opt,
        [
            lr.LinearLR(opt, start_factor=0.1, total_iters=4),
            lr.MultiplicativeLR(opt, lambda step: 0.8),
        ],
        milestones=[4],
    ),
    "warm-up then cosine": lambda lr, opt: lr.SequentialLR(
        opt,
        [lr.LinearLR(opt, start_factor=0.01, total_iters=5), lr.CosineAnnealingLR(opt, T_max=15)],
        milestones=[5],
    ),
    "three in a row": lambda lr, opt: lr.SequentialLR(
        opt,
        [lr.ExponentialLR(opt, gamma=0.5), lr.StepLR(opt, 2), lr.ExponentialLR(opt, gamma=0.8)],
        milestones=[3, 9],
    ),
    "CosineAnnealingWarmRestarts": lambda lr, opt: lr.CosineAnnealingWarmRestarts(
        opt, T_0=4, T_mult=2, eta_min=1e-3
    ),
    "CosineAnnealingWarmRestarts, T_mult 1": lambda lr, opt: lr.CosineAnnealingWarmRestarts(
        opt, T_0=6
    ),
    "warm-up then warm restarts": lambda lr, opt: lr.SequentialLR(
        opt,
        [lr.LinearLR(opt, start_factor=0.1, total_iters=4), lr.CosineAnnealingWarmRestarts(opt, 5)],
        milestones=[4],
    ),
    "OneCycleLR (momentum cycled)": lambda lr, opt: lr.OneCycleLR(opt, max_lr=0.5, total_steps=25),
    "OneCycleLR, three phases, linear": lambda lr, opt: lr.OneCycleLR(
        opt,
        max_lr=0.3,
        total_steps=30,
        pct_start=0.4,
        anneal_strategy="linear",
        three_phase=True,
        base_momentum=0.8,
        max_momentum=0.9,
        div_factor=10.0,
        final_div_factor=100.0,
    ),
    "OneCycleLR, epochs x steps, no momentum": lambda lr, opt: lr.OneCycleLR(
        opt, max_lr=0.4, epochs=5, steps_per_epoch=5, cycle_momentum=False
    ),
}


def _train_step(ours, theirs, seed, *stepped):
    """The same gradients for both twins, then step() of each optimizer and schedule given, in
    order."""
    _set_grads(ours, theirs, seed=seed)
    for each in stepped:
        each.step()


@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("name", SCHEDULES)
def test_schedules_match_torch_step_by_step(name, groups):
    import warnings

    torch = _torch()
    ours, theirs = _twins(SHAPES)
    settings_ = [{}, {"lr": 0.02}][:groups]
    optimizer = mg.optim.SGD(_groups(ours, [2][: groups - 1], settings_), lr=0.1, momentum=0.9)
    reference = torch.optim.SGD(_groups(theirs, [2][: groups - 1], settings_), lr=0.1, momentum=0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's SequentialLR warns about its own step(0)
        schedule = SCHEDULES[name](mg.optim.lr_scheduler, optimizer)
        torch_schedule = SCHEDULES[name](torch.optim.lr_scheduler, reference)
        for step in range(25):
            assert schedule.get_last_lr() == pytest.approx(
                torch_schedule.get_last_lr(), rel=1e-12, abs=1e-15
            ), step
            assert [g["lr"] for g in optimizer.param_groups] == pytest.approx(
                [g["lr"] for g in reference.param_groups], rel=1e-12, abs=1e-15
            ), step
            _train_step(ours, theirs, step, optimizer, reference, schedule, torch_schedule)
    _assert_same(ours, theirs, rtol=1e-10)


def test_a_schedule_resumes_from_its_state_dict(tmp_path):
    def build():
        p = nn.Parameter(np.ones(2))
        optimizer = mg.optim.SGD([p], lr=0.5)
        lr = mg.optim.lr_scheduler
        return optimizer, lr.SequentialLR(
            optimizer,
            [lr.LinearLR(optimizer, 0.2, total_iters=3), lr.CosineAnnealingLR(optimizer, 8)],
            [3],
        )

    optimizer, schedule = build()
    straight = []
    for _ in range(10):
        straight.append(schedule.get_last_lr()[0])
        schedule.step()
    optimizer, schedule = build()
    for _ in range(4):
        schedule.step()
    mg.io.save(
        {"optim": optimizer.state_dict(), "schedule": schedule.state_dict()}, tmp_path / "ckpt.npz"
    )
    resumed_optimizer, resumed = build()
    checkpoint = mg.io.load(tmp_path / "ckpt.npz")
    resumed_optimizer.load_state_dict(checkpoint["optim"])  # the groups' current rates, as in torch
    resumed.load_state_dict(checkpoint["schedule"])
    later = []
    for _ in range(6):
        later.append(resumed.get_last_lr()[0])
        resumed.step()
    assert later == straight[4:]


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda lr, opt: lr.StepLR(opt, step_size=0), "step_size must be an integer >= 1; got 0"),
        (
            lambda lr, opt: lr.StepLR(opt, step_size=2, gamma=-0.5),
            r"gamma must be in \[0, inf\); got -0.5",
        ),
        (
            lambda lr, opt: lr.MultiStepLR(opt, milestones=[5, -2]),
            "milestones must be an integer >= 0; got -2",
        ),
        (lambda lr, opt: lr.LinearLR(opt, start_factor=0), "start_factor must be > 0; got 0.0"),
        (lambda lr, opt: lr.LinearLR(opt, start_factor=2.0), r"start_factor must be in \(0, 1\]"),
        (
            lambda lr, opt: lr.CosineAnnealingLR(opt, T_max=0),
            "T_max must be an integer >= 1; got 0",
        ),
        (
            lambda lr, opt: lr.PolynomialLR(opt, total_iters=-1),
            "total_iters must be an integer >= 0; got -1",
        ),
        (
            lambda lr, opt: lr.PolynomialLR(opt, total_iters=2.5),
            "total_iters must be an integer >= 0; got 2.5",
        ),
        (
            lambda lr, opt: lr.PolynomialLR(opt, power=-1.0),
            r"power must be in \[0, inf\); got -1.0",
        ),
        (
            lambda lr, opt: lr.MultiplicativeLR(opt, 0.9),
            "MultiplicativeLR expects lr_lambda to be a function",
        ),
        (
            lambda lr, opt: lr.MultiplicativeLR(opt, [abs, abs]),
            "one per parameter group \\(1\\); got a list of 2",
        ),
        (
            lambda lr, opt: lr.MultiplicativeLR(opt, lambda step: -0.5).step(),
            r"MultiplicativeLR: lr_lambda\(1\) must return a finite number >= 0; got -0.5",
        ),
        (
            lambda lr, opt: lr.CosineAnnealingLR(opt, T_max=2.5),
            "T_max must be an integer >= 1; got 2.5",
        ),
        (
            lambda lr, opt: lr.SequentialLR(opt, [lr.ExponentialLR(opt, 0.5)], milestones=[3]),
            "one milestone fewer than schedulers; got 1 schedulers and 1 milestones",
        ),
        (
            lambda lr, opt: lr.SequentialLR(
                opt,
                [
                    lr.ExponentialLR(opt, 0.5),
                    lr.ExponentialLR(mg.optim.SGD([nn.Parameter(np.ones(1))], lr=1.0), 0.5),
                ],
                milestones=[3],
            ),
            "schedulers made on the optimizer it is given",
        ),
        (
            lambda lr, opt: lr.ExponentialLR("sgd", 0.5),
            "ExponentialLR expects an mg.optim optimizer; got str",
        ),
        (
            lambda lr, opt: lr.CosineAnnealingWarmRestarts(opt, T_0=0),
            "T_0 must be an integer >= 1; got 0",
        ),
        (
            lambda lr, opt: lr.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=1.5),
            "T_mult must be an integer >= 1",
        ),
        (
            lambda lr, opt: lr.CosineAnnealingWarmRestarts(opt, 3).step(-1),
            "epoch must be a number >= 0; got -1",
        ),
        (
            lambda lr, opt: lr.CosineAnnealingWarmRestarts(opt, 3).step(float("nan")),
            "epoch must be a number >= 0",
        ),
        (
            lambda lr, opt: lr.OneCycleLR(opt, 0.1),
            "give total_steps, or epochs and steps_per_epoch",
        ),
        (
            lambda lr, opt: lr.OneCycleLR(opt, 0.1, total_steps=0),
            "total_steps must be an integer >= 1; got 0",
        ),
        (
            lambda lr, opt: lr.OneCycleLR(opt, 0.1, epochs=2, steps_per_epoch=2.5),
            "steps_per_epoch must be an integer",
        ),
        (
            lambda lr, opt: lr.OneCycleLR(opt, 0.1, 10, pct_start=1.5),
            r"pct_start must be in \[0, 1\]; got 1.5",
        ),
        (
            lambda lr, opt: lr.OneCycleLR(opt, 0.1, 10, anneal_strategy="exp"),
            "anneal_strategy must be 'cos' or 'linear'",
        ),
        (
            lambda lr, opt: lr.OneCycleLR(opt, [0.1, 0.2], 10),
            "max_lr must be one number or a list of one per parameter",
        ),
        (lambda lr, opt: lr.OneCycleLR(opt, -0.1, 10), r"max_lr must be in \[0, inf\)"),
        (
            lambda lr, opt: lr.OneCycleLR(mg.optim.Adam(opt.params), 0.1, 10, max_momentum=1.0),
            r"the momentum is beta1, which must be in \[0, 1\)",
        ),
    ],
)
def test_schedule_settings_are_checked(make, message):
    optimizer = mg.optim.SGD([nn.Parameter(np.ones(2))], lr=0.1)
    with pytest.raises((TypeError, ValueError), match=message):
        make(mg.optim.lr_scheduler, optimizer)


@pytest.mark.filterwarnings("ignore:Detected call of")
def test_warm_restarts_at_fractional_epochs_follow_torch():
    """step(epoch + i / batches), the way torch's documentation steps it inside an epoch, then
    plain steps on from there, and a jump back (steps "can be called in an interleaved way")."""
    torch = _torch()
    optimizer = mg.optim.SGD([nn.Parameter(np.ones(2))], lr=0.2)
    reference = torch.optim.SGD([torch.ones(2, requires_grad=True)], lr=0.2)
    ours = mg.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        optimizer, T_0=2, T_mult=2, eta_min=0.01
    )
    theirs = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        reference, T_0=2, T_mult=2, eta_min=0.01
    )
    epochs = (
        [epoch + i / 5 for epoch in range(9) for i in range(5)] + [None] * 6 + [3.5] + [None] * 4
    )
    for epoch in epochs:
        for schedule in (ours, theirs):
            schedule.step() if epoch is None else schedule.step(epoch)
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-12), epoch
        assert (ours.last_epoch, ours.T_i) == (
            theirs.last_epoch,
            theirs.T_i,
        ) and ours.T_cur == pytest.approx(theirs.T_cur)


@pytest.mark.filterwarnings("ignore:Detected call of")
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_one_cycle_cycles_adams_beta1_as_torch(name):
    torch = _torch()
    ours, theirs = _twins(SHAPES)
    optimizer = getattr(mg.optim, name)(_groups(ours, [2], [{}, {"lr": 0.002}]), lr=0.01)
    reference = getattr(torch.optim, name)(_groups(theirs, [2], [{}, {"lr": 0.002}]), lr=0.01)
    schedule = mg.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=[0.05, 0.01], total_steps=12)
    torch_schedule = torch.optim.lr_scheduler.OneCycleLR(
        reference, max_lr=[0.05, 0.01], total_steps=12
    )
    for step in range(12):
        assert [g["betas"] for g in optimizer.param_groups] == [
            pytest.approx(g["betas"], rel=1e-12) for g in reference.param_groups
        ], step
        _train_step(ours, theirs, step, optimizer, reference, schedule, torch_schedule)
    _assert_same(ours, theirs, rtol=1e-10)
    with pytest.raises(ValueError, match="stepped 13 times, more than total_steps=12"):
        schedule.step()
    assert schedule.last_epoch == 12  # the refused step changed nothing


RESUMABLE = {
    "OneCycleLR": (lambda lr, opt: lr.OneCycleLR(opt, 1.0, total_steps=20), {}),
    "ChainedScheduler": (
        lambda lr, opt: lr.ChainedScheduler(
            [lr.LinearLR(opt, 0.2, total_iters=4), lr.ExponentialLR(opt, 0.8)]
        ),
        {},
    ),
    "CosineAnnealingWarmRestarts": (
        lambda lr, opt: lr.CosineAnnealingWarmRestarts(opt, 3, 2),
        {5: 5.5},
    ),
}


@pytest.mark.parametrize("name", RESUMABLE)
def test_schedules_with_state_of_their_own_resume_from_their_state_dicts(name, tmp_path):
    make, jumps = RESUMABLE[name]  # jumps: step number -> the epoch given to step() there

    def build():
        optimizer = mg.optim.SGD([nn.Parameter(np.ones(2))], lr=0.5, momentum=0.9)
        return optimizer, make(mg.optim.lr_scheduler, optimizer)

    def run(optimizer, schedule, steps):
        rates = []
        for step in steps:
            schedule.step(jumps[step]) if step in jumps else schedule.step()
            rates.append((optimizer.param_groups[0]["lr"], optimizer.param_groups[0]["momentum"]))
        return rates

    straight = run(*build(), range(14))
    optimizer, schedule = build()
    run(optimizer, schedule, range(7))
    mg.io.save(
        {"optim": optimizer.state_dict(), "schedule": schedule.state_dict()}, tmp_path / "ckpt.npz"
    )
    optimizer, schedule = build()
    checkpoint = mg.io.load(tmp_path / "ckpt.npz")
    optimizer.load_state_dict(checkpoint["optim"])
    schedule.load_state_dict(checkpoint["schedule"])
    assert run(optimizer, schedule, range(7, 14)) == straight[7:]


def test_chained_scheduler_checks_its_schedulers_and_keys():
    optimizer = mg.optim.SGD([nn.Parameter(np.ones(2))], lr=0.5)
    lr = mg.optim.lr_scheduler
    schedule = lr.ChainedScheduler(
        [lr.LinearLR(optimizer, 0.2, total_iters=4), lr.ExponentialLR(optimizer, 0.8)]
    )
    with pytest.raises(ValueError, match="unexpected key 'schedulers.2.last_epoch'"):
        schedule.load_state_dict({"schedulers.2.last_epoch": 1})
    with pytest.raises(ValueError, match="schedulers .* made on one optimizer"):
        lr.ChainedScheduler(
            [
                lr.ExponentialLR(optimizer, 0.5),
                lr.ExponentialLR(mg.optim.SGD([nn.Parameter(np.ones(1))], lr=1.0), 0.5),
            ]
        )


def test_warm_restarts_check_their_own_state():
    optimizer = mg.optim.SGD([nn.Parameter(np.ones(2))], lr=0.5)
    schedule = mg.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, 3)
    broken = {key: value for key, value in schedule.state_dict().items() if key != "T_cur"}
    with pytest.raises(ValueError, match="missing key 'T_cur'; T_i must be an integer >= 1; got 0"):
        schedule.load_state_dict({**broken, "T_i": 0})
    assert (schedule.T_cur, schedule.T_i) == (0, 3)


PLATEAU_METRICS = [
    1.0,
    0.9,
    0.95,
    0.97,
    0.96,
    0.95,
    0.949,
    0.9489,
    0.99,
    1.2,
    0.5,
    0.6,
    0.61,
    0.7,
    0.8,
    0.45,
    0.46,
    0.47,
    0.48,
    0.49,
    0.5,
    0.51,
    0.52,
    0.53,
]


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"patience": 1, "factor": 0.5},
        {"mode": "max", "patience": 2, "factor": 0.3, "cooldown": 2},
        {"patience": 0, "threshold": 0.05, "threshold_mode": "abs", "min_lr": [0.01, 0.004]},
        {"patience": 2, "threshold_mode": "abs", "cooldown": 1, "min_lr": 0.005, "eps": 1e-3},
    ],
)
def test_reduce_lr_on_plateau_matches_torch(settings):
    torch = _torch()
    ours, theirs = _twins(SHAPES)
    optimizer = mg.optim.SGD(_groups(ours, [2], [{}, {"lr": 0.02}]), lr=0.1)
    reference = torch.optim.SGD(_groups(theirs, [2], [{}, {"lr": 0.02}]), lr=0.1)
    settings = {"patience": 3, **settings}
    schedule = mg.optim.lr_scheduler.ReduceLROnPlateau(optimizer, **settings)
    torch_schedule = torch.optim.lr_scheduler.ReduceLROnPlateau(reference, **settings)
    for step, metric in enumerate(PLATEAU_METRICS):
        # a 0-d tensor works too
        schedule.step(mg.tensor(metric, dtype=mg.float64) if step % 2 else metric)
        torch_schedule.step(metric)
        assert schedule.get_last_lr() == pytest.approx(torch_schedule.get_last_lr(), rel=1e-12), (
            step
        )
        assert [g["lr"] for g in optimizer.param_groups] == pytest.approx(
            [g["lr"] for g in reference.param_groups]
        )
        assert (schedule.best, schedule.num_bad_epochs, schedule.cooldown_counter) == (
            torch_schedule.best,
            torch_schedule.num_bad_epochs,
            torch_schedule.cooldown_counter,
        )


def test_reduce_lr_on_plateau_resumes_and_checks_its_settings(tmp_path):
    def build():
        optimizer = mg.optim.SGD([nn.Parameter(np.ones(2))], lr=1.0)
        return mg.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=1, factor=0.5)

    straight = build()
    for metric in PLATEAU_METRICS:
        straight.step(metric)
    first = build()
    for metric in PLATEAU_METRICS[:9]:
        first.step(metric)
    mg.io.save(
        {"optim": first.optimizer.state_dict(), "schedule": first.state_dict()},
        tmp_path / "ckpt.npz",
    )
    resumed = build()
    checkpoint = mg.io.load(tmp_path / "ckpt.npz")
    resumed.optimizer.load_state_dict(checkpoint["optim"])
    resumed.load_state_dict(checkpoint["schedule"])
    for metric in PLATEAU_METRICS[9:]:
        resumed.step(metric)
    assert resumed.get_last_lr() == straight.get_last_lr() and resumed.best == straight.best
    optimizer = mg.optim.SGD([nn.Parameter(np.ones(2))], lr=1.0)
    plateau = mg.optim.lr_scheduler.ReduceLROnPlateau
    with pytest.raises(ValueError, match="mode must be 'min' or 'max'"):
        plateau(optimizer, mode="lowest")
    with pytest.raises(ValueError, match="factor must be < 1"):
        plateau(optimizer, factor=1.0)
    with pytest.raises(ValueError, match=r"one per parameter group \(1\); got 2"):
        plateau(optimizer, min_lr=[0.1, 0.2])
    with pytest.raises(
        TypeError, match="expected the metric as a number or a 0-d tensor; got 'abc'"
    ):
        plateau(optimizer).step("abc")
    with pytest.raises(ValueError, match="num_bad_epochs must be an integer >= 0; got -1"):
        plateau(optimizer).load_state_dict(
            {"best": 1.0, "num_bad_epochs": -1, "cooldown_counter": 0, "last_epoch": 3}
        )


def test_state_reads_by_parameter_as_torch_code_does():
    torch = _torch()
    ours, theirs = _twins(SHAPES)
    optimizer = mg.optim.Adam(_groups(ours, [2], [{}, {"lr": 0.02}]), lr=0.1)
    reference = torch.optim.Adam(_groups(theirs, [2], [{}, {"lr": 0.02}]), lr=0.1)
    # nothing before the first step
    assert optimizer.state[ours[3]] == {} and ours[3] not in optimizer.state
    for step in range(3):
        _set_grads(ours[:3], theirs[:3], seed=step)  # the last parameter never gets a gradient
        optimizer.step()
        reference.step()
    for p, q in zip(ours[:3], theirs[:3]):
        assert p in optimizer.state and optimizer.state[p]["step"] == int(
            reference.state[q]["step"]
        )
        np.testing.assert_allclose(
            optimizer.state[p]["exp_avg_sq"], reference.state[q]["exp_avg_sq"].numpy(), rtol=1e-12
        )
    assert optimizer.state[ours[3]] == {} and optimizer.state.get(ours[3]) is None
    assert optimizer.state[1] is optimizer.state[ours[1]]  # the index still works
    stranger = nn.Parameter(np.ones(2))
    assert stranger not in optimizer.state
    with pytest.raises(KeyError, match="not one of the optimizer's parameters"):
        optimizer.state[stranger]


@pytest.mark.parametrize(
    "name, key, value, error, message",
    [
        ("SGD", "lr", None, TypeError, r"param_groups\[0\]\['lr'\] must be a number; got None"),
        (
            "SGD",
            "momentum",
            -0.5,
            ValueError,
            r"param_groups\[0\]\['momentum'\] must be in \[0, inf\)",
        ),
        (
            "Adam",
            "betas",
            (0.9, 2.0),
            ValueError,
            r"param_groups\[0\]\['betas'\]\[1\] must be in \[0, 1\); got 2.0",
        ),
        ("Adam", "eps", None, TypeError, r"param_groups\[0\]\['eps'\] must be a number"),
        (
            "AdamW",
            "weight_decay",
            "0.1",
            TypeError,
            r"param_groups\[0\]\['weight_decay'\] must be a number",
        ),
    ],
)
def test_a_bad_setting_put_into_param_groups_is_refused_at_step_before_any_change(
    name, key, value, error, message
):
    params = [nn.Parameter(np.ones(2)), nn.Parameter(np.ones(3))]
    optimizer = getattr(mg.optim, name)(params, lr=0.1)
    for p in params:
        p.grad = mg.tensor(np.full(p.shape, 0.5))
    optimizer.param_groups[0][key] = value
    with pytest.raises(error, match=message):
        optimizer.step()
    assert all((p.numpy() == 1).all() for p in params)


def test_a_zero_dim_tensor_as_a_rate_is_taken_as_its_number():
    p = nn.Parameter(np.ones(2))
    optimizer = mg.optim.SGD([p], lr=mg.tensor(0.5))
    p.grad = mg.tensor(np.ones(2))
    optimizer.param_groups[0]["lr"] = np.array(0.25)
    optimizer.step()
    np.testing.assert_allclose(p.numpy(), [0.75, 0.75])


STACKED = {
    "two stepped together": lambda lr, opt: [
        lr.LinearLR(opt, 0.1, 1.0, 5),
        lr.ExponentialLR(opt, 0.9),
    ],
    "a second made after the first stepped": lambda lr, opt: (
        lambda first: (first.step(), first.step(), [first, lr.CosineAnnealingLR(opt, 6)])[2]
    )(lr.StepLR(opt, 2, 0.5)),
    "ConstantLR and MultiStepLR": lambda lr, opt: [
        lr.ConstantLR(opt, 0.5, 3),
        lr.MultiStepLR(opt, [2, 5, 5], 0.5),
    ],
    "ChainedScheduler": lambda lr, opt: [
        lr.ChainedScheduler([lr.ConstantLR(opt, 0.1, 3), lr.ExponentialLR(opt, 0.9)])
    ],
    "PolynomialLR and MultiplicativeLR": lambda lr, opt: [
        lr.PolynomialLR(opt, 8, 1.5),
        lr.MultiplicativeLR(opt, lambda step: 0.9),
    ],
}


# torch's: no optimizer step between, on purpose
@pytest.mark.filterwarnings("ignore:Detected call of")
@pytest.mark.parametrize("name", STACKED)
def test_stacked_schedules_and_hand_set_rates_follow_torch(name):
    """torch's schedules take each group's current rate to the next: they compound when stepped
    together, carry on from a rate set by hand, and scale a group added later."""
    torch = _torch()
    ours, theirs = _twins(SHAPES)
    optimizer = mg.optim.SGD(_groups(ours[:3], [1], [{}, {"lr": 0.03}]), lr=0.1)
    reference = torch.optim.SGD(_groups(theirs[:3], [1], [{}, {"lr": 0.03}]), lr=0.1)
    schedules = STACKED[name](mg.optim.lr_scheduler, optimizer)
    torch_schedules = STACKED[name](torch.optim.lr_scheduler, reference)
    for step in range(14):
        if step == 4:  # a rate set by hand
            optimizer.param_groups[0]["lr"] = reference.param_groups[0]["lr"] = 0.2
        if step == 6 and name not in (
            "a second made after the first stepped",
            "PolynomialLR and MultiplicativeLR",
        ):
            # a group added later (torch's CosineAnnealingLR and MultiplicativeLR raise on one:
            # zip() of their
            # base rates or functions and the groups, strict)
            optimizer.add_param_group({"params": ours[3:], "lr": 0.05})
            reference.add_param_group({"params": theirs[3:], "lr": 0.05})
        for ours_, theirs_ in zip(schedules, torch_schedules):
            ours_.step()
            theirs_.step()
        assert [g["lr"] for g in optimizer.param_groups] == pytest.approx(
            [g["lr"] for g in reference.param_groups], rel=1e-12
        ), step
        assert schedules[-1].get_last_lr() == pytest.approx(
            torch_schedules[-1].get_last_lr(), rel=1e-12
        ), step
