"""Ways to make tensors: from data, filled, ranges, random draws (the default float dtype,
float32, unless told), and the `new_*` methods that make a tensor like another one.

Every maker takes `device=` as torch's do, so ported code runs; the CPU is the only device.
"""

import numpy as np

from . import dtypes
from .errors import ArgumentError, DTypeError, ShapeError
from .ops.args import as_array, check_device, shape_args
from . import random as _random
from .random import generator as _draw
from .engine import Tensor


def _dtype(dtype):
    return dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)


def _new(array, requires_grad, device=None, op="tensor"):
    check_device(device, op)
    return Tensor._wrap(array).requires_grad_(requires_grad)


def tensor(data, dtype=None, requires_grad=False, device=None):
    """A new tensor holding a copy of `data` (Python floats -> float32; numpy arrays keep their
    dtype)."""
    check_device(device, "tensor")
    return Tensor(data, dtype=dtype, requires_grad=requires_grad)


def as_tensor(data, dtype=None, device=None):
    """`data` as a tensor without a copy where possible (a tensor, or a numpy array of an allowed
    dtype that needs no conversion, is shared), as torch.as_tensor."""
    check_device(device, "as_tensor")
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray) and (dtype is None or np.dtype(dtype) == data.dtype):
        return from_numpy(data)
    return Tensor(data, dtype=dtype)


def from_numpy(array):
    """A tensor sharing memory with `array` (changes to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray; got {type(array).__name__}")
    dtypes.as_dtype(array.dtype)
    return Tensor._wrap(array)


def _shape(shape, op):
    shape = shape_args(shape, op)
    if any(s < 0 for s in shape):
        raise ShapeError(f"{op}: sizes must be non-negative; got shape {shape}")
    return shape


def zeros(*shape, dtype=None, requires_grad=False, device=None):
    return _new(np.zeros(_shape(shape, "zeros"), _dtype(dtype)), requires_grad, device, "zeros")


def ones(*shape, dtype=None, requires_grad=False, device=None):
    return _new(np.ones(_shape(shape, "ones"), _dtype(dtype)), requires_grad, device, "ones")


def empty(*shape, dtype=None, requires_grad=False, device=None):
    """A tensor whose values are whatever the memory held (as torch.empty): fill it before
    reading."""
    return _new(np.empty(_shape(shape, "empty"), _dtype(dtype)), requires_grad, device, "empty")


def full(shape, fill_value, dtype=None, requires_grad=False, device=None):
    """Like torch.full: without dtype, a bool fill gives bool, an integer int64, a float float32."""
    shape = _shape((shape,) if isinstance(shape, (int, np.integer)) else (shape,), "full")
    if dtype is None:
        dtype = dtypes.number_dtype(fill_value)
    return _new(np.full(shape, fill_value, _dtype(dtype)), requires_grad, device, "full")


def eye(n, m=None, dtype=None, requires_grad=False, device=None):
    """The (n, m) matrix with ones on the diagonal (m = n by default)."""
    m = n if m is None else m
    if n < 0 or m < 0:
        raise ShapeError(f"eye: sizes must be non-negative; got n={n}, m={m}")
    return _new(np.eye(n, m, dtype=_dtype(dtype)), requires_grad, device, "eye")


def arange(start, end=None, step=1, dtype=None, requires_grad=False, device=None):
    """Like torch.arange: int64 for integer arguments, float32 otherwise (unless dtype is given)."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ArgumentError("arange: step must be nonzero")
    if not all(np.isfinite(float(v)) for v in (start, end, step)):
        raise ArgumentError(
            f"arange: start, end and step must be finite; got {start} -> {end} by {step}"
        )
    if dtype is None:
        integral = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = dtypes.int64 if integral else None
    return _new(np.arange(start, end, step, dtype=_dtype(dtype)), requires_grad, device, "arange")


def linspace(start, end, steps, dtype=None, requires_grad=False, device=None):
    """`steps` evenly spaced values from start to end, both included (float32 unless told)."""
    if not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ArgumentError(f"linspace: steps must be a non-negative int; got {steps!r}")
    if _dtype(dtype) == np.bool_:  # torch: "linspace_cpu" not implemented for 'Bool'
        raise NotImplementedError("linspace: dtype bool is not supported (as in torch)")
    values = np.linspace(float(start), float(end), int(steps))
    return _new(values.astype(_dtype(dtype)), requires_grad, device, "linspace")


# -- random draws (from minigrad's generator: see mg.manual_seed) --------------------------


def randn(*shape, generator=None, dtype=None, requires_grad=False, device=None):
    """Standard normal draws (from `generator`, an mg.Generator, when given)."""
    draws = _draw(generator).standard_normal(_shape(shape, "randn"))
    return _new(draws.astype(_dtype(dtype)), requires_grad, device, "randn")


def rand(*shape, generator=None, dtype=None, requires_grad=False, device=None):
    """Uniform [0, 1) draws."""
    return _new(
        _draw(generator).random(_shape(shape, "rand")).astype(_dtype(dtype)),
        requires_grad,
        device,
        "rand",
    )


def randint(
    *bounds,
    size=None,
    low=None,
    high=None,
    generator=None,
    dtype=None,
    requires_grad=False,
    device=None,
):
    """Uniform integers in [low, high): randint(high, size), randint(low, high, size) or with
    keywords, as torch.randint. int64 unless dtype says otherwise."""
    if size is None and bounds:
        *bounds, size = bounds
    if high is None:
        if not bounds or len(bounds) > 2:
            raise TypeError(
                f"randint: expected randint(high, size) or randint(low, high, size); got {bounds}"
            )
        low, high = (0 if low is None else low, bounds[0]) if len(bounds) == 1 else bounds
    low = 0 if low is None else low
    if low >= high:
        raise ArgumentError(f"randint: low must be less than high; got low={low}, high={high}")
    shape = _shape((size,) if isinstance(size, (int, np.integer)) else (tuple(size),), "randint")
    draws = _draw(generator).integers(low, high, size=shape)
    return _new(
        draws.astype(dtypes.int64 if dtype is None else dtypes.as_dtype(dtype)),
        requires_grad,
        device,
        "randint",
    )


def randperm(n, generator=None, dtype=None, requires_grad=False, device=None):
    """A random permutation of 0 .. n-1 (int64)."""
    if n < 0:
        raise ArgumentError(f"randperm: n must be non-negative; got {n}")
    order = _draw(generator).permutation(int(n))
    return _new(
        order.astype(dtypes.int64 if dtype is None else dtypes.as_dtype(dtype)),
        requires_grad,
        device,
        "randperm",
    )


def multinomial(input, num_samples, replacement=False, generator=None):
    """Category indices drawn from each row of `input` (1-D or 2-D non-negative weights, not
    necessarily summing to 1): (num_samples,) or (rows, num_samples), int64.

    With replacement every draw is independent (inverse CDF of a uniform draw). Without, it is
    sequential sampling: draw one, remove it, renormalise; done at once as an exponential race
    (keep the num_samples smallest E_i / p_i, E_i ~ Exp(1)), which has that distribution."""
    weights = as_array(input)
    if weights.dtype.kind != "f":
        raise DTypeError(f"multinomial: expects float weights; got dtype {weights.dtype}")
    if weights.ndim not in (1, 2):
        raise ShapeError(f"multinomial: expects 1-D or 2-D weights; got shape {weights.shape}")
    rows = weights.reshape(-1, weights.shape[-1]).astype(np.float64)
    categories = rows.shape[1]
    if rows.size and (not np.isfinite(rows).all() or rows.min() < 0):
        raise ArgumentError("multinomial: weights must be finite and non-negative")
    if rows.shape[0] and (rows.sum(axis=1) <= 0).any():
        raise ArgumentError("multinomial: every row of weights needs a positive sum")
    if num_samples <= 0 or (not replacement and num_samples > categories):
        raise ArgumentError(
            f"multinomial: num_samples must be in [1, {categories}] without replacement "
            f"(any positive number with it); got {num_samples}"
        )
    if replacement:
        offsets = np.arange(rows.shape[0])[:, None]
        cdf = np.cumsum(rows, axis=1)
        cdf = cdf / cdf[:, -1:] + offsets  # rows laid end to end: one searchsorted for all of them
        draws = _draw(generator).random((rows.shape[0], num_samples)) + offsets
        samples = np.searchsorted(cdf.ravel(), draws.ravel(), side="right").reshape(draws.shape)
        samples = np.minimum(samples - offsets * categories, categories - 1)
    else:
        with np.errstate(divide="ignore"):  # weight 0: key inf, drawn only after every other
            keys = _draw(generator).exponential(size=rows.shape) / rows
        samples = np.argsort(keys, axis=1, kind="stable")[:, :num_samples]
    samples = samples.astype(np.int64)
    return Tensor._wrap(samples if weights.ndim == 2 else samples[0])


def bernoulli(input, p=None, generator=None):
    """0 or 1 in each place, 1 with the probability input holds there (or p, when given), in
    input's dtype (torch.bernoulli). No gradient flows through the draw."""
    probabilities = as_array(input)
    if probabilities.dtype.kind != "f":
        raise DTypeError(f"bernoulli: expects float probabilities; got dtype {probabilities.dtype}")
    if p is not None:
        probabilities = np.full(probabilities.shape, float(p), probabilities.dtype)
    if probabilities.size and not ((probabilities >= 0) & (probabilities <= 1)).all():
        raise ArgumentError("bernoulli: probabilities must be in [0, 1]")
    draws = _draw(generator).random(probabilities.shape) < probabilities
    return Tensor._wrap(draws.astype(probabilities.dtype))


def normal(mean, std=1.0, size=None, generator=None, dtype=None):
    """Normal draws with the given mean and standard deviation (tensors broadcast against each
    other, or numbers with `size`), as torch.normal. No gradient flows through the draw."""
    mean_array, std_array = as_array(mean), as_array(std)
    if size is not None:
        if mean_array.ndim or std_array.ndim:
            raise ArgumentError("normal: give size only with a number for mean and for std")
        shape = _shape((size,) if isinstance(size, (int, np.integer)) else (tuple(size),), "normal")
    else:
        if not (mean_array.ndim or std_array.ndim):
            raise ArgumentError(
                "normal: with numbers for mean and std, give size (normal(0.0, 1.0, size=(3,)))"
            )
        shape = np.broadcast_shapes(mean_array.shape, std_array.shape)
    if std_array.size and not (std_array >= 0).all():
        raise ArgumentError("normal: std must be >= 0")
    kinds = [a.dtype for a in (mean_array, std_array) if a.ndim and a.dtype.kind == "f"]
    out_dtype = (
        dtypes.as_dtype(dtype) if dtype is not None else (kinds[0] if kinds else _dtype(None))
    )
    draws = _draw(generator).normal(size=shape) * std_array + mean_array
    return Tensor._wrap(draws.astype(out_dtype))


# -- like another tensor ------------------------------------------------------------------


def _like(maker):
    def like(other, dtype=None, requires_grad=False, device=None):
        return maker(
            *other.shape, dtype=dtype or other.dtype, requires_grad=requires_grad, device=device
        )

    like.__name__ = maker.__name__ + "_like"
    like.__doc__ = (
        f"{maker.__name__} with the shape (and, unless given, the dtype) of another tensor."
    )
    return like


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
randn_like = _like(randn)
rand_like = _like(rand)


def full_like(other, fill_value, dtype=None, requires_grad=False, device=None):
    return full(
        other.shape,
        fill_value,
        dtype=dtype or other.dtype,
        requires_grad=requires_grad,
        device=device,
    )


def new_zeros(self, *size, dtype=None, requires_grad=False, device=None):
    """Zeros of shape `size` with this tensor's dtype (unless dtype is given), as torch's
    Tensor.new_zeros."""
    return zeros(*size, dtype=dtype or self.dtype, requires_grad=requires_grad, device=device)


def new_ones(self, *size, dtype=None, requires_grad=False, device=None):
    return ones(*size, dtype=dtype or self.dtype, requires_grad=requires_grad, device=device)


def new_empty(self, *size, dtype=None, requires_grad=False, device=None):
    return empty(*size, dtype=dtype or self.dtype, requires_grad=requires_grad, device=device)


def new_full(self, size, fill_value, dtype=None, requires_grad=False, device=None):
    return full(
        size, fill_value, dtype=dtype or self.dtype, requires_grad=requires_grad, device=device
    )


def new_tensor(self, data, dtype=None, requires_grad=False, device=None):
    """A copy of `data` with this tensor's dtype unless dtype is given."""
    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad, device=device)


# The new_* makers are Tensor methods too (x.new_zeros(3)); they are attached here, on the floor
# that makes tensors, because the ops below may not import creation.
for _maker in (new_zeros, new_ones, new_empty, new_full, new_tensor, multinomial):
    setattr(Tensor, _maker.__name__, _maker)


def get_rng_state():
    """The global generator's state as a 1-D uint8 tensor (torch.get_rng_state): save it with a
    checkpoint, and set_rng_state(state) later draws the same numbers again (dropout, init ...)."""
    return Tensor(_random.get_rng_state())


def set_rng_state(new_state):
    """Put the global generator back to a state get_rng_state() gave (a tensor or array;
    torch.set_rng_state); a damaged state raises ValueError and changes nothing."""
    _random.set_rng_state(new_state)
