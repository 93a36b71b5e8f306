"""DistributedSampler against torch's: the same share of the indices for each rank, length and
padding (or dropping) for every dataset size and number of replicas; shuffled, the same rule
applied to minigrad's permutation of seed + epoch, which every rank draws alike."""

import itertools

import pytest

import minigrad as mg
import minigrad.distributed as dist
from minigrad.utils.data import DataLoader, DistributedSampler, TensorDataset

torch = pytest.importorskip("torch")
from torch.utils.data.distributed import DistributedSampler as TorchSampler  # noqa: E402

CASES = list(itertools.product(range(0, 12), range(1, 5), [False, True]))


def torch_indices(size, replicas, rank, drop_last):
    sampler = TorchSampler(range(size), replicas, rank, shuffle=False, drop_last=drop_last)
    return list(sampler), len(sampler)


@pytest.mark.parametrize("size, replicas, drop_last", CASES)
def test_in_order_each_rank_gets_torchs_share(size, replicas, drop_last):
    for rank in range(replicas):
        ours = DistributedSampler(range(size), replicas, rank, shuffle=False, drop_last=drop_last)
        assert (list(ours), len(ours)) == torch_indices(size, replicas, rank, drop_last)


@pytest.mark.parametrize("size, replicas, drop_last", CASES)
def test_shuffled_each_rank_gets_torchs_share_of_the_permutation(size, replicas, drop_last):
    seed, epoch = 5, 3
    permutation = mg.randperm(size, generator=mg.Generator().manual_seed(seed + epoch)).tolist()
    for rank in range(replicas):
        ours = DistributedSampler(range(size), replicas, rank, seed=seed, drop_last=drop_last)
        ours.set_epoch(epoch)
        positions, length = torch_indices(size, replicas, rank, drop_last)
        assert list(ours) == [permutation[p] for p in positions] and len(ours) == length


def test_the_ranks_shares_cover_the_dataset_and_a_new_epoch_reorders_it():
    samplers = [DistributedSampler(range(10), 3, rank, seed=1) for rank in range(3)]
    epoch_0 = [list(s) for s in samplers]
    everything = sum(epoch_0, [])
    assert len(everything) == 12 and set(everything) == set(range(10))  # 2 repeated as padding
    assert epoch_0 == [list(s) for s in samplers]  # iterated again: the same epoch, same order
    for s in samplers:
        s.set_epoch(1)
    epoch_1 = [list(s) for s in samplers]
    assert epoch_1 != epoch_0 and set(sum(epoch_1, [])) == set(range(10))
    assert list(DistributedSampler(range(10), 3, 0, seed=2)) != epoch_0[0]


def test_a_loader_batches_this_ranks_share():
    data = TensorDataset(mg.arange(10) * 10)
    sampler = DistributedSampler(data, num_replicas=2, rank=1, shuffle=False)
    batches = [batch[0].tolist() for batch in DataLoader(data, batch_size=2, sampler=sampler)]
    assert batches == [[10, 30], [50, 70], [90]]


def test_num_replicas_and_rank_come_from_the_process_group(monkeypatch):
    pytest.importorskip("mpi4py")
    for variable in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(dist.DistError, match="init_process_group"):
        DistributedSampler(range(4))
    dist.init_process_group()
    try:
        sampler = DistributedSampler(range(4), shuffle=False)
        assert (sampler.num_replicas, sampler.rank, list(sampler)) == (1, 0, [0, 1, 2, 3])
    finally:
        dist.destroy_process_group()


BAD = [
    ({"num_replicas": 2, "rank": 2}, ValueError, r"rank must be in \[0, 1\]; got rank=2"),
    ({"num_replicas": 2, "rank": -1}, ValueError, "got rank=-1"),
    ({"num_replicas": 0, "rank": 0}, ValueError, "num_replicas must be >= 1; got 0"),
    ({"num_replicas": 2.0, "rank": 0}, TypeError, "num_replicas must be an int; got 2.0"),
    ({"num_replicas": 2, "rank": True}, TypeError, "rank must be an int; got True"),
    ({"num_replicas": 2, "rank": 0, "shuffle": 1}, TypeError, "shuffle must be True or False"),
    ({"num_replicas": 2, "rank": 0, "drop_last": None}, TypeError, "drop_last must be True"),
    ({"num_replicas": 2, "rank": 0, "seed": "0"}, TypeError, "seed must be an int; got '0'"),
]


@pytest.mark.parametrize("settings, error, message", BAD)
def test_bad_settings_are_refused_naming_them(settings, error, message):
    with pytest.raises(error, match=message):
        DistributedSampler(range(4), **settings)


def test_a_bad_epoch_is_refused():
    with pytest.raises(TypeError, match="epoch must be an int; got 1.5"):
        DistributedSampler(range(4), 1, 0).set_epoch(1.5)
