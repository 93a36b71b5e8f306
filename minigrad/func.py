"""torch.func's helpers, each a few lines on top of mg.autograd.grad (docs/higher-order.md).

    mg.func.grad(f)(x)                  df/dx of a scalar f
    mg.func.vjp(f, x) -> (f(x), vjp_fn)  vjp_fn(v): v^T J
    mg.func.jvp(f, (x,), (t,))          (f(x), J t), by the double-vjp trick
    mg.func.hessian(f)(x)               d2f/dx2, one row per element of x (small inputs)

Inputs may be Tensors or arrays (floating point); an input that already requires grad (an outer
mg.func call, or a leaf of the caller's own graph) keeps its graph, so the helpers nest:
grad(grad(f)) is the second derivative. Such nesting records the backward pass
(create_graph=True), which only the ops listed in docs/higher-order.md support.
"""

import numpy as np

from . import autograd
from .engine import Tensor
from .errors import ArgumentError, DTypeError, ShapeError
from .ops.join import stack


def _as_input(value, name, position):
    """(a Tensor that requires grad, whether it already did): `value` itself when it requires
    grad (its graph is kept), otherwise a new leaf over its data."""
    if isinstance(value, Tensor) and value.requires_grad:
        return value, True
    data = value._data if isinstance(value, Tensor) else np.asarray(value)
    if not np.issubdtype(data.dtype, np.floating):
        raise DTypeError(f"{name}: input {position} must be floating point, got {data.dtype}")
    return Tensor(data, requires_grad=True), False


def _prepare(args, numbers, name):
    """(args with those at numbers made inputs, the inputs, whether the results keep a graph:
    yes when an input arrived requiring grad, so an outer caller can differentiate them)."""
    args, kept = list(args), False
    for n in numbers:
        args[n], already = _as_input(args[n], name, n)
        kept = kept or already
    return args, [args[n] for n in numbers], kept


def _as_tensor(value, like):
    return value if isinstance(value, Tensor) else Tensor(np.asarray(value, like._data.dtype))


def _detached(output):
    """f's output returned without its graph, as torch.func returns it outside a nesting."""
    return (
        output.detach() if isinstance(output, Tensor) else type(output)(o.detach() for o in output)
    )


def _check_like(given, expected, what, of):
    """given (tensors or arrays) has expected's length and shapes."""
    if len(given) != len(expected):
        raise ShapeError(f"{what}s: expected {len(expected)} (one per {of}), got {len(given)}")
    for position, (g, e) in enumerate(zip(given, expected)):
        shape, wanted = (
            tuple(np.shape(getattr(g, "_data", g))),
            tuple(np.shape(getattr(e, "_data", e))),
        )
        if shape != wanted:
            raise ShapeError(
                f"{what} {position}: expected the shape of {of}, {wanted}, got {shape}"
            )


def _argnums(argnums, count, name):
    """argnums as a tuple of non-negative positions in range(count); torch's checks."""
    numbers = argnums if isinstance(argnums, tuple) else (argnums,)
    if not numbers or not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        raise ArgumentError(
            f"{name}: argnums must be an int or a non-empty tuple of ints, got {argnums!r}"
        )
    if any(not -count <= n < count for n in numbers):
        raise ArgumentError(
            f"{name}: argnums {argnums!r} out of range for a function called with {count} "
            "positional arguments"
        )
    numbers = tuple(n % count for n in numbers)
    if len(set(numbers)) != len(numbers):
        raise ArgumentError(f"{name}: argnums must not repeat a position, got {argnums!r}")
    return numbers


def _split_aux(result, has_aux, name):
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise ArgumentError(
            f"{name}: with has_aux=True, f must return a pair (output, aux), "
            f"got {type(result).__name__}"
        )
    return result


def _as_outputs(output, name):
    """f's output as a tuple of Tensors, and whether it was one Tensor."""
    single = isinstance(output, Tensor)
    outputs = (output,) if single else output
    if not isinstance(outputs, (tuple, list)) or not all(isinstance(o, Tensor) for o in outputs):
        raise ArgumentError(
            f"{name}: f must return a Tensor or a tuple of Tensors, got {type(output).__name__}"
        )
    return tuple(outputs), single


def _grads(outputs, inputs, grad_outputs, create_graph):
    """autograd.grad with an input the outputs do not reach given zeros, as torch.func does."""
    return autograd.grad(
        outputs, inputs, grad_outputs, retain_graph=True, create_graph=create_graph,
        allow_unused=True, materialize_grads=True,
    )  # fmt: skip


def _gradient(f, argnums, has_aux, args, kwargs, name, create_graph=False):
    """grad's body; hessian calls it with create_graph=True to differentiate the result."""
    numbers = _argnums(argnums, len(args), name)
    args, inputs, kept = _prepare(args, numbers, name)
    output, aux = _split_aux(f(*args, **kwargs), has_aux, name)
    if not isinstance(output, Tensor) or output.ndim != 0:
        shape = output.shape if isinstance(output, Tensor) else type(output).__name__
        raise ShapeError(f"{name}: f must return a scalar Tensor (shape ()), got {shape}")
    grads = _grads([output], inputs, None, create_graph or kept)
    return grads, aux, inputs, kept


def grad(f, argnums=0, has_aux=False):
    """torch.func.grad: the function computing the gradient of f (a scalar Tensor output)
    with respect to its positional argument(s) argnums. An int gives one Tensor of that
    argument's shape, a tuple a tuple of them; has_aux=True: f returns (output, aux) and the
    function returns (gradients, aux)."""

    def gradient(*args, **kwargs):
        grads, aux, _, _ = _gradient(f, argnums, has_aux, args, kwargs, "func.grad")
        grads = grads[0] if isinstance(argnums, int) else tuple(grads)
        return (grads, aux) if has_aux else grads

    return gradient


def vjp(f, *primals, has_aux=False):
    """torch.func.vjp: (f(*primals), vjp_fn), where vjp_fn(cotangents) returns the tuple of
    cotangents^T J, one Tensor per primal. cotangents has f's output structure (one Tensor, or
    a tuple of them) and shapes. vjp_fn may be called more than once. has_aux=True: f returns
    (output, aux) and vjp returns (output, vjp_fn, aux)."""
    primals, inputs, kept = _prepare(primals, range(len(primals)), "func.vjp")
    output, aux = _split_aux(f(*inputs), has_aux, "func.vjp")
    outputs, single = _as_outputs(output, "func.vjp")

    def vjp_fn(cotangents):
        given = (cotangents,) if single else tuple(cotangents)
        _check_like(given, outputs, "func.vjp: cotangent", "f's output")
        weights = [_as_tensor(c, o) for c, o in zip(given, outputs)]
        return tuple(_grads(outputs, inputs, weights, kept))

    output = output if kept else _detached(output)
    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


def jvp(f, primals, tangents, has_aux=False):
    """torch.func.jvp: (f(*primals), J tangents), the forward-mode product computed by two
    reverse passes: g(u) = u^T J is linear in u, so d(g(u) . t)/du = J t. primals and tangents
    are tuples of the same length and shapes; f returns one Tensor. has_aux=True: f returns
    (output, aux) and jvp returns (output, jvp_out, aux)."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise ArgumentError(
            f"func.jvp: primals and tangents must be tuples, got {type(primals).__name__} "
            f"and {type(tangents).__name__}"
        )
    _check_like(tangents, primals, "func.jvp: tangent", "its primal")
    primals, inputs, kept = _prepare(primals, range(len(primals)), "func.jvp")
    output, aux = _split_aux(f(*inputs), has_aux, "func.jvp")
    if not isinstance(output, Tensor):
        raise ArgumentError(f"func.jvp: f must return a Tensor, got {type(output).__name__}")
    dummy = Tensor(np.zeros(output.shape, dtype=output._data.dtype), requires_grad=True)
    pulled = _grads([output], inputs, [dummy], create_graph=True)
    weights = [_as_tensor(t, x) for t, x in zip(tangents, inputs)]
    (pushed,) = _grads(pulled, [dummy], weights, kept)
    output = output if kept else output.detach()
    return (output, pushed, aux) if has_aux else (output, pushed)


def hessian(f, argnums=0):
    """torch.func.hessian for a scalar f: the function returning d2f/dx_i dx_j, of shape
    x_i.shape + x_j.shape. An int argnums gives one Tensor, a tuple the nested tuple
    H[i][j]. Built row by row (one backward per element of the gradient): for small inputs."""

    def second(*args, **kwargs):
        grads, _, inputs, kept = _gradient(
            f, argnums, False, args, kwargs, "func.hessian", create_graph=True
        )
        blocks = []
        for g in grads:
            flat = g.reshape(-1)
            rows = [_grads([flat[k]], inputs, None, kept) for k in range(flat.shape[0])]
            blocks.append(
                tuple(
                    stack([row[j] for row in rows]).reshape(g.shape + x.shape)
                    for j, x in enumerate(inputs)
                )
            )
        return blocks[0][0] if isinstance(argnums, int) else tuple(blocks)

    return second
