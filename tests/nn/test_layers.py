"""Linear, Embedding, Dropout and the activations: gradient checks, PyTorch comparisons, errors."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from minigrad.nn import functional as F

TOLERANCE = {np.float64: 1e-5, np.float32: 1e-4}


def _torch():
    return pytest.importorskip("torch")


# -- Linear ---------------------------------------------------------------------------------


def test_linear_init_matches_torch_default_bounds():
    mg.manual_seed(0)
    layer = nn.Linear(400, 100)
    bound = 1 / math.sqrt(400)
    assert layer.weight.shape == (100, 400) and layer.bias.shape == (100,)
    assert layer.weight.dtype == np.float32
    assert np.abs(layer.weight.data).max() <= bound and np.abs(layer.bias.data).max() <= bound
    # U(-b, b) has standard deviation b / sqrt(3); 40000 draws pin it to about 0.5%
    assert abs(layer.weight.data.std() - bound / math.sqrt(3)) < 0.01 * bound
    assert abs(layer.weight.data.mean()) < 0.01 * bound


def test_linear_init_repeats_under_manual_seed():
    mg.manual_seed(7)
    first = nn.Linear(5, 3)
    mg.manual_seed(7)
    second = nn.Linear(5, 3)
    np.testing.assert_array_equal(first.weight.data, second.weight.data)
    np.testing.assert_array_equal(first.bias.data, second.bias.data)


def test_linear_gradcheck_float64_on_batched_input():
    mg.manual_seed(1)
    layer = nn.Linear(3, 2, dtype=np.float64)
    x = mg.randn(2, 4, 3, dtype=np.float64)
    assert mg.gradcheck(lambda x, w, b: F.linear(x, w, b), [x, layer.weight, layer.bias])
    assert mg.gradcheck(lambda x, w: F.linear(x, w), [mg.randn(3, dtype=np.float64), layer.weight])


def test_linear_without_bias():
    layer = nn.Linear(3, 2, bias=False)
    assert layer.bias is None
    assert [name for name, _ in layer.named_parameters()] == ["weight"]
    x = mg.randn(4, 3)
    np.testing.assert_allclose(layer(x).data, x.data @ layer.weight.data.T, rtol=1e-6)
    assert repr(layer) == "Linear(in_features=3, out_features=2, bias=False)"


def test_linear_shape_and_dtype_errors_name_what_was_expected():
    layer = nn.Linear(3, 2)
    with pytest.raises(ValueError, match=r"in_features=3.*\(4, 5\)"):
        layer(mg.randn(4, 5))
    with pytest.raises(TypeError, match="float64.*float32"):
        layer(mg.randn(4, 3, dtype=np.float64))
    with pytest.raises(ValueError, match="in_features"):
        nn.Linear(0, 2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_linear_matches_torch_values_and_grads(dtype):
    torch = _torch()
    mg.manual_seed(2)
    layer = nn.Linear(5, 3, dtype=dtype)
    reference = torch.nn.Linear(5, 3, dtype=getattr(torch, np.dtype(dtype).name))
    with torch.no_grad():
        reference.weight.copy_(torch.from_numpy(layer.weight.data))
        reference.bias.copy_(torch.from_numpy(layer.bias.data))
    x_array = np.random.default_rng(0).standard_normal((2, 4, 5)).astype(dtype)
    upstream = np.random.default_rng(1).standard_normal((2, 4, 3)).astype(dtype)

    x = mg.tensor(x_array, requires_grad=True)
    y = layer(x)
    y.backward(upstream)
    x_torch = torch.tensor(x_array, requires_grad=True)
    y_torch = reference(x_torch)
    y_torch.backward(torch.from_numpy(upstream))

    tol = TOLERANCE[dtype]
    assert y.shape == (2, 4, 3) and y.dtype == dtype
    np.testing.assert_allclose(y.data, y_torch.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(x.grad.data, x_torch.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(
        layer.weight.grad.data, reference.weight.grad.numpy(), rtol=tol, atol=tol
    )
    np.testing.assert_allclose(
        layer.bias.grad.data, reference.bias.grad.numpy(), rtol=tol, atol=tol
    )


@pytest.mark.parametrize(
    "x_shape, out_features, bias, needs",
    [
        ((5,), 3, True, (True, True, True)),  # 1-D input
        ((2, 4, 5), 3, False, (True, True)),
        ((4096, 32), 64, True, (True, True, True)),  # big enough for the two-thread path
        ((3, 8), 600, True, (False, True, True)),  # more columns than rows; x needs no grad
        ((6, 8), 4, True, (True, False, False)),  # frozen weight and bias
        ((0, 5), 3, True, (True, True, True)),  # no rows: zero gradients for weight and bias
        ((2, 3, 0, 5), 3, True, (True, True, True)),
    ],
)
def test_functional_linear_matches_torch(x_shape, out_features, bias, needs):
    """F.linear as a torch user calls it, one graph node (Linear), gradients of every input that
    asks for one; the weight gradient comes out C-contiguous (the optimizer's layout)."""
    torch = _torch()
    rng = np.random.default_rng(len(x_shape) * 1000 + out_features)
    arrays = [
        rng.standard_normal(x_shape).astype(np.float32),
        rng.standard_normal((out_features, x_shape[-1])).astype(np.float32),
        rng.standard_normal(out_features).astype(np.float32),
    ][: 3 if bias else 2]
    ours = [mg.tensor(a, requires_grad=need) for a, need in zip(arrays, needs)]
    theirs = [torch.tensor(a, requires_grad=need) for a, need in zip(arrays, needs)]
    y, y_torch = F.linear(*ours), torch.nn.functional.linear(*theirs)
    assert y.grad_fn.name == "Linear" and y.shape == tuple(y_torch.shape)
    upstream = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(upstream)
    y_torch.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(y.data, y_torch.detach().numpy(), rtol=1e-5, atol=1e-4)
    for mine, reference, need in zip(ours, theirs, needs):
        if not need:
            assert mine.grad is None
            continue
        assert mine.grad.shape == mine.shape
        np.testing.assert_allclose(mine.grad.data, reference.grad.numpy(), rtol=1e-5, atol=1e-3)
    if needs[1]:
        assert ours[1].grad.data.flags.c_contiguous


def test_functional_linear_errors_and_in_place_changes():
    x, weight = mg.randn(4, 3, requires_grad=True), mg.randn(2, 3, requires_grad=True)
    with pytest.raises(
        ValueError,
        match=r"linear: bias must have shape \(2,\) and dtype float32; got \(3,\) float32",
    ):
        F.linear(x, weight, mg.randn(3))
    with pytest.raises(
        ValueError,
        match=r"linear: bias must have shape \(2,\) and dtype float32; got \(2,\) float64",
    ):
        F.linear(x, weight, mg.randn(2, dtype=np.float64))
    with pytest.raises(
        ValueError, match=r"weight must have shape \(out_features, in_features\); got \(3,\)"
    ):
        F.linear(x, mg.randn(3))
    y = F.linear(x, weight)
    with mg.no_grad():
        weight.add_(1.0)  # backward needs the weight as it was
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.sum().backward()
    integer = F.linear(mg.tensor(np.arange(6).reshape(2, 3)), mg.tensor(np.ones((4, 3), np.int64)))
    np.testing.assert_array_equal(
        integer.data, np.arange(6).reshape(2, 3) @ np.ones((3, 4), np.int64)
    )


# -- Embedding ------------------------------------------------------------------------------


def test_embedding_init_is_standard_normal_with_zero_padding_row():
    mg.manual_seed(3)
    table = nn.Embedding(400, 50, padding_idx=2)
    assert table.weight.dtype == np.float32
    np.testing.assert_array_equal(table.weight.data[2], np.zeros(50))
    others = np.delete(table.weight.data, 2, axis=0)
    assert abs(others.mean()) < 0.02 and abs(others.std() - 1) < 0.02  # 19950 draws
    assert nn.Embedding(10, 3, padding_idx=-1).padding_idx == 9


def test_embedding_forward_picks_rows_for_any_id_shape():
    table = nn.Embedding(6, 2)
    ids = np.array([[[0, 5], [3, 3]]])
    out = table(mg.tensor(ids))
    assert out.shape == (1, 2, 2, 2)
    np.testing.assert_array_equal(out.data, table.weight.data[ids])
    np.testing.assert_array_equal(
        table(ids.astype(np.int32)).data, table.weight.data[ids]
    )  # plain array, int32
    assert table(mg.tensor(4)).shape == (2,)


def test_embedding_gradcheck_float64_with_repeated_ids():
    mg.manual_seed(4)
    weight = mg.randn(5, 3, dtype=np.float64)
    ids = np.array([[1, 4, 1], [0, 1, 3]])
    assert mg.gradcheck(lambda w: F.embedding(ids, w), [weight])


def test_embedding_repeated_ids_accumulate_and_padding_row_gets_zero_grad():
    table = nn.Embedding(4, 2, padding_idx=0, dtype=np.float64)
    ids = mg.tensor([[1, 1, 0], [1, 3, 0]])
    upstream = np.arange(12, dtype=np.float64).reshape(2, 3, 2)
    table(ids).backward(upstream)
    # row 1 is used at (0,0), (0,1), (1,0): [0,1] + [2,3] + [6,7]; row 3 at (1,1); row 0 is padding
    np.testing.assert_array_equal(table.weight.grad.data, [[0, 0], [8, 11], [0, 0], [8, 9]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_embedding_matches_torch_values_and_grads(dtype):
    torch = _torch()
    mg.manual_seed(5)
    table = nn.Embedding(7, 4, padding_idx=3, dtype=dtype)
    reference = torch.nn.Embedding(7, 4, padding_idx=3, dtype=getattr(torch, np.dtype(dtype).name))
    with torch.no_grad():
        reference.weight.copy_(torch.from_numpy(table.weight.data))
    ids = np.random.default_rng(0).integers(0, 7, size=(3, 5))
    ids[0, :2] = 3
    upstream = np.random.default_rng(1).standard_normal((3, 5, 4)).astype(dtype)
    out = table(ids)
    out.backward(upstream)
    out_torch = reference(torch.from_numpy(ids))
    out_torch.backward(torch.from_numpy(upstream))
    tol = TOLERANCE[dtype]
    np.testing.assert_allclose(out.data, out_torch.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(
        table.weight.grad.data, reference.weight.grad.numpy(), rtol=tol, atol=tol
    )
    np.testing.assert_array_equal(table.weight.grad.data[3], np.zeros(4))


def test_embedding_rejects_bad_ids():
    table = nn.Embedding(10, 3)
    with pytest.raises(TypeError, match="integer.*float32"):
        table(mg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="bool"):
        table(np.array([True, False]))
    with pytest.raises(IndexError, match=r"\[0, 10\).*got 10"):
        table(mg.tensor([[1, 10], [2, 3]]))
    with pytest.raises(IndexError, match=r"\[0, 10\).*got -1"):
        table(mg.tensor([-1, 3]))
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(10, 3, padding_idx=10)


@pytest.mark.parametrize(
    "settings",
    [
        dict(max_norm=1.0),
        dict(max_norm=1.5, norm_type=1.0),
        dict(max_norm=2.0, norm_type=math.inf),
        dict(padding_idx=1, max_norm=1.0),
        dict(padding_idx=-2, freeze=False),
        dict(freeze=False),
    ],
)
def test_from_pretrained_and_max_norm_match_torch(settings):
    """from_pretrained keeps the rows as given (the padding row too); max_norm scales the rows a
    forward pass looks up, in place, before the lookup (a repeated id once)."""
    torch = _torch()
    table = (np.random.default_rng(2).standard_normal((6, 4)) * 2).astype(np.float32)
    ours = nn.Embedding.from_pretrained(mg.tensor(table), **{"freeze": False, **settings})
    theirs = torch.nn.Embedding.from_pretrained(
        torch.from_numpy(table.copy()), **{"freeze": False, **settings}
    )
    ids = np.array([[0, 2, 2], [5, 1, 0]])
    upstream = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    out, reference = ours(ids), theirs(torch.from_numpy(ids))
    out.backward(upstream)
    reference.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(out.numpy(), reference.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        ours.weight.numpy(), theirs.weight.detach().numpy(), rtol=1e-6, atol=1e-7
    )
    np.testing.assert_array_equal(ours.weight.grad.numpy(), theirs.weight.grad.numpy())
    if "max_norm" in settings:
        np.testing.assert_array_equal(
            ours.weight.numpy()[[3, 4]], table[[3, 4]]
        )  # rows not looked up: as given
        assert (
            np.linalg.norm(
                ours.weight.numpy()[[0, 1, 2, 5]], ord=settings.get("norm_type", 2.0), axis=1
            )
            <= settings["max_norm"] + 1e-5
        ).all()


def test_from_pretrained_freezes_by_default_and_refuses_bad_tables():
    table = np.arange(12, dtype=np.float64).reshape(4, 3)
    frozen = nn.Embedding.from_pretrained(table)
    assert not frozen.weight.requires_grad and frozen.weight.dtype == np.float64
    table[0, 0] = 99.0  # a copy: the module keeps its own rows
    assert frozen.weight.numpy()[0, 0] == 0.0
    with pytest.raises(
        ValueError,
        match=r"2-D float Tensor or array .* got ndarray of shape \(3,\) and dtype float64",
    ):
        nn.Embedding.from_pretrained(table[0])
    with pytest.raises(ValueError, match="dtype int64"):
        nn.Embedding.from_pretrained(np.arange(6).reshape(2, 3))
    with pytest.raises(
        ValueError, match="scale_grad_by_freq=True and sparse=True are not supported"
    ):
        nn.Embedding(5, 2, sparse=True)
    with pytest.raises(ValueError, match="max_norm must be a number > 0; got -1.0"):
        F.embedding(mg.tensor([0]), mg.tensor(table), max_norm=-1.0)


# -- Dropout and activations ----------------------------------------------------------------


def test_dropout_scales_kept_elements_and_is_identity_in_eval():
    mg.manual_seed(6)
    layer = nn.Dropout(0.25)
    x = mg.ones(200, 100)
    y = layer(x).data
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75)
    assert abs(kept.mean() - 0.75) < 0.01  # 20000 draws
    layer.eval()
    assert layer(x) is x
    with pytest.raises(ValueError, match=r"\[0, 1\].*1.5"):
        nn.Dropout(1.5)


def test_dropout_gradient_flows_only_through_kept_elements():
    mg.manual_seed(8)
    x = mg.ones(50, dtype=np.float64, requires_grad=True)
    y = nn.Dropout(0.5)(x)
    y.sum().backward()
    np.testing.assert_array_equal(
        x.grad.data, y.data
    )  # d(x * mask / 0.5)/dx = mask / 0.5 = y when x == 1


def test_activations_compute_their_formulas():
    values = np.array([-2.0, -0.5, 0.0, 0.5, 3.0])
    x = mg.tensor(values)
    np.testing.assert_allclose(nn.Tanh()(x).data, np.tanh(values), rtol=1e-12)
    np.testing.assert_allclose(nn.Sigmoid()(x).data, 1 / (1 + np.exp(-values)), rtol=1e-12)
    np.testing.assert_array_equal(nn.ReLU()(x).data, [0, 0, 0, 0.5, 3.0])
    assert nn.Identity()(x) is x


def test_activation_modules_gradcheck():
    x = mg.tensor(np.array([[-1.3, 0.2, 0.7], [2.1, -0.4, 0.9]]))
    for layer in (nn.Tanh(), nn.Sigmoid(), nn.ReLU()):
        assert mg.gradcheck(layer, [x])


# -- the activation, softmax and reshaping modules ----------------------------------------------

ACTIVATIONS = {  # name -> (minigrad module, torch module given torch.nn)
    "GELU": (lambda: nn.GELU(), lambda T: T.GELU()),
    "GELU_tanh": (lambda: nn.GELU("tanh"), lambda T: T.GELU("tanh")),
    "SiLU": (lambda: nn.SiLU(), lambda T: T.SiLU()),
    "LeakyReLU": (lambda: nn.LeakyReLU(0.3), lambda T: T.LeakyReLU(0.3)),
    "ELU": (lambda: nn.ELU(alpha=0.5), lambda T: T.ELU(alpha=0.5)),
    "Softplus": (
        lambda: nn.Softplus(beta=2.0, threshold=4.0),
        lambda T: T.Softplus(beta=2.0, threshold=4.0),
    ),
    "Softmax": (lambda: nn.Softmax(dim=1), lambda T: T.Softmax(dim=1)),
    "LogSoftmax": (lambda: nn.LogSoftmax(dim=-1), lambda T: T.LogSoftmax(dim=-1)),
    "ReLU_inplace": (lambda: nn.ReLU(inplace=True), lambda T: T.ReLU(inplace=True)),
    "Flatten": (lambda: nn.Flatten(), lambda T: T.Flatten()),
    "Flatten_0_1": (lambda: nn.Flatten(0, 1), lambda T: T.Flatten(0, 1)),
    "Unflatten": (lambda: nn.Unflatten(1, (2, 3)), lambda T: T.Unflatten(1, (2, 3))),
    "Unflatten_inferred": (lambda: nn.Unflatten(-1, (-1, 2)), lambda T: T.Unflatten(-1, (-1, 2))),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_modules_match_torch_values_grads_and_repr(name, dtype):
    torch = _torch()
    ours, theirs = ACTIVATIONS[name][0](), ACTIVATIONS[name][1](torch.nn)
    assert repr(ours) == repr(theirs)
    array = np.random.default_rng(0).standard_normal((2, 6, 2)).astype(dtype) * 3
    upstream = (
        np.random.default_rng(1).standard_normal(theirs(torch.tensor(array)).shape).astype(dtype)
    )
    x, x_torch = mg.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    y, y_torch = ours(x * 1), theirs(x_torch * 1)  # * 1: in-place modules may not write into a leaf
    y.backward(upstream)
    y_torch.backward(torch.from_numpy(upstream))
    tol = TOLERANCE[dtype]
    assert y.shape == tuple(y_torch.shape) and y.dtype == dtype
    np.testing.assert_allclose(y.data, y_torch.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(x.grad.data, x_torch.grad.numpy(), rtol=tol, atol=tol)


def test_module_settings_are_checked_and_used_when_changed():
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("erf")
    layer = nn.LeakyReLU(0.1)
    layer.negative_slope = 0.5  # read at each call, as torch's
    assert layer(mg.tensor([-2.0])).item() == -1.0
    with pytest.raises(ValueError, match=r"cannot view 6 elements as shape \(4, 2\)"):
        nn.Unflatten(1, (4, 2))(mg.zeros(2, 6))
    with pytest.raises(IndexError, match="out of range"):
        nn.Unflatten(3, (2, 3))(mg.zeros(2, 6))
    assert nn.Identity(54, unused="ignored")(mg.ones(2)).shape == (2,)
    assert nn.Flatten()(mg.zeros(0, 2, 3)).shape == (0, 6)


def test_dropout_inplace_module_writes_into_its_input():
    mg.manual_seed(3)
    x = mg.ones(100) * 1
    assert nn.Dropout(0.5, inplace=True)(x) is x
    assert set(np.unique(x.numpy())) == {0.0, 2.0}
    assert repr(nn.Dropout(0.5, inplace=True)) == "Dropout(p=0.5, inplace=True)"


# -- BatchNorm1d / BatchNorm2d against torch's ------------------------------------------------

BATCH_NORMS = [("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5)), ("BatchNorm2d", (2, 3, 4, 4))]
BATCH_NORM_SETTINGS = [
    {},
    {"momentum": None},
    {"affine": False},
    {"track_running_stats": False},
    {"momentum": 0.3, "eps": 1e-3},
]


@pytest.mark.parametrize("settings", BATCH_NORM_SETTINGS, ids=lambda s: ",".join(s) or "defaults")
@pytest.mark.parametrize("name, shape", BATCH_NORMS)
def test_batch_norm_matches_torch_in_training_and_in_eval(name, shape, settings):
    """Three training steps (outputs, input and parameter gradients, running statistics and the
    batch count), then eval() with the running statistics."""
    torch = _torch()
    rng = np.random.default_rng(len(shape) + len(settings))
    ours, theirs = (
        getattr(nn, name)(3, **settings, dtype=np.float64),
        getattr(torch.nn, name)(3, **settings, dtype=torch.float64),
    )
    if ours.weight is not None:
        with torch.no_grad():
            for p, q in ((ours.weight, theirs.weight), (ours.bias, theirs.bias)):
                p.data[...] = rng.standard_normal(3)
                q.copy_(torch.from_numpy(p.data.copy()))
    assert set(ours.state_dict()) == set(theirs.state_dict())
    for _ in range(3):
        x = rng.standard_normal(shape) * 2 + 1
        mine, reference = mg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out, their_out = ours(mine), theirs(reference)
        grad = rng.standard_normal(shape)
        out.backward(mg.tensor(grad))
        their_out.backward(torch.from_numpy(grad))
        np.testing.assert_allclose(out.numpy(), their_out.detach().numpy(), rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(
            mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10, atol=1e-12
        )
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(
            ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-12, atol=1e-14, err_msg=key
        )
    if ours.weight is not None:
        np.testing.assert_allclose(
            ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10, atol=1e-12
        )
        np.testing.assert_allclose(
            ours.bias.grad.numpy(), theirs.bias.grad.numpy(), rtol=1e-10, atol=1e-12
        )
    ours.eval()
    theirs.eval()
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(
        ours(mg.tensor(x)).numpy(),
        theirs(torch.from_numpy(x)).detach().numpy(),
        rtol=1e-12,
        atol=1e-13,
    )


def test_batch_norm_refuses_bad_input():
    with pytest.raises(
        ValueError, match=r"2 or 3 dims and num_features=3 channels in dim 1; got \(4, 2\)"
    ):
        nn.BatchNorm1d(3)(mg.ones(4, 2))
    with pytest.raises(ValueError, match="4 dims"):
        nn.BatchNorm2d(3)(mg.ones(4, 3))
    with pytest.raises(ValueError, match="more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(mg.ones(1, 3))
    with pytest.raises(ValueError, match="momentum must be in"):
        nn.BatchNorm1d(3, momentum=2.0)
    with pytest.raises(ValueError, match="num_features must be an integer >= 1"):
        nn.BatchNorm2d(0)
    assert nn.BatchNorm1d(3).eval()(mg.ones(1, 3)).shape == (1, 3)  # one sample is fine in eval
