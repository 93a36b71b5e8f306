"""minigrad.utils.data against torch.utils.data: the batches of a DataLoader over a
TensorDataset and over datasets of tuples, dicts, numbers, arrays and strings (shuffle off,
every batch_size / drop_last / sampler / batch_sampler), the sizes random_split gives, what a
shuffled epoch holds, and bad arguments."""

import collections

import numpy as np
import pytest

import minigrad as mg
from minigrad.utils.data import ConcatDataset, DataLoader, Dataset, Subset, TensorDataset, default_collate, random_split
from torch_twins import plain

X = np.arange(42, dtype=np.float32).reshape(14, 3)
Y = np.arange(14, dtype=np.int64) % 4
Point = collections.namedtuple("Point", "x label")


def _torch():
    return pytest.importorskip("torch")


def _samples(kind):
    """(a factory of a dataset of the given kind, from a tensor library)."""
    def make(lib):
        class Items(lib.utils.data.Dataset):
            def __len__(self):
                return len(X)

            def __getitem__(self, i):
                x, y = lib.tensor(X[i]), int(Y[i])
                return {"tuple": lambda: (x, y), "dict": lambda: {"x": x, "y": y, "name": f"n{i}"},
                        "numbers": lambda: (float(X[i, 0]), bool(i % 2), int(Y[i])),
                        "arrays": lambda: [X[i], Y[i:i + 1]], "namedtuple": lambda: Point(x, y)}[kind]()
        return Items()
    return make


DATASETS = {
    "TensorDataset": lambda lib: lib.utils.data.TensorDataset(lib.tensor(X), lib.tensor(Y)),
    **{kind: _samples(kind) for kind in ("tuple", "dict", "numbers", "arrays", "namedtuple")},
}
LOADERS = {
    "batch 4": dict(batch_size=4),
    "batch 4, drop_last": dict(batch_size=4, drop_last=True),
    "batch 14": dict(batch_size=14),
    "batch 20": dict(batch_size=20),
    "batch 20, drop_last": dict(batch_size=20, drop_last=True),
    "no batching": dict(batch_size=None),
    "sampler": dict(batch_size=3, sampler=[5, 0, 13, 2, 2]),
    "batch_sampler": dict(batch_sampler=[[3, 1], [0], [13, 12, 11]]),
}


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("dataset", DATASETS)
def test_batches_match_torch(dataset, loader):
    torch = _torch()
    import torch.utils.data  # noqa: F401

    ours = DataLoader(DATASETS[dataset](mg), **LOADERS[loader])
    theirs = torch.utils.data.DataLoader(DATASETS[dataset](torch), **LOADERS[loader])
    assert len(ours) == len(theirs)
    got, expected = [plain(b) for b in ours], [plain(b) for b in theirs]
    if dataset == "namedtuple":  # same fields; the type names differ only by library
        got, expected = [str(b) for b in got], [str(b) for b in expected]
    assert got == expected


def test_a_shuffled_epoch_holds_every_sample_once_and_repeats_with_the_seed():
    loader = DataLoader(TensorDataset(mg.tensor(X), mg.tensor(Y)), batch_size=4, shuffle=True)
    mg.manual_seed(5)
    first = [tuple(b[1].numpy()) for b in loader]
    second = [tuple(b[1].numpy()) for b in loader]
    assert [len(b) for b in first] == [4, 4, 4, 2]
    assert sorted(sum(first, ())) == sorted(Y.tolist())
    assert first != second  # a new order each epoch
    mg.manual_seed(5)
    assert [tuple(b[1].numpy()) for b in loader] == first
    generator = mg.Generator().manual_seed(1)
    own = DataLoader(TensorDataset(mg.tensor(X)), batch_size=14, shuffle=True, generator=generator)
    rows = next(iter(own))[0].numpy()
    assert sorted(rows[:, 0].tolist()) == X[:, 0].tolist()
    generator.manual_seed(1)
    np.testing.assert_array_equal(next(iter(own))[0].numpy(), rows)


@pytest.mark.parametrize("lengths", [[10, 4], [0.7, 0.3], [0.5, 0.25, 0.25], [0.34, 0.33, 0.33], [14], [0, 14]])
def test_random_split_sizes_match_torch_and_cover_the_dataset(lengths):
    torch = _torch()
    import torch.utils.data  # noqa: F401

    ours = random_split(TensorDataset(mg.tensor(X)), lengths)
    theirs = torch.utils.data.random_split(torch.utils.data.TensorDataset(torch.tensor(X)), lengths)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    rows = sorted(int(part[i][0].numpy()[0]) for part in ours for i in range(len(part)))
    assert rows == X[:, 0].astype(int).tolist()


def test_subset_concat_and_collate():
    data = TensorDataset(mg.tensor(X), mg.tensor(Y))
    subset = Subset(data, [3, 0])
    np.testing.assert_array_equal(subset[0][0].numpy(), X[3])
    both = data + subset
    assert isinstance(both, ConcatDataset) and len(both) == 16
    np.testing.assert_array_equal(both[15][0].numpy(), X[0])
    np.testing.assert_array_equal(both[-1][0].numpy(), X[0])
    batch = default_collate([{"a": np.ones(2, np.float32), "b": "s"}, {"a": np.zeros(2, np.float32), "b": "t"}])
    assert batch["b"] == ["s", "t"] and batch["a"].shape == (2, 2) and batch["a"].dtype == mg.float32
    assert default_collate([1.5, 2.0]).dtype == mg.float64 and default_collate([True, False]).dtype == mg.bool
    assert len(DataLoader(data, batch_size=3, num_workers=2, pin_memory=True)) == 5  # accepted, no workers


@pytest.mark.parametrize("call, error, message", [
    (lambda: TensorDataset(mg.tensor(X), mg.tensor(Y[:5])), ValueError, r"same size along the first axis; got \[14, 5\]"),
    (lambda: TensorDataset(X), TypeError, "argument 0 must be a Tensor; got ndarray"),
    (lambda: TensorDataset(), ValueError, "at least one tensor"),
    (lambda: DataLoader(TensorDataset(mg.tensor(X)), batch_size=0), ValueError, "batch_size must be a positive integer"),
    (lambda: DataLoader(TensorDataset(mg.tensor(X)), sampler=[0], shuffle=True), ValueError,
     "sampler and shuffle=True cannot be combined"),
    (lambda: DataLoader(TensorDataset(mg.tensor(X)), batch_sampler=[[0]], batch_size=4), ValueError,
     "batch_sampler replaces batch_size"),
    (lambda: DataLoader(42), TypeError, "dataset must have __getitem__ and __len__; got int"),
    (lambda: DataLoader(TensorDataset(mg.tensor(X)), num_workers=-1), ValueError, "num_workers must be an integer >= 0"),
    (lambda: random_split(TensorDataset(mg.tensor(X)), [10, 5]), ValueError, "add up to 15, but the dataset has 14"),
    (lambda: random_split(TensorDataset(mg.tensor(X)), [0.5, 0.6]), ValueError, "lengths must be counts"),
    (lambda: default_collate([object()]), TypeError, "samples must be tensors, numeric arrays"),
    (lambda: default_collate([(1, 2), (3,)]), RuntimeError, r"same number of fields; got \[1, 2\]"),
    (lambda: ConcatDataset([TensorDataset(mg.tensor(X))])[14], IndexError, "index 14 out of range for 14 samples"),
    (lambda: list(DataLoader(type("Sized", (Dataset,), {"__len__": lambda self: 3})(), batch_size=None)),
     NotImplementedError, "Sized must define __getitem__"),
])
def test_bad_arguments_name_what_was_expected(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("settings", [{}, {"batch_first": True}, {"batch_first": True, "padding_value": -1.0},
                                      {"padding_side": "left"}, {"batch_first": True, "padding_side": "left"}])
def test_pad_sequence_matches_torch_values_and_gradients(settings):
    torch = _torch()
    from nn.utils.rnn import pad_sequence

    arrays = [np.random.default_rng(k).standard_normal((n, 2, 3)).astype(np.float32) for k, n in enumerate((4, 1, 6))]
    ours = [mg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, reference = pad_sequence(ours, **settings), torch.nn.utils.rnn.pad_sequence(theirs, **settings)
    np.testing.assert_array_equal(out.numpy(), reference.detach().numpy())
    grad = np.random.default_rng(9).standard_normal(out.shape).astype(np.float32)
    (out * mg.tensor(grad)).sum().backward()
    (reference * torch.from_numpy(grad)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_a_loader_of_token_lists_padded_by_collate_fn():
    """The usual text batch: samples of different lengths, collate_fn pads them and keeps the lengths."""
    from nn.utils.rnn import pad_sequence

    class Reviews(Dataset):
        texts = [[5, 2, 9], [4], [7, 7, 7, 7], [1, 3]]

        def __len__(self):
            return len(self.texts)

        def __getitem__(self, i):
            return mg.tensor(self.texts[i]), i % 2

    def collate(samples):
        ids, labels = zip(*samples)
        return pad_sequence(ids, batch_first=True), mg.tensor([len(x) for x in ids]), mg.tensor(labels)
    batches = list(DataLoader(Reviews(), batch_size=3, collate_fn=collate))
    ids, lengths, labels = batches[0]
    assert ids.numpy().tolist() == [[5, 2, 9, 0], [4, 0, 0, 0], [7, 7, 7, 7]] and ids.dtype == mg.int64
    assert lengths.numpy().tolist() == [3, 1, 4] and labels.numpy().tolist() == [0, 1, 0]
    assert batches[1][0].numpy().tolist() == [[1, 3]]
    with pytest.raises(ValueError, match=r"trailing shape \(\) \(the first's\); sequence 1 has shape \(2, 2\)"):
        pad_sequence([mg.ones(3), mg.ones(2, 2)])
    with pytest.raises(ValueError, match="padding_side must be 'right' or 'left'; got 'up'"):
        pad_sequence([mg.ones(3)], padding_side="up")
    with pytest.raises(TypeError, match="sequence 0 must be a Tensor; got list"):
        pad_sequence([[1, 2]])
    with pytest.raises(ValueError, match="got no sequences"):
        pad_sequence([])
