"""Pooling over 1-D and 2-D inputs, as torch.nn.functional's max_pool, avg_pool and the adaptive
poolings. Inputs are (N, C, *spatial) or unbatched (C, *spatial); the argument checks are
convolution's (ops/conv.py).

Pooling reads windows given per spatial dim as the input places each window's slots cover
(a slot in the padding, or past the end with ceil_mode, reads nothing), flattened here into
places over each (n, c) plane; the kernels (kernels/pooling.py) loop over them. Average
pooling is a weighted sum over a window's places (weight 1/divisor); max pooling picks each
window's largest place, and its backward adds each output's gradient to that place.
"""

import functools
import math

import numpy as np

from .. import kernels
from ..errors import ArgumentError, DTypeError, ShapeError
from ..engine import Function, Tensor
from .conv import batched_input, per_dim
from .registry import op


def _planes(array):
    """(N, C, *spatial) -> (N * C, prod(spatial)), one flat plane per (n, c)."""
    return array.reshape((array.shape[0] * array.shape[1], math.prod(array.shape[2:])))


class AvgPool(Function):
    """out[n, c, o] = sum over slots k of x[n, c, places[o, k]] * weights[o, k], x's spatial dims
    flattened into one plane per (n, c); the place P (the plane's size) reads nothing. places and
    weights are (*out, K). dx[n, c, p] = sum of dout[n, c, o] * weights[o, k] over the (o, k)
    whose place is p."""

    @staticmethod
    def forward(ctx, x, places, weights):
        ctx.shape, ctx.places = x.shape, places.reshape(-1, places.shape[-1])
        ctx.weights = weights.reshape(ctx.places.shape)
        return kernels.avg_pool_forward(_planes(x), ctx.places, ctx.weights).reshape(
            x.shape[:2] + places.shape[:-1]
        )

    @staticmethod
    def backward(ctx, grad):
        grad_planes = kernels.avg_pool_backward(
            _planes(grad), ctx.places, ctx.weights, math.prod(ctx.shape[2:])
        )
        return grad_planes.reshape(ctx.shape)


class MaxPool(Function):
    """(values, indices): the largest value of each window over places (*out, K) (as AvgPool's)
    and its flat place in the (n, c) plane. dx adds each output's gradient to that place."""

    @staticmethod
    def forward(ctx, x, places):
        values, chosen = kernels.max_pool_forward(_planes(x), places.reshape(-1, places.shape[-1]))
        ctx.shape, ctx.chosen = x.shape, chosen
        shape = x.shape[:2] + places.shape[:-1]
        return values.reshape(shape), chosen.reshape(shape)

    @staticmethod
    def backward(ctx, grad, _indices_grad):
        return kernels.max_pool_backward(
            _planes(grad), ctx.chosen, math.prod(ctx.shape[2:])
        ).reshape(ctx.shape)


def _pool_windows(size, kernel, stride, padding, dilation, out):
    """Along one dim of `size`: the input place each slot of each of `out` windows reads (out,
    kernel), whether it lies in the input, and whether in the padded input (count_include_pad's
    count)."""
    places = np.arange(out)[:, None] * stride - padding + np.arange(kernel) * dilation
    return places, (places >= 0) & (places < size), places < size + padding


def _bins(size, out):
    """Adaptive pooling's windows along one dim (as _pool_windows): bin i covers the places from
    floor(i * size / out) to ceil((i + 1) * size / out), the bins of torch."""
    starts = np.arange(out) * size // out
    ends = -(-(np.arange(out) + 1) * size // out)
    places = starts[:, None] + np.arange((ends - starts).max(initial=1))
    inside = places < ends[:, None]
    return places, inside, inside


def _plane_windows(spatial, windows):
    """Per-dim windows (places, inside, counted) -> the same over the flattened (n, c) plane, each
    (*out, K): a window's places (the plane's size where a slot is outside the input), whether
    each slot is inside, and whether it is counted."""
    dims = len(windows)

    # (out_d, kernel_d) onto axes dim and dims + dim of a (*out, *kernel) grid
    def spread(array, dim):
        shape = [1] * 2 * dims
        shape[dim], shape[dims + dim] = array.shape
        return array.reshape(shape)

    places, inside, counted = (
        [spread(w[part], dim) for dim, w in enumerate(windows)] for part in range(3)
    )
    inside = functools.reduce(np.logical_and, inside)
    counted = functools.reduce(np.logical_and, counted)
    places = np.where(
        inside, np.ravel_multi_index(places, spatial, mode="clip"), math.prod(spatial)
    )
    shape = tuple(w[0].shape[0] for w in windows) + (math.prod(w[0].shape[1] for w in windows),)
    return places.reshape(shape), inside.reshape(shape), counted.reshape(shape)


def _pool_settings(op, x, kernel_size, stride, padding, dilation, ceil_mode):
    """Checked settings -> the windows along each spatial dim of x (N, C, *spatial)."""
    dims = x.ndim - 2
    kernel = per_dim(kernel_size, dims, "kernel_size", op)
    stride = kernel if stride is None else per_dim(stride, dims, "stride", op)
    padding = per_dim(padding, dims, "padding", op, minimum=0)
    dilation = per_dim(dilation, dims, "dilation", op)
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ArgumentError(
            f"{op}: padding must be at most half the kernel size "
            f"(<= {tuple(k // 2 for k in kernel)} for kernel_size={kernel}); got padding={padding}"
        )
    spatial = x.shape[2:]
    out = []
    for size, k, s, p, d in zip(spatial, kernel, stride, padding, dilation):
        span = size + 2 * p - d * (k - 1) - 1
        count = (-(-span // s) if ceil_mode else span // s) + 1
        # the last window must start in the input or its padding
        if ceil_mode and (count - 1) * s >= size + p:
            count -= 1
        out.append(count)
    if min(out) < 1:
        raise ShapeError(
            f"{op}: input of shape {x.shape} is too small for kernel_size={kernel} with "
            f"stride={stride}, padding={padding}, dilation={dilation}: the output would be "
            f"{tuple(out)}"
        )
    return [
        _pool_windows(*setting) for setting in zip(spatial, kernel, stride, padding, dilation, out)
    ]


def _adaptive_windows(op, x, output_size):
    """Checked output_size (an int, or a tuple whose None entries keep that input size) -> the bins
    along each spatial dim of x (N, C, *spatial)."""
    dims = x.ndim - 2
    if isinstance(output_size, (tuple, list)) and len(output_size) == dims:
        output_size = tuple(
            size if wanted is None else wanted for size, wanted in zip(x.shape[2:], output_size)
        )
    sizes = per_dim(output_size, dims, "output_size", op, minimum=0)
    if min(x.shape[1:]) < 1:
        raise ShapeError(
            f"{op}: expected an input with non-zero channels and spatial sizes; "
            f"got input of shape {x.shape}"
        )
    return [_bins(size, out) for size, out in zip(x.shape[2:], sizes)]


def _average(x, windows, count_include_pad=False, divisor=None):
    if divisor is None and all(
        places.shape == (1, size) and inside.all()
        for (places, inside, _), size in zip(windows, x.shape[2:])
    ):  # one window over each whole plane: its mean
        return x.mean(tuple(range(2, x.ndim)), keepdim=True)
    places, inside, counted = _plane_windows(x.shape[2:], windows)
    if divisor is None:
        divisor = (counted if count_include_pad else inside).sum(-1, keepdims=True)
    return AvgPool.apply(x, places=places, weights=(inside / divisor).astype(x.dtype))


def _maximum(x, windows, op):
    """The max over each window -> (values, their flat places in each input plane)."""
    for dim, (_, inside, _) in enumerate(windows):
        if not inside.any(axis=1).all():
            raise ArgumentError(
                f"{op}: a window along spatial dim {dim} reads only padding "
                f"(input of shape {x.shape}); torch gives -inf there"
            )
    places, _, _ = _plane_windows(x.shape[2:], windows)
    return MaxPool.apply(x, places=places)


def _max_result(values, indices, unbatched, return_indices):
    if unbatched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def _max_pool(op, dims, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = batched_input(input, dims, op, integers=dims == 2)  # torch: 2-D takes ints
    windows = _pool_settings(op, x, kernel_size, stride, padding, dilation, ceil_mode)
    if x.dtype.kind in "iu":  # the float path finds the places; the values are x's own
        if x.numel() and np.abs(x._data).max() > 2**53:
            raise DTypeError(
                f"{op}: integer inputs are pooled through float64, exact up to 2**53; "
                f"got values up to {np.abs(x._data).max()}"
            )
        _, indices = _maximum(x.to(np.float64), windows, op)
        planes = x._data.reshape(x.shape[:2] + (-1,))
        picked = np.take_along_axis(planes, indices._data.reshape(x.shape[:2] + (-1,)), axis=2)
        values = Tensor._wrap(picked.reshape(indices.shape))
    else:
        values, indices = _maximum(x, windows, op)
    return _max_result(values, indices, unbatched, return_indices)


def _avg_pool(
    op, dims, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override
):
    x, unbatched = batched_input(input, dims, op)
    windows = _pool_settings(op, x, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and (
        isinstance(divisor_override, bool)
        or divisor_override == 0
        or not isinstance(divisor_override, (int, np.integer))
    ):
        raise ArgumentError(
            f"{op}: divisor_override must be a non-zero int or None; got {divisor_override!r}"
        )
    y = _average(x, windows, count_include_pad, divisor_override)
    return y.squeeze(0) if unbatched else y


@op(method=False)
def max_pool1d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """torch.nn.functional.max_pool1d: the largest value of each window of (N, C, L) or (C, L);
    padding (at most kernel_size // 2) counts as -inf. return_indices: also the place of each in
    L."""
    return _max_pool(
        "max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


@op(method=False)
def max_pool2d(
    input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):
    """torch.nn.functional.max_pool2d over (N, C, H, W) or (C, H, W); indices are places in H *
    W."""
    return _max_pool(
        "max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices
    )


@op(method=False)
def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """torch.nn.functional.avg_pool1d: the mean of each window; count_include_pad counts the zero
    padding in the divisor (never the part of a ceil_mode window past the padding)."""
    return _avg_pool(
        "avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None
    )


@op(method=False, public=False)
def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """torch.nn.functional.avg_pool2d; divisor_override divides every window's sum by that
    number."""
    return _avg_pool(
        "avg_pool2d",
        2,
        input,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )


def _adaptive_avg_pool(op, dims, input, output_size):
    x, unbatched = batched_input(input, dims, op)
    y = _average(x, _adaptive_windows(op, x, output_size))
    return y.squeeze(0) if unbatched else y


def _adaptive_max_pool(op, dims, input, output_size, return_indices):
    x, unbatched = batched_input(input, dims, op)
    values, indices = _maximum(x, _adaptive_windows(op, x, output_size), op)
    return _max_result(values, indices, unbatched, return_indices)


@op(method=False, public=False)
def adaptive_avg_pool1d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool1d: (N, C, L) -> (N, C, output_size), the mean of each
    bin."""
    return _adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


@op(method=False, public=False)
def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d: output_size an int or a pair (None keeps that
    size)."""
    return _adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


@op(method=False, public=False)
def adaptive_max_pool1d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool1d: the largest value of each bin."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, return_indices)


@op(method=False, public=False)
def adaptive_max_pool2d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d: output_size an int or a pair (None keeps that
    size)."""
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, return_indices)
