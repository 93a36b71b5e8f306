"""DistributedSampler (torch.utils.data.distributed): each process of a data-parallel run
visits its own share of a dataset's indices, all shares of one size, so that every process
takes the same number of steps.

The indices 0 .. N-1 (or, with shuffle, a permutation drawn from seed + epoch, the same on every
process) are made a multiple of num_replicas long, by repeating the first ones (or, with
drop_last, by dropping the last ones), and process `rank` takes every num_replicas-th from
position rank: torch's rule. The permutation is minigrad's (numpy's PCG64), not torch's.
"""

import math
import numbers

from ... import distributed
from ...creation import randperm
from ...random import Generator
from .sampler import Sampler


def _check_int(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"DistributedSampler: {name} must be an int; got {value!r}")
    return int(value)


class DistributedSampler(Sampler):
    """This process's share of the indices of `dataset` (anything with len()). num_replicas and
    rank default to the process group's world size and rank (minigrad.distributed); seed must
    be the same on every process, and set_epoch(epoch) before each epoch gives a new
    shuffle. len(): the share's size, ceil(N / num_replicas), or floor with drop_last."""

    def __init__(
        self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False
    ):
        if num_replicas is None:
            num_replicas = distributed.get_world_size()
        if rank is None:
            rank = distributed.get_rank()
        num_replicas, rank = _check_int("num_replicas", num_replicas), _check_int("rank", rank)
        if num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas must be >= 1; got {num_replicas}")
        if not 0 <= rank < num_replicas:
            raise ValueError(
                f"DistributedSampler: rank must be in [0, {num_replicas - 1}]; got rank={rank}"
            )
        for name, flag in (("shuffle", shuffle), ("drop_last", drop_last)):
            if not isinstance(flag, bool):
                raise TypeError(f"DistributedSampler: {name} must be True or False; got {flag!r}")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last = shuffle, _check_int("seed", seed), drop_last
        self.epoch = 0
        size = len(dataset)
        if drop_last and size % num_replicas:
            self.num_samples = size // num_replicas  # torch's ceil((size - n) / n)
        else:
            self.num_samples = math.ceil(size / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        size = len(self.dataset)
        if self.shuffle:
            generator = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(size, generator=generator).tolist()
        else:
            indices = list(range(size))
        if self.drop_last:
            indices = indices[: self.total_size]
        elif indices:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch the next iteration shuffles for (the same on every process)."""
        self.epoch = _check_int("epoch", epoch)
