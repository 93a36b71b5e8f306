"""Checks and conversions of op arguments: the one place each rule is written.

Public ops call these on what the user passed, so every mistake gets the same clear message
(naming the op, what was expected and what was given). Kernels below check only the index
ranges that protect their unchecked Numba loops.
"""

import numpy as np

from ..dtypes import result_type, to_array
from ..errors import ArgumentError, DTypeError, DimError, ShapeError
from ..engine import Tensor


def as_array(value):
    """The numpy array behind a tensor, or a numpy array made from other data."""
    return value._data if isinstance(value, Tensor) else np.asarray(value)


def tensor_operand(value):
    """value as a Tensor (an array or a nested list becomes one, its dtype kept)."""
    return value if isinstance(value, Tensor) else Tensor(value)


def check_same_dtype(op, a, b):
    """The two operands of a product must have one dtype (torch does not promote there)."""
    if a.dtype != b.dtype:
        raise DTypeError(
            f"{op}: both operands must have the same dtype; got {a.dtype} and {b.dtype}"
        )


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
    """None (all dims), an int or a sequence of ints -> a sorted tuple of distinct dims in
    [0, ndim)."""
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
    """The broadcast shape of the operands (tensors, arrays or numbers), or a ShapeError naming
    them."""
    shapes = [shape_of(x) for x in operands]
    if all(s == shapes[0] for s in shapes):
        return shapes[0]
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(
            f"{op}: shapes {' and '.join(map(str, shapes))} cannot be broadcast together"
        ) from None


def check_float(op, x, name="input", error=DTypeError, several=False):
    """x (a tensor or array) must hold floats: torch has no integer kernel for the op. several:
    x is one of the op's tensors (x1, x2), named as such. `error` is the class raised
    (interpolate raises an ArgumentError, as it always has)."""
    if x.dtype.kind != "f":
        given = f"{name} of dtype {x.dtype}" if several else f"dtype {x.dtype}"
        wanted = "float32 or float64 tensors" if several else f"a float32 or float64 {name}"
        raise error(f"{op}: expected {wanted}; got {given}")
    return x


def float_tensor(op, x, name="input", error=DTypeError, several=False):
    """x must be a float32 or float64 Tensor (a TypeError for anything that is not a Tensor).
    name None: the op has one tensor argument, named in neither message."""
    if not isinstance(x, Tensor):
        subject = f"{name} must be a Tensor" if name else "expected a Tensor"
        raise TypeError(f"{op}: {subject}; got {type(x).__name__}")
    return check_float(op, x, name or "tensor", error, several)


def float_tensors(op, input, other):
    """The common float dtype of the two operands of a binary float op that torch takes only as
    tensors (hypot, logaddexp): both must be Tensors that broadcast, and at least one float."""
    for name, x in (("input", input), ("other", other)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor (as torch); got {type(x).__name__}")
    check_broadcast(op, input, other)
    dtype = result_type(input, other)
    if dtype.kind != "f":
        raise DTypeError(
            f"{op}: expected at least one float32 or float64 tensor; "
            f"got dtypes {input.dtype} and {other.dtype}"
        )
    return dtype


def bool_mask(mask, op, shape=None):
    """A bool array from a tensor or array; with `shape`, it must broadcast to exactly that
    shape."""
    mask = to_array(mask._data if isinstance(mask, Tensor) else mask)
    if mask.dtype != np.bool_:
        raise DTypeError(f"{op}: mask must be a bool tensor or array; got dtype {mask.dtype}")
    if shape is not None:
        check_broadcasts_to(op, "mask", mask.shape, shape, f"shape {tuple(shape)}")
    return mask


def broadcasts_to(given, shape):
    """True when an array of shape `given` broadcasts to exactly `shape` (never beyond it)."""
    try:
        return np.broadcast_shapes(given, shape) == tuple(shape)
    except ValueError:
        return False


def check_broadcasts_to(op, name, given, shape, target):
    """A ShapeError unless shape `given` (of the argument `name`) broadcasts to exactly `shape`;
    `target` says what that shape is, in the message ("shape (2, 3)", "the rows (2,) of ...")."""
    if not broadcasts_to(tuple(given), tuple(shape)):
        raise ShapeError(f"{op}: {name} of shape {tuple(given)} does not broadcast to {target}")


def key_stops(key_lengths, rows, op, target, refuse=False):
    """Key lengths (masked_softmax, attention): integers >= 0 that broadcast to the `rows` they
    limit (each row attends only to its first key_lengths positions) -> an int64 array.
    `target` names the rows in the message; refuse: no rows to limit (a 0-d input)."""
    stops = integer_array(key_lengths, op, "key_lengths")
    if refuse or not broadcasts_to(stops.shape, rows):
        raise ShapeError(f"{op}: key_lengths of shape {stops.shape} do not broadcast to {target}")
    if stops.size and stops.min() < 0:
        raise ArgumentError(f"{op}: key_lengths must be >= 0; got {stops.min()}")
    return stops


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
    """Accept the CPU (None, "cpu", "cpu:0"), the one device minigrad runs on; refuse others
    clearly."""
    if device is None or str(device) in ("cpu", "cpu:0"):
        return
    raise ArgumentError(
        f"{op}: minigrad runs on the CPU only; got device {str(device)!r} "
        "(mg.cuda.is_available() is False; choose 'cpu')"
    )
