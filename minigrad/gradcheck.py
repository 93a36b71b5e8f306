"""Check analytic gradients against float64 central differences."""

import numpy as np

from . import autograd
from .engine import Tensor


class GradcheckError(AssertionError):
    """The analytic and numeric gradients disagree; the message says where and by how much."""


def _as_float64_leaf(x):
    data = np.array(x._data if isinstance(x, Tensor) else x, dtype=np.float64)
    return Tensor(data, requires_grad=True)


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compare d(sum(fn(*inputs) * w))/d(input) with central differences, in float64.

    inputs: tensors or arrays; floating ones are copied to float64 leaves that require grad,
    integer ones are passed through unchanged. `w` is a fixed random weighting of the outputs,
    so every output element is checked, not just their sum. Returns True when every element
    agrees within atol + rtol * |numeric|; otherwise raises GradcheckError (or returns False
    when raise_exception=False) naming the input, the element and both values of the worst
    mismatch.
    """
    inputs = [
        _as_float64_leaf(x)
        if np.issubdtype(np.asarray(getattr(x, "data", x)).dtype, np.floating)
        else x
        for x in (inputs if isinstance(inputs, (list, tuple)) else [inputs])
    ]
    out = fn(*inputs)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck: fn must return a Tensor; got {type(out).__name__}")
    weights = np.random.default_rng(0).uniform(0.5, 1.5, size=out.shape)

    def objective():
        with autograd.no_grad():
            return float(np.sum(fn(*inputs)._data * weights))

    (out * Tensor(weights)).sum().backward()
    worst = None
    for position, x in enumerate(inputs):
        if not isinstance(x, Tensor) or not x.requires_grad:
            continue
        analytic = np.zeros_like(x._data) if x.grad is None else x.grad._data
        numeric = np.zeros_like(x._data)
        flat = x._data.reshape(-1)  # a view: writing into it moves the input
        for i in range(flat.size):
            original = flat[i]
            flat[i] = original + eps
            plus = objective()
            flat[i] = original - eps
            minus = objective()
            flat[i] = original
            numeric.reshape(-1)[i] = (plus - minus) / (2 * eps)
        excess = np.abs(analytic - numeric) - (atol + rtol * np.abs(numeric))
        if excess.size and (worst is None or excess.max() > worst[0]):
            # (1, 2), not np.int64s
            index = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), x.shape))
            worst = (excess.max(), position, index, analytic[index], numeric[index])
    if worst is not None and worst[0] > 0:
        _, position, index, a, n = worst
        message = (
            f"gradcheck failed: input {position}, element {index}: analytic gradient {a:.8g}, "
            f"numeric {n:.8g} (difference {abs(a - n):.3g}, tolerance atol={atol} rtol={rtol})"
        )
        if raise_exception:
            raise GradcheckError(message)
        return False
    return True


def gradgradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """torch.autograd.gradgradcheck: gradcheck of the gradient itself. The function checked is
    x -> d(sum(fn(x) * w))/dx (w a fixed random weighting), computed with create_graph=True, so
    its analytic gradient is the second derivative minigrad records, compared with central
    differences of the first derivative, in float64. Same returns and errors as gradcheck."""
    probe = [_as_float64_leaf(x) if isinstance(x, Tensor) or np.ndim(x) >= 0 else x for x in
             (inputs if isinstance(inputs, (list, tuple)) else [inputs])]  # fmt: skip
    shape = fn(*probe).shape
    weights = Tensor(np.random.default_rng(1).uniform(0.5, 1.5, size=shape))

    def first_derivative(*xs):
        with autograd.enable_grad():  # gradcheck's differences run it under no_grad
            y = (fn(*xs) * weights).sum()
            grads = autograd.grad(y, list(xs), create_graph=True, allow_unused=True)
            used = [g for g in grads if g is not None and g.requires_grad]
            if not used:
                raise GradcheckError("gradgradcheck: the gradient does not depend on the inputs")
            return sum((g * Tensor(np.full(g.shape, k + 1.0))).sum() for k, g in enumerate(used))

    return gradcheck(first_derivative, inputs, eps, atol, rtol, raise_exception)
