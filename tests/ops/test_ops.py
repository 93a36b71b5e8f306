"""Every differentiable op: forward values against numpy, gradients against float64 central
differences (mg.gradcheck), broadcasting cases, float32 kept, and errors that name the shapes."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg

FAST = settings(max_examples=15, deadline=None)


def rand(*shape, low=-2.0, high=2.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def away_from_zero(*shape, seed=0):
    """Values in [-2, -0.2] u [0.2, 2]: |x|, relu and friends are smooth there."""
    values = rand(*shape, low=0.2, high=2.0, seed=seed)
    signs = np.where(np.random.default_rng(seed + 100).random(shape) < 0.5, -1.0, 1.0)
    return values * signs


def check(fn, *arrays):
    """gradcheck fn on float64 copies of arrays (it raises with the worst element on failure)."""
    assert mg.gradcheck(fn, [np.asarray(a, dtype=np.float64) for a in arrays])


def value(fn, *arrays):
    return fn(*[mg.tensor(np.asarray(a, dtype=np.float64)) for a in arrays]).numpy()


# -- binary elementwise, with broadcasting ------------------------------------------------

BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "pow": (lambda a, b: a**b, np.power),
}
SHAPE_PAIRS = [
    ((3, 4), (3, 4)),
    ((3, 1, 4), (2, 4)),
    ((2, 4), (3, 1, 4)),
    ((4,), (3, 4)),
    ((), (2, 3)),
    ((2, 1), (1, 3)),
    ((1,), (1,)),
]


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_binary_ops(name, shapes):
    op, reference = BINARY[name]
    a = rand(*shapes[0], low=0.5, high=2.0, seed=1)  # positive: pow and div stay smooth
    b = rand(*shapes[1], low=0.5, high=2.0, seed=2)
    np.testing.assert_allclose(value(op, a, b), reference(a, b), rtol=1e-12)
    check(op, a, b)


@pytest.mark.parametrize("name", BINARY)
def test_binary_ops_method_and_function_forms(name):
    # x.add and mg.add are one function (ops/__init__ attaches it), so each form is checked on its
    # own: values against numpy, gradients against finite differences, a Python number as the
    # other operand keeping float32
    reference = BINARY[name][1]
    a = rand(3, 1, low=0.5, high=2.0, seed=3)
    b = rand(4, low=0.5, high=2.0, seed=4)
    forms = {
        "method": lambda x, y: getattr(x, name)(y),
        "function": lambda x, y: getattr(mg, name)(x, y),
    }
    for form in forms.values():
        np.testing.assert_allclose(value(form, a, b), reference(a, b), rtol=1e-12)
        check(form, a, b)
        out = form(mg.tensor(a.astype(np.float32)), 1.5)
        assert out.dtype == mg.float32
        expected = reference(a.astype(np.float32), np.float32(1.5))
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize(
    "make, dtype",
    [
        (lambda: mg.tensor([1, 2]) * 2.5, np.float32),  # int tensor, float number: default float
        (lambda: mg.tensor([1, 2]) / mg.tensor([2, 4]), np.float32),  # int / int: true division
        (lambda: mg.tensor([1, 2]) + 2, np.int64),
        (lambda: mg.tensor([1, 2]) + mg.tensor([0.5, 1.0]), np.float32),  # numpy would give float64
        (
            lambda: mg.tensor([1.0, 2.0]) * mg.tensor(np.float64(3.0)),
            np.float32,
        ),  # a 0-d tensor does not widen
        (lambda: mg.tensor([1.0, 2.0]) * mg.tensor(np.array([3.0, 4.0])), np.float64),
        (lambda: mg.tensor(np.array([1, 2], np.int32)) + mg.tensor(np.int64(3)), np.int32),
        (lambda: mg.tensor([True, False]) + 1.5, np.float32),
        (lambda: mg.tensor([4, 9]) ** 0.5, np.float32),
    ],
    ids=[
        "int*float",
        "int/int",
        "int+int",
        "int+float32",
        "f32*f64 0-d",
        "f32*f64",
        "i32+i64 0-d",
        "bool+float",
        "int**float",
    ],
)
def test_mixed_operands_follow_torch_promotion(make, dtype):
    # PyTorch's rules (checked against torch itself in test_vs_torch.py)
    assert make().dtype == dtype


@FAST
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=3),
    name=st.sampled_from(sorted(BINARY)),
    seed=st.integers(0, 1000),
)
def test_binary_ops_random_broadcasting(shapes, name, seed):
    op, reference = BINARY[name]
    a = rand(*shapes.input_shapes[0], low=0.5, high=2.0, seed=seed)
    b = rand(*shapes.input_shapes[1], low=0.5, high=2.0, seed=seed + 1)
    out = value(op, a, b)
    assert out.shape == shapes.result_shape
    np.testing.assert_allclose(out, reference(a, b), rtol=1e-12)
    check(op, a, b)


@pytest.mark.parametrize(
    "fn, reference",
    [
        (lambda x: 2 + x, lambda x: 2 + x),
        (lambda x: 2 - x, lambda x: 2 - x),
        (lambda x: 2 * x, lambda x: 2 * x),
        (lambda x: 2 / x, lambda x: 2 / x),
        (lambda x: 2**x, lambda x: 2**x),
        (lambda x: 0.5**x, lambda x: 0.5**x),
        (lambda x: x - 1.5, lambda x: x - 1.5),
        (lambda x: x / 4, lambda x: x / 4),
        (lambda x: x**3, lambda x: x**3),
        (lambda x: x**0.5, np.sqrt),
        (lambda x: x**-1.5, lambda x: x**-1.5),
        (lambda x: x**0, np.ones_like),
        (lambda x: np.array([1.0, 2.0, 3.0]) - x, lambda x: np.array([1.0, 2.0, 3.0]) - x),
    ],
    ids=[
        "2+x",
        "2-x",
        "2*x",
        "2/x",
        "2**x",
        "0.5**x",
        "x-1.5",
        "x/4",
        "x**3",
        "x**0.5",
        "x**-1.5",
        "x**0",
        "array-x",
    ],
)
def test_scalar_and_reflected_operands(fn, reference):
    x = rand(2, 3, low=0.5, high=2.0, seed=3)
    np.testing.assert_allclose(value(fn, x), reference(x), rtol=1e-12)
    check(fn, x)


def test_pow_with_tensor_exponent_gradient_to_both():
    base, exponent = rand(3, 1, low=0.5, high=2.0, seed=4), rand(4, low=-1.0, high=2.0, seed=5)
    check(lambda a, b: a**b, base, exponent)
    check(lambda a, b: mg.ops.pow(a, b), base, exponent)


def test_pow_negative_base_integer_exponent():
    check(lambda x: x**3, np.array([-1.5, -0.5, 2.0]))
    check(lambda x: x**2, np.array([-1.5, -0.5, 2.0]))


@pytest.mark.parametrize("shapes", [((2, 3), (4,)), ((3, 1, 4), (2, 5)), ((2,), (3,))], ids=str)
@pytest.mark.parametrize("name", BINARY)
def test_binary_shape_mismatch_names_both_shapes(name, shapes):
    a, b = mg.zeros(*shapes[0]), mg.zeros(*shapes[1])
    with pytest.raises(ValueError) as info:
        BINARY[name][0](a, b)
    message = str(info.value)
    assert str(shapes[0]) in message and str(shapes[1]) in message


# -- matmul -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 4), (4, 5)),  # 2-D
        ((2, 3, 4), (2, 4, 5)),  # batched
        ((2, 3, 4), (4, 5)),  # batch on the left only
        ((3, 4), (2, 4, 5)),  # batch on the right only
        ((2, 1, 3, 4), (3, 4, 2)),  # batch dims broadcast: (2, 1) with (3,)
        ((1, 3, 4), (2, 4, 5)),  # size-1 batch dim broadcast
        ((4,), (4, 5)),  # 1-D on the left
        ((3, 4), (4,)),  # 1-D on the right
        ((4,), (4,)),  # dot product
        ((4,), (2, 4, 5)),
        ((2, 3, 4), (4,)),
    ],
    ids=str,
)
def test_matmul(shapes):
    a, b = rand(*shapes[0], seed=6), rand(*shapes[1], seed=7)
    out = value(lambda x, y: x @ y, a, b)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-12, atol=1e-12)
    assert out.shape == np.matmul(a, b).shape
    check(lambda x, y: x @ y, a, b)
    check(lambda x, y: mg.matmul(x, y), a, b)


@FAST
@given(
    batch=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3),
    sizes=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4)),
    seed=st.integers(0, 1000),
)
def test_matmul_random_batch_broadcasting(batch, sizes, seed):
    n, k, m = sizes
    a = rand(*batch.input_shapes[0], n, k, seed=seed)
    b = rand(*batch.input_shapes[1], k, m, seed=seed + 1)
    out = value(lambda x, y: x @ y, a, b)
    assert out.shape == batch.result_shape + (n, m)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-12, atol=1e-12)
    check(lambda x, y: x @ y, a, b)


def test_matmul_one_side_constant():
    a, b = rand(3, 4, seed=8), rand(2, 4, 5, seed=9)
    check(lambda x: x @ mg.tensor(b), a)
    check(lambda y: mg.tensor(a) @ y, b)
    check(lambda x: np.ones((4, 2)) @ x, rand(2, 3, seed=10))  # numpy array on the left


def test_matmul_float32():
    a, b = mg.randn(3, 4), mg.randn(2, 4, 5)
    out = a @ b
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), np.matmul(a.numpy(), b.numpy()), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "shapes",
    [((3, 4), (5, 6)), ((4,), (3,)), ((2, 3, 4), (3, 5)), ((2, 3, 4), (3, 4, 5)), ((3,), (4, 5))],
    ids=str,
)
def test_matmul_mismatch_names_both_shapes(shapes):
    with pytest.raises(ValueError) as info:
        mg.zeros(*shapes[0]) @ mg.zeros(*shapes[1])
    assert str(shapes[0]) in str(info.value) and str(shapes[1]) in str(info.value)


def test_matmul_0d_and_dtype_errors():
    with pytest.raises(ValueError, match=r"\(\)"):
        mg.tensor(2.0) @ mg.zeros(3)
    with pytest.raises(TypeError, match="float64"):
        mg.zeros(2, 2) @ mg.zeros(2, 2, dtype=mg.float64)


# -- unary --------------------------------------------------------------------------------

UNARY = {
    "neg": (lambda x: -x, np.negative, away_from_zero),
    "exp": (mg.exp, np.exp, rand),
    "log": (mg.log, np.log, lambda *s, seed=0: rand(*s, low=0.3, high=3.0, seed=seed)),
    "sqrt": (mg.sqrt, np.sqrt, lambda *s, seed=0: rand(*s, low=0.3, high=3.0, seed=seed)),
    "abs": (mg.abs, np.abs, away_from_zero),
    "tanh": (mg.tanh, np.tanh, rand),
    "sigmoid": (mg.sigmoid, lambda x: 1 / (1 + np.exp(-x)), rand),
    "relu": (mg.relu, lambda x: np.maximum(x, 0), away_from_zero),
}


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops(name):
    op, reference, sample = UNARY[name]
    x = sample(3, 4, seed=11)
    np.testing.assert_allclose(value(op, x), reference(x), rtol=1e-12)
    check(op, x)
    method = getattr(mg.tensor(x), name)().numpy()
    np.testing.assert_allclose(method, reference(x), rtol=1e-12)


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_keep_float32(name):
    op, reference, sample = UNARY[name]
    x = sample(5, seed=12).astype(np.float32)
    out = op(mg.tensor(x, requires_grad=True))
    assert out.dtype == np.float32
    out.sum().backward()
    np.testing.assert_allclose(out.numpy(), reference(x.astype(np.float64)), rtol=1e-5)


def test_unary_edge_values():
    big = mg.tensor([-1000.0, 0.0, 1000.0])
    np.testing.assert_array_equal(mg.sigmoid(big).numpy(), [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(mg.tanh(big).numpy(), [-1.0, 0.0, 1.0])
    x = mg.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    (mg.relu(x) + mg.abs(x)).sum().backward()
    np.testing.assert_array_equal(
        x.grad.numpy(), [-1.0, 0.0, 2.0]
    )  # relu'(0) = abs'(0) = 0, as torch


# -- reductions ---------------------------------------------------------------------------

REDUCE_DIMS = [None, 0, 1, -1, (0, 2), (2, 0, 1)]


@pytest.mark.parametrize("dim", REDUCE_DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_sum_mean(name, dim, keepdim):
    x = rand(2, 3, 4, seed=13)
    axis = dim if not isinstance(dim, tuple) else tuple(dim)
    out = value(lambda t: getattr(t, name)(dim, keepdim), x)
    np.testing.assert_allclose(out, getattr(np, name)(x, axis=axis, keepdims=keepdim), rtol=1e-12)
    check(lambda t: getattr(mg, name)(t, dim=dim, keepdim=keepdim), x)


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_along_a_dim(name, dim, keepdim):
    x = rand(2, 3, 4, seed=14)  # distinct values: no ties
    result = getattr(mg.tensor(x), name)(dim, keepdim)
    values, indices = result
    assert result.values is values and result.indices is indices
    np.testing.assert_array_equal(values.numpy(), getattr(np, name)(x, axis=dim, keepdims=keepdim))
    arg = np.argmax if name == "max" else np.argmin
    np.testing.assert_array_equal(indices.numpy(), arg(x, axis=dim, keepdims=keepdim))
    assert indices.dtype == np.int64
    check(lambda t: getattr(mg, name)(t, dim, keepdim).values, x)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_over_several_dims_by_flattening(name):
    x = rand(2, 3, 4, seed=24)
    # several dims at once: move them together and flatten (max(dim) takes one int, as torch)
    fn = lambda t: getattr(t.permute(1, 0, 2).flatten(1), name)(1).values  # noqa: E731
    np.testing.assert_array_equal(value(fn, x), getattr(np, name)(x, axis=(0, 2)))
    check(fn, x)
    with pytest.raises(TypeError, match=r"\(0, 2\)"):
        getattr(mg.tensor(x), name)((0, 2))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_everything(name):
    x = rand(3, 4, seed=15)
    out = getattr(mg.tensor(x), name)()
    assert out.shape == ()
    assert out.item() == getattr(np, name)(x)
    check(lambda t: getattr(t, name)(), x)


def test_max_ties_share_the_gradient():
    x = mg.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.5, 0.5, 0.0])  # as torch.max()


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2)], ids=str)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("unbiased", [True, False])
def test_var(dim, keepdim, unbiased):
    x = rand(2, 3, 4, seed=16)
    out = value(lambda t: t.var(dim, unbiased, keepdim), x)  # torch's positional order
    np.testing.assert_allclose(
        out, np.var(x, axis=dim, keepdims=keepdim, ddof=1 if unbiased else 0), rtol=1e-12
    )
    check(lambda t: mg.var(t, dim, keepdim=keepdim, unbiased=unbiased), x)


def test_argmax_argmin():
    x = mg.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    np.testing.assert_array_equal(x.argmax(1).numpy(), [1, 0])
    np.testing.assert_array_equal(mg.argmin(x, 0).numpy(), [0, 1, 0])
    assert x.argmax().item() == 3
    assert x.argmax(1, keepdim=True).shape == (2, 1)


def test_reduce_bad_dim():
    with pytest.raises(IndexError, match="3"):
        mg.zeros(2, 3).sum(3)


def test_reductions_keep_float32():
    x = mg.randn(3, 4, requires_grad=True)
    for out in (x.sum(), x.mean(1), x.max(0).values, x.min(), x.var(1)):
        assert out.dtype == np.float32


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), data=st.data())
def test_reductions_random_shapes(shape, data):
    dims = data.draw(
        st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True)
    )
    keepdim = data.draw(st.booleans())
    x = rand(*shape, seed=len(shape))
    np.testing.assert_allclose(
        value(lambda t: t.sum(tuple(dims), keepdim), x),
        x.sum(axis=tuple(dims), keepdims=keepdim),
        rtol=1e-12,
        atol=1e-12,
    )
    check(lambda t: t.mean(tuple(dims), keepdim) * t.sum(tuple(dims), keepdim), x)
    check(lambda t: t.max(dims[0], keepdim).values, x)


# -- shape ops ----------------------------------------------------------------------------

SHAPE_OPS = [
    ("reshape", lambda t: t.reshape(4, 6), lambda a: a.reshape(4, 6)),
    ("reshape_tuple", lambda t: mg.reshape(t, (3, -1)), lambda a: a.reshape(3, -1)),
    ("view", lambda t: t.view(-1), lambda a: a.reshape(-1)),
    ("transpose", lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("transpose_neg", lambda t: mg.transpose(t, -1, -2), lambda a: a.swapaxes(-1, -2)),
    ("permute", lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("permute_tuple", lambda t: mg.permute(t, (1, 2, 0)), lambda a: a.transpose(1, 2, 0)),
    ("T", lambda t: t.T, lambda a: a.T),
    ("unsqueeze", lambda t: t.unsqueeze(1), lambda a: a[:, None]),
    ("unsqueeze_end", lambda t: mg.unsqueeze(t, -1), lambda a: a[..., None]),
    ("flip", lambda t: t.flip(0), lambda a: a[::-1]),
    ("flip_dims", lambda t: mg.flip(t, (0, 2)), lambda a: a[::-1, :, ::-1]),
    ("flatten", lambda t: t.flatten(), lambda a: a.reshape(-1)),
    ("flatten_range", lambda t: mg.flatten(t, 1), lambda a: a.reshape(2, 12)),
    ("flatten_start_end", lambda t: t.flatten(0, 1), lambda a: a.reshape(6, 4)),
    (
        "expand_leading",
        lambda t: t[:, :1].expand(5, 2, 3, 4),
        lambda a: np.broadcast_to(a[:, :1], (5, 2, 3, 4)),
    ),
    ("expand_minus_one", lambda t: mg.expand(t[:1], -1, 3, 4), lambda a: a[:1]),
    (
        "expand_size1",
        lambda t: t[:, :, 1:2].expand(2, 3, 5),
        lambda a: np.broadcast_to(a[:, :, 1:2], (2, 3, 5)),
    ),
    ("clone", lambda t: t.clone(), lambda a: a),
]


@pytest.mark.parametrize("name, op, reference", SHAPE_OPS, ids=[s[0] for s in SHAPE_OPS])
def test_shape_ops(name, op, reference):
    x = rand(2, 3, 4, seed=17)
    out = value(op, x)
    np.testing.assert_array_equal(out, reference(x))
    check(op, x)


@FAST
@given(shape=hnp.array_shapes(min_dims=1, max_dims=4, max_side=3), data=st.data())
def test_permute_and_flip_random(shape, data):
    order = data.draw(st.permutations(range(len(shape))))
    flips = data.draw(st.lists(st.integers(0, len(shape) - 1), max_size=len(shape), unique=True))
    x = rand(*shape, seed=len(shape))
    fn = lambda t: t.permute(*order).flip(flips) if flips else t.permute(*order)  # noqa: E731
    expected = np.transpose(x, order)
    expected = np.flip(expected, flips) if flips else expected
    np.testing.assert_array_equal(value(fn, x), expected)
    check(fn, x)


def test_squeeze():
    x = rand(2, 1, 3, 1, seed=18)
    assert value(lambda t: t.squeeze(), x).shape == (2, 3)
    assert value(lambda t: t.squeeze(1), x).shape == (2, 3, 1)
    assert value(lambda t: mg.squeeze(t, -1), x).shape == (2, 1, 3)
    assert value(lambda t: t.squeeze(0), x).shape == (2, 1, 3, 1)  # size 2: unchanged, as torch
    np.testing.assert_array_equal(value(lambda t: t.squeeze(), x), x.reshape(2, 3))
    check(lambda t: t.squeeze(), x)
    check(lambda t: t.squeeze(1), x)


def test_shape_op_gradient_moves_back_exactly():
    x = mg.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    weights = mg.tensor(np.arange(6.0).reshape(3, 2) * 10)
    (x.T * weights).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), weights.numpy().T)


@pytest.mark.parametrize(
    "call, shapes",
    [
        (lambda: mg.zeros(2, 3).reshape(4, 2), [(2, 3), (4, 2)]),
        (lambda: mg.zeros(2, 3).view(-1, 4), [(2, 3)]),
        (lambda: mg.zeros(2, 3).expand(3, 3), [(2, 3), (3, 3)]),
        (lambda: mg.zeros(2, 3).expand(3), [(2, 3)]),
        (lambda: mg.zeros(2, 3).permute(0, 0), [(2, 3)]),
    ],
)
def test_shape_errors_name_shapes(call, shapes):
    with pytest.raises(ValueError) as info:
        call()
    for shape in shapes:
        assert str(shape) in str(info.value)


def test_dim_out_of_range():
    with pytest.raises(IndexError, match="3"):
        mg.zeros(2, 3).transpose(0, 3)
    with pytest.raises(IndexError):
        mg.zeros(2, 3).unsqueeze(4)


# -- indexing -----------------------------------------------------------------------------

INDEXES = [
    ("int", 1),
    ("negative_int", -1),
    ("slice", slice(1, None)),
    ("step_slice", (slice(None), slice(None, None, 2))),
    ("int_and_slice", (0, slice(1, 3))),
    ("none_and_ellipsis", (None, Ellipsis, 2)),
    ("int_array_repeated", np.array([2, 0, 2, 2])),
    ("list_repeated", [1, 1, 0]),
    ("two_int_arrays", (np.array([0, 2, 2]), np.array([1, 1, 3]))),
    ("array_and_slice", (slice(None), np.array([3, 0, 3]))),
    ("bool_mask_rows", np.array([True, False, True])),
    ("bool_mask_full", "mask"),
    ("2d_int_array", np.array([[0, 1], [2, 0]])),
]


@pytest.mark.parametrize("name, index", INDEXES, ids=[i[0] for i in INDEXES])
def test_getitem(name, index):
    x = rand(3, 4, seed=19)
    if isinstance(index, str):
        index = x > 0.3
    np.testing.assert_array_equal(value(lambda t: t[index], x), x[index])
    check(lambda t: t[index], x)


def test_getitem_with_tensor_indices():
    x = rand(3, 4, seed=20)
    rows = mg.tensor([2, 2, 0])
    mask = mg.tensor(x) > 0
    np.testing.assert_array_equal(value(lambda t: t[rows], x), x[[2, 2, 0]])
    np.testing.assert_array_equal(value(lambda t: t[mask], x), x[x > 0])
    check(lambda t: t[rows, 1:], x)
    check(lambda t: t[mask], x)


def test_repeated_index_gradients_add_up():
    x = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 2, 2, 2]].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0, 3.0])


def test_getitem_out_of_range_names_shape():
    with pytest.raises(IndexError, match=r"\(3, 4\)"):
        mg.zeros(3, 4)[5]


def test_getitem_negative_step_is_refused_as_in_torch():
    with pytest.raises(ValueError, match="flip"):
        mg.zeros(3, 4)[::-1]


# -- gather, cat, stack -------------------------------------------------------------------


@pytest.mark.parametrize(
    "dim, index",
    [
        (0, np.array([[0, 1, 2, 0], [2, 2, 2, 1]])),
        (1, np.array([[3, 3, 0], [1, 1, 1], [0, 2, 3]])),  # repeated indices, fewer columns
        (-1, np.array([[0], [3], [2]])),
        (1, np.array([[1, 2], [0, 0]])),  # fewer rows than the input
    ],
)
def test_gather(dim, index):
    x = rand(3, 4, seed=21)
    expected = np.empty(index.shape)
    for i, j in np.ndindex(*index.shape):  # the definition, element by element
        expected[i, j] = x[index[i, j], j] if dim == 0 else x[i, index[i, j]]
    np.testing.assert_array_equal(value(lambda t: t.gather(dim, mg.tensor(index)), x), expected)
    check(lambda t: mg.gather(t, dim, index), x)


def test_gather_1d_and_3d():
    x = rand(5, seed=22)
    index = np.array([4, 4, 0])
    np.testing.assert_array_equal(value(lambda t: t.gather(0, index), x), x[index])
    check(lambda t: t.gather(0, index), x)
    cube = rand(2, 3, 4, seed=23)
    index3 = np.random.default_rng(0).integers(0, 3, size=(2, 5, 4))
    check(lambda t: t.gather(1, index3), cube)


def test_gather_errors():
    x = mg.zeros(3, 4)
    with pytest.raises(ValueError) as info:
        x.gather(1, np.zeros((4, 2), dtype=np.int64))
    assert "(4, 2)" in str(info.value) and "(3, 4)" in str(info.value)
    with pytest.raises(ValueError, match=r"\(3,\)"):
        x.gather(1, np.zeros(3, dtype=np.int64))
    with pytest.raises(IndexError, match="4"):
        x.gather(1, np.array([[4], [0], [0]]))
    with pytest.raises(TypeError, match="float"):
        x.gather(1, np.zeros((3, 1)))


@pytest.mark.parametrize(
    "dim, shapes",
    [
        (0, [(2, 3), (1, 3), (4, 3)]),
        (1, [(2, 3), (2, 1), (2, 2)]),
        (-1, [(2, 2, 1), (2, 2, 3)]),
        (0, [(3,)]),
    ],
    ids=str,
)
def test_cat(dim, shapes):
    arrays = [rand(*s, seed=30 + i) for i, s in enumerate(shapes)]
    np.testing.assert_array_equal(
        value(lambda *ts: mg.cat(ts, dim), *arrays), np.concatenate(arrays, axis=dim)
    )
    check(lambda *ts: mg.cat(list(ts), dim=dim), *arrays)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(dim):
    arrays = [rand(2, 3, seed=40 + i) for i in range(3)]
    np.testing.assert_array_equal(
        value(lambda *ts: mg.stack(ts, dim), *arrays), np.stack(arrays, axis=dim)
    )
    check(lambda *ts: mg.stack(ts, dim=dim), *arrays)


def test_cat_and_stack_with_a_constant():
    x = rand(2, 2, seed=44)
    check(
        lambda t: (
            mg.cat([t, np.ones((1, 2))])[1:] * mg.stack([t, t * 2, np.zeros((2, 2))], 1)[:, 1]
        ),
        x,
    )


def test_cat_stack_errors_name_shapes():
    with pytest.raises(ValueError) as info:
        mg.cat([mg.zeros(2, 3), mg.zeros(2, 4)], dim=0)
    assert "(2, 3)" in str(info.value) and "(2, 4)" in str(info.value)
    with pytest.raises(ValueError) as info:
        mg.cat([mg.zeros(2, 3), mg.zeros(2, 3, 1)], dim=1)
    assert "(2, 3)" in str(info.value) and "(2, 3, 1)" in str(info.value)
    with pytest.raises(ValueError) as info:
        mg.stack([mg.zeros(2, 3), mg.zeros(3, 2)])
    assert "(2, 3)" in str(info.value) and "(3, 2)" in str(info.value)
    with pytest.raises(ValueError, match="non-empty"):
        mg.cat([])
    with pytest.raises(ValueError, match="non-empty"):
        mg.stack([])


# -- where, masked_fill -------------------------------------------------------------------


@pytest.mark.parametrize(
    "shapes",
    [
        ((3, 4), (3, 4), (3, 4)),
        ((3, 1), (1, 4), (3, 4)),
        ((4,), (3, 4), (3, 1)),
        ((2, 3, 4), (3, 4), (4,)),
    ],
    ids=str,
)
def test_where(shapes):
    cond_shape, x_shape, y_shape = shapes
    condition = np.random.default_rng(1).random(cond_shape) < 0.5
    x, y = rand(*x_shape, seed=50), rand(*y_shape, seed=51)
    np.testing.assert_array_equal(
        value(lambda a, b: mg.where(condition, a, b), x, y), np.where(condition, x, y)
    )
    check(lambda a, b: mg.where(mg.tensor(condition), a, b), x, y)


def test_where_with_scalar_branch():
    x = rand(3, 4, seed=52)
    check(lambda t: mg.where(mg.tensor(x) > 0, t, 0.0), x)
    out = mg.where(mg.tensor([True, False]), mg.tensor([1.0, 2.0]), 0.0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), [1.0, 0.0])


def test_where_errors():
    with pytest.raises(TypeError, match="bool"):
        mg.where(np.array([1, 0]), mg.zeros(2), mg.zeros(2))
    with pytest.raises(ValueError) as info:
        mg.where(np.array([True, False]), mg.zeros(2), mg.zeros(3))
    assert "(2,)" in str(info.value) and "(3,)" in str(info.value)


@pytest.mark.parametrize("mask_shape", [(3, 4), (4,), (3, 1), ()], ids=str)
def test_masked_fill(mask_shape):
    mask = np.random.default_rng(2).random(mask_shape) < 0.5
    x = rand(3, 4, seed=53)
    np.testing.assert_array_equal(
        value(lambda t: t.masked_fill(mask, -7.0), x), np.where(mask, -7.0, x)
    )
    check(lambda t: mg.masked_fill(t, mg.tensor(mask), -5.0), x)


def test_masked_fill_errors():
    with pytest.raises(ValueError) as info:
        mg.zeros(3, 4).masked_fill(np.zeros((2, 4), dtype=bool), 0.0)
    assert "(2, 4)" in str(info.value) and "(3, 4)" in str(info.value)
    with pytest.raises(ValueError, match=r"\(2, 3, 4\)"):  # would grow the tensor
        mg.zeros(3, 4).masked_fill(np.zeros((2, 3, 4), dtype=bool), 0.0)
    with pytest.raises(TypeError, match="bool"):
        mg.zeros(3).masked_fill(np.zeros(3), 0.0)


# -- softmax family -----------------------------------------------------------------------


def np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_softmax_and_log_softmax(dim):
    x = rand(2, 3, 4, low=-3, high=3, seed=60)
    np.testing.assert_allclose(value(lambda t: t.softmax(dim), x), np_softmax(x, dim), rtol=1e-12)
    np.testing.assert_allclose(
        value(lambda t: mg.log_softmax(t, dim), x), np.log(np_softmax(x, dim)), rtol=1e-12
    )
    check(lambda t: mg.softmax(t, dim), x)
    check(lambda t: t.log_softmax(dim), x)


def test_softmax_is_stable_for_large_inputs():
    x = mg.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, 0.0]])
    out = mg.softmax(x, -1).numpy()
    np.testing.assert_allclose(out[0], np_softmax(np.array([0.0, 1.0, 2.0]), 0), rtol=1e-6)
    np.testing.assert_allclose(out[1], [0.0, 0.0, 1.0], atol=1e-7)
    log = mg.log_softmax(x, -1).numpy()
    assert np.isfinite(log).all()
    np.testing.assert_allclose(log[0], np.log(np_softmax(np.array([0.0, 1.0, 2.0]), 0)), rtol=1e-6)
    np.testing.assert_allclose(log[1], [-1000.0, -1000.0, 0.0], rtol=1e-6)


def test_softmax_float32():
    x = mg.randn(4, 5, requires_grad=True)
    y = mg.softmax(x, 0)
    assert y.dtype == np.float32
    (y * mg.randn(4, 5)).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_allclose(y.numpy().sum(0), np.ones(5), rtol=1e-6)


@pytest.mark.parametrize("mask_shape", [(2, 3, 5), (2, 1, 5), (5,)], ids=str)
@pytest.mark.parametrize("scale", [1.0, 0.125])
def test_masked_softmax(mask_shape, scale):
    scores = rand(2, 3, 5, low=-3, high=3, seed=61)
    mask = np.random.default_rng(3).random(mask_shape) < 0.6
    mask[..., 0] = True  # every row keeps at least one position
    expected = np_softmax(np.where(mask, scores * scale, -np.inf), -1)
    out = value(lambda s: mg.masked_softmax(s, mask, scale), scores)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-300)
    assert (out[np.broadcast_to(~mask, out.shape)] == 0).all()
    check(lambda s: mg.masked_softmax(s, mg.tensor(mask), scale=scale), scores)


def test_masked_softmax_without_mask_is_scaled_softmax():
    scores = rand(3, 4, seed=62)
    np.testing.assert_allclose(
        value(lambda s: mg.masked_softmax(s, scale=0.5), scores),
        np_softmax(scores * 0.5, -1),
        rtol=1e-12,
    )
    check(lambda s: mg.masked_softmax(s, None, 2.0), scores)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_softmax_fully_masked_row_is_uniform_and_passes_no_gradient(dtype):
    scores = mg.tensor(rand(2, 4, seed=63).astype(dtype), requires_grad=True)
    mask = np.array([[True, True, False, True], [False, False, False, False]])
    out = mg.masked_softmax(scores, mask)
    np.testing.assert_allclose(out.numpy()[1], [0.25] * 4)
    (out * mg.tensor(rand(2, 4, seed=64))).sum().backward()
    assert np.isfinite(scores.grad.numpy()).all()
    np.testing.assert_array_equal(scores.grad.numpy()[0, 2], 0.0)
    # the dead row's output does not depend on its scores: finite differences give 0
    np.testing.assert_array_equal(scores.grad.numpy()[1], 0.0)


def test_masked_softmax_dead_rows_against_finite_differences():
    scores = rand(2, 3, 4, seed=65)
    mask = np.array([[[True, False, True, True]], [[False, False, False, False]]])  # (2, 1, 4)
    check(
        lambda s: mg.masked_softmax(s, mask, scale=0.5) * mg.tensor(rand(2, 3, 4, seed=66)), scores
    )


def test_masked_softmax_errors():
    with pytest.raises(ValueError) as info:
        mg.masked_softmax(mg.zeros(2, 3), np.ones((2, 4), dtype=bool))
    assert "(2, 4)" in str(info.value) and "(2, 3)" in str(info.value)
    with pytest.raises(TypeError, match="bool"):
        mg.masked_softmax(mg.zeros(2, 3), np.ones((2, 3)))


# -- cross_entropy ------------------------------------------------------------------------


def np_cross_entropy(logits, target, ignore_index=-100):
    keep = target != ignore_index
    log_probs = np.log(np_softmax(logits, 1))
    return -log_probs[np.nonzero(keep)[0], target[keep]].mean()


@pytest.mark.parametrize("target", [np.array([0, 2, 1, 2, 0]), np.array([3, 3, 3, 3, 3])])
def test_cross_entropy(target):
    logits = rand(5, 4, low=-3, high=3, seed=70)
    out = value(lambda t: mg.cross_entropy(t, target), logits)
    assert out.shape == ()
    np.testing.assert_allclose(out, np_cross_entropy(logits, target), rtol=1e-12)
    check(lambda t: mg.cross_entropy(t, mg.tensor(target)), logits)


@pytest.mark.parametrize("ignore_index", [-100, 1, -1])
def test_cross_entropy_ignore_index(ignore_index):
    logits = rand(6, 3, low=-3, high=3, seed=71)
    target = np.array([0, ignore_index, 2, 1, ignore_index, 0])
    out = value(lambda t: mg.cross_entropy(t, target, ignore_index=ignore_index), logits)
    np.testing.assert_allclose(out, np_cross_entropy(logits, target, ignore_index), rtol=1e-12)
    check(lambda t: mg.cross_entropy(t, target, ignore_index=ignore_index), logits)
    x = mg.tensor(logits, requires_grad=True)
    mg.cross_entropy(x, target, ignore_index=ignore_index).backward()
    ignored = target == ignore_index
    np.testing.assert_array_equal(x.grad.numpy()[ignored], 0.0)


def test_cross_entropy_every_row_ignored_is_nan_with_zero_gradient():
    x = mg.tensor(rand(2, 3, seed=72), requires_grad=True)
    loss = mg.cross_entropy(x, [-100, -100])
    assert np.isnan(loss.item())  # 0 / 0, as in torch
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)


def test_cross_entropy_float32_and_stability():
    logits = mg.tensor([[1000.0, 0.0], [0.0, -1000.0]], requires_grad=True)
    loss = mg.cross_entropy(logits, mg.tensor([1, 1]))
    assert loss.dtype == np.float32
    np.testing.assert_allclose(loss.item(), 1000.0, rtol=1e-6)  # mean of 1000 and 1000
    loss.backward()
    np.testing.assert_allclose(logits.grad.numpy(), [[0.5, -0.5], [0.5, -0.5]], atol=1e-6)


def test_cross_entropy_errors():
    logits = mg.zeros(4, 3)
    with pytest.raises(ValueError) as info:
        mg.cross_entropy(logits, [0, 1])
    assert "(4, 3)" in str(info.value) and "(2,)" in str(info.value)
    with pytest.raises(ValueError, match=r"\(4,\)"):
        mg.cross_entropy(mg.zeros(4), [0, 1, 2, 0])
    with pytest.raises(TypeError, match="float"):
        mg.cross_entropy(logits, np.zeros(4))
    with pytest.raises(IndexError, match="3"):  # as torch
        mg.cross_entropy(logits, [0, 1, 3, 0])


# -- dropout ------------------------------------------------------------------------------


def test_dropout_training_zeroes_and_scales():
    mg.manual_seed(0)
    x = mg.ones(200, 100, requires_grad=True)
    y = mg.dropout(x, p=0.3)
    out = y.numpy()
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(out[kept], 1 / 0.7, rtol=1e-6)
    assert y.dtype == np.float32
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 1 / 0.7, 0.0), rtol=1e-6)


def test_dropout_eval_and_p_zero_are_identity():
    x = mg.randn(3, 4)
    assert mg.dropout(x, 0.5, training=False) is x
    assert mg.dropout(x, 0.0) is x


def test_dropout_is_seeded():
    x = mg.ones(50)
    mg.manual_seed(7)
    first = mg.dropout(x, 0.5).numpy()
    mg.manual_seed(7)
    np.testing.assert_array_equal(mg.dropout(x, 0.5).numpy(), first)
    assert not np.array_equal(mg.dropout(x, 0.5).numpy(), first)  # the generator moved on


def test_dropout_gradcheck():
    def fn(t):
        mg.manual_seed(3)  # the same mask on every evaluation
        return mg.dropout(t, 0.4)

    check(fn, rand(4, 5, seed=80))


def test_dropout_bad_p():
    with pytest.raises(ValueError, match="1.5"):
        mg.dropout(mg.ones(3), 1.5)
    with pytest.raises(ValueError, match="-0.1"):
        mg.dropout(mg.ones(3), -0.1)
