"""The loss modules of nn/loss.py (over the functions of minigrad/ops/losses/, tested in
tests/ops/losses/) against torch: values and the gradient of every input in float32 and float64,
every reduction, float64 gradchecks, reprs, weights as buffers, each module calling its function
with its settings, and the errors bad settings raise.
"""

import numpy as np
import pytest

import minigrad as mg
import minigrad.nn.functional as F
from layer_checks import MINIGRAD, TORCH, scores
from loss_checks import class_ids, multilabel_targets, refuses_clearly, signs, table_tests
from minigrad import nn
from minigrad.errors import ArgumentError

torch = pytest.importorskip("torch")


# name -> (arrays(dtype), differentiable names, call(library, reduction, **tensors))
LOSSES = {
    "margin_ranking_module": (
        lambda d: dict(a=scores((2, 5), d), b=scores((2, 5), d, 1), y=signs((2, 5), d)),
        ["a", "b"],
        lambda L, r, a, b, y: L.nn.MarginRankingLoss(0.2, reduction=r)(a, b, y),
    ),
    "hinge_embedding_module": (
        lambda d: dict(x=np.array([0.5, 1.0, 2.0, 0.0], d), y=np.array([-1.0, -1.0, 1.0, 0.0], d)),
        ["x"],
        lambda L, r, x, y: L.nn.HingeEmbeddingLoss(1.0, reduction=r)(x, y),
    ),
    "cosine_embedding_zero_vector": (
        lambda d: dict(
            a=np.array([[0.0, 0.0], [1.0, 2.0]], d),
            b=np.array([[1.0, 1.0], [0.0, 0.0]], d),
            y=np.array([1, -1]),
        ),
        ["a", "b"],
        lambda L, r, a, b, y: L.nn.CosineEmbeddingLoss(-0.5, reduction=r)(a, b, y),
    ),
    "triplet_p1_swap": (
        lambda d: dict(a=scores((6, 3), d), p=scores((6, 3), d, 1), n=scores((6, 3), d, 2)),
        ["a", "p", "n"],
        lambda L, r, a, p, n: L.nn.TripletMarginLoss(3.0, 1.0, 1e-3, True, reduction=r)(a, p, n),
    ),
    "triplet_with_distance": (
        lambda d: dict(a=scores((6, 3), d), p=scores((6, 3), d, 1), n=scores((6, 3), d, 2)),
        ["a", "p", "n"],
        lambda L, r, a, p, n: L.nn.TripletMarginWithDistanceLoss(
            distance_function=lambda x, y: 1 - L.F.cosine_similarity(x, y),
            margin=0.5,
            swap=True,
            reduction=r,
        )(a, p, n),
    ),
    "multilabel_soft_margin_weight": (
        lambda d: dict(
            x=scores((4, 5), d), y=(signs((4, 5)) > 0).astype(d), w=np.linspace(0.5, 2, 5).astype(d)
        ),
        ["x"],
        lambda L, r, x, y, w: L.nn.MultiLabelSoftMarginLoss(w, reduction=r)(x, y),
    ),
    "multi_margin_p2_weight": (
        lambda d: dict(x=scores((6, 4), d), y=class_ids(6, 4), w=np.array([0.5, 1, 2, 3], d)),
        ["x"],
        lambda L, r, x, y, w: L.nn.MultiMarginLoss(2, 0.7, w, reduction=r)(x, y),
    ),
    "multilabel_margin": (
        lambda d: dict(x=scores((5, 4), d), y=multilabel_targets(5, 4)),
        ["x"],
        lambda L, r, x, y: L.nn.MultiLabelMarginLoss(reduction=r)(x, y),
    ),
    "poisson_rates_full": (
        lambda d: dict(
            x=np.abs(scores((3, 4), d)), y=np.array([0.25, 1, 1.5, 2, 5, 0.5] * 2, d).reshape(3, 4)
        ),
        ["x", "y"],
        lambda L, r, x, y: L.nn.PoissonNLLLoss(False, True, eps=1e-3, reduction=r)(x, y),
    ),
    "gaussian_per_sample_var_full": (
        lambda d: dict(
            x=scores((4, 3), d), y=scores((4, 3), d, 1), v=np.array([0.5, 1e-9, 0.0, 2.0], d)
        ),
        ["x", "y", "v"],
        lambda L, r, x, y, v: L.nn.GaussianNLLLoss(full=True, eps=1e-3, reduction=r)(x, y, v),
    ),
}


test_losses_match_torch_values_and_gradients, test_losses_gradcheck_float64 = table_tests(LOSSES)


LOSS_REPRS = [
    lambda L: L.nn.CosineEmbeddingLoss(),
    lambda L: L.nn.MarginRankingLoss(0.5),
    lambda L: L.nn.HingeEmbeddingLoss(),
    lambda L: L.nn.TripletMarginLoss(),
    lambda L: L.nn.TripletMarginWithDistanceLoss(),
    lambda L: L.nn.SoftMarginLoss(),
    lambda L: L.nn.MultiLabelSoftMarginLoss(),
    lambda L: L.nn.MultiMarginLoss(),
    lambda L: L.nn.MultiLabelMarginLoss(),
    lambda L: L.nn.PoissonNLLLoss(),
    lambda L: L.nn.GaussianNLLLoss(),
    lambda L: L.nn.CosineSimilarity(),
    lambda L: L.nn.PairwiseDistance(),
]


@pytest.mark.parametrize("index", range(len(LOSS_REPRS)))
def test_loss_and_distance_reprs_are_torchs(index):
    assert repr(LOSS_REPRS[index](MINIGRAD)) == repr(LOSS_REPRS[index](TORCH))


def test_loss_weights_are_buffers():
    layer = nn.MultiMarginLoss(weight=mg.tensor([1.0, 2.0]))
    assert (
        list(layer.state_dict()) == ["weight"] and layer.to(mg.float64).weight.dtype == np.float64
    )


BAD_LOSSES = [
    (lambda: nn.MarginRankingLoss(reduction="avg"), ValueError, "avg is not a valid value"),
    (lambda: nn.TripletMarginWithDistanceLoss(margin=-1), ArgumentError, "got -1"),
]


@pytest.mark.parametrize("index", range(len(BAD_LOSSES)))
def test_bad_loss_arguments_raise_clearly(index):
    refuses_clearly(*BAD_LOSSES[index])


def test_loss_modules_call_their_function_with_their_settings():
    logits, ids = mg.randn(6, 3), np.array([0, 2, 1, -1, 2, 0])
    weight = np.array([1.0, 2.0, 0.5], np.float32)
    criterion = nn.CrossEntropyLoss(
        weight=weight, ignore_index=-1, reduction="sum", label_smoothing=0.2
    )
    np.testing.assert_allclose(
        criterion(logits, ids).item(),
        F.cross_entropy(
            logits, ids, weight, ignore_index=-1, reduction="sum", label_smoothing=0.2
        ).item(),
        rtol=1e-6,
    )
    log_probs = F.log_softmax(logits, dim=1)
    assert (
        nn.NLLLoss(ignore_index=-1)(log_probs, ids).item()
        == F.nll_loss(log_probs, ids, ignore_index=-1).item()
    )
    p, y = mg.rand(4, 3), mg.rand(4, 3)
    assert nn.BCELoss(reduction="none")(p, y).shape == (4, 3)
    assert (
        nn.BCEWithLogitsLoss(pos_weight=mg.ones(3) * 2)(p, y).item()
        == F.binary_cross_entropy_with_logits(p, y, pos_weight=mg.ones(3) * 2).item()
    )
    assert nn.MSELoss()(p, y).item() == F.mse_loss(p, y).item()
    assert nn.L1Loss(reduction="sum")(p, y).item() == F.l1_loss(p, y, reduction="sum").item()
    assert nn.SmoothL1Loss(beta=0.1)(p, y).item() == F.smooth_l1_loss(p, y, beta=0.1).item()
    assert nn.HuberLoss(delta=0.1)(p, y).item() == F.huber_loss(p, y, delta=0.1).item()
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="average")
    with pytest.raises(ValueError, match="label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=2)


def test_loss_weights_are_buffers_as_in_torch():
    ours = nn.BCEWithLogitsLoss(weight=np.ones(3, np.float32), pos_weight=mg.ones(3))
    theirs = torch.nn.BCEWithLogitsLoss(weight=torch.ones(3), pos_weight=torch.ones(3))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["weight", "pos_weight"]
    assert (
        list(nn.CrossEntropyLoss().state_dict())
        == list(torch.nn.CrossEntropyLoss().state_dict())
        == []
    )
    assert ours.double().pos_weight.dtype == np.float64
    x = mg.randn(2, 3, dtype=mg.float64)
    assert ours(x, mg.rand(2, 3, dtype=mg.float64)).dtype == np.float64
