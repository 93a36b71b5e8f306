"""Small things PyTorch code does everywhere: set_grad_enabled as a call, a block and a
decorator; inference_mode; f"{loss:.4f}"; x.mT and x.type(); the normal initialisers."""

import math

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def _records():
    return (mg.tensor([1.0], requires_grad=True) * 2).requires_grad


def test_set_grad_enabled_as_a_block_restores_the_previous_mode():
    for outer in (True, False):
        with mg.set_grad_enabled(outer):
            for inner in (True, False):
                with mg.set_grad_enabled(inner):
                    assert _records() is inner and mg.is_grad_enabled() is inner
                assert _records() is outer
    assert mg.is_grad_enabled()


def test_set_grad_enabled_as_a_block_restores_after_an_exception():
    with pytest.raises(KeyError):
        with mg.set_grad_enabled(False):
            raise KeyError("x")
    assert mg.is_grad_enabled()


def test_set_grad_enabled_as_a_call_switches_until_switched_back():
    try:
        mg.set_grad_enabled(False)
        assert not mg.is_grad_enabled() and not _records()
    finally:
        mg.set_grad_enabled(True)
    assert _records()


@pytest.mark.parametrize("mode", [None, "yes", 1, 0.0])
def test_set_grad_enabled_wants_a_bool_as_torch(mode):
    with pytest.raises(TypeError, match="mode must be a bool"):
        mg.set_grad_enabled(mode)
    assert mg.is_grad_enabled()


def test_set_grad_enabled_as_a_decorator_switches_only_inside_each_call():
    @mg.set_grad_enabled(False)
    def evaluate():
        return _records()

    assert mg.is_grad_enabled()  # making the decorator changed nothing
    assert evaluate() is False and evaluate() is False
    assert mg.is_grad_enabled()


@pytest.mark.parametrize("spelling", ["block", "call", "bare decorator", "decorator", "False"])
def test_inference_mode_is_no_grad(spelling):
    if spelling == "block":
        with mg.inference_mode():
            assert not _records()
    elif spelling == "False":
        with mg.no_grad(), mg.inference_mode(False):
            assert _records()
    else:
        decorate = {
            "call": mg.inference_mode(),
            "decorator": mg.inference_mode(),
            "bare decorator": mg.inference_mode,
        }[spelling]
        assert decorate(_records)() is False
    assert mg.is_grad_enabled()


def test_zero_dim_tensors_format_as_numbers():
    loss = mg.tensor(2.718281828, dtype=mg.float64)
    assert (
        f"{loss:.4f}" == "2.7183"
        and "{:>8.2e}".format(loss) == "2.72e+00"
        and f"{mg.tensor(7):03d}" == "007"
    )
    assert f"{mg.tensor([1.0, 2.0])}" == str(mg.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match=r"only a 0-d tensor formats as a number"):
        f"{mg.tensor([1.0, 2.0]):.2f}"


def test_mT_and_type_match_torch():
    torch = pytest.importorskip("torch")
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    ours = mg.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    np.testing.assert_array_equal(ours.mT.numpy(), theirs.mT.detach().numpy())
    (ours.mT * mg.tensor(np.arange(24.0, dtype=np.float32).reshape(2, 4, 3))).sum().backward()
    (theirs.mT * torch.arange(24.0).reshape(2, 4, 3)).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    assert ours.type() == "float32" and ours.type(mg.float64).dtype == np.float64
    assert ours.type(mg.int64).numpy().tolist() == theirs.type(torch.int64).tolist()


@pytest.mark.parametrize(
    "name, settings, expected_std",
    [
        ("xavier_normal_", {}, math.sqrt(2 / (300 + 200))),
        ("xavier_normal_", {"gain": 2.0}, 2 * math.sqrt(2 / (300 + 200))),
        ("kaiming_normal_", {"nonlinearity": "relu"}, math.sqrt(2) / math.sqrt(300)),
        (
            "kaiming_normal_",
            {"mode": "fan_out", "nonlinearity": "relu"},
            math.sqrt(2) / math.sqrt(200),
        ),
        (
            "kaiming_normal_",
            {},
            math.sqrt(2) / math.sqrt(300),
        ),  # leaky_relu with a=0 has relu's gain
    ],
)
def test_normal_initialisers_have_torchs_spread(name, settings, expected_std):
    weight = nn.Parameter(np.empty((200, 300), np.float32))  # fan_in 300, fan_out 200
    mg.manual_seed(0)
    getattr(nn.init, name)(weight, **settings)
    values = weight.numpy()
    assert abs(values.mean()) < 4 * expected_std / math.sqrt(values.size)
    assert values.std() == pytest.approx(expected_std, rel=0.01)


def test_trunc_normal_stays_inside_its_bounds():
    weight = nn.Parameter(np.empty((100, 100), np.float32))
    mg.manual_seed(0)
    nn.init.trunc_normal_(weight, mean=0.5, std=1.0, a=0.0, b=1.5)
    values = weight.numpy()
    assert values.min() >= 0.0 and values.max() <= 1.5
    assert values.mean() == pytest.approx(
        0.5 + (0.3521 - 0.2420) / (0.8413 - 0.3085), abs=0.02
    )  # the truncated mean
    nn.init.trunc_normal_(weight, std=0.02)  # nanoGPT's call: the bounds are +-2, far away
    assert weight.numpy().std() == pytest.approx(0.02, rel=0.02)
    with pytest.raises(ValueError, match="expected a < b"):
        nn.init.trunc_normal_(weight, a=1.0, b=0.0)
    with pytest.raises(ValueError, match="holds almost none"):
        nn.init.trunc_normal_(weight, mean=0.0, std=1e-3, a=5.0, b=6.0)
    with pytest.raises(ValueError, match="mode must be 'fan_in' or 'fan_out'"):
        nn.init.kaiming_normal_(weight, mode="fan")


@pytest.mark.parametrize(
    "shape, dim, count",
    [((4, 5), 0, 3), ((4, 5), 1, 5), ((3, 4, 6), 2, 2), ((3, 4, 6), -2, 4), ((7,), 0, 7)],
)
def test_scatter_matches_torch_values_and_gradients(shape, dim, count):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(sum(shape) + dim)
    x = rng.standard_normal(shape)
    axis = dim % len(shape)
    index_shape = shape[:axis] + (count,) + shape[axis + 1 :]
    # distinct places along dim (a place written twice keeps an unspecified one of the values, in
    # torch)
    index = np.argsort(rng.random(shape), axis=axis)[tuple(slice(0, s) for s in index_shape)]
    src = rng.standard_normal(index_shape)
    ours, ours_src = mg.tensor(x, requires_grad=True), mg.tensor(src, requires_grad=True)
    theirs, theirs_src = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    out = ours.scatter(dim, mg.tensor(index), ours_src)
    reference = theirs.scatter(dim, torch.from_numpy(index), theirs_src)
    np.testing.assert_array_equal(out.numpy(), reference.detach().numpy())
    grad = rng.standard_normal(shape)
    (out * mg.tensor(grad)).sum().backward()
    (reference * torch.from_numpy(grad)).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())
    np.testing.assert_array_equal(ours_src.grad.numpy(), theirs_src.grad.numpy())
    np.testing.assert_array_equal(
        mg.scatter(mg.tensor(x), dim, mg.tensor(index), value=2.5).numpy(),
        torch.scatter(torch.tensor(x), dim, torch.from_numpy(index), value=2.5).numpy(),
    )


def test_scatter_in_place_and_top_p_sampling_as_torch_code_writes_it():
    torch = pytest.importorskip("torch")
    logits = np.random.default_rng(1).standard_normal((3, 10)).astype(np.float32)

    def top_p(B, F, logits, p=0.8):
        sorted_logits, sorted_indices = B.sort(logits, descending=True)
        cumulative = B.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        remove = cumulative > p
        remove[..., 1:] = remove[..., :-1].clone()
        remove[..., 0] = False
        indices_to_remove = remove.scatter(1, sorted_indices, remove)
        return logits.masked_fill(indices_to_remove, float("-inf"))

    import minigrad.nn.functional as mg_functional
    import torch.nn.functional as torch_functional

    np.testing.assert_array_equal(
        top_p(mg, mg_functional, mg.tensor(logits)).numpy(),
        top_p(torch, torch_functional, torch.tensor(logits)).numpy(),
    )
    ours, theirs = mg.zeros(3, 4), torch.zeros(3, 4)
    index = np.array([[1, 3], [0, 2], [2, 1]])
    ours.scatter_(1, mg.tensor(index), value=1.0)
    theirs.scatter_(1, torch.from_numpy(index), value=1.0)
    ours.scatter_add_(1, mg.tensor(index), mg.ones(3, 2))
    theirs.scatter_add_(1, torch.from_numpy(index), torch.ones(3, 2))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(
        mg.errors.ArgumentError, match="give src .* or value .*, not both or neither"
    ):
        ours.scatter(1, mg.tensor(index))
    with pytest.raises(mg.errors.ShapeError, match="index of shape"):
        ours.scatter(1, mg.tensor(np.zeros((3, 2, 1), np.int64)), value=1.0)


def test_new_layers_take_the_default_dtype_as_in_torch():
    torch = pytest.importorskip("torch")
    made = lambda nn_: [
        nn_.Linear(3, 2),
        nn_.Embedding(4, 3),
        nn_.LayerNorm(3),
        nn_.LSTM(3, 2),  # noqa: E731
        nn_.MultiheadAttention(4, 2),
    ]
    mg.set_default_dtype(mg.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for ours, theirs in zip(made(nn), made(torch.nn)):
            assert (
                {str(p.dtype) for p in ours.parameters()}
                == {"float64"}
                == {str(p.dtype).replace("torch.", "") for p in theirs.parameters()}
            )
        assert nn.Linear(2, 2)(mg.ones(1, 2)).dtype == np.float64  # ones() and the layer agree
        assert {p.dtype for p in nn.SelfAttention(4, 2).parameters()} == {np.dtype(np.float64)}
    finally:
        mg.set_default_dtype(mg.float32)
        torch.set_default_dtype(torch.float32)
    assert {p.dtype for p in nn.Linear(2, 2).parameters()} == {np.dtype(np.float32)}
    assert nn.Linear(2, 2, dtype=np.float64).weight.dtype == np.float64
    with pytest.raises(
        mg.errors.DTypeError, match="layer parameters must be float32 or float64; got dtype float16"
    ):
        nn.Linear(2, 2, dtype=np.float16)


DRAWS = {
    "randn": lambda g: mg.randn(4, 3, generator=g),
    "rand": lambda g: mg.rand(5, generator=g),
    "randint": lambda g: mg.randint(0, 27, (6,), generator=g),
    "randperm": lambda g: mg.randperm(9, generator=g),
    "multinomial": lambda g: mg.multinomial(
        mg.tensor([0.1, 0.6, 0.3]), 4, replacement=True, generator=g
    ),
    "multinomial without replacement": lambda g: mg.multinomial(
        mg.tensor([0.1, 0.6, 0.3]), 3, generator=g
    ),
    "init.normal_": lambda g: nn.init.normal_(
        nn.Parameter(np.empty((3, 3), np.float32)), generator=g
    ),
    "init.uniform_": lambda g: nn.init.uniform_(
        nn.Parameter(np.empty(4, np.float32)), -1, 1, generator=g
    ),
    "init.xavier_uniform_": lambda g: nn.init.xavier_uniform_(
        nn.Parameter(np.empty((3, 2), np.float32)), generator=g
    ),
    "init.kaiming_uniform_": lambda g: nn.init.kaiming_uniform_(
        nn.Parameter(np.empty((3, 2), np.float32)), generator=g
    ),
    "init.xavier_normal_": lambda g: nn.init.xavier_normal_(
        nn.Parameter(np.empty((3, 2), np.float32)), generator=g
    ),
    "init.kaiming_normal_": lambda g: nn.init.kaiming_normal_(
        nn.Parameter(np.empty((3, 2), np.float32)), generator=g
    ),
    "init.trunc_normal_": lambda g: nn.init.trunc_normal_(
        nn.Parameter(np.empty(5, np.float32)), generator=g
    ),
}


@pytest.mark.parametrize("name", DRAWS)
def test_a_generator_of_its_own_repeats_and_leaves_the_global_one_alone(name):
    draw = DRAWS[name]
    first = draw(mg.Generator().manual_seed(2147483647)).numpy()
    again = draw(mg.Generator().manual_seed(2147483647)).numpy()
    other = draw(mg.Generator().manual_seed(7)).numpy()
    np.testing.assert_array_equal(first, again)
    assert (
        not np.array_equal(first, other) or first.size <= 3
    )  # a short permutation may repeat by chance
    mg.manual_seed(0)
    expected = mg.randn(3).numpy()
    mg.manual_seed(0)
    draw(mg.Generator().manual_seed(1))
    np.testing.assert_array_equal(
        mg.randn(3).numpy(), expected
    )  # the global generator did not move


def test_manual_seed_returns_the_global_generator_and_takes_torchs_seeds():
    g = mg.manual_seed(123)
    assert isinstance(g, mg.Generator) and g is mg.default_generator and g.initial_seed() == 123
    first = mg.randn(3, generator=g).numpy()
    mg.manual_seed(123)
    np.testing.assert_array_equal(
        mg.randn(3).numpy(), first
    )  # drawing through it is drawing from the global one
    for seed in (-1, 2**64 - 1, 0):
        assert mg.Generator().manual_seed(seed).initial_seed() == seed % 2**64
    fresh = mg.Generator()
    assert fresh.seed() == fresh.initial_seed() and fresh.device == "cpu"
    with pytest.raises(ValueError, match=r"seed must be in \[-2\*\*63, 2\*\*64\)"):
        mg.manual_seed(2**64)
    with pytest.raises(TypeError, match="seed must be an integer; got 1.5"):
        mg.Generator().manual_seed(1.5)
    with pytest.raises(TypeError, match="generator must be an mg.Generator; got Generator"):
        mg.randn(2, generator=np.random.default_rng(0))
    with pytest.raises(ValueError, match="CPU only"):
        mg.Generator(device="cuda")


def test_makemore_style_sampling_runs_under_torch_and_minigrad():
    """Karpathy's makemore draws everything from one explicit generator; the same code runs here."""
    torch = pytest.importorskip("torch")

    def sample(B, count=5):
        g = B.Generator().manual_seed(2147483647)
        counts = B.randint(1, 10, (27, 27), generator=g).float()
        probs = counts / counts.sum(1, keepdim=True)
        names = []
        for _ in range(count):
            index, out = 0, []
            while len(out) < 20:
                index = B.multinomial(
                    probs[index], num_samples=1, replacement=True, generator=g
                ).item()
                if index == 0:
                    break
                out.append(index)
            names.append(out)
        return names, probs.shape

    ours, theirs = sample(mg), sample(torch)
    assert ours[1] == tuple(theirs[1]) and len(ours[0]) == len(theirs[0])
    assert all(0 < i < 27 for name in ours[0] for i in name)


def _hook_run(B):
    seen = []
    x = B.tensor([1.0, -2.0, 3.0], requires_grad=True)
    w = B.tensor([[0.5, 1.0], [2.0, -1.0], [0.0, 3.0]], requires_grad=True)
    x.register_hook(
        lambda g: seen.append(("x", g.tolist()))
    )  # a leaf used three times: one call, the sum
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
    for got, want in zip(
        [*ours[1], ours[2]], [*theirs[1], theirs[2]]
    ):  # x.grad, w.grad, then x.grad unhooked
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


def test_clear_messages_for_torch_values_given_where_minigrad_needs_its_own():
    torch = pytest.importorskip("torch")
    with pytest.raises(
        mg.errors.DTypeError, match="expected a dtype such as mg.float32; got torch.float64"
    ):
        mg.set_default_dtype(torch.float64)
    assert mg.get_default_dtype() == np.float32
    p = nn.Parameter(np.ones(2))
    p.grad = mg.ones(2, dtype=mg.float64)
    with pytest.raises(ValueError, match="norm_type must be a number > 0 or inf; got 'fro'"):
        nn.utils.clip_grad_norm_([p], 1.0, norm_type="fro")


@pytest.mark.parametrize(
    "name, domain",
    [
        ("exp", None),
        ("log", (0.1, 3)),
        ("sqrt", (0.1, 3)),
        ("rsqrt", (0.1, 3)),
        ("tanh", None),
        ("sigmoid", None),
        ("relu", None),
        ("neg", None),
        ("abs", None),
        ("square", None),
        ("reciprocal", (0.5, 3)),
    ],
)
def test_in_place_unary_methods_match_torch(name, domain):
    torch = pytest.importorskip("torch")
    low, high = domain or (-2, 2)
    values = np.random.default_rng(len(name)).uniform(low, high, (3, 4))
    results = []
    for lib in (mg, torch):
        base = lib.tensor(values, requires_grad=True)
        x = base * 1.0
        out = getattr(x, f"{name}_")()
        assert out is x
        (x * lib.tensor(np.arange(12.0).reshape(3, 4))).sum().backward()
        results.append((np.asarray(x.detach()), np.asarray(base.grad)))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12)


def test_select_pow_bernoulli_and_normal():
    torch = pytest.importorskip("torch")
    x = np.arange(24.0).reshape(2, 3, 4)
    for dim, index in ((0, 1), (1, -1), (-1, 2)):
        np.testing.assert_array_equal(
            mg.tensor(x).select(dim, index).numpy(), torch.tensor(x).select(dim, index).numpy()
        )
    y = mg.tensor([1.0, 2.0, 3.0])
    y.pow_(2)
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0, 9.0])
    g = mg.Generator().manual_seed(0)
    draws = mg.bernoulli(mg.full((200, 100), 0.3), generator=g)
    assert draws.dtype == np.float32 and set(np.unique(draws.numpy())) <= {0.0, 1.0}
    assert draws.numpy().mean() == pytest.approx(0.3, abs=0.01)
    assert mg.bernoulli(mg.zeros(5), p=1.0).numpy().tolist() == [1.0] * 5
    spread = mg.normal(mg.full((300, 100), 2.0), 0.5, generator=g).numpy()
    assert spread.mean() == pytest.approx(2.0, abs=0.01) and spread.std() == pytest.approx(
        0.5, rel=0.02
    )
    assert mg.normal(0.0, 1.0, size=(2, 3)).shape == (2, 3)
    with pytest.raises(mg.errors.ArgumentError, match="give size"):
        mg.normal(0.0, 1.0)
    with pytest.raises(mg.errors.ArgumentError, match="probabilities must be in"):
        mg.bernoulli(mg.tensor([1.5]))


def test_parameters_to_vector_and_back_match_torch():
    torch = pytest.importorskip("torch")
    ours = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 2, bias=False))
    theirs = torch.nn.Sequential(
        torch.nn.Linear(3, 4), torch.nn.GELU(), torch.nn.Linear(4, 2, bias=False)
    )
    theirs.load_state_dict(
        {key: torch.from_numpy(value.numpy().copy()) for key, value in ours.state_dict().items()}
    )
    vector, torch_vector = (
        nn.utils.parameters_to_vector(ours.parameters()),
        torch.nn.utils.parameters_to_vector(theirs.parameters()),
    )
    np.testing.assert_array_equal(vector.numpy(), torch_vector.detach().numpy())
    weights = np.random.default_rng(0).standard_normal(vector.shape[0]).astype(np.float32)
    (vector * mg.tensor(weights)).sum().backward()  # the vector is a graph result
    (torch_vector * torch.from_numpy(weights)).sum().backward()
    for p, q in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    nn.utils.vector_to_parameters(mg.tensor(weights), ours.parameters())
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(torch.from_numpy(weights.copy()), theirs.parameters())
    x = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    np.testing.assert_allclose(
        ours(mg.tensor(x)).numpy(), theirs(torch.from_numpy(x)).detach().numpy(), atol=1e-6
    )


def test_vector_to_parameters_refuses_a_wrong_vector_before_changing_anything():
    layer = nn.Linear(3, 2)
    before = nn.utils.parameters_to_vector(layer.parameters()).numpy().copy()
    with pytest.raises(
        ValueError,
        match=r"vec must be 1-D with 8 numbers \(the parameters' count\); got shape \(7,\)",
    ):
        nn.utils.vector_to_parameters(mg.zeros(7), layer.parameters())
    with pytest.raises(ValueError, match="got shape \\(2, 4\\)"):
        nn.utils.vector_to_parameters(mg.zeros(2, 4), layer.parameters())
    with pytest.raises(TypeError, match="vec must be a Tensor; got ndarray"):
        nn.utils.vector_to_parameters(np.zeros(8), layer.parameters())
    with pytest.raises(TypeError, match="parameter 1 must be a Tensor; got ndarray"):
        nn.utils.parameters_to_vector([layer.weight, np.zeros(2)])
    with pytest.raises(ValueError, match="got no parameters"):
        nn.utils.parameters_to_vector([])
    np.testing.assert_array_equal(nn.utils.parameters_to_vector(layer.parameters()).numpy(), before)


def test_rng_state_saved_and_set_draws_the_same_numbers_again(tmp_path):
    """mg.get_rng_state / set_rng_state (torch's names) through a checkpoint file,
    Generator.get_state
    / set_state, and mg.parallel's parts (whose dropout draws from generators spawned per step)."""
    mg.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    x = mg.randn(8, 4)

    def draws():
        loss = mg.parallel.forward_backward(lambda batch: model(batch).sum(), x, parts=2).item()
        return mg.randn(4).numpy().tolist(), nn.Dropout(0.5)(mg.ones(16)).numpy().tolist(), loss

    draws()  # a training step before the checkpoint: its parts' generators were spawned already
    state = mg.get_rng_state()
    assert isinstance(state, mg.Tensor) and state.dtype == mg.uint8 and state.ndim == 1
    mg.save({"rng": state}, tmp_path / "rng.npz")
    first = draws()
    mg.set_rng_state(mg.load(tmp_path / "rng.npz")["rng"])
    assert draws() == first
    generator = mg.Generator()  # a fresh random seed, not a manual one
    mine = generator.get_state()
    expected = mg.rand(3, generator=generator).numpy()
    again = mg.Generator().set_state(mine)
    np.testing.assert_array_equal(mg.rand(3, generator=again).numpy(), expected)
    assert again.initial_seed() == generator.initial_seed()


def test_a_damaged_rng_state_is_refused_and_changes_nothing():
    state = mg.manual_seed(0).get_state()
    expected = mg.randn(3).numpy()
    mg.manual_seed(0)
    wrong_tag, even_increment = state.copy(), state.copy()
    wrong_tag[0] = 0
    even_increment[8 + 5 * 8] ^= 1  # the low byte of PCG64's increment, which must be odd
    for bad, message in (
        (wrong_tag, "not a minigrad generator state"),
        (state[:10], "80 bytes.*shape \\(10,\\)"),
        (state.astype(np.int64), "uint8 array.*got int64"),
        (even_increment, "increment must be odd"),
        ("state", "uint8 array.*got <U5"),
    ):
        with pytest.raises(ValueError, match=message):
            mg.set_rng_state(bad)
    np.testing.assert_array_equal(mg.randn(3).numpy(), expected)
