"""The ops that tests/ops/test_parity_table.py runs in minigrad and in PyTorch, as a table.

Each Case is (name, call, input shapes, dtypes, values). The call is written once for both
libraries: `call(B, p, *tensors)` where B is the module (`minigrad` or `torch`: the names are
the same) and p holds what the call needs besides its tensors (a dim, dims, keepdim, index
arrays), drawn for the first input's shape. A Draw makes every choice, from hypothesis (the
parity test explores) or from a seeded generator (the float64 gradcheck takes one example).
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np
from hypothesis import strategies as st

FLOATS = ("float32", "float64")
NUMERIC = FLOATS + ("int64",)
ALL = NUMERIC + ("bool",)


class Draw:
    """Choices for one example: from hypothesis data, or from a numpy generator seeded by `seed`."""

    def __init__(self, data=None, seed=0):
        self.data, self.rng = data, np.random.default_rng(seed)

    def integer(self, low, high):  # both ends included
        if self.data is not None:
            return self.data.draw(st.integers(low, high))
        return int(self.rng.integers(low, high + 1))

    def choice(self, options):
        return options[self.integer(0, len(options) - 1)]

    def side(self, min_side, max_side):
        """A size, 0 only one time in six (an empty dim is an edge case, not the rule)."""
        if min_side == 0 and self.integer(0, 5):
            min_side = 1
        return self.integer(min_side, max(min_side, max_side))

    def shape(self, min_dims=0, max_dims=3, min_side=0, max_side=4):
        return tuple(self.side(min_side, max_side) for _ in range(self.integer(min_dims, max_dims)))


class Params:
    """A dim, a second dim, dims, keepdim and a seed for index arrays, drawn for `shape`."""

    def __init__(self, draw, shape):
        self.shape, size = shape, max(len(shape), 1)
        self.dim, self.dim2 = draw.integer(-size, size - 1), draw.integer(-size, size - 1)
        picked = [d for d in range(len(shape)) if draw.integer(0, 1)]
        self.dims = tuple(d - len(shape) if draw.integer(0, 1) else d for d in picked)
        self.keepdim = bool(draw.integer(0, 1))
        self.option = draw.integer(0, 3)
        self.seed = draw.integer(0, 2**16)

    @property
    def rng(self):  # a fresh generator on every use: both libraries see the same arrays
        return np.random.default_rng(self.seed)

    def size(self, shape=None):
        """The size of dim p.dim of shape (1 for a 0-d shape)."""
        shape = self.shape if shape is None else shape
        return shape[self.dim] if shape else 1

    def ints(self, count, low, high):
        return [int(v) for v in self.rng.integers(low, high + 1, size=count)]

    def index(self, high, shape):
        """Integers in [0, high) (an empty array if the shape has no elements)."""
        return self.rng.integers(0, max(high, 1), size=shape)

    def partition(self, total):
        """Non-negative sizes adding up to total."""
        cuts = np.sort(self.rng.integers(0, total + 1, size=self.option % 3))
        return np.diff(np.concatenate([[0], cuts, [total]])).tolist()

    def smaller(self, shape, along=None, extra=2):
        """A shape no larger than `shape` in each dim but `along` (which may be up to `extra`
        larger)."""
        return tuple(
            int(self.rng.integers(0, s + 1 + (extra if d == along else 0)))
            for d, s in enumerate(shape)
        )

    def mask(self, shape):
        return self.rng.random(shape) < 0.5

    def permutation(self):
        return [int(d) for d in self.rng.permutation(len(self.shape))]


# -- input shapes -------------------------------------------------------------------------


def one(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return lambda draw: [draw.shape(min_dims, max_dims, min_side, max_side)]


def same(count, **kwargs):
    return lambda draw: one(**kwargs)(draw) * count


def broadcast(count, max_dims=3, min_side=0):
    """`count` shapes that broadcast together: some dims dropped on the left, some set to 1."""

    def shapes(draw):
        base = draw.shape(0, max_dims, min_side, 4)
        return [
            tuple(1 if draw.integer(0, 3) == 0 else s for s in base[draw.integer(0, len(base)) :])
            if k
            else base
            for k in range(count)
        ]

    return shapes


def fixed(*shapes):
    return lambda draw: list(shapes)


def einsum_shapes(equation, max_side=3):
    """Shapes for an einsum equation: one size per letter; '...' (leading) is two dims in the first
    operand and the last of them in the second (broadcast)."""

    def shapes(draw):
        sizes = {label: draw.side(0, max_side) for label in sorted(set(equation) - set(",.->"))}
        batch = (draw.integer(1, 3), draw.integer(1, 3))
        operands = equation.split("->")[0].split(",")
        return [
            (batch[k:] if "..." in s else ()) + tuple(sizes[c] for c in s.replace("...", ""))
            for k, s in enumerate(operands)
        ]

    return shapes


def matrices(batch_a=(), batch_b=(), vector_a=False, vector_b=False):
    def shapes(draw):
        n, k, m = (draw.side(0, 3) for _ in range(3))
        return [batch_a + ((k,) if vector_a else (n, k)), batch_b + ((k,) if vector_b else (k, m))]

    return shapes


@dataclass
class Case:
    name: str
    call: Callable
    shapes: Callable = one()
    dtypes: tuple = FLOATS
    low: float = -3.0
    high: float = 3.0
    values: str = (
        "random"  # "random" (distinct), "ties" (small integers: ties and zeros), "nonfinite"
    )
    smooth: bool = True  # differentiable at the random points: gradcheck it

    def draw(self, draw):
        shapes = self.shapes(draw)
        floats = [d for d in self.dtypes if d in FLOATS]
        # mostly floats
        dtype = draw.choice(self.dtypes if not floats or draw.integer(0, 2) == 0 else floats)
        return (
            shapes,
            dtype,
            draw.choice(["contiguous", "transposed", "strided"]),
            Params(draw, shapes[0] if shapes else ()),
        )


# Where torch 2.13 has a bug for dim=(), the cases avoid it rather than copy it: var and std reduce
# over every dim but their backward divides by N = 1 (var([1., 3.], dim=()) has gradient [-2, 2],
# not [-1, 1]); logsumexp(x of shape (1,), dim=()) raises "output with shape [] doesn't match".


def cases(*items):
    return {case.name: case for case in items}


UNARY_DOMAINS = {
    "sin": None,
    "cos": None,
    "erf": None,
    "rsqrt": (0.2, 3),
    "square": None,
    "log1p": (-0.9, 3),
    "log2": (0.2, 3),
    "log10": (0.2, 3),
    "expm1": None,
    "exp": None,
    "log": (0.2, 3),
    "sqrt": (0.2, 3),
    "tanh": None,
    "sigmoid": None,
    "abs": None,
    "neg": None,
    "relu": None,
}
NORMS = [2, 1, 3, 0.5, -1, float("inf"), float("-inf"), 0, "fro"]
EINSUMS = [
    "ij,jk->ik",
    "bhqd,bhkd->bhqk",
    "bqk,bkd->bqd",
    "bi,bi->b",
    "i,j->ij",
    "ij->ji",
    "ij,jk",
    "ba",
    "ii->i",
    "ii",
    "iij->j",
    "bij->",
    "...ij,...jk->...ik",
    "...d,d->...",
    "i,i->",
    "ij,ij->ij",
]
MIXED_INDEXES = {  # on shape (2, 3, 4, 5); torch applies the integers first
    "[1, :, [0, 2]]": lambda B, x: x[1, :, [0, 2]],
    "[[0, 1], 1, [0, 1]]": lambda B, x: x[[0, 1], 1, [0, 1]],
    "[[0, 1], :, 1]": lambda B, x: x[[0, 1], :, 1],
    "[:, [0, 1], 1]": lambda B, x: x[:, [0, 1], 1],
    "[1, [0, 2], :, [0, 1]]": lambda B, x: x[1, [0, 2], :, [0, 1]],
    "[None, 1, :, [0, 1]]": lambda B, x: x[None, 1, :, [0, 1]],
    "[0-d tensor, :, [0, 2]]": lambda B, x: x[B.tensor(1), :, [0, 2]],
    "[..., 1, [0, 1]]": lambda B, x: x[..., 1, [0, 1]],
    "[1, bool mask]": lambda B, x: x[1, B.tensor([True, False, True])],
    "[x > 0]": lambda B, x: x[x > 0],
    "[[1, 1, 0]]": lambda B, x: x[[1, 1, 0]],
    "[2-d index]": lambda B, x: x[B.tensor([[0, 1], [1, 1]])],
    "[:, 1:, ::2, -1]": lambda B, x: x[:, 1:, ::2, -1],
    "[[-1, 0]]": lambda B, x: x[[-1, 0]],
    "[0, 1, [0, 1, 2], [4, 0, 4]]": lambda B, x: x[0, 1, [0, 1, 2], [4, 0, 4]],
    "[[[0], [1]], [0, 2]]": lambda B, x: x[B.tensor([[0], [1]]), B.tensor([0, 2])],
    "[[]]": lambda B, x: x[B.tensor([], dtype=B.int64)],
    "[..., None]": lambda B, x: x[..., None],
    "[1, ..., [True, False, True, True, False]]": lambda B, x: x[
        1, ..., B.tensor([True, False, True, True, False])
    ],
}


def _narrow(B, p, x):
    size = p.size(x.shape)
    start = p.ints(1, -size, size)[0]
    length = p.ints(1, 0, size - (start % size if size and start < size else size))[0]
    return x.narrow(p.dim, start, length)


def _unflatten(B, p, x):
    size = p.size(x.shape)
    sizes = [(-1, 1), (1, -1), (size,), (2, -1) if size % 2 == 0 and size else (size, 1)][p.option]
    return x.unflatten(p.dim, sizes)


def _scatter_add(B, p, x, src):
    # src cut to the index's shape: torch's backward needs them equal
    index_shape = p.smaller(x.shape, extra=0)
    index = p.index(p.size(x.shape), index_shape)
    return B.scatter_add(x, p.dim, B.tensor(index), src[tuple(slice(0, s) for s in index_shape)])


def _topk(B, p, x):
    return x.topk(min(p.option, p.size(x.shape)), p.dim, largest=p.keepdim)


CASES = cases(
    # -- elementwise ---------------------------------------------------------------------
    *[
        Case(
            name,
            (lambda name: lambda B, p, x: getattr(x, name)())(name),
            dtypes=NUMERIC + ("bool",) if name in ("sigmoid", "exp", "sin", "square") else NUMERIC,
            low=domain[0] if domain else -3.0,
            high=domain[1] if domain else 3.0,
            smooth=name not in ("abs", "relu"),
        )
        for name, domain in UNARY_DOMAINS.items()
    ],
    *[
        Case(
            f"{name} nonfinite",
            (lambda name: lambda B, p, x: getattr(B, name)(x))(name),
            values="nonfinite",
            smooth=False,
        )
        for name in ("exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh", "erf", "square", "expm1")
    ],
    Case("clamp(-0.5, 0.5)", lambda B, p, x: x.clamp(-0.5, 0.5), dtypes=NUMERIC),
    Case("clamp(min=0)", lambda B, p, x: x.clamp(min=0), dtypes=NUMERIC),
    Case("clamp(max=1.5)", lambda B, p, x: B.clamp(x, max=1.5), dtypes=NUMERIC),
    Case("clip(-1, 1)", lambda B, p, x: x.clip(-1, 1)),
    Case("clamp(x, low, high)", lambda B, p, x, low, high: B.clamp(x, low, high), broadcast(3)),
    Case("clamp(x, min=low)", lambda B, p, x, low: B.clamp(x, min=low), broadcast(2)),
    Case("clamp(x, max=high)", lambda B, p, x, high: x.clamp(max=high), broadcast(2)),
    Case(
        "clamp ties",
        lambda B, p, x, low, high: B.clamp(x, low, high),
        broadcast(3),
        values="ties",
        smooth=False,
    ),
    Case("clamp nonfinite", lambda B, p, x: x.clamp(-1, 1), values="nonfinite", smooth=False),
    Case("maximum", lambda B, p, a, b: B.maximum(a, b), broadcast(2)),
    Case("minimum", lambda B, p, a, b: B.minimum(a, b), broadcast(2)),
    Case(
        "maximum ties",
        lambda B, p, a, b: B.maximum(a, b),
        broadcast(2),
        values="ties",
        smooth=False,
    ),
    Case(
        "minimum nonfinite",
        lambda B, p, a, b: B.minimum(a, b),
        broadcast(2),
        values="nonfinite",
        smooth=False,
    ),
    Case(
        "maximum float64 other",
        lambda B, p, a, b: B.maximum(a, b.double()),
        broadcast(2),
        dtypes=NUMERIC,
    ),
    Case("max(a, b)", lambda B, p, a, b: B.max(a, b), broadcast(2)),
    *[
        Case(
            name,
            (lambda name: lambda B, p, a, b: getattr(B, name)(a, b))(name),
            broadcast(2),
            dtypes=ALL,
            values="ties",
        )
        for name in ("logical_and", "logical_or", "logical_xor")
    ],
    Case("logical_not", lambda B, p, x: B.logical_not(x), dtypes=ALL, values="ties"),
    *[
        Case(
            name,
            (lambda name: lambda B, p, x: getattr(B, name)(x))(name),
            dtypes=ALL,
            values="nonfinite",
        )
        for name in ("isnan", "isinf", "isfinite")
    ],
    Case(
        "a ** b (0, negatives)", lambda B, p, a, b: a**b, broadcast(2), values="ties", smooth=False
    ),
    Case("x ** 0", lambda B, p, x: x**0, values="ties", smooth=False),
    Case("x ** 2.5 (int x)", lambda B, p, x: x**2.5, dtypes=("int64",), low=0),
    Case("0 ** x", lambda B, p, x: B.zeros_like(x) ** x, values="ties", smooth=False),
    Case("(-2) ** x", lambda B, p, x: B.full_like(x, -2.0) ** x, values="ties", smooth=False),
    Case("2 ** x", lambda B, p, x: 2**x),
    *[
        Case(
            f"x.{name}()",
            (lambda name: lambda B, p, x: getattr(x, name)())(name),
            dtypes=NUMERIC,
            smooth=False,
        )
        for name in ("sign", "floor", "ceil", "round", "trunc")
    ],
    Case("round(decimals=1)", lambda B, p, x: B.round(x, decimals=1), smooth=False),
    Case("reciprocal", lambda B, p, x: x.reciprocal(), low=0.5, dtypes=NUMERIC),
    Case("a % b", lambda B, p, a, b: a % (b.abs() + 1), broadcast(2), dtypes=NUMERIC),
    Case("fmod", lambda B, p, a, b: B.fmod(a, b.abs() + 0.5), broadcast(2)),
    Case("remainder(a, number)", lambda B, p, x: B.remainder(x, -1.5), dtypes=NUMERIC),
    Case("a // b (int)", lambda B, p, a, b: a // (b.abs() + 1), broadcast(2), dtypes=("int64",)),
    Case(
        "div(rounding_mode)",
        lambda B, p, a, b: (
            B.div(a, b.abs() + 0.5, rounding_mode="floor"),
            a.div(b.abs() + 0.5, rounding_mode="trunc"),
        ),
        broadcast(2),
        dtypes=NUMERIC,
        smooth=False,
    ),
    Case("where(x > 0, x, 0.5)", lambda B, p, x: B.where(x > 0, x, 0.5), dtypes=NUMERIC),
    Case("where(a > b, a, b)", lambda B, p, a, b: B.where(a > b, a, b), broadcast(2)),
    *[
        Case(f"a {symbol} b", op, broadcast(2), dtypes=("int64", "bool"), values="ties")
        for symbol, op in (
            ("&", lambda B, p, a, b: a & b),
            ("|", lambda B, p, a, b: a | b),
            ("^", lambda B, p, a, b: a ^ b),
        )
    ],
    Case("~x", lambda B, p, x: ~x, dtypes=("int64", "bool"), values="ties"),
    # -- reductions ----------------------------------------------------------------------
    Case("sum(dims)", lambda B, p, x: x.sum(p.dims, keepdim=p.keepdim), dtypes=ALL),
    Case("sum()", lambda B, p, x: x.sum(), dtypes=ALL),
    Case("sum(dtype=float64)", lambda B, p, x: x.sum(p.dims, dtype=B.float64), dtypes=NUMERIC),
    Case("mean(dims)", lambda B, p, x: x.mean(p.dims, keepdim=p.keepdim), dtypes=NUMERIC),
    Case("mean(dtype=float64)", lambda B, p, x: x.mean(p.dims, dtype=B.float64), dtypes=NUMERIC),
    Case("prod()", lambda B, p, x: x.prod(), low=0.5, high=1.5, dtypes=ALL),
    Case("prod(dim)", lambda B, p, x: x.prod(p.dim, keepdim=p.keepdim), dtypes=ALL),
    Case("prod(dim) zeros", lambda B, p, x: x.prod(p.dim), values="ties", smooth=False),
    Case("amax(dims)", lambda B, p, x: x.amax(p.dims, p.keepdim), dtypes=NUMERIC),
    Case("amin(dims)", lambda B, p, x: B.amin(x, p.dims, p.keepdim)),
    Case("amax ties", lambda B, p, x: x.amax(p.dims), values="ties", smooth=False),
    Case("max()", lambda B, p, x: x.max(), dtypes=NUMERIC),
    Case("min() ties", lambda B, p, x: x.min(), values="ties", smooth=False),
    Case("max(dim)", lambda B, p, x: x.max(p.dim, p.keepdim), dtypes=NUMERIC),
    Case("min(dim)", lambda B, p, x: B.min(x, dim=p.dim, keepdim=p.keepdim)),
    Case("max(dim) ties", lambda B, p, x: x.max(p.dim), values="ties", smooth=False),
    Case("argmax(dim)", lambda B, p, x: x.argmax(p.dim, p.keepdim), dtypes=NUMERIC),
    Case("argmin()", lambda B, p, x: x.argmin(), dtypes=NUMERIC),
    Case(
        "any(dims)",
        lambda B, p, x: x.any(p.dims, p.keepdim) if p.dims else x.any(),
        dtypes=ALL,
        values="ties",
    ),
    Case(
        "all(dims)",
        lambda B, p, x: B.all(x, p.dims) if p.dims else x.all(),
        dtypes=ALL,
        values="ties",
    ),
    Case(
        "var(dims, correction)",
        lambda B, p, x: x.var(p.dims or None, correction=p.option % 3, keepdim=p.keepdim),
        dtypes=NUMERIC,
    ),
    Case("var(dim, unbiased=False)", lambda B, p, x: x.var(p.dim, unbiased=False)),
    Case("var()", lambda B, p, x: x.var()),
    Case(
        "std(dims, correction)",
        lambda B, p, x: x.std(p.dims or None, correction=p.option % 2, keepdim=p.keepdim),
    ),
    Case("std ties", lambda B, p, x: x.std(p.dims or None), values="ties", smooth=False),
    Case("var_mean", lambda B, p, x: B.var_mean(x, p.dims or None, correction=1)),
    Case("std_mean", lambda B, p, x: B.std_mean(x, p.dims or None, keepdim=True)),
    Case(
        "logsumexp(dims)",
        lambda B, p, x: B.logsumexp(x, p.dims or p.dim, p.keepdim),
        dtypes=NUMERIC,
    ),
    Case(
        "logsumexp nonfinite", lambda B, p, x: x.logsumexp(p.dim), values="nonfinite", smooth=False
    ),
    *[
        Case(
            f"norm(p={order})",
            (lambda order: lambda B, p, x: x.norm(order, p.dims, p.keepdim))(order),
            smooth=order not in (0,),
        )
        for order in NORMS
    ],
    Case("norm() zeros", lambda B, p, x: x.norm(), values="ties", smooth=False),
    Case(
        "norm(inf) ties", lambda B, p, x: x.norm(float("inf"), p.dim), values="ties", smooth=False
    ),
    Case("norm(int)", lambda B, p, x: x.norm(), dtypes=("int64",)),
    Case("cumsum(dim)", lambda B, p, x: x.cumsum(p.dim), dtypes=ALL),
    # -- shape ---------------------------------------------------------------------------
    Case("split(size)", lambda B, p, x: x.split(1 + p.option, p.dim), one(min_dims=1)),
    Case(
        "split(sizes)",
        lambda B, p, x: x.split(p.partition(p.size(x.shape)), p.dim),
        one(min_dims=1),
    ),
    Case("chunk", lambda B, p, x: x.chunk(1 + p.option, p.dim), one(min_dims=1)),
    Case("unbind", lambda B, p, x: x.unbind(p.dim), one(min_dims=1)),
    Case(
        "repeat", lambda B, p, x: x.repeat(*p.ints(len(x.shape) + p.option % 2, 0, 2)), dtypes=ALL
    ),
    Case("tile", lambda B, p, x: x.tile(tuple(p.ints(max(len(x.shape) - p.option % 2, 0), 0, 2)))),
    Case(
        "repeat_interleave(int, dim)",
        lambda B, p, x: x.repeat_interleave(p.option, p.dim),
        one(min_dims=1),
    ),
    Case("repeat_interleave(int)", lambda B, p, x: x.repeat_interleave(2)),
    Case(
        "repeat_interleave(tensor, dim)",
        lambda B, p, x: x.repeat_interleave(
            B.tensor(p.ints(p.size(x.shape), 0, 2), dtype=B.int64), dim=p.dim
        ),
        one(min_dims=1),
    ),
    Case("unflatten", _unflatten, one(min_dims=1)),
    Case("movedim", lambda B, p, x: B.movedim(x, p.dim, p.dim2)),
    Case("movedim two", lambda B, p, x: x.movedim((0, p.dim), (p.dim2, -1)), one(min_dims=2)),
    Case("swapaxes", lambda B, p, x: x.swapaxes(p.dim, p.dim2)),
    Case("transpose", lambda B, p, x: B.transpose(x, p.dim, p.dim2)),
    Case("narrow", _narrow, one(min_dims=1)),
    Case("roll(shift, dim)", lambda B, p, x: x.roll(p.option - 1, p.dim)),
    Case("roll(shifts, dims)", lambda B, p, x: B.roll(x, (1, -2), (0, -1)), one(min_dims=2)),
    Case("roll(shift)", lambda B, p, x: x.roll(3)),
    Case("tril", lambda B, p, x: x.tril(p.option - 1), one(min_dims=2), dtypes=ALL),
    Case("triu", lambda B, p, x: B.triu(x, 1 - p.option), one(min_dims=2), dtypes=ALL),
    Case("flip(dims)", lambda B, p, x: x.flip(p.dims), dtypes=ALL),
    Case("t", lambda B, p, x: x.t(), one(max_dims=2)),
    Case("permute", lambda B, p, x: x.permute(*p.permutation())),
    Case("squeeze(dims)", lambda B, p, x: x.squeeze(p.dims), one(max_side=2)),
    Case("squeeze(dim)", lambda B, p, x: x.squeeze(p.dim), one(max_side=2)),
    Case("unsqueeze", lambda B, p, x: x.unsqueeze(p.dim)),
    Case("flatten(start, end)", lambda B, p, x: x.flatten(p.dim, p.dim2)),
    Case("reshape(reversed)", lambda B, p, x: x.reshape(tuple(reversed(x.shape)))),
    # view depends on the memory layout (as torch's, it raises where a copy would be needed), and
    # only minigrad's inputs here come transposed or strided: contiguous() first
    Case("view(-1)", lambda B, p, x: x.contiguous().view(-1)),
    Case("expand", lambda B, p, x: x.expand(2, *([-1] * len(x.shape)))),
    Case(
        "cat", lambda B, p, a, b: B.cat([a, b.double()], p.dim), same(2, min_dims=1), dtypes=NUMERIC
    ),
    Case("stack", lambda B, p, a, b: B.stack([a, b], p.dim), same(2)),
    # -- indexing and order --------------------------------------------------------------
    *[
        Case(f"x{name}", (lambda index: lambda B, p, x: index(B, x))(index), fixed((2, 3, 4, 5)))
        for name, index in MIXED_INDEXES.items()
    ],
    Case(
        "gather",
        lambda B, p, x: x.gather(
            p.dim,
            B.tensor(
                p.index(p.size(x.shape), p.smaller(x.shape, along=p.dim % max(len(x.shape), 1)))
            ),
        ),
        one(min_dims=1),
    ),
    Case(
        "index_select", lambda B, p, x: x.index_select(p.dim, B.tensor(p.index(p.size(x.shape), 4)))
    ),
    Case(
        "masked_select",
        lambda B, p, x: (
            x.masked_select(B.tensor(p.mask(p.smaller(x.shape, extra=0))))
            if 0 not in x.shape
            else x.masked_select(B.tensor(p.mask(x.shape)))
        ),
    ),
    Case("scatter_add", _scatter_add, same(2, min_dims=1)),
    Case(
        "nonzero, where(condition)",
        lambda B, p, x: (x.nonzero(), *B.where(x != 0), *B.nonzero(x, as_tuple=True)),
        dtypes=ALL,
        values="ties",
    ),
    Case("sort", lambda B, p, x: x.sort(p.dim, descending=p.keepdim), dtypes=NUMERIC),
    Case(
        "sort stable ties",
        lambda B, p, x: x.sort(dim=p.dim, descending=p.keepdim, stable=True),
        dtypes=ALL,
        values="ties",
        smooth=False,
    ),
    Case("argsort", lambda B, p, x: x.argsort(p.dim, descending=p.keepdim)),
    Case(
        "argsort stable ties",
        lambda B, p, x: B.argsort(x, dim=p.dim, descending=p.keepdim, stable=True),
        dtypes=NUMERIC,
        values="ties",
    ),
    Case("topk", _topk, dtypes=NUMERIC),
    # -- linear algebra ------------------------------------------------------------------
    *[
        Case(
            f"einsum {equation}",
            (lambda eq: lambda B, p, *xs: B.einsum(eq, *xs))(equation),
            einsum_shapes(equation),
        )
        for equation in EINSUMS
    ],
    Case(
        "einsum list", lambda B, p, a, b: B.einsum("ij,jk->ik", [a, b]), einsum_shapes("ij,jk->ik")
    ),
    Case("matmul", lambda B, p, a, b: a @ b, matrices((2,), ()), dtypes=NUMERIC),
    Case(
        "matmul vector", lambda B, p, a, b: B.matmul(a, b), matrices(vector_b=True), dtypes=NUMERIC
    ),
    Case("mm", lambda B, p, a, b: B.mm(a, b), matrices(), dtypes=NUMERIC),
    Case("bmm", lambda B, p, a, b: B.bmm(a, b), matrices((2,), (2,))),
    Case(
        "dot",
        lambda B, p, a, b: B.dot(a, b),
        matrices(vector_a=True, vector_b=True),
        dtypes=NUMERIC,
    ),
    Case(
        "outer", lambda B, p, a, b: B.outer(a, b), same(2, min_dims=1, max_dims=1), dtypes=NUMERIC
    ),
    # -- conversions, queries, creation --------------------------------------------------
    *[
        Case(f"x.{name}()", (lambda name: lambda B, p, x: getattr(x, name)())(name), dtypes=NUMERIC)
        for name in ("float", "double", "long", "int", "bool", "clone")
    ],
    Case("to(float64)", lambda B, p, x: x.to(B.float64), dtypes=NUMERIC),
    Case("to(int64)", lambda B, p, x: x.to(dtype=B.int64)),
    Case("to(cpu, other)", lambda B, p, x: x.to("cpu").to(B.ones(1, dtype=B.float64))),
    Case("type_as", lambda B, p, x: x.type_as(B.zeros(1, dtype=B.float64)), dtypes=NUMERIC),
    Case("t().contiguous()", lambda B, p, x: x.t().contiguous(), one(max_dims=2)),
    Case(
        "numel, dim, size",
        lambda B, p, x: (x.numel(), x.dim(), x.size(p.dim), tuple(x.size())),
        dtypes=ALL,
    ),
    Case("tolist", lambda B, p, x: x.tolist(), dtypes=ALL),
    Case(
        "as_tensor, numel",
        lambda B, p, x: (B.as_tensor(x.tolist()), B.as_tensor(x, dtype=B.float64), B.numel(x)),
        dtypes=ALL,
    ),
    Case(
        "allclose",
        lambda B, p, a, b: (B.allclose(a, b), B.allclose(a, a + 1e-9), B.isclose(a, b)),
        same(2),
    ),
    Case(
        "new_zeros, new_ones, new_full",
        lambda B, p, x: (x.new_zeros(2, 3), x.new_ones((1,)), x.new_full((2,), 1.5)),
        dtypes=ALL,
    ),
    Case("eye", lambda B, p: (B.eye(3), B.eye(2, 4, dtype=B.int64), B.eye(0)), fixed()),
    Case(
        "linspace",
        lambda B, p: (
            B.linspace(-1, 2.5, 7),
            B.linspace(0, 10, 5, dtype=B.int64),
            B.linspace(3, 1, 1),
            B.linspace(0, 1, 0),
            B.linspace(0, 1, 4, dtype=B.float64),
        ),
        fixed(),
    ),
    Case(
        "arange, zeros, full",
        lambda B, p: (
            B.arange(5),
            B.arange(0.5, 2, 0.25),
            B.zeros(2, 0),
            B.full((2,), True),
            list(B.empty(2, 3).shape),
        ),
        fixed(),
    ),
    # -- in place (the ops are ops/inplace.py's; clamp_ and mixed indexes are this file's) --
    Case("clamp_", lambda B, p, x: (x * 1).clamp_(-0.5, 0.5)),
    Case("masked_fill_", lambda B, p, x: (x * 1).masked_fill_(x > 0, 2.0)),
    Case(
        "x[1, :, [0, 2]] = v",
        lambda B, p, x, v: _set(x * 1, (1, slice(None), [0, 2]), v[0, :, :2]),
        fixed((2, 3, 4, 5), (2, 3, 4, 5)),
    ),
    Case("x[mask] = v", lambda B, p, x, v: _set(x * 1, x > 0, v[x > 0]), same(2)),
)


def _set(x, index, value):
    x[index] = value
    return x
