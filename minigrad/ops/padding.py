"""pad: widen (or, with negative amounts, crop) a tensor at the ends of its last dims, like
torch.nn.functional.pad.

`pad` lists (before, after) amounts starting from the LAST dim: (1, 2) pads the last dim with
1 before and 2 after; (1, 2, 3, 4) also pads the second-to-last dim with 3 before, 4 after.

    mode="constant"   new places hold `value` (0 by default)
    mode="reflect"    mirror without repeating the edge: [a b c] -> b [a b c] b
    mode="replicate"  repeat the edge:                     [a b c] -> a [a b c] c
    mode="circular"   wrap around:                         [a b c] -> c [a b c] a

In every mode a negative amount crops, as in torch: reflect and replicate pad first and then
crop, circular crops first and then wraps around what is left.
Every mode is one graph node. Constant padding cuts its gradient back out of the padded
gradient; the other modes read each output place from one input place (an index map per dim),
so their gradient adds each output place's gradient back into the place it was read from.
"""

import numpy as np

from ..errors import ArgumentError, ShapeError
from ..engine import Function, Tensor
from .registry import op

_NUMPY_MODES = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


class ConstantPad(Function):
    """out = x cropped where an amount is negative, then padded with `value` where it is positive;
    dx = dout with the padded border cut off, and zeros where x was cropped."""

    @staticmethod
    def forward(ctx, x, widths, value):
        ctx.widths = widths
        return np.pad(x[_inside(x.shape, widths, -1)], _outside(widths, 1), constant_values=value)

    @staticmethod
    def backward(ctx, grad):
        return np.pad(grad[_inside(grad.shape, ctx.widths, 1)], _outside(ctx.widths, -1))


def _inside(shape, widths, sign):
    """The slices that drop sign * width (where positive) from each end of each dim."""
    return tuple(
        slice(max(sign * before, 0), size - max(sign * after, 0))
        for size, (before, after) in zip(shape, widths)
    )


def _outside(widths, sign):
    return [(max(sign * before, 0), max(sign * after, 0)) for before, after in widths]


class IndexPad(Function):
    """Reflect / replicate / circular: out takes, along each padded dim, the input places listed in
    that dim's index map; dx adds every output place's gradient into the place it came from."""

    @staticmethod
    def forward(ctx, x, dims, indices):
        ctx.index_maps = [(dim, index, x.shape[dim]) for dim, index in zip(dims, indices)]
        for dim, index in zip(dims, indices):
            x = np.take(x, index, axis=dim)
        return x

    @staticmethod
    def backward(ctx, grad):
        for dim, index, size in reversed(ctx.index_maps):
            smaller = np.zeros(grad.shape[:dim] + (size,) + grad.shape[dim + 1 :], grad.dtype)
            np.add.at(smaller, (slice(None),) * dim + (index,), grad)
            grad = smaller
        return grad


@op(method=False, public=False)
def pad(input, pad, mode="constant", value=None):
    """input (..., n_k, ..., n_1) -> (..., n_k + before_k + after_k, ..., n_1 + before_1 + after_1),
    with pad = (before_1, after_1, before_2, after_2, ...) counted from the last dim."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pad: expected input to be a Tensor; got {type(input).__name__}")
    amounts = tuple(pad)
    if not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in amounts):
        raise TypeError(f"pad: expected pad to be a tuple of ints; got {pad!r}")
    if len(amounts) % 2:
        raise ArgumentError(
            f"pad: padding length must be divisible by 2 (a before and an after per dim); "
            f"got {len(amounts)} amounts"
        )
    if len(amounts) // 2 > input.ndim:
        raise ShapeError(
            "pad: padding length should be at most two times the input dimension; "
            f"got padding length {len(amounts)} for an input of shape {input.shape}"
        )
    # (before, after) per dim of input, first dim first
    widths = [(0, 0)] * (input.ndim - len(amounts) // 2) + [
        (int(amounts[i]), int(amounts[i + 1])) for i in reversed(range(0, len(amounts), 2))
    ]
    if mode == "constant":
        for dim, (size, (before, after)) in enumerate(zip(input.shape, widths)):
            if size + min(before, 0) + min(after, 0) < 0:  # crops come first, as in torch
                raise ShapeError(
                    f"pad: cannot crop {-min(before, 0)} before and {-min(after, 0)} after from "
                    f"dim {dim} of size {size}"
                )
        # in input's dtype (2.5 -> 2 for ints), as torch
        fill = input.dtype.type(0 if value is None else value)
        return ConstantPad.apply(input, widths=tuple(widths), value=fill)
    if mode not in _NUMPY_MODES:  # torch raises NotImplementedError here
        raise NotImplementedError(
            f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular'; got {mode!r}"
        )
    if value is not None:
        raise ArgumentError(f"pad: mode {mode!r} does not take a value argument")
    dims, indices = _index_maps(input.shape, widths, mode)
    padded = [size + before + after for size, (before, after) in zip(input.shape, widths)]
    padded = padded[input.ndim - len(amounts) // 2 :]
    if mode != "circular" and padded and not any(padded):
        raise ShapeError(
            f"pad: {mode} padding of {amounts} leaves nothing of the padded dims of an input of "
            f"shape {input.shape} (output sizes {tuple(padded)}); at least one must stay non-empty"
        )
    return IndexPad.apply(input, dims=dims, indices=indices)


def _index_maps(shape, widths, mode):
    """The padded dims, and for each an index array: which input place each output place reads.
    Positive amounts pad the input as it is; negative ones then crop, as torch does."""
    dims, indices = [], []
    for dim, (size, (before, after)) in enumerate(zip(shape, widths)):
        if before == after == 0:
            continue
        limit = {"reflect": size - 1, "replicate": None, "circular": size}[mode]
        widest = max(before, after, 0)
        # an empty result is torch's too (pad() refuses one only where every padded dim is)
        if size == 0 or (limit is not None and widest > limit) or size + before + after < 0:
            raise ShapeError(
                f"pad: {mode} padding of ({before}, {after}) does not fit dim {dim} of size {size} "
                f"(input shape {shape})"
                + ("" if limit is None else f"; each amount must be at most {limit}")
            )
        grow, crop = (max(before, 0), max(after, 0)), (max(-before, 0), max(-after, 0))
        if mode == "circular":  # torch crops first, then wraps around what is left (once at most)
            kept = np.arange(size)[crop[0] : max(size - crop[1], 0)]
            if kept.size < widest or crop[0] + crop[1] > size:
                raise ShapeError(
                    f"pad: circular padding of ({before}, {after}) does not fit dim {dim} of "
                    f"size {size} cropped to {kept.size} (input shape {shape})"
                )
            index = np.pad(kept, grow, mode="wrap")
        else:  # reflect and replicate pad first, then crop
            padded = np.pad(np.arange(size), grow, mode=_NUMPY_MODES[mode])
            index = padded[crop[0] : len(padded) - crop[1]]
        dims.append(dim)
        indices.append(index)
    return tuple(dims), indices


__all__ = ["pad"]
