"""create_graph=True (minigrad/engine/higher_order.py): second and third derivatives against
torch's (torch.autograd.grad with create_graph=True, float64) over a table of ops, Hessian-vector
products against finite differences, the refusals, and the first-order walk left as it was."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from minigrad import nn
from minigrad.engine import Function

torch = pytest.importorskip("torch")

TOLERANCE = dict(rtol=1e-9, atol=1e-10)


def _lib(name):
    """(namespace, functional) of one library: the table's functions are written once."""
    if name == "torch":
        return torch, torch.nn.functional
    return mg, mg.nn.functional


# name -> (function of (lib, F, x), input shape, how to draw x: "any" or "positive")
OPS = {
    "add": (lambda lib, F, x: (x + x * 2 + 1.5) * x, (3, 4), "any"),
    "sub": (lambda lib, F, x: 2.0 - x * x - x, (3, 4), "any"),
    "mul": (lambda lib, F, x: x * x * x, (3, 4), "any"),
    "div": (lambda lib, F, x: x / (x * x + 1.0) + 1.0 / x, (3, 4), "positive"),
    "pow scalar": (lambda lib, F, x: x**3 + x**-1.5, (3, 4), "positive"),
    "pow tensor": (lambda lib, F, x: x ** (x * 0.5), (3, 4), "positive"),
    "neg": (lambda lib, F, x: -(x * x), (3, 4), "any"),
    "broadcast": (lambda lib, F, x: x * x[0] + x[:, :1] ** 2, (3, 4), "any"),
    "exp": (lambda lib, F, x: lib.exp(x * 0.5), (3, 4), "any"),
    "log": (lambda lib, F, x: lib.log(x), (3, 4), "positive"),
    "sqrt": (lambda lib, F, x: lib.sqrt(x), (3, 4), "positive"),
    "rsqrt": (lambda lib, F, x: lib.rsqrt(x), (3, 4), "positive"),
    "tanh": (lambda lib, F, x: lib.tanh(x), (3, 4), "any"),
    "sigmoid": (lambda lib, F, x: lib.sigmoid(x), (3, 4), "any"),
    "sin cos": (lambda lib, F, x: lib.sin(x) * lib.cos(x), (3, 4), "any"),
    "sinh cosh": (lambda lib, F, x: lib.sinh(x) + lib.cosh(x), (3, 4), "any"),
    "asin atan": (lambda lib, F, x: lib.asin(x * 0.3) + lib.atan(x), (3, 4), "any"),
    "log1p expm1": (lambda lib, F, x: lib.log1p(x) + lib.expm1(x), (3, 4), "positive"),
    "abs": (lambda lib, F, x: lib.abs(x) * x, (3, 4), "any"),
    "erf": (lambda lib, F, x: lib.erf(x), (3, 4), "any"),
    "relu": (lambda lib, F, x: F.relu(x) * x, (3, 4), "any"),
    "leaky_relu": (lambda lib, F, x: F.leaky_relu(x, 0.1) * x, (3, 4), "any"),
    "gelu": (lambda lib, F, x: F.gelu(x), (3, 4), "any"),
    "gelu tanh": (lambda lib, F, x: F.gelu(x, approximate="tanh"), (3, 4), "any"),
    "silu": (lambda lib, F, x: F.silu(x), (3, 4), "any"),
    "sum": (lambda lib, F, x: x.sum(1) ** 2 + x.sum() ** 3, (3, 4), "any"),
    "sum keepdim": (lambda lib, F, x: x.sum(0, keepdim=True) * x, (3, 4), "any"),
    "mean": (lambda lib, F, x: x.mean(0) ** 2 + x.mean() * x, (3, 4), "any"),
    "amax": (lambda lib, F, x: x.amax(1) ** 2, (3, 4), "any"),
    "matmul": (lambda lib, F, x: (x @ x.T) @ x, (3, 3), "any"),
    "matmul batched": (lambda lib, F, x: x.reshape(2, 3, 2) @ x.reshape(2, 2, 3), (3, 4), "any"),
    "matmul vector": (lambda lib, F, x: (x @ x[0]) * (x[1] @ x.T), (4, 4), "any"),
    "reshape": (lambda lib, F, x: x.reshape(4, 3) * x.reshape(12)[:3], (3, 4), "any"),
    "transpose": (lambda lib, F, x: x.transpose(0, 1) ** 3, (3, 4), "any"),
    "permute": (lambda lib, F, x: x.reshape(3, 2, 2).permute(2, 0, 1) ** 2, (3, 4), "any"),
    "indexing": (
        lambda lib, F, x: (x[1:, ::2] ** 2).sum() + x[[0, 0, 2]].sum(0) ** 2,
        (3, 4),
        "any",
    ),
    "cat": (lambda lib, F, x: lib.cat([x, x * x], 1) ** 2, (3, 4), "any"),
    "stack": (lambda lib, F, x: lib.stack([x, x * x], 0) ** 2, (3, 4), "any"),
    "softmax": (lambda lib, F, x: lib.softmax(x, 1) ** 2, (3, 4), "any"),
    "softmax dim 0": (lambda lib, F, x: lib.softmax(x, 0) ** 2, (3, 4), "any"),
    "log_softmax": (lambda lib, F, x: lib.log_softmax(x, 1) ** 2, (3, 4), "any"),
    "mse_loss": (lambda lib, F, x: F.mse_loss(x * x, x.detach() + 1.0), (3, 4), "any"),
    "linear": (lambda lib, F, x: F.linear(x, x[:2] * x[:2], x[0, :2]), (3, 4), "any"),
}


def _draw(shape, kind, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.uniform(-1.5, 1.5, size=shape)
    return np.abs(values) + 0.5 if kind == "positive" else values


def _derivatives(name, function, values, orders):
    """The first `orders` derivatives of sum(function(x) * w) along fixed directions, as
    numpy arrays: g = d/dx, then d/dx (g . v), then d/dx of that . u."""
    lib, F = _lib(name)
    tensor = (lambda a: torch.tensor(a)) if name == "torch" else (lambda a: mg.tensor(a))
    autograd_grad = torch.autograd.grad if name == "torch" else mg.autograd.grad
    x = tensor(values).requires_grad_(True)
    y = function(lib, F, x)
    rng = np.random.default_rng(1)
    scalar = (y * tensor(rng.uniform(0.5, 1.5, size=tuple(y.shape)))).sum()
    results = []
    for order in range(orders):
        last = order == orders - 1
        if not scalar.requires_grad:  # the last derivative was constant: this one is 0
            results.append(np.zeros(values.shape))
            continue
        (g,) = autograd_grad(scalar, x, create_graph=not last)
        value = g.detach()
        if name == "torch":  # torch's ZeroTensor (abs'' is one) has no values to read
            value = torch.zeros(g.shape, dtype=g.dtype).add_(value)
        results.append(value.numpy().copy())
        if not last:
            scalar = (g * tensor(rng.uniform(-1, 1, size=tuple(g.shape)))).sum()
    return results


@pytest.mark.parametrize("name", list(OPS))
def test_second_and_third_derivatives_match_torch(name):
    function, shape, kind = OPS[name]
    values = _draw(shape, kind)
    ours = _derivatives("minigrad", function, values, 3)
    theirs = _derivatives("torch", function, values, 3)
    for order, (a, b) in enumerate(zip(ours, theirs), start=1):
        np.testing.assert_allclose(a, b, **TOLERANCE, err_msg=f"{name}, order {order}")


@settings(max_examples=15, deadline=None)
@given(
    rows=st.integers(1, 4),
    cols=st.integers(1, 5),
    name=st.sampled_from(["mul", "softmax", "log_softmax", "matmul batched", "sum", "gelu"]),
    seed=st.integers(0, 2**16),
)
def test_second_derivatives_match_torch_for_drawn_shapes(rows, cols, name, seed):
    function, _, kind = OPS[name]
    shape = (3, 4) if name == "matmul batched" else (rows, cols)
    values = _draw(shape, kind, seed)
    ours = _derivatives("minigrad", function, values, 2)
    theirs = _derivatives("torch", function, values, 2)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, **TOLERANCE)


def test_hessian_vector_product_matches_finite_differences():
    rng = np.random.default_rng(3)
    w1, w2, inputs = rng.normal(size=(4, 3)), rng.normal(size=(1, 4)), rng.normal(size=(5, 3))
    vector = rng.normal(size=(4, 3))

    def gradient(weights):
        w = mg.tensor(weights, requires_grad=True)
        hidden = mg.tanh(mg.tensor(inputs) @ w.T)
        loss = (hidden @ mg.tensor(w2).T).pow(2).mean()
        (g,) = mg.autograd.grad(loss, w, create_graph=True)
        return w, g

    w, g = gradient(w1)
    (hvp,) = mg.autograd.grad((g * mg.tensor(vector)).sum(), w)
    eps = 1e-6
    numeric = (gradient(w1 + eps * vector)[1].numpy() - gradient(w1 - eps * vector)[1].numpy()) / (
        2 * eps
    )
    np.testing.assert_allclose(hvp.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_backward_create_graph_gives_grad_a_graph():
    x = mg.tensor([0.5, 2.0], dtype=mg.float64, requires_grad=True)
    (x**3).sum().backward(create_graph=True)
    assert x.grad.grad_fn is not None
    np.testing.assert_allclose(x.grad.numpy(), [0.75, 12.0])
    first = x.grad
    x.grad = None
    first.sum().backward()  # d/dx sum(3 x^2) = 6 x
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])


def test_autograd_backward_create_graph_and_grad_outputs_with_a_graph():
    x = mg.tensor([1.0, -2.0], dtype=mg.float64, requires_grad=True)
    u = mg.tensor([0.0, 0.0], dtype=mg.float64, requires_grad=True)
    (vjp,) = mg.autograd.grad(x * x * x, x, grad_outputs=u, create_graph=True)  # 3 x^2 u
    (jvp,) = mg.autograd.grad((vjp * mg.tensor([1.0, 1.0], dtype=mg.float64)).sum(), u)
    np.testing.assert_allclose(jvp.numpy(), [3.0, 12.0])
    mg.autograd.backward([(x * x).sum()], create_graph=True)
    assert x.grad.grad_fn is not None
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0])


def test_wgan_gradient_penalty_step_matches_torch():
    rng = np.random.default_rng(4)
    real, fake = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    mix = rng.uniform(size=(6, 1))
    critic = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1)).double()
    torch_critic = torch.nn.Sequential(
        torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)
    ).double()
    with torch.no_grad():
        for ours, theirs in zip(critic.parameters(), torch_critic.parameters()):
            theirs.copy_(torch.tensor(ours.numpy()))

    def penalty_step(lib, model, tensor):
        between = tensor(mix * real + (1 - mix) * fake).requires_grad_(True)
        score = model(between)
        (g,) = lib.autograd.grad(score.sum(), between, create_graph=True)
        penalty = ((g.pow(2).sum(1) + 1e-12).sqrt() - 1).pow(2).mean()
        loss = model(tensor(fake)).mean() - model(tensor(real)).mean() + 10 * penalty
        loss.backward()
        return float(loss.item()), [p.grad.numpy().copy() for p in model.parameters()]

    ours = penalty_step(mg, critic, lambda a: mg.tensor(a))
    theirs = penalty_step(torch, torch_critic, lambda a: torch.tensor(a))
    np.testing.assert_allclose(ours[0], theirs[0], **TOLERANCE)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, **TOLERANCE)


# -- refusals and what stays as it was ------------------------------------------------------


def test_an_op_without_a_recorded_derivative_refuses_naming_itself():
    x = mg.tensor([0.5, 1.5], dtype=mg.float64, requires_grad=True)
    y = mg.lgamma(x).sum()
    with pytest.raises(NotImplementedError, match=r"Lgamma .*docs/higher-order\.md"):
        mg.autograd.grad(y, x, create_graph=True)
    (g,) = mg.autograd.grad(mg.lgamma(x).sum(), x)  # first order is unaffected
    assert g.grad_fn is None


def test_a_function_of_ones_own_refuses_create_graph():
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    x = mg.tensor([1.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="Double has no recorded derivative"):
        Double.apply(x).sum().backward(create_graph=True)


def test_one_array_as_two_different_tensors_is_refused():
    x = mg.tensor([1.0, 2.0], dtype=mg.float64, requires_grad=True)
    y = (x * x.detach()).sum()
    with pytest.raises(RuntimeError, match=r"x\.clone\(\)"):
        mg.autograd.grad(y, x, create_graph=True)
    y = (x * x * x.detach().clone()).sum()
    (g,) = mg.autograd.grad(y, x, create_graph=True)
    (h,) = mg.autograd.grad(g.sum(), x)
    np.testing.assert_array_equal(h.numpy(), [2.0, 4.0])  # 2 c: the clone is a constant


def test_a_freed_graph_refuses_create_graph():
    x = mg.tensor([1.0, 2.0], dtype=mg.float64, requires_grad=True)
    y = (x.exp()).sum()
    mg.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="second time"):
        mg.autograd.grad(y, x, create_graph=True)


def test_first_order_gradients_stay_plain_arrays():
    x = mg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = mg.autograd.grad((x * x).sum(), x)
    (x * x).sum().backward()
    assert g.grad_fn is None and not g.requires_grad
    assert x.grad.grad_fn is None and not x.grad.requires_grad


def _ce(lib, F, x):
    target = (torch.tensor if lib is torch else mg.tensor)(np.array([1, 0, 3]))
    return F.cross_entropy(x * x, target) + F.cross_entropy(x, target, ignore_index=0)


def _nll(lib, F, x):
    target = (torch.tensor if lib is torch else mg.tensor)(np.array([1, 0, 3]))
    weight = (torch.tensor if lib is torch else mg.tensor)(np.array([0.5, 1.0, 2.0, 1.5]))
    return F.nll_loss(F.log_softmax(x * x, 1), target, weight=weight)


def _embedding(lib, F, x):
    ids = (torch.tensor if lib is torch else mg.tensor)(np.array([[0, 2], [2, 1]]))
    return F.embedding(ids, x * x) ** 2 + F.embedding(ids, x, padding_idx=2) ** 3


OPS.update(
    {
        "cross_entropy": (_ce, (3, 4), "any"),
        "nll_loss": (_nll, (3, 4), "any"),
        "embedding": (_embedding, (3, 4), "any"),
    }
)


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss", "embedding"])
def test_second_and_third_derivatives_of_fused_ops_match_torch(name):
    test_second_and_third_derivatives_match_torch(name)
