"""torch.utils.data's everyday pieces: datasets, splits, samplers and a batching loader, in
torch's submodules (`dataset`, `sampler`, `dataloader`), so both import paths work:

    from minigrad.utils.data import DataLoader, TensorDataset, random_split
    from minigrad.utils.data.dataloader import DataLoader
    train, valid = random_split(TensorDataset(x, y), [0.9, 0.1])
    for xb, yb in DataLoader(train, batch_size=32, shuffle=True):
        ...

A dataset is anything with __getitem__(index) and __len__ (map-style, as in torch), or an
IterableDataset, a stream the loader batches as it comes. A sampler gives the order of a
map-style dataset's indices (SequentialSampler; RandomSampler, a fresh permutation each epoch,
from minigrad's seeded generator or the `generator` given; SubsetRandomSampler,
WeightedRandomSampler; DistributedSampler, a process's share in data-parallel training), and
a BatchSampler cuts that order into lists of indices. Random
samplers draw as the iteration goes, so `RandomSampler(ds, replacement=True,
num_samples=int(1e10))` costs no memory. The loader takes each batch's samples and puts them
together with `collate_fn` (default_collate: tensors and arrays stacked, numbers made tensors,
tuples, lists and dicts collated field by field). Everything runs in this process: num_workers > 0
warns and loads the same batches here; pin_memory and the other worker settings are accepted so
that torch code runs, and change nothing.
"""

from .dataloader import DataLoader, default_collate, default_convert, get_worker_info
from .dataset import ChainDataset, ConcatDataset, Dataset
from .dataset import IterableDataset, Subset, TensorDataset, random_split
from .distributed import DistributedSampler
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .sampler import SubsetRandomSampler, WeightedRandomSampler

# fmt: off
__all__ = [
    "Dataset", "IterableDataset", "ChainDataset", "TensorDataset", "Subset",
    "ConcatDataset", "random_split", "Sampler", "SequentialSampler",
    "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
    "default_collate", "default_convert", "DataLoader", "get_worker_info",
    "DistributedSampler",
]
# fmt: on
