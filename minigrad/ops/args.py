"""Checks and conversions of op arguments: the one place each rule is written.

Public ops call these on what the user passed, so every mistake gets the same clear message
(naming the op, what was expected and what was given). Kernels below check only the index
ranges that protect their unchecked Numba loops.
"""

import numpy as np

from ..dtypes import to_array
from ..errors import ArgumentError, DTypeError, DimError, ShapeError
from ..tensor import Tensor


def as_array(value):
    """The numpy array behind a tensor, or a numpy array made from other data."""
    return value._data if isinstance(value, Tensor) else np.asarray(value)


def normalize_dim(dim, ndim, op="dim"):
    """One dim in [-ndim, ndim) -> [0, ndim). A 0-d tensor accepts dim 0 and -1, as in torch."""
    if isinstance(dim, Tensor):
        dim = int(dim)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int; got {type(dim).__name__} {dim!r}")
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise DimError(
            f"{op}: dim {dim} is out of range for a tensor with {ndim} dims "
            f"(expected a dim in [{-size}, {size - 1}])"
        )
    return int(dim) % size


def normalize_dims(dim, ndim, op="dim"):
    """None (all dims), an int or a sequence of ints -> a sorted tuple of distinct dims in [0, ndim)."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
    normalized = [normalize_dim(d, ndim, op) for d in dims]
    if len(set(normalized)) != len(normalized):
        raise ShapeError(f"{op}: dim {tuple(dims)} names a dim more than once")
    if ndim == 0:
        return ()
    return tuple(sorted(normalized))


def shape_args(shape, op="shape"):
    """Accept both f(2, 3) and f((2, 3)), as torch does -> a tuple of ints."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    try:
        return tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected a shape of ints; got {shape!r}") from None


def shape_of(value):
    return value.shape if isinstance(value, (Tensor, np.ndarray)) else np.shape(value)


def check_broadcast(op, *operands):
    """The broadcast shape of the operands (tensors, arrays or numbers), or a ShapeError naming them."""
    shapes = [shape_of(x) for x in operands]
    if all(s == shapes[0] for s in shapes):
        return shapes[0]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(
            f"{op}: shapes {' and '.join(map(str, shapes))} cannot be broadcast together"
        ) from None


def bool_mask(mask, op, shape=None):
    """A bool array from a tensor or array; with `shape`, it must broadcast to exactly that shape."""
    mask = to_array(mask._data if isinstance(mask, Tensor) else mask)
    if mask.dtype != np.bool_:
        raise DTypeError(f"{op}: mask must be a bool tensor or array; got dtype {mask.dtype}")
    if shape is not None:
        try:
            fits = np.broadcast_shapes(mask.shape, shape) == tuple(shape)
        except ValueError:
            fits = False
        if not fits:
            raise ShapeError(
                f"{op}: mask of shape {mask.shape} does not broadcast to shape {tuple(shape)}"
            )
    return mask


def integer_array(value, op, name="index"):
    """An integer array (int64) from a tensor, array or list; refuses floats and bools."""
    array = as_array(value)
    if array.dtype.kind not in "iu":
        raise DTypeError(f"{op}: {name} must be an integer tensor; got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def lengths_to_mask(lengths, batch, steps, op="lengths"):
    """lengths (B,) integers in [0, T] -> bool (B, T), True at the real (leading) positions."""
    lengths = as_array(lengths)
    if lengths.shape != (batch,):
        raise ShapeError(
            f"{op}: expected lengths of shape ({batch},) for a batch of {batch}; "
            f"got shape {lengths.shape}"
        )
    if lengths.dtype.kind not in "iu":
        raise DTypeError(f"{op}: lengths must be integers; got dtype {lengths.dtype}")
    if lengths.size and (lengths.min() < 0 or lengths.max() > steps):
        raise ArgumentError(
            f"{op}: lengths must lie in [0, {steps}] for inputs of {steps} steps; "
            f"got values in [{lengths.min()}, {lengths.max()}]"
        )
    return np.arange(steps) < lengths[:, None]


def check_device(device, op="device"):
    """Accept the CPU (None, "cpu", "cpu:0"), the one device minigrad runs on; refuse others clearly."""
    if device is None or str(device) in ("cpu", "cpu:0"):
        return
    raise ArgumentError(f"{op}: minigrad runs on the CPU only; got device {device!r}")
