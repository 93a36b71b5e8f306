"""Layer normalisation as one op: a fused kernel forward, a fused kernel backward.

    y = (x - mean) / sqrt(var + eps) * weight + bias

mean and the biased variance var are taken over the trailing `normalized_shape` dims of x,
separately for every leading position (every token of every sequence). Written as a chain
of primitive ops it would be ten graph nodes and ten passes over memory each way; here it
is one node (LayerNorm in a drawing) whose backward is

    xhat = (x - mean) * rstd,  g = dy * weight
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dweight = sum dy * xhat,  dbias = sum dy

(the means over the normalised features, the sums over every other position).

rms_norm (RMSNorm, as in Llama) leaves out the mean and the bias: y = x / sqrt(mean(x^2) + eps)
* weight; it is composed of the engine's ops.
"""

import numpy as np

from .. import kernels
from ..errors import ArgumentError, DTypeError, ShapeError
from ..engine import Function, Tensor
from .args import check_float
from .registry import op


class LayerNorm(Function):
    """x (..., D) -> y (..., D), normalised over the last dim; weight and bias (D,), each
    present or not (has_weight, has_bias say which of the optional inputs were given)."""

    @staticmethod
    def forward(ctx, x, *affine, eps, has_weight, has_bias):
        weight = affine[0] if has_weight else None
        bias = affine[-1] if has_bias else None
        if not ctx.recording:  # no backward will come: no mean or rstd, nothing saved
            return kernels.layer_norm_inference(x, weight, bias, eps)
        y, mean, rstd = kernels.layer_norm_forward(x, weight, bias, eps)
        ctx.save_for_backward(x, mean, rstd, weight)
        ctx.has_weight, ctx.has_bias = has_weight, has_bias
        return y

    @staticmethod
    def backward(ctx, grad):
        x, mean, rstd, weight = ctx.saved
        grad_x, grad_weight, grad_bias = kernels.layer_norm_backward(grad, x, mean, rstd, weight)
        return (
            (grad_x,)
            + ((grad_weight,) if ctx.has_weight else ())
            + ((grad_bias,) if ctx.has_bias else ())
        )


def _checked(op, x, normalized_shape, weight, bias, eps):
    """(normalized shape as a tuple, [weight and bias that are given]), after checking every
    argument of layer_norm or rms_norm against x."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor; got {type(x).__name__}")
    shape = (
        (int(normalized_shape),)
        if isinstance(normalized_shape, (int, np.integer))
        else tuple(normalized_shape)
    )
    if not shape or any(size < 0 for size in shape):
        raise ArgumentError(
            f"{op}: normalized_shape must be a non-empty tuple of sizes >= 0; "
            f"got {normalized_shape!r}"
        )
    if x.ndim < len(shape) or x.shape[x.ndim - len(shape) :] != shape:
        raise ShapeError(
            f"{op}: expected input with shape (*, {', '.join(map(str, shape))}) "
            f"(normalized_shape={shape}); got input of shape {x.shape}"
        )
    check_float(op, x)
    if not eps >= 0:  # 0 as in torch: a constant row then gives NaN
        raise ArgumentError(f"{op}: eps must be >= 0; got {eps}")
    affine = []
    for name, value in (("weight", weight), ("bias", bias)):
        if value is None:
            continue
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor or None; got {type(value).__name__}")
        if value.shape != shape:
            raise ShapeError(
                f"{op}: {name} must have shape normalized_shape={shape}; got {value.shape}"
            )
        if value.dtype != x.dtype:
            raise DTypeError(
                f"{op}: {name} dtype {value.dtype} does not match input dtype {x.dtype}"
            )
        affine.append(value)
    return shape, affine


def _nothing_to_normalize(x, weight, bias):
    """The output for a normalized_shape with a 0 in it: empty like x, as torch's, with weight and
    bias in the graph so that they get (empty) gradients too."""
    y = x.clone()
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


@op(method=False, public=False)
def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise x over its trailing dims `normalized_shape` (an int or a tuple), then scale by
    weight and shift by bias (each of shape normalized_shape, or None), like
    torch.nn.functional.layer_norm. x (..., *normalized_shape) -> same shape and dtype."""
    shape, affine = _checked("layer_norm", x, normalized_shape, weight, bias, eps)
    if 0 in shape:
        return _nothing_to_normalize(x, weight, bias)
    if len(shape) == 1:
        return LayerNorm.apply(
            x, *affine, eps=float(eps), has_weight=weight is not None, has_bias=bias is not None
        )
    # several normalised dims: one row of prod(shape) features each, and back
    rows = x.reshape(*x.shape[: x.ndim - len(shape)], -1)
    y = LayerNorm.apply(
        rows,
        *(value.reshape(-1) for value in affine),
        eps=float(eps),
        has_weight=weight is not None,
        has_bias=bias is not None,
    )
    return y.reshape(x.shape)


@op(method=False, public=False)
def rms_norm(x, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims normalized_shape, as
    torch.nn.functional.rms_norm (eps None: the dtype's machine epsilon). Made of the engine's
    ops (square, mean, rsqrt, mul), each a node in the graph."""
    shape, affine = _checked(
        "rms_norm", x, normalized_shape, weight, None, 1.0 if eps is None else eps
    )
    if 0 in shape:
        return _nothing_to_normalize(x, weight, None)
    eps = float(np.finfo(x.dtype).eps) if eps is None else float(eps)
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    y = x * ((x * x).mean(dim=dims, keepdim=True) + eps).rsqrt()
    return y * affine[0] if affine else y
