"""mg.func (minigrad/func.py): grad, vjp, jvp and hessian against torch.func's, in float64, on a
polynomial, tanh of a matrix product and a softmax cross-entropy; argnums, has_aux, nesting, and
the refusals."""

import numpy as np
import pytest

import minigrad as mg

torch = pytest.importorskip("torch")
torch_func = pytest.importorskip("torch.func")

TOLERANCE = dict(rtol=1e-10, atol=1e-12)
TARGETS = np.array([2, 0, 1])


def _lib(name):
    if name == "torch":
        return torch, torch.nn.functional
    return mg, mg.nn.functional


def polynomial(lib, F, x, w):
    return (x**3 * w - 2.0 * x * w**2 + 0.5 * x).sum()


def tanh_matmul(lib, F, x, w):
    return lib.tanh(x @ w).sum() + (lib.tanh(x @ w) ** 2).mean()


def softmax_cross_entropy(lib, F, x, w):
    rows = TARGETS[: x.shape[0]]
    targets = lib.tensor(rows) if lib is mg else torch.tensor(rows)
    return F.cross_entropy(x @ w, targets)


# name -> (scalar function of (lib, F, x, w), shape of x, shape of w)
FUNCTIONS = {
    "polynomial": (polynomial, (3, 4), (3, 4)),
    "tanh matmul": (tanh_matmul, (3, 4), (4, 2)),
    "softmax cross-entropy": (softmax_cross_entropy, (3, 4), (4, 3)),
}


def _inputs(name, seed=0):
    _, x_shape, w_shape = FUNCTIONS[name]
    rng = np.random.default_rng(seed)
    return rng.normal(size=x_shape), rng.normal(size=w_shape)


def _on(library, name):
    """FUNCTIONS[name] as a function of (x, w) in one library."""
    lib, F = _lib(library)
    return lambda x, w: FUNCTIONS[name][0](lib, F, x, w)


def _close(ours, theirs):
    if isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _close(o, t)
        return
    assert isinstance(ours, mg.Tensor)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **TOLERANCE)


def _t(array):
    return torch.tensor(array, dtype=torch.float64)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,), -1])
def test_grad_matches_torch_func(name, argnums):
    x, w = _inputs(name)
    ours = mg.func.grad(_on("mg", name), argnums=argnums)(x, w)
    theirs = torch_func.grad(_on("torch", name), argnums=argnums)(_t(x), _t(w))
    _close(ours, theirs)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_grad_with_aux_returns_the_aux_unchanged(name):
    x, w = _inputs(name)

    def with_aux(library):
        function = _on(library, name)
        return lambda x, w: (function(x, w), {"x": x})

    (ours, aux) = mg.func.grad(with_aux("mg"), argnums=(0, 1), has_aux=True)(x, w)
    (theirs, _) = torch_func.grad(with_aux("torch"), argnums=(0, 1), has_aux=True)(_t(x), _t(w))
    _close(ours, theirs)
    np.testing.assert_array_equal(aux["x"].numpy(), x)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_vjp_matches_torch_func(name):
    x, w = _inputs(name)
    lib_functions = {library: _on(library, name) for library in ("mg", "torch")}
    # a non-scalar output of both arguments
    ours_out, ours_fn = mg.func.vjp(lambda x, w: mg.tanh(x) * (w**2).sum(), x, w)
    theirs_out, theirs_fn = torch_func.vjp(lambda x, w: torch.tanh(x) * (w**2).sum(), _t(x), _t(w))
    _close(ours_out, theirs_out)
    assert ours_out.grad_fn is None
    cotangent = np.random.default_rng(1).normal(size=ours_out.shape)
    _close(ours_fn(cotangent), theirs_fn(_t(cotangent)))
    _close(ours_fn(mg.tensor(cotangent * 3.0)), theirs_fn(_t(cotangent * 3.0)))  # called twice
    ours_out, ours_fn = mg.func.vjp(lib_functions["mg"], x, w)
    theirs_out, theirs_fn = torch_func.vjp(lib_functions["torch"], _t(x), _t(w))
    _close(ours_out, theirs_out)
    _close(ours_fn(np.array(1.5)), theirs_fn(_t(1.5)))


def test_vjp_of_a_tuple_output_and_has_aux():
    x = np.random.default_rng(2).normal(size=(3, 2))
    (ours_out, ours_fn, aux) = mg.func.vjp(lambda x: ((x.exp(), x**2), "aux"), x, has_aux=True)
    theirs_out, theirs_fn = torch_func.vjp(lambda x: (x.exp(), x**2), _t(x))
    _close(ours_out, theirs_out)
    assert aux == "aux"
    cotangents = (np.ones((3, 2)), np.full((3, 2), 2.0))
    _close(ours_fn(cotangents), theirs_fn(tuple(_t(c) for c in cotangents)))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_jvp_matches_torch_func(name):
    x, w = _inputs(name)
    rng = np.random.default_rng(3)
    tangents = (rng.normal(size=x.shape), rng.normal(size=w.shape))
    ours = mg.func.jvp(_on("mg", name), (x, w), tangents)
    theirs = torch_func.jvp(_on("torch", name), (_t(x), _t(w)), tuple(map(_t, tangents)))
    _close(ours, theirs)
    assert ours[0].grad_fn is None
    # a non-scalar output, and has_aux
    out, pushed, aux = mg.func.jvp(lambda x: (mg.tanh(x @ x.T), 7), (x,), (tangents[0],), True)
    theirs = torch_func.jvp(lambda x: torch.tanh(x @ x.T), (_t(x),), (_t(tangents[0]),))
    _close((out, pushed), theirs)
    assert aux == 7


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_hessian_matches_torch_func(name, argnums):
    x, w = _inputs(name)
    # small inputs (the rows are built one by one): x of shape (2, 3), w to fit
    x, w = x[:2, :3], (w[:2, :3] if name == "polynomial" else w[:3])
    ours = mg.func.hessian(_on("mg", name), argnums=argnums)(x, w)
    theirs = torch_func.hessian(_on("torch", name), argnums=argnums)(_t(x), _t(w))
    _close(ours, theirs)


def test_hessian_against_finite_differences_of_grad():
    x = np.array([0.3, -1.2, 0.8])

    def f(x):
        return (x.exp() * x**2).sum() + (x[0] * x[1] * x[2])

    hessian = mg.func.hessian(f)(x).numpy()
    gradient = mg.func.grad(f)
    eps, columns = 1e-6, []
    for k in range(3):
        step = np.eye(3)[k] * eps
        columns.append((gradient(x + step).numpy() - gradient(x - step).numpy()) / (2 * eps))
    np.testing.assert_allclose(hessian, np.stack(columns, axis=1), rtol=1e-6, atol=1e-7)


def test_nested_grad_is_the_second_derivative_and_inputs_are_left_alone():
    x = mg.tensor([0.5, 1.5, -0.3], dtype=mg.float64)
    second = mg.func.grad(lambda x: mg.func.grad(lambda y: (y**4).sum())(x).sum())(x)
    np.testing.assert_allclose(second.numpy(), 12 * x.numpy() ** 2, **TOLERANCE)
    assert not x.requires_grad and x.grad is None
    # an input that requires grad keeps its graph: the gradient can be differentiated again
    leaf = mg.tensor([0.5, 1.5], dtype=mg.float64, requires_grad=True)
    g = mg.func.grad(lambda y: (y**3).sum())(leaf)
    (again,) = mg.autograd.grad(g.sum(), leaf)
    np.testing.assert_allclose(again.numpy(), 6 * leaf.numpy(), **TOLERANCE)


def test_an_argument_the_output_does_not_use_gets_zeros_as_in_torch():
    ours = mg.func.grad(lambda x, y: (x**2).sum(), argnums=(0, 1))(np.ones(2), np.ones(3))
    np.testing.assert_array_equal(ours[1].numpy(), np.zeros(3))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: mg.func.grad(lambda x: x * 2)(np.ones(3)), mg.ShapeError, r"scalar.*\(3,\)"),
        (lambda: mg.func.grad(lambda x: 3.0)(np.ones(3)), mg.ShapeError, "got float"),
        (lambda: mg.func.grad(lambda x: x.sum(), argnums=1)(np.ones(3)), mg.ArgumentError,
         r"argnums 1 out of range.*1 positional"),
        (lambda: mg.func.grad(lambda x, y: x.sum(), argnums=(0, 2))(np.ones(3), np.ones(2)),
         mg.ArgumentError, r"argnums \(0, 2\) out of range.*2 positional"),
        (lambda: mg.func.grad(lambda x: x.sum(), argnums=(0, -1))(np.ones(3)), mg.ArgumentError,
         "repeat"),
        (lambda: mg.func.grad(lambda x: x.sum(), argnums="0")(np.ones(3)), mg.ArgumentError,
         "int or a non-empty tuple"),
        (lambda: mg.func.grad(lambda x: x.sum())(np.arange(3)), mg.DTypeError,
         "floating point, got int64"),
        (lambda: mg.func.grad(lambda x: x.sum(), has_aux=True)(np.ones(3)), mg.ArgumentError,
         r"pair \(output, aux\)"),
        (lambda: mg.func.jvp(lambda x: x * 2, (np.ones(3),), (np.ones(2),)), mg.ShapeError,
         r"tangent 0: expected the shape of its primal, \(3,\), got \(2,\)"),
        (lambda: mg.func.jvp(lambda x: x * 2, (np.ones(3),), ()), mg.ShapeError,
         "expected 1 .*got 0"),
        (lambda: mg.func.jvp(lambda x: x * 2, np.ones(3), np.ones(3)), mg.ArgumentError,
         "must be tuples"),
        (lambda: mg.func.vjp(lambda x: x * 2, np.ones(3))[1](np.ones(4)), mg.ShapeError,
         r"cotangent 0: expected the shape of f's output, \(3,\), got \(4,\)"),
        (lambda: mg.func.vjp(lambda x: "out", np.ones(3)), mg.ArgumentError,
         "a Tensor or a tuple of Tensors, got str"),
        (lambda: mg.func.hessian(lambda x: x * x)(np.ones(2)), mg.ShapeError, "scalar"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_a_clear_message(call, error, message):
    with pytest.raises(error, match=message):
        call()
