"""Tests for examples/engine_from_scratch.py, the from-scratch engine of the teaching path.

Random expressions (hypothesis: leaves of broadcasting shapes, elementwise ops, matmul, sums
over axes, values used more than once) are built in the example's engine and in minigrad, and
the gradient of every leaf is compared in float64; a few are also checked against central
finite differences. The example's MLP training must lower its loss.
"""

import importlib.util
import math
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import minigrad as mg

ENGINE_PATH = Path(__file__).resolve().parents[2] / "examples" / "engine_from_scratch.py"


def load_engine():
    """The example as a module (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location("engine_from_scratch", ENGINE_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


engine = load_engine()

UNARY = ("exp", "tanh", "neg")
BINARY = ("add", "mul", "sub", "rsub_number", "mul_number")


@st.composite
def expressions(draw):
    """(leaf arrays, steps): a program both engines run the same way (see `run`).

    Every value's shape broadcasts to (rows, cols), so any two values can be combined. Each
    value carries a bound on its magnitude, and exp is only taken of values bounded by 4, so
    nothing overflows.
    """
    rows, cols = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    leaf_shapes = [(rows, cols), (cols,), (1, cols), (rows, 1), (), (1, 1)]
    leaves, steps, shapes, bounds = [], [], [], []

    def new_leaf(shape):
        leaves.append(draw(arrays(np.float64, shape, elements=st.floats(-1, 1))))
        steps.append(("leaf", len(leaves) - 1))
        shapes.append(shape)
        bounds.append(1.0)
        return len(steps) - 1

    def add_step(step, shape, bound):
        steps.append(step)
        shapes.append(shape)
        bounds.append(bound)
        return len(steps) - 1

    current = new_leaf(draw(st.sampled_from(leaf_shapes)))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(("unary", "binary", "binary", "matmul", "sum")))
        shape, bound = shapes[current], bounds[current]
        if kind == "unary":
            name = draw(st.sampled_from(UNARY))
            if name == "exp" and bound > 4:
                name = "tanh"
            new_bound = {"exp": math.exp(bound), "tanh": 1.0, "neg": bound}[name]
            current = add_step(("unary", name, current), shape, new_bound)
        elif kind == "binary":
            name = draw(st.sampled_from(BINARY))
            if name.endswith("_number"):
                number = draw(st.floats(-2, 2))
                new_bound = bound * 2 if name == "mul_number" else bound + 2
                current = add_step(("number", name, current, number), shape, new_bound)
                continue
            reuse = draw(st.booleans())  # an earlier value: a tensor used twice
            other = (
                draw(st.integers(0, current))
                if reuse
                else new_leaf(draw(st.sampled_from(leaf_shapes)))
            )
            other_bound = bounds[other]
            new_bound = bound * other_bound if name == "mul" else bound + other_bound
            result_shape = np.broadcast_shapes(shape, shapes[other])
            current = add_step(("binary", name, current, other), result_shape, new_bound)
        elif kind == "matmul" and len(shape) == 2:
            # (a, b) @ (b, cols) -> (a, cols), a in {1, rows}: still broadcasts to (rows, cols)
            weight = new_leaf((shape[1], cols))
            current = add_step(("matmul", current, weight), (shape[0], cols), bound * shape[1])
        elif kind == "sum" and len(shape) >= 1:
            axis = draw(st.integers(-len(shape), len(shape) - 1))
            keepdims = draw(st.booleans())
            result_shape = np.zeros(shape).sum(axis=axis, keepdims=keepdims).shape
            if not broadcasts_to(result_shape, (rows, cols)):
                # (rows, cols) summed over its last axis is (rows,): keep the axis instead
                keepdims = True
                result_shape = np.zeros(shape).sum(axis=axis, keepdims=True).shape
            current = add_step(("sum", current, axis, keepdims), result_shape, bound * shape[axis])
    # The output: the last value weighted by one more leaf, summed, so that every entry of it
    # gets its own upstream gradient rather than 1.
    weight = new_leaf(shapes[current])
    steps.append(("output", current, weight))
    return leaves, steps


def broadcasts_to(shape, target):
    """Whether an array of `shape` broadcasts to `target` (numpy raises where it does not)."""
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


class EngineOps:
    """How the example's engine spells a leaf and a sum."""

    @staticmethod
    def leaf(array):
        return engine.Tensor(array.copy(), requires_grad=True)

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        return x.sum(axis=axis, keepdims=keepdims)

    @staticmethod
    def grad(leaf):
        return leaf.grad


class MinigradOps:
    """How minigrad spells a leaf and a sum."""

    @staticmethod
    def leaf(array):
        return mg.tensor(array.copy(), requires_grad=True)

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        return x.sum(dim=axis, keepdim=keepdims)

    @staticmethod
    def grad(leaf):
        return None if leaf.grad is None else leaf.grad.numpy()


def run(leaves, steps, ops):
    """Build the program in one engine, run backward; returns (output value, leaf gradients)."""
    leaf_tensors = [ops.leaf(array) for array in leaves]
    values = []
    for step in steps:
        if step[0] == "leaf":
            value = leaf_tensors[step[1]]
        elif step[0] == "unary":
            x = values[step[2]]
            value = {"exp": lambda: x.exp(), "tanh": lambda: x.tanh(), "neg": lambda: -x}[step[1]]()
        elif step[0] == "number":
            x, number = values[step[2]], step[3]
            value = number - x if step[1] == "rsub_number" else x * number
        elif step[0] == "binary":
            x, y = values[step[2]], values[step[3]]
            value = {"add": lambda: x + y, "mul": lambda: x * y, "sub": lambda: x - y}[step[1]]()
        elif step[0] == "matmul":
            value = values[step[1]] @ values[step[2]]
        elif step[0] == "sum":
            value = ops.sum(values[step[1]], axis=step[2], keepdims=step[3])
        else:  # "output"
            value = ops.sum(values[step[1]] * values[step[2]])
        values.append(value)
    output = values[-1]
    output.backward()
    return float(output.data if ops is EngineOps else output.item()), [
        ops.grad(t) for t in leaf_tensors
    ]


def assert_gradients_close(expected, actual):
    assert len(expected) == len(actual)
    for want, got in zip(expected, actual):
        assert (want is None) == (got is None)
        if want is not None:
            assert got.shape == want.shape
            scale = max(1.0, float(np.abs(want).max(initial=0.0)))
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * scale)


@settings(max_examples=300)
@given(expressions())
def test_gradients_match_minigrad_on_random_expressions(expression):
    leaves, steps = expression
    engine_output, engine_grads = run(leaves, steps, EngineOps)
    minigrad_output, minigrad_grads = run(leaves, steps, MinigradOps)
    np.testing.assert_allclose(engine_output, minigrad_output, rtol=1e-12, atol=1e-12)
    assert_gradients_close(minigrad_grads, engine_grads)


@settings(max_examples=25)
@given(expressions())
def test_gradients_match_finite_differences(expression):
    leaves, steps = expression
    _, grads = run(leaves, steps, EngineOps)
    step_size = 1e-6
    for index, leaf in enumerate(leaves):
        numeric = np.zeros_like(leaf)
        for position in np.ndindex(leaf.shape):
            shifted = [array.copy() for array in leaves]
            shifted[index][position] += step_size
            above, _ = run(shifted, steps, EngineOps)
            shifted[index][position] -= 2 * step_size
            below, _ = run(shifted, steps, EngineOps)
            numeric[position] = (above - below) / (2 * step_size)
        scale = max(1.0, float(np.abs(numeric).max(initial=0.0)))
        np.testing.assert_allclose(grads[index], numeric, rtol=1e-5, atol=1e-6 * scale)


def test_sum_to_undoes_broadcasting():
    grad = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(engine.sum_to(grad, (2, 3, 4)), grad)
    np.testing.assert_array_equal(engine.sum_to(grad, (4,)), grad.sum(axis=(0, 1)))
    np.testing.assert_array_equal(engine.sum_to(grad, (3, 1)), grad.sum(axis=(0, 2))[:, None])
    np.testing.assert_array_equal(engine.sum_to(grad, ()), grad.sum())


def test_walk_is_iterative_on_a_deep_graph():
    """A chain far deeper than Python's recursion limit; d/dx of x * 1.0001^depth."""
    depth = 5000
    x = engine.Tensor(2.0, requires_grad=True)
    y = x
    for _ in range(depth):
        y = y * 1.0001
    y.backward()
    assert math.isclose(float(x.grad), 1.0001**depth, rel_tol=1e-9)


def test_gradients_accumulate_over_backward_calls_and_constants_get_none():
    x = engine.Tensor([1.0, -2.0], requires_grad=True)
    constant = engine.Tensor([3.0, 4.0])
    (x * constant).sum().backward()
    (x * constant).sum().backward()
    np.testing.assert_array_equal(x.grad, [6.0, 8.0])
    assert constant.grad is None


def test_mlp_training_lowers_the_loss():
    losses, accuracy = engine.train(steps=150)
    assert losses[-1] < 0.5 * losses[0]
    assert all(later <= earlier + 1e-9 for earlier, later in zip(losses, losses[1:]))
    assert accuracy >= 0.85


@settings(max_examples=100)
@given(
    arrays(
        np.float64, st.tuples(st.integers(1, 4), st.integers(1, 5)), elements=st.floats(-30, 30)
    ),
    arrays(np.float64, st.integers(1, 5), elements=st.floats(0.5, 3)),
)
def test_softmax_and_division_match_minigrad_and_finite_differences(scores, divisors):
    """Softmax's Jacobian-vector product (its docstring's s * (g - sum(g s))) and Div's two
    gradients, in one expression: sum(weight * softmax(z / d)) with d broadcast over rows."""
    divisors = divisors[: scores.shape[1]]
    divisors = np.resize(divisors, scores.shape[1])
    weight = np.linspace(-1, 2, scores.size).reshape(scores.shape)

    def value(z, d):
        shifted = z / d - (z / d).max(axis=-1, keepdims=True)
        return float((weight * np.exp(shifted) / np.exp(shifted).sum(-1, keepdims=True)).sum())

    z, d = engine.Tensor(scores, requires_grad=True), engine.Tensor(divisors, requires_grad=True)
    ((z / d).softmax() * engine.Tensor(weight)).sum().backward()
    z_mg, d_mg = mg.tensor(scores, requires_grad=True), mg.tensor(divisors, requires_grad=True)
    (mg.softmax(z_mg / d_mg, dim=-1) * mg.tensor(weight)).sum().backward()
    assert_gradients_close([z_mg.grad.numpy(), d_mg.grad.numpy()], [z.grad, d.grad])
    step = 1e-6
    for array, grad in ((scores, z.grad), (divisors, d.grad)):
        for position in np.ndindex(array.shape):
            original = array[position]
            array[position] = original + step
            above = value(scores, divisors)
            array[position] = original - step
            below = value(scores, divisors)
            array[position] = original
            np.testing.assert_allclose(grad[position], (above - below) / (2 * step), atol=1e-6)


def test_the_chapters_attention_runs_on_the_engine_as_in_minigrad():
    """ "cat sleeps it": the weights of "it" are the chapter's [0.93, 0.01, 0.06], and the
    gradients reaching W_Q, W_K and W_V are minigrad's for the same attention."""
    weights_of_it, grads = engine.chapter_attention()
    np.testing.assert_allclose(weights_of_it, [0.9316, 0.0134, 0.0551], atol=5e-5)
    x = mg.tensor(engine.CHAPTER_X)
    matrices = [engine.CHAPTER_QUERY_WEIGHT, np.eye(2), np.eye(2)]
    query_weight, key_weight, value_weight = (mg.tensor(m, requires_grad=True) for m in matrices)
    queries, keys, values = x @ query_weight, x @ key_weight, x @ value_weight
    attention = mg.softmax(queries @ keys.T / math.sqrt(2), dim=-1)
    (attention @ values)[2, 0].backward()
    np.testing.assert_allclose(attention.detach().numpy()[2], weights_of_it, rtol=1e-12)
    for ours, theirs in zip(grads, (query_weight, key_weight, value_weight)):
        np.testing.assert_allclose(ours, theirs.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert np.abs(grads[0]).max() > 1e-3  # the query matrix does get a gradient
