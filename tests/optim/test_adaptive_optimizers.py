"""RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam (minigrad/optim/rmsprop.py, adagrad.py,
adam_variants.py) against torch.optim, step by step: every
flag on and off, two parameter groups, frozen and skipped parameters, float32 and float64; their
state (opt.state[p], state dicts through mg.save / mg.load); schedules stepping them; and bad
hyper-parameters raising as torch's do."""

import contextlib

import numpy as np
import pytest

import minigrad as mg
import minigrad.optim  # noqa: F401  (mg.optim)
from minigrad import nn
from optim_checks import flat_state_dict
from parity import assert_close, assert_same_steps, tolerance

torch = pytest.importorskip("torch")

STEPS = 25
SHAPES = [(3, 4), (4,), ()]

# (optimizer, constructor settings, the second group's own settings): each flag on and off
CASES = [
    ("RMSprop", {}, {}),
    ("RMSprop", dict(lr=0.01, momentum=0.9), dict(momentum=0)),
    ("RMSprop", dict(lr=0.005, centered=True), dict(centered=False, maximize=True)),
    ("RMSprop", dict(alpha=0.3, eps=1e-6, centered=True, momentum=0.5), dict(lr=0.002, alpha=0.9)),
    (
        "RMSprop",
        dict(lr=0.01, alpha=0.9, weight_decay=0.1, momentum=0.5, centered=True, maximize=True),
        dict(weight_decay=0, momentum=0.8, centered=False, maximize=False),
    ),
    ("Adagrad", {}, {}),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01), dict(lr_decay=0, maximize=True)),
    (
        "Adagrad",
        dict(lr=0.05, initial_accumulator_value=0.1, eps=1e-6, weight_decay=0.1),
        dict(weight_decay=0),
    ),
    (
        "Adagrad",
        dict(lr=0.05, lr_decay=0.1, weight_decay=0.05, maximize=True),
        dict(lr=0.01, maximize=False),
    ),
    ("Adadelta", {}, {}),
    ("Adadelta", dict(lr=0.5, rho=0.5), dict(rho=0.95, maximize=True)),
    (
        "Adadelta",
        dict(rho=0.0, eps=1e-4, weight_decay=0.1, maximize=True),
        dict(weight_decay=0, lr=2.0, rho=1.0),
    ),
    ("Adamax", {}, {}),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.99)), dict(betas=(0.3, 0.9), maximize=True)),
    ("Adamax", dict(lr=0.005, eps=1e-4, weight_decay=0.1, maximize=True), dict(weight_decay=0)),
    ("NAdam", {}, {}),
    ("NAdam", dict(lr=0.01, momentum_decay=0.01), dict(momentum_decay=0, maximize=True)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1), dict(decoupled_weight_decay=True)),
    (
        "NAdam",
        dict(
            lr=0.005,
            betas=(0.8, 0.95),
            eps=1e-6,
            weight_decay=0.05,
            decoupled_weight_decay=True,
            maximize=True,
        ),
        dict(weight_decay=0, lr=0.02),
    ),
    ("RAdam", {}, {}),  # rho_t passes 5 at step 6: both branches
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9)), dict(betas=(0.5, 0.99), maximize=True)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1), dict(decoupled_weight_decay=True)),
    (
        "RAdam",
        dict(lr=0.005, eps=1e-6, weight_decay=0.05, decoupled_weight_decay=True, maximize=True),
        dict(weight_decay=0),
    ),
]


def _mg_parameter(value, requires_grad):
    p = nn.Parameter(np.array(value))
    p.requires_grad_(requires_grad)
    return p


def _torch_parameter(value, requires_grad):
    return torch.tensor(value, requires_grad=requires_grad)


def _start_and_gradients(dtype, steps=STEPS):
    """Starting values of three trained parameters and a frozen one, and their gradients at each
    step: parameter 1 has none every third step (skipped), the frozen one never has one."""
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES + [(2,)]]
    grads = [
        [rng.standard_normal(shape).astype(dtype) for shape in SHAPES] + [None]
        for _ in range(steps)
    ]
    for step in range(0, steps, 3):
        grads[step][1] = None
    return start, grads


def _groups(params, second_group):
    """One group of every parameter, or (second_group not None) two: the second with its own
    settings."""
    if second_group is None:
        return params
    return [{"params": params[:2]}, {"params": params[2:], **second_group}]


def _make_parameters(make_parameter, start):
    return [
        make_parameter(value, requires_grad=index < len(SHAPES))
        for index, value in enumerate(start)
    ]


def _train(optimizer, params, grads, as_tensor, schedule=None):
    """The parameters' values after each step (and each schedule step, if one is given)."""
    history = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else as_tensor(g)
        optimizer.step()
        if schedule is not None:
            schedule.step()
        history.append(
            [
                np.array(p.detach().numpy() if isinstance(p, torch.Tensor) else p.numpy())
                for p in params
            ]
        )
    return history


def _run_minigrad(name, settings, second_group, start, grads, make_schedule=None):
    params = _make_parameters(_mg_parameter, start)
    optimizer = getattr(mg.optim, name)(_groups(params, second_group), **settings)
    schedule = None if make_schedule is None else make_schedule(mg.optim.lr_scheduler, optimizer)
    return _train(optimizer, params, grads, mg.tensor, schedule)


@contextlib.contextmanager
def _torch_default_dtype(dtype):
    """torch keeps NAdam's mu_product (and every step count) as a tensor of its default dtype:
    float64 parameters are compared with torch set to float64, as a float64 user of torch sets it
    (with float32 there, torch's float64 NAdam steps differ from these by ~1e-10 relative)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64 if dtype == np.float64 else torch.float32)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def _run_torch(name, settings, second_group, start, grads, make_schedule=None):
    params = _make_parameters(_torch_parameter, start)
    with _torch_default_dtype(start[0].dtype):
        optimizer = getattr(torch.optim, name)(_groups(params, second_group), **settings)
        schedule = (
            None if make_schedule is None else make_schedule(torch.optim.lr_scheduler, optimizer)
        )
        return _train(optimizer, params, grads, torch.tensor, schedule)


def _case_id(case):
    name, settings, second_group = case
    return f"{name}({', '.join(f'{k}={v}' for k, v in settings.items())}; then {second_group})"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("grouping", ["one group", "two groups"])
def test_each_step_matches_torch(case, grouping, dtype):
    name, settings, second_group = case
    second_group = second_group if grouping == "two groups" else None
    start, grads = _start_and_gradients(dtype)
    ours = _run_minigrad(name, settings, second_group, start, grads)
    theirs = _run_torch(name, settings, second_group, start, grads)
    assert_same_steps(ours, theirs, tolerance("adaptive optimizers", dtype), dtype)
    frozen = len(SHAPES)
    np.testing.assert_array_equal(ours[-1][frozen], start[frozen])


# one setting per optimizer that keeps every state entry it has
STATEFUL = [
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True), dict(lr=0.003, weight_decay=0.1)),
    (
        "Adagrad",
        dict(lr=0.05, lr_decay=0.01, initial_accumulator_value=0.2),
        dict(lr=0.02, maximize=True),
    ),
    ("Adadelta", dict(rho=0.8, weight_decay=0.01), dict(lr=0.5, maximize=True)),
    ("Adamax", dict(lr=0.01, weight_decay=0.01), dict(betas=(0.8, 0.99))),
    (
        "NAdam",
        dict(lr=0.01, momentum_decay=0.01, weight_decay=0.1, decoupled_weight_decay=True),
        dict(lr=0.02, maximize=True),
    ),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9)), dict(weight_decay=0.1, maximize=True)),
]
NAMES = [name for name, _, _ in STATEFUL]


@pytest.mark.parametrize("case", STATEFUL, ids=_case_id)
def test_state_per_parameter_matches_torchs(case):
    """opt.state[p] holds torch's entries: the step count, then each buffer or number."""
    name, settings, second_group = case
    start, grads = _start_and_gradients(np.float64, steps=5)
    ours_params, their_params = (
        _make_parameters(_mg_parameter, start),
        _make_parameters(_torch_parameter, start),
    )
    ours = getattr(mg.optim, name)(_groups(ours_params, second_group), **settings)
    _train(ours, ours_params, grads, mg.tensor)
    with _torch_default_dtype(np.float64):
        theirs = getattr(torch.optim, name)(_groups(their_params, second_group), **settings)
        _train(theirs, their_params, grads, torch.tensor)
    for p, q in zip(ours_params, their_params):
        assert list(ours.state[p]) == list(theirs.state[q])
        for key, value in ours.state[p].items():
            np.testing.assert_allclose(
                value, theirs.state[q][key].numpy(), rtol=1e-12, atol=1e-15, err_msg=key
            )


@pytest.mark.parametrize("grouping", ["one group", "two groups"])
@pytest.mark.parametrize("case", STATEFUL, ids=_case_id)
def test_state_dict_through_a_file_resumes_as_torch_does_uninterrupted(case, grouping, tmp_path):
    name, settings, second_group = case
    second_group = second_group if grouping == "two groups" else None
    start, grads = _start_and_gradients(np.float64)
    params = _make_parameters(_mg_parameter, start)
    before = getattr(mg.optim, name)(_groups(params, second_group), **settings)
    history = _train(before, params, grads[:10], mg.tensor)
    mg.save(before.state_dict(), tmp_path / "optimizer.npz")
    del before
    # lr comes back from the file
    after = getattr(mg.optim, name)(_groups(params, second_group), lr=0.5)
    after.load_state_dict(mg.load(tmp_path / "optimizer.npz"))
    history += _train(after, params, grads[10:], mg.tensor)
    assert_same_steps(
        history,
        _run_torch(name, settings, second_group, start, grads),
        tolerance("adaptive optimizers", np.float64),
        np.float64,
    )


SCHEDULES = {
    "StepLR": lambda schedulers, optimizer: schedulers.StepLR(optimizer, step_size=4, gamma=0.5),
    "OneCycleLR": lambda schedulers, optimizer: schedulers.OneCycleLR(
        optimizer, max_lr=0.05, total_steps=STEPS
    ),
    "OneCycleLR, rate only": lambda schedulers, optimizer: schedulers.OneCycleLR(
        optimizer, max_lr=0.05, total_steps=STEPS, cycle_momentum=False
    ),
}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("case", STATEFUL, ids=_case_id)
def test_schedules_step_them_as_torchs(case, schedule):
    """OneCycleLR cycles momentum (RMSprop) or beta1 (Adamax, NAdam, RAdam); an optimizer with
    neither refuses it unless cycle_momentum=False, in both libraries."""
    name, settings, second_group = case
    start, grads = _start_and_gradients(np.float64)
    make_schedule = SCHEDULES[schedule]
    try:
        theirs = _run_torch(name, settings, second_group, start, grads, make_schedule)
    except ValueError as their_error:
        assert "momentum" in str(their_error)
        with pytest.raises(ValueError, match="momentum"):
            _run_minigrad(name, settings, second_group, start, grads, make_schedule)
        return
    assert_same_steps(
        _run_minigrad(name, settings, second_group, start, grads, make_schedule),
        theirs,
        tolerance("adaptive optimizers", np.float64),
        np.float64,
    )


@pytest.mark.parametrize("name", NAMES)
def test_arguments_are_torchs_in_torchs_order_with_its_defaults(name):
    import inspect

    ours = inspect.signature(getattr(mg.optim, name)).parameters
    theirs = inspect.signature(getattr(torch.optim, name)).parameters
    assert [(p.name, p.kind, p.default) for p in ours.values()] == [
        (p.name, p.kind, p.default) for p in theirs.values()
    ]


# the flags torch's optimizer takes for how it runs on its devices: accepted, changing nothing
DEVICE_FLAGS = {
    "RMSprop": ("capturable", "foreach"),
    "Adagrad": ("foreach", "fused"),
    "Adadelta": ("foreach", "capturable"),
    "Adamax": ("foreach", "capturable"),
    "NAdam": ("foreach", "capturable"),
    "RAdam": ("foreach", "capturable"),
}


@pytest.mark.parametrize("name", NAMES)
def test_device_flags_are_accepted_and_differentiable_refused_by_name(name):
    start, grads = _start_and_gradients(np.float64, steps=3)
    flags = {flag: True for flag in DEVICE_FLAGS[name]}
    assert set(flags) <= set(__import__("inspect").signature(getattr(torch.optim, name)).parameters)
    assert_same_steps(
        _run_minigrad(name, flags, None, start, grads),
        _run_minigrad(name, {}, None, start, grads),
        tolerance("adaptive optimizers", np.float64),
        np.float64,
    )
    with pytest.raises(ValueError, match=f"{name}: differentiable=True .* is not supported"):
        getattr(mg.optim, name)([nn.Parameter(np.ones(2))], differentiable=True)


# (optimizer, a bad setting, the word torch's message names it by; ours names the argument)
BAD_SETTINGS = [
    ("RMSprop", dict(lr=-0.1), "learning rate"),
    ("RMSprop", dict(lr=float("nan")), "learning rate"),
    ("RMSprop", dict(lr="0.1"), "'<='"),
    ("RMSprop", dict(alpha=-0.5), "alpha"),
    ("RMSprop", dict(eps=-1e-8), "epsilon"),
    ("RMSprop", dict(weight_decay=-1), "weight_decay"),
    ("RMSprop", dict(momentum=-0.9), "momentum"),
    ("Adagrad", dict(lr=-1e-2), "learning rate"),
    ("Adagrad", dict(lr_decay=-0.1), "lr_decay"),
    ("Adagrad", dict(weight_decay=-0.1), "weight_decay"),
    ("Adagrad", dict(initial_accumulator_value=-0.1), "initial_accumulator_value"),
    ("Adagrad", dict(eps=float("nan")), "epsilon"),
    ("Adadelta", dict(lr=-1.0), "learning rate"),
    ("Adadelta", dict(rho=1.5), "rho"),
    ("Adadelta", dict(rho=-0.1), "rho"),
    ("Adadelta", dict(eps=-1e-6), "epsilon"),
    ("Adadelta", dict(weight_decay=-1e-2), "weight_decay"),
    ("Adamax", dict(lr=-2e-3), "learning rate"),
    ("Adamax", dict(betas=(0.9, 1.0)), "beta parameter at index 1"),
    ("Adamax", dict(betas=(-0.1, 0.9)), "beta parameter at index 0"),
    ("Adamax", dict(eps=-1.0), "epsilon"),
    ("Adamax", dict(weight_decay=-0.1), "weight_decay"),
    ("NAdam", dict(lr=float("nan")), "learning rate"),
    ("NAdam", dict(betas=(1.0, 0.999)), "beta parameter at index 0"),
    ("NAdam", dict(momentum_decay=-4e-3), "momentum_decay"),
    ("NAdam", dict(weight_decay=-0.1), "weight_decay"),
    ("RAdam", dict(lr=-1e-3), "learning rate"),
    ("RAdam", dict(betas=(0.9, 1.5)), "beta parameter at index 1"),
    ("RAdam", dict(eps=-1e-8), "epsilon"),
    ("RAdam", dict(weight_decay=-0.1), "weight_decay"),
]


def _argument_named(setting):
    """How our message names the bad entry: the argument, or the wrong beta of the pair."""
    ((key, value),) = setting.items()
    if key == "betas":
        return f"betas[{next(i for i, beta in enumerate(value) if not 0 <= beta < 1)}]"
    return key


@pytest.mark.parametrize("name, setting, torch_word", BAD_SETTINGS)
def test_bad_hyper_parameters_raise_as_torchs(name, setting, torch_word):
    with pytest.raises(Exception) as theirs:
        getattr(torch.optim, name)([torch.ones(2, requires_grad=True)], **setting)
    assert torch_word in str(theirs.value)
    with pytest.raises(type(theirs.value)) as ours:
        getattr(mg.optim, name)([nn.Parameter(np.ones(2))], **setting)
    assert type(ours.value) is type(theirs.value)
    assert f"{_argument_named(setting)} must be" in str(ours.value)


def _snapshot(state):
    return {
        index: {key: np.array(value).tolist() for key, value in entries.items()}
        for index, entries in state.items()
    }


@pytest.mark.parametrize(
    "name, setting, torch_word", [row for row in BAD_SETTINGS if row[1] != dict(lr="0.1")]
)
def test_a_bad_value_put_into_a_group_is_refused_at_step_before_anything_changes(
    name, setting, torch_word
):
    p = nn.Parameter(np.ones(2))
    optimizer = getattr(mg.optim, name)([p])
    optimizer.param_groups[0].update(setting)
    state_before = _snapshot(optimizer.state)  # empty, or Adagrad's step 0
    p.grad = mg.tensor(np.ones(2))
    with pytest.raises(ValueError, match=rf"param_groups\[0\]\['{list(setting)[0]}'\]"):
        optimizer.step()
    np.testing.assert_array_equal(p.numpy(), np.ones(2))
    assert _snapshot(optimizer.state) == state_before


def test_adagrad_state_exists_before_the_first_step_as_torchs(tmp_path):
    """torch's Adagrad makes every parameter's state (step 0, sum full of
    initial_accumulator_value) when it is built; a state dict saved then loads and goes on."""
    start, grads = _start_and_gradients(np.float64, steps=4)
    ours_params, their_params = (
        _make_parameters(_mg_parameter, start),
        _make_parameters(_torch_parameter, start),
    )
    ours = mg.optim.Adagrad(ours_params, lr=0.1, initial_accumulator_value=0.3)
    theirs = torch.optim.Adagrad(their_params, lr=0.1, initial_accumulator_value=0.3)
    for p, q in zip(ours_params, their_params):
        assert list(ours.state[p]) == list(theirs.state[q])
        for key, value in ours.state[p].items():
            np.testing.assert_array_equal(value, theirs.state[q][key].numpy(), err_msg=key)
    mg.save(ours.state_dict(), tmp_path / "adagrad.npz")
    fresh = mg.optim.Adagrad(ours_params, lr=0.1)
    fresh.load_state_dict(mg.load(tmp_path / "adagrad.npz"))
    assert_same_steps(
        _train(fresh, ours_params, grads, mg.tensor),
        _train(theirs, their_params, grads, torch.tensor),
        tolerance("adaptive optimizers", np.float64),
        np.float64,
    )


def test_adagrad_fills_each_groups_sum_with_that_groups_initial_accumulator_value():
    """torch fills every group's with the constructor's value; a group's own setting is used
    here."""
    first, second, added = (nn.Parameter(np.ones(2)) for _ in range(3))
    optimizer = mg.optim.Adagrad(
        [{"params": [first]}, {"params": [second], "initial_accumulator_value": 0.5}],
        initial_accumulator_value=0.1,
    )
    optimizer.add_param_group({"params": [added], "initial_accumulator_value": 2.0})
    for p, value in [(first, 0.1), (second, 0.5), (added, 2.0)]:
        np.testing.assert_array_equal(optimizer.state[p]["sum"], np.full(2, value))
        assert optimizer.state[p]["step"] == 0


@pytest.mark.parametrize("case", STATEFUL, ids=_case_id)
def test_a_transposed_parameter_is_updated_in_its_own_memory_as_torchs(case):
    name, settings, _ = case
    rng = np.random.default_rng(4)
    start, grads = rng.standard_normal((4, 3)), [rng.standard_normal((3, 4)) for _ in range(6)]
    p = nn.Parameter(np.zeros((3, 4)))
    p.data = start.copy().T
    array = p.numpy()
    optimizer = getattr(mg.optim, name)([p], **settings)
    q = torch.nn.Parameter(torch.tensor(start).t())
    with _torch_default_dtype(np.float64):
        reference = getattr(torch.optim, name)([q], **settings)
        for g in grads:
            p.grad, q.grad = mg.tensor(g), torch.tensor(g)
            optimizer.step()
            reference.step()
            assert_close(p, q, "adaptive optimizers")
    assert p.numpy() is array and not array.flags.c_contiguous


@pytest.mark.parametrize("name", NAMES)
def test_a_step_refuses_a_gradient_of_another_shape_and_bumps_each_updated_parameters_version(
    name, monkeypatch
):
    bumped = []
    monkeypatch.setattr(
        nn.Parameter, "_bump_version", lambda self: bumped.append(self), raising=False
    )
    stepped, skipped = nn.Parameter(np.ones(3)), nn.Parameter(np.ones(2))
    optimizer = getattr(mg.optim, name)([stepped, skipped])
    stepped.grad = mg.tensor(np.ones(4))
    state_before = _snapshot(optimizer.state)
    with pytest.raises(
        ValueError, match=rf"{name}: parameter 0 has shape \(3,\) but its grad has shape \(4,\)"
    ):
        optimizer.step()
    np.testing.assert_array_equal(stepped.numpy(), np.ones(3))
    assert _snapshot(optimizer.state) == state_before and bumped == []
    stepped.grad = mg.tensor(np.ones(3))
    optimizer.step()
    assert bumped == [stepped]


# (optimizer, state entry, a bad value or a function of the saved one, what the message says)
BAD_STATE = [
    (
        "RMSprop",
        "square_avg",
        lambda value: value - 1,
        "holds averages of squared gradients, which are >= 0",
    ),
    ("RMSprop", "momentum_buffer", np.zeros(5), r"must be a float array of shape \(3,\)"),
    ("RMSprop", "step", np.array(0), "must be an integer >= 1; got 0"),
    ("Adagrad", "step", np.array(-1), "must be an integer >= 0; got array.-1"),
    ("Adagrad", "step", np.array(1.5), "must be an integer >= 0"),
    (
        "Adagrad",
        "sum",
        lambda value: value * np.nan,
        r"holds sums of squared gradients, which are >= 0; got nan",
    ),
    (
        "Adadelta",
        "acc_delta",
        lambda value: -value - 1,
        r"holds averages of squared steps, which are >= 0; got -1",
    ),
    (
        "Adamax",
        "exp_inf",
        lambda value: -value - 1,
        r"holds decayed largest gradient magnitudes, which are >= 0",
    ),
    ("NAdam", "mu_product", np.array(1.5), r"is a product of momenta in \(0, 1\]; got 1.5"),
    ("NAdam", "mu_product", np.array(0.0), r"is a product of momenta in \(0, 1\]; got 0.0"),
    ("RAdam", "exp_avg", np.zeros((3, 1)), r"must be a float array of shape \(3,\)"),
]


@pytest.mark.parametrize("name, entry, bad, message", BAD_STATE)
def test_load_state_dict_refuses_a_bad_state_entry_naming_it_and_changes_nothing(
    name, entry, bad, message, tmp_path
):
    settings = dict(next(settings for optimizer, settings, _ in STATEFUL if optimizer == name))
    p = nn.Parameter(np.ones(3))
    optimizer = getattr(mg.optim, name)([p], **settings)
    p.grad = mg.tensor(np.full(3, 0.5))
    optimizer.step()
    saved = flat_state_dict(optimizer)
    key = f"state.0.{entry}"
    saved[key] = bad(saved[key]) if callable(bad) else bad
    mg.save(saved, tmp_path / "optimizer.npz")
    state_before = _snapshot(optimizer.state)
    with pytest.raises(ValueError, match=rf"{name}.load_state_dict failed: {key} {message}"):
        optimizer.load_state_dict(mg.load(tmp_path / "optimizer.npz"))
    assert _snapshot(optimizer.state) == state_before
