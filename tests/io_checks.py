"""What the checkpoint tests of tests/io/ share: torch_round_trip(value), what torch.load gives back
of torch.save(value), the reference of the values mg.load gives back; assert_same_value(ours,
theirs), equal and of the same type all the way down.

torch is imported inside torch_round_trip: a test that does not compare with torch can import
this module on a machine without torch.
"""

import io
import math
import sys

import numpy as np

import parity


def torch_round_trip(value):
    """What torch.load gives back of torch.save(value) (the reference)."""
    import torch

    buffer = io.BytesIO()
    torch.save(value, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def assert_same_value(ours, theirs, where="value"):
    """Equal, and of the same type all the way down (a Checkpoint counts as a dict; a torch
    tensor compares with an array; -0.0 is not 0.0; NaN matches NaN)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{where}: {type(ours).__name__}, expected a dict"
        assert list(ours) == list(theirs), f"{where}: keys {list(ours)} != {list(theirs)}"
        for key in theirs:
            assert_same_value(ours[key], theirs[key], f"{where}[{key!r}]")
        return
    torch = sys.modules.get("torch")  # only a test that has torch can be given its tensors
    if torch is not None and isinstance(theirs, torch.Tensor):
        assert isinstance(ours, np.ndarray), f"{where}: {type(ours).__name__}, expected an array"
        parity.assert_close(ours, theirs, 0, where, same_dtype=True)
        return
    assert type(ours) is type(theirs), f"{where}: {type(ours).__name__} != {type(theirs).__name__}"
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), f"{where}: length {len(ours)} != {len(theirs)}"
        for index, (mine, reference) in enumerate(zip(ours, theirs)):
            assert_same_value(mine, reference, f"{where}[{index}]")
    elif isinstance(theirs, (float, complex)):
        for mine, reference in ((ours.real, theirs.real), (ours.imag, theirs.imag)):
            assert (math.isnan(mine) and math.isnan(reference)) or (
                mine == reference and math.copysign(1, mine) == math.copysign(1, reference)
            ), f"{where}: {ours!r} != {theirs!r}"
    else:
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"
