"""The version check covers every array a node keeps for its backward, whatever its role: a
weight an LSTM keeps in its state, an initial cell state, a mask among an op's settings, a
loss's pos_weight. Changed in place between forward and backward, each makes backward raise
(as torch does, where torch saves it) instead of returning a gradient computed from the new
values; changed after backward, or not at all, nothing is refused."""

from types import SimpleNamespace

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F

torch = pytest.importorskip("torch")

MESSAGE = "modified by an in-place operation"


def lstm_weight_hh(lib, change):
    lib.manual_seed(0)
    layer = lib.nn.LSTM(3, 4)
    out, _ = layer(lib.randn(5, 2, 3))
    if change:
        with lib.no_grad():
            layer.weight_hh_l0.mul_(1.1)
    return out.sum()


def lstm_c0(lib, change):
    lib.manual_seed(0)
    layer = lib.nn.LSTM(3, 4, bidirectional=True)
    h0 = lib.randn(2, 2, 4, requires_grad=True)
    c0 = lib.randn(2, 2, 4, requires_grad=True)
    out, _ = layer(lib.randn(5, 2, 3), (h0, c0))
    if change:
        with lib.no_grad():
            c0.mul_(1.1)
    return out.sum()


def bce_pos_weight(lib, change, x=None):
    x = lib.tensor(np.linspace(-2, 2, 12).reshape(4, 3), requires_grad=True) if x is None else x
    y = lib.tensor(np.full((4, 3), 0.25))
    pos_weight = lib.tensor(np.array([1.0, 2.0, 3.0]))
    loss = lib.F.binary_cross_entropy_with_logits(x, y, pos_weight=pos_weight)
    if change:
        pos_weight.mul_(5)
    return loss


CASES = {"lstm weight_hh": lstm_weight_hh, "lstm c0": lstm_c0, "bce pos_weight": bce_pos_weight}
LIBRARIES = {
    lib: SimpleNamespace(
        nn=module.nn, F=module.nn.functional, no_grad=module.no_grad, randn=module.randn,
        manual_seed=module.manual_seed, tensor=module.tensor,
    )
    for lib, module in (("torch", torch), ("minigrad", mg))
}  # fmt: skip


@pytest.mark.parametrize("name", CASES)
def test_a_kept_array_changed_in_place_before_backward_is_refused_as_in_torch(name):
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        CASES[name](LIBRARIES["torch"], change=True).backward()
    with pytest.raises(RuntimeError, match=MESSAGE):
        CASES[name](LIBRARIES["minigrad"], change=True).backward()


@pytest.mark.parametrize("name", CASES)
def test_unchanged_kept_arrays_backpropagate(name):
    CASES[name](LIBRARIES["minigrad"], change=False).backward()


def test_an_attention_mask_changed_in_place_before_backward_is_refused():
    """minigrad's attention backward reads the mask again, so a mask changed between forward
    and backward would give a wrong gradient: it raises (torch's CPU kernel, which keeps the
    weights, gives the gradient of the mask as it was)."""
    q, k, v = (mg.randn(1, 2, 4, 8, requires_grad=True) for _ in range(3))
    mask = mg.tensor(np.tril(np.ones((4, 4), bool)))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    mask[0, 1] = True
    with pytest.raises(RuntimeError, match=MESSAGE):
        out.sum().backward()


def test_a_change_after_backward_is_not_refused_and_the_gradient_is_torchs():
    grads = []
    for lib in ("torch", "minigrad"):
        x = LIBRARIES[lib].tensor(np.linspace(-2, 2, 12).reshape(4, 3), requires_grad=True)
        bce_pos_weight(LIBRARIES[lib], change=False, x=x).backward()
        x.grad.mul_(1)  # in place after backward: nothing left to refuse
        grads.append(np.asarray(x.grad.detach().numpy()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_a_view_of_a_kept_array_counts_as_the_array():
    """A node keeping weight.T (a view) still sees weight changed in place."""

    class KeepsATranspose(mg.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.w_t = w.T
            ctx.save_for_backward(x)
            return x @ w

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved
            return grad @ ctx.w_t, x.T @ grad

    x = mg.randn(2, 3, requires_grad=True)
    w = mg.randn(3, 4, requires_grad=True)
    out = KeepsATranspose.apply(x, w)
    with mg.no_grad():
        w.mul_(2)
    with pytest.raises(RuntimeError, match=MESSAGE):
        out.sum().backward()
