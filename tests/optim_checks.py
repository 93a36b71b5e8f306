"""What the optimizer tests of tests/optim/ share: the parameter shapes, torch itself (skipping
without it) and a trajectory of gradients (the tolerances of a comparison with torch:
parity.TOLERANCES["optimizer steps"] and ["adaptive optimizers"])."""

import numpy as np
import pytest

SHAPES = [(3, 4), (4,), ()]


def torch_or_skip():
    return pytest.importorskip("torch")


def trajectory(dtype, steps=5):
    """Starting values and per-step gradients; parameter 1 has no gradient at step 2 (skipped)."""
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(shape).astype(dtype) for shape in SHAPES]
    grads = [[rng.standard_normal(shape).astype(dtype) for shape in SHAPES] for _ in range(steps)]
    grads[2][1] = None
    return start, grads


def flat_state_dict(optimizer):
    """optimizer.state_dict() (torch's layout) by the names load_state_dict checks and reports,
    which it also takes (the flat form minigrad saved before): 'lr' (or 'param_groups.<g>.lr'
    with several groups), 'param_groups.<g>.params' (the count), 'state.<index>.<name>'."""
    saved = optimizer.state_dict()
    groups, flat = saved["param_groups"], {}
    for g, group in enumerate(groups):
        for key, value in group.items():
            if key == "params":
                flat[f"param_groups.{g}.params"] = len(value)
            else:
                flat[key if len(groups) == 1 else f"param_groups.{g}.{key}"] = value
    for index, entries in saved["state"].items():
        for key, value in entries.items():
            flat[f"state.{index}.{key}"] = value
    return flat
