"""Gradients of gradients with create_graph=True (docs/higher-order.md): Newton's method on a
1-d function, a Hessian-vector product checked against finite differences, a WGAN-GP gradient
penalty step and one MAML step. Run: python examples/higher_order.py"""

import numpy as np

import minigrad as mg
from minigrad import nn


def newton(x0=2.0, steps=8):
    """Minimise f(x) = x^4 - 2 x^2 with x <- x - f'(x) / f''(x) (DeZero's example)."""
    x = mg.tensor(x0, dtype=mg.float64, requires_grad=True)
    for _ in range(steps):
        (first,) = mg.autograd.grad(x**4 - 2 * x**2, x, create_graph=True)
        (second,) = mg.autograd.grad(first, x)
        x = (x - first / second).detach().requires_grad_(True)
    return float(x.item())


def hessian_vector_product(seed=0):
    """H v of a tiny network's loss, and its finite-difference estimate."""
    rng = np.random.default_rng(seed)
    inputs, weights, vector = rng.normal(size=(8, 3)), rng.normal(size=(3,)), rng.normal(size=3)

    def gradient(values, create_graph):
        w = mg.tensor(values, requires_grad=True)
        loss = mg.tanh(mg.tensor(inputs) @ w).pow(2).mean()
        return w, mg.autograd.grad(loss, w, create_graph=create_graph)[0]

    w, g = gradient(weights, True)
    (hvp,) = mg.autograd.grad((g * mg.tensor(vector)).sum(), w)
    eps = 1e-6
    plus, minus = (
        gradient(weights + eps * vector, False)[1],
        gradient(weights - eps * vector, False)[1],
    )
    return hvp.numpy(), (plus.numpy() - minus.numpy()) / (2 * eps)


def gradient_penalty_step(seed=0):
    """One critic step of WGAN-GP: the penalty (|grad D(x_hat)| - 1)^2 in the loss."""
    mg.manual_seed(seed)
    critic = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = mg.optim.Adam(critic.parameters(), lr=1e-3)
    real, fake = mg.randn(32, 2) + 2.0, mg.randn(32, 2)
    mix = mg.rand(32, 1)
    between = (mix * real + (1 - mix) * fake).requires_grad_(True)
    (g,) = mg.autograd.grad(critic(between).sum(), between, create_graph=True)
    penalty = ((g.pow(2).sum(1) + 1e-12).sqrt() - 1).pow(2).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return float(loss.item())


def maml_step(seed=0, inner_lr=0.1):
    """One MAML meta-gradient: adapt w on a task's support set, differentiate the query loss
    through the adaptation (the inner gradient has a graph)."""
    rng = np.random.default_rng(seed)
    w = mg.tensor(rng.normal(size=(1,)), dtype=mg.float64, requires_grad=True)
    support, query = rng.normal(size=(10, 1)), rng.normal(size=(10, 1))
    slope = 3.0

    def loss(weight, x):
        return ((mg.tensor(x) * weight - mg.tensor(x) * slope) ** 2).mean()

    (inner,) = mg.autograd.grad(loss(w, support), w, create_graph=True)
    adapted = w - inner_lr * inner
    loss(adapted, query).backward()
    return w.grad.numpy()


if __name__ == "__main__":
    print(f"Newton's method on x^4 - 2x^2 from 2.0: x = {newton():.10f} (the minimum is at 1)")
    hvp, numeric = hessian_vector_product()
    print(f"Hessian-vector product {np.round(hvp, 6)}, finite differences {np.round(numeric, 6)}")
    print(f"WGAN-GP critic step: loss {gradient_penalty_step():.4f}")
    print(f"MAML meta-gradient: {maml_step()}")
