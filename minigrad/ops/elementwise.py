"""Elementwise ops. Each Function states its output and its local gradient; broadcasting is
undone by the backward walk (`autograd.sum_to`), so binary ops return broadcast-shaped grads."""

import numpy as np

from ..autograd import Function
from ..tensor import Tensor, _to_array


def _check_broadcast(op, a, b):
    shape_a = a.shape if isinstance(a, Tensor) else np.shape(a)
    shape_b = b.shape if isinstance(b, Tensor) else np.shape(b)
    if shape_a == shape_b or not shape_a or not shape_b:  # the common cases, without numpy's slower check
        return
    try:
        np.broadcast_shapes(shape_a, shape_b)
    except ValueError:
        raise ValueError(f"{op}: shapes {shape_a} and {shape_b} cannot be broadcast together") from None


# -- binary -------------------------------------------------------------------------------

class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        return a - b

    @staticmethod
    def backward(ctx, grad):
        return grad, -grad


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        return grad * b, grad * a


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved
        grad_a = grad / b
        return grad_a, -grad_a * a / b


class Pow(Function):
    """a ** b for tensors a and b: d/da = b a^(b-1), d/db = a^b log a."""

    @staticmethod
    def forward(ctx, a, b):
        out = (a ** b).astype(a.dtype, copy=False)  # numpy makes bool ** bool int8
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved
        grad_b = None
        if ctx.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                grad_b = grad * out * np.where(a > 0, np.log(np.where(a > 0, a, 1)), 0)
        return grad * b * a ** (b - 1), grad_b


class PowScalar(Function):
    """x ** c for a constant c: d/dx = c x^(c-1)."""

    @staticmethod
    def forward(ctx, x, exponent):
        ctx.save_for_backward(x)
        ctx.exponent = exponent
        return (x ** exponent).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        c = ctx.exponent
        return grad * c * x ** (c - 1)


# -- result dtypes: PyTorch's rules, not numpy's -------------------------------------------
# numpy promotes int64 with float32 to float64; PyTorch keeps the float operand's dtype. And
# PyTorch lets a number, or a 0-d tensor, set the result's dtype only when it is of a higher
# category (bool < integer < float) than the dimensioned operands: float32 tensor * 2.5 is
# float32, int64 tensor * 2.5 is float32 (the default float), float32 tensor * a float64 0-d
# tensor is float32.

_NUMBERS = (bool, int, float, np.bool_, np.number)


def _promote_types(a, b):
    """Two dtypes -> one: the float one if exactly one is float, else numpy's promotion."""
    if a == b:
        return a
    if (a.kind == "f") != (b.kind == "f"):
        return a if a.kind == "f" else b
    return np.promote_types(a, b)


def _number_dtype(value):
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int64)
    return np.dtype(np.float32)  # the default float dtype


def result_type(a, b):
    """The dtype PyTorch gives a binary op on a and b (tensors, arrays or numbers)."""
    groups = [None, None, None]  # dimensioned tensors, 0-d tensors, numbers
    for x in (a, b):
        if isinstance(x, _NUMBERS):
            group, dtype = 2, _number_dtype(x)
        else:
            x = x if isinstance(x, Tensor) else _to_array(x)
            group, dtype = (0 if x.ndim else 1), x.dtype
        groups[group] = dtype if groups[group] is None else _promote_types(groups[group], dtype)
    dimensioned, zero_dim, numbers = groups
    return _combine(dimensioned, _combine(zero_dim, numbers))


def _combine(higher, lower):
    """higher's dtype unless lower is of a higher category (PyTorch's combine_categories);
    either may be None (no operand of that kind)."""
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return _promote_types(higher, lower)
    return higher


def _as_dtype(x, dtype):
    if isinstance(x, Tensor):
        return cast(x, dtype)
    return Tensor(np.asarray(_to_array(x) if not isinstance(x, _NUMBERS) else x, dtype=dtype))


def _binary(function, name, true_division=False):
    def op(a, b):
        _check_broadcast(name, a, b)
        dtype = result_type(a, b)
        if true_division and dtype.kind in "biu":
            dtype = np.dtype(np.float32)  # int / int is a float, as in PyTorch
        return function.apply(_as_dtype(a, dtype), _as_dtype(b, dtype))
    op.__name__ = name
    op.__doc__ = f"Elementwise {name} with numpy broadcasting and PyTorch's result dtype."
    return op


add = _binary(Add, "add")
sub = _binary(Sub, "sub")
mul = _binary(Mul, "mul")
div = _binary(Div, "div", true_division=True)


def pow(base, exponent):
    """base ** exponent; a Python-number exponent is a constant (no gradient through it)."""
    dtype = result_type(base, exponent)
    if isinstance(exponent, (int, float)) and isinstance(base, Tensor):
        return PowScalar.apply(cast(base, dtype), exponent=exponent)
    _check_broadcast("pow", base, exponent)
    return Pow.apply(_as_dtype(base, dtype), _as_dtype(exponent, dtype))


# -- unary --------------------------------------------------------------------------------

class Neg(Function):
    @staticmethod
    def forward(ctx, x):
        return -x

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad * y


class Log(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.log(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad / x


class Sqrt(Function):
    @staticmethod
    def forward(ctx, x):
        y = np.sqrt(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad / (2 * y)


class Abs(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return np.abs(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved
        return grad * np.sign(x)


class Tanh(Function):
    @staticmethod
    def forward(ctx, x):
        y = np.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad * (1 - y * y)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, x):
        # tanh form: stable for large |x| in both directions
        y = (np.tanh(x * 0.5) + 1) * 0.5
        ctx.save_for_backward(y)
        return y.astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return grad * y * (1 - y)


class Relu(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x > 0)
        return np.maximum(x, 0)

    @staticmethod
    def backward(ctx, grad):
        (positive,) = ctx.saved
        return grad * positive


class Cast(Function):
    @staticmethod
    def forward(ctx, x, dtype):
        ctx.dtype = x.dtype
        return x.astype(dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad.astype(ctx.dtype) if np.issubdtype(ctx.dtype, np.floating) else None


class Clone(Function):
    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, grad):
        return grad


def neg(x): return Neg.apply(x)
def exp(x): return Exp.apply(x)
def log(x): return Log.apply(x)
def sqrt(x): return Sqrt.apply(x)
def abs(x): return Abs.apply(x)
def tanh(x): return Tanh.apply(x)
def sigmoid(x): return Sigmoid.apply(x)
def relu(x): return Relu.apply(x)
def clone(x): return Clone.apply(x)


def cast(x, dtype):
    dtype = np.dtype(dtype)
    return x if x.dtype == dtype else Cast.apply(x, dtype=dtype)


# -- selection ----------------------------------------------------------------------------

def _bool_mask(mask, name):
    mask = _to_array(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"{name}: mask must be a bool tensor or array; got dtype {mask.dtype}")
    return mask


class Where(Function):
    """where(condition, x, y): x where condition is true, else y. The condition is a constant."""

    @staticmethod
    def forward(ctx, x, y, condition):
        ctx.condition = condition
        return np.where(condition, x, y)

    @staticmethod
    def backward(ctx, grad):
        return np.where(ctx.condition, grad, 0), np.where(ctx.condition, 0, grad)


def where(condition, x, y):
    """Elementwise choice with broadcasting among condition, x and y."""
    condition = _bool_mask(condition, "where")
    _check_broadcast("where", x, y)
    _check_broadcast("where", condition, x)
    return Where.apply(x, y, condition=condition)


class MaskedFill(Function):
    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.mask = mask
        return np.where(mask, np.asarray(value, dtype=x.dtype), x)

    @staticmethod
    def backward(ctx, grad):
        return np.where(ctx.mask, 0, grad)


def masked_fill(x, mask, value):
    """A copy of x with `value` where mask is True (mask broadcasts to x's shape)."""
    mask = _bool_mask(mask, "masked_fill")
    try:
        if np.broadcast_shapes(mask.shape, x.shape) != x.shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"masked_fill: mask of shape {mask.shape} does not broadcast to the tensor's "
                         f"shape {x.shape}") from None
    return MaskedFill.apply(x, mask=mask, value=value)


# -- outside the graph --------------------------------------------------------------------

def compare(ufunc, a, b):
    """A comparison or logical ufunc on tensors/numbers: a bool tensor with no gradient."""
    a_data = a.data if isinstance(a, Tensor) else a
    b_data = b.data if isinstance(b, Tensor) else b
    _check_broadcast(ufunc.__name__, a_data, b_data)
    return Tensor(np.asarray(ufunc(a_data, b_data)), _copy=False)


def logical_not(x):
    return Tensor(np.logical_not(x.data), _copy=False)
