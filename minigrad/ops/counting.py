"""Counting and searching: unique, unique_consecutive, bincount, histc, bucketize, searchsorted,
argwhere. Their results are counts and positions (int64), or the distinct values themselves:
none of them has a gradient, as in torch.

As torch, NaN is not equal to itself here: unique keeps every NaN apart (after the numbers)."""

import numpy as np

from ..errors import ArgumentError, DTypeError, DimError, ShapeError
from ..engine import Tensor
from .args import as_array, integer_array, normalize_dim
from .indexing import nonzero
from .registry import op


def _wrap_all(arrays):
    arrays = [Tensor._wrap(np.asarray(a)) for a in arrays]
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


@op
def unique(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values of x in ascending order (of the flattened x, or the distinct slices
    along `dim`); with return_inverse, where each element (slice) of x is among them; with
    return_counts, how often each occurs (torch.unique; always sorted, as torch on the CPU)."""
    data = as_array(x)
    if dim is None:
        values, inverse, counts = np.unique(
            data.reshape(-1), return_inverse=True, return_counts=True, equal_nan=False
        )
        inverse = inverse.reshape(data.shape)
    else:
        axis = normalize_dim(dim, data.ndim, "unique")
        if data.ndim == 0:
            raise DimError("unique: a 0-d tensor has no dim to find distinct slices along")
        values, inverse, counts = np.unique(
            data, return_inverse=True, return_counts=True, axis=axis
        )
        inverse = inverse.reshape(-1)
    outputs = (
        [values]
        + ([inverse.astype(np.int64)] if return_inverse else [])
        + ([counts.astype(np.int64)] if return_counts else [])
    )
    return _wrap_all(outputs)


@op
def unique_consecutive(x, return_inverse=False, return_counts=False, dim=None):
    """x with each run of equal consecutive elements (slices along `dim`) kept once; with
    return_inverse the run of each element, with return_counts each run's length
    (torch.unique_consecutive)."""
    data = as_array(x)
    if dim is None:
        rows, shape = data.reshape(-1, 1), data.shape
    else:
        if data.ndim == 0:
            raise DimError("unique_consecutive: a 0-d tensor has no dim to find runs along")
        axis = normalize_dim(dim, data.ndim, "unique_consecutive")
        rows, shape = np.moveaxis(data, axis, 0).reshape(data.shape[axis], -1), (data.shape[axis],)
    starts = np.ones(rows.shape[0], bool)
    starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)  # NaN != NaN: each NaN starts a run
    first = np.flatnonzero(starts)
    values = data.reshape(-1)[first] if dim is None else np.take(data, first, axis=axis)
    outputs = [values]
    if return_inverse:
        outputs.append((np.cumsum(starts) - 1).astype(np.int64).reshape(shape))
    if return_counts:
        outputs.append(np.diff(np.append(first, rows.shape[0])).astype(np.int64))
    return _wrap_all(outputs)


@op
def bincount(x, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in the 1-D non-negative integer x (at least
    `minlength` counts); with weights, the sum of the weights of its occurrences
    (torch.bincount)."""
    data = integer_array(x, "bincount", "input")
    if data.ndim != 1:
        raise DimError(f"bincount: expects a 1-D tensor; got shape {data.shape}")
    if data.size and data.min() < 0:
        raise ArgumentError(f"bincount: the values must be non-negative; got {data.min()}")
    if isinstance(minlength, bool) or not isinstance(minlength, (int, np.integer)) or minlength < 0:
        raise ArgumentError(f"bincount: minlength must be a non-negative int; got {minlength!r}")
    if weights is None:
        return Tensor._wrap(np.bincount(data, minlength=int(minlength)).astype(np.int64))
    weight_data = as_array(weights)
    if weight_data.shape != data.shape:
        raise ShapeError(
            f"bincount: weights must have the shape of the input {data.shape}; "
            f"got {weight_data.shape}"
        )
    dtype = weight_data.dtype if weight_data.dtype.kind == "f" else np.float64
    return Tensor._wrap(
        np.bincount(data, weights=weight_data, minlength=int(minlength)).astype(dtype)
    )


@op
def histc(x, bins=100, min=0, max=0):
    """A histogram of x's elements in `bins` equal bins from min to max (min = max: the data's own
    range, widened by 1 each way if that is one value); elements outside are left out, max falls
    in the last bin (torch.histc). A float tensor of x's dtype."""
    data = as_array(x)
    if data.dtype.kind != "f":
        raise DTypeError(f"histc: the input must be a float tensor; got dtype {data.dtype}")
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins <= 0:
        raise ArgumentError(f"histc: bins must be a positive int; got {bins!r}")
    low, high = float(min), float(max)
    if low > high:
        raise ArgumentError(f"histc: max must be at least min; got min={min}, max={max}")
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ArgumentError(f"histc: min and max must be finite; got min={min}, max={max}")
    values = data.reshape(-1)
    if low == high and values.size:
        low, high = float(values.min()), float(values.max())
        if not (np.isfinite(low) and np.isfinite(high)):  # NaN or an infinity: torch refuses too
            raise ArgumentError(
                f"histc: the range of the data, [{low}, {high}], is not finite; "
                "give a finite min and max"
            )
    if low == high:
        low, high = low - 1, high + 1
    inside = values[(values >= low) & (values <= high)]
    places = ((inside - low) * bins / (high - low)).astype(np.int64)
    places = np.minimum(places, bins - 1)  # max itself belongs to the last bin
    return Tensor._wrap(np.bincount(places, minlength=bins).astype(data.dtype))


def _side(right, side, op):
    if side is None:
        return "right" if right else "left"
    if side not in ("left", "right"):
        raise ArgumentError(f"{op}: side must be 'left' or 'right'; got {side!r}")
    if right and side == "left":
        raise ArgumentError(f"{op}: side='left' and right=True ask for different sides; give one")
    return side


@op(method=False)
def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None):
    """Where each of `values` would go in `sorted_sequence` (sorted along its last dim) to keep it
    sorted: the first such place (side='left'), or the last (right=True or side='right'). An
    N-D sequence searches row by row: its leading dims must be values' (torch.searchsorted)."""
    side = _side(right, side, "searchsorted")
    sequence, targets = as_array(sorted_sequence), as_array(values)
    if sequence.ndim == 0:
        raise DimError("searchsorted: sorted_sequence must have at least 1 dim; got a 0-d tensor")
    if sorter is not None:
        order = integer_array(sorter, "searchsorted", "sorter")
        if order.shape != sequence.shape:
            raise ShapeError(
                f"searchsorted: sorter must have the shape of sorted_sequence {sequence.shape}; "
                f"got {order.shape}"
            )
        sequence = np.take_along_axis(sequence, order, axis=-1)
    if sequence.ndim == 1:
        places = np.searchsorted(sequence, targets, side=side)
    else:
        if targets.shape[:-1] != sequence.shape[:-1]:
            raise ShapeError(
                f"searchsorted: values of shape {targets.shape} must have the leading dims of "
                f"sorted_sequence of shape {sequence.shape} (all but the last)"
            )
        rows, wanted = (
            sequence.reshape(-1, sequence.shape[-1]),
            targets.reshape(-1, targets.shape[-1]),
        )
        places = np.stack(
            [np.searchsorted(row, want, side=side) for row, want in zip(rows, wanted)]
        )
        places = places.reshape(targets.shape)
    if targets.dtype.kind == "f":  # torch puts a NaN value after every element, NaNs too
        places = np.where(np.isnan(targets), sequence.shape[-1], places)
    return Tensor._wrap(np.asarray(places, dtype=np.int32 if out_int32 else np.int64))


@op(method=False)
def bucketize(x, boundaries, *, out_int32=False, right=False):
    """The bucket of each element of x among the sorted 1-D `boundaries`: i with boundaries[i - 1]
    < x <= boundaries[i] (right=True: boundaries[i - 1] <= x < boundaries[i]), as
    torch.bucketize."""
    edges = as_array(boundaries)
    if edges.ndim != 1:
        raise DimError(f"bucketize: boundaries must be a 1-D tensor; got shape {edges.shape}")
    return searchsorted(edges, x, out_int32=out_int32, right=right)


@op
def argwhere(x):
    """The positions of the nonzero elements, one row each: int64 (count, ndim) (torch.argwhere)."""
    return nonzero(x)
