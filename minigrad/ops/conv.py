"""Convolution and pooling over 1-D and 2-D inputs, as torch.nn.functional's conv1d/conv2d,
max_pool, avg_pool and the adaptive poolings. Inputs are (N, C, *spatial) or unbatched
(C, *spatial); spatial is (L,) or (H, W).

Convolution is an im2col and one matrix product each way, in plain numpy (no Numba kernel:
the product is the work, and kernels.matmul gives it to OpenBLAS; benchmarks/conv.py times
it next to torch):

    columns   the padded input read through np.lib.stride_tricks.sliding_window_view, copied
              into one (C/groups * kernel, N * out places) matrix per group
    forward   y = W @ columns  (+ bias), W as (out channels, C/groups * kernel) per group
    backward  dW = dy @ columns^T; dx = W^T @ dy, added back over the input place each column
              entry was read from, one kernel offset at a time (a short loop over kernel
              positions, each a vectorised strided add, never a loop over output places)

The columns are made again in backward instead of being kept, so a layer holds only its
padded input between forward and backward (the columns are kernel-size times bigger).

Pooling reads windows given per spatial dim as the input places each window's slots cover
(a slot in the padding, or past the end with ceil_mode, reads nothing). Average pooling is
a weighted sum over those places (weight 1/divisor inside the input, 0 in the padding); max
pooling finds each window's largest place and picks it, a weighted sum with one place of
weight 1. One Function, WindowSum, does both; its backward adds each output's gradient, by
weight, to the places it read.
"""

import functools
import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import kernels
from ..errors import ArgumentError, DTypeError, ShapeError
from ..tensor import Function, Tensor
from .indexing import add_at

_LAYOUT = {1: "L", 2: "H, W"}


# -- arguments --------------------------------------------------------------------------------

def per_dim(value, dims, name, op, minimum=1):
    """An int (the same for every spatial dim) or a tuple of `dims` ints, each >= minimum ->
    a tuple of `dims` ints (stride=2 and stride=(2, 2) are the same, as in torch)."""
    values = (value,) * dims if isinstance(value, (int, np.integer)) else value
    if (not isinstance(values, (tuple, list)) or len(values) != dims
            or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values)):
        raise ArgumentError(f"{op}: {name} must be an int or a tuple of {dims} ints; got {value!r}")
    if any(v < minimum for v in values):
        raise ArgumentError(f"{op}: {name} must be >= {minimum}; got {value!r}")
    return tuple(int(v) for v in values)


def padding_amounts(padding, kernel, stride, dilation, op):
    """(before, after) per spatial dim for padding 'valid', 'same', an int or a tuple. 'same'
    pads dilation * (kernel - 1) in all, the odd one after (as torch), and needs stride 1."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * len(kernel)
        if padding != "same":
            raise ArgumentError(f"{op}: padding must be 'valid', 'same', an int or a tuple of {len(kernel)} ints; "
                                f"got {padding!r}")
        if any(s != 1 for s in stride):
            raise ArgumentError(f"{op}: padding='same' needs stride 1 (torch does not support it for strided "
                                f"convolutions); got stride={stride}")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((total // 2, total - total // 2) for total in totals)
    return tuple((p, p) for p in per_dim(padding, len(kernel), "padding", op, minimum=0))


def _batched(input, dims, op):
    """A float input (C, *spatial) or (N, C, *spatial) -> (N, C, *spatial), and whether the batch
    dim was added (the caller takes it off the result)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: expected input to be a Tensor; got {type(input).__name__}")
    if input.ndim not in (dims + 1, dims + 2):
        raise ShapeError(f"{op}: expected a {dims + 1}-D input (C, {_LAYOUT[dims]}) or a {dims + 2}-D input "
                         f"(N, C, {_LAYOUT[dims]}); got input of shape {input.shape}")
    if input.dtype.kind != "f":
        raise DTypeError(f"{op}: expected a float32 or float64 input; got dtype {input.dtype}")
    return (input, False) if input.ndim == dims + 2 else (input.unsqueeze(0), True)


# -- convolution ------------------------------------------------------------------------------

class Convolution(Function):
    """y[n, o, p] = bias[o] + sum over c, k of xpad[n, g * C/G + c, p * stride + k * dilation] * weight[o, c, k]
    for x (N, C, *spatial), weight (O, C/G, *kernel), bias (O,), o in group g of G = groups;
    padding holds (before, after) zeros per spatial dim. y is (N, O, *out)."""

    @staticmethod
    def forward(ctx, x, weight, *bias, padding, stride, dilation, groups):
        if any(before or after for before, after in padding):
            x = np.pad(x, ((0, 0), (0, 0)) + padding)
        columns, out = _columns(x, weight.shape[2:], stride, dilation, groups)
        y = kernels.matmul(_per_group(weight, groups), columns)  # (G, O/G, N * P)
        y = _channels_first(y, x.shape[0], out)
        if bias:
            y += bias[0].reshape((-1,) + (1,) * len(out))
        ctx.save_for_backward(x, weight)
        ctx.padding, ctx.stride, ctx.dilation, ctx.groups, ctx.out = padding, stride, dilation, groups, out
        return y

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved
        groups, kernel = ctx.groups, weight.shape[2:]
        batch, channels = grad.shape[:2]
        # dy in the layout of the forward product: (G, O/G, N * P)
        places = math.prod(ctx.out)
        grad_y = grad.reshape(batch, groups, channels // groups, places).transpose(1, 2, 0, 3)
        grad_y = grad_y.reshape(groups, channels // groups, batch * places)
        grad_x = grad_weight = None
        if ctx.needs_input_grad[0]:
            grad_columns = kernels.matmul(_per_group(weight, groups).swapaxes(1, 2), grad_y)  # (G, C/G * K, N * P)
            grad_x = _add_columns_back(grad_columns, x.shape, kernel, ctx.stride, ctx.dilation, ctx.out)
            grad_x = grad_x[(slice(None), slice(None)) + tuple(slice(before, size - after) for (before, after), size
                                                               in zip(ctx.padding, x.shape[2:]))]
        if ctx.needs_input_grad[1]:
            columns, _ = _columns(x, kernel, ctx.stride, ctx.dilation, groups)
            grad_weight = kernels.matmul(grad_y, columns.swapaxes(1, 2)).reshape(weight.shape)
        if len(ctx.needs_input_grad) == 2:
            return grad_x, grad_weight
        return grad_x, grad_weight, grad.sum(axis=(0,) + tuple(range(2, grad.ndim)))


def _per_group(weight, groups):
    """weight (O, C/G, *kernel) -> (G, O/G, C/G * K), a view."""
    return weight.reshape(groups, weight.shape[0] // groups, math.prod(weight.shape[1:]))


def _columns(x, kernel, stride, dilation, groups):
    """The im2col of the padded input x (N, C, *spatial): (G, C/G * K, N * P) for the K kernel
    offsets and the P output places (out, a tuple); column (n, p) of group g holds the inputs
    that output place p of its channels reads."""
    dims = len(kernel)
    reach = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    windows = sliding_window_view(x, reach, axis=tuple(range(2, 2 + dims)))  # (N, C, *places, *reach)
    windows = windows[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)
                      + tuple(slice(None, None, d) for d in dilation)]
    batch, channels = x.shape[:2]
    out = windows.shape[2:2 + dims]
    windows = windows.reshape((batch, groups, channels // groups) + out + kernel)
    # -> (G, C/G, *kernel, N, *out): each offset's inputs stay in rows along the last spatial dim
    windows = windows.transpose((1, 2) + tuple(range(3 + dims, 3 + 2 * dims)) + (0,) + tuple(range(3, 3 + dims)))
    return windows.reshape(groups, channels // groups * math.prod(kernel), batch * math.prod(out)), out


def _channels_first(y, batch, out):
    """The product (G, O/G, N * P) -> y (N, O, *out)."""
    groups, width, _ = y.shape
    return y.reshape(groups, width, batch, math.prod(out)).transpose(2, 0, 1, 3).reshape((batch, groups * width) + out)


def _add_columns_back(grad_columns, shape, kernel, stride, dilation, out):
    """The transpose of _columns: an array of `shape` (the padded input's) in which each entry of
    grad_columns is added to the input place its column entry was read from."""
    batch, channels = shape[:2]
    groups = grad_columns.shape[0]
    windows = grad_columns.reshape((groups, channels // groups) + kernel + (batch,) + out)
    grad = np.zeros(shape, grad_columns.dtype)
    grouped = np.moveaxis(grad.reshape((batch, groups, channels // groups) + shape[2:]), 0, 2)  # views of grad
    for offset in np.ndindex(*kernel):
        # the places this kernel offset read: one per output place, so no two of them coincide
        read = tuple(slice(k * d, k * d + s * (o - 1) + 1, s) for k, d, s, o in zip(offset, dilation, stride, out))
        grouped[(slice(None),) * 3 + read] += windows[(slice(None), slice(None)) + offset]
    return grad


def _convolution(op, dims, input, weight, bias, stride, padding, dilation, groups):
    x, unbatched = _batched(input, dims, op)
    if not isinstance(weight, Tensor) or weight.ndim != dims + 2:
        raise ShapeError(f"{op}: expected a {dims + 2}-D weight (out_channels, in_channels / groups, "
                         f"{_LAYOUT[dims]}); got {getattr(weight, 'shape', type(weight).__name__)}")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ArgumentError(f"{op}: groups must be an int >= 1; got {groups!r}")
    kernel = weight.shape[2:]
    stride = per_dim(stride, dims, "stride", op)
    dilation = per_dim(dilation, dims, "dilation", op)
    padding = padding_amounts(padding, kernel, stride, dilation, op)
    if weight.shape[0] % groups:
        raise ShapeError(f"{op}: the out_channels of weight ({weight.shape[0]}) must be divisible by "
                         f"groups={groups}; got weight of shape {weight.shape}")
    if x.shape[1] != weight.shape[1] * groups:
        raise ShapeError(f"{op}: expected input with {weight.shape[1] * groups} channels (weight of shape "
                         f"{weight.shape}, groups={groups}); got input of shape {input.shape}")
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and value.dtype != x.dtype:
            raise DTypeError(f"{op}: {name} dtype {value.dtype} does not match input dtype {x.dtype}")
    if bias is not None and bias.shape != weight.shape[:1]:
        raise ShapeError(f"{op}: expected bias of shape ({weight.shape[0]},) (one per out channel); "
                         f"got {bias.shape}")
    padded = tuple(size + before + after for size, (before, after) in zip(x.shape[2:], padding))
    reach = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    if any(r > size for r, size in zip(reach, padded)):
        raise ShapeError(f"{op}: the kernel {kernel} (with dilation {dilation}: {reach}) is larger than the "
                         f"padded input {padded} (input of shape {input.shape}, padding {padding})")
    y = Convolution.apply(x, weight, *(() if bias is None else (bias,)), padding=padding, stride=stride,
                          dilation=dilation, groups=int(groups))
    return y.squeeze(0) if unbatched else y


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv1d: input (N, C, L) or (C, L), weight (O, C / groups, k), bias (O,) or
    None -> (N, O, L_out); padding is an int, a tuple, 'valid' (none) or 'same' (L_out = L)."""
    return _convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d: input (N, C, H, W) or (C, H, W), weight (O, C / groups, kH, kW),
    bias (O,) or None -> (N, O, H_out, W_out); stride, padding and dilation are ints or pairs."""
    return _convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


# -- pooling ----------------------------------------------------------------------------------

class WindowSum(Function):
    """out[n, c, o] = sum over slots k of x[n, c, places[., ., o, k]] * weights[o, k], x's spatial dims
    flattened into one plane per (n, c); the place P (the plane's size) reads 0. places is
    (1, 1, *out, K) (every plane alike) or (N, C, *out, K).
    dx[n, c, p] = sum of dout[n, c, o] * weights[o, k] over the (o, k) whose place is p."""

    @staticmethod
    def forward(ctx, x, places, weights):
        batch, channels = x.shape[:2]
        planes = np.concatenate([_planes(x), np.zeros((batch, channels, 1), x.dtype)], axis=2)
        values = np.take_along_axis(planes, places.reshape(places.shape[:2] + (math.prod(places.shape[2:]),)), axis=2)
        ctx.shape, ctx.places, ctx.weights = x.shape, places, weights
        return (values.reshape((batch, channels) + places.shape[2:]) * weights).sum(-1)

    @staticmethod
    def backward(ctx, grad):
        batch, channels = ctx.shape[:2]
        plane = math.prod(ctx.shape[2:]) + 1
        starts = (np.arange(batch * channels) * plane).reshape((batch, channels) + (1,) * (ctx.places.ndim - 2))
        grad_planes = add_at((batch, channels, plane), ctx.places + starts, grad[..., None] * ctx.weights)
        return grad_planes[:, :, :-1].reshape(ctx.shape)


def _planes(x):
    """x (N, C, *spatial) -> (N, C, prod(spatial)), one flat plane per (n, c)."""
    return x.reshape(x.shape[:2] + (math.prod(x.shape[2:]),))


class AvgPool(WindowSum):
    """The mean of each window (a WindowSum; the name is for drawings)."""


class MaxPool(WindowSum):
    """The largest value of each window: a WindowSum of the one place that holds it."""


def _pool_windows(size, kernel, stride, padding, dilation, out):
    """Along one dim of `size`: the input place each slot of each of `out` windows reads (out, kernel),
    whether it lies in the input, and whether in the padded input (count_include_pad's count)."""
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

    def spread(array, dim):  # (out_d, kernel_d) onto axes dim and dims + dim of a (*out, *kernel) grid
        shape = [1] * 2 * dims
        shape[dim], shape[dims + dim] = array.shape
        return array.reshape(shape)

    places, inside, counted = ([spread(w[part], dim) for dim, w in enumerate(windows)] for part in range(3))
    inside = functools.reduce(np.logical_and, inside)
    counted = functools.reduce(np.logical_and, counted)
    places = np.where(inside, np.ravel_multi_index(places, spatial, mode="clip"), math.prod(spatial))
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
        raise ArgumentError(f"{op}: padding must be at most half the kernel size (<= {tuple(k // 2 for k in kernel)} "
                            f"for kernel_size={kernel}); got padding={padding}")
    spatial = x.shape[2:]
    out = []
    for size, k, s, p, d in zip(spatial, kernel, stride, padding, dilation):
        span = size + 2 * p - d * (k - 1) - 1
        count = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (count - 1) * s >= size + p:  # the last window must start in the input or its padding
            count -= 1
        out.append(count)
    if min(out) < 1:
        raise ShapeError(f"{op}: input of shape {x.shape} is too small for kernel_size={kernel} with "
                         f"stride={stride}, padding={padding}, dilation={dilation}: the output would be "
                         f"{tuple(out)}")
    return [_pool_windows(*setting) for setting in zip(spatial, kernel, stride, padding, dilation, out)]


def _adaptive_windows(op, x, output_size):
    """Checked output_size (an int, or a tuple whose None entries keep that input size) -> the bins
    along each spatial dim of x (N, C, *spatial)."""
    dims = x.ndim - 2
    if isinstance(output_size, (tuple, list)) and len(output_size) == dims:
        output_size = tuple(size if wanted is None else wanted for size, wanted in zip(x.shape[2:], output_size))
    sizes = per_dim(output_size, dims, "output_size", op, minimum=0)
    if min(x.shape[1:]) < 1:
        raise ShapeError(f"{op}: expected an input with non-zero channels and spatial sizes; got input of "
                         f"shape {x.shape}")
    return [_bins(size, out) for size, out in zip(x.shape[2:], sizes)]


def _average(x, windows, count_include_pad=False, divisor=None):
    places, inside, counted = _plane_windows(x.shape[2:], windows)
    if divisor is None:
        divisor = (counted if count_include_pad else inside).sum(-1, keepdims=True)
    return AvgPool.apply(x, places=places[None, None], weights=(inside / divisor).astype(x.dtype))


def _maximum(x, windows, op):
    """The max over each window -> (values, their flat places in each input plane)."""
    for dim, (_, inside, _) in enumerate(windows):
        if not inside.any(axis=1).all():
            raise ArgumentError(f"{op}: a window along spatial dim {dim} reads only padding (input of shape "
                                f"{x.shape}); torch gives -inf there")
    places, inside, _ = _plane_windows(x.shape[2:], windows)
    batch, channels = x.shape[:2]
    planes = np.concatenate([_planes(x._data), np.full((batch, channels, 1), -np.inf, x.dtype)], axis=2)
    windows = planes[:, :, places]
    which = windows.argmax(-1)  # the first largest, as torch
    nan = np.isnan(windows)
    if nan.any():  # NaN is the largest, and torch keeps a window's last NaN
        which = np.where(nan.any(-1), windows.shape[-1] - 1 - nan[..., ::-1].argmax(-1), which)
    chosen = np.take_along_axis(places[None, None], which[..., None], axis=-1)
    # a window whose inputs are all -inf: torch reports its first input place
    first = np.take_along_axis(places, inside.argmax(-1)[..., None], axis=-1)
    chosen = np.where(chosen == planes.shape[2] - 1, first, chosen)
    values = MaxPool.apply(x, places=chosen, weights=np.ones(1, x.dtype))
    return values, Tensor._wrap(chosen[..., 0])


def _max_result(values, indices, unbatched, return_indices):
    if unbatched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def _max_pool(op, dims, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = _batched(input, dims, op)
    values, indices = _maximum(x, _pool_settings(op, x, kernel_size, stride, padding, dilation, ceil_mode), op)
    return _max_result(values, indices, unbatched, return_indices)


def _avg_pool(op, dims, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, unbatched = _batched(input, dims, op)
    windows = _pool_settings(op, x, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and (isinstance(divisor_override, bool) or divisor_override == 0
                                         or not isinstance(divisor_override, (int, np.integer))):
        raise ArgumentError(f"{op}: divisor_override must be a non-zero int or None; got {divisor_override!r}")
    y = _average(x, windows, count_include_pad, divisor_override)
    return y.squeeze(0) if unbatched else y


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool1d: the largest value of each window of (N, C, L) or (C, L); padding
    (at most kernel_size // 2) counts as -inf. return_indices: also the place of each in L."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool2d over (N, C, H, W) or (C, H, W); indices are places in H * W."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """torch.nn.functional.avg_pool1d: the mean of each window; count_include_pad counts the zero padding
    in the divisor (never the part of a ceil_mode window past the padding)."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool2d; divisor_override divides every window's sum by that number."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_avg_pool(op, dims, input, output_size):
    x, unbatched = _batched(input, dims, op)
    y = _average(x, _adaptive_windows(op, x, output_size))
    return y.squeeze(0) if unbatched else y


def _adaptive_max_pool(op, dims, input, output_size, return_indices):
    x, unbatched = _batched(input, dims, op)
    values, indices = _maximum(x, _adaptive_windows(op, x, output_size), op)
    return _max_result(values, indices, unbatched, return_indices)


def adaptive_avg_pool1d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool1d: (N, C, L) -> (N, C, output_size), the mean of each bin."""
    return _adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d: output_size an int or a pair (None keeps that size)."""
    return _adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool1d: the largest value of each bin."""
    return _adaptive_max_pool("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """torch.nn.functional.adaptive_max_pool2d: output_size an int or a pair (None keeps that size)."""
    return _adaptive_max_pool("adaptive_max_pool2d", 2, input, output_size, return_indices)
