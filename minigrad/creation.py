"""Ways to make tensors: from data, filled, ranges and random draws (float32 unless told)."""

import numpy as np

from .random import generator
from .tensor import Tensor, _to_array, default_dtype


def _dtype(dtype):
    return default_dtype if dtype is None else np.dtype(dtype)


def _shape(shape):
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else tuple(shape)


def tensor(data, dtype=None, requires_grad=False):
    """A new tensor holding a copy of `data` (Python floats -> float32; numpy arrays keep their dtype)."""
    return Tensor(np.array(_to_array(data, dtype), copy=True), requires_grad=requires_grad, _copy=False)


def from_numpy(array):
    """A tensor sharing memory with `array` (changes to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray; got {type(array).__name__}")
    return Tensor(array)


def zeros(*shape, dtype=None, requires_grad=False):
    return Tensor(np.zeros(_shape(shape), _dtype(dtype)), requires_grad=requires_grad)


def ones(*shape, dtype=None, requires_grad=False):
    return Tensor(np.ones(_shape(shape), _dtype(dtype)), requires_grad=requires_grad)


def full(shape, fill_value, dtype=None, requires_grad=False):
    """Like torch.full: without dtype, a bool fill gives bool, an integer int64, a float float32."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if dtype is None:
        if isinstance(fill_value, (bool, np.bool_)):
            dtype = np.bool_
        elif isinstance(fill_value, (int, np.integer)):
            dtype = np.int64
    return Tensor(np.full(shape, fill_value, _dtype(dtype)), requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad=False):
    """Like torch.arange: int64 for integer arguments, float32 otherwise (unless dtype is given)."""
    if end is None:
        start, end = 0, start
    if dtype is None:
        integral = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = np.int64 if integral else default_dtype
    return Tensor(np.arange(start, end, step, dtype=dtype), requires_grad=requires_grad)


def randn(*shape, dtype=None, requires_grad=False):
    """Standard normal draws from minigrad's generator (see mg.manual_seed)."""
    data = generator().standard_normal(_shape(shape)).astype(_dtype(dtype))
    return Tensor(data, requires_grad=requires_grad)


def rand(*shape, dtype=None, requires_grad=False):
    """Uniform [0, 1) draws from minigrad's generator."""
    data = generator().random(_shape(shape)).astype(_dtype(dtype))
    return Tensor(data, requires_grad=requires_grad)


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
