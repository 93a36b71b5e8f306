"""minigrad/kernels/lstm.py: the packed layout of a batch of sequences of given lengths (its
steps, rows, times and last positions), written out by hand, forward and reverse.
"""

import numpy as np

from minigrad.kernels import lstm as lstm_kernels


def test_packed_layout_by_hand():
    layout = lstm_kernels.PackedLayout(np.array([2, 3, 1]), reverse=False)
    np.testing.assert_array_equal(layout.order, [1, 0, 2])
    np.testing.assert_array_equal(layout.batch_sizes, [3, 2, 1])
    np.testing.assert_array_equal(layout.rows, [1, 0, 2, 1, 0, 1])
    np.testing.assert_array_equal(layout.times, [0, 0, 0, 1, 1, 2])
    np.testing.assert_array_equal(layout.last, [5, 4, 2])
    assert layout.steps == [(0, 3, None), (3, 2, 0), (5, 1, 3)]
    reverse = lstm_kernels.PackedLayout(np.array([2, 3, 1]), reverse=True)
    np.testing.assert_array_equal(reverse.rows, [1, 0, 2, 1, 0, 1])
    np.testing.assert_array_equal(reverse.times, [2, 1, 0, 1, 0, 0])
