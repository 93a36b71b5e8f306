"""The counting ops (minigrad/ops/counting.py: unique, bincount, histc, searchsorted, bucketize
...): a number as the input or the boundaries, against torch.
"""

import pytest

import minigrad as mg

torch = pytest.importorskip("torch")


def test_searchsorted_with_a_number_and_bucketize_of_a_number():
    for B in (mg, torch):
        found = (
            B.searchsorted(B.tensor([1, 3, 5]), 3).item(),
            B.bucketize(3, B.tensor([1, 3, 5])).item(),
        )
        assert found == (1, 1)
