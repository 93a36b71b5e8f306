"""nn.Embedding (nn/embedding.py): initialisation with a zero padding row, rows picked for any id
shape, gradients of repeated ids, values and gradients against torch, from_pretrained and
max_norm as torch's, and bad ids and tables refused.
"""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F
from parity import assert_close, assert_runs_match
from parity import assert_same_parameter_grads, copy_state_to_torch, run_both


def _torch():
    return pytest.importorskip("torch")


def test_embedding_init_is_standard_normal_with_zero_padding_row():
    mg.manual_seed(3)
    table = nn.Embedding(400, 50, padding_idx=2)
    assert table.weight.dtype == np.float32
    np.testing.assert_array_equal(table.weight.numpy()[2], np.zeros(50))
    others = np.delete(table.weight.numpy(), 2, axis=0)
    assert abs(others.mean()) < 0.02 and abs(others.std() - 1) < 0.02  # 19950 draws
    assert nn.Embedding(10, 3, padding_idx=-1).padding_idx == 9


def test_embedding_forward_picks_rows_for_any_id_shape():
    table = nn.Embedding(6, 2)
    ids = np.array([[[0, 5], [3, 3]]])
    out = table(mg.tensor(ids))
    assert out.shape == (1, 2, 2, 2)
    np.testing.assert_array_equal(out.numpy(), table.weight.numpy()[ids])
    # plain array, int32
    np.testing.assert_array_equal(table(ids.astype(np.int32)).numpy(), table.weight.numpy()[ids])
    assert table(mg.tensor(4)).shape == (2,)


def test_embedding_repeated_ids_accumulate_and_padding_row_gets_zero_grad():
    table = nn.Embedding(4, 2, padding_idx=0, dtype=np.float64)
    ids = mg.tensor([[1, 1, 0], [1, 3, 0]])
    upstream = np.arange(12, dtype=np.float64).reshape(2, 3, 2)
    table(ids).backward(upstream)
    # row 1 is used at (0,0), (0,1), (1,0): [0,1] + [2,3] + [6,7]; row 3 at (1,1); row 0 is padding
    np.testing.assert_array_equal(table.weight.grad.numpy(), [[0, 0], [8, 11], [0, 0], [8, 9]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_embedding_matches_torch_values_and_grads(dtype):
    torch = _torch()
    mg.manual_seed(5)
    table = nn.Embedding(7, 4, padding_idx=3, dtype=dtype)
    reference = copy_state_to_torch(table, torch.nn.Embedding(7, 4, padding_idx=3), dtype)
    ids = np.random.default_rng(0).integers(0, 7, size=(3, 5))
    ids[0, :2] = 3
    upstream = np.random.default_rng(1).standard_normal((3, 5, 4)).astype(dtype)
    ours, theirs = run_both(None, [ids], sides=(table, reference), upstream=upstream)
    assert_runs_match(ours, theirs, "layer", names=["ids"])
    assert_same_parameter_grads(table, reference, "layer")
    np.testing.assert_array_equal(table.weight.grad.numpy()[3], np.zeros(4))


def test_embedding_rejects_bad_ids():
    table = nn.Embedding(10, 3)
    with pytest.raises(TypeError, match="integer.*float32"):
        table(mg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="bool"):
        table(np.array([True, False]))
    with pytest.raises(IndexError, match=r"\[0, 10\).*got 10"):
        table(mg.tensor([[1, 10], [2, 3]]))
    with pytest.raises(IndexError, match=r"\[0, 10\).*got -1"):
        table(mg.tensor([-1, 3]))
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(10, 3, padding_idx=10)


@pytest.mark.parametrize(
    "settings",
    [
        dict(max_norm=1.0),
        dict(max_norm=1.5, norm_type=1.0),
        dict(max_norm=2.0, norm_type=math.inf),
        dict(padding_idx=1, max_norm=1.0),
        dict(padding_idx=-2, freeze=False),
        dict(freeze=False),
    ],
)
def test_from_pretrained_and_max_norm_match_torch(settings):
    """from_pretrained keeps the rows as given (the padding row too); max_norm scales the rows a
    forward pass looks up, in place, before the lookup (a repeated id once)."""
    torch = _torch()
    table = (np.random.default_rng(2).standard_normal((6, 4)) * 2).astype(np.float32)
    ours = nn.Embedding.from_pretrained(mg.tensor(table), **{"freeze": False, **settings})
    theirs = torch.nn.Embedding.from_pretrained(
        torch.from_numpy(table.copy()), **{"freeze": False, **settings}
    )
    ids = np.array([[0, 2, 2], [5, 1, 0]])
    upstream = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    out, reference = ours(ids), theirs(torch.from_numpy(ids))
    out.backward(upstream)
    reference.backward(torch.from_numpy(upstream))
    assert_close(out, reference, "embedding rows", "output")
    assert_close(ours.weight, theirs.weight, "embedding rows", "the table after the lookup")
    assert_close(ours.weight.grad, theirs.weight.grad, 0, "the table's gradient")
    if "max_norm" in settings:
        # rows not looked up: as given
        np.testing.assert_array_equal(ours.weight.numpy()[[3, 4]], table[[3, 4]])
        assert (
            np.linalg.norm(
                ours.weight.numpy()[[0, 1, 2, 5]], ord=settings.get("norm_type", 2.0), axis=1
            )
            <= settings["max_norm"] + 1e-5
        ).all()


def test_from_pretrained_freezes_by_default_and_refuses_bad_tables():
    table = np.arange(12, dtype=np.float64).reshape(4, 3)
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad and frozen.weight.dtype == np.float64
    table[0, 0] = 99.0  # a copy: the module keeps its own rows
    assert frozen.weight.numpy()[0, 0] == 0.0
    with pytest.raises(
        ValueError,
        match=r"2-D float Tensor or array .* got ndarray of shape \(3,\) and dtype float64",
    ):
        nn.Embedding.from_pretrained(table[0])
    with pytest.raises(ValueError, match="dtype int64"):
        nn.Embedding.from_pretrained(np.arange(6).reshape(2, 3))
    with pytest.raises(
        ValueError, match="scale_grad_by_freq=True and sparse=True are not supported"
    ):
        nn.Embedding(5, 2, sparse=True)
    with pytest.raises(ValueError, match="max_norm must be a number > 0; got -1.0"):
        F.embedding(mg.tensor([0]), mg.tensor(table), max_norm=-1.0)


@pytest.mark.parametrize("padding_idx", [None, 0, 3, -1, -5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_padding_idx_matches_torch(padding_idx, dtype):
    torch = _torch()
    from layer_checks import copy_to_torch, weighting

    ours = nn.Embedding(5, 3, padding_idx=padding_idx, dtype=dtype)
    theirs = torch.nn.Embedding(
        5, 3, padding_idx=padding_idx, dtype=getattr(torch, np.dtype(dtype).name)
    )
    assert ours.padding_idx == theirs.padding_idx
    assert repr(ours) == repr(theirs)
    if theirs.padding_idx is not None:
        # the padding row starts at 0, as torch's
        assert not ours.weight.numpy()[theirs.padding_idx].any()
    copy_to_torch(ours, theirs, randomize=1.0)
    ids = np.array([[0, 1, 4, 4], [3, 3, 2, 0]])
    mine, torchs = run_both(
        None, [ids], sides=(ours, theirs), upstream=lambda shape: weighting(shape, dtype)
    )
    assert_runs_match(mine, torchs, "transformer")
    assert_same_parameter_grads(ours, theirs, "transformer gradient")


@pytest.mark.parametrize("max_norm", [0.5, 1.0])
def test_embedding_max_norm_matches_torch(max_norm):
    torch = _torch()
    from layer_checks import copy_to_torch

    ours, theirs = (
        nn.Embedding(5, 3, max_norm=max_norm),
        torch.nn.Embedding(5, 3, max_norm=max_norm),
    )
    copy_to_torch(ours, theirs, randomize=1.0)
    ids = np.array([0, 2, 2, 4])
    assert_close(ours(mg.tensor(ids)), theirs(torch.tensor(ids)), "transformer")
    assert_close(ours.weight, theirs.weight, "transformer")  # rows looked up renormalised in place


EMB_HOSTILE = [
    ("id out of range", lambda E_, T: E_(5, 3)(T.tensor([0, 5])), ("5",)),
    ("negative id", lambda E_, T: E_(5, 3)(T.tensor([-1, 2])), ("-1",)),
    ("float ids", lambda E_, T: E_(5, 3)(T.tensor([0.0, 1.0])), ("float32",)),
    ("padding_idx out of range", lambda E_, T: E_(5, 3, padding_idx=5), ("5",)),
    ("padding_idx below -num", lambda E_, T: E_(5, 3, padding_idx=-6), ("-6",)),
]


@pytest.mark.parametrize("label,call,words", EMB_HOSTILE, ids=[c[0] for c in EMB_HOSTILE])
def test_embedding_hostile_inputs_raise(label, call, words):
    torch = _torch()
    with pytest.raises(Exception) as theirs:
        call(torch.nn.Embedding, torch)
    with pytest.raises(Exception) as ours:
        call(nn.Embedding, mg)
    for word in words:
        assert word in str(ours.value), (word, str(ours.value))
    if isinstance(theirs.value, (IndexError, RuntimeError)):
        assert isinstance(ours.value, type(theirs.value)), (
            type(theirs.value),
            type(ours.value).__mro__,
        )


def test_embedding_empty_ids_match_torch():
    torch = _torch()
    ours, theirs = nn.Embedding(5, 3), torch.nn.Embedding(5, 3)
    assert ours(mg.zeros(0, 4, dtype=mg.int64)).shape == tuple(
        theirs(torch.zeros(0, 4, dtype=torch.long)).shape
    )
