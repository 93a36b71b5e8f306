"""Creation (minigrad/creation.py): what torch refuses to make, minigrad refuses with an exception
the same `except` catches and a message of its own (not numpy's or Python's)."""

import pytest

import minigrad as mg
from parity import raises_like_torch

torch = pytest.importorskip("torch")


def test_linspace_refuses_bool_as_torch_does():
    raises_like_torch(
        lambda: mg.linspace(0, 1, 5, dtype=mg.bool),
        lambda: torch.linspace(0, 1, 5, dtype=torch.bool),
        must_mention=["bool"],
    )


def test_arange_to_infinity_gets_minigrads_own_message():
    error = raises_like_torch(
        lambda: mg.arange(0, float("inf")),
        lambda: torch.arange(0, float("inf")),
        must_mention=["finite", "inf"],
    )
    assert type(error).__module__ in ("builtins", "minigrad.errors")
