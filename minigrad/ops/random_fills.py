"""Random fills, in place: x.uniform_(), x.normal_(), x.exponential_(), x.bernoulli_(),
x.random_() (torch's, from minigrad's seeded generator or generator=), and randint_like, the
out-of-place random_. A fill goes through apply_inplace (inplace.py): while recorded, x's old
value gets no gradient, as after torch's fills.
"""

import numpy as np

from .. import dtypes
from ..engine import Tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from ..random import generator as draw_from
from .args import as_array
from .inplace import apply_inplace
from .piecewise import where
from .registry import op


def _fill_with(x, name, draws):
    """x <- draws (an array of x's shape), in place. While recorded, x's old value gets no
    gradient, as after torch's fills."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor; got {type(x).__name__}")
    fresh = Tensor._wrap(np.asarray(draws).astype(x.dtype, copy=False))
    return apply_inplace(x, name, lambda a, values: where(np.ones((), np.bool_), values, a), fresh)


def _float_target(x, name):
    if not isinstance(x, Tensor) or x.dtype.kind != "f":
        raise DTypeError(
            f"{name}: fills a float tensor; got {getattr(x, 'dtype', type(x).__name__)}"
        )


def _number(value, name, what):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: {what} must be a number; got {type(value).__name__} {value!r}")
    return float(value)


def uniform_(x, from_=0.0, to=1.0, *, generator=None):
    """Fill x with draws uniform in [from_, to) (torch's uniform_(from, to))."""
    _float_target(x, "uniform_")
    low, high = _number(from_, "uniform_", "from"), _number(to, "uniform_", "to")
    if not low <= high:
        raise ArgumentError(f"uniform_: expects from <= to; got from={from_}, to={to}")
    return _fill_with(x, "uniform_", draw_from(generator).uniform(low, high, x.shape))


def normal_(x, mean=0.0, std=1.0, *, generator=None):
    """Fill x with normal draws of `mean` and standard deviation `std` (>= 0)."""
    _float_target(x, "normal_")
    mean, std = _number(mean, "normal_", "mean"), _number(std, "normal_", "std")
    if not std >= 0:
        raise ArgumentError(f"normal_: std must be non-negative; got {std}")
    return _fill_with(x, "normal_", draw_from(generator).normal(mean, std, x.shape))


def exponential_(x, lambd=1.0, *, generator=None):
    """Fill x with exponential draws of rate `lambd` (> 0): mean 1 / lambd."""
    _float_target(x, "exponential_")
    rate = _number(lambd, "exponential_", "lambd")
    if not rate > 0:
        raise ArgumentError(f"exponential_: lambd must be positive; got {lambd}")
    return _fill_with(x, "exponential_", draw_from(generator).exponential(1 / rate, x.shape))


def bernoulli_(x, p=0.5, *, generator=None):
    """Fill x with 1 with probability p, else 0 (p a number or a tensor that broadcasts to x)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"bernoulli_: expected a Tensor; got {type(x).__name__}")
    probability = as_array(p)
    if (
        probability.dtype.kind not in "fiu"
        or probability.size
        and not ((probability >= 0) & (probability <= 1)).all()
    ):
        raise ArgumentError(f"bernoulli_: p must be probabilities in [0, 1]; got {p!r}")
    try:
        np.broadcast_to(probability, x.shape)
    except ValueError:
        raise ShapeError(
            f"bernoulli_: p of shape {probability.shape} does not broadcast to {x.shape}"
        ) from None
    return _fill_with(x, "bernoulli_", draw_from(generator).random(x.shape) < probability)


def _integer_range(dtype):
    """[0, top] that random_() draws from: every integer the dtype holds exactly (torch)."""
    if dtype.kind == "f":
        return 2 ** (np.finfo(dtype).nmant + 1) + 1  # the stored mantissa bits and the implicit one
    if dtype == np.bool_:
        return 2
    return int(np.iinfo(dtype).max)


def random_(x, from_=None, to=None, *, generator=None):
    """Fill x with integers uniform in [from_, to); random_(to): [0, to); random_(): every
    non-negative integer x's dtype holds exactly (torch's random_)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"random_: expected a Tensor; got {type(x).__name__}")
    low, high = (0, from_) if to is None else (from_, to)
    for name, bound in (("from", low), ("to", high)):
        if bound is not None and (
            isinstance(bound, bool) or not isinstance(bound, (int, np.integer))
        ):
            raise TypeError(f"random_: {name} must be an int; got {type(bound).__name__} {bound!r}")
    high = _integer_range(x.dtype) if high is None else int(high)
    if not low < high:
        raise ArgumentError(f"random_: expects from < to; got from={low}, to={high}")
    return _fill_with(x, "random_", draw_from(generator).integers(int(low), high, x.shape))


@op(method=False)
def randint_like(x, low=0, high=None, *, dtype=None, requires_grad=False, generator=None):
    """A new tensor of x's shape (and dtype, unless dtype=) of integers uniform in [low, high);
    randint_like(x, high) draws from [0, high) (torch.randint_like; the out-of-place random_)."""
    low, high = (0, low) if high is None else (low, high)
    for name, bound in (("low", low), ("high", high)):
        if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)):
            raise TypeError(
                f"randint_like: {name} must be an int; got {type(bound).__name__} {bound!r}"
            )
    if not low < high:
        raise ArgumentError(f"randint_like: expects low < high; got low={low}, high={high}")
    draws = draw_from(generator).integers(int(low), int(high), x.shape)
    return Tensor._wrap(
        draws.astype(x.dtype if dtype is None else dtypes.as_dtype(dtype)),
        requires_grad=requires_grad,
    )
