"""The batching loader (torch.utils.data.dataloader): DataLoader, and the collate functions that
put a batch's samples together (default_collate) or convert one sample (default_convert).

minigrad loads in the calling process: there are no worker processes. num_workers=0 is torch's
own single-process loading; num_workers > 0 warns once and loads the same batches, in the same
order, in this process (torch's workers keep the sampler's order too), so that a script written
for workers runs unchanged. The worker settings are checked as torch checks them, then have no
effect; pin_memory has nothing to pin on a CPU.
"""

import collections.abc
import functools
import itertools
import multiprocessing
import numbers
import warnings

import numpy as np

from ... import dtypes
from ...creation import tensor
from ...ops.join import stack
from ...engine import Tensor
from .dataset import IterableDataset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


def default_collate(batch):
    """A list of samples -> one batch (torch's default_collate): tensors and numeric arrays are
    stacked along a new first axis (their dtypes promoted), numbers become one tensor, strings
    stay a list, and tuples, lists and dicts are collated field by field (a tuple's fields come
    back as a list, a namedtuple's as that namedtuple).

    Numbers go by the first sample, as in torch: a batch that starts with a Python float is
    float64; one that starts with a Python int or bool, or a numpy scalar, gets the dtype
    torch.tensor would give the whole list (bools alone bool, ints int64, any float the default
    float dtype, a numpy scalar its own dtype, promoted together): `[1, 2.5]` is float32."""
    if not batch:
        raise ValueError("default_collate: the batch is empty")
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(batch)
    if isinstance(first, np.ndarray) and first.dtype.kind in "biuf":
        return stack([tensor(x) for x in batch])
    if (isinstance(first, np.generic) and first.dtype.kind in "biuf") or _is_number(first):
        return _collate_numbers(batch)
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


def _is_number(value):
    """A Python int, float or bool (numpy's scalars, also those subclassing float, go as numpy
    scalars, and other number types are refused, as torch's collate does)."""
    return isinstance(value, (int, float)) and not isinstance(value, np.generic)


def _number_dtype(value):
    """The dtype torch.tensor infers for one element of a list of numbers."""
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return value.dtype
    if isinstance(value, bool):
        return dtypes.bool_
    if isinstance(value, int):
        return dtypes.int64
    if _is_number(value):
        return dtypes.get_default_dtype()
    raise TypeError(
        "default_collate: a batch that starts with a number must hold only numbers; "
        f"got {type(value).__name__}"
    )


def _collate_numbers(batch):
    """A batch of Python or numpy numbers -> one 1-D tensor (torch's collate_float_fn,
    collate_int_fn and collate_numpy_scalar_fn)."""
    kinds = [_number_dtype(value) for value in batch]
    if isinstance(batch[0], float) and _is_number(batch[0]):
        dtype = dtypes.float64  # torch.tensor(batch, dtype=torch.float64)
    else:
        dtype = functools.reduce(dtypes.promote_types, kinds)
    try:
        return tensor(np.array(batch, dtype=dtype))
    except OverflowError:
        raise ValueError(
            f"default_collate: a number of the batch does not fit in {dtype}; "
            f"got {min(batch)} to {max(batch)}"
        ) from None


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


def get_worker_info():
    """None: the caller is not a worker process (torch.utils.data.get_worker_info gives None in
    the main process; minigrad loads every batch there)."""
    return None


class _Endless(Sampler):
    """The sampler of an iterable dataset (torch's _InfiniteConstantSampler): None forever, since
    a stream's samples have no index."""

    def __iter__(self):
        return itertools.repeat(None)


# torch refuses to change these once the loader is made (its samplers and workers were set up
# from them).
# fmt: off
_FIXED_AFTER_INIT = (
    "batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers",
)
# fmt: on


class DataLoader:
    """Batches of a dataset, one epoch per `for` loop (torch.utils.data.DataLoader).

    Args:
        dataset: anything with __getitem__(index) and __len__ (a map-style dataset; one with
            __getitems__(indices) is given each batch's indices at once, as in torch), or an
            IterableDataset, whose stream is batched as it comes (no shuffle, sampler or
            batch_sampler then; len(loader) needs len(dataset)).
        batch_size: samples per batch (None: the samples one by one, through default_convert).
        shuffle: a new random order each epoch (a RandomSampler, from `generator` if given, else
            minigrad's seeded generator). None or False: in order.
        sampler: a Sampler or any iterable of indices instead (shuffle must then be False).
        batch_sampler: a BatchSampler or any iterable of lists of indices, instead of batch_size,
            shuffle, sampler and drop_last.
        num_workers: 0 loads in this process, as torch; > 0 warns and does the same.
        collate_fn: how a list of samples becomes a batch (default_collate).
        pin_memory, pin_memory_device: accepted; nothing to pin on a CPU.
        drop_last: leave out a last batch smaller than batch_size.
        timeout: >= 0 (seconds to wait for a worker); no effect without workers.
        worker_init_fn: accepted; never called, since no worker process starts.
        multiprocessing_context: a start method name or context, only with num_workers > 0.
        generator: the mg.Generator that shuffle's RandomSampler draws from.
        prefetch_factor: only with num_workers > 0 (2 unless given), >= 0; no effect.
        persistent_workers: only with num_workers > 0; no effect.
        in_order: accepted; batches always come in the sampler's order.

    As in torch, `sampler` is then always set (SequentialSampler or RandomSampler unless given),
    `batch_sampler` too unless batch_size is None (a BatchSampler of `sampler` unless given),
    `collate_fn` is default_collate (default_convert without batching) unless given, and
    batch_size, batch_sampler, sampler, drop_last, dataset and persistent_workers cannot be set
    afterwards. Contradictory settings raise ValueError as torch's do.

    Example::

        >>> loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
        >>> for xb, yb in loader:
        ...     loss = F.cross_entropy(model(xb), yb)
    """

    def __init__(
        self,
        dataset,
        batch_size=1,
        shuffle=None,
        sampler=None,
        batch_sampler=None,
        num_workers=0,
        collate_fn=None,
        pin_memory=False,
        drop_last=False,
        timeout=0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor=None,
        persistent_workers=False,
        pin_memory_device="",
        in_order=True,
    ):
        stream = isinstance(dataset, IterableDataset)
        if stream:
            given = (shuffle not in (None, False), sampler is not None, batch_sampler is not None)
            for name, value, is_given in zip(
                ("shuffle", "sampler", "batch_sampler"), (shuffle, sampler, batch_sampler), given
            ):
                if is_given:
                    raise ValueError(
                        f"DataLoader with IterableDataset: expected unspecified {name} option "
                        f"(a stream has no indices to order); got {name}={value!r}"
                    )
        elif not hasattr(dataset, "__getitem__") or not hasattr(dataset, "__len__"):
            raise TypeError(
                "DataLoader: dataset must have __getitem__ and __len__; "
                f"got {type(dataset).__name__}"
            )
        _check_workers(
            num_workers, timeout, prefetch_factor, persistent_workers, multiprocessing_context
        )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2  # torch's default with workers
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError(
                "DataLoader: sampler is mutually exclusive with shuffle=True "
                "(the sampler gives the order)"
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
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(
                f"DataLoader: collate_fn must be callable; got {type(collate_fn).__name__}"
            )
        if stream:
            sampler = _Endless()
        elif sampler is None:
            sampler = (
                RandomSampler(dataset, generator=generator)
                if shuffle
                else SequentialSampler(dataset)
            )
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if collate_fn is None:
            collate_fn = default_convert if batch_sampler is None else default_collate
        self.dataset, self.batch_size, self.drop_last, self.generator = (
            dataset,
            batch_size,
            bool(drop_last),
            generator,
        )
        self.sampler, self.batch_sampler, self.collate_fn = sampler, batch_sampler, collate_fn
        self.num_workers, self.prefetch_factor, self.timeout = num_workers, prefetch_factor, timeout
        self.pin_memory, self.pin_memory_device = bool(pin_memory), pin_memory_device
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.persistent_workers, self.in_order = bool(persistent_workers), in_order
        self._initialized = True
        if num_workers > 0:
            warnings.warn(
                f"DataLoader: num_workers={num_workers} asks for worker processes, "
                "but minigrad loads every batch in this process (the same batches, "
                "in the same order, as num_workers=0; worker_init_fn is not called)",
                UserWarning,
                stacklevel=2,
            )

    def __setattr__(self, name, value):
        if name in _FIXED_AFTER_INIT and getattr(self, "_initialized", False):
            raise ValueError(
                f"DataLoader: {name} attribute should not be set after DataLoader is initialized "
                "(make a new DataLoader)"
            )
        super().__setattr__(name, value)

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            yield from self._batches_of_the_stream()
            return
        if self.batch_sampler is None:
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])
            return
        fast = self.collate_fn is default_collate and type(self.dataset) is TensorDataset
        for indices in self.batch_sampler:
            if fast:  # one index per tensor instead of a stack of rows: the same batch
                yield [t[np.asarray(indices, dtype=np.int64)] for t in self.dataset.tensors]
            elif getattr(self.dataset, "__getitems__", None):
                yield self.collate_fn(self.dataset.__getitems__(list(indices)))
            else:
                yield self.collate_fn([self.dataset[i] for i in indices])

    def _batches_of_the_stream(self):
        samples = iter(self.dataset)
        if self.batch_size is None:
            for sample in samples:
                yield self.collate_fn(sample)
            return
        while True:
            batch = list(itertools.islice(samples, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):  # a TypeError if the stream has no len()
            size = len(self.dataset)
            if self.batch_size is None:
                return size
            return size // self.batch_size if self.drop_last else -(-size // self.batch_size)
        return len(self.sampler if self.batch_sampler is None else self.batch_sampler)


def _check_workers(num_workers, timeout, prefetch_factor, persistent_workers, context):
    """The worker settings, checked as torch checks them: ValueError when a value is out of range
    or contradicts another, TypeError when it is not a number at all."""
    _check_number("num_workers", num_workers, numbers.Integral, "an integer >= 0 (0 loads here)")
    _check_number("timeout", timeout, numbers.Real, "a non-negative number of seconds")
    if prefetch_factor is not None:
        if num_workers == 0:
            raise ValueError(
                f"DataLoader: prefetch_factor={prefetch_factor!r} could only be specified in "
                "multiprocessing (num_workers > 0); with num_workers=0 leave prefetch_factor None"
            )
        _check_number(
            "prefetch_factor", prefetch_factor, numbers.Integral, "a non-negative integer"
        )
    if persistent_workers and num_workers == 0:
        raise ValueError(
            "DataLoader: persistent_workers=True needs num_workers > 0; got num_workers=0"
        )
    if context is None:
        return
    if num_workers == 0:
        raise ValueError(
            "DataLoader: multiprocessing_context can only be used with multi-process loading "
            "(num_workers > 0); got num_workers=0"
        )
    methods = multiprocessing.get_all_start_methods()
    if isinstance(context, str) and context not in methods:
        raise ValueError(
            f"DataLoader: multiprocessing_context should be a start method in {methods}; "
            f"got multiprocessing_context={context!r}"
        )
    if not isinstance(context, (str, multiprocessing.context.BaseContext)):
        raise TypeError(
            "DataLoader: multiprocessing_context should be a context object or a start method "
            f"name; got {type(context).__name__}"
        )


def _check_number(name, value, kind, expected):
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError(f"DataLoader: {name} must be {expected}; got {name}={value!r}")
    if value < 0:
        raise ValueError(f"DataLoader: {name} must be {expected}; got {name}={value!r}")


__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
