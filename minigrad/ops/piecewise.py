"""Piecewise elementwise choices: which value each element takes. where, masked_fill, clamp
(clip), maximum, minimum, copysign, heaviside and nan_to_num. The gradient goes to the value
chosen (torch's rules at ties and edges are written at each op)."""

import numpy as np

from ..dtypes import float_result, result_type
from ..errors import ArgumentError, DTypeError, ShapeError
from ..engine import Function, Tensor
from .args import as_array, bool_mask, check_broadcast
from .conversion import cast, operand_as
from .indexing import nonzero
from .namespace import namespace
from .registry import op


class Where(Function):
    """where(condition, x, y): x where condition is true, else y. The condition is a constant."""

    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, y, condition):
        ctx.condition = condition
        return np.where(condition, x, y)

    @staticmethod
    def backward(ctx, grad):
        xp = namespace(grad)
        return xp.where(ctx.condition, grad, 0), xp.where(ctx.condition, 0, grad)


@op(method=False)  # x.where(condition, y) takes its arguments in another order
def where(condition, x=None, y=None):
    """Elementwise choice with broadcasting among condition, x and y; torch's result dtype.
    where(condition) alone is nonzero(condition, as_tuple=True), as in torch."""
    if x is None and y is None:
        return nonzero(condition, as_tuple=True)
    condition = bool_mask(condition, "where")
    check_broadcast("where", condition, x, y)
    dtype = result_type(x, y)
    return Where.apply(operand_as(x, dtype), operand_as(y, dtype), condition=condition)


class MaskedFill(Function):
    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.mask = mask
        return np.where(mask, np.asarray(value, dtype=x.dtype), x)

    @staticmethod
    def backward(ctx, grad):
        return namespace(grad).where(ctx.mask, 0, grad)


@op
def masked_fill(x, mask, value):
    """A copy of x with `value` where mask is True (mask broadcasts to x's shape)."""
    mask = bool_mask(mask, "masked_fill", x.shape)
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ShapeError(
                f"masked_fill: value must be a number or a 0-d tensor; got shape {value.shape}"
            )
        # the value takes a gradient too (the sum over the filled places), as in torch
        if value.requires_grad:
            return where(mask, cast(value, x.dtype), x)
        value = value.item()
    return MaskedFill.apply(x, mask=mask, value=value)


class Clamp(Function):
    """y = min(max(x, low), high) with tensor bounds (has_low/has_high False: no bound there).
    The gradient goes where torch sends it: to x where low <= x <= high, to low where
    x < low < high, to high where x > high or high < low (then every output is high); where
    x < low == high, to none of them."""

    higher_order = "backward"

    @staticmethod
    def forward(ctx, x, low, high, has_low, has_high):
        y = x
        if has_low:
            y = np.maximum(y, low)
        if has_high:
            y = np.minimum(y, high)
        ctx.save_for_backward(x, low, high)
        ctx.has_low, ctx.has_high = has_low, has_high
        return y

    @staticmethod
    def backward(ctx, grad):
        x, low, high = (getattr(t, "_data", t) for t in ctx.saved)  # only masks are made of them
        xp = namespace(grad)
        passes = np.ones(x.shape, dtype=bool)
        if ctx.has_low:
            passes = passes & (x >= low)
        if ctx.has_high:
            passes = passes & (x <= high)
        grad_x = xp.where(passes, grad, 0)
        grad_low = grad_high = None
        if ctx.has_low and ctx.needs_input_grad[1]:
            low_wins = x < low
            if ctx.has_high:
                low_wins = low_wins & (low < high)
            grad_low = xp.where(low_wins, grad, 0)
        if ctx.has_high and ctx.needs_input_grad[2]:
            high_wins = x > high
            if ctx.has_low:
                high_wins = high_wins | (high < low)
            grad_high = xp.where(high_wins, grad, 0)
        return grad_x, grad_low, grad_high


@op
def clamp(x, min=None, max=None):
    """Elementwise min(max(x, min), max); either bound may be None, a number or a tensor that
    broadcasts with x. Where min > max every element is max, as in torch."""
    if min is None and max is None:
        raise ArgumentError("clamp: at least one of min and max must be given (not None)")
    x = x if isinstance(x, Tensor) else Tensor._wrap(as_array(x))
    bounds = [b for b in (min, max) if b is not None]
    check_broadcast("clamp", x, *bounds)
    dtype = result_type(x, *bounds)
    zero = Tensor._wrap(np.zeros((), dtype))  # stands for a missing bound (never read)
    low = zero if min is None else operand_as(min, dtype)
    high = zero if max is None else operand_as(max, dtype)
    return Clamp.apply(cast(x, dtype), low, high, has_low=min is not None, has_high=max is not None)


clip = op(clamp, name="clip")


class Extremum(Function):
    """maximum(a, b) (or minimum): the winner gets the gradient; a tie splits it in halves
    (torch)."""

    @staticmethod
    def forward(ctx, a, b, pick):
        ctx.save_for_backward(a, b)
        ctx.pick = pick
        return pick(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        # where a NaN meets a number both get all of it (torch)
        shared = np.where(a == b, grad / 2, grad)
        a_loses, b_loses = (a < b, b < a) if ctx.pick is np.maximum else (a > b, b > a)
        return np.where(a_loses, 0, shared), np.where(b_loses, 0, shared)


def _extremum(pick, name):
    def op(input, other):
        if not isinstance(input, Tensor) or not isinstance(other, Tensor):
            raise TypeError(
                f"{name}: both arguments must be tensors (as in torch; use clamp for a number); "
                f"got {type(input).__name__} and {type(other).__name__}"
            )
        check_broadcast(name, input, other)
        dtype = result_type(input, other)
        return Extremum.apply(cast(input, dtype), cast(other, dtype), pick=pick)

    op.__name__ = name
    op.__doc__ = f"Elementwise {name} of two tensors (broadcast); NaN wins, as in torch."
    return op


maximum = op(_extremum(np.maximum, "maximum"))
minimum = op(_extremum(np.minimum, "minimum"))


class Copysign(Function):
    """|a| with the sign of b (also of -0.0 and NaN's sign bit). d/da = y / a (+-1), 0 where
    a == 0, as torch; d/db = 0."""

    @staticmethod
    def forward(ctx, a, b):
        y = np.copysign(a, b)
        ctx.save_for_backward(a, y)
        return y

    @staticmethod
    def backward(ctx, grad):
        a, y = ctx.saved
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(a == 0, 0, grad * (y / a)), np.zeros_like(grad)


@op
def copysign(input, other):
    """Elementwise |input| with the sign of other (a tensor or a number); a float result."""
    if not isinstance(input, Tensor):
        raise TypeError(f"copysign: input must be a Tensor; got {type(input).__name__}")
    check_broadcast("copysign", input, other)
    dtype = float_result(result_type(input, other))
    return Copysign.apply(operand_as(input, dtype), operand_as(other, dtype))


class Heaviside(Function):
    """1 where x > 0, values where x == 0, 0 where x < 0 (and where x is NaN, as torch).
    torch defines no derivative: backward raises, as torch's does."""

    @staticmethod
    def forward(ctx, x, values):
        return np.where(x == 0, values, x > 0).astype(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError("the derivative of heaviside is not implemented (as in torch)")


@op
def heaviside(input, values):
    """The Heaviside step of input, with `values` (a tensor of input's dtype that broadcasts) where
    input is 0. Its output takes part in no gradient: backward through it raises, as in torch."""
    for name, x in (("input", input), ("values", values)):
        if not isinstance(x, Tensor):
            raise TypeError(
                f"heaviside: {name} must be a Tensor (as torch); got {type(x).__name__}"
            )
    if input.dtype != values.dtype:
        raise DTypeError(
            "heaviside: input and values must have the same dtype; "
            f"got {input.dtype} and {values.dtype}"
        )
    check_broadcast("heaviside", input, values)
    return Heaviside.apply(input, values)


class NanToNum(Function):
    """NaN, +inf and -inf replaced by numbers; the gradient passes where x is finite, 0
    elsewhere."""

    @staticmethod
    def forward(ctx, x, nan, posinf, neginf):
        ctx.finite = np.isfinite(x)
        return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.finite


@op
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """A copy of input with NaN as `nan`, +inf as `posinf` and -inf as `neginf` (by default the
    largest and the lowest finite value of the dtype). Integer and bool tensors come back as they
    are."""
    if not isinstance(input, Tensor):
        raise TypeError(f"nan_to_num: input must be a Tensor; got {type(input).__name__}")
    if input.dtype.kind != "f":
        return Tensor._wrap(input._data.copy())
    largest = np.finfo(input.dtype)
    return NanToNum.apply(
        input,
        nan=nan,
        posinf=largest.max if posinf is None else posinf,
        neginf=largest.min if neginf is None else neginf,
    )
