"""Creation (minigrad/creation.py): filled, ranged and random tensors (zeros, full, arange,
randn, randint, multinomial, the *_like constructors): shapes, dtypes as torch infers them,
values and seeded draws; what torch refuses to make, minigrad refuses with an exception the
same `except` catches and a message of its own (not numpy's or Python's)."""

import numpy as np
import pytest

import minigrad as mg
from parity import raises_like_torch


def test_zeros_ones_full():
    z = mg.zeros(2, 3)
    assert z.shape == (2, 3) and z.dtype == np.float32 and not z.numpy().any()
    assert mg.zeros((4,)).shape == (4,)
    o = mg.ones((2, 2), dtype=mg.float64)
    assert o.dtype == np.float64
    np.testing.assert_array_equal(o.numpy(), np.ones((2, 2)))
    f = mg.full((2, 3), 7.5)
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f.numpy(), np.full((2, 3), 7.5))
    assert mg.full(3, 1.0).shape == (3,)
    assert mg.zeros(3, requires_grad=True).requires_grad


@pytest.mark.parametrize(
    "fill, dtype",
    [
        (7, np.int64),
        (np.int32(7), np.int64),
        (True, np.bool_),
        (7.5, np.float32),
        (np.float64(7.5), np.float32),
    ],
)
def test_full_infers_its_dtype_from_the_fill_value_as_torch_does(fill, dtype):
    out = mg.full((2,), fill)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.numpy(), [fill, fill])
    assert mg.full((2,), fill, dtype=mg.float64).dtype == np.float64


def test_arange():
    a = mg.arange(5)
    assert a.dtype == np.int64
    np.testing.assert_array_equal(a.numpy(), [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(mg.arange(2, 8, 3).numpy(), [2, 5])
    b = mg.arange(0, 1, 0.25)
    assert b.dtype == np.float32
    np.testing.assert_allclose(b.numpy(), [0.0, 0.25, 0.5, 0.75])
    assert mg.arange(3, dtype=mg.float64).dtype == np.float64


def test_random_creation_and_manual_seed():
    mg.manual_seed(123)
    first = (mg.randn(3, 4).numpy().copy(), mg.rand(2, 2).numpy().copy())
    mg.manual_seed(123)
    second = (mg.randn(3, 4).numpy().copy(), mg.rand(2, 2).numpy().copy())
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    mg.manual_seed(124)
    assert not np.array_equal(mg.randn(3, 4).numpy(), first[0])
    assert first[0].dtype == np.float32 and first[1].dtype == np.float32
    assert first[1].min() >= 0 and first[1].max() < 1


def test_random_distributions():
    mg.manual_seed(0)
    normal = mg.randn(20000, dtype=mg.float64).numpy()
    uniform = mg.rand(20000).numpy()
    assert abs(normal.mean()) < 0.03 and abs(normal.std() - 1) < 0.03
    assert abs(uniform.mean() - 0.5) < 0.01
    assert mg.randn((2, 3)).shape == (2, 3)


def test_randint_and_randperm():
    mg.manual_seed(1)
    draws = mg.randint(3, 6, (10000,))
    assert draws.dtype == np.int64 and draws.shape == (10000,)
    counts = np.bincount(draws.numpy(), minlength=6)
    assert counts[:3].sum() == 0 and np.abs(counts[3:] / 10000 - 1 / 3).max() < 0.02
    assert mg.randint(5, (2, 3)).shape == (2, 3) and mg.randint(5, size=(4,)).numpy().max() < 5
    assert mg.randint(0, 2, (3,), dtype=mg.float32).dtype == np.float32
    order = mg.randperm(50)
    assert order.dtype == np.int64 and sorted(order.tolist()) == list(range(50))
    assert mg.randperm(0).shape == (0,)
    mg.manual_seed(7)
    first = (mg.randint(100, (5,)).tolist(), mg.randperm(5).tolist())
    mg.manual_seed(7)
    assert (mg.randint(100, (5,)).tolist(), mg.randperm(5).tolist()) == first


def test_multinomial_with_replacement_draws_each_category_with_its_probability():
    mg.manual_seed(2)
    weights = mg.tensor([0.2, 0.0, 1.2, 0.6])  # need not sum to 1
    draws = mg.multinomial(weights, 40000, replacement=True)
    assert draws.dtype == np.int64 and draws.shape == (40000,)
    np.testing.assert_allclose(
        np.bincount(draws.numpy(), minlength=4) / 40000, [0.1, 0.0, 0.6, 0.3], atol=0.01
    )
    rows = mg.tensor([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]).multinomial(1000, replacement=True)
    assert (
        rows.shape == (2, 1000) and (rows.numpy()[0] == 0).all() and set(rows.numpy()[1]) == {1, 2}
    )


def test_multinomial_without_replacement_is_sequential_sampling():
    mg.manual_seed(3)
    p = np.array([0.5, 0.3, 0.2, 0.0])
    draws = mg.multinomial(mg.tensor(np.tile(p, (30000, 1))), 2).numpy()
    assert draws.shape == (30000, 2) and (draws[:, 0] != draws[:, 1]).all() and (draws != 3).all()
    np.testing.assert_allclose(np.bincount(draws[:, 0], minlength=4) / 30000, p, atol=0.01)
    # draw one, remove it, renormalise, draw again: P(i among the two) = p_i + sum_j p_j p_i / (1 -
    # p_j)
    included = [p[i] + sum(p[j] * p[i] / (1 - p[j]) for j in range(4) if j != i) for i in range(4)]
    np.testing.assert_allclose(
        np.bincount(draws.ravel(), minlength=4) / 30000, included, atol=0.015
    )
    everything = mg.multinomial(mg.tensor(p), 4).tolist()  # a weight-0 category comes last
    assert sorted(everything) == [0, 1, 2, 3] and everything[-1] == 3


def test_like_constructors():
    x = mg.tensor(np.ones((2, 3)))  # float64
    for like, expected in [(mg.zeros_like, 0.0), (mg.ones_like, 1.0)]:
        y = like(x)
        assert y.shape == (2, 3) and y.dtype == np.float64
        np.testing.assert_array_equal(y.numpy(), np.full((2, 3), expected))
    assert mg.zeros_like(x, dtype=mg.float32).dtype == np.float32
    f = mg.full_like(x, 4.0)
    assert f.dtype == np.float64 and (f.numpy() == 4.0).all()
    mg.manual_seed(5)
    r = mg.randn_like(x)
    mg.manual_seed(5)
    np.testing.assert_array_equal(r.numpy(), mg.randn_like(x).numpy())
    u = mg.rand_like(x)
    assert u.shape == (2, 3) and u.dtype == np.float64
    assert mg.ones_like(x, requires_grad=True).requires_grad


def test_linspace_refuses_bool_as_torch_does():
    torch = pytest.importorskip("torch")
    raises_like_torch(
        lambda: mg.linspace(0, 1, 5, dtype=mg.bool),
        lambda: torch.linspace(0, 1, 5, dtype=torch.bool),
        must_mention=["bool"],
    )


def test_arange_to_infinity_gets_minigrads_own_message():
    torch = pytest.importorskip("torch")
    error = raises_like_torch(
        lambda: mg.arange(0, float("inf")),
        lambda: torch.arange(0, float("inf")),
        must_mention=["finite", "inf"],
    )
    assert type(error).__module__ in ("builtins", "minigrad.errors")
