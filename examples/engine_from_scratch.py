"""A tensor autograd engine from scratch: numpy only, one file, read top to bottom.

In order: `sum_to` (undoing broadcasting), `Tensor` (an array, its gradient, the node that
made it) and its `backward` (the walk), `topological_order`, `Function` (forward and backward
side by side; the node is the `ctx` they share), the ops with their derivatives (the softmax's
is derived in its docstring), the chapter's attention example ("cat sleeps it") and last a
small MLP trained on two moons: `python examples/engine_from_scratch.py`.

minigrad's engine (minigrad/engine/) has the same shape, file for file, with more in it: Tensor
in engine/tensor.py, Function in engine/function.py, `topological_order`, `sum_to` and the walk
in engine/walk.py, `leaf.grad += ...` in engine/grad_sinks.py, and the ops in minigrad/ops/
(ops/unary.py writes out Exp and Tanh as here). tests/examples/test_engine_from_scratch.py
checks the gradients here against minigrad's.
"""

import numpy as np


def sum_to(grad, shape):
    """`grad` (a shape that `shape` broadcasts to) summed down to `shape`: an input broadcast
    from (3,) to (2, 3) was used twice per entry, so its gradient adds up both rows."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra)))  # axes broadcasting put in front
    stretched = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True).reshape(shape)


class Tensor:
    """A float64 array, with `node` the Function application that made it (None for a leaf:
    an input or a parameter) and `grad`, filled by `backward()` on leaves that require it."""

    def __init__(self, data, requires_grad=False, node=None):
        self.data = np.asarray(data, dtype=np.float64)
        self.requires_grad = requires_grad
        self.node = node
        self.grad = None

    def backward(self):
        """Add d self / d leaf to `.grad` of every leaf this scalar depends on. Each tensor is
        visited after all that used it: its gradient is complete before it is passed on."""
        grads = {id(self): np.ones_like(self.data)}  # d self / d self = 1
        for tensor in reversed(topological_order(self)):
            grad = grads.pop(id(tensor), None)
            if grad is None:  # a constant: no gradient reaches it
                continue
            if tensor.node is None:  # a leaf: keep the gradient (added, as torch does)
                tensor.grad = grad if tensor.grad is None else tensor.grad + grad
                continue
            node = tensor.node
            for x, g in zip(node.inputs, node.backward(node, grad)):
                if x.requires_grad:  # constants need no gradient
                    g = sum_to(g, x.data.shape)
                    grads[id(x)] = grads[id(x)] + g if id(x) in grads else g


def topological_order(root):
    """`root` and every tensor it was computed from, each after the tensors it was made from.
    A stack, not recursion: a graph thousands of ops deep must not hit the recursion limit."""
    order, visited, stack = [], set(), [(root, False)]
    while stack:
        tensor, inputs_done = stack.pop()
        if inputs_done:  # all it was made from is already in `order`
            order.append(tensor)
        elif id(tensor) not in visited:  # (a tensor used twice is on the stack twice)
            visited.add(id(tensor))
            stack.append((tensor, True))  # comes back off the stack after all its inputs
            stack.extend((x, False) for x in (tensor.node.inputs if tensor.node else ()))
    return order


class Function:
    """One op: static `forward(ctx, *arrays, **settings)` -> array, `backward(ctx, grad)` ->
    a gradient per input (broadcast shape allowed). Each application is one instance: the
    graph node, and the `ctx` in which forward saves what backward needs."""

    @classmethod
    def apply(cls, *inputs, **settings):
        ctx = cls()
        ctx.inputs = tuple(x if isinstance(x, Tensor) else Tensor(x) for x in inputs)
        output = cls.forward(ctx, *(x.data for x in ctx.inputs), **settings)
        needs_grad = any(x.requires_grad for x in ctx.inputs)
        # Only record the node when a gradient can flow through it: constants make no graph.
        return Tensor(output, requires_grad=needs_grad, node=ctx if needs_grad else None)

    def save_for_backward(self, *arrays):
        self.saved = arrays


class Add(Function):
    """z = x + y (broadcast); dz/dx = dz/dy = 1, so both get the gradient as it is."""

    @staticmethod
    def forward(ctx, x, y):
        return x + y

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class Mul(Function):
    """z = x * y (broadcast); dz/dx = y, dz/dy = x."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved
        return grad * y, grad * x


class MatMul(Function):
    """Z = X @ W for X (n, k), W (k, m): Z[i, j] = sum_k X[i, k] W[k, j], so X[i, k] reaches
    every Z[i, :] through W[k, :]: dL/dX = dL/dZ @ W^T and likewise dL/dW = X^T @ dL/dZ."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved
        return grad @ w.T, x.T @ grad


class Div(Function):
    """z = x / y (broadcast); dz/dx = 1 / y, dz/dy = -x / y^2 = -z / y."""

    @staticmethod
    def forward(ctx, x, y):
        z = x / y
        ctx.save_for_backward(y, z)
        return z

    @staticmethod
    def backward(ctx, grad):
        y, z = ctx.saved
        return grad / y, -grad * z / y


class Transpose(Function):
    """Y = X^T (2-D); each entry only moves, so the gradient moves back: dL/dX = (dL/dY)^T."""

    @staticmethod
    def forward(ctx, x):
        return x.T

    @staticmethod
    def backward(ctx, grad):
        return (grad.T,)


class Exp(Function):
    """y = e^x; dy/dx = e^x = y, so forward saves its output, not its input."""

    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return (grad * y,)


class Tanh(Function):
    """y = tanh x; dy/dx = 1 - tanh^2 x = 1 - y^2."""

    @staticmethod
    def forward(ctx, x):
        y = np.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved
        return (grad * (1 - y * y),)


class Softmax(Function):
    """s = softmax(z) over the last axis: s_i = e^(z_i - m) / sum_j e^(z_j - m), m = max_j z_j
    (subtracting m changes nothing but keeps e^ from overflowing). ds_i/dz_k = s_i (1[i=k] -
    s_k), so for the gradient g = dL/ds: dL/dz_k = sum_i g_i s_i (1[i=k] - s_k) =
    s_k (g_k - sum_i g_i s_i), one vector product: the Jacobian never has to be built."""

    @staticmethod
    def forward(ctx, z):
        e = np.exp(z - z.max(axis=-1, keepdims=True))
        s = e / e.sum(axis=-1, keepdims=True)
        ctx.save_for_backward(s)
        return s

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved
        return (s * (grad - (grad * s).sum(axis=-1, keepdims=True)),)


class Sum(Function):
    """y = sum of x over `axis` (None: all); dy/dx = 1 for every summed entry, so x's gradient
    is y's copied back over the summed axes (put back as size 1 unless keepdims kept them)."""

    @staticmethod
    def forward(ctx, x, axis=None, keepdims=False):
        ctx.input_shape, ctx.axis, ctx.keepdims = x.shape, axis, keepdims
        return x.sum(axis=axis, keepdims=keepdims)

    @staticmethod
    def backward(ctx, grad):
        if ctx.axis is not None and not ctx.keepdims:
            grad = np.expand_dims(grad, ctx.axis)
        return (grad * np.ones(ctx.input_shape),)


# Operators and methods on Tensor, one line per op (as minigrad's ops/__init__.py attaches
# them). A number on either side becomes a constant Tensor in Function.apply.
Tensor.__add__ = Tensor.__radd__ = lambda self, other: Add.apply(self, other)
Tensor.__mul__ = Tensor.__rmul__ = lambda self, other: Mul.apply(self, other)
Tensor.__neg__ = lambda self: self * -1.0
Tensor.__sub__ = lambda self, other: self + other * -1.0
Tensor.__rsub__ = lambda self, other: other + self * -1.0
Tensor.__truediv__ = lambda self, other: Div.apply(self, other)
Tensor.__rtruediv__ = lambda self, other: Div.apply(other, self)
Tensor.__matmul__ = lambda self, other: MatMul.apply(self, other)
Tensor.T = property(lambda self: Transpose.apply(self))
Tensor.softmax = lambda self: Softmax.apply(self)
Tensor.exp = lambda self: Exp.apply(self)
Tensor.tanh = lambda self: Tanh.apply(self)
Tensor.sum = lambda self, axis=None, keepdims=False: Sum.apply(self, axis=axis, keepdims=keepdims)
Tensor.mean = lambda self: self.sum() * (1.0 / self.data.size)


# ---------------------------------------------------------------------------------------
# The chapter's attention with it: "cat sleeps it", the query of "it" against three keys.
CHAPTER_WORDS = ("cat", "sleeps", "it")
CHAPTER_X = np.array([[3.0, 0.0], [0.0, 3.0], [1.0, 1.0]])  # one row per word
CHAPTER_QUERY_WEIGHT = np.array([[0.0, 1.0], [2.0, -1.0]])  # q_it = [1, 1] W_Q = [2, 0]


def self_attention(x, query_weight, key_weight, value_weight):
    """softmax(Q K^T / sqrt(d)) V with Q = X W_Q, K = X W_K, V = X W_V: (weights, outputs)."""
    queries, keys, values = x @ query_weight, x @ key_weight, x @ value_weight
    weights = (queries @ keys.T / np.sqrt(x.data.shape[-1])).softmax()
    return weights, weights @ values


def chapter_attention():
    """The weights of "it" ([0.93, 0.01, 0.06]: it looks at cat), and the gradient of its
    output's first number with respect to W_Q, W_K and W_V (keys = values = the words)."""
    weights = [Tensor(w, requires_grad=True) for w in (CHAPTER_QUERY_WEIGHT, np.eye(2), np.eye(2))]
    attention, outputs = self_attention(Tensor(CHAPTER_X), *weights)
    (outputs * Tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]])).sum().backward()
    return attention.data[2], [w.grad for w in weights]


# ---------------------------------------------------------------------------------------
# Training a small MLP with it: two interleaved half circles, told apart by a 2-16-16-1 net.


def make_moons(count, noise, rng):
    """Points (count, 2) on two interleaved half circles, and labels (count, 1): +1 on the
    upper one, -1 on the lower one (shifted right by 1 and down by 0.5)."""
    angle, upper = rng.uniform(0, np.pi, count), rng.random(count) < 0.5
    x = np.where(upper, np.cos(angle), 1 - np.cos(angle))
    y = np.where(upper, np.sin(angle), 0.5 - np.sin(angle))
    points = np.stack([x, y], axis=1) + rng.normal(0, noise, size=(count, 2))
    return points, np.where(upper, 1.0, -1.0)[:, None]


def mlp(layers, points):
    """Scores (count, 1) for points (count, 2): tanh hidden layers, a linear last layer."""
    hidden = Tensor(points)
    for weight, bias in layers[:-1]:
        hidden = (hidden @ weight + bias).tanh()
    weight, bias = layers[-1]
    return hidden @ weight + bias


def train(steps=600, learning_rate=0.07, count=200, seed=0):
    """Full-batch gradient descent of a 2-16-16-1 MLP on two moons; returns (the loss at each
    step, the final accuracy)."""
    rng = np.random.default_rng(seed)
    points, labels = make_moons(count, noise=0.1, rng=rng)
    sizes = [2, 16, 16, 1]  # weights ~ N(0, 1/fan_in): tanh starts unsaturated
    layers = [
        (Tensor(rng.normal(0, n**-0.5, (n, m)), requires_grad=True), Tensor(np.zeros(m), True))
        for n, m in zip(sizes[:-1], sizes[1:])
    ]
    parameters = [p for layer in layers for p in layer]
    losses = []
    for _ in range(steps):
        error = mlp(layers, points) - labels
        loss = (error * error).mean()  # squared error
        for p in parameters:
            p.grad = None  # backward adds to .grad: start each step from nothing
        loss.backward()
        for p in parameters:
            p.data -= learning_rate * p.grad
        losses.append(float(loss.data))
    accuracy = float(np.mean(np.sign(mlp(layers, points).data) == labels))
    return losses, accuracy


if __name__ == "__main__":
    weights_of_it = chapter_attention()[0]
    print("'it' attends:", ", ".join(f"{w} {a:.4f}" for w, a in zip(CHAPTER_WORDS, weights_of_it)))
    losses, accuracy = train()
    for step in range(0, len(losses), 100):
        print(f"step {step:4d}  loss {losses[step]:.4f}")
    print(f"final loss {losses[-1]:.4f}  accuracy {accuracy:.1%}")
