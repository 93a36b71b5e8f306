"""The learning-rate schedules (minigrad/optim/lr_scheduler.py: LambdaLR, warmup_cosine ...)
against torch step by step, by hand, their argument errors, their state resumed through a
checkpoint, and bad state dicts named.
"""

import math
import warnings

import numpy as np
import pytest

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
import minigrad.optim  # noqa: F401  (mg.optim)
from minigrad import nn
from optim_checks import torch_or_skip, trajectory


def test_lambda_lr_matches_torch_step_by_step():
    torch = torch_or_skip()
    factor = lambda epoch: 0.8**epoch * (1 + epoch % 3)  # noqa: E731  (not monotone, on purpose)
    start, grads = trajectory(np.float64, steps=8)
    params = [nn.Parameter(np.array(value)) for value in start]
    optimizer = mg.optim.SGD(params, lr=0.1, momentum=0.9)
    schedule = mg.optim.lr_scheduler.LambdaLR(optimizer, factor)
    torch_params = [torch.tensor(value, requires_grad=True) for value in start]
    torch_optimizer = torch.optim.SGD(torch_params, lr=0.1, momentum=0.9)
    torch_schedule = torch.optim.lr_scheduler.LambdaLR(torch_optimizer, factor)
    for step, step_grads in enumerate(grads):
        assert optimizer.lr == pytest.approx(torch_optimizer.param_groups[0]["lr"], rel=1e-15)
        assert schedule.get_last_lr() == pytest.approx(torch_schedule.get_last_lr(), rel=1e-15)
        for p, q, g in zip(params, torch_params, step_grads):
            p.grad, q.grad = (None, None) if g is None else (mg.tensor(g), torch.tensor(g))
        optimizer.step()
        torch_optimizer.step()
        schedule.step()
        torch_schedule.step()
        for p, q in zip(params, torch_params):
            np.testing.assert_allclose(
                p.numpy(), q.detach().numpy(), rtol=1e-12, atol=1e-12, err_msg=f"step {step}"
            )
    assert schedule.last_epoch == torch_schedule.last_epoch == len(grads)


@pytest.mark.parametrize(
    "warmup_steps, total_steps, min_ratio", [(4, 15, 0.0), (3, 12, 0.1), (0, 6, 0.05)]
)
def test_adamw_with_warmup_cosine_matches_torch_linear_then_cosine(
    warmup_steps, total_steps, min_ratio
):
    """torch has no warmup_cosine, but LinearLR (start 1/warmup, reaching 1 on the last warm-up
    step) followed by CosineAnnealingLR (T_max = the decay steps, eta_min = min_ratio * lr) is the
    same schedule, computed another way."""
    torch = torch_or_skip()
    base_lr = 0.02
    start, grads = trajectory(np.float64, steps=total_steps + 2)
    params = [nn.Parameter(np.array(value)) for value in start]
    optimizer = mg.optim.AdamW(params, lr=base_lr, weight_decay=0.1)
    schedule = mg.optim.lr_scheduler.LambdaLR(
        optimizer, mg.optim.lr_scheduler.warmup_cosine(warmup_steps, total_steps, min_ratio)
    )
    torch_params = [torch.tensor(value, requires_grad=True) for value in start]
    torch_optimizer = torch.optim.AdamW(torch_params, lr=base_lr, weight_decay=0.1)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(
        torch_optimizer, T_max=total_steps - warmup_steps, eta_min=min_ratio * base_lr
    )
    if warmup_steps:
        linear = torch.optim.lr_scheduler.LinearLR(
            torch_optimizer, start_factor=1 / warmup_steps, total_iters=warmup_steps - 1
        )
        torch_schedule = torch.optim.lr_scheduler.SequentialLR(
            torch_optimizer, [linear, cosine], [warmup_steps]
        )
    else:
        torch_schedule = cosine
    # torch's cosine turns back up after T_max
    for step, step_grads in enumerate(grads[:total_steps]):
        assert optimizer.lr == pytest.approx(
            torch_optimizer.param_groups[0]["lr"], rel=1e-13, abs=1e-16
        )
        for p, q, g in zip(params, torch_params, step_grads):
            p.grad, q.grad = (None, None) if g is None else (mg.tensor(g), torch.tensor(g))
        optimizer.step()
        torch_optimizer.step()
        schedule.step()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SequentialLR's deprecation notes
            torch_schedule.step()
        for p, q in zip(params, torch_params):
            np.testing.assert_allclose(
                p.numpy(), q.detach().numpy(), rtol=1e-12, atol=1e-12, err_msg=f"step {step}"
            )
    assert optimizer.lr == pytest.approx(min_ratio * base_lr, abs=1e-16)
    schedule.step()
    assert optimizer.lr == pytest.approx(min_ratio * base_lr, abs=1e-16)  # and it stays there


def test_warmup_cosine_by_hand_and_its_argument_errors():
    factor = mg.optim.lr_scheduler.warmup_cosine(2, 6)
    expected = [
        0.5,
        1.0,
        1.0,
        (1 + math.cos(math.pi / 4)) / 2,
        0.5,
        (1 + math.cos(3 * math.pi / 4)) / 2,
        0.0,
        0.0,
    ]
    np.testing.assert_allclose(
        [factor(step) for step in range(8)], expected, rtol=1e-15, atol=1e-16
    )
    assert factor(10**6) == 0.0
    assert mg.optim.lr_scheduler.warmup_cosine(2, 6, min_ratio=0.1)(4) == pytest.approx(
        0.1 + 0.9 * 0.5, rel=1e-15
    )
    warmup_cosine = mg.optim.lr_scheduler.warmup_cosine
    with pytest.raises(ValueError, match="warmup_steps must be <= total_steps; got 7 > 6"):
        warmup_cosine(7, 6)
    with pytest.raises(ValueError, match="total_steps must be an integer >= 1; got 0"):
        warmup_cosine(0, 0)
    with pytest.raises(ValueError, match=r"warmup_steps must be an integer >= 0; got 2.5"):
        warmup_cosine(2.5, 6)
    with pytest.raises(ValueError, match=r"min_ratio must be in \[0, 1\]; got 1.5"):
        warmup_cosine(2, 6, min_ratio=1.5)


def test_lambda_lr_refuses_a_bad_factor_and_a_bad_optimizer():
    p = nn.Parameter(np.ones(2))
    optimizer = mg.optim.SGD([p], lr=0.1)
    with pytest.raises(
        ValueError, match=r"lr_lambda\(0\) must return a finite number >= 0; got -1"
    ):
        mg.optim.lr_scheduler.LambdaLR(optimizer, lambda step: -1)
    schedule = mg.optim.lr_scheduler.LambdaLR(optimizer, lambda step: [1.0, math.inf][step])
    with pytest.raises(ValueError, match=r"lr_lambda\(1\) .*got inf"):
        schedule.step()
    assert (schedule.last_epoch, optimizer.lr) == (0, 0.1)  # the failed step changed nothing
    with pytest.raises(TypeError, match="expects an mg.optim optimizer"):
        mg.optim.lr_scheduler.LambdaLR("adam", lambda step: 1.0)
    with pytest.raises(TypeError, match="lr_lambda to be a function"):
        mg.optim.lr_scheduler.LambdaLR(optimizer, 0.5)


def _training_run(params, stop_after=None, resume_from=None):
    """AdamW + warm-up/cosine over fixed gradients; optionally checkpoint or resume with mg.save."""
    optimizer = mg.optim.AdamW(params, lr=0.05)
    schedule = mg.optim.lr_scheduler.LambdaLR(
        optimizer, mg.optim.lr_scheduler.warmup_cosine(3, 10, 0.1)
    )
    first = 0
    if resume_from is not None:
        loaded = mg.io.load(resume_from)
        optimizer.load_state_dict(loaded["optim"])
        schedule.load_state_dict(loaded["schedule"])
        first = int(loaded["step"])
    rates = []
    for step in range(first, 10):
        if step == stop_after:
            return {
                "optim": optimizer.state_dict(),
                "schedule": schedule.state_dict(),
                "step": step,
            }
        for index, p in enumerate(params):
            p.grad = mg.tensor(np.sin(np.arange(p.numpy().size).reshape(p.shape) + step + index))
        rates.append(optimizer.lr)
        optimizer.step()
        schedule.step()
    return rates


def test_optimizer_and_schedule_state_resume_through_a_checkpoint(tmp_path):
    shapes = [(3, 4), (4,)]
    straight = [nn.Parameter(np.ones(shape)) for shape in shapes]
    rates = _training_run(straight)
    interrupted = [nn.Parameter(np.ones(shape)) for shape in shapes]
    checkpoint = _training_run(interrupted, stop_after=6)
    mg.io.save(
        {"model": {str(i): p for i, p in enumerate(interrupted)}, **checkpoint},
        tmp_path / "ckpt.npz",
    )
    resumed = [nn.Parameter(mg.io.load(tmp_path / "ckpt.npz")[f"model.{i}"]) for i in range(2)]
    later_rates = _training_run(resumed, resume_from=tmp_path / "ckpt.npz")
    assert later_rates == rates[6:]
    for p, q in zip(straight, resumed):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_schedule_load_state_dict_names_the_wrong_entry():
    optimizer = mg.optim.SGD([nn.Parameter(np.ones(2))], lr=0.1)
    schedule = mg.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    good = {key: np.asarray(value) for key, value in schedule.state_dict().items()}
    assert list(good) == ["base_lr", "last_epoch", "last_lr"]
    for key, bad, message in [
        ("last_epoch", np.array(-1), "last_epoch must be an integer >= 0; got -1"),
        ("last_epoch", np.array(2.5), "last_epoch must be an integer >= 0; got 2.5"),
        ("base_lr", np.array(-0.1), r"base_lr must be in \[0, inf\); got -0.1"),
        ("last_lr", np.array(np.nan), "last_lr must be in"),
    ]:
        with pytest.raises(ValueError, match=message):
            schedule.load_state_dict({**good, key: bad})
    with pytest.raises(ValueError, match="missing key 'last_lr'; unexpected key 'lr'"):
        schedule.load_state_dict({"base_lr": 0.1, "last_epoch": 3, "lr": 0.1})
    assert schedule.state_dict() == {"base_lr": 0.1, "last_epoch": 0, "last_lr": 0.1}


@pytest.mark.parametrize("last_epoch", [0, 5, -2, 1.0, True])
def test_schedulers_take_torch_last_epoch_only_for_a_fresh_start(last_epoch):
    p = nn.Parameter(np.ones(2, np.float32))
    optimizer = mg.optim.SGD([p], lr=0.1)
    assert mg.optim.lr_scheduler.StepLR(optimizer, 2, last_epoch=-1).last_epoch == 0
    with pytest.raises(ValueError, match="last_epoch must be -1.*load_state_dict"):
        mg.optim.lr_scheduler.StepLR(optimizer, 2, last_epoch=last_epoch)
