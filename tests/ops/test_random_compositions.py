"""Random op compositions against PyTorch: values and gradients, float64 (1e-6) and float32 (1e-4).

Each case grows a random expression tree (seeded) that ends in a tensor of a chosen shape; every
node picks an op whose output has the shape its parent asked for and asks its children for the
shapes that op needs, so broadcasting, batched matmul, reductions, indexing and joins meet in
arbitrary orders. The same tree is then run in minigrad and in torch, and the output and the
gradient of every leaf are compared.
"""

import numpy as np
import pytest

import minigrad as mg
from parity import assert_close

torch = pytest.importorskip("torch")

CASES = 40


# -- two backends with one vocabulary -----------------------------------------------------
# Tensor methods (+, @, .exp(), .sum(d), .gather(d, i), x[i], ...) have the same names in both;
# what differs (making leaves and constants, free functions) goes through these classes.


class Minigrad:
    def __init__(self, dtype):
        self.dtype = dtype

    def leaf(self, array):
        return mg.tensor(array.astype(self.dtype), requires_grad=True)

    def const(self, array):
        return mg.tensor(np.asarray(array).astype(self.dtype))

    def index(self, array):
        return mg.tensor(array)

    def where(self, condition, x, y):
        return mg.where(condition, x, y)

    def cat(self, tensors, dim):
        return mg.cat(tensors, dim)

    def stack(self, tensors, dim):
        return mg.stack(tensors, dim)

    def masked_softmax(self, scores, mask, scale):
        return mg.masked_softmax(scores, mask, scale)

    def cross_entropy(self, logits, target):
        return mg.cross_entropy(logits, target)

    def numpy(self, t):
        return t.numpy()


class Torch:
    def __init__(self, dtype):
        self.dtype = dtype

    def leaf(self, array):
        return torch.tensor(array.astype(self.dtype), requires_grad=True)

    def const(self, array):
        return torch.tensor(np.asarray(array).astype(self.dtype))

    def index(self, array):
        return torch.from_numpy(np.asarray(array))

    def where(self, condition, x, y):
        return torch.where(condition, x, y)

    def cat(self, tensors, dim):
        return torch.cat(tensors, dim)

    def stack(self, tensors, dim):
        return torch.stack(tensors, dim)

    def masked_softmax(self, scores, mask, scale):
        return torch.softmax((scores * scale).masked_fill(~mask, -1e9), -1)

    def cross_entropy(self, logits, target):
        return torch.nn.functional.cross_entropy(logits, target)

    def numpy(self, t):
        return t.detach().numpy()


# -- ops that keep the shape: kept bounded so that deep trees stay in float32's range -----

UNARY = {
    "neg": lambda x: -x,
    "exp": lambda x: x.tanh().exp(),
    "log": lambda x: (x * x + 0.5).log(),
    "sqrt": lambda x: (x * x + 0.1).sqrt(),
    "abs": lambda x: x.abs(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: x.relu(),
    "pow_scalar": lambda x: (x.tanh() + 2) ** -1.5,
    "rpow": lambda x: 2 ** x.tanh(),
    "rsub": lambda x: 2 - x,
    "rdiv": lambda x: 2 / (x * x + 1),
    "scale": lambda x: x / 3 * 2,
    "sin": lambda x: x.sin(),
    "erf": lambda x: x.erf(),
    "rsqrt": lambda x: (x * x + 0.5).rsqrt(),
    "square": lambda x: x.tanh().square(),
    "log1p": lambda x: (x * x).log1p(),
    "expm1": lambda x: x.tanh().expm1(),
    "clamp": lambda x: x.clamp(-0.5, 0.5),
}

# fmt: off
REDUCTIONS = [
    "sum", "mean", "var", "max", "min", "sum_keepdim",
    "sum_two_dims", "amax", "std", "logsumexp", "norm", "prod",
]
# fmt: on

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / (b * b + 0.5),
    "pow": lambda a, b: (a * a + 0.5) ** b.tanh(),
}


class Expression:
    """A random expression tree with output shape `shape`, built once, run on any backend."""

    def __init__(self, seed, budget=16):
        self.rng = np.random.default_rng(seed)
        self.leaves = []  # float64 arrays; each backend makes its own leaf tensors from them
        self.kinds = set()  # which ops this tree uses (for the coverage test)
        self.budget = self.initial_budget = budget  # how many more op nodes may be added
        self.shape = self.random_shape()
        self.run, self.text = self.build(self.shape, depth=6)

    # -- shapes ---------------------------------------------------------------------------
    def random_shape(self):
        ndim = int(self.rng.integers(0, 4))
        return tuple(int(s) for s in self.rng.integers(1, 5, size=ndim))

    def reduced(self, shape):
        """A shape that broadcasts to `shape`: some leading dims dropped, some dims set to 1."""
        drop = int(self.rng.integers(0, len(shape) + 1))
        return tuple(1 if self.rng.random() < 0.3 else s for s in shape[drop:])

    def size(self):
        return int(self.rng.integers(2, 5))

    # -- the tree -------------------------------------------------------------------------
    def leaf(self, shape):
        if shape and self.rng.random() < 0.25:  # a smaller leaf expanded to the shape
            small = tuple(1 if self.rng.random() < 0.5 else s for s in shape)
            number = self.new_leaf(small)
            self.kinds.add("expand")
            return (lambda B, L: L[number].expand(*shape)), f"x{number}{list(small)}.expand{shape}"
        number = self.new_leaf(shape)
        return (lambda B, L: L[number]), f"x{number}{list(shape)}"

    def new_leaf(self, shape):
        self.leaves.append(self.rng.normal(size=shape))
        return len(self.leaves) - 1

    def build(self, shape, depth):
        is_root = not self.leaves and self.budget == self.initial_budget
        if depth == 0 or self.budget <= 0 or (not is_root and self.rng.random() < 0.1):
            return self.leaf(shape)
        self.budget -= 1
        makers = (
            [(name, self.unary) for name in UNARY]
            + [(name, self.binary) for name in BINARY]
            + [
                (name, getattr(self, name))
                for name in (
                    "matmul",
                    "softmax",
                    "log_softmax",
                    "where",
                    "masked_fill",
                    "reshape",
                    "flip",
                )
            ]
        )
        if len(shape) < 4:  # ops whose input has more dims than their output
            makers += [(name, self.reduction) for name in REDUCTIONS] + [("squeeze", self.squeeze)]
        if len(shape) >= 1:
            makers += [
                (name, getattr(self, name))
                for name in (
                    "index",
                    "bool_mask",
                    "cat",
                    "stack",
                    "gather",
                    "masked_softmax",
                    "unsqueeze",
                )
            ]
        if len(shape) >= 2:
            makers += [("transpose", self.transpose), ("permute", self.permute)]
        if shape == ():
            makers += [("cross_entropy", self.cross_entropy)] * 3
        name, maker = makers[int(self.rng.integers(len(makers)))]
        return maker(shape, depth - 1, name)

    # -- ops: each asks its children for the shapes it needs and records its kind ----------
    def unary(self, shape, depth, name):
        op = UNARY[name]
        x, text = self.build(shape, depth)
        self.kinds.add(name)
        return (lambda B, L: op(x(B, L))), f"{name}({text})"

    def binary(self, shape, depth, name):
        op = BINARY[name]
        shapes = [shape, self.reduced(shape)]
        if self.rng.random() < 0.5:
            shapes.reverse()
        (a, text_a), (b, text_b) = self.build(shapes[0], depth), self.build(shapes[1], depth)
        self.kinds.add(name)
        return (lambda B, L: op(a(B, L), b(B, L))), f"{name}({text_a}, {text_b})"

    def matmul(self, shape, depth, name):
        k = self.size()
        if len(shape) == 0:
            shape_a, shape_b = (k,), (k,)
        elif len(shape) == 1:
            shape_a, shape_b = (
                ((k,), (k,) + shape) if self.rng.random() < 0.5 else (shape + (k,), (k,))
            )
        else:
            batch, (n, m) = shape[:-2], shape[-2:]
            batch_a, batch_b = batch, self.reduced(batch)
            if self.rng.random() < 0.5:
                batch_a, batch_b = batch_b, batch_a
            shape_a, shape_b = batch_a + (n, k), batch_b + (k, m)
        (a, text_a), (b, text_b) = self.build(shape_a, depth), self.build(shape_b, depth)
        self.kinds.add(name)
        return (lambda B, L: a(B, L) @ b(B, L)), f"({text_a} @ {text_b})"

    def reduction(self, shape, depth, name):
        dim = int(self.rng.integers(0, len(shape) + 1))
        if name == "sum_keepdim" and 1 in shape:
            dim = shape.index(1)
            x, text = self.build(shape[:dim] + (self.size(),) + shape[dim + 1 :], depth)
            self.kinds.add(name)
            return (lambda B, L: x(B, L).sum(dim, keepdim=True)), f"{text}.sum({dim}, keepdim)"
        if name == "sum_two_dims":
            x, text = self.build(shape[:dim] + (self.size(), self.size()) + shape[dim:], depth)
            self.kinds.add(name)
            return (lambda B, L: x(B, L).sum((dim, dim + 1))), f"{text}.sum(({dim}, {dim + 1}))"
        source = shape[:dim] + (self.size(),) + shape[dim:]
        x, text = self.build(source, depth)
        if name in ("max", "min", "amax"):
            # distinct offsets break the ties that relu, expand and masked_fill make: both libraries
            # give a tie's gradient to the first index (max, min) or share it (amax), but rounding
            # that differs in the last bit could make them see different ties
            offsets = self.rng.permutation(int(np.prod(source))).reshape(source) * 0.01
            self.kinds.add(name)
            if name == "amax":
                return (
                    lambda B, L: (x(B, L) + B.const(offsets)).amax(dim)
                ), f"amax({text} + offsets, {dim})"
            return (
                (lambda B, L: getattr(x(B, L) + B.const(offsets), name)(dim).values),
                f"{name}({text} + offsets, {dim})",
            )
        if name == "norm":  # torch's first positional argument of norm is p
            self.kinds.add(name)
            return (lambda B, L: x(B, L).norm(dim=dim)), f"{text}.norm(dim={dim})"
        method = "sum" if name == "sum_keepdim" else name  # no size-1 dim to keep: a plain sum
        self.kinds.add(method)
        return (lambda B, L: getattr(x(B, L), method)(dim)), f"{text}.{method}({dim})"

    def softmax(self, shape, depth, name):
        if not shape:
            return self.unary(shape, depth, "tanh")
        dim = int(self.rng.integers(0, len(shape)))
        x, text = self.build(shape, depth)
        self.kinds.add(name)
        return (lambda B, L: getattr(x(B, L), name)(dim)), f"{name}({text}, {dim})"

    log_softmax = softmax

    def masked_softmax(self, shape, depth, name):
        mask = self.rng.random(self.reduced(shape[:-1]) + shape[-1:]) < 0.6
        mask[..., int(self.rng.integers(shape[-1]))] = True  # every row keeps a position
        scale = float(self.rng.uniform(0.3, 1.5))
        x, text = self.build(shape, depth)
        self.kinds.add(name)
        return (
            (lambda B, L: B.masked_softmax(x(B, L), B.index(mask), scale)),
            f"masked_softmax({text}, mask{list(mask.shape)}, {scale:.2f})",
        )

    def cross_entropy(self, shape, depth, name):
        rows, classes = self.size() + 1, self.size()
        target = self.rng.integers(0, classes, size=rows)
        x, text = self.build((rows, classes), depth)
        self.kinds.add(name)
        return (
            (lambda B, L: B.cross_entropy(x(B, L), B.index(target))),
            f"cross_entropy({text}, {target.tolist()})",
        )

    def where(self, shape, depth, name):
        condition = self.rng.random(self.reduced(shape)) < 0.5
        shapes = [shape, self.reduced(shape)]
        if self.rng.random() < 0.5:
            shapes.reverse()
        (a, text_a), (b, text_b) = self.build(shapes[0], depth), self.build(shapes[1], depth)
        self.kinds.add(name)
        return (
            (lambda B, L: B.where(B.index(condition), a(B, L), b(B, L))),
            f"where(cond{list(condition.shape)}, {text_a}, {text_b})",
        )

    def masked_fill(self, shape, depth, name):
        mask = self.rng.random(self.reduced(shape)) < 0.4
        fill = [-1.5, 0.0, 2.0][int(self.rng.integers(3))]
        x, text = self.build(shape, depth)
        self.kinds.add(name)
        return (
            (lambda B, L: x(B, L).masked_fill(B.index(mask), fill)),
            f"{text}.masked_fill(mask{list(mask.shape)}, {fill})",
        )

    def reshape(self, shape, depth, name):
        splittable = [d for d, s in enumerate(shape) if s == 4]
        # one dim of the target is two dims of the source
        if splittable and self.rng.random() < 0.5:
            dim = splittable[0]
            x, text = self.build(shape[:dim] + (2, 2) + shape[dim + 1 :], depth)
            self.kinds.add("flatten")
            return (lambda B, L: x(B, L).flatten(dim, dim + 1)), f"{text}.flatten({dim}, {dim + 1})"
        source = (int(np.prod(shape)),) if len(shape) != 1 else (1, shape[0])
        x, text = self.build(source, depth)
        self.kinds.add(name)
        return (lambda B, L: x(B, L).reshape(shape)), f"{text}.reshape{shape}"

    def flip(self, shape, depth, name):
        if not shape:
            return self.unary(shape, depth, "neg")
        dim = int(self.rng.integers(len(shape)))
        x, text = self.build(shape, depth)
        self.kinds.add(name)
        return (lambda B, L: x(B, L).flip((dim,))), f"{text}.flip({dim})"

    def transpose(self, shape, depth, name):
        i, j = sorted(self.rng.choice(len(shape), size=2, replace=False).tolist())
        source = list(shape)
        source[i], source[j] = source[j], source[i]
        x, text = self.build(tuple(source), depth)
        self.kinds.add(name)
        return (lambda B, L: x(B, L).transpose(i, j)), f"{text}.transpose({i}, {j})"

    def permute(self, shape, depth, name):
        order = self.rng.permutation(len(shape)).tolist()
        source = [0] * len(shape)
        for i, p in enumerate(order):
            source[p] = shape[i]
        x, text = self.build(tuple(source), depth)
        self.kinds.add(name)
        return (lambda B, L: x(B, L).permute(*order)), f"{text}.permute{tuple(order)}"

    def unsqueeze(self, shape, depth, name):
        if 1 not in shape:
            return self.squeeze(shape, depth, "squeeze")
        dim = shape.index(1)
        x, text = self.build(shape[:dim] + shape[dim + 1 :], depth)
        self.kinds.add(name)
        return (lambda B, L: x(B, L).unsqueeze(dim)), f"{text}.unsqueeze({dim})"

    def squeeze(self, shape, depth, name):
        dim = int(self.rng.integers(0, len(shape) + 1))
        x, text = self.build(shape[:dim] + (1,) + shape[dim:], depth)
        self.kinds.add(name)
        return (lambda B, L: x(B, L).squeeze(dim)), f"{text}.squeeze({dim})"

    def index(self, shape, depth, name):
        rows = shape[0]
        choice = int(self.rng.integers(4))
        self.kinds.add(name)
        if choice == 0:  # integer array with repeats
            source_rows = self.size()
            picks = self.rng.integers(0, source_rows, size=rows)
            x, text = self.build((source_rows,) + shape[1:], depth)
            return (lambda B, L: x(B, L)[B.index(picks)]), f"{text}[{picks.tolist()}]"
        if choice == 1:  # a slice
            x, text = self.build((rows + 2,) + shape[1:], depth)
            return (lambda B, L: x(B, L)[1 : rows + 1]), f"{text}[1:{rows + 1}]"
        if choice == 2:  # a step on the second dim (or a single int on a new first dim)
            if len(shape) >= 2:
                x, text = self.build((shape[0], 2 * shape[1]) + shape[2:], depth)
                return (lambda B, L: x(B, L)[:, ::2]), f"{text}[:, ::2]"
            x, text = self.build((3,) + shape, depth)
            return (lambda B, L: x(B, L)[1]), f"{text}[1]"
        picks = self.rng.integers(0, shape[-1] + 1, size=shape[-1])  # integer array on the last dim
        x, text = self.build(shape[:-1] + (shape[-1] + 1,), depth)
        return (lambda B, L: x(B, L)[..., B.index(picks)]), f"{text}[..., {picks.tolist()}]"

    def bool_mask(self, shape, depth, name):
        source_rows = shape[0] + int(self.rng.integers(1, 3))
        mask = np.zeros(source_rows, dtype=bool)
        mask[self.rng.choice(source_rows, size=shape[0], replace=False)] = True
        x, text = self.build((source_rows,) + shape[1:], depth)
        self.kinds.add(name)
        return (lambda B, L: x(B, L)[B.index(mask)]), f"{text}[{mask.astype(int).tolist()}]"

    def gather(self, shape, depth, name):
        dim = int(self.rng.integers(len(shape)))
        source = list(shape)
        source[dim] = self.size()
        picks = self.rng.integers(0, source[dim], size=shape)
        x, text = self.build(tuple(source), depth)
        self.kinds.add(name)
        return (
            lambda B, L: x(B, L).gather(dim, B.index(picks))
        ), f"{text}.gather({dim}, index{list(shape)})"

    def cat(self, shape, depth, name):
        dims = [d for d, s in enumerate(shape) if s >= 2]
        if not dims:
            return self.stack(shape, depth, "stack")
        dim = dims[int(self.rng.integers(len(dims)))]
        first = int(self.rng.integers(1, shape[dim]))
        parts = [
            self.build(shape[:dim] + (size,) + shape[dim + 1 :], depth)
            for size in (first, shape[dim] - first)
        ]
        self.kinds.add(name)
        return (
            (lambda B, L: B.cat([p(B, L) for p, _ in parts], dim)),
            f"cat([{', '.join(t for _, t in parts)}], {dim})",
        )

    def stack(self, shape, depth, name):
        dim = int(self.rng.integers(len(shape)))
        if shape[dim] > 3:
            return self.cat(shape, depth, "cat")
        parts = [self.build(shape[:dim] + shape[dim + 1 :], depth) for _ in range(shape[dim])]
        self.kinds.add(name)
        return (
            (lambda B, L: B.stack([p(B, L) for p, _ in parts], dim)),
            f"stack([{', '.join(t for _, t in parts)}], {dim})",
        )


def run(expression, backend, weights):
    """Value of the expression and the gradient of sum(value * weights) for every leaf."""
    leaves = [backend.leaf(array) for array in expression.leaves]
    out = expression.run(backend, leaves)
    (out * backend.const(weights)).sum().backward()
    grads = [
        np.zeros(a.shape) if leaf.grad is None else backend.numpy(leaf.grad)
        for a, leaf in zip(expression.leaves, leaves)
    ]
    return backend.numpy(out), grads


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("seed", range(CASES))
def test_random_composition_matches_torch(seed, dtype):
    expression = Expression(seed)
    weights = np.random.default_rng(10_000 + seed).uniform(0.5, 1.5, size=expression.shape)
    value, grads = run(expression, Minigrad(dtype), weights)
    torch_value, torch_grads = run(expression, Torch(dtype), weights)
    assert value.shape == tuple(torch_value.shape) == expression.shape
    assert value.dtype == dtype
    tolerance = "compositions"  # parity.TOLERANCES, by the dtype of torch's result
    assert_close(value, torch_value, tolerance, f"value of {expression.text}", scaled=True)
    for number, (grad, torch_grad) in enumerate(zip(grads, torch_grads)):
        assert grad.shape == torch_grad.shape
        assert_close(
            grad, torch_grad, tolerance, f"gradient of x{number} in {expression.text}", scaled=True
        )


def test_random_compositions_cover_every_op():
    used = set()
    for seed in range(CASES):
        used |= Expression(seed).kinds
    expected = (
        set(UNARY)
        | set(BINARY)
        | set(REDUCTIONS)
        | {
            "matmul",
            "sum_keepdim",
            "sum_two_dims",
            "softmax",
            "log_softmax",
            "masked_softmax",
            "cross_entropy",
            "where",
            "masked_fill",
            "reshape",
            "flatten",
            "flip",
            "transpose",
            "permute",
            "unsqueeze",
            "squeeze",
            "expand",
            "index",
            "bool_mask",
            "gather",
            "cat",
            "stack",
        }
    )
    assert expected - used == set()


# -- result dtypes of mixed operands ------------------------------------------------------
