"""Comparisons, logic and tests: bool (or integer, for bitwise) results and no gradient.

eq ne lt le gt ge (also the operators == != < <= > >=), logical_and/or/xor/not, bitwise_not
(~), isnan isinf isfinite signbit; and whole-tensor comparisons isclose, allclose, equal.
"""

import numpy as np

from ..dtypes import NUMBERS
from ..errors import DTypeError
from ..engine import Tensor
from .args import as_array, check_broadcast
from .registry import op


_BITWISE = (np.bitwise_and, np.bitwise_or, np.bitwise_xor)


def compare(ufunc, a, b):
    """A comparison, logical or bitwise ufunc on tensors/numbers: a tensor with no gradient."""
    a_data = a._data if isinstance(a, Tensor) else a
    b_data = b._data if isinstance(b, Tensor) else b
    if ufunc in _BITWISE:  # int32_tensor | 0xFFFFFFFF: the number's bits in the tensor's dtype
        a_data, b_data = _wrapped_int(a_data, b_data), _wrapped_int(b_data, a_data)
    check_broadcast(ufunc.__name__, a_data, b_data)
    return Tensor._wrap(np.asarray(ufunc(a_data, b_data)))


def _wrapped_int(value, other):
    """A Python int meeting an integer array: its low bits in the array's dtype, as torch reads it
    (numpy refuses an int out of the dtype's range)."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and isinstance(other, np.ndarray)
        and other.dtype.kind in "iu"
    ):
        return np.array(value % 2**64, dtype=np.uint64).astype(other.dtype)
    return value


def bitwise_not(x):
    """~x: logical not on bool tensors, bitwise not on integer tensors (as in torch)."""
    if x.dtype.kind == "f":
        raise TypeError(
            f"~ (bitwise_not) is defined on bool and integer tensors; got dtype {x.dtype}"
        )
    return Tensor._wrap(np.invert(x._data))


def _comparison(ufunc, name):
    def apply(input, other):
        return compare(ufunc, input, other)

    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"Elementwise {name} (torch.{name}): a bool tensor, no gradient."
    return apply


eq = op(_comparison(np.equal, "eq"))
ne = op(_comparison(np.not_equal, "ne"))
lt = op(_comparison(np.less, "lt"))
le = op(_comparison(np.less_equal, "le"))
gt = op(_comparison(np.greater, "gt"))
ge = op(_comparison(np.greater_equal, "ge"))


def _tensor(x):
    return x if isinstance(x, Tensor) else Tensor._wrap(as_array(x))


def _test(ufunc, x):
    return Tensor._wrap(np.asarray(ufunc(_tensor(x)._data)))


@op
def isnan(x):
    return _test(np.isnan, x)


@op
def isinf(x):
    return _test(np.isinf, x)


@op
def isfinite(x):
    return _test(np.isfinite, x)


@op
def logical_not(x):
    return _test(np.logical_not, x)


def _logical(ufunc, name):
    def op(input, other):
        a, b = (v._data if isinstance(v, Tensor) else v for v in (input, other))
        if isinstance(a, NUMBERS) and isinstance(b, NUMBERS):
            raise TypeError(f"{name}: expected at least one tensor; got {a!r} and {b!r}")
        check_broadcast(name, a, b)
        return Tensor._wrap(np.asarray(ufunc(a, b)))

    op.__name__ = name
    op.__doc__ = (
        f"Elementwise {name} of the truth values (nonzero is true): a bool tensor, no gradient."
    )
    return op


logical_and = op(_logical(np.logical_and, "logical_and"))
logical_or = op(_logical(np.logical_or, "logical_or"))
logical_xor = op(_logical(np.logical_xor, "logical_xor"))


@op
def signbit(x):
    """True where the sign bit is set (negative numbers, -0.0, -inf, NaNs with the bit): a bool
    tensor, no gradient."""
    data = x._data if isinstance(x, Tensor) else np.asarray(x)
    return Tensor._wrap(np.zeros(data.shape, bool) if data.dtype == np.bool_ else np.signbit(data))


def _pair(a, b, name):
    a, b = as_array(a), as_array(b)
    if a.dtype != b.dtype:
        raise DTypeError(
            f"{name}: both tensors must have the same dtype; got {a.dtype} and {b.dtype}"
        )
    check_broadcast(name, a, b)
    return a, b


@op
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol * |other| elementwise (a bool tensor)."""
    a, b = _pair(input, other, "isclose")
    return Tensor._wrap(np.asarray(np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@op
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when every element is close (isclose), as a Python bool."""
    a, b = _pair(input, other, "allclose")
    return bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


@op
def equal(input, other):
    """True when both have the same shape and elements (a Python bool)."""
    a, b = as_array(input), as_array(other)
    return a.shape == b.shape and bool(np.array_equal(a, b))
