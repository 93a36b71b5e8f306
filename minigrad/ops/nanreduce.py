"""Reductions that skip NaN, with torch's names: nansum and nanmean."""

import numpy as np

from ..dtypes import as_dtype
from ..engine import Function
from .args import check_float
from .conversion import cast
from .reductions import expand_back, reduction_dims, sum
from .registry import op


class NanSum(Function):
    """The sum of the elements that are not NaN, or (mean=True) that sum over their count.
    The gradient is grad (/ count) * (x is not NaN): a product, as torch's, so nanmean over
    only NaNs (0 counted: an inf factor) gives NaN gradients there, not 0."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, mean):
        ctx.shape, ctx.dims, ctx.keepdim = x.shape, dims, keepdim
        ctx.counted = ~np.isnan(x)
        total = np.nansum(x, axis=dims, keepdims=True, dtype=x.dtype)
        ctx.count = ctx.counted.sum(axis=dims, keepdims=True).astype(x.dtype) if mean else None
        with np.errstate(invalid="ignore", divide="ignore"):
            total = total if ctx.count is None else total / ctx.count
        return total if keepdim else np.squeeze(total, axis=dims)

    @staticmethod
    def backward(ctx, grad):
        grad = expand_back(grad, ctx.shape, ctx.dims, ctx.keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (grad if ctx.count is None else grad / ctx.count) * ctx.counted


@op
def nansum(x, dim=None, keepdim=False, dtype=None):
    """Sum over `dim` (an int, a tuple, or None for all) treating NaN as 0; integers (which hold
    no NaN) give sum's int64, as torch."""
    if dtype is not None:
        x = cast(x, as_dtype(dtype))
    if x.dtype.kind != "f":
        return sum(x, dim, keepdim)
    return NanSum.apply(x, dims=reduction_dims(dim, x.ndim, "nansum"), keepdim=keepdim, mean=False)


@op
def nanmean(x, dim=None, keepdim=False, dtype=None):
    """The mean over `dim` of the elements that are not NaN (NaN where all are), of a float
    tensor (dtype= casts it), as torch."""
    check_float("nanmean", x)  # before dtype= applies, as torch
    if dtype is not None:
        x = cast(x, as_dtype(dtype))
    return NanSum.apply(x, dims=reduction_dims(dim, x.ndim, "nanmean"), keepdim=keepdim, mean=True)
