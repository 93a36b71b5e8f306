"""End to end: a 2-layer MLP (plain tensors, no nn, no optim) learns two interleaved spirals with
hand-written minibatch SGD, and classifies held-out points with > 95% accuracy."""

import numpy as np

import minigrad as mg


def two_spirals(points_per_arm, rng, noise=0.03):
    """Two arms of 1.5 turns each, one the other rotated by 180 degrees; radius up to 1."""
    # sqrt: even density along the arm
    turn = np.sqrt(rng.uniform(0, 1, points_per_arm)) * 3 * np.pi
    arm = np.stack([turn * np.cos(turn), turn * np.sin(turn)], axis=1) / (3 * np.pi)
    points = np.concatenate([arm, -arm]) + rng.normal(scale=noise, size=(2 * points_per_arm, 2))
    labels = np.repeat(np.array([0, 1], dtype=np.int64), points_per_arm)
    return mg.tensor(points.astype(np.float32)), mg.tensor(labels)


class TwoLayerMLP:
    """logits = tanh(x @ w1 + b1) @ w2 + b2, with weights as plain leaf tensors."""

    def __init__(self, inputs, hidden, classes):
        # a wide first layer (std 3) turns the plane into many oriented tanh edges: a spiral
        # needs features that change within a fraction of a turn
        self.w1 = (mg.randn(inputs, hidden) * 3.0).requires_grad_()
        self.b1 = (mg.randn(hidden) * 1.5).requires_grad_()
        self.w2 = (mg.randn(hidden, classes) / np.sqrt(hidden)).requires_grad_()
        self.b2 = mg.zeros(classes, requires_grad=True)

    def parameters(self):
        return [self.w1, self.b1, self.w2, self.b2]

    def __call__(self, x):
        return (x @ self.w1 + self.b1).tanh() @ self.w2 + self.b2


def accuracy(model, points, labels):
    with mg.no_grad():
        return float((model(points).argmax(1) == labels).numpy().mean())


def sgd_step(parameters, lr):
    for p in parameters:
        p.data -= lr * p.grad.data
        p.grad = None


def test_mlp_learns_two_spirals():
    rng = np.random.default_rng(0)
    mg.manual_seed(0)
    train_points, train_labels = two_spirals(200, rng)
    test_points, test_labels = two_spirals(200, rng)
    model = TwoLayerMLP(2, 64, 2)
    assert 0.3 < accuracy(model, test_points, test_labels) < 0.7  # chance before training

    losses = []
    for step in range(2500):
        batch = rng.integers(0, len(train_labels), size=64)
        loss = mg.cross_entropy(model(train_points[batch]), train_labels[batch])
        loss.backward()
        sgd_step(model.parameters(), lr=0.5)
        losses.append(loss.item())

    assert all(p.dtype == np.float32 for p in model.parameters())
    assert np.mean(losses[-100:]) < 0.1 < np.mean(losses[:100])
    assert accuracy(model, train_points, train_labels) > 0.97
    assert accuracy(model, test_points, test_labels) > 0.95


def test_mlp_gradients_match_finite_differences():
    # the same model, tiny, in float64: the whole forward/backward pass checked at once
    rng = np.random.default_rng(1)
    mg.manual_seed(1)
    model = TwoLayerMLP(2, 5, 3)
    points = rng.normal(size=(6, 2))
    labels = np.array([0, 2, 1, 1, 0, 2])

    def loss(w1, b1, w2, b2):
        return mg.cross_entropy((mg.tensor(points) @ w1 + b1).tanh() @ w2 + b2, labels)

    assert mg.gradcheck(loss, [p.numpy() for p in model.parameters()])
