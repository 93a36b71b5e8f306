"""minigrad.utils.data against torch.utils.data: the batches of a DataLoader over a
TensorDataset and over datasets of tuples, dicts, numbers, arrays and strings (shuffle off,
every batch_size / drop_last / sampler / batch_sampler), the sizes random_split gives, what a
shuffled epoch holds, and bad arguments."""

import collections
import fractions
import re

import numpy as np
import pytest

import minigrad as mg
from minigrad.utils.data import BatchSampler, ConcatDataset, DataLoader, Dataset
from minigrad.utils.data import RandomSampler, Subset, SubsetRandomSampler, TensorDataset
from minigrad.utils.data import WeightedRandomSampler, default_collate, random_split
from parity import plain

X = np.arange(42, dtype=np.float32).reshape(14, 3)
Y = np.arange(14, dtype=np.int64) % 4
Point = collections.namedtuple("Point", "x label")


def _torch():
    pytest.importorskip("torch.utils.data")  # imported, it is an attribute of torch
    return pytest.importorskip("torch")


def _samples(kind):
    """(a factory of a dataset of the given kind, from a tensor library)."""

    def make(lib):
        class Items(lib.utils.data.Dataset):
            def __len__(self):
                return len(X)

            def __getitem__(self, i):
                x, y = lib.tensor(X[i]), int(Y[i])
                return {
                    "tuple": lambda: (x, y),
                    "dict": lambda: {"x": x, "y": y, "name": f"n{i}"},
                    "numbers": lambda: (float(X[i, 0]), bool(i % 2), int(Y[i])),
                    "arrays": lambda: [X[i], Y[i : i + 1]],
                    "namedtuple": lambda: Point(x, y),
                }[kind]()

        return Items()

    return make


DATASETS = {
    "TensorDataset": lambda lib: lib.utils.data.TensorDataset(lib.tensor(X), lib.tensor(Y)),
    **{kind: _samples(kind) for kind in ("tuple", "dict", "numbers", "arrays", "namedtuple")},
}
LOADERS = {  # DataLoader settings, given the library's utils.data (for its sampler objects)
    "batch 4": lambda data: dict(batch_size=4),
    "batch 4, drop_last": lambda data: dict(batch_size=4, drop_last=True),
    "batch 14": lambda data: dict(batch_size=14),
    "batch 20": lambda data: dict(batch_size=20),
    "batch 20, drop_last": lambda data: dict(batch_size=20, drop_last=True),
    "no batching": lambda data: dict(batch_size=None),
    "sampler": lambda data: dict(batch_size=3, sampler=[5, 0, 13, 2, 2]),
    "batch_sampler": lambda data: dict(batch_sampler=[[3, 1], [0], [13, 12, 11]]),
    "SequentialSampler, no batching": lambda data: dict(
        batch_size=None, sampler=data.SequentialSampler(range(5))
    ),
    "BatchSampler, drop_last": lambda data: dict(
        batch_sampler=data.BatchSampler(range(13, -1, -1), 3, True)
    ),
    "BatchSampler of a sampler": lambda data: dict(
        batch_sampler=data.BatchSampler(data.SequentialSampler(range(14)), 5, False)
    ),
}


@pytest.mark.parametrize("loader", LOADERS)
@pytest.mark.parametrize("dataset", DATASETS)
def test_batches_match_torch(dataset, loader):
    torch = _torch()

    ours = DataLoader(DATASETS[dataset](mg), **LOADERS[loader](mg.utils.data))
    theirs = torch.utils.data.DataLoader(
        DATASETS[dataset](torch), **LOADERS[loader](torch.utils.data)
    )
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


# samplers whose order involves no randomness: the same indices as torch's, and the same len
SAMPLERS = {
    "SequentialSampler": lambda data: data.SequentialSampler(range(7)),
    "SequentialSampler, empty": lambda data: data.SequentialSampler([]),
    "BatchSampler": lambda data: data.BatchSampler(data.SequentialSampler(range(10)), 3, False),
    "BatchSampler, drop_last": lambda data: data.BatchSampler(
        data.SequentialSampler(range(10)), 3, True
    ),
    "BatchSampler, exact": lambda data: data.BatchSampler(range(9), 3, True),
    "BatchSampler, one short batch, drop_last": lambda data: data.BatchSampler([4, 2], 3, True),
    "BatchSampler, one short batch": lambda data: data.BatchSampler([4, 2], 3, False),
    "BatchSampler of a list": lambda data: data.BatchSampler([9, 9, 1, 0, 5], 2, False),
    "BatchSampler of BatchSampler": lambda data: data.BatchSampler(
        data.BatchSampler(range(7), 2, False), 2, False
    ),
}


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_samplers_give_torch_order_and_length(sampler):
    torch = _torch()

    ours, theirs = SAMPLERS[sampler](mg.utils.data), SAMPLERS[sampler](torch.utils.data)
    assert len(ours) == len(theirs)
    assert list(ours) == list(theirs)
    assert list(ours) == list(theirs)  # again: a sampler gives a new pass each time


def test_a_batch_sampler_of_an_iterator_batches_it_once_and_has_no_length():
    torch = _torch()

    for data in (mg.utils.data, torch.utils.data):
        sampler = data.BatchSampler(iter(range(5)), 2, True)
        assert list(sampler) == [[0, 1], [2, 3]] and list(sampler) == []
        with pytest.raises(TypeError, match="len"):
            len(sampler)


@pytest.mark.parametrize(
    "settings",
    [
        dict(),
        dict(shuffle=True),
        dict(batch_size=None),
        dict(batch_size=None, shuffle=True),
        dict(sampler=[3, 1]),
        dict(batch_sampler=[[3], [1, 2]]),
        dict(batch_size=4, drop_last=True),
    ],
)
def test_the_loader_sets_sampler_and_batch_sampler_as_torch(settings):
    torch = _torch()

    ours, theirs = (
        DataLoader(range(10), **settings),
        torch.utils.data.DataLoader(range(10), **settings),
    )
    for name in ("sampler", "batch_sampler"):
        assert type(getattr(ours, name)).__name__ == type(getattr(theirs, name)).__name__, name
    assert (ours.batch_size, ours.drop_last) == (theirs.batch_size, theirs.drop_last)
    if isinstance(theirs.batch_sampler, torch.utils.data.BatchSampler):
        assert ours.batch_sampler.sampler is ours.sampler
        assert (ours.batch_sampler.batch_size, ours.batch_sampler.drop_last) == (
            theirs.batch_size,
            theirs.drop_last,
        )
    assert len(ours) == len(theirs)


def _is_permutation(indices, size):
    return sorted(indices) == list(range(size))


def _whole_permutations_then_distinct(count, size):
    """What RandomSampler without replacement gives (torch's as ours): whole permutations of
    range(size), then count % size distinct indices."""

    def check(indices):
        whole = count - count % size
        return (
            len(indices) == count
            and all(
                _is_permutation(indices[start : start + size], size)
                for start in range(0, whole, size)
            )
            and len(set(indices[whole:])) == count % size
            and set(indices[whole:]) <= set(range(size))
        )

    return check


def _draws_from(allowed, count, distinct=False):
    def check(indices):
        return (
            len(indices) == count
            and set(indices) <= set(allowed)
            and (not distinct or len(set(indices)) == count)
        )

    return check


RANDOM_SAMPLERS = {  # name: (build(data, generator), what each epoch's indices must be)
    "RandomSampler": (
        lambda data, g: data.RandomSampler(range(50), generator=g),
        lambda indices: _is_permutation(indices, 50),
    ),
    "RandomSampler, num_samples < len": (
        lambda data, g: data.RandomSampler(range(50), num_samples=20, generator=g),
        _whole_permutations_then_distinct(20, 50),
    ),
    "RandomSampler, num_samples > len": (
        lambda data, g: data.RandomSampler(range(30), num_samples=75, generator=g),
        _whole_permutations_then_distinct(75, 30),
    ),
    "RandomSampler, replacement": (
        lambda data, g: data.RandomSampler(range(6), True, 100, generator=g),
        _draws_from(range(6), 100),
    ),
    "RandomSampler, replacement, num_samples = len": (
        lambda data, g: data.RandomSampler(range(40), True, generator=g),
        _draws_from(range(40), 40),
    ),
    "SubsetRandomSampler": (
        lambda data, g: data.SubsetRandomSampler([7, 3, 11, 40, 2] * 2 + list(range(50, 90)), g),
        lambda indices: sorted(indices) == sorted([7, 3, 11, 40, 2] * 2 + list(range(50, 90))),
    ),
    "WeightedRandomSampler": (
        lambda data, g: data.WeightedRandomSampler([1.0, 0.0, 3.0, 0.5], 60, generator=g),
        _draws_from([0, 2, 3], 60),
    ),
    "WeightedRandomSampler, no replacement": (
        lambda data, g: data.WeightedRandomSampler(
            [2.0, 0.0, 1.0] + [1.0] * 40, 30, replacement=False, generator=g
        ),
        _draws_from([0] + list(range(2, 43)), 30, distinct=True),
    ),
}


@pytest.mark.parametrize("sampler", RANDOM_SAMPLERS)
def test_random_samplers_draw_what_torch_draws_and_repeat_with_the_seed(sampler):
    torch = _torch()

    build, holds = RANDOM_SAMPLERS[sampler]
    theirs = build(torch.utils.data, torch.Generator().manual_seed(0))
    assert holds(list(theirs))  # the property is torch's
    generator = mg.Generator().manual_seed(7)
    ours = build(mg.utils.data, generator)
    assert len(ours) == len(theirs)
    first, second = list(ours), list(ours)
    assert holds(first) and holds(second)
    assert all(type(i) is int for i in first)
    assert first != second  # a new draw each epoch
    generator.manual_seed(7)
    assert list(ours) == first
    assert list(build(mg.utils.data, mg.Generator().manual_seed(7))) == first
    unseeded = build(mg.utils.data, None)  # from minigrad's seeded generator
    mg.manual_seed(3)
    drawn = list(unseeded)
    assert holds(drawn)
    mg.manual_seed(3)
    assert list(unseeded) == drawn


def test_weighted_draws_follow_the_weights():
    sampler = WeightedRandomSampler(
        mg.tensor([1.0, 0.0, 3.0]), 20000, generator=mg.Generator().manual_seed(0)
    )
    counts = np.bincount(list(sampler), minlength=3) / 20000
    np.testing.assert_allclose(counts, [0.25, 0.0, 0.75], atol=0.015)
    assert sampler.weights.dtype == mg.float64 and sampler.weights.numpy().tolist() == [
        1.0,
        0.0,
        3.0,
    ]


def test_shuffle_is_a_random_sampler_drawing_from_the_loader_generator():
    loader = DataLoader(
        range(30), batch_size=7, shuffle=True, generator=mg.Generator().manual_seed(11)
    )
    assert isinstance(loader.sampler, RandomSampler) and isinstance(
        loader.batch_sampler, BatchSampler
    )
    order = sum((batch.numpy().tolist() for batch in loader), [])
    assert order == list(RandomSampler(range(30), generator=mg.Generator().manual_seed(11)))


def test_a_loader_takes_a_sampler_object_and_any_iterable():
    data = TensorDataset(mg.tensor(X), mg.tensor(Y))
    generator = mg.Generator().manual_seed(2)
    subset = [0, 4, 9, 13]
    loader = DataLoader(data, batch_size=3, sampler=SubsetRandomSampler(subset, generator))
    rows = [int(row) for batch in loader for row in batch[0].numpy()[:, 0] // 3]
    assert sorted(rows) == subset and len(loader) == 2
    generator.manual_seed(2)
    assert [int(row) for batch in loader for row in batch[0].numpy()[:, 0] // 3] == rows
    pairs = DataLoader(data, batch_sampler=BatchSampler(reversed(range(14)), 5, True))
    assert [b[1].numpy().tolist() for b in pairs] == [Y[13:8:-1].tolist(), Y[8:3:-1].tolist()]


# name: (call(utils.data, DataLoader), exception, what both messages say, what ours says)
SAMPLER_ERRORS = {
    "RandomSampler num_samples=0": (
        lambda data, loader: data.RandomSampler(range(3), num_samples=0),
        ValueError,
        "num_samples should be a positive integer.*num_samples=0",
        None,
    ),
    "RandomSampler num_samples=-2": (
        lambda data, loader: data.RandomSampler(range(3), num_samples=-2),
        ValueError,
        "num_samples should be a positive integer.*num_samples=-2",
        None,
    ),
    "RandomSampler num_samples=2.0": (
        lambda data, loader: data.RandomSampler(range(3), num_samples=2.0),
        ValueError,
        r"num_samples should be a positive integer.*num_samples=2\.0",
        None,
    ),
    "RandomSampler of nothing": (
        lambda data, loader: data.RandomSampler([]),
        ValueError,
        "num_samples should be a positive integer.*num_samples=0",
        None,
    ),
    "RandomSampler replacement=1": (
        lambda data, loader: data.RandomSampler(range(3), replacement=1),
        TypeError,
        "replacement should be a boolean.*replacement=1",
        None,
    ),
    "RandomSampler generator=42": (
        lambda data, loader: list(data.RandomSampler(range(3), generator=42)),
        TypeError,
        "generator",
        "generator must be an mg.Generator; got int",
    ),
    "WeightedRandomSampler num_samples=0": (
        lambda data, loader: data.WeightedRandomSampler([1.0], 0),
        ValueError,
        "num_samples should be a positive integer.*num_samples=0",
        None,
    ),
    "WeightedRandomSampler num_samples=True": (
        lambda data, loader: data.WeightedRandomSampler([1.0], True),
        ValueError,
        "num_samples should be a positive integer.*num_samples=True",
        None,
    ),
    "WeightedRandomSampler replacement=1": (
        lambda data, loader: data.WeightedRandomSampler([1.0], 2, replacement=1),
        ValueError,
        "replacement should be a boolean.*replacement=1",
        None,
    ),
    "WeightedRandomSampler 2-d weights": (
        lambda data, loader: data.WeightedRandomSampler([[1.0, 2.0]], 2),
        ValueError,
        r"weights should be a 1-?d sequence.*shape \(1, 2\)",
        None,
    ),
    "WeightedRandomSampler 0-d weights": (
        lambda data, loader: data.WeightedRandomSampler(1.0, 2),
        ValueError,
        r"weights should be a 1-?d sequence.*shape \(\)",
        None,
    ),
    "WeightedRandomSampler negative weight": (
        lambda data, loader: list(data.WeightedRandomSampler([1.0, -1.0], 2)),
        RuntimeError,
        "multinomial",
        "non-negative",
    ),
    "WeightedRandomSampler zero weights": (
        lambda data, loader: list(data.WeightedRandomSampler([0.0, 0.0], 2)),
        RuntimeError,
        "multinomial.*sum",
        "positive sum",
    ),
    "WeightedRandomSampler more than there is": (
        lambda data, loader: list(data.WeightedRandomSampler([1.0, 1.0], 3, False)),
        RuntimeError,
        "without replacement",
        r"in \[1, 2\].*got 3",
    ),
    "BatchSampler batch_size=0": (
        lambda data, loader: data.BatchSampler(range(3), 0, False),
        ValueError,
        "batch_size should be a positive integer.*batch_size=0",
        None,
    ),
    "BatchSampler batch_size=2.0": (
        lambda data, loader: data.BatchSampler(range(3), 2.0, False),
        ValueError,
        r"batch_size should be a positive integer.*batch_size=2\.0",
        None,
    ),
    "BatchSampler batch_size=True": (
        lambda data, loader: data.BatchSampler(range(3), True, False),
        ValueError,
        "batch_size should be a positive integer.*batch_size=True",
        None,
    ),
    "BatchSampler drop_last=0": (
        lambda data, loader: data.BatchSampler(range(3), 2, 0),
        ValueError,
        "drop_last should be a boolean.*drop_last=0",
        None,
    ),
    "Sampler without __iter__": (
        lambda data, loader: list(data.Sampler()),
        NotImplementedError,
        None,
        "Sampler must define __iter__",
    ),
    "DataLoader batch_size=0": (
        lambda data, loader: loader(range(3), batch_size=0),
        ValueError,
        "batch_size should be a positive integer.*batch_size=0",
        None,
    ),
    "DataLoader batch_size=-1": (
        lambda data, loader: loader(range(3), batch_size=-1),
        ValueError,
        "batch_size should be a positive integer.*batch_size=-1",
        None,
    ),
    "DataLoader drop_last=1": (
        lambda data, loader: loader(range(3), batch_size=2, drop_last=1),
        ValueError,
        "drop_last should be a boolean.*drop_last=1",
        None,
    ),
    "DataLoader sampler and shuffle": (
        lambda data, loader: loader(range(3), sampler=[0], shuffle=True),
        ValueError,
        "sampler.* mutually exclusive with shuffle",
        None,
    ),
    "DataLoader batch_sampler and batch_size": (
        lambda data, loader: loader(range(3), batch_sampler=[[0]], batch_size=4),
        ValueError,
        "batch_sampler.* mutually exclusive with batch_size, shuffle, sampler,? and drop_last",
        None,
    ),
    "DataLoader batch_sampler and drop_last": (
        lambda data, loader: loader(range(3), batch_sampler=[[0]], drop_last=True),
        ValueError,
        "batch_sampler.* mutually exclusive with batch_size",
        None,
    ),
    "DataLoader batch_sampler and shuffle": (
        lambda data, loader: loader(range(3), batch_sampler=[[0]], shuffle=True),
        ValueError,
        "batch_sampler.* mutually exclusive with batch_size",
        None,
    ),
    "DataLoader batch_size=None and drop_last": (
        lambda data, loader: loader(range(3), batch_size=None, drop_last=True),
        ValueError,
        "batch_size=None.* mutually exclusive with drop_last",
        None,
    ),
    "DataLoader shuffled nothing": (
        lambda data, loader: loader([], shuffle=True),
        ValueError,
        "num_samples should be a positive integer.*num_samples=0",
        None,
    ),
}


@pytest.mark.parametrize("case", SAMPLER_ERRORS)
def test_bad_sampler_and_loader_arguments_raise_as_torch(case):
    torch = _torch()

    call, error, both_say, ours_say = SAMPLER_ERRORS[case]
    with pytest.raises(error, match=both_say):
        call(torch.utils.data, torch.utils.data.DataLoader)
    with pytest.raises(error, match=both_say) as info:
        call(mg.utils.data, DataLoader)
    assert ours_say is None or re.search(ours_say, str(info.value)), str(info.value)


@pytest.mark.parametrize(
    "lengths", [[10, 4], [0.7, 0.3], [0.5, 0.25, 0.25], [0.34, 0.33, 0.33], [14], [0, 14]]
)
def test_random_split_sizes_match_torch_and_cover_the_dataset(lengths):
    torch = _torch()

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
    batch = default_collate(
        [{"a": np.ones(2, np.float32), "b": "s"}, {"a": np.zeros(2, np.float32), "b": "t"}]
    )
    assert (
        batch["b"] == ["s", "t"] and batch["a"].shape == (2, 2) and batch["a"].dtype == mg.float32
    )
    assert (
        default_collate([1.5, 2.0]).dtype == mg.float64
        and default_collate([True, False]).dtype == mg.bool
    )
    # accepted, no workers
    assert len(DataLoader(data, batch_size=3, num_workers=2, pin_memory=True)) == 5


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: TensorDataset(mg.tensor(X), mg.tensor(Y[:5])),
            ValueError,
            r"same size along the first axis; got \[14, 5\]",
        ),
        (lambda: TensorDataset(X), TypeError, "argument 0 must be a Tensor; got ndarray"),
        (lambda: TensorDataset(), ValueError, "at least one tensor"),
        (lambda: DataLoader(42), TypeError, "dataset must have __getitem__ and __len__; got int"),
        (
            lambda: DataLoader(TensorDataset(mg.tensor(X)), num_workers=-1),
            ValueError,
            "num_workers must be an integer >= 0",
        ),
        (
            lambda: random_split(TensorDataset(mg.tensor(X)), [10, 5]),
            ValueError,
            "add up to 15, but the dataset has 14",
        ),
        (
            lambda: random_split(TensorDataset(mg.tensor(X)), [0.5, 0.6]),
            ValueError,
            "lengths must be counts",
        ),
        (lambda: default_collate([object()]), TypeError, "samples must be tensors, numeric arrays"),
        (
            lambda: default_collate([(1, 2), (3,)]),
            RuntimeError,
            r"same number of fields; got \[1, 2\]",
        ),
        (
            lambda: ConcatDataset([TensorDataset(mg.tensor(X))])[14],
            IndexError,
            "index 14 out of range for 14 samples",
        ),
        (
            lambda: list(
                DataLoader(
                    type("Sized", (Dataset,), {"__len__": lambda self: 3})(), batch_size=None
                )
            ),
            NotImplementedError,
            "Sized must define __getitem__",
        ),
    ],
)
def test_bad_arguments_name_what_was_expected(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"batch_first": True},
        {"batch_first": True, "padding_value": -1.0},
        {"padding_side": "left"},
        {"batch_first": True, "padding_side": "left"},
    ],
)
def test_pad_sequence_matches_torch_values_and_gradients(settings):
    torch = _torch()
    from minigrad.nn.utils.rnn import pad_sequence

    arrays = [
        np.random.default_rng(k).standard_normal((n, 2, 3)).astype(np.float32)
        for k, n in enumerate((4, 1, 6))
    ]
    ours = [mg.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, reference = (
        pad_sequence(ours, **settings),
        torch.nn.utils.rnn.pad_sequence(theirs, **settings),
    )
    np.testing.assert_array_equal(out.numpy(), reference.detach().numpy())
    grad = np.random.default_rng(9).standard_normal(out.shape).astype(np.float32)
    (out * mg.tensor(grad)).sum().backward()
    (reference * torch.from_numpy(grad)).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_a_loader_of_token_lists_padded_by_collate_fn():
    """The usual text batch: samples of different lengths, collate_fn pads them and keeps the
    lengths."""
    from minigrad.nn.utils.rnn import pad_sequence

    class Reviews(Dataset):
        texts = [[5, 2, 9], [4], [7, 7, 7, 7], [1, 3]]

        def __len__(self):
            return len(self.texts)

        def __getitem__(self, i):
            return mg.tensor(self.texts[i]), i % 2

    def collate(samples):
        ids, labels = zip(*samples)
        return (
            pad_sequence(ids, batch_first=True),
            mg.tensor([len(x) for x in ids]),
            mg.tensor(labels),
        )

    batches = list(DataLoader(Reviews(), batch_size=3, collate_fn=collate))
    ids, lengths, labels = batches[0]
    assert (
        ids.numpy().tolist() == [[5, 2, 9, 0], [4, 0, 0, 0], [7, 7, 7, 7]] and ids.dtype == mg.int64
    )
    assert lengths.numpy().tolist() == [3, 1, 4] and labels.numpy().tolist() == [0, 1, 0]
    assert batches[1][0].numpy().tolist() == [[1, 3]]
    with pytest.raises(
        ValueError, match=r"trailing shape \(\) \(the first's\); sequence 1 has shape \(2, 2\)"
    ):
        pad_sequence([mg.ones(3), mg.ones(2, 2)])
    with pytest.raises(ValueError, match="padding_side must be 'right' or 'left'; got 'up'"):
        pad_sequence([mg.ones(3)], padding_side="up")
    with pytest.raises(TypeError, match="sequence 0 must be a Tensor; got list"):
        pad_sequence([[1, 2]])
    with pytest.raises(ValueError, match="got no sequences"):
        pad_sequence([])


SMALL_X = np.arange(30, dtype=np.float32).reshape(10, 3)


SMALL_Y = np.arange(10, dtype=np.int64) % 3


@pytest.mark.parametrize(
    "settings",
    [
        dict(batch_size=3),
        dict(batch_size=3, drop_last=True),
        dict(batch_size=10),
        dict(batch_size=11, drop_last=True),
        dict(batch_size=None),
    ],
)
def test_loader_over_a_list_matches_torch_and_repeats(settings):
    torch = _torch()
    data = [(SMALL_X[i], int(SMALL_Y[i]), {"k": float(i)}) for i in range(10)]
    ours, theirs = DataLoader(data, **settings), torch.utils.data.DataLoader(data, **settings)
    assert len(ours) == len(theirs)
    first = [plain(b) for b in ours]
    assert first == [plain(b) for b in theirs]
    assert [plain(b) for b in ours] == first  # a second epoch, the same batches


Pair = collections.namedtuple("Pair", "a b")


SAMPLES = {
    "nested dict": [{"x": {"y": np.float32(i) * np.ones(2, np.float32)}, "n": i} for i in range(4)],
    "namedtuple of lists": [Pair([i, i + 1], (float(i), True)) for i in range(4)],
    "numpy float32 scalars": [np.float32(i) / 2 for i in range(4)],
    "numpy int32 scalars": [np.int32(i) for i in range(4)],
    "0-d float32 arrays": [np.array(i, dtype=np.float32) for i in range(4)],
}


@pytest.mark.parametrize("kind", list(SAMPLES))
def test_default_collate_matches_torch(kind):
    torch = _torch()
    batch = SAMPLES[kind]
    assert plain(default_collate(batch)) == plain(torch.utils.data.default_collate(batch))


# Batches of numbers, each collated as torch 2.13 collates it: the first sample picks the rule
# (a Python float: float64; a Python int or bool, or a numpy scalar: the dtype torch.tensor infers
# for the whole list, promoted), so a later float or NaN never is truncated to the first's ints.
NUMBER_BATCHES = {
    "ints": [1, 2],
    "floats": [1.0, 2.5],
    "int then float": [1, 2.5],
    "float then int": [2.5, 1],
    "bools": [True, False],
    "bool then int": [True, 2],
    "int then bool": [2, True],
    "bool then float": [True, 2.5],
    "int then NaN": [1, float("nan")],
    "NaN then int": [float("nan"), 1],
    "int then inf": [1, float("inf")],
    "extreme int64s": [-(2**63), 2**63 - 1],
    "float then an int past int64": [1.5, 2**70],
    "numpy int32s": [np.int32(1), np.int32(2)],
    "numpy float32s": [np.float32(1), np.float32(2.5)],
    "numpy float32 and NaN": [np.float32(1), np.float32("nan")],
    "numpy int32 then float32": [np.int32(1), np.float32(2.5)],
    "numpy float32 then int32": [np.float32(1.5), np.int32(2)],
    "numpy int32 then Python float": [np.int32(1), 2.5],
    "numpy int32 then Python int": [np.int32(1), 7],
    "numpy float32 then Python int": [np.float32(1.5), 2],
    "numpy uint8 then int32": [np.uint8(200), np.int32(-1)],
    "numpy bools": [np.bool_(True), np.bool_(False)],
    "numpy bool then Python bool": [np.bool_(True), False],
    "numpy float64s": [np.float64(1.5), np.float64(2)],
    "Python int then numpy int32": [1, np.int32(2)],
    "Python int then numpy float64": [1, np.float64(2.5)],
    "Python int then numpy uint8": [1, np.uint8(200)],
    "Python float then numpy float32": [1.5, np.float32(2)],
    "0-d int64 tensors": lambda lib: [lib.tensor(1), lib.tensor(2)],
    "0-d int64 then float32 tensor": lambda lib: [lib.tensor(1), lib.tensor(2.5)],
    "0-d bool then int64 tensor": lambda lib: [lib.tensor(True), lib.tensor(2)],
    "0-d float32 then float64 tensor": lambda lib: [
        lib.tensor(1.0),
        lib.tensor(2.0, dtype=lib.float64),
    ],
    "0-d int arrays": [np.array(1), np.array(2)],
    "0-d int64 then float64 array": [np.array(1), np.array(2.5)],
    "int64 then float64 arrays": [np.array([1, 2]), np.array([2.5, 3.0])],
}


def _number_batch(lib, kind):
    """NUMBER_BATCHES[kind], its tensors made by lib (minigrad or torch)."""
    batch = NUMBER_BATCHES[kind]
    return batch(lib) if callable(batch) else batch


@pytest.mark.parametrize("kind", list(NUMBER_BATCHES))
def test_default_collate_promotes_numbers_as_torch(kind):
    """default_collate took the first sample's dtype: [1, 2.5] came back int64 [1, 2], [True, 2]
    bool, and [1, nan] raised."""
    torch = _torch()
    ours = default_collate(_number_batch(mg, kind)).numpy()
    theirs = torch.utils.data.default_collate(_number_batch(torch, kind)).numpy()
    assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape)
    np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize(
    "batch, error, message",
    [
        ([1, "a"], TypeError, "must hold only numbers; got str"),
        ([1, None], TypeError, "must hold only numbers; got NoneType"),
        ([2**64, 1], ValueError, "does not fit in int64"),
        ([fractions.Fraction(1, 2)], TypeError, "got Fraction"),
    ],
)
def test_default_collate_refuses_what_torch_refuses(batch, error, message):
    torch = _torch()
    with pytest.raises(Exception):
        torch.utils.data.default_collate(batch)
    with pytest.raises(error, match=message):
        default_collate(batch)


def test_shuffle_with_a_seeded_generator_is_deterministic():
    data = TensorDataset(mg.tensor(SMALL_X), mg.tensor(SMALL_Y))

    def epochs(seed):
        loader = DataLoader(
            data,
            batch_size=4,
            shuffle=True,
            drop_last=True,
            generator=mg.Generator().manual_seed(seed),
        )
        return [[b[0].numpy()[:, 0].tolist() for b in loader] for _ in range(2)]

    a, b = epochs(3), epochs(3)
    assert a == b
    assert a[0] != a[1]  # a fresh order each epoch
    assert all(len(e) == 2 and all(len(batch) == 4 for batch in e) for e in a)
    assert len(set(sum(a[0], []))) == 8
    assert epochs(4) != a


def test_sampler_and_batch_sampler_objects():
    torch = _torch()

    class Reverse:
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n - 1, -1, -1))

        def __len__(self):
            return self.n

    data = list(range(10))
    for kwargs in (
        dict(sampler=Reverse(10), batch_size=4),
        dict(batch_sampler=[[1, 2], [9], [0, 0, 0]]),
    ):
        ours, theirs = DataLoader(data, **kwargs), torch.utils.data.DataLoader(data, **kwargs)
        assert len(ours) == len(theirs)
        assert [plain(b) for b in ours] == [plain(b) for b in theirs]
    assert len(DataLoader(data, batch_size=4, num_workers=0)) == 3


def test_torch_samplers_are_importable():
    from minigrad.utils.data import BatchSampler, RandomSampler, SequentialSampler  # noqa: F401

    loader = DataLoader(
        list(range(5)), batch_sampler=BatchSampler(SequentialSampler(range(5)), 2, False)
    )
    assert [b.numpy().tolist() for b in loader] == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize(
    "lengths", [[0.1, 0.2, 0.7], [0.5, 0.5], [0.3, 0.3, 0.4], [1 / 3] * 3, [0.25] * 4]
)
@pytest.mark.parametrize("size", [7, 10])
def test_random_split_fractions_match_torch_sizes_and_repeat(lengths, size):
    torch = _torch()
    ours = random_split(range(size), lengths, generator=mg.Generator().manual_seed(0))
    theirs = torch.utils.data.random_split(range(size), lengths)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    again = random_split(range(size), lengths, generator=mg.Generator().manual_seed(0))
    assert [list(s) for s in ours] == [list(s) for s in again]
    assert sorted(sum((list(s) for s in ours), [])) == list(range(size))


def test_subset_and_concat_negative_indices_match_torch():
    torch = _torch()
    ours_ds = TensorDataset(mg.tensor(SMALL_X), mg.tensor(SMALL_Y))
    theirs_ds = torch.utils.data.TensorDataset(torch.tensor(SMALL_X), torch.tensor(SMALL_Y))
    ours = [Subset(ours_ds, [7, 2, 5]), ConcatDataset([ours_ds, Subset(ours_ds, [1, 0])])]
    theirs = [
        torch.utils.data.Subset(theirs_ds, [7, 2, 5]),
        torch.utils.data.ConcatDataset([theirs_ds, torch.utils.data.Subset(theirs_ds, [1, 0])]),
    ]
    for a, b in zip(ours, theirs):
        assert len(a) == len(b)
        for i in range(-len(b), len(b)):
            assert plain(a[i]) == plain(b[i]), i
        for i in (len(b), -len(b) - 1):
            with pytest.raises((IndexError, ValueError)):
                b[i]
            with pytest.raises((IndexError, ValueError)):
                a[i]
