"""Ways to make tensors: from data, filled, ranges and random draws (the default float dtype,
float32, unless told)."""

import numpy as np

from . import dtypes
from .ops.args import shape_args
from .random import generator
from .tensor import Tensor


def _dtype(dtype):
    return dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)


def _new(array, requires_grad):
    return Tensor._wrap(array).requires_grad_(requires_grad)


def tensor(data, dtype=None, requires_grad=False):
    """A new tensor holding a copy of `data` (Python floats -> float32; numpy arrays keep their dtype)."""
    return Tensor(data, dtype=dtype, requires_grad=requires_grad)


def from_numpy(array):
    """A tensor sharing memory with `array` (changes to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray; got {type(array).__name__}")
    dtypes.as_dtype(array.dtype)
    return Tensor._wrap(array)


def zeros(*shape, dtype=None, requires_grad=False):
    return _new(np.zeros(shape_args(shape, "zeros"), _dtype(dtype)), requires_grad)


def ones(*shape, dtype=None, requires_grad=False):
    return _new(np.ones(shape_args(shape, "ones"), _dtype(dtype)), requires_grad)


def full(shape, fill_value, dtype=None, requires_grad=False):
    """Like torch.full: without dtype, a bool fill gives bool, an integer int64, a float float32."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else shape_args((shape,), "full")
    if dtype is None:
        dtype = dtypes.number_dtype(fill_value)
    return _new(np.full(shape, fill_value, _dtype(dtype)), requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad=False):
    """Like torch.arange: int64 for integer arguments, float32 otherwise (unless dtype is given)."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        integral = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = dtypes.int64 if integral else None
    return _new(np.arange(start, end, step, dtype=_dtype(dtype)), requires_grad)


def randn(*shape, dtype=None, requires_grad=False):
    """Standard normal draws from minigrad's generator (see mg.manual_seed)."""
    return _new(generator().standard_normal(shape_args(shape, "randn")).astype(_dtype(dtype)), requires_grad)


def rand(*shape, dtype=None, requires_grad=False):
    """Uniform [0, 1) draws from minigrad's generator."""
    return _new(generator().random(shape_args(shape, "rand")).astype(_dtype(dtype)), requires_grad)


def _like(maker):
    def like(other, dtype=None, requires_grad=False, **kwargs):
        return maker(*other.shape, **kwargs, dtype=dtype or other.dtype, requires_grad=requires_grad)
    like.__name__ = maker.__name__ + "_like"
    like.__doc__ = f"{maker.__name__} with the shape (and, unless given, the dtype) of another tensor."
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
randn_like = _like(randn)
rand_like = _like(rand)


def full_like(other, fill_value, dtype=None, requires_grad=False):
    return full(other.shape, fill_value, dtype=dtype or other.dtype, requires_grad=requires_grad)
