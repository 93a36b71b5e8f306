"""The random fills of minigrad/ops/random_fills.py: x.uniform_(), normal_(), exponential_(),
bernoulli_(), random_() and randint_like draw the right distribution (mean within 5 standard
errors, variance within 5%, range), repeat from the seed and from a generator=, write into a
view's base, cut the old history while recording, as torch's; bad arguments named.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import ArgumentError, DTypeError, ShapeError
from op_checks import assert_clear_error
from parity import R

torch = pytest.importorskip("torch")


SIZE = 40_000


FILLS = {  # name -> (fill, mean, variance, low, high) of the distribution drawn
    "uniform_": (lambda x, g: x.uniform_(-2, 3, generator=g), 0.5, 25 / 12, -2, 3),
    "normal_": (lambda x, g: x.normal_(1.5, 0.5, generator=g), 1.5, 0.25, -np.inf, np.inf),
    "exponential_": (lambda x, g: x.exponential_(4.0, generator=g), 0.25, 1 / 16, 0, np.inf),
    "bernoulli_": (lambda x, g: x.bernoulli_(0.3, generator=g), 0.3, 0.21, 0, 1),
    "random_(from, to)": (lambda x, g: x.random_(-3, 5, generator=g), 0.5, 63 / 12, -3, 4),
    "random_(to)": (lambda x, g: x.random_(10, generator=g), 4.5, 99 / 12, 0, 9),
}


@pytest.mark.parametrize("dtype", [mg.float32, mg.float64])
@pytest.mark.parametrize("name", list(FILLS))
def test_random_fills_draw_the_right_distribution(name, dtype):
    fill, mean, variance, low, high = FILLS[name]
    mg.manual_seed(1234)
    x = mg.zeros(SIZE, dtype=dtype)
    assert fill(x, None) is x
    values = x.numpy()
    assert values.dtype == dtype and values.min() >= low and values.max() <= high
    # the sample mean lies within 5 standard errors; the variance within 5% (SIZE draws)
    assert abs(values.mean() - mean) < 5 * np.sqrt(variance / SIZE)
    assert abs(values.var() - variance) < 0.05 * variance
    if name.startswith(("random_", "bernoulli_")):
        assert (values == np.round(values)).all()


@pytest.mark.parametrize("name", list(FILLS))
def test_random_fills_repeat_from_the_seed_and_from_a_generator(name):
    fill = FILLS[name][0]
    mg.manual_seed(7)
    first = fill(mg.zeros(50), None).numpy()
    mg.manual_seed(7)
    np.testing.assert_array_equal(fill(mg.zeros(50), None).numpy(), first)
    mg.manual_seed(7)
    state = mg.get_rng_state()
    ours = fill(mg.zeros(50), mg.Generator().manual_seed(3)).numpy()
    np.testing.assert_array_equal(fill(mg.zeros(50), mg.Generator().manual_seed(3)).numpy(), ours)
    # generator= left the global one
    np.testing.assert_array_equal(mg.get_rng_state().numpy(), state.numpy())


def test_random_fills_of_a_view_write_into_its_base_and_bump_its_version():
    x = mg.zeros(4, 3)
    row = x[1]
    row.uniform_(5, 6)
    x.t()[2].exponential_()
    assert (
        (x.numpy()[1, :2] >= 5).all()
        and (x.numpy()[:, 2] > 0).all()
        and (x.numpy()[[0, 2, 3], :2] == 0).all()
    )
    assert row._version[0] == 2  # a view shares its base's counter, recorded or not (torch: 2)


def test_a_random_fill_while_recording_cuts_the_old_history():
    """h = x * 2; h.uniform_(): the gradient of x through h is 0, as in torch."""
    x = mg.tensor(R(3), requires_grad=True)
    h = x * 2
    h.normal_()
    (h * 3 + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(3))


def test_random_and_bernoulli_on_ints_and_the_full_range_of_random_():
    mg.manual_seed(0)
    ints = mg.zeros(10_000, dtype=mg.int64).random_(3)
    assert set(np.unique(ints.numpy())) == {0, 1, 2}
    whole = mg.zeros(10_000, dtype=mg.float32).random_()
    assert whole.numpy().min() >= 0 and whole.numpy().max() <= 2**24 and whole.numpy().max() > 2**23
    bits = mg.zeros(10_000, dtype=mg.int64).bernoulli_(mg.tensor([0.0, 1.0]).repeat(5_000))
    np.testing.assert_array_equal(bits.numpy(), np.tile([0, 1], 5_000))


def test_randint_like_takes_the_shape_and_dtype_and_draws_from_its_range():
    mg.manual_seed(5)
    like = mg.randint_like(mg.zeros(2, 3, dtype=mg.float64), 4)
    assert (
        like.shape == (2, 3)
        and like.dtype == mg.float64
        and set(like.numpy().ravel()) <= {0, 1, 2, 3}
    )
    spread = mg.randint_like(mg.zeros(20_000, dtype=mg.int64), -2, 2, dtype=mg.int32)
    assert spread.dtype == mg.int32 and sorted(np.unique(spread.numpy())) == [-2, -1, 0, 1]
    assert abs(spread.numpy().mean() + 0.5) < 5 * np.sqrt(1.25 / 20_000)
    mg.manual_seed(5)
    np.testing.assert_array_equal(
        mg.randint_like(mg.zeros(2, 3, dtype=mg.float64), 4).numpy(), like.numpy()
    )
    torch_like = torch.randint_like(torch.zeros(2, 3, dtype=torch.float64), 4)
    assert torch_like.dtype == torch.float64 and tuple(torch_like.shape) == like.shape


# name -> (call, the error, a fragment of its message)
BAD_ARGUMENTS = {
    "uniform_ of ints": (lambda: mg.zeros(3, dtype=mg.int64).uniform_(), DTypeError, "int64"),
    "uniform_ from > to": (lambda: mg.zeros(3).uniform_(2, 1), ArgumentError, "from=2, to=1"),
    "normal_ negative std": (lambda: mg.zeros(3).normal_(0, -1), ArgumentError, "-1"),
    "normal_ tensor mean": (lambda: mg.zeros(3).normal_(mg.zeros(3)), TypeError, "Tensor"),
    "exponential_ rate 0": (lambda: mg.zeros(3).exponential_(0), ArgumentError, "positive"),
    "bernoulli_ p above 1": (lambda: mg.zeros(3).bernoulli_(1.5), ArgumentError, "1.5"),
    "bernoulli_ p of another shape": (
        lambda: mg.zeros(3).bernoulli_(mg.zeros(2)),
        ShapeError,
        "(2,)",
    ),
    "random_ from >= to": (lambda: mg.zeros(3).random_(4, 4), ArgumentError, "from=4, to=4"),
    "random_ float bound": (lambda: mg.zeros(3).random_(0.5), TypeError, "0.5"),
    "randint_like low >= high": (
        lambda: mg.randint_like(mg.zeros(3), 5, 1),
        ArgumentError,
        "low=5, high=1",
    ),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_clear_errors(name):
    assert_clear_error(*BAD_ARGUMENTS[name])
