"""Datasets and random_split (torch.utils.data.dataset). A map-style dataset is anything with
__getitem__(index) and __len__; an iterable-style one (IterableDataset) is a stream of samples,
defining __iter__ (and __len__ only if its length is known)."""

import math

import numpy as np

from ...creation import randperm
from ...engine import Tensor


class Dataset:
    """Base of map-style datasets: define __getitem__(index) and __len__."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """Base of iterable-style datasets (torch.utils.data.IterableDataset): define __iter__, giving
    the samples in order; a loader batches the stream as it comes, with no index and no sampler.
    `a + b` chains two streams (ChainDataset)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """Several iterable datasets one after the other (torch.utils.data.ChainDataset), chained as
    the iteration goes; len() is the sum of theirs."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for dataset in self.datasets:
            yield from _checked_iterable(dataset)

    def __len__(self):
        return sum(len(_checked_iterable(dataset)) for dataset in self.datasets)


def _checked_iterable(dataset):
    if not isinstance(dataset, IterableDataset):
        raise TypeError(
            "ChainDataset: chains IterableDatasets only; "
            f"got {type(dataset).__name__} (a map-style dataset joins others in a ConcatDataset)"
        )
    return dataset


class TensorDataset(Dataset):
    """Samples are the index-th rows of the tensors given, as a tuple
    (torch.utils.data.TensorDataset)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor")
        for position, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"TensorDataset: argument {position} must be a Tensor; got {type(t).__name__}"
                )
            if t.ndim == 0:
                raise ValueError(
                    f"TensorDataset: argument {position} is 0-d; "
                    "every tensor needs a first axis of samples"
                )
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) > 1:
            raise ValueError(
                "TensorDataset: every tensor must have the same size along the first axis; "
                f"got {sizes}"
            )
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order (torch.utils.data.Subset)."""

    def __init__(self, dataset, indices):
        self.dataset, self.indices = dataset, [int(i) for i in indices]

    def __getitem__(self, index):
        if isinstance(index, (list, tuple)):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several datasets one after the other (torch.utils.data.ConcatDataset; also `a + b`)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: give at least one dataset")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise TypeError(
                    f"ConcatDataset: joins map-style datasets only; got the IterableDataset "
                    f"{type(dataset).__name__} (streams join in a ChainDataset)"
                )
        self.cumulative_sizes = np.cumsum([len(d) for d in self.datasets]).tolist()

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        index = _checked_index(index, len(self))
        which = int(np.searchsorted(self.cumulative_sizes, index, side="right"))
        return self.datasets[which][index - (self.cumulative_sizes[which - 1] if which else 0)]


def random_split(dataset, lengths, generator=None):
    """Subsets of `dataset` that share out its samples at random (torch.utils.data.random_split).
    lengths: counts that add up to len(dataset), or fractions that add up to 1 (each count is
    the fraction of the length rounded down, and the samples left over go one each to the
    first subsets, as in torch)."""
    size = len(dataset)
    lengths = list(lengths)
    if (
        lengths
        and all(isinstance(x, float) for x in lengths)
        and math.isclose(sum(lengths), 1)
        and sum(lengths) <= 1
    ):
        if any(not 0 <= x <= 1 for x in lengths):
            raise ValueError(f"random_split: fractions must be in [0, 1]; got {lengths}")
        counts = [math.floor(size * x) for x in lengths]
        for k in range(size - sum(counts)):
            counts[k % len(counts)] += 1
        lengths = counts
    for x in lengths:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0:
            raise ValueError(
                f"random_split: lengths must be counts >= 0 adding up to the dataset's length, or "
                f"fractions adding up to 1; got {lengths}"
            )
    if sum(lengths) != size:
        raise ValueError(
            f"random_split: the lengths add up to {sum(lengths)}, but the dataset has {size} "
            "samples"
        )
    order = randperm(size, generator=generator).numpy().tolist()
    bounds = np.cumsum([0] + lengths).tolist()
    return [Subset(dataset, order[bounds[k] : bounds[k + 1]]) for k in range(len(lengths))]


def _checked_index(index, size):
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"dataset index must be an integer; got {type(index).__name__}")
    if not -size <= index < size:
        raise IndexError(f"dataset index {index} out of range for {size} samples")
    return int(index) % size


# fmt: off
__all__ = [
    "Dataset", "IterableDataset", "ChainDataset",
    "TensorDataset", "Subset", "ConcatDataset", "random_split",
]
# fmt: on
