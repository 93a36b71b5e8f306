"""Samplers (torch.utils.data.sampler): the order in which a loader visits a dataset's indices.

The random samplers draw as the iteration goes, a chunk at a time, never num_samples at once:
`RandomSampler(ds, replacement=True, num_samples=int(1e10))` (the infinite loader of minGPT's
trainer) holds one chunk of indices, and len() is still num_samples. Without replacement an
epoch is whole permutations of len(ds) one after the other (then part of one), as in torch.
"""

import itertools

import numpy as np

from ...creation import multinomial, randint, randperm, tensor

# Indices drawn per call to the generator: small enough to cost nothing, large enough that the
# draw's overhead is spread over many indices.
DRAW_CHUNK = 1024


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
    with, num_samples independent draws, DRAW_CHUNK at a time. num_samples: len(data_source)
    unless given; any size costs no memory beyond one permutation or one chunk."""

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
        if size == 0:  # torch stops on a ZeroDivisionError here
            raise ValueError(
                f"RandomSampler: data_source is empty, so there is nothing to draw "
                f"num_samples={count} indices from"
            )
        if self.replacement:
            for start in range(0, count, DRAW_CHUNK):
                chunk = min(DRAW_CHUNK, count - start)
                yield from randint(size, (chunk,), generator=self.generator).tolist()
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
    With replacement the draws come a chunk at a time (at least len(weights) per chunk, so each
    chunk's cumulative sum of the weights is spread over as many draws), so num_samples of any
    size costs no memory; without, num_samples <= len(weights) are drawn at once. As in torch,
    weights that cannot be drawn from (negative, all zero) raise when drawn."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        _check_count("WeightedRandomSampler", "num_samples", num_samples)
        _check_bool("WeightedRandomSampler", "replacement", replacement, ValueError)
        weights = np.asarray(weights, dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(
                "WeightedRandomSampler: weights should be a 1-d sequence; "
                f"got weights of shape {weights.shape}"
            )
        self.weights, self.num_samples, self.replacement, self.generator = (
            tensor(weights),
            num_samples,
            replacement,
            generator,
        )

    def __iter__(self):
        if not self.replacement:
            yield from multinomial(
                self.weights, self.num_samples, False, generator=self.generator
            ).tolist()
            return
        step = max(DRAW_CHUNK, self.weights.shape[0])
        for start in range(0, self.num_samples, step):
            chunk = min(step, self.num_samples - start)
            yield from multinomial(self.weights, chunk, True, generator=self.generator).tolist()

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


# fmt: off
__all__ = [
    "Sampler", "SequentialSampler", "RandomSampler",
    "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
]
# fmt: on
