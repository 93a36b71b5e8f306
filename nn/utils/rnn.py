"""torch.nn.utils.rnn: sequences of different lengths as one padded batch, and packed.

minigrad's LSTM and GRU take a padded batch and its lengths (`lstm(x, lengths)`). For torch
code, pack_padded_sequence / pack_sequence make a PackedSequence that LSTM and GRU take instead
of x, and pad_packed_sequence turns their packed output back into a padded batch and lengths.
A PackedSequence keeps the padded batch and the lengths (one built from torch's fields, data and
batch_sizes, is turned into them); its `data` and `batch_sizes` (torch's time-major packed layout)
are worked out when read.
"""

import numpy as np

import minigrad as mg
from minigrad.errors import ArgumentError, ShapeError
from minigrad.ops import integer_array

from .. import functional as F

# fmt: off
__all__ = [
    "pad_sequence", "PackedSequence", "pack_padded_sequence",
    "pad_packed_sequence", "pack_sequence",
]
# fmt: on


class PackedSequence:
    """A padded batch and its lengths, as torch's PackedSequence is used: made by
    pack_padded_sequence or pack_sequence, given to LSTM / GRU / RNN, undone by pad_packed_sequence.
    data: the real steps, time-major, longest sequence first within each step (torch's layout);
    batch_sizes: how many sequences are still running at each step; sorted_indices: the batch
    from longest to shortest; unsorted_indices: its inverse.

    PackedSequence(data, batch_sizes, sorted_indices=None, unsorted_indices=None), torch's
    constructor (also as PackedSequence((data, batch_sizes))), rebuilds one from those fields, as
    torch code does to map a layer over packed.data. Without sorted_indices the sequences are in
    sorted order already (given only unsorted_indices, sorted_indices is their inverse).
    """

    def __init__(self, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:  # torch's PackedSequence((data, batch_sizes), ...)
            if not (isinstance(data, (tuple, list)) and len(data) == 2):
                raise TypeError(
                    "PackedSequence: expected data and batch_sizes, or the pair (data, "
                    f"batch_sizes); got {type(data).__name__} and no batch_sizes"
                )
            data, batch_sizes = data
        if not isinstance(data, mg.Tensor):
            raise TypeError(f"PackedSequence: data must be a Tensor; got {type(data).__name__}")
        batch_sizes = integer_array(batch_sizes, "PackedSequence", "batch_sizes")
        if data.ndim == 0 or batch_sizes.ndim != 1 or batch_sizes.size == 0:
            raise ShapeError(
                "PackedSequence: expected data with a first axis of steps and 1-D batch_sizes, "
                f"one per step; got data of shape {data.shape}, batch_sizes of shape "
                f"{batch_sizes.shape}"
            )
        if batch_sizes.min() < 1 or np.any(np.diff(batch_sizes) > 0):
            raise ArgumentError(
                "PackedSequence: batch_sizes must be >= 1 and non-increasing "
                f"(the sequences still running at each step); got {batch_sizes.tolist()}"
            )
        if batch_sizes.sum() != data.shape[0]:
            raise ShapeError(
                f"PackedSequence: batch_sizes {batch_sizes.tolist()} add up to {batch_sizes.sum()} "
                f"rows (one per step of a sequence); data has {data.shape[0]} (shape {data.shape})"
            )
        batch = int(batch_sizes[0])
        inverse = (
            None
            if unsorted_indices is None
            else _permutation(unsorted_indices, batch, "unsorted_indices")
        )
        if sorted_indices is None:
            order = np.arange(batch) if inverse is None else np.argsort(inverse)
        else:
            order = _permutation(sorted_indices, batch, "sorted_indices")
            if inverse is not None and np.any(inverse != np.argsort(order)):
                raise ArgumentError(
                    "PackedSequence: unsorted_indices must be the inverse of sorted_indices "
                    f"{order.tolist()}, which is {np.argsort(order).tolist()}; "
                    f"got {inverse.tolist()}"
                )
        # the j-th longest sequence runs while more than j sequences do; it is sequence order[j]
        lengths = np.empty(batch, np.int64)
        lengths[order] = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(axis=1)
        # each step's rows (longest first) padded with zeros to the whole batch, then in batch order
        unsorted = np.argsort(order)  # sequence b is row unsorted[b] of each step
        # F.pad's pairs start at the last axis; only the first is padded
        trailing = (0, 0) * (data.ndim - 1)
        starts = np.concatenate([[0], np.cumsum(batch_sizes)])
        padded = mg.stack(
            [
                F.pad(data[start : start + size], trailing + (0, batch - size))[unsorted]
                for start, size in zip(starts.tolist(), batch_sizes.tolist())
            ]
        )
        self._hold(padded, lengths, False, order)

    @classmethod
    def _of_padded(cls, padded, lengths, batch_first, order=None):
        """The packing of a padded batch and its lengths (int64 (B,)), sorted longest first unless
        `order` (the sorted_indices) is given."""
        packed = cls.__new__(cls)
        packed._hold(
            padded,
            lengths,
            batch_first,
            np.argsort(-lengths, kind="stable") if order is None else order,
        )
        return packed

    def _hold(self, padded, lengths, batch_first, order):
        self.padded, self.lengths, self.batch_first, self._order = (
            padded,
            lengths,
            bool(batch_first),
            order,
        )

    def with_padded(self, padded, batch_first):
        """Another padded batch of the same sequences (a layer's output), packed as this one."""
        return PackedSequence._of_padded(padded, self.lengths, batch_first, self._order)

    @property
    def sorted_indices(self):
        return mg.tensor(self._order)

    @property
    def unsorted_indices(self):
        return mg.tensor(np.argsort(self._order))

    @property
    def batch_sizes(self):
        return mg.tensor(
            np.array([(self.lengths > t).sum() for t in range(int(self.lengths.max()))], np.int64)
        )

    @property
    def data(self):
        time_major = self.padded_as(batch_first=False)
        return mg.cat(
            [
                time_major[t][self._order[:size]]
                for t, size in enumerate(self.batch_sizes.numpy().tolist())
            ]
        )

    def padded_as(self, batch_first):
        """The padded batch in the layout asked for: (B, T, *) if batch_first, else (T, B, *)."""
        return self.padded if batch_first == self.batch_first else self.padded.transpose(0, 1)

    # torch's namedtuple fields
    _fields = ("data", "batch_sizes", "sorted_indices", "unsorted_indices")

    def __iter__(self):  # data, batch_sizes, sorted, unsorted = packed, as with torch's namedtuple
        return iter(tuple(getattr(self, name) for name in self._fields))

    def __len__(self):
        return len(self._fields)

    def __getitem__(self, index):  # only the fields asked for are made (data is a gather)
        names = self._fields[index]
        return (
            getattr(self, names)
            if isinstance(names, str)
            else tuple(getattr(self, name) for name in names)
        )

    def __repr__(self):
        return f"PackedSequence(lengths={self.lengths.tolist()}, batch_first={self.batch_first})"


def _permutation(indices, batch, name):
    """sorted_indices or unsorted_indices as an int64 array: an order of the `batch` sequences."""
    array = integer_array(indices, "PackedSequence", name)
    if array.shape != (batch,) or np.any(np.sort(array) != np.arange(batch)):
        raise ArgumentError(
            f"PackedSequence: {name} must order the {batch} sequences "
            f"(a permutation of 0..{batch - 1}, batch_sizes[0] = {batch}); got {array.tolist()}"
        )
    return array


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """A padded batch (T, B, *) ((B, T, *) with batch_first) and each sequence's length, packed
    for LSTM / GRU (torch's function). enforce_sorted=True (torch's default) requires the
    lengths in decreasing order; pass False for any order."""
    if not isinstance(input, mg.Tensor):
        raise TypeError(f"pack_padded_sequence: input must be a Tensor; got {type(input).__name__}")
    lengths = np.asarray(lengths.numpy() if isinstance(lengths, mg.Tensor) else lengths)
    if (
        lengths.dtype.kind == "f"
        and np.all(np.isfinite(lengths))
        and np.all(lengths == np.round(lengths))
    ):
        lengths = lengths.astype(np.int64)  # torch casts lengths to int64
    if input.ndim < 2:
        raise ShapeError(
            "pack_padded_sequence: input must have a time and a batch axis; "
            f"got shape {input.shape}"
        )
    steps, batch = (
        (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    )
    if lengths.dtype.kind not in "iu" or lengths.shape != (batch,):
        raise ShapeError(
            f"pack_padded_sequence: lengths must be {batch} integers (one per sequence); "
            f"got {lengths.dtype} of shape {lengths.shape}"
        )
    if batch and (lengths.min() < 1 or lengths.max() > steps):
        raise ShapeError(
            f"pack_padded_sequence: lengths must be in [1, {steps}] (the padded length); "
            f"got {lengths.tolist()}"
        )
    if enforce_sorted and np.any(np.diff(lengths) > 0):
        raise ShapeError(
            "pack_padded_sequence: lengths must be in decreasing order when enforce_sorted=True; "
            f"got {lengths.tolist()} (pass enforce_sorted=False for any order)"
        )
    return PackedSequence._of_padded(input, lengths.astype(np.int64), batch_first)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded batch, lengths) from a PackedSequence (torch's function): steps past a sequence's end
    hold padding_value; the batch has the longest sequence's length, or total_length."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(
            f"pad_packed_sequence: expected a PackedSequence; got {type(sequence).__name__}"
        )
    longest = int(sequence.lengths.max())
    length = longest if total_length is None else int(total_length)
    if length < longest:
        raise ShapeError(
            f"pad_packed_sequence: total_length={total_length} is shorter than the longest "
            f"sequence ({longest})"
        )
    time_major = sequence.padded_as(batch_first=False)
    steps = time_major.shape[0]
    if length <= steps:
        padded = time_major[:length]
    else:
        # the time axis only
        padded = F.pad(time_major, (0, 0) * (time_major.ndim - 1) + (0, length - steps))
    real = np.arange(length)[:, None] < sequence.lengths[None, :]  # (T, B): inside the sequence
    padded = mg.where(
        mg.tensor(real.reshape(real.shape + (1,) * (padded.ndim - 2))), padded, padding_value
    )
    return (padded.transpose(0, 1) if batch_first else padded), mg.tensor(sequence.lengths)


def pack_sequence(sequences, enforce_sorted=True):
    """pack_padded_sequence(pad_sequence(sequences), their lengths) (torch's function)."""
    sequences = list(sequences)
    return pack_padded_sequence(
        pad_sequence(sequences), [s.shape[0] for s in sequences], enforce_sorted=enforce_sorted
    )


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Tensors (L_i, *) of one trailing shape -> (max L, B, *), or (B, max L, *) with batch_first,
    each padded with padding_value after its end (padding_side="left": before its start), as
    torch's. Gradients flow back to the sequences."""
    sequences = list(sequences)
    if not sequences:
        raise ShapeError("pad_sequence: got no sequences")
    if padding_side not in ("right", "left"):
        raise ShapeError(
            f"pad_sequence: padding_side must be 'right' or 'left'; got {padding_side!r}"
        )
    for position, sequence in enumerate(sequences):
        if not isinstance(sequence, mg.Tensor):
            raise TypeError(
                f"pad_sequence: sequence {position} must be a Tensor; got {type(sequence).__name__}"
            )
        if sequence.ndim == 0:
            raise ShapeError(
                f"pad_sequence: sequence {position} is 0-d; each needs a first axis of steps"
            )
        if sequence.shape[1:] != sequences[0].shape[1:]:
            raise ShapeError(
                "pad_sequence: every sequence must have the trailing "
                f"shape {sequences[0].shape[1:]} (the first's); "
                f"sequence {position} has shape {sequence.shape}"
            )
    longest = max(sequence.shape[0] for sequence in sequences)
    trailing = (0, 0) * (sequences[0].ndim - 1)

    def padded(sequence):
        missing = longest - sequence.shape[0]
        steps = (0, missing) if padding_side == "right" else (missing, 0)
        return F.pad(sequence, trailing + steps, value=padding_value) if missing else sequence

    return mg.stack([padded(sequence) for sequence in sequences], dim=0 if batch_first else 1)
