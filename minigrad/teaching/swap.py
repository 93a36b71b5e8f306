"""A student's op in place of minigrad's own, for a `with` block: the real models run on it.

    with mg.teaching.swap(softmax=MySoftmax):       # every softmax, masked or not, and the
        loss = model(batch)                         # attention layers, built on yours
        loss.backward()
    with mg.teaching.swap(attention=MyAttention):   # scaled dot-product attention: yours

The student writes a Function as minigrad's ops are written (engine/function.py): static
forward and backward on numpy arrays, in the simplest form of the op:

    softmax     forward(ctx, z) -> s over the last axis;  backward(ctx, grad) -> dz
    attention   forward(ctx, q, k, v, scale, mask) -> (out, weights), with q (..., L, E),
                k (..., S, E), v (..., S, Ev), mask bool (..., L, S) (True: may attend) or
                None;  backward(ctx, grad_out, grad_weights) -> (dq, dk, dv) (the weights
                take no gradient: grad_weights is zeros)

and the swap applies it where minigrad applies its own (Softmax, ScaledDotProductAttention,
AttentionMean: minigrad/ops/softmax.py, attention.py) with what the student's form leaves out
done around it: the softmax dim moved last, the scale, masks and sequence lengths as -inf
scores, a row with nothing to attend to filled as minigrad fills it (its output replaced,
its gradient zero). With check=True (the default), each call also runs minigrad's own op on
the same arrays and raises ExerciseError at the first output or gradient that differs,
naming the call, the index and both values; check=False runs the student's op alone.

The swap is per thread and ends with its block, also when the block raises (engine/hooks.py):
another thread, and the code after the block, run on minigrad's own ops.
"""

import contextlib
import math

import numpy as np

from ..engine import Function, hooks
from ..ops.attention import AttentionMean, ScaledDotProductAttention
from ..ops.softmax import Softmax
from . import checks


class _Swap(hooks.Watcher):
    def __init__(self, replacements):
        self.replacements = replacements  # minigrad's Function class -> the adapter to apply
        self.calls = {}  # adapter name -> how many times it ran forward

    def replace(self, cls):
        return self.replacements.get(cls, cls)


def _check_student(student, what):
    if not (isinstance(student, type) and callable(getattr(student, "forward", None))):
        raise TypeError(
            f"swap: {what} must be a class with static forward(ctx, ...) and backward(ctx, ...)"
            f" (a Function); got {student!r}"
        )
    if not callable(getattr(student, "backward", None)):
        raise TypeError(f"swap: {what} {student.__name__} has no backward(ctx, grad)")


@contextlib.contextmanager
def swap(softmax=None, attention=None, check=True):
    """Run the block on the student's softmax and/or attention (see the module's docstring).
    Given a softmax alone, attention is built on it too (out = softmax(q k^T scale) v)."""
    if softmax is None and attention is None:
        raise TypeError("swap: give softmax=YourSoftmax, attention=YourAttention or both")
    watcher = _Swap({})
    replacements = watcher.replacements
    if softmax is not None:
        _check_student(softmax, "softmax")
        replacements[Softmax] = _adapter(_SoftmaxAdapter, softmax, Softmax, check, watcher)
    if attention is not None:
        _check_student(attention, "attention")
        core = _attention_core(attention)
    else:
        core = _softmax_attention_core(softmax)
    name = attention.__name__ if attention is not None else f"attention on {softmax.__name__}"
    for own, adapter in (
        (ScaledDotProductAttention, _AttentionAdapter),
        (AttentionMean, _MeanAdapter),
    ):
        replacements[own] = _adapter(adapter, core, own, check, watcher, name)
    with hooks.watching(watcher):
        yield watcher


def _adapter(base, student, own, check, watcher, name=None):
    name = name or student.__name__
    attributes = {"student": student, "own": own, "check": check, "watcher": watcher}
    return type(name.replace(" ", "_"), (base,), {**attributes, "label": name})


class _Adapter(Function):
    """Applies `student` in `own`'s place; compares with `own` on the same arrays when `check`."""

    student = own = watcher = None
    check = True
    label = ""

    def _count(self):
        calls = self.watcher.calls
        calls[self.label] = calls.get(self.label, 0) + 1
        self.call = calls[self.label]

    def _own_forward(self, *arrays, **settings):
        self.own_ctx = checks._context(self.own, len(arrays))
        return self.own.forward(self.own_ctx, *arrays, **settings)

    def _compare(self, what, yours, own):
        __tracebackhide__ = True  # noqa: F841
        checks.check_array(
            f"your {self.label}, call {self.call}: {what}", yours, own, rtol=1e-3,
            expected_name="minigrad's own gives",
            atol=1e-5 if np.asarray(own).dtype == np.float32 else 1e-8,
        )  # fmt: skip


def _run(ctx, what, call, *args):
    return checks.run_student(f"your {ctx.label}.{what} (call {ctx.call})", call, *args)


def _one_gradient(ctx, returned, shapes):
    names = [f"input {i}" for i in range(len(shapes))]
    inputs = [np.empty(shape) for shape in shapes]
    return checks.gradients_of(
        f"your {ctx.label}.backward (call {ctx.call})", returned, inputs, names
    )


# -- softmax ------------------------------------------------------------------------------


class _SoftmaxAdapter(_Adapter):
    @staticmethod
    def forward(ctx, x, dim, scale=1.0, mask=None, key_stop=None, empty_rows=None, causal=False):
        ctx._count()
        z = np.moveaxis(x, dim, -1).astype(np.float64) * scale
        masked = mask is not None or key_stop is not None or empty_rows is not None
        allowed = empty = None
        if masked:
            allowed = np.ones(z.shape, np.bool_)
            if mask is not None:
                allowed &= np.moveaxis(np.broadcast_to(mask, x.shape), dim, -1)
            if key_stop is not None:
                allowed &= np.arange(z.shape[-1]) < np.asarray(key_stop)[..., None]
            allowed &= ~np.isneginf(z)
            empty = ~allowed.any(axis=-1)
            z = np.where(allowed, z, -np.inf)
            z[empty] = 0.0  # a row of numbers for the student's softmax; its result is replaced
        ctx.student_ctx = checks._context(ctx.student, 1)
        s = _run(ctx, "forward", ctx.student.forward, ctx.student_ctx, z)
        s = _output(ctx, s, z.shape)
        if masked:
            s = np.where(allowed, s, 0.0)
            length = z.shape[-1]
            fill = {"uniform": 1.0 / length if length else 0.0, "zero": 0.0}.get(empty_rows, np.nan)
            s[empty] = fill
        ctx.allowed, ctx.empty, ctx.dim, ctx.scale = allowed, empty, dim, scale
        y = np.moveaxis(s, -1, dim).astype(x.dtype)
        if ctx.check:
            own = ctx._own_forward(x, dim, scale, mask, key_stop, empty_rows, causal)
            ctx._compare(f"the softmax of an input of shape {x.shape}", y, own)
        return y

    @staticmethod
    def backward(ctx, grad):
        g = np.moveaxis(grad, ctx.dim, -1).astype(np.float64)
        if ctx.allowed is not None:
            g = np.where(ctx.allowed, g, 0.0)
            g[ctx.empty] = 0.0
        returned = _run(ctx, "backward", ctx.student.backward, ctx.student_ctx, g)
        (dz,) = _one_gradient(ctx, returned, [g.shape])
        if ctx.allowed is not None:
            dz = np.where(ctx.allowed & ~ctx.empty[..., None], dz, 0.0)
        dx = np.moveaxis(dz * ctx.scale, -1, ctx.dim).astype(grad.dtype)
        if ctx.check:
            own = ctx.own.backward(ctx.own_ctx, grad)
            ctx._compare(f"the gradient of the softmax's input (shape {dx.shape})", dx, own)
        return dx


def _output(ctx, value, shape):
    __tracebackhide__ = True  # noqa: F841
    if value is None or np.shape(value) != tuple(shape):
        got = "None" if value is None else f"shape {np.shape(value)}"
        raise checks.ExerciseError(
            f"your {ctx.label}.forward (call {ctx.call}) returned {got}; expected shape {shape}"
        )
    return np.asarray(value, dtype=np.float64)


# -- attention ----------------------------------------------------------------------------


def _softmax_attention_core(softmax):
    """(forward, backward) of attention made of the student's softmax:
    out = softmax(q k^T * scale, masked) @ v."""

    def forward(state, q, k, v, scale, mask):
        scores = (q @ np.swapaxes(k, -1, -2)) * scale
        scores = np.where(mask, scores, -np.inf) if mask is not None else scores
        state.student_ctx = checks._context(softmax, 1)
        returned = _run(state, "forward", softmax.forward, state.student_ctx, scores)
        weights = _output(state, returned, scores.shape)
        state.parts = (q, k, v, weights, scale)
        return weights @ v, weights

    def backward(state, grad_out):
        q, k, v, weights, scale = state.parts
        grad_weights = grad_out @ np.swapaxes(v, -1, -2)
        returned = _run(state, "backward", softmax.backward, state.student_ctx, grad_weights)
        (grad_scores,) = _one_gradient(state, returned, [weights.shape])
        grad_scores = grad_scores * scale
        return (
            grad_scores @ k,
            np.swapaxes(grad_scores, -1, -2) @ q,
            np.swapaxes(weights, -1, -2) @ grad_out,
        )

    return forward, backward


def _attention_core(attention):
    """(forward, backward) of the student's attention Function."""

    def forward(state, q, k, v, scale, mask):
        state.student_ctx = checks._context(attention, 3)
        returned = _run(
            state, "forward", attention.forward, state.student_ctx, q, k, v, scale, mask
        )
        if not (isinstance(returned, tuple) and len(returned) == 2):
            raise checks.ExerciseError(
                f"your {state.label}.forward (call {state.call}) must return (out, weights); "
                f"got {type(returned).__name__}"
            )
        out = _output(state, returned[0], q.shape[:-1] + v.shape[-1:])
        weights = _output(state, returned[1], q.shape[:-1] + k.shape[-2:-1])
        state.weights_shape = weights.shape
        return out, weights

    def backward(state, grad_out):
        zeros = np.zeros(state.weights_shape)
        returned = _run(state, "backward", attention.backward, state.student_ctx, grad_out, zeros)
        shapes = [state.shapes[0], state.shapes[1], state.shapes[2]]
        return tuple(_one_gradient(state, returned, shapes))

    return forward, backward


def _allowed(q, k, mask, key_lengths, causal_offset):
    """The bool (..., L, S) of keys each query may attend to, and the queries with none."""
    length, keys = q.shape[-2], k.shape[-2]
    allowed = np.ones(q.shape[:-1] + (keys,), np.bool_)
    if mask is not None:
        allowed &= np.broadcast_to(mask, allowed.shape)
    if key_lengths is not None:
        stops = np.broadcast_to(np.asarray(key_lengths), q.shape[:-2])
        allowed &= np.arange(keys) < stops[..., None, None]
    if causal_offset is not None:
        allowed &= np.arange(keys) <= np.arange(length)[:, None] + causal_offset
    empty = ~allowed.any(axis=-1)
    allowed[empty] = True  # the student's softmax sees a whole row; the result is replaced
    return allowed, empty


class _AttentionAdapter(_Adapter):
    @staticmethod
    def forward(
        ctx, q, k, v, scale, causal=False, dropout_p=None, causal_offset=None, mask=None,
        key_lengths=None, keep=None, need_weights=True,
    ):  # fmt: skip
        ctx._count()
        offset = (causal_offset or 0) if causal else None
        allowed, empty = _allowed(q, k, mask, key_lengths, offset)
        ctx.shapes, ctx.empty = (q.shape, k.shape, v.shape), empty
        arrays = [a.astype(np.float64) for a in (q, k, v)]
        forward, _ = ctx.student
        out, weights = forward(ctx, *arrays, scale, allowed)
        weights = np.where(empty[..., None], 0.0, weights)
        if keep is not None:
            keep_scale = 0.0 if dropout_p == 1 else 1.0 / (1.0 - dropout_p)
            ctx.dropped = np.where(keep, weights * keep_scale, 0.0)
            ctx.keep, ctx.keep_scale = keep, keep_scale
            out = ctx.dropped @ arrays[2]
        ctx.v64 = arrays[2]
        out = np.where(empty[..., None], 0.0, out).astype(q.dtype)
        weights = weights.astype(q.dtype)
        if ctx.check:
            own_out, own_weights = ctx._own_forward(
                q, k, v, scale, causal, dropout_p, causal_offset, mask, key_lengths, keep, True
            )
            ctx._compare(f"the weights for queries of shape {q.shape}", weights, own_weights)
            ctx._compare(f"the output for queries of shape {q.shape}", out, own_out)
        return out, (weights if need_weights or keep is not None else np.empty(0, q.dtype))

    @staticmethod
    def backward(ctx, grad, _weights_grad):
        _, backward = ctx.student
        grad_out = np.where(ctx.empty[..., None], 0.0, grad.astype(np.float64))
        if getattr(ctx, "keep", None) is not None:
            raise checks.ExerciseError(
                f"your {ctx.label}: a backward through attention dropout is not part of the "
                "exercise; run the model without dropout (model.eval() or dropout=0)"
            )
        grads = backward(ctx, grad_out)
        grads = tuple(g.astype(grad.dtype) for g in grads)
        if ctx.check:
            own = ctx.own.backward(ctx.own_ctx, grad, _weights_grad)
            for name, yours, theirs in zip(("query", "key", "value"), grads, own):
                ctx._compare(f"the gradient of the {name} (shape {yours.shape})", yours, theirs)
        return grads


class _MeanAdapter(_Adapter):
    """AttentionMean (the mean of the weights over each sequence's queries) through the
    student's attention, with v the identity so that its output is its weights."""

    @staticmethod
    def forward(ctx, q, k, scale, lengths):
        ctx._count()
        steps, given = q.shape[-2], lengths
        lengths = np.asarray(lengths).reshape(q.shape[0], *([1] * (q.ndim - 3)))
        stops = np.broadcast_to(lengths, q.shape[:-2])
        allowed, empty = _allowed(q, k, None, stops, None)
        rows = np.arange(steps) < stops[..., None]  # the queries averaged over
        ctx.shapes = (q.shape, k.shape, (*k.shape[:-1], steps))
        ctx.empty = empty
        identity = np.broadcast_to(np.eye(steps), q.shape[:-2] + (steps, steps)).copy()
        forward, _ = ctx.student
        _, weights = forward(
            ctx, q.astype(np.float64), k.astype(np.float64), identity, scale, allowed
        )
        counts = np.maximum(stops, 1)[..., None]
        ctx.rows, ctx.counts = rows, counts
        mean = (np.where(rows[..., None], weights, 0.0).sum(axis=-2) / counts).astype(q.dtype)
        if ctx.check:
            own = ctx._own_forward(q, k, scale, given)
            ctx._compare(f"the mean weights for queries of shape {q.shape}", mean, own)
        return mean

    @staticmethod
    def backward(ctx, grad):
        _, backward = ctx.student
        grad_out = np.where(ctx.rows[..., None], grad[..., None, :] / ctx.counts[..., None], 0.0)
        grad_out = np.where(ctx.empty[..., None], 0.0, grad_out)
        dq, dk, _ = backward(ctx, grad_out)
        grads = (dq.astype(grad.dtype), dk.astype(grad.dtype))
        if ctx.check:
            own = ctx.own.backward(ctx.own_ctx, grad)
            for name, yours, theirs in zip(("query", "key"), grads, own):
                ctx._compare(f"the gradient of the {name} (shape {yours.shape})", yours, theirs)
        return grads


def scale_for(head_dim, temperature=1.0):
    """1 / (sqrt(head_dim) * temperature): the scale of scaled dot-product attention."""
    return 1.0 / (math.sqrt(head_dim) * temperature)
