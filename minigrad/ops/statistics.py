"""Reductions with a formula of their own: var and std (with Bessel's correction), logsumexp
and norm. Each is one Function whose backward is torch's, including where the formula
divides by zero (std and norm of all-zero inputs have gradient 0, not nan)."""

import math

import numpy as np

from ..errors import ArgumentError, DTypeError
from ..tensor import Function
from .elementwise import as_float, cast
from .reduce import reduction_dims, expand_back, refuse_empty, mean


def _float_input(x, op):
    if x.dtype.kind != "f":
        raise DTypeError(f"{op}: the input must be a float tensor; got dtype {x.dtype}")


# -- var and std --------------------------------------------------------------------------

class Variance(Function):
    """var = sum((x - mean)^2) / max(0, N - correction) over dims (std = its square root);
    d var/dx = 2 (x - mean) / (N - correction); d std = d var / (2 std), 0 where std = 0."""

    @staticmethod
    def forward(ctx, x, dims, correction, keepdim, root):
        count = math.prod(x.shape[d] for d in dims)
        dof = x.dtype.type(np.maximum(count - correction, 0))
        with np.errstate(invalid="ignore", divide="ignore"):  # no elements, or N <= correction: nan/inf
            centered = x - x.sum(axis=dims, keepdims=True) / x.dtype.type(count)
            y = np.square(centered).sum(axis=dims, keepdims=keepdim) / dof
        if root:
            y = np.sqrt(y)
        ctx.save_for_backward(centered, y)
        ctx.dims, ctx.keepdim, ctx.dof, ctx.root = dims, keepdim, dof, root
        return y

    @staticmethod
    def backward(ctx, grad):
        centered, y = ctx.saved
        with np.errstate(invalid="ignore", divide="ignore"):
            if ctx.root:
                grad = np.where(y == 0, 0, grad / (2 * y))
            grad = expand_back(grad, centered.shape, ctx.dims, ctx.keepdim)
            return grad * (2 / ctx.dof) * centered


def _correction(op, dim, unbiased, correction):
    """torch's three spellings: var(x, dim, unbiased), var(x, dim, correction=c), var(x, unbiased)."""
    if isinstance(dim, bool):  # x.var(False): the old positional `unbiased`
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}: give either unbiased= or correction=, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _spread(x, dim, unbiased, keepdim, correction, root, op):
    _float_input(x, op)
    dim, correction = _correction(op, dim, unbiased, correction)
    return Variance.apply(x, dims=reduction_dims(dim, x.ndim, op), correction=correction, keepdim=keepdim, root=root)


def var(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over `dim` (all dims for None) with N - correction in the denominator (correction=1,
    Bessel's, unless unbiased=False or correction= says otherwise); nan over no elements."""
    return _spread(x, dim, unbiased, keepdim, correction, False, "var")


def std(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation: the square root of var (same arguments)."""
    return _spread(x, dim, unbiased, keepdim, correction, True, "std")


def var_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over the same dims, as torch.var_mean."""
    mean_dim = None if isinstance(dim, bool) else dim
    return var(x, dim, unbiased, keepdim, correction=correction), mean(x, mean_dim, keepdim)


def std_mean(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over the same dims, as torch.std_mean."""
    mean_dim = None if isinstance(dim, bool) else dim
    return std(x, dim, unbiased, keepdim, correction=correction), mean(x, mean_dim, keepdim)


# -- logsumexp ----------------------------------------------------------------------------

class LogSumExp(Function):
    """y = log(sum(exp(x))) over dims, computed as m + log(sum(exp(x - m))) with m the largest
    finite-or-not max (0 where it is infinite); dy/dx = exp(x - y) (the softmax)."""

    @staticmethod
    def forward(ctx, x, dims, keepdim):
        shift = np.max(x, axis=dims, keepdims=True, initial=-np.inf)
        shift = np.where(np.isfinite(shift), shift, 0).astype(x.dtype)
        with np.errstate(divide="ignore"):  # log(0) = -inf: no elements, or all -inf
            y = np.log(np.exp(x - shift).sum(axis=dims, keepdims=True)) + shift
        ctx.save_for_backward(x, y)
        ctx.dims, ctx.keepdim = dims, keepdim
        return y if keepdim else np.squeeze(y, axis=dims)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved
        if not ctx.keepdim:
            grad = np.expand_dims(grad, ctx.dims)
        with np.errstate(invalid="ignore"):
            return grad * np.exp(x - y)


def logsumexp(x, dim, keepdim=False):
    """log(sum(exp(x))) over `dim` (an int or a tuple), without overflow; -inf over no elements."""
    x = as_float(x)
    return LogSumExp.apply(x, dims=reduction_dims(dim, x.ndim, "logsumexp"), keepdim=keepdim)


# -- norm ---------------------------------------------------------------------------------

class Norm(Function):
    """The p-norm (sum |x|^p)^(1/p) over dims: p = 2 (Euclidean), 1, inf (max |x|), -inf (min |x|),
    0 (the count of nonzeros), or any other number. Gradients as torch's norm_backward: 0 where
    the norm is 0, and inf/-inf share theirs among ties."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, p):
        size = np.abs(x)
        if p == np.inf or p == -np.inf:
            y = (np.max if p > 0 else np.min)(size, axis=dims, keepdims=True)
        elif p == 0:
            y = (x != 0).sum(axis=dims, keepdims=True).astype(x.dtype)
        elif p == 1:
            y = size.sum(axis=dims, keepdims=True)
        elif p == 2:
            y = np.sqrt(np.square(x).sum(axis=dims, keepdims=True))
        else:
            with np.errstate(divide="ignore"):  # 0 ** negative p
                y = (size ** p).sum(axis=dims, keepdims=True) ** (1 / p)
        ctx.save_for_backward(x, y)
        ctx.dims, ctx.keepdim, ctx.p = dims, keepdim, p
        return y if keepdim else np.squeeze(y, axis=dims)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved
        p = ctx.p
        if not ctx.keepdim:
            grad = np.expand_dims(grad, ctx.dims)
        with np.errstate(invalid="ignore", divide="ignore"):
            if p == 0:
                return np.zeros_like(x)
            if p == 1:
                return np.sign(x) * grad
            if p == np.inf or p == -np.inf:
                size = np.abs(x)
                extreme = (size == y) | np.isnan(size)
                return np.sign(x) * (grad / extreme.sum(axis=ctx.dims, keepdims=True)) * extreme
            if p == 2:
                return x * np.where(y == 0, 0, grad / y)
            if p < 1:
                scaled = np.where(x == 0, 0, np.sign(x) * np.abs(x) ** (p - 1))
                return scaled * grad * y ** (1 - p)
            scaled = np.sign(x) * np.abs(x) ** (p - 1)
            return scaled * np.where(y == 0, 0, grad / y ** (p - 1))


def norm(x, p="fro", dim=None, keepdim=False, dtype=None):
    """The p-norm of x over `dim` (all dims for None) as torch.norm: p = "fro" or 2, 1, inf, -inf,
    0 or any number. A float input (or dtype=) is needed."""
    if dtype is not None:
        x = cast(x, dtype)
    _float_input(x, "norm")
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str) or not isinstance(p, (int, float, np.number)) or isinstance(p, bool):
        raise ArgumentError(f"norm: p must be a number, inf, -inf or 'fro' (vector norms); got {p!r}")
    dims = reduction_dims(dim, x.ndim, "norm")
    if (np.isinf(p) or p < 0) and x.numel() == 0:  # no identity: max, min, 1 / sum(|x|^p) of nothing
        refuse_empty(x, dims, f"norm(p={p})")
    return Norm.apply(x, dims=dims, keepdim=keepdim, p=float(p))

