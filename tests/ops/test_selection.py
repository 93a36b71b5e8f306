"""The selection ops (minigrad/ops/selection.py: sort, argsort, topk). sort and argsort against
torch (values, indices, dtypes and gradients; stable, so ties keep their order and NaN is the
largest). topk on rows long enough for its partition path (k at most an eighth of the row): the
same indices as the first k of a stable sort, ties to the lowest index, NaN the largest, checked
against a plain Python sort per row and, where no ties make the order open, against torch."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.errors import DimError
from op_checks import assert_clear_error
from parity import I, N, R, check


NAN = np.nan
TIED = N(2, NAN, 1, 2, NAN, 1, 0)  # ties and NaN: a stable order is the only one torch fixes

# name -> (call(B, *tensors), arrays): values, indices, dtypes and the gradients of float inputs
SORTS = {
    "sort": (lambda B, x: B.sort(x), [R(3, 5)]),
    "sort dim 0 descending": (lambda B, x: x.sort(0, descending=True), [R(4, 3)]),
    "sort stable, ties and NaN": (lambda B, x: B.sort(x, stable=True), [TIED]),
    "sort descending stable, ties and NaN": (
        lambda B, x: B.sort(x, descending=True, stable=True),
        [TIED],
    ),
    "sort 0-d": (lambda B, x: x.sort(0), [R()]),
    "sort empty": (lambda B, x: B.sort(x, 1), [R(2, 0)]),
    "sort ints": (lambda B, x: B.sort(x, dim=0, stable=True), [I(3, 1, 3, 0)]),
    "argsort": (lambda B, x: B.argsort(x, -1), [R(2, 6)]),
    "argsort descending stable, ties": (
        lambda B, x: x.argsort(dim=0, descending=True, stable=True),
        [N(1, 3, 1, 3, 2, NAN)],
    ),
    "topk smallest": (lambda B, x: B.topk(x, 2, largest=False), [R(3, 5)]),
    "topk dim 0": (lambda B, x: x.topk(3, 0), [R(4, 2)]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(SORTS))
def test_sort_argsort_and_topk_match_torch(name, dtype):
    call, arrays = SORTS[name]
    check(call, *arrays, dtype=dtype)


def test_sort_along_a_dim_it_lacks_is_refused_naming_it():
    assert_clear_error(lambda: mg.sort(mg.zeros(2, 3), 2), DimError, "dim")


def expected_indices(row, k, largest):
    """The first k positions of `row` (a list of Python numbers) in torch's order, by a Python sort:
    NaN above every number, equal values (0.0 and -0.0 too) by position."""

    def key(i):
        value = row[i]
        nan = isinstance(value, float) and math.isnan(value)
        number = 0.0 if nan else float(value)
        return (not nan, -number, i) if largest else (nan, number, i)

    return sorted(range(len(row)), key=key)[:k]


def check_topk(x, k, dim, largest):
    got = mg.tensor(x).topk(k, dim=dim, largest=largest)
    moved = np.moveaxis(x, dim, -1)
    rows = moved.reshape(-1, moved.shape[-1])
    expected = np.array(
        [expected_indices(row.tolist(), k, largest) for row in rows], dtype=np.int64
    ).reshape(moved.shape[:-1] + (k,))
    expected = np.moveaxis(expected, -1, dim)
    np.testing.assert_array_equal(got.indices.numpy(), expected)
    np.testing.assert_array_equal(got.values.numpy(), np.take_along_axis(x, expected, dim))


@settings(max_examples=150, deadline=None)
@given(
    rows=st.integers(1, 4),
    size=st.integers(16, 300),
    k_share=st.floats(0.0, 0.125),
    distinct=st.sampled_from([2, 3, 10, 1000]),
    nan_share=st.sampled_from([0.0, 0.05, 0.6]),
    largest=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_topk_matches_a_stable_sort_with_ties_and_nan(
    rows, size, k_share, distinct, nan_share, largest, seed
):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, distinct, size=(rows, size)).astype(np.float32)
    x[rng.random(x.shape) < nan_share] = np.nan
    x[rng.random(x.shape) < 0.05] = -0.0  # equal to 0.0: a tie, as in torch
    x[rng.random(x.shape) < 0.02] = np.inf
    check_topk(x, int(k_share * size), 1, largest)


@pytest.mark.parametrize("dtype", ["float64", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_partition_path_keeps_dtypes_and_ties(dtype, largest):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, size=(5, 200)).astype(dtype)
    for k in (1, 3, 25):
        check_topk(x, k, 1, largest)
        check_topk(x, k, -1, largest)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_topk_partition_path_along_any_dim(dim):
    rng = np.random.default_rng(2)
    x = rng.integers(0, 50, size=(64, 72, 80)).astype(np.float32)
    check_topk(x, 3, dim, largest=True)
    check_topk(x, 4, dim, largest=False)


def test_topk_values_and_indices_match_torch_on_distinct_values():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 4, 1000)).astype(np.float32)
    for dim in (0, 1, 2):
        for k in (1, 5, 100):
            k = min(k, x.shape[dim] // 8) or 1
            for largest in (True, False):
                ours = mg.tensor(x).topk(k, dim=dim, largest=largest)
                theirs = torch.from_numpy(x).topk(k, dim=dim, largest=largest)
                np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
                np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())


def test_topk_gradient_reaches_the_chosen_elements():
    rng = np.random.default_rng(4)
    x = mg.tensor(rng.standard_normal((3, 400)), requires_grad=True)
    values, indices = x.topk(10)
    (values * mg.arange(10.0)).sum().backward()
    expected = np.zeros((3, 400))
    np.put_along_axis(expected, indices.numpy(), np.broadcast_to(np.arange(10.0), (3, 10)), 1)
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_topk_of_an_empty_batch():
    got = mg.zeros(0, 64).topk(2)
    assert got.values.shape == (0, 2) and got.indices.shape == (0, 2)


def test_topk_ties_go_to_the_lowest_index():
    """docs/coming-from-pytorch.md promises ties to the lowest index (torch leaves them open)."""
    rng = np.random.default_rng(0)
    for _ in range(200):
        x = rng.integers(0, 3, size=(4, 9)).astype(np.float32)
        if rng.random() < 0.3:
            x[0, 3] = np.nan  # NaN counts as the largest, as in torch
        k = int(rng.integers(0, 10))
        key = np.where(np.isnan(x), np.inf, x)
        for largest in (True, False):
            got = mg.tensor(x).topk(k, largest=largest)
            expected = np.argsort(-key if largest else key, axis=1, kind="stable")[:, :k]
            np.testing.assert_array_equal(got.indices.numpy(), expected)
            np.testing.assert_array_equal(got.values.numpy(), np.take_along_axis(x, expected, 1))
