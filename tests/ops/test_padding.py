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


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    "shape, pad",
    [
        ((2, 3, 5, 4), (0, 0, 0, -5)),  # issue 47: a whole size-5 dim removed
        ((2, 3, 5, 4), (0, 0, -5, 0)),
        ((2, 3, 5, 4), (0, 0, -2, -3)),
        ((2, 3, 5, 4), (0, -3, 0, -5)),
        ((2, 3, 5, 4), (0, -4, 1, 1)),  # the last dim emptied, the other padded
        ((2, 5, 4), (0, 0, 0, -5)),
    ],
)
def test_cropping_a_whole_dim_gives_an_empty_result_as_torch(mode, shape, pad):
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    ours, theirs = run_both(
        lambda side, leaf: side.pad(leaf, pad, mode=mode), [x], sides=FUNCTIONAL, seed=4
    )
    assert ours.value.shape == theirs.value.shape and 0 in ours.value.shape
    assert_runs_match(ours, theirs)
    assert ours.grads[0].shape == shape and not np.any(ours.grads[0])


@pytest.mark.parametrize(
    "shape, pad, mode, named",
    [
        ((2, 3, 5, 4), (0, 0, -3, -3), "reflect", "(-3, -3)"),  # crops past nothing
        ((2, 3, 5, 4), (0, 0, -6, 0), "replicate", "(-6, 0)"),
        ((2, 3, 5, 4), (0, -4, 0, -5), "reflect", "(0, -4, 0, -5)"),  # every padded dim emptied
        ((2, 3, 5, 4), (0, -4, 0, -5), "replicate", "(0, -4, 0, -5)"),
        ((2, 5, 4), (-1, -3), "replicate", "(-1, -3)"),
        ((2, 3, 5, 4), (0, 0, 1, -6), "circular", "(1, -6)"),  # crops more than the dim holds
        ((2, 3, 5, 4), (0, 0, -3, -3), "circular", "(-3, -3)"),
    ],
)
def test_crops_that_torch_refuses_are_refused(shape, pad, mode, named):
    raises_like_torch(
        lambda: F.pad(mg.ones(*shape), pad, mode=mode),
        lambda: torch.nn.functional.pad(torch.ones(*shape), pad, mode=mode),
        must_mention=[named],
        expected=(ValueError, RuntimeError),
    )


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
