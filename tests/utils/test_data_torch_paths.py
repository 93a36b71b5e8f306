"""minigrad.utils.data as torch's package: the submodule import paths (dataset, sampler,
dataloader, distributed), random samplers that draw lazily (num_samples=int(1e10) costs no
memory, checked with tracemalloc, not a clock), the DataLoader arguments torch has and the errors
torch gives for contradictory settings, each against torch.utils.data on the same dataset,
iterable datasets batched as they stream, and the infinite loader loops of minGPT's trainer and
makemore."""

import importlib
import multiprocessing
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad.utils.data import DataLoader, RandomSampler, TensorDataset
from minigrad.utils.data import WeightedRandomSampler, default_collate, default_convert
from minigrad.utils.data.sampler import DRAW_CHUNK
from parity import plain, raises_like_torch

torch = pytest.importorskip("torch")

few = settings(max_examples=30, deadline=None)  # no wall-clock limits
HUGE = int(1e10)  # minGPT's and makemore's num_samples: 74.5 GiB as int64 indices
X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10, dtype=np.int64) % 3


def pair(lib):
    """The same TensorDataset of (X, Y) in minigrad or torch."""
    return lib.utils.data.TensorDataset(lib.tensor(X), lib.tensor(Y))


class Blocks:
    """A minGPT-style dataset written once for either library: sample i is (the block of tokens at
    i, the block after it), as tensors made by lib."""

    def __init__(self, lib, tokens=40, block=5):
        self.lib, self.tokens, self.block = lib, np.arange(tokens) % 7, block

    def __len__(self):
        return len(self.tokens) - self.block

    def __getitem__(self, index):
        chunk = self.tokens[index : index + self.block + 1]
        return self.lib.tensor(chunk[:-1]), self.lib.tensor(chunk[1:])


# -- torch's submodule paths --------------------------------------------------------------------

PATHS = {
    "dataset": [
        "Dataset",
        "IterableDataset",
        "ChainDataset",
        "TensorDataset",
        "Subset",
        "ConcatDataset",
        "random_split",
    ],
    "sampler": [
        "Sampler",
        "SequentialSampler",
        "RandomSampler",
        "SubsetRandomSampler",
        "WeightedRandomSampler",
        "BatchSampler",
    ],
    "dataloader": ["DataLoader", "default_collate", "default_convert", "get_worker_info"],
    "distributed": ["DistributedSampler"],
}


@pytest.mark.parametrize("submodule", PATHS)
def test_each_name_lives_where_torch_puts_it_and_is_the_package_name(submodule):
    ours = importlib.import_module(f"minigrad.utils.data.{submodule}")
    theirs = importlib.import_module(f"torch.utils.data.{submodule}")
    package = importlib.import_module("minigrad.utils.data")
    for name in PATHS[submodule]:
        assert hasattr(theirs, name), name  # the path is torch's
        assert getattr(ours, name) is getattr(package, name), name
    assert mg.utils.data is package
    assert sorted(package.__all__) == sorted(sum(PATHS.values(), []))


def test_the_import_lines_of_torch_programs_work():
    from minigrad.utils.data import DataLoader as from_package
    from minigrad.utils.data.dataloader import DataLoader as from_module
    from minigrad.utils.data.dataset import Dataset
    from minigrad.utils.data.sampler import RandomSampler as sampler_class

    assert from_package is from_module and sampler_class is RandomSampler
    assert issubclass(TensorDataset, Dataset)
    assert mg.utils.data.get_worker_info() is torch.utils.data.get_worker_info() is None


# -- lazy random samplers ------------------------------------------------------------------------


def peak_bytes(make_iterator, take):
    """The peak of Python and numpy allocations while `take` items are drawn from a fresh
    iterator (numpy reports its arrays to tracemalloc)."""
    tracemalloc.start()
    try:
        iterator = make_iterator()
        items = [next(iterator) for _ in range(take)]
        return tracemalloc.get_traced_memory()[1], items
    finally:
        tracemalloc.stop()


LAZY_SAMPLERS = {
    "RandomSampler, replacement": lambda lib: lib.utils.data.RandomSampler(
        range(10), replacement=True, num_samples=HUGE
    ),
    "RandomSampler, permutations": lambda lib: lib.utils.data.RandomSampler(
        range(10), num_samples=HUGE
    ),
    "WeightedRandomSampler": lambda lib: lib.utils.data.WeightedRandomSampler(
        [1.0, 2.0, 0.0, 1.0], HUGE
    ),
}


@pytest.mark.parametrize("name", LAZY_SAMPLERS)
def test_a_huge_num_samples_costs_no_memory_and_keeps_its_length(name):
    sampler = LAZY_SAMPLERS[name](mg)
    assert len(sampler) == HUGE == len(LAZY_SAMPLERS[name](torch))
    peak, drawn = peak_bytes(lambda: iter(sampler), 3 * DRAW_CHUNK + 5)  # past chunk boundaries
    assert peak < 2**20, f"{peak} bytes held to draw {len(drawn)} of {HUGE} indices"
    assert all(type(i) is int and 0 <= i < 10 for i in drawn)
    if name == "WeightedRandomSampler":
        assert 2 not in drawn  # weight 0
    if name == "RandomSampler, permutations":  # whole permutations one after the other, as torch
        assert all(sorted(drawn[k : k + 10]) == list(range(10)) for k in range(0, 3000, 10))


def test_a_huge_batch_sampler_and_loader_cost_no_memory():
    data = pair(mg)
    loader = DataLoader(
        data, sampler=RandomSampler(data, replacement=True, num_samples=HUGE), batch_size=4
    )
    theirs = torch.utils.data.DataLoader(
        pair(torch),
        sampler=torch.utils.data.RandomSampler(pair(torch), replacement=True, num_samples=HUGE),
        batch_size=4,
    )
    assert len(loader) == len(theirs) == HUGE // 4
    peak, batches = peak_bytes(lambda: iter(loader), 300)  # 1200 indices: past a chunk
    assert peak < 2**20, f"{peak} bytes held for 300 batches"
    assert [plain(b)[1][0][:2] for b in batches[:1]] == [("array", "float32")]
    assert all(b[0].shape == (4, 3) and b[1].shape == (4,) for b in batches)


@few
@given(
    size=st.integers(1, 12),
    num_samples=st.integers(1, 2 * DRAW_CHUNK + 40),
    replacement=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_random_sampler_draws_what_torch_s_draws_chunk_by_chunk(
    size, num_samples, replacement, seed
):
    """With replacement: num_samples indices in range (torch's sampler gives the same kind);
    without: consecutive permutations of range(size), then distinct indices, as torch's."""

    def holds(drawn):
        if len(drawn) != num_samples or not all(0 <= i < size for i in drawn):
            return False
        if replacement:
            return True
        whole, rest = divmod(num_samples, size)
        blocks = [drawn[k * size : (k + 1) * size] for k in range(whole)]
        tail = drawn[whole * size :]
        return all(sorted(b) == list(range(size)) for b in blocks) and len(set(tail)) == rest

    sampler = RandomSampler(
        range(size), replacement, num_samples, generator=mg.Generator().manual_seed(seed)
    )
    theirs = torch.utils.data.RandomSampler(
        range(size), replacement, num_samples, generator=torch.Generator().manual_seed(seed)
    )
    assert len(sampler) == len(theirs) == num_samples
    drawn = list(sampler)
    assert holds(list(theirs)) and holds(drawn)
    sampler.generator.manual_seed(seed)
    assert list(sampler) == drawn  # the chunks repeat with the seed


def test_draws_with_replacement_are_uniform_and_weighted_draws_follow_the_weights():
    """The distributions, over two million draws (chunk after chunk)."""
    count = 2_000_000
    uniform = RandomSampler(
        range(5), replacement=True, num_samples=count, generator=mg.Generator().manual_seed(0)
    )
    np.testing.assert_allclose(np.bincount(list(uniform), minlength=5) / count, 0.2, atol=2e-3)
    weights = [1.0, 0.0, 3.0, 4.0]
    weighted = WeightedRandomSampler(weights, count, generator=mg.Generator().manual_seed(1))
    theirs = torch.utils.data.WeightedRandomSampler(
        weights, count, generator=torch.Generator().manual_seed(1)
    )
    for drawn in (list(weighted), list(theirs)):
        np.testing.assert_allclose(
            np.bincount(drawn, minlength=4) / count, np.array(weights) / 8, atol=2e-3
        )


def test_an_empty_data_source_is_a_clear_error():
    with pytest.raises(ZeroDivisionError):  # torch's
        list(torch.utils.data.RandomSampler([], num_samples=3))
    for replacement in (False, True):
        with pytest.raises(ValueError, match="data_source is empty.*num_samples=3"):
            list(RandomSampler([], replacement, num_samples=3))


# -- the infinite loaders of minGPT's trainer and makemore ---------------------------------------


def test_a_mingpt_style_infinite_loader_gives_batches_as_torch_s():
    def loop(lib):
        data = Blocks(lib)
        loader = lib.utils.data.DataLoader(
            data,
            sampler=lib.utils.data.RandomSampler(data, replacement=True, num_samples=HUGE),
            shuffle=False,
            pin_memory=True,
            batch_size=4,
            num_workers=0,
        )
        batches = iter(loader)
        return len(loader), [next(batches) for _ in range(5)]

    ours, theirs = loop(mg), loop(torch)
    assert ours[0] == theirs[0] == HUGE // 4
    for (x, y), (tx, ty) in zip(ours[1], theirs[1]):
        assert x.shape == tuple(tx.shape) == (4, 5) and str(x.dtype) == "int64"
        assert x.dtype == mg.int64 and ty.dtype == torch.int64
        # each row is a block of the token stream and y the same block shifted by one
        np.testing.assert_array_equal(x.numpy()[:, 1:], y.numpy()[:, :-1])
        np.testing.assert_array_equal((x.numpy()[:, 1:] - x.numpy()[:, :-1]) % 7, 1)


def test_a_makemore_style_infinite_loader_with_workers_warns_and_loads_here():
    """makemore's InfiniteDataLoader: num_workers=4, pin_memory=True, next() forever."""
    data = Blocks(mg)
    sampler = RandomSampler(data, replacement=True, num_samples=HUGE)
    with pytest.warns(UserWarning, match="num_workers=4.*loads every batch in this process"):
        loader = DataLoader(data, sampler=sampler, batch_size=8, pin_memory=True, num_workers=4)
    batches = iter(loader)
    for _ in range(20):
        x, y = next(batches)
        assert x.shape == y.shape == (8, 5)
    assert loader.prefetch_factor == 2 and loader.num_workers == 4


# -- the arguments, against torch's loader on the same dataset ------------------------------------

SETTINGS = {  # deterministic orders: the same batches as torch's loader
    "defaults": dict(),
    "shuffle=None": dict(shuffle=None, batch_size=3),
    "drop_last": dict(batch_size=3, drop_last=True),
    "pin_memory": dict(batch_size=4, pin_memory=True, pin_memory_device=""),
    "timeout and worker_init_fn": dict(batch_size=4, timeout=0, worker_init_fn=lambda worker: 0),
    "collate_fn": dict(batch_size=4, collate_fn=lambda samples: [len(samples), samples[0][1]]),
    "collate_fn, no batching": dict(batch_size=None, collate_fn=lambda sample: sample[1]),
    "in_order": dict(batch_size=5, in_order=True),
    "positional": (4, False, None, None, 0, None, False, True),
}


@pytest.mark.parametrize("name", SETTINGS)
def test_each_argument_gives_torch_s_batches(name):
    setting = SETTINGS[name]
    args, kwargs = (setting, {}) if isinstance(setting, tuple) else ((), setting)
    ours = DataLoader(pair(mg), *args, **kwargs)
    theirs = torch.utils.data.DataLoader(pair(torch), *args, **kwargs)
    assert len(ours) == len(theirs)
    assert [plain(b) for b in ours] == [plain(b) for b in theirs]
    for attribute in ("batch_size", "drop_last", "num_workers", "prefetch_factor", "timeout"):
        assert getattr(ours, attribute) == getattr(theirs, attribute), attribute
    assert type(ours.sampler).__name__ == type(theirs.sampler).__name__
    assert (ours.collate_fn in (default_collate, default_convert)) == (
        theirs.collate_fn in (torch.utils.data.default_collate, torch.utils.data.default_convert)
    )


@pytest.mark.parametrize(
    "workers",
    [
        dict(num_workers=2),
        dict(num_workers=2, persistent_workers=True, prefetch_factor=3, timeout=30),
        dict(num_workers=1, multiprocessing_context="spawn"),
        dict(num_workers=1, multiprocessing_context=multiprocessing.get_context("fork")),
    ],
)
def test_workers_give_the_batches_torch_s_workers_give(workers):
    """torch's workers keep the sampler's order; minigrad warns and loads the same batches here."""
    with pytest.warns(UserWarning, match=f"num_workers={workers['num_workers']}"):
        ours = DataLoader(pair(mg), batch_size=3, **workers)
    expected = [plain(b) for b in DataLoader(pair(mg), batch_size=3)]
    assert [plain(b) for b in ours] == [plain(b) for b in ours] == expected
    if "spawn" not in str(workers):  # a spawned torch worker re-imports this test file
        theirs = torch.utils.data.DataLoader(pair(torch), batch_size=3, **workers)
        assert [plain(b) for b in theirs] == expected
        assert ours.prefetch_factor == theirs.prefetch_factor
    assert ours.persistent_workers == workers.get("persistent_workers", False)


def test_shuffle_and_generator_give_a_new_permutation_each_epoch_repeated_by_the_seed():
    def epochs(lib, generator):
        loader = lib.utils.data.DataLoader(
            pair(lib), batch_size=4, shuffle=True, generator=generator
        )
        return [[int(v) for b in loader for v in b[0][:, 0].tolist()] for _ in range(3)]

    for lib in (mg, torch):
        first = epochs(lib, lib.Generator().manual_seed(3))
        assert all(sorted(order) == X[:, 0].tolist() for order in first)
        assert len({tuple(order) for order in first}) == 3
        assert epochs(lib, lib.Generator().manual_seed(3)) == first


def test_a_dataset_with_getitems_is_given_each_batch_s_indices_as_torch():
    def make(lib):
        class Rows(lib.utils.data.Dataset):
            def __len__(self):
                return 7

            def __getitem__(self, index):
                raise AssertionError("the loader should call __getitems__")

            def __getitems__(self, indices):
                return [(lib.tensor(float(i)), i * 10) for i in indices]

        return Rows()

    ours = [plain(b) for b in DataLoader(make(mg), batch_size=3)]
    assert ours == [plain(b) for b in torch.utils.data.DataLoader(make(torch), batch_size=3)]


@pytest.mark.parametrize("attribute", ["batch_size", "sampler", "drop_last", "persistent_workers"])
def test_the_samplers_settings_cannot_change_after_init_as_torch(attribute):
    error = raises_like_torch(
        lambda: setattr(DataLoader(pair(mg)), attribute, 2),
        lambda: setattr(torch.utils.data.DataLoader(pair(torch)), attribute, 2),
        must_mention=[attribute, "after DataLoader is initialized"],
    )
    assert isinstance(error, ValueError)
    loader = DataLoader(pair(mg))
    loader.collate_fn = default_convert  # torch lets these change
    loader.num_workers = 0


CONTRADICTIONS = {  # settings torch refuses, and what minigrad's message must name
    "sampler and shuffle": (dict(sampler=[0, 1], shuffle=True), ["sampler", "shuffle"]),
    "batch_sampler and batch_size": (
        dict(batch_sampler=[[0]], batch_size=2),
        ["batch_sampler", "batch_size"],
    ),
    "batch_sampler and shuffle": (dict(batch_sampler=[[0]], shuffle=True), ["batch_sampler"]),
    "batch_sampler and sampler": (dict(batch_sampler=[[0]], sampler=[0]), ["batch_sampler"]),
    "batch_sampler and drop_last": (dict(batch_sampler=[[0]], drop_last=True), ["drop_last"]),
    "batch_size=None and drop_last": (dict(batch_size=None, drop_last=True), ["drop_last"]),
    "num_workers=-1": (dict(num_workers=-1), ["num_workers=-1", ">= 0"]),
    "num_workers='2'": (dict(num_workers="2"), ["num_workers='2'", "integer"]),
    "timeout=-1": (dict(timeout=-1), ["timeout=-1", "non-negative"]),
    "timeout='x'": (dict(timeout="x"), ["timeout='x'", "number"]),
    "prefetch_factor without workers": (dict(prefetch_factor=2), ["prefetch_factor=2"]),
    "prefetch_factor=-1": (dict(num_workers=1, prefetch_factor=-1), ["prefetch_factor=-1"]),
    "persistent_workers without workers": (
        dict(persistent_workers=True),
        ["persistent_workers", "num_workers > 0"],
    ),
    "multiprocessing_context without workers": (
        dict(multiprocessing_context="fork"),
        ["multiprocessing_context", "num_workers=0"],
    ),
    "multiprocessing_context typo": (
        dict(num_workers=1, multiprocessing_context="frok"),
        ["'frok'", "fork"],
    ),
    "multiprocessing_context not a context": (
        dict(num_workers=1, multiprocessing_context=3),
        ["multiprocessing_context", "int"],
    ),
}


@pytest.mark.parametrize("name", CONTRADICTIONS)
def test_contradictory_settings_raise_as_torch(name):
    kwargs, words = CONTRADICTIONS[name]
    raises_like_torch(
        lambda: DataLoader(pair(mg), **kwargs),
        lambda: torch.utils.data.DataLoader(pair(torch), **kwargs),
        must_mention=words,
    )


def stream(lib, size, sized=True):
    """An IterableDataset of `size` samples (a tensor and an int) written once for either
    library, with a len() unless sized=False."""

    class Stream(lib.utils.data.IterableDataset):
        def __iter__(self):
            for i in range(size):
                yield lib.tensor([float(i), 2.0 * i]), i

    if sized:
        Stream.__len__ = lambda self: size
    return Stream()


@few
@given(
    size=st.integers(0, 25),
    batch_size=st.one_of(st.none(), st.integers(1, 30)),
    drop_last=st.booleans(),
)
def test_an_iterable_dataset_is_batched_as_it_streams_as_torch(size, batch_size, drop_last):
    drop_last = drop_last and batch_size is not None

    def batches(lib):
        loader = lib.utils.data.DataLoader(
            stream(lib, size), batch_size=batch_size, drop_last=drop_last
        )
        return len(loader), [plain(b) for b in loader], type(loader.sampler).__name__

    ours, theirs = batches(mg), batches(torch)
    assert ours[:2] == theirs[:2]
    assert (ours[2], theirs[2]) == ("_Endless", "_InfiniteConstantSampler")  # no indices


def test_iterable_datasets_chain_and_refuse_indices_as_torch():
    for lib in (mg, torch):
        assert isinstance(stream(lib, 3) + stream(lib, 2), lib.utils.data.ChainDataset)
    chained = [plain(b) for b in DataLoader(stream(mg, 3) + stream(mg, 2), batch_size=2)]
    assert chained == [
        plain(b)
        for b in torch.utils.data.DataLoader(stream(torch, 3) + stream(torch, 2), batch_size=2)
    ]
    assert len(mg.utils.data.ChainDataset([stream(mg, 3), stream(mg, 4)])) == 7
    for refused in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
        raises_like_torch(
            lambda: DataLoader(stream(mg, 3), **refused),
            lambda: torch.utils.data.DataLoader(stream(torch, 3), **refused),
            must_mention=["IterableDataset", f"{next(iter(refused))}="],
        )
    raises_like_torch(  # len(loader) of a stream without len()
        lambda: len(DataLoader(stream(mg, 3, sized=False))),
        lambda: len(torch.utils.data.DataLoader(stream(torch, 3, sized=False))),
        must_mention=["Stream"],
    )
    with pytest.raises(TypeError, match="IterableDatasets only; got TensorDataset"):
        list(mg.utils.data.ChainDataset([stream(mg, 1), pair(mg)]))
    with pytest.raises(TypeError, match="map-style datasets only; got the IterableDataset Stream"):
        mg.utils.data.ConcatDataset([pair(mg), stream(mg, 2)])


@few
@given(
    size=st.integers(1, 25),
    batch_size=st.one_of(st.none(), st.integers(1, 30)),
    drop_last=st.booleans(),
)
def test_sequential_batches_match_torch_for_any_size(size, batch_size, drop_last):
    drop_last = drop_last and batch_size is not None
    values = np.arange(size * 2, dtype=np.float64).reshape(size, 2)

    def batches(lib):
        data = lib.utils.data.TensorDataset(lib.tensor(values))
        loader = lib.utils.data.DataLoader(data, batch_size=batch_size, drop_last=drop_last)
        return len(loader), [plain(b) for b in loader]

    assert batches(mg) == batches(torch)
