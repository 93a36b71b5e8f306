"""Sequences of numbers: logspace (a geometric sequence), vander (the powers of a vector, as
columns) and trapezoid (the integral of samples by the trapezoidal rule)."""

import numpy as np

from .. import dtypes
from ..errors import ArgumentError, DimError, ShapeError
from ..engine import Tensor
from .args import check_device, normalize_dim
from .conversion import as_float
from .join import cat
from .reductions import cumprod, diff, sum
from .shape import expand, flip, narrow, reshape
from .registry import op


@op(method=False)
def logspace(start, end, steps, base=10.0, dtype=None, requires_grad=False, device=None):
    """`steps` numbers from base**start to base**end, evenly spaced in exponent (torch.logspace)."""
    check_device(device, "logspace")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise ArgumentError(f"logspace: steps must be a non-negative int; got {steps!r}")
    dtype = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype)
    values = np.power(float(base), np.linspace(float(start), float(end), int(steps)))
    return Tensor._wrap(values.astype(dtype), requires_grad=requires_grad)


@op(method=False)
def vander(x, N=None, increasing=False):
    """The (n, N) matrix of powers of the vector x: columns x**(N-1), ..., x, 1 (increasing=True:
    1, x, ..., x**(N-1)); N defaults to n (torch.vander). Built as a running product, so the
    gradient at x = 0 is exact."""
    if x.ndim != 1:
        raise DimError(f"vander: expects a 1-D tensor; got shape {x.shape}")
    N = x.shape[0] if N is None else N
    if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 0:
        raise ArgumentError(f"vander: N must be a non-negative int; got {N!r}")
    column = reshape(x, (-1, 1))
    ones = Tensor._wrap(np.ones((x.shape[0], 1), x.dtype if x.dtype.kind == "f" else np.int64))
    powers = (
        cat([ones, cumprod(expand(column, (x.shape[0], int(N) - 1)), 1)], 1) if N else ones[:, :0]
    )
    return powers if increasing else flip(powers, 1)


@op(method=False)
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of the samples y along dim by the trapezoidal rule: at spacing dx (1 by
    default) or at the sample points x (1-D along dim, or of y's shape), as torch.trapezoid."""
    if x is not None and dx is not None:
        raise ArgumentError("trapezoid: give the sample points x or the spacing dx, not both")
    y = as_float(y)
    if y.ndim == 0:
        raise DimError("trapezoid: expects a tensor with at least 1 dim; got a 0-d tensor")
    axis = normalize_dim(dim, y.ndim, "trapezoid")
    length = max(y.shape[axis] - 1, 0)
    pair_sums = narrow(y, axis, y.shape[axis] - length, length) + narrow(y, axis, 0, length)
    if x is None:
        return sum(pair_sums, axis) * ((1.0 if dx is None else float(dx)) / 2)
    x = x if isinstance(x, Tensor) else Tensor._wrap(np.asarray(x, dtype=y.dtype))
    if x.ndim == 1 and x.shape[0] == y.shape[axis]:
        x = reshape(x, (-1,) + (1,) * (y.ndim - 1 - axis))
    elif x.shape != y.shape:
        raise ShapeError(
            f"trapezoid: x must be 1-D of length {y.shape[axis]} (dim {axis} of y) or have y's "
            f"shape {y.shape}; got shape {x.shape}"
        )
    return sum(diff(x, dim=axis - y.ndim) * pair_sums, axis) / 2
