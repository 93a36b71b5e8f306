"""The margin and embedding losses of minigrad/ops/losses/margin.py (margin ranking, hinge
embedding, cosine embedding, triplet, soft margin, multilabel soft margin, multi margin,
multilabel margin) against torch: values and the gradient of every input in float32 and float64,
every reduction, on their boundaries too; float64 gradchecks; exact where torch overflows; the
errors bad arguments raise. Their modules: tests/nn/test_loss.py.
"""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from layer_checks import scores
from loss_checks import class_ids, refuses_clearly, signs, table_tests
from minigrad.errors import ArgumentError, DTypeError, ShapeError

pytest.importorskip("torch")

# name -> (arrays(dtype), differentiable names, call(library, reduction, **tensors))
LOSSES = {
    "margin_ranking": (
        lambda d: dict(a=scores((7,), d), b=scores((7,), d, 1), y=signs(7, d)),
        ["a", "b"],
        lambda L, r, a, b, y: L.F.margin_ranking_loss(a, b, y, 0.5, reduction=r),
    ),
    "margin_ranking_boundary": (
        lambda d: dict(
            a=np.array([1.0, 2.0, 0.5], d),
            b=np.array([1.0, 1.5, 1.0], d),
            y=np.array([1.0, 1.0, -1.0], d),
        ),
        ["a", "b"],
        lambda L, r, a, b, y: L.F.margin_ranking_loss(a, b, y, 0.5, reduction=r),
    ),
    "hinge_embedding": (
        lambda d: dict(x=np.abs(scores((3, 5), d)), y=signs((3, 5), d)),
        ["x"],
        lambda L, r, x, y: L.F.hinge_embedding_loss(x, y, reduction=r),
    ),
    "cosine_embedding": (
        lambda d: dict(a=scores((5, 4), d), b=scores((5, 4), d, 1), y=signs(5, d)),
        ["a", "b"],
        lambda L, r, a, b, y: L.F.cosine_embedding_loss(a, b, y, 0.1, reduction=r),
    ),
    "cosine_embedding_unbatched": (
        lambda d: dict(a=scores((4,), d), b=scores((4,), d, 1), y=np.array(-1.0, d)),
        ["a", "b"],
        lambda L, r, a, b, y: L.F.cosine_embedding_loss(a, b, y, reduction=r),
    ),
    "triplet": (
        lambda d: dict(a=scores((6, 3), d), p=scores((6, 3), d, 1), n=scores((6, 3), d, 2)),
        ["a", "p", "n"],
        lambda L, r, a, p, n: L.F.triplet_margin_loss(a, p, n, reduction=r),
    ),
    "triplet_with_default_distance": (
        lambda d: dict(a=scores((3,), d), p=scores((3,), d, 1), n=scores((3,), d, 2)),
        ["a", "p", "n"],
        lambda L, r, a, p, n: L.F.triplet_margin_with_distance_loss(a, p, n, reduction=r),
    ),
    "soft_margin": (
        lambda d: dict(x=scores((4, 5), d), y=signs((4, 5), d)),
        ["x"],
        lambda L, r, x, y: L.F.soft_margin_loss(x, y, reduction=r),
    ),
    "multilabel_soft_margin": (
        lambda d: dict(x=scores((4, 5), d), y=(signs((4, 5)) > 0).astype(d)),
        ["x", "y"],
        lambda L, r, x, y: L.F.multilabel_soft_margin_loss(x, y, reduction=r),
    ),
    "multilabel_soft_margin_unbatched": (
        lambda d: dict(x=scores((5,), d), y=np.array([0, 1, 1, 0, 1], d)),
        ["x"],
        lambda L, r, x, y: L.F.multilabel_soft_margin_loss(x, y, reduction=r),
    ),
    "multi_margin": (
        lambda d: dict(x=scores((6, 4), d), y=class_ids(6, 4)),
        ["x"],
        lambda L, r, x, y: L.F.multi_margin_loss(x, y, reduction=r),
    ),
    "multi_margin_boundary": (
        lambda d: dict(x=np.array([[1.0, 0.0, 2.0], [0.5, 0.5, 0.5]], d), y=np.array([0, 1])),
        ["x"],
        lambda L, r, x, y: L.F.multi_margin_loss(x, y, reduction=r),
    ),
    "multi_margin_unbatched": (
        lambda d: dict(x=scores((4,), d), y=np.array(2)),
        ["x"],
        lambda L, r, x, y: L.F.multi_margin_loss(x, y, reduction=r),
    ),
    "multilabel_margin_boundary": (
        lambda d: dict(x=np.array([[1.0, 0.0, 2.0]], d), y=np.array([[0, -1, 2]])),
        ["x"],
        lambda L, r, x, y: L.F.multilabel_margin_loss(x, y, reduction=r),
    ),
    "multilabel_margin_unbatched": (
        lambda d: dict(x=scores((4,), d), y=np.array([3, 0, -1, 1])),
        ["x"],
        lambda L, r, x, y: L.F.multilabel_margin_loss(x, y, reduction=r),
    ),
}


test_table_matches_torch_values_and_gradients, test_table_gradcheck_float64 = table_tests(LOSSES)


def test_soft_margin_stays_finite_where_torch_overflows():
    # torch computes log1p(exp(-y x)), inf beyond exp's range (e^100 in float32); minigrad's is
    # exact
    x = mg.tensor(np.array([100.0, -100.0, 1e4], np.float32), requires_grad=True)
    loss = F.soft_margin_loss(x, mg.tensor([-1.0, 1.0, -1.0]), reduction="none")
    np.testing.assert_allclose(loss.numpy(), np.logaddexp(0, [100.0, 100.0, 1e4]), rtol=1e-6)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -1.0, 1.0])


ones = mg.ones


BAD_LOSSES = [
    (
        lambda: F.margin_ranking_loss(ones(3), ones(3), ones(3, 1)),
        ShapeError,
        "same number of dims; got shapes \\(3,\\), \\(3,\\) and \\(3, 1\\)",
    ),
    (lambda: F.margin_ranking_loss(ones(3), ones(2), ones(3)), ShapeError, "cannot be broadcast"),
    (
        lambda: F.margin_ranking_loss(ones(3), ones(3), ones(3), reduction="avg"),
        ArgumentError,
        "avg is not a valid value",
    ),
    (lambda: F.hinge_embedding_loss(ones(3), ones(2)), ShapeError, "cannot be broadcast"),
    (
        lambda: F.cosine_embedding_loss(ones(2, 3), ones(3), mg.tensor([1, -1])),
        ShapeError,
        "1-D target expects 2-D inputs",
    ),
    (
        lambda: F.cosine_embedding_loss(ones(2, 3), ones(2, 3), ones(1, 2)),
        ShapeError,
        "0-d or 1-D target .* got shape \\(1, 2\\)",
    ),
    (
        lambda: F.cosine_embedding_loss(ones(2, 3), ones(2, 3), ones(3)),
        ShapeError,
        "target of shape \\(2,\\).* got \\(3,\\)",
    ),
    (
        lambda: F.triplet_margin_loss(ones(2, 3), ones(2, 3), ones(3)),
        ShapeError,
        "\\(2, 3\\), \\(2, 3\\) and \\(3,\\)",
    ),
    (
        lambda: F.triplet_margin_loss(ones(2, 3), ones(2, 3), ones(2, 3), margin=0.0),
        ArgumentError,
        "greater than 0; got 0.0",
    ),
    (
        lambda: F.soft_margin_loss(ones(3), ones(2)),
        ShapeError,
        "target size \\(2,\\) must be the same as input size \\(3,\\)",
    ),
    (
        lambda: F.soft_margin_loss(mg.tensor([1, 2]), ones(2)),
        DTypeError,
        "float32 or float64 input; got dtype int64",
    ),
    (
        lambda: F.multilabel_soft_margin_loss(ones(2, 3), ones(2, 3), weight=ones(2)),
        ShapeError,
        "\\(2, 3\\) and \\(2,\\)",
    ),
    (
        lambda: F.multi_margin_loss(ones(2, 3), mg.tensor([0.0, 1.0])),
        DTypeError,
        "target must be an integer tensor; got dtype float32",
    ),
    (
        lambda: F.multi_margin_loss(ones(2, 3), mg.tensor([0, 3])),
        IndexError,
        "\\[0, 3\\); got values in \\[0, 3\\]",
    ),
    (
        lambda: F.multi_margin_loss(ones(2, 3), mg.tensor([0, 1, 1])),
        ShapeError,
        "2 class ids .* got shape \\(3,\\)",
    ),
    (
        lambda: F.multi_margin_loss(ones(2, 3), mg.tensor([0, 1]), p=3),
        ArgumentError,
        "p must be 1 or 2; got 3",
    ),
    (
        lambda: F.multi_margin_loss(ones(2, 3), mg.tensor([0, 1]), weight=ones(2)),
        ShapeError,
        "weight of shape \\(3,\\).* got \\(2,\\)",
    ),
    (
        lambda: F.multi_margin_loss(ones(2, 3, 1), mg.tensor([0, 1])),
        ShapeError,
        "\\(C,\\) or \\(N, C\\).* got \\(2, 3, 1\\)",
    ),
    (
        lambda: F.multilabel_margin_loss(ones(2, 3), mg.tensor([[0, 2], [1, -1]])),
        ShapeError,
        "input's shape \\(2, 3\\).* got \\(2, 2\\)",
    ),
    (
        lambda: F.multilabel_margin_loss(ones(2, 3), mg.tensor([[0, 3, -1], [1, -1, 0]])),
        IndexError,
        "got values in \\[-1, 3\\]",
    ),
    (
        lambda: F.multilabel_margin_loss(ones(2, 3), ones(2, 3)),
        DTypeError,
        "integer tensor; got dtype float32",
    ),
]


@pytest.mark.parametrize("index", range(len(BAD_LOSSES)))
def test_bad_arguments_raise_clearly(index):
    refuses_clearly(*BAD_LOSSES[index])
