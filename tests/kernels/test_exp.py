"""minigrad/kernels/_exp.py: the kernels' exp is accurate over the whole float range."""

import numpy as np

from minigrad.kernels import softmax as numba_softmax


def test_exp_is_accurate_over_the_whole_range():
    """kernels._exp.fast_exp (the exp of every Numba kernel), called directly and probed through
    log_softmax_backward (grad - exp(y) * sum(grad)) with grad = [-1, 0]: output[1] = exp(y[1])."""
    from numba import njit

    from minigrad.kernels._exp import fast_exp

    @njit
    def exp_all(x, out):
        for i in range(x.shape[0]):
            out[i] = fast_exp(x[i])

    for dtype, low, high in ((np.float32, -87.3, 88.72), (np.float64, -708.0, 709.78)):
        x = np.linspace(low, high, 200_001).astype(dtype)
        out = np.empty_like(x)
        exp_all(x, out)
        assert (np.abs(out - np.exp(x)) <= 2 * np.spacing(np.exp(x))).all()
        special = np.array([-np.inf, low - 1, np.inf, high + 1, np.nan, 0.0], dtype)
        exp_all(special, out[:6])
        np.testing.assert_array_equal(out[:6], [0, 0, np.inf, np.inf, np.nan, 1])
    for dtype, ulps in ((np.float32, 2), (np.float64, 2)):
        y = np.linspace(-700 if dtype == np.float64 else -87, 0, 5001).astype(dtype)
        pairs = np.stack([np.zeros_like(y), y], axis=1)
        grad = np.tile(np.array([-1.0, 0.0], dtype), (y.size, 1))
        ours = numba_softmax.log_softmax_backward(pairs, grad)[:, 1]
        spacing = np.spacing(np.exp(y).astype(dtype))
        assert (np.abs(ours - np.exp(y)) <= ulps * spacing).all()
    y = np.array([[0.0, -90.0, -np.inf, -1e30]], np.float32)
    assert (
        numba_softmax.log_softmax_backward(y, np.array([[-1.0, 0, 0, 0]], np.float32))[0, 1:] == 0
    ).all()
