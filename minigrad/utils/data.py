"""torch.utils.data's everyday pieces: datasets, splits, samplers and a batching loader.

    from minigrad.utils.data import DataLoader, TensorDataset, random_split
    train, valid = random_split(TensorDataset(x, y), [0.9, 0.1])
    for xb, yb in DataLoader(train, batch_size=32, shuffle=True):
        ...

A dataset is anything with __getitem__(index) and __len__ (map-style, as in torch). A sampler
gives the order of its indices (SequentialSampler; RandomSampler, a fresh permutation each
epoch, from minigrad's seeded generator or the `generator` given; SubsetRandomSampler,
WeightedRandomSampler), and a BatchSampler cuts that order into lists of indices. The loader
takes each batch's samples and puts them together with `collate_fn` (default_collate: tensors
and arrays stacked, numbers made tensors, tuples, lists and dicts collated field by field). A
TensorDataset's batches are taken with one index per tensor instead of sample by sample.
Everything runs in this process: num_workers, pin_memory and the other worker settings are
accepted so that torch code runs, and change nothing.
"""

import collections.abc
import itertools
import math
import numbers

import numpy as np

from ..creation import multinomial, randint, randperm, tensor
from ..ops.join import stack
from ..tensor import Tensor


class Dataset:
    """Base of map-style datasets: define __getitem__(index) and __len__."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


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
                    f"TensorDataset: argument {position} is 0-d; every tensor needs a first axis "
                    "of samples"
                )
        sizes = [t.shape[0] for t in tensors]
        if len(set(sizes)) > 1:
            raise ValueError(
                "TensorDataset: every tensor must have the same size along the first axis; got "
                f"{sizes}"
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


# -- samplers: the order in which a loader visits a dataset's indices ----------------------------


class Sampler:
    """Base of samplers: define __iter__ (indices, or lists of indices for a batch sampler) and,
    for len(loader), __len__. Any iterable of indices does as well."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices of data_source in random order, drawn anew each epoch from `generator` (an
    mg.Generator; else minigrad's seeded generator). Without replacement, a permutation (for
    num_samples > len(data_source), whole permutations one after the other, then part of one);
    with, num_samples independent draws. num_samples: len(data_source) unless given."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source, self.replacement, self._num_samples, self.generator = (
            data_source,
            replacement,
            num_samples,
            generator,
        )
        _check_bool("RandomSampler", "replacement", replacement, TypeError)
        _check_count("RandomSampler", "num_samples", self.num_samples)

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        size, count = len(self.data_source), self.num_samples
        if self.replacement:
            yield from randint(size, (count,), generator=self.generator).tolist()
            return
        for _ in range(count // size):
            yield from randperm(size, generator=self.generator).tolist()
        if count % size:
            yield from randperm(size, generator=self.generator).tolist()[: count % size]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, a new one each epoch (from `generator` if given)."""

    def __init__(self, indices, generator=None):
        self.indices, self.generator = indices, generator

    def __iter__(self):
        for position in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[position]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices of [0, len(weights)) drawn each epoch with probabilities proportional
    to `weights` (1-D, not necessarily summing to 1), with replacement unless replacement=False.
    As in torch, weights that cannot be drawn from (negative, all zero) raise when drawn."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_count("WeightedRandomSampler", "num_samples", num_samples)
        _check_bool("WeightedRandomSampler", "replacement", replacement, ValueError)
        weights = np.asarray(weights, dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(
                f"WeightedRandomSampler: weights should be a 1-d sequence; got weights of shape "
                f"{weights.shape}"
            )
        self.weights, self.num_samples, self.replacement, self.generator = (
            tensor(weights),
            num_samples,
            replacement,
            generator,
        )

    def __iter__(self):
        yield from multinomial(
            self.weights, self.num_samples, self.replacement, generator=self.generator
        ).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of batch_size indices, in the order `sampler` (any iterable of indices) gives them;
    the last list is shorter unless drop_last=True leaves it out."""

    def __init__(self, sampler, batch_size, drop_last):
        _check_count("BatchSampler", "batch_size", batch_size)
        _check_bool("BatchSampler", "drop_last", drop_last, ValueError)
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        indices = iter(self.sampler)
        batch = list(itertools.islice(indices, self.batch_size))
        while batch and (len(batch) == self.batch_size or not self.drop_last):
            yield batch
            batch = list(itertools.islice(indices, self.batch_size))

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)


def _check_count(where, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{where}: {name} should be a positive integer; got {name}={value!r}")


def _check_bool(where, name, value, error):
    """torch raises TypeError for RandomSampler's replacement and ValueError for the others."""
    if not isinstance(value, bool):
        raise error(f"{where}: {name} should be a boolean (True or False); got {name}={value!r}")


def default_collate(batch):
    """A list of samples -> one batch (torch's default_collate): tensors and numeric arrays are
    stacked along a new first axis, Python floats / ints / bools become a float64 / int64 / bool
    tensor (numpy scalars keep their dtype), strings stay a list, and tuples, lists and dicts are
    collated field by field (a tuple's fields come back as a list, a namedtuple's as that
    namedtuple)."""
    if not batch:
        raise ValueError("default_collate: the batch is empty")
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(batch)
    if isinstance(first, np.ndarray) and first.dtype.kind in "biuf":
        return stack([tensor(x) for x in batch])
    if (
        isinstance(first, np.generic) and first.dtype.kind in "biuf"
    ):  # a numpy scalar keeps its dtype, as torch
        return tensor(np.array(batch, dtype=first.dtype))
    if isinstance(first, (bool, np.bool_)):
        return tensor(np.array(batch, dtype=np.bool_))
    if isinstance(first, numbers.Integral):
        return tensor(np.array(batch, dtype=np.int64))
    if isinstance(first, numbers.Real):
        return tensor(np.array(batch, dtype=np.float64))
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, collections.abc.Mapping):
        return {key: default_collate([sample[key] for sample in batch]) for key in first}
    if isinstance(first, collections.abc.Sequence):
        if any(len(sample) != len(first) for sample in batch):
            raise RuntimeError(
                "default_collate: each sample of the batch must have the same number of fields; "
                f"got {sorted({len(sample) for sample in batch})}"
            )
        fields = [default_collate(list(samples)) for samples in zip(*batch)]
        if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple
            return type(first)(*fields)
        return fields  # a list, for tuples too (as torch's)
    raise TypeError(
        "default_collate: samples must be tensors, numeric arrays, numbers, strings, dicts, tuples "
        f"or lists; got {type(first).__name__}"
    )


def default_convert(sample):
    """One sample as the loader gives it without batching (batch_size=None; torch's
    default_convert): numpy arrays and numbers become tensors, tuples lists, the rest stays."""
    if isinstance(sample, (np.ndarray, np.generic)) and sample.dtype.kind in "biuf":
        return tensor(sample)
    if isinstance(sample, collections.abc.Mapping):
        return {key: default_convert(value) for key, value in sample.items()}
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):
        return type(sample)(*(default_convert(value) for value in sample))
    if isinstance(sample, collections.abc.Sequence) and not isinstance(sample, (str, bytes)):
        return [default_convert(value) for value in sample]
    return sample


class DataLoader:
    """Batches of a dataset, one epoch per `for` loop (torch.utils.data.DataLoader).

    batch_size: samples per batch (None: the samples one by one, through default_convert). shuffle:
    a new random order each epoch (a RandomSampler, from `generator` if given, else minigrad's
    seeded generator). sampler: a Sampler or any iterable of indices instead (shuffle must then be
    False); batch_sampler: a BatchSampler or any iterable of lists of indices instead of
    batch_size / shuffle / sampler / drop_last. drop_last: leave out a last batch smaller than
    batch_size.
    collate_fn: how a list of samples becomes a batch (default_collate). num_workers, pin_memory,
    timeout, worker_init_fn, prefetch_factor, persistent_workers: accepted, no effect (one process,
    CPU memory). As in torch, `sampler` is then always set (SequentialSampler or RandomSampler
    unless given), and `batch_sampler` too unless batch_size is None (a BatchSampler of `sampler`
    unless given).
    """

    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=False,
        sampler=None,
        batch_sampler=None,
        num_workers=0,
        collate_fn=None,
        pin_memory=False,
        drop_last=False,
        timeout=0,
        worker_init_fn=None,
        generator=None,
        prefetch_factor=None,
        persistent_workers=False,
    ):
        if not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise TypeError(
                "DataLoader: dataset must have __getitem__ and __len__; got "
                f"{type(dataset).__name__}"
            )
        if sampler is not None and shuffle:
            raise ValueError(
                "DataLoader: sampler is mutually exclusive with shuffle=True (the sampler gives "
                "the order)"
            )
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "DataLoader: batch_sampler is mutually exclusive with batch_size, shuffle, "
                    "sampler and drop_last (it gives the batches)"
                )
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError(
                "DataLoader: batch_size=None gives the samples one by one, so it is mutually "
                "exclusive with drop_last"
            )
        if (
            isinstance(num_workers, bool)
            or not isinstance(num_workers, (int, np.integer))
            or num_workers < 0
        ):
            raise ValueError(
                f"DataLoader: num_workers must be an integer >= 0; got {num_workers!r}"
            )
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(
                f"DataLoader: collate_fn must be callable; got {type(collate_fn).__name__}"
            )
        if sampler is None:
            sampler = (
                RandomSampler(dataset, generator=generator)
                if shuffle
                else SequentialSampler(dataset)
            )
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.batch_size, self.drop_last, self.generator = (
            dataset,
            batch_size,
            bool(drop_last),
            generator,
        )
        self.sampler, self.batch_sampler, self.collate_fn = sampler, batch_sampler, collate_fn
        self.num_workers, self.pin_memory = int(num_workers), bool(pin_memory)

    def __iter__(self):
        if self.batch_sampler is None:
            for index in self.sampler:
                yield (self.collate_fn or default_convert)(self.dataset[index])
            return
        for indices in self.batch_sampler:
            if (
                self.collate_fn is None and type(self.dataset) is TensorDataset
            ):  # one index per tensor
                yield [t[np.asarray(indices, dtype=np.int64)] for t in self.dataset.tensors]
            else:
                yield (self.collate_fn or default_collate)([self.dataset[i] for i in indices])

    def __len__(self):
        return len(self.sampler if self.batch_sampler is None else self.batch_sampler)


def _checked_index(index, size):
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"dataset index must be an integer; got {type(index).__name__}")
    if not -size <= index < size:
        raise IndexError(f"dataset index {index} out of range for {size} samples")
    return int(index) % size


__all__ = [
    "Dataset",
    "TensorDataset",
    "Subset",
    "ConcatDataset",
    "random_split",
    "Sampler",
    "SequentialSampler",
    "RandomSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
    "BatchSampler",
    "default_collate",
    "default_convert",
    "DataLoader",
]
