"""Transposed convolution (torch's conv_transpose1d / conv_transpose2d) and unfold / fold: the
column helpers of ops/conv.py run the other way round.

    unfold            the im2col of conv2d on its own: (N, C, H, W) -> (N, C * kH * kW, L), one
                      column per output place; its gradient adds the columns back (col2im)
    fold              col2im on its own, the adjoint of unfold: (N, C * kH * kW, L) -> (N, C, H, W),
                      overlapping entries summed; its gradient is unfold
    conv_transpose    the input-gradient of a convolution, taken as an op of its own: columns =
                      W^T @ x, added back over an output of (in - 1) * stride + dilation * (k - 1)
                      + 1 + output_padding places, the padding then cut off each end. Its
                      backward is a convolution of dy (dx = W @ columns(dy)), and dW = x @
                      columns(dy)^T.

The weight of a transposed convolution is (C_in, C_out / groups, *kernel), as torch's.
"""

import math

from .. import kernels
from ..errors import ArgumentError, ShapeError
from ..engine import Function, Tensor
from .args import check_float
from .conv import _add_columns_back, _channels_first, _columns, _grouped_rows
from .conv import _per_group, batched_input, check_dtypes_and_bias
from .conv import check_weight_and_groups, crop_places, pad_places, per_dim, reach
from .registry import op


# -- transposed convolution -------------------------------------------------------------------


class TransposedConvolution(Function):
    """x (N, C, *in), weight (C, O/G, *kernel), bias (O,) -> y (N, O, *out) with
    out = (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1: every
    input place p adds x[n, c, p] * weight[c, o, k] to output place p * stride + k * dilation -
    padding."""

    @staticmethod
    def forward(ctx, x, weight, *bias, padding, stride, dilation, output_padding, groups):
        kernel, places = weight.shape[2:], x.shape[2:]
        batch, out_channels = x.shape[0], weight.shape[1] * groups
        columns = kernels.matmul(
            _per_group(weight, groups).swapaxes(1, 2), _grouped_rows(x, groups)
        )
        full = tuple(
            r + s * (size - 1) + extra
            for r, s, size, extra in zip(reach(kernel, dilation), stride, places, output_padding)
        )
        y = crop_places(
            _add_columns_back(
                columns, (batch, out_channels) + full, kernel, stride, dilation, places
            ),
            padding,
        )
        if bias:
            y += bias[0].reshape((-1,) + (1,) * len(places))
        ctx.save_for_backward(x, weight)
        ctx.padding, ctx.stride, ctx.dilation, ctx.groups = padding, stride, dilation, groups
        return y

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved
        groups, kernel = ctx.groups, weight.shape[2:]
        # the places of dy that forward wrote (the output_padding ones beyond them get
        # nothing from x)
        written = tuple(
            slice(0, r + s * (size - 1))
            for r, s, size in zip(reach(kernel, ctx.dilation), ctx.stride, x.shape[2:])
        )
        padded = pad_places(grad, ctx.padding)[(slice(None), slice(None)) + written]
        # (G, O/G * K, N * P)
        columns, _ = _columns(padded, kernel, ctx.stride, ctx.dilation, groups)
        grad_x = grad_weight = None
        if ctx.needs_input_grad[0]:
            grad_x = _channels_first(
                kernels.matmul(_per_group(weight, groups), columns), x.shape[0], x.shape[2:]
            )
        if ctx.needs_input_grad[1]:
            grad_weight = kernels.matmul(_grouped_rows(x, groups), columns.swapaxes(1, 2)).reshape(
                weight.shape
            )
        if len(ctx.needs_input_grad) == 2:
            return grad_x, grad_weight
        return grad_x, grad_weight, grad.sum(axis=(0,) + tuple(range(2, grad.ndim)))


def _conv_transpose(
    op, dims, input, weight, bias, stride, padding, output_padding, groups, dilation
):
    x, unbatched = batched_input(input, dims, op)
    check_weight_and_groups(op, dims, weight, groups, "in_channels, out_channels / groups")
    if isinstance(padding, str):
        raise ArgumentError(
            f"{op}: padding must be an int or a tuple of {dims} ints "
            f"(a transposed convolution takes no 'same' or 'valid'); got {padding!r}"
        )
    kernel = weight.shape[2:]
    stride = per_dim(stride, dims, "stride", op)
    dilation = per_dim(dilation, dims, "dilation", op)
    padding = tuple((p, p) for p in per_dim(padding, dims, "padding", op, minimum=0))
    output_padding = per_dim(output_padding, dims, "output_padding", op, minimum=0)
    if any(extra >= max(s, d) for extra, s, d in zip(output_padding, stride, dilation)):
        raise ArgumentError(
            f"{op}: output_padding must be smaller than either stride or dilation; "
            f"got output_padding={output_padding}, stride={stride}, dilation={dilation}"
        )
    if x.shape[1] != weight.shape[0] or weight.shape[0] % groups:
        raise ShapeError(
            f"{op}: expected input with {weight.shape[0]} channels, divisible by groups={groups} "
            f"(weight of shape {weight.shape}); got input of shape {input.shape}"
        )
    check_dtypes_and_bias(op, x, weight, bias, weight.shape[1] * groups)
    out = tuple(
        (size - 1) * s - 2 * p + r + extra
        for size, s, (p, _), r, extra in zip(
            x.shape[2:], stride, padding, reach(kernel, dilation), output_padding
        )
    )
    if any(size < 1 for size in out):
        raise ShapeError(
            f"{op}: the output would be {out} for input of shape {input.shape}, kernel {kernel}, "
            f"stride {stride}, padding {tuple(p for p, _ in padding)}; every size must be >= 1"
        )
    y = TransposedConvolution.apply(
        x,
        weight,
        *(() if bias is None else (bias,)),
        padding=padding,
        stride=stride,
        dilation=dilation,
        output_padding=output_padding,
        groups=int(groups),
    )
    return y.squeeze(0) if unbatched else y


@op(method=False, public=False)
def conv_transpose1d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """torch.nn.functional.conv_transpose1d: input (N, C, L) or (C, L), weight (C, O / groups, k),
    bias (O,) or None -> (N, O, (L - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding
    + 1)."""
    return _conv_transpose(
        "conv_transpose1d",
        1,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


@op(method=False, public=False)
def conv_transpose2d(
    input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1
):
    """torch.nn.functional.conv_transpose2d: input (N, C, H, W) or (C, H, W), weight (C, O / groups,
    kH, kW), bias (O,) or None -> (N, O, H_out, W_out); stride, padding, output_padding and dilation
    ints or pairs."""
    return _conv_transpose(
        "conv_transpose2d",
        2,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


# -- unfold and fold --------------------------------------------------------------------------


class Unfold(Function):
    """x (N, C, H, W) -> (N, C * K, L): column l holds the K = kH * kW inputs (each channel's in
    turn) that the kernel reads at output place l."""

    @staticmethod
    def forward(ctx, x, kernel, dilation, padding, stride):
        padded = pad_places(x, padding)
        columns, out = _columns(padded, kernel, stride, dilation, 1)  # (1, C * K, N * L)
        ctx.padded_shape, ctx.out, ctx.settings = (
            padded.shape,
            out,
            (kernel, dilation, padding, stride),
        )
        return columns.reshape(-1, x.shape[0], math.prod(out)).transpose(1, 0, 2).copy()

    @staticmethod
    def backward(ctx, grad):
        kernel, dilation, padding, stride = ctx.settings
        return crop_places(
            _add_columns_back(
                grad.transpose(1, 0, 2).reshape(1, grad.shape[1], -1),
                ctx.padded_shape,
                kernel,
                stride,
                dilation,
                ctx.out,
            ),
            padding,
        )


class Fold(Function):
    """columns (N, C * K, L) -> (N, C, *output_size), each entry added to the place unfold read it
    from."""

    @staticmethod
    def forward(ctx, columns, output_size, kernel, dilation, padding, stride, out):
        batch, rows, _ = columns.shape
        padded_shape = (batch, rows // math.prod(kernel)) + tuple(
            size + before + after for size, (before, after) in zip(output_size, padding)
        )
        ctx.settings = (kernel, dilation, padding, stride)
        grouped = columns.transpose(1, 0, 2).reshape(1, rows, -1)
        return crop_places(
            _add_columns_back(grouped, padded_shape, kernel, stride, dilation, out), padding
        )

    @staticmethod
    def backward(ctx, grad):
        kernel, dilation, padding, stride = ctx.settings
        columns, out = _columns(pad_places(grad, padding), kernel, stride, dilation, 1)
        return columns.reshape(-1, grad.shape[0], math.prod(out)).transpose(1, 0, 2).copy()


def _window_settings(op, kernel_size, dilation, padding, stride):
    kernel = per_dim(kernel_size, 2, "kernel_size", op)
    dilation = per_dim(dilation, 2, "dilation", op)
    padding = tuple((p, p) for p in per_dim(padding, 2, "padding", op, minimum=0))
    return kernel, dilation, padding, per_dim(stride, 2, "stride", op)


def _places(op, size, kernel, dilation, padding, stride):
    """The output places of the windows over a (H, W) plane; at least one per dim."""
    out = tuple(
        (s + 2 * p - r) // st + 1
        for s, (p, _), r, st in zip(size, padding, reach(kernel, dilation), stride)
    )
    if any(o < 1 for o in out):
        raise ShapeError(
            f"{op}: the kernel {kernel} (dilation {dilation}) does not fit the "
            f"padded plane {tuple(s + 2 * p for s, (p, _) in zip(size, padding))} "
            f"(size {tuple(size)}, padding {tuple(p for p, _ in padding)})"
        )
    return out


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.unfold: input (N, C, H, W) or (C, H, W) -> (N, C * kH * kW, L) or (C * kH
    * kW, L), L the number of places the kernel visits."""
    x, unbatched = batched_input(input, 2, "unfold")
    kernel, dilation, padding, stride = _window_settings(
        "unfold", kernel_size, dilation, padding, stride
    )
    _places("unfold", x.shape[2:], kernel, dilation, padding, stride)
    y = Unfold.apply(x, kernel=kernel, dilation=dilation, padding=padding, stride=stride)
    return y.squeeze(0) if unbatched else y


@op(method=False, public=False)
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """torch.nn.functional.fold: columns (N, C * kH * kW, L) or (C * kH * kW, L) -> (N, C,
    *output_size) or (C, *output_size), overlapping entries summed; L must be the number of kernel
    places."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fold: expected input to be a Tensor; got {type(input).__name__}")
    if input.ndim not in (2, 3):
        raise ShapeError(
            "fold: expected a 2-D (C * kH * kW, L) or 3-D (N, C * kH * kW, L) input; "
            f"got input of shape {input.shape}"
        )
    check_float("fold", input)
    columns = input if input.ndim == 3 else input.unsqueeze(0)
    output_size = per_dim(output_size, 2, "output_size", "fold")
    kernel, dilation, padding, stride = _window_settings(
        "fold", kernel_size, dilation, padding, stride
    )
    out = _places("fold", output_size, kernel, dilation, padding, stride)
    if columns.shape[1] % math.prod(kernel) or columns.shape[2] != math.prod(out):
        raise ShapeError(
            f"fold: expected input of shape (N, C * {math.prod(kernel)}, {math.prod(out)}) "
            f"(kernel_size={kernel}, {out} places in output_size={output_size}); "
            f"got input of shape {input.shape}"
        )
    y = Fold.apply(
        columns,
        output_size=output_size,
        kernel=kernel,
        dilation=dilation,
        padding=padding,
        stride=stride,
        out=out,
    )
    return y.squeeze(0) if input.ndim == 2 else y


__all__ = ["conv_transpose1d", "conv_transpose2d", "unfold", "fold"]
