"""The backward walk: accumulation, deep and diamond-shaped graphs, freeing, grad mode, and the
errors a user can cause. Expected gradients are worked out by hand in each test."""

import numpy as np
import pytest

import minigrad as mg
from minigrad.autograd import sum_to
from minigrad.engine import Function


def leaf(values):
    return mg.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


# -- accumulation -------------------------------------------------------------------------


def test_gradients_accumulate_across_backward_calls():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])
    (x * 10).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [12.0, 14.0, 16.0])
    x.grad = None  # how a user zeroes it
    (x * 10).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 10.0, 10.0])


def test_grad_is_a_plain_tensor_of_the_leaf_dtype():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (x.double() * np.array([0.5, 0.25])).sum().backward()
    assert isinstance(x.grad, mg.Tensor)
    assert x.grad.dtype == np.float32 and not x.grad.requires_grad and x.grad.grad_fn is None
    np.testing.assert_array_equal(x.grad.numpy(), [0.5, 0.25])


def test_constants_and_intermediates_get_no_grad():
    x = leaf([1.0, 2.0])
    c = mg.tensor(np.array([3.0, 4.0]))
    h = x * c
    (h * h).sum().backward()
    assert c.grad is None
    assert h.grad is None  # a non-leaf keeps no grad unless asked
    np.testing.assert_array_equal(
        x.grad.numpy(), 2 * np.array([1.0, 2.0]) * np.array([3.0, 4.0]) ** 2
    )


def test_broadcast_operand_gets_gradient_of_its_own_shape():
    x = leaf(np.ones((3, 1)))
    y = leaf(np.ones((1, 4)))
    b = leaf(2.0)
    (x * y + b).sum().backward()
    assert x.grad.shape == (3, 1) and y.grad.shape == (1, 4) and b.grad.shape == ()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 1), 4.0))
    np.testing.assert_array_equal(y.grad.numpy(), np.full((1, 4), 3.0))
    assert b.grad.item() == 12.0


@pytest.mark.parametrize(
    "shape, target, expected",
    [
        ((2, 3, 4), (3, 1), np.full((3, 1), 8.0)),
        ((2, 3, 4), (4,), np.full(4, 6.0)),
        ((2, 3, 4), (), np.array(24.0)),
        ((2, 3, 4), (1, 1, 1), np.full((1, 1, 1), 24.0)),
        ((2, 3), (2, 3), np.ones((2, 3))),
        ((5, 1, 4), (1, 1), np.full((1, 1), 20.0)),
    ],
)
def test_sum_to_undoes_broadcasting(shape, target, expected):
    out = sum_to(np.ones(shape), target)
    assert out.shape == target
    np.testing.assert_array_equal(out, expected)


def test_sum_to_sums_the_right_elements():
    grad = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(sum_to(grad, (3, 1)), grad.sum(axis=(0, 2)).reshape(3, 1))
    np.testing.assert_array_equal(sum_to(grad, (1, 4)), grad.sum(axis=(0, 1)).reshape(1, 4))


# -- graph shapes -------------------------------------------------------------------------


def test_diamond_graph():
    x = leaf([1.0, -2.0, 3.0])
    a = x * 2  # da/dx = 2
    b = x**2  # db/dx = 2x
    y = (a * b).sum()  # y = 2x^3: dy/dx = 6x^2
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.array([1.0, 4.0, 9.0]), rtol=1e-12)


def test_same_tensor_twice_in_one_op():
    x = leaf([3.0, -1.0])
    (x * x + x / x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, -2.0], rtol=1e-12)


def test_many_paths_are_summed_without_enumerating_them():
    # h <- 0.5 h + 0.5 h for 200 steps: 2^200 paths, gradient exactly 1
    x = leaf(1.5)
    h = x
    for _ in range(200):
        h = h * 0.5 + h * 0.5
    h.backward()
    assert x.grad.item() == 1.0


def test_chain_of_100000_ops_backwards_without_recursion_error():
    x = leaf(1.0)
    factor = mg.tensor(np.float64(1.00001))
    y = x
    for _ in range(100_000):
        y = y * factor
    y.backward()
    np.testing.assert_allclose(x.grad.item(), 1.00001**100_000, rtol=1e-9)  # about e


def test_retain_grad_on_non_leaf():
    x = leaf([1.0, 2.0])
    h = (x * 3).retain_grad()
    (h * h).sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), [6.0, 12.0])  # 2h
    np.testing.assert_array_equal(x.grad.numpy(), [18.0, 36.0])  # 2h * 3


def test_retain_grad_on_the_output_itself():
    x = leaf([1.0, 2.0])
    y = (x * 2).sum().retain_grad()
    y.backward()
    assert y.grad.item() == 1.0
    z = (x * 3).retain_grad()
    z.backward(np.array([1.0, 5.0]))
    np.testing.assert_array_equal(z.grad.numpy(), [1.0, 5.0])
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 17.0])  # 2 + 3, 2 + 15


def test_tensor_used_by_two_outputs():
    x = leaf([1.0, 2.0])
    h = x * x
    first = (h * 3).sum()
    second = (h * 5).sum()
    first.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 12.0])  # 3 * 2x
    second.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [16.0, 32.0])  # + 5 * 2x


def test_two_outputs_share_a_freed_subgraph():
    x = leaf([1.0, 2.0])
    h = x.exp()
    first, second = h.sum(), (h * 2).sum()
    first.backward()  # frees h's node
    with pytest.raises(RuntimeError, match="retain_graph"):
        second.backward()


def test_multi_output_function_with_an_unused_output():
    class SplitHalves(Function):
        @staticmethod
        def forward(ctx, x):
            half = x.shape[0] // 2
            return x[:half] * 2, x[half:] * 3

        @staticmethod
        def backward(ctx, grad_low, grad_high):
            return np.concatenate([grad_low * 2, grad_high * 3])

    x = leaf([1.0, 2.0, 3.0, 4.0])
    low, high = SplitHalves.apply(x)
    np.testing.assert_array_equal(low.numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(high.numpy(), [9.0, 12.0])
    assert low.grad_fn is high.grad_fn
    (low * low).sum().backward()  # high never reaches the loss: its gradient is zero
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 16.0, 0.0, 0.0])  # 2 low * 2


def test_custom_function_sees_needs_input_grad():
    seen = {}

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, factor):
            ctx.save_for_backward(x, factor)
            return x * factor

        @staticmethod
        def backward(ctx, grad):
            x, factor = ctx.saved
            seen["needs"] = ctx.needs_input_grad
            return grad * factor, (grad * x if ctx.needs_input_grad[1] else None)

    x = leaf([1.0, 2.0])
    Scale.apply(x, mg.tensor(np.array([4.0, 5.0]))).sum().backward()
    assert seen["needs"] == (True, False)
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 5.0])


# -- freeing the graph --------------------------------------------------------------------


def test_second_backward_raises_and_mentions_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x.exp() * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp([1.0, 2.0]), rtol=1e-12)  # unchanged


def test_saved_arrays_are_freed_after_backward():
    x = leaf([1.0, 2.0])
    h = x.exp()
    y = (h * h).sum()
    y.backward()
    assert y.grad_fn.saved is None and h.grad_fn.saved is None
    assert h.grad_fn.inputs[0] is x  # the structure stays (for drawing)


def test_retain_graph_allows_a_second_backward():
    x = leaf([1.0, 2.0])
    y = (x.exp() * 2).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.exp([1.0, 2.0]), rtol=1e-12)
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


# -- backward arguments -------------------------------------------------------------------


def test_backward_on_non_scalar_without_grad_raises():
    y = leaf([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError, match=r"\(2,\)"):
        y.backward()


def test_backward_with_explicit_grad():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    y.backward(mg.tensor(np.array([1.0, 0.5, -1.0])))
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, -6.0])
    z = leaf(np.ones((2, 2)))
    (z * 3).backward(np.array([[1.0, 2.0], [3.0, 4.0]]))  # a numpy array works too
    np.testing.assert_array_equal(z.grad.numpy(), [[3.0, 6.0], [9.0, 12.0]])


def test_backward_grad_of_wrong_shape_names_both():
    y = leaf([1.0, 2.0, 3.0]) * 2
    with pytest.raises(ValueError) as info:
        y.backward(np.ones(2))
    assert "(2,)" in str(info.value) and "(3,)" in str(info.value)


def test_backward_on_a_leaf():
    x = leaf([1.0, 2.0])
    x.backward(np.array([5.0, 6.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 6.0])
    s = leaf(3.0)
    s.backward()
    assert s.grad.item() == 1.0


def test_backward_on_a_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="requires"):
        (mg.tensor([1.0]) * 2).sum().backward()


# -- grad mode ----------------------------------------------------------------------------


def test_no_grad_context():
    x = leaf([1.0, 2.0])
    assert mg.is_grad_enabled()
    with mg.no_grad():
        assert not mg.is_grad_enabled()
        y = x * 2
    assert mg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    with pytest.raises(RuntimeError):
        y.sum().backward()


def test_no_grad_decorator():
    @mg.no_grad()
    def double(t):
        assert not mg.is_grad_enabled()
        return t * 2

    x = leaf([1.0])
    y = double(x)
    assert not y.requires_grad
    assert mg.is_grad_enabled()
    assert double.__name__ == "double"
    assert double(x).numpy()[0] == 2.0  # a second call works the same


def test_no_grad_decorator_without_parentheses():
    @mg.no_grad
    def double(t):
        return t * 2

    y = double(leaf([1.0, 2.0]))
    assert not y.requires_grad and mg.is_grad_enabled()
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])


def test_no_grad_and_enable_grad_nest():
    x = leaf([1.0, 2.0])
    with mg.no_grad():
        with mg.no_grad():
            assert not mg.is_grad_enabled()
        assert not mg.is_grad_enabled()
        with mg.enable_grad():
            assert mg.is_grad_enabled()
            y = x * 3
        assert not mg.is_grad_enabled()
        z = x * 3
    assert mg.is_grad_enabled()
    assert y.requires_grad and not z.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_enable_grad_decorator_inside_no_grad():
    @mg.enable_grad()
    def square(t):
        return t * t

    x = leaf([2.0])
    with mg.no_grad():
        y = square(x)
    assert y.requires_grad
    y.sum().backward()
    assert x.grad.item() == 4.0


def test_grad_mode_restored_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with mg.no_grad():
            1 / 0
    assert mg.is_grad_enabled()

    @mg.no_grad()
    def fails():
        raise KeyError("x")

    with pytest.raises(KeyError):
        fails()
    assert mg.is_grad_enabled()


def test_ops_on_integer_tensors_record_no_graph():
    x = leaf([1.0, 2.0])
    index = x.argmax()
    assert index.dtype == np.int64 and not index.requires_grad
    counts = mg.tensor([1, 2]) * 3
    assert not counts.requires_grad


# -- mg.autograd.grad and mg.autograd.backward, against torch.autograd ----------------------

_A = np.random.default_rng(0).standard_normal((3, 4))
_B = np.random.default_rng(1).standard_normal((4,))
_G = np.random.default_rng(2).standard_normal((3, 4))


def _small_graph(lib):
    """a, b leaves; h = tanh(a * b) made by an op; y a number; z = exp(h) of h's shape; c unused."""
    a, b, c = (lib.tensor(v, requires_grad=True) for v in (_A, _B, _B))
    h = (a * b).tanh()
    return dict(a=a, b=b, c=c, h=h, y=h.sum() * 2 + (a**2).mean(), z=h.exp())


GRAD_CASES = {
    "a number by two leaves": lambda L, t: L.autograd.grad(t["y"], [t["a"], t["b"]]),
    "one tensor, not a list": lambda L, t: L.autograd.grad(t["y"], t["b"]),
    "by a tensor an op made": lambda L, t: L.autograd.grad(t["y"], [t["h"], t["a"]]),
    "weighted by grad_outputs": lambda L, t: L.autograd.grad(
        t["z"], [t["a"], t["b"]], grad_outputs=L.tensor(_G)
    ),
    "two outputs": lambda L, t: L.autograd.grad(
        [t["y"], t["z"]], [t["a"]], grad_outputs=[None, L.tensor(_G)]
    ),
    "an output by itself": lambda L, t: L.autograd.grad(t["y"], [t["y"]]),
    "a leaf by itself": lambda L, t: L.autograd.grad(t["a"], [t["a"]], grad_outputs=L.tensor(_G)),
    "allow_unused": lambda L, t: L.autograd.grad(t["y"], [t["a"], t["c"]], allow_unused=True),
    "materialize_grads": lambda L, t: L.autograd.grad(
        t["y"], [t["c"], t["b"]], materialize_grads=True
    ),
}


@pytest.mark.parametrize("case", GRAD_CASES)
def test_autograd_grad_matches_torch_and_leaves_dot_grad_alone(case):
    torch = pytest.importorskip("torch")
    ours_graph, theirs_graph = _small_graph(mg), _small_graph(torch)
    ours, theirs = GRAD_CASES[case](mg, ours_graph), GRAD_CASES[case](torch, theirs_graph)
    assert isinstance(ours, tuple) and len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        assert (mine is None) == (reference is None)
        if mine is not None:
            assert not mine.requires_grad
            np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-12, atol=1e-14)
    assert all(ours_graph[name].grad is None for name in "abc")


@pytest.mark.parametrize("inputs", [None, ["b"]])
def test_autograd_backward_of_several_outputs_matches_torch(inputs):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (mg, torch):
        graph = _small_graph(lib)
        lib.autograd.backward(
            [graph["y"], graph["z"]],
            [None, lib.tensor(_G)],
            inputs=None if inputs is None else [graph[name] for name in inputs],
        )
        results.append(
            [None if graph[name].grad is None else graph[name].grad.numpy() for name in "abc"]
        )
    for mine, reference in zip(*results):
        assert (mine is None) == (reference is None)
        if mine is not None:
            np.testing.assert_allclose(mine, reference, rtol=1e-12)


def test_autograd_grad_errors_name_the_problem():
    graph = _small_graph(mg)
    with pytest.raises(
        RuntimeError, match=r"output 0 has shape \(3, 4\); a gradient for it is needed"
    ):
        mg.autograd.grad(graph["z"], [graph["a"]])
    with pytest.raises(
        RuntimeError, match=r"input 1 \(shape \(4,\)\) was not used.*allow_unused=True"
    ):
        mg.autograd.grad(graph["y"], [graph["a"], graph["c"]], retain_graph=True)
    with pytest.raises(RuntimeError, match=r"input 0 \(shape \(4,\)\) does not require grad"):
        mg.autograd.grad(graph["y"], [mg.tensor(_B)])
    with pytest.raises(TypeError, match="inputs must be Tensors; item 0 is a ndarray"):
        mg.autograd.grad(graph["y"], [_A])
    with pytest.raises(
        ValueError, match=r"the gradient for output 0 has shape \(4,\); the output's is \(3, 4\)"
    ):
        mg.autograd.grad(graph["z"], [graph["a"]], grad_outputs=[np.ones(4)])
    recorded = mg.autograd.grad(graph["y"], [graph["a"]], create_graph=True)[0]  # keeps the graph
    first = mg.autograd.grad(graph["y"], [graph["a"]], retain_graph=True)[0]
    np.testing.assert_array_equal(recorded.numpy(), first.numpy())
    np.testing.assert_array_equal(
        mg.autograd.grad(graph["y"], [graph["a"]])[0].numpy(), first.numpy()
    )
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        mg.autograd.grad(graph["y"], [graph["a"]])


def test_backward_twice_without_retain_graph_names_the_op():
    x = mg.ones(2, requires_grad=True)
    y = x.exp().sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time.*retain_graph"):
        y.backward()


def _hook_run(B):
    seen = []
    x = B.tensor([1.0, -2.0, 3.0], requires_grad=True)
    w = B.tensor([[0.5, 1.0], [2.0, -1.0], [0.0, 3.0]], requires_grad=True)
    # a leaf used three times: one call, the sum
    x.register_hook(lambda g: seen.append(("x", g.tolist())))
    h = x @ w
    h.register_hook(lambda g: seen.append(("h", g.tolist())))
    doubled = h.register_hook(lambda g: g * 2)  # replaces the gradient for what comes after
    y = h.tanh()
    a, b = y.split(1)
    b.register_hook(lambda g: seen.append(("b", g.tolist())))
    loss = (a * 3).sum() + (b * b).sum() + (x * x).sum() + x.sum()
    loss.backward()
    first = (x.grad.tolist(), w.grad.tolist())
    doubled.remove()
    doubled.remove()  # a second remove does nothing
    x.grad = w.grad = None
    (x @ w).tanh().sum().backward()
    return seen, first, x.grad.tolist()


def test_register_hook_sees_and_replaces_gradients_as_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _hook_run(mg), _hook_run(torch)
    assert [name for name, _ in ours[0]] == [name for name, _ in theirs[0]]
    for (_, got), (_, want) in zip(ours[0], theirs[0]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
    # x.grad, w.grad, then x.grad unhooked
    for got, want in zip([*ours[1], ours[2]], [*theirs[1], theirs[2]]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_register_hook_errors():
    with pytest.raises(RuntimeError, match="does not require grad"):
        mg.tensor([1.0]).register_hook(print)
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(TypeError, match="expected a function of the gradient; got int"):
        x.register_hook(3)
    handle = x.register_hook(lambda g: mg.ones(3))
    with pytest.raises(
        RuntimeError,
        match=r"returned a float32 tensor of shape \(3,\); expected float32 of shape \(2,\)",
    ):
        (x * 2).sum().backward()
    handle.remove()
    handle = x.register_hook(lambda g: g.double())
    with pytest.raises(
        RuntimeError, match=r"returned a float64 tensor of shape \(2,\); expected float32"
    ):
        (x * 2).sum().backward()
    handle.remove()
    x.register_hook(lambda g: [1.0, 2.0])
    with pytest.raises(TypeError, match="must return None or a Tensor; got list"):
        (x * 2).sum().backward()
