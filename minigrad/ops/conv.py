"""Convolution over 1-D and 2-D inputs, as torch.nn.functional's conv1d/conv2d, and the argument
checks that pooling (ops/pooling.py) shares. Inputs are (N, C, *spatial) or unbatched
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
"""

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .. import kernels
from ..errors import ArgumentError, DTypeError, ShapeError
from ..engine import Function, Tensor
from .args import check_float
from .registry import op

_LAYOUT = {1: "L", 2: "H, W"}


# -- arguments --------------------------------------------------------------------------------


def per_dim(value, dims, name, op, minimum=1):
    """An int (the same for every spatial dim) or a tuple of `dims` ints, each >= minimum ->
    a tuple of `dims` ints (stride=2 and stride=(2, 2) are the same, as in torch)."""
    values = (value,) * dims if isinstance(value, (int, np.integer)) else value
    if (
        not isinstance(values, (tuple, list))
        or len(values) != dims
        or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values)
    ):
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
            raise ArgumentError(
                f"{op}: padding must be 'valid', 'same', an int or a tuple of {len(kernel)} ints; "
                f"got {padding!r}"
            )
        if any(s != 1 for s in stride):
            raise ArgumentError(
                f"{op}: padding='same' needs stride 1 "
                f"(torch does not support it for strided convolutions); got stride={stride}"
            )
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((total // 2, total - total // 2) for total in totals)
    return tuple((p, p) for p in per_dim(padding, len(kernel), "padding", op, minimum=0))


def batched_input(input, dims, op, integers=False):
    """A float input (C, *spatial) or (N, C, *spatial) -> (N, C, *spatial), and whether the batch
    dim was added (the caller takes it off the result). integers: integer inputs pass too."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: expected input to be a Tensor; got {type(input).__name__}")
    if input.ndim not in (dims + 1, dims + 2):
        raise ShapeError(
            f"{op}: expected a {dims + 1}-D input (C, {_LAYOUT[dims]}) or a {dims + 2}-D input "
            f"(N, C, {_LAYOUT[dims]}); got input of shape {input.shape}"
        )
    if not (integers and input.dtype.kind in "iu"):
        check_float(op, input)
    return (input, False) if input.ndim == dims + 2 else (input.unsqueeze(0), True)


# -- convolution ------------------------------------------------------------------------------


class Convolution(Function):
    """y[n, o, p] = bias[o] + sum over c, k of xpad[n, g * C/G + c, p * stride + k * dilation] *
    weight[o, c, k] for x (N, C, *spatial), weight (O, C/G, *kernel), bias (O,), o in group g of G =
    groups; padding holds (before, after) zeros per spatial dim. y is (N, O, *out)."""

    @staticmethod
    def forward(ctx, x, weight, *bias, padding, stride, dilation, groups):
        x = pad_places(x, padding)
        columns, out = _columns(x, weight.shape[2:], stride, dilation, groups)
        y = kernels.matmul(_per_group(weight, groups), columns)  # (G, O/G, N * P)
        y = _channels_first(y, x.shape[0], out)
        if bias:
            y += bias[0].reshape((-1,) + (1,) * len(out))
        ctx.save_for_backward(x, weight)
        ctx.padding, ctx.stride, ctx.dilation, ctx.groups, ctx.out = (
            padding,
            stride,
            dilation,
            groups,
            out,
        )
        return y

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved
        groups, kernel = ctx.groups, weight.shape[2:]
        # dy in the layout of the forward product: (G, O/G, N * P)
        grad_y = _grouped_rows(grad, groups)
        grad_x = grad_weight = None
        if ctx.needs_input_grad[0]:
            # (G, C/G * K, N * P)
            grad_columns = kernels.matmul(_per_group(weight, groups).swapaxes(1, 2), grad_y)
            grad_x = crop_places(
                _add_columns_back(grad_columns, x.shape, kernel, ctx.stride, ctx.dilation, ctx.out),
                ctx.padding,
            )
        if ctx.needs_input_grad[1]:
            columns, _ = _columns(x, kernel, ctx.stride, ctx.dilation, groups)
            grad_weight = kernels.matmul(grad_y, columns.swapaxes(1, 2)).reshape(weight.shape)
        if len(ctx.needs_input_grad) == 2:
            return grad_x, grad_weight
        return grad_x, grad_weight, grad.sum(axis=(0,) + tuple(range(2, grad.ndim)))


def pad_places(x, padding):
    """x (N, C, *spatial) with (before, after) zeros added to each spatial dim."""
    if any(before or after for before, after in padding):
        return np.pad(x, ((0, 0), (0, 0)) + tuple(padding))
    return x


def crop_places(x, padding):
    """The inverse of pad_places: (before, after) places cut off each spatial dim of x."""
    return x[
        (slice(None), slice(None))
        + tuple(slice(before, size - after) for (before, after), size in zip(padding, x.shape[2:]))
    ]


def _grouped_rows(y, groups):
    """y (N, O, *places) -> (G, O/G, N * P), the layout of the product's result (undoes
    _channels_first)."""
    batch, channels, places = y.shape[0], y.shape[1], math.prod(y.shape[2:])
    rows = y.reshape(batch, groups, channels // groups, places).transpose(1, 2, 0, 3)
    return rows.reshape(groups, channels // groups, batch * places)


def _per_group(weight, groups):
    """weight (O, C/G, *kernel) -> (G, O/G, C/G * K), a view."""
    return weight.reshape(groups, weight.shape[0] // groups, math.prod(weight.shape[1:]))


def reach(kernel, dilation):
    """How many input places a kernel spans along each spatial dim: dilation * (kernel - 1) + 1."""
    return tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))


def _columns(x, kernel, stride, dilation, groups):
    """The im2col of the padded input x (N, C, *spatial): (G, C/G * K, N * P) for the K kernel
    offsets and the P output places (out, a tuple); column (n, p) of group g holds the inputs
    that output place p of its channels reads."""
    dims = len(kernel)
    # (N, C, *places, *reach)
    windows = sliding_window_view(x, reach(kernel, dilation), axis=tuple(range(2, 2 + dims)))
    windows = windows[
        (slice(None), slice(None))
        + tuple(slice(None, None, s) for s in stride)
        + tuple(slice(None, None, d) for d in dilation)
    ]
    batch, channels = x.shape[:2]
    out = windows.shape[2 : 2 + dims]
    windows = windows.reshape((batch, groups, channels // groups) + out + kernel)
    # -> (G, C/G, *kernel, N, *out): each offset's inputs stay in rows along the last spatial dim
    windows = windows.transpose(
        (1, 2) + tuple(range(3 + dims, 3 + 2 * dims)) + (0,) + tuple(range(3, 3 + dims))
    )
    return windows.reshape(
        groups, channels // groups * math.prod(kernel), batch * math.prod(out)
    ), out


def _channels_first(y, batch, out):
    """The product (G, O/G, N * P) -> y (N, O, *out)."""
    groups, width, _ = y.shape
    return (
        y.reshape(groups, width, batch, math.prod(out))
        .transpose(2, 0, 1, 3)
        .reshape((batch, groups * width) + out)
    )


def _add_columns_back(grad_columns, shape, kernel, stride, dilation, out):
    """The transpose of _columns: an array of `shape` (the padded input's) in which each entry of
    grad_columns is added to the input place its column entry was read from."""
    batch, channels = shape[:2]
    groups = grad_columns.shape[0]
    windows = grad_columns.reshape((groups, channels // groups) + kernel + (batch,) + out)
    grad = np.zeros(shape, grad_columns.dtype)
    # views of grad
    grouped = np.moveaxis(grad.reshape((batch, groups, channels // groups) + shape[2:]), 0, 2)
    for offset in np.ndindex(*kernel):
        # the places this kernel offset read: one per output place, so no two of them coincide
        read = tuple(
            slice(k * d, k * d + s * (o - 1) + 1, s)
            for k, d, s, o in zip(offset, dilation, stride, out)
        )
        grouped[(slice(None),) * 3 + read] += windows[(slice(None), slice(None)) + offset]
    return grad


def check_weight_and_groups(op, dims, weight, groups, channels):
    """A (dims + 2)-D weight Tensor (its first two axes described by `channels`) and groups an int
    >= 1."""
    if not isinstance(weight, Tensor) or weight.ndim != dims + 2:
        raise ShapeError(
            f"{op}: expected a {dims + 2}-D weight ({channels}, {_LAYOUT[dims]}); "
            f"got {getattr(weight, 'shape', type(weight).__name__)}"
        )
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ArgumentError(f"{op}: groups must be an int >= 1; got {groups!r}")


def check_dtypes_and_bias(op, x, weight, bias, out_channels):
    """weight and bias of x's dtype, and bias None or one value per out channel."""
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None and value.dtype != x.dtype:
            raise DTypeError(
                f"{op}: {name} dtype {value.dtype} does not match input dtype {x.dtype}"
            )
    if bias is not None and bias.shape != (out_channels,):
        raise ShapeError(
            f"{op}: expected bias of shape ({out_channels},) (one per out channel); "
            f"got {bias.shape}"
        )


def _convolution(op, dims, input, weight, bias, stride, padding, dilation, groups):
    x, unbatched = batched_input(input, dims, op)
    check_weight_and_groups(op, dims, weight, groups, "out_channels, in_channels / groups")
    kernel = weight.shape[2:]
    stride = per_dim(stride, dims, "stride", op)
    dilation = per_dim(dilation, dims, "dilation", op)
    padding = padding_amounts(padding, kernel, stride, dilation, op)
    if weight.shape[0] % groups:
        raise ShapeError(
            f"{op}: the out_channels of weight ({weight.shape[0]}) must be divisible by "
            f"groups={groups}; got weight of shape {weight.shape}"
        )
    if x.shape[1] != weight.shape[1] * groups:
        raise ShapeError(
            f"{op}: expected input with {weight.shape[1] * groups} channels "
            f"(weight of shape {weight.shape}, groups={groups}); got input of shape {input.shape}"
        )
    check_dtypes_and_bias(op, x, weight, bias, weight.shape[0])
    padded = tuple(size + before + after for size, (before, after) in zip(x.shape[2:], padding))
    spans = reach(kernel, dilation)
    if any(r > size for r, size in zip(spans, padded)):
        raise ShapeError(
            f"{op}: the kernel {kernel} (with dilation {dilation}: {spans}) is larger than the "
            f"padded input {padded} (input of shape {input.shape}, padding {padding})"
        )
    y = Convolution.apply(
        x,
        weight,
        *(() if bias is None else (bias,)),
        padding=padding,
        stride=stride,
        dilation=dilation,
        groups=int(groups),
    )
    return y.squeeze(0) if unbatched else y


@op(method=False)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv1d: input (N, C, L) or (C, L), weight (O, C / groups, k), bias (O,)
    or None -> (N, O, L_out); padding is an int, a tuple, 'valid' (none) or 'same' (L_out = L)."""
    return _convolution("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


@op(method=False)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d: input (N, C, H, W) or (C, H, W), weight (O, C / groups, kH, kW),
    bias (O,) or None -> (N, O, H_out, W_out); stride, padding and dilation are ints or pairs."""
    return _convolution("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)
