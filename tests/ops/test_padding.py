"""F.pad (minigrad/ops/padding.py) in its four modes against torch: values and gradients, negative
widths that crop, the widths and modes torch refuses. The padding layers built on it are in
tests/nn/test_padding.py; pad's cases of the nn.functional sweep in tests/nn/test_functional.py.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.nn import functional as F
from parity import assert_runs_match, raises_like_torch, run_both

torch = pytest.importorskip("torch")
FUNCTIONAL = (F, torch.nn.functional)  # what each side's call gets


def test_pad_counts_from_the_last_dim_and_fills_with_value():
    x = mg.tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(
        F.pad(x, (1, 0, 0, 1), value=-1).numpy(), [[-1, 0, 1, 2], [-1, 3, 4, 5], [-1, -1, -1, -1]]
    )
    np.testing.assert_array_equal(F.pad(x, (-1, -1)).numpy(), [[1], [4]])
    assert F.pad(x, ()).shape == (2, 3)
    integers = F.pad(mg.tensor([[1, 2]]), (1, 1), value=2.5)
    assert integers.dtype == np.int64 and integers.tolist() == [[2, 1, 2, 2]]  # torch truncates too
    np.testing.assert_array_equal(F.pad(x, (2, 1), mode="reflect").numpy()[0], [2, 1, 0, 1, 2, 1])
    np.testing.assert_array_equal(F.pad(x, (2, 1), mode="replicate").numpy()[0], [0, 0, 0, 1, 2, 2])
    np.testing.assert_array_equal(F.pad(x, (2, 1), mode="circular").numpy()[0], [1, 2, 0, 1, 2, 0])


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    "shape, pad",
    [
        ((1, 2, 12), (-2, 3)),
        ((1, 2, 12), (3, -2)),
        ((1, 2, 12), (-1, -1)),
        ((1, 2, 4, 6), (1, -2, -1, 2)),
        ((2, 3, 5, 6), (-1, 3, 1, 3)),
        ((2, 3, 5, 6), (2, -1, -2, 0)),
    ],
)
def test_negative_padding_crops_in_every_mode(mode, shape, pad):
    x = np.random.default_rng(1).standard_normal(shape)
    ours, theirs = run_both(
        lambda side, leaf: side.pad(leaf, pad, mode=mode), [x], sides=FUNCTIONAL, seed=2
    )
    assert_runs_match(ours, theirs)


@pytest.mark.parametrize(
    "pad, mode, kwargs, error",
    [
        ((1,), "constant", {}, ValueError),  # odd length
        ((1, 1, 1, 1, 1, 1), "constant", {}, ValueError),  # more dims than the input has
        ((1.5, 1), "constant", {}, TypeError),  # not ints
        ((-2, -2), "constant", {}, ValueError),  # crops below nothing
        ((3, 1), "reflect", {}, ValueError),  # reflect needs pad < size
        ((4, 0), "circular", {}, ValueError),  # circular wraps at most once
        ((1, 1), "reflect", {"value": 1.0}, ValueError),  # only constant takes a value
        ((1, 1), "mirror", {}, (ValueError, NotImplementedError)),  # unknown mode
    ],
)
def test_pad_refuses_what_torch_refuses(pad, mode, kwargs, error):
    array = np.zeros((2, 3), np.float32)
    with pytest.raises(error):
        F.pad(mg.tensor(array), pad, mode=mode, **kwargs)
    with pytest.raises((RuntimeError, TypeError, ValueError, NotImplementedError)):
        torch.nn.functional.pad(torch.tensor(array), pad, mode=mode, **kwargs)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_padding_that_leaves_nothing_is_refused(mode):
    raises_like_torch(
        lambda: F.pad(mg.ones(1, 2, 5), (-2, -3), mode=mode),
        lambda: torch.nn.functional.pad(torch.ones(1, 2, 5), (-2, -3), mode=mode),
        must_mention=["(-2, -3)"],
    )


def test_an_unknown_padding_mode_raises_what_torch_raises():
    raises_like_torch(
        lambda: F.pad(mg.ones(1, 2, 3), (1, 1), mode="typo"),
        lambda: torch.nn.functional.pad(torch.ones(1, 2, 3), (1, 1), mode="typo"),
        must_mention=["typo"],
    )
