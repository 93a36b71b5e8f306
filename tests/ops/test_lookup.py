"""The embedding lookup (minigrad/ops/lookup.py: F.embedding, padding_index) against torch: rows
picked for ids of any shape, the gradient a scatter-add of repeated ids with none for the padding
row, max_norm renormalising the rows looked up in place; float64 gradchecks, torch's padding_idx
rule. nn.Embedding, built on it, is in tests/nn/test_embedding.py.
"""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad.errors import ArgumentError
from minigrad.nn import functional as F
from minigrad.ops.lookup import padding_index
from parity import DTYPE_IDS, DTYPES, assert_close, assert_runs_match, run_both, tolerance

torch = pytest.importorskip("torch")
FUNCTIONAL = (F, torch.nn.functional)  # what each side's call gets

IDS = np.array([[[0, 5], [3, 3]], [[5, 1], [0, 0]]])  # repeated ids, both ends of the table

# name -> (ids, F.embedding settings)
LOOKUPS = {
    "ids of shape (2, 2, 2)": (IDS, {}),
    "one id, 0-d": (np.array(4), {}),
    "no ids": (np.zeros((0, 3), np.int64), {}),
    "padding_idx": (IDS, dict(padding_idx=5)),
    "padding_idx from the end": (IDS, dict(padding_idx=-1)),
    "max_norm": (IDS, dict(max_norm=1.0)),
    "max_norm, norm_type 1": (IDS, dict(max_norm=1.5, norm_type=1.0)),
    "max_norm, norm_type inf, padding_idx": (
        IDS,
        dict(max_norm=0.7, norm_type=math.inf, padding_idx=0),
    ),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("name", LOOKUPS)
def test_embedding_matches_torch(name, dtype):
    """Values and the table's gradient; with max_norm also the table after the lookup."""
    ids, settings = LOOKUPS[name]
    table = np.random.default_rng(1).standard_normal((6, 4)) * 2
    ours, theirs = run_both(
        lambda side, ids, weight: side.embedding(ids, weight, **settings),
        [ids, table.astype(dtype)],
        sides=FUNCTIONAL,
    )
    assert_runs_match(
        ours,
        theirs,
        tolerance("transformer", dtype),
        gradients=tolerance("transformer gradient", dtype),
    )
    assert_close(
        ours.leaves[1],
        theirs.leaves[1],
        tolerance("transformer", dtype),
        "the table after the lookup",
    )


def test_padding_index_counts_from_the_end_as_torch_and_refuses_what_it_refuses():
    assert [padding_index(p, 5) for p in (None, 0, 4, -1, -5)] == [None, 0, 4, 4, 0]
    for bad in (5, -6):
        with pytest.raises(ArgumentError, match=rf"\[-5, 5\); got {bad}"):
            padding_index(bad, 5)
        with pytest.raises((ValueError, AssertionError, RuntimeError)):
            torch.nn.Embedding(5, 3, padding_idx=bad)


def test_embedding_functional_padding_idx_matches_torch():
    table = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)
    ids = np.array([1, 5, 5, 0])
    ours, theirs = run_both(
        lambda side, ids, weight: side.embedding(ids, weight, padding_idx=5),
        [ids, table],
        sides=FUNCTIONAL,
        upstream=np.ones,
    )
    assert_runs_match(
        ours,
        theirs,
        tolerance("transformer", np.float32),
        gradients=tolerance("transformer gradient", np.float32),
    )


def test_embedding_gradcheck_float64_with_repeated_ids():
    mg.manual_seed(4)
    weight = mg.randn(5, 3, dtype=np.float64)
    ids = np.array([[1, 4, 1], [0, 1, 3]])
    assert mg.gradcheck(lambda w: F.embedding(ids, w), [weight])
