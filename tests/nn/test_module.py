"""nn.Module: registration, buffers, hooks, dtypes, traversal, containers and state dicts,
each checked against what torch.nn.Module does with the same calls."""

import subprocess
import sys

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def _torch():
    return pytest.importorskip("torch")


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.ones(3, dtype=np.float32))
        self.inner = nn.Linear(3, 2)
        self.note = "not a parameter"
        self.cache = mg.zeros(3)  # a plain tensor is not registered


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5, 3)
        self.out = nn.Linear(3, 5, bias=False)
        self.out.weight = self.embed.weight  # tied: the same Parameter twice


def with_buffers(library, tensor):
    """The same small model in minigrad's nn or torch.nn: parameters, persistent and
    non-persistent buffers, an integer buffer, a None buffer, nested children."""

    class Normalizer(library.Module):
        def __init__(self):
            super().__init__()
            self.linear = library.Linear(3, 2)
            self.register_buffer("running_mean", tensor(np.zeros(2, np.float32)))
            self.register_buffer("steps", tensor(np.array(0, np.int64)))
            self.register_buffer("scratch", tensor(np.ones(2, np.float32)), persistent=False)
            self.register_buffer("absent", None)

    class Model(library.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", tensor(np.tril(np.ones((2, 2), np.float32))))
            self.first = Normalizer()
            self.second = library.Sequential(library.Linear(2, 2), Normalizer())

    return Model()


# -- registration ---------------------------------------------------------------------------


def test_setattr_registers_parameters_and_children_only():
    block = Block()
    assert list(block._parameters) == ["scale"]
    assert list(block._modules) == ["inner"]
    assert block.note == "not a parameter"
    assert [name for name, _ in block.named_parameters()] == ["scale", "inner.weight", "inner.bias"]
    assert list(block.children()) == [block.inner]
    assert [name for name, _ in block.named_modules()] == ["", "inner"]


@pytest.mark.parametrize("library", ["minigrad", "torch"])
def test_reassigning_a_registered_name_follows_torch(library):
    """A parameter name takes a Parameter or None (a tensor or a string would silently drop the
    weight, so torch refuses it); a child name takes a Module or None; del forgets."""
    torch = _torch()
    lib, tensor = (nn, mg.tensor) if library == "minigrad" else (torch.nn, torch.tensor)
    model = lib.Linear(3, 2)
    with pytest.raises(TypeError, match="bias"):
        model.bias = "now a string"
    with pytest.raises(TypeError, match="bias"):
        model.bias = tensor(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="bias"):
        model.bias = lib.Linear(1, 1)
    model.bias = None
    assert model.bias is None and [name for name, _ in model.named_parameters()] == ["weight"]
    model.bias = lib.Parameter(tensor(np.ones(2, np.float32)))
    assert [name for name, _ in model.named_parameters()] == ["weight", "bias"]
    outer = lib.Sequential(model)
    with pytest.raises(TypeError, match="0"):
        setattr(outer, "0", 3)
    del model.bias
    assert [name for name, _ in model.named_parameters()] == ["weight"]
    model.bias = lib.Parameter(tensor(np.ones(2, np.float32)))  # a fresh name again
    assert [name for name, _ in model.named_parameters()] == ["weight", "bias"]


def test_setattr_before_super_init_explains():
    class Broken(nn.Module):
        def __init__(self):
            self.weight = nn.Parameter(np.zeros(2))

    with pytest.raises(AttributeError, match="super"):
        Broken()


@pytest.mark.parametrize("register", ["register_parameter", "register_buffer", "add_module"])
def test_registration_names_are_checked_as_in_torch(register):
    torch = _torch()
    values = {
        "register_parameter": (nn.Parameter(np.zeros(1)), torch.nn.Parameter(torch.zeros(1))),
        "register_buffer": (mg.zeros(1), torch.zeros(1)),
        "add_module": (nn.Tanh(), torch.nn.Tanh()),
    }[register]
    for module, value in zip((nn.Linear(1, 1), torch.nn.Linear(1, 1)), values):
        with pytest.raises(TypeError):
            getattr(module, register)(3, value)
        for bad in ("a.b", ""):
            with pytest.raises(KeyError):
                getattr(module, register)(bad, value)
        with pytest.raises(KeyError, match="already exists"):
            getattr(module, register)(
                "weight" if register != "register_parameter" else "forward", value
            )
        with pytest.raises(TypeError):
            getattr(module, register)("fresh", "not a tensor or module")
        getattr(module, register)("fresh", value)
        getattr(module, register)("fresh", value)  # re-registering one's own kind is fine


# -- buffers ----------------------------------------------------------------------------------


def test_buffers_and_state_dict_keys_match_torch():
    torch = _torch()
    ours, theirs = with_buffers(nn, mg.tensor), with_buffers(torch.nn, torch.tensor)
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(
        theirs.state_dict()
    )  # params, persistent buffers, children
    assert "first.scratch" not in ours.state_dict() and "first.scratch" in dict(
        ours.named_buffers()
    )
    assert len(list(ours.buffers())) == len(list(theirs.buffers())) == 7
    assert [n for n, _ in ours.first.named_buffers(prefix="first", recurse=False)] == [
        "first.running_mean",
        "first.steps",
        "first.scratch",
    ]
    assert ours.mask is ours._buffers["mask"] and ours.first.absent is None


def test_assigning_a_buffer_name_replaces_the_buffer():
    model = with_buffers(nn, mg.tensor)
    model.mask = mg.ones(2, 2)
    assert model.state_dict()["mask"].numpy().sum() == 4
    with pytest.raises(TypeError, match="buffer 'mask'"):
        model.mask = [[1.0]]
    model.mask = None
    assert "mask" not in model.state_dict()


def test_state_dict_round_trip_loads_buffers_and_casts_as_torch():
    torch = _torch()
    source, target = with_buffers(nn, mg.tensor), with_buffers(nn, mg.tensor)
    source.first.running_mean.data[...] = [1.5, -2.0]
    source.second[1].steps.data[...] = 7
    state = {
        name: value.numpy().astype(np.float64) for name, value in source.state_dict().items()
    }  # float64
    state["second.1.steps"] = np.array(7, np.int64)
    assert target.load_state_dict(state) == ([], [])
    np.testing.assert_array_equal(target.first.running_mean.numpy(), [1.5, -2.0])
    assert target.first.running_mean.dtype == np.float32 and target.second[1].steps.item() == 7
    np.testing.assert_allclose(
        target.first.linear.weight.numpy(), source.first.linear.weight.numpy(), rtol=1e-7
    )
    assert target.first.linear.weight.dtype == np.float32
    # integer values into a float parameter are copied with a cast, as torch's copy_ does
    reference = torch.nn.Linear(2, 1)
    reference.load_state_dict({"weight": torch.tensor([[1, 2]]), "bias": torch.tensor([3])})
    layer = nn.Linear(2, 1)
    layer.load_state_dict({"weight": np.array([[1, 2]]), "bias": np.array([3])})
    np.testing.assert_array_equal(layer.weight.numpy(), reference.weight.detach().numpy())
    assert layer.weight.dtype == np.float32


def test_tied_parameters_appear_under_every_name_as_in_torch():
    torch = _torch()

    class TorchTied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(5, 3)
            self.out = torch.nn.Linear(3, 5, bias=False)
            self.out.weight = self.embed.weight

    model = Tied()
    assert (
        list(model.state_dict()) == list(TorchTied().state_dict()) == ["embed.weight", "out.weight"]
    )
    assert [name for name, _ in model.named_parameters()] == ["embed.weight"]
    state = {name: np.full((5, 3), 2.0, np.float32) for name in model.state_dict()}
    model.load_state_dict(state)
    assert model.out.weight is model.embed.weight and model.out.weight.numpy().sum() == 30


# -- hooks ------------------------------------------------------------------------------------


def run_hooks(library, tensor):
    """Hooks on a Sequential and on a child; some change args or outputs; some are removed."""
    model = library.Sequential(library.Linear(2, 2), library.ReLU())
    weight = np.array([[1.0, -2.0], [0.5, 1.0]], np.float32)
    model[0].load_state_dict(
        {"weight": tensor(weight), "bias": tensor(np.array([0.1, -0.3], np.float32))}
    )
    log = []
    handles = [
        model.register_forward_pre_hook(lambda m, args: log.append("pre1")),
        model.register_forward_pre_hook(lambda m, args: log.append("pre2") or (args[0] * 2,)),
        model.register_forward_pre_hook(lambda m, args: log.append("pre0"), prepend=True),
        model.register_forward_hook(
            lambda m, args, out: log.append(f"post1 got {args[0].shape[0]} rows")
        ),
        model.register_forward_hook(lambda m, args, out: log.append("post2") or out + 1),
        model[0].register_forward_hook(
            lambda m, args, out: log.append(f"child {type(m).__name__}")
        ),
        model.register_forward_pre_hook(
            lambda m, args, kwargs: log.append(f"pre kw {sorted(kwargs)}"), with_kwargs=True
        ),
    ]
    x = tensor(np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32))
    first = model(x)
    handles[1].remove()
    handles[4].remove()
    handles[1].remove()  # twice is harmless
    with model.register_forward_hook(lambda m, args, out: log.append("scoped")):
        model(x)
    second = model(x)
    return log, np.asarray(first.detach().numpy()), np.asarray(second.detach().numpy())


def test_forward_hooks_run_in_order_change_values_and_remove_as_in_torch():
    torch = _torch()
    log, first, second = run_hooks(nn, mg.tensor)
    torch_log, torch_first, torch_second = run_hooks(torch.nn, torch.tensor)
    assert log == torch_log
    assert log[:7] == [
        "pre0",
        "pre1",
        "pre2",
        "pre kw []",
        "child Linear",
        "post1 got 2 rows",
        "post2",
    ]
    np.testing.assert_allclose(first, torch_first, rtol=1e-6)
    np.testing.assert_allclose(second, torch_second, rtol=1e-6)


def test_pre_hook_with_kwargs_can_replace_args_and_kwargs():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    module = Scale()
    module.register_forward_pre_hook(
        lambda m, args, kwargs: ((args[0] + 1,), {"factor": 3.0}), with_kwargs=True
    )
    seen = []
    module.register_forward_hook(
        lambda m, args, kwargs, out: seen.append((kwargs, out.item())), with_kwargs=True
    )
    assert module(mg.tensor(1.0), factor=10.0).item() == 6.0
    assert seen == [({"factor": 3.0}, 6.0)]
    module.register_forward_pre_hook(lambda m, args, kwargs: "wrong", with_kwargs=True)
    with pytest.raises(RuntimeError, match="args, kwargs"):
        module(mg.tensor(1.0))
    with pytest.raises(TypeError, match="callable"):
        module.register_forward_hook("not a function")


# -- dtypes -----------------------------------------------------------------------------------


def test_double_and_float_cast_in_place_keeping_parameters_and_int_buffers():
    model = with_buffers(nn, mg.tensor)
    weight = model.first.linear.weight
    optimizer = mg.optim.SGD(model.parameters(), lr=0.1)
    loss = model.first.linear(mg.ones(4, 3)).sum()
    loss.backward()
    assert model.double() is model
    assert (
        model.first.linear.weight is weight
        and weight.dtype == np.float64
        and weight.grad.dtype == np.float64
    )
    assert all(p.dtype == np.float64 for p in model.parameters())
    assert model.mask.dtype == np.float64 and model.first.scratch.dtype == np.float64
    assert model.first.steps.dtype == np.int64  # only float tensors move
    optimizer.step()  # the optimizer still holds the same (now float64) parameters
    assert weight.dtype == np.float64
    assert model.float().first.linear.weight.dtype == np.float32 and model.mask.dtype == np.float32
    assert model.to(mg.tensor([1.0], dtype=mg.float64)).mask.dtype == np.float64
    assert model.to("cpu", dtype=mg.float32).mask.dtype == np.float32
    assert model.to("cpu") is model and model.cpu() is model


def test_to_refuses_integer_dtypes_and_other_devices():
    model = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="float dtypes.*int64"):
        model.to(mg.int64)
    with pytest.raises(ValueError, match="CPU only.*cuda"):
        model.to("cuda")
    with pytest.raises(TypeError, match="unexpected keyword"):
        model.to(dtype=mg.float64, memory_format=None)
    assert model.weight.dtype == np.float32


def _call_with_parameters(model, values, x):
    """model(x) with the parameters temporarily replaced by `values` (gradcheck's float64 leaves)."""
    owners = []
    for name, _ in model.named_parameters():
        path, _, local = name.rpartition(".")
        owners.append((model.get_submodule(path), local))
    saved = [module._parameters[local] for module, local in owners]
    for (module, local), value in zip(owners, values):
        module._parameters[local] = value
    try:
        return model(x)
    finally:
        for (module, local), value in zip(owners, saved):
            module._parameters[local] = value


def test_a_model_moved_with_double_passes_gradcheck_end_to_end():
    class Small(nn.Module):
        def __init__(self):
            super().__init__()
            self.project = nn.Linear(3, 4)
            self.lstm = nn.LSTM(4, 4, batch_first=True)
            self.attention = nn.SelfAttention(4, num_heads=2, bias=True)
            self.head = nn.Linear(4, 2)
            self.register_buffer("scale", mg.tensor(0.5))

        def forward(self, x):
            hidden, _ = self.lstm(self.project(x).tanh())
            return self.head(self.attention(hidden) * self.scale)

    mg.manual_seed(0)
    model = Small().double()
    assert model.scale.dtype == np.float64
    for module in (model.attention,):  # biases start at zero: make them matter
        for name, parameter in module.named_parameters():
            if name.endswith("bias"):
                parameter.data[...] = np.random.default_rng(1).normal(size=parameter.shape)
    x = mg.randn(2, 3, 3, dtype=mg.float64)
    parameters = list(model.parameters())
    assert mg.gradcheck(
        lambda x, *values: _call_with_parameters(model, values, x), [x] + parameters
    )


# -- traversal and gradients -------------------------------------------------------------------


def test_apply_visits_children_before_parents_as_torch():
    torch = _torch()

    def visit(library):
        model = library.Sequential(
            library.Linear(2, 2), library.Sequential(library.Tanh(), library.Linear(2, 1))
        )
        order = []
        assert model.apply(lambda m: order.append(type(m).__name__)) is model
        return order

    assert visit(nn) == visit(torch.nn) == ["Linear", "Tanh", "Linear", "Sequential", "Sequential"]


def test_apply_initialises_every_linear():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Sequential(nn.Linear(4, 2)))

    def init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.weight)

    model.apply(init_weights)
    assert all(not m.weight.numpy().any() for m in model.modules() if isinstance(m, nn.Linear))


def test_requires_grad_freezes_and_unfreezes_every_parameter():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    assert model.requires_grad_(False) is model
    assert not any(p.requires_grad for p in model.parameters())
    x = mg.randn(4, 3, requires_grad=True)
    model(x).sum().backward()
    assert x.grad is not None and all(p.grad is None for p in model.parameters())
    model[1].requires_grad_()
    assert [p.requires_grad for p in model.parameters()] == [False, False, True, True]


def test_zero_grad_sets_to_none_or_zeros_in_place():
    model = nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 1))
    model(mg.randn(4, 3)).sum().backward()
    grad = model[0].weight.grad
    model.zero_grad(set_to_none=False)
    assert model[0].weight.grad is grad and not grad.numpy().any()
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_get_submodule_parameter_and_buffer():
    torch = _torch()
    for model, library in (
        (with_buffers(nn, mg.tensor), nn),
        (with_buffers(torch.nn, torch.tensor), torch.nn),
    ):
        assert model.get_submodule("") is model
        assert model.get_submodule("second.1.linear") is model.second[1].linear
        assert model.get_parameter("second.1.linear.bias") is model.second[1].linear.bias
        assert model.get_buffer("first.running_mean") is model.first.running_mean
        for bad in ("second.7", "first.missing"):
            with pytest.raises(AttributeError):
                model.get_submodule(bad)
        with pytest.raises(AttributeError):
            model.get_parameter("first.running_mean")  # a buffer, not a parameter
        with pytest.raises(AttributeError):
            model.get_buffer("first.linear.weight")


def test_shared_parameter_is_listed_once():
    model = Tied()
    names = [name for name, _ in model.named_parameters()]
    assert names == ["embed.weight"]
    assert len(list(model.parameters())) == 1
    shared = nn.Linear(2, 2)
    twice = nn.Sequential(shared, shared)
    assert len(list(twice.parameters())) == 2
    assert len(list(twice.modules())) == 2
    assert [name for name, _ in twice.named_modules(remove_duplicate=False)] == ["", "0", "1"]


def test_train_eval_reaches_every_descendant():
    model = nn.Sequential(
        nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5), nn.ModuleList([nn.Dropout(0.1)]))
    )
    assert all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    with pytest.raises(ValueError, match="bool"):
        model.train("no")


def test_call_runs_forward():
    class Double(nn.Module):
        def forward(self, x):
            return x * 2

    np.testing.assert_array_equal(Double()(mg.tensor([1.0, 2.0])).data, [2.0, 4.0])
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(mg.tensor([1.0]))


def test_repr_matches_torch():
    torch = _torch()

    def build(library):
        return library.Sequential(
            library.Linear(4, 3),
            library.ReLU(),
            library.LeakyReLU(0.2, inplace=True),
            library.GELU(approximate="tanh"),
            library.ELU(),
            library.Softplus(),
            library.Softmax(dim=1),
            library.LogSoftmax(dim=-1),
            library.Flatten(),
            library.Unflatten(1, (2, 5)),
            library.SiLU(),
            library.Sequential(library.Dropout(0.25), library.Tanh()),
            library.CrossEntropyLoss(label_smoothing=0.1),
            library.Identity(),
            library.ModuleDict({"a": library.Tanh()}),
            library.Embedding(10, 3, padding_idx=0),
        )

    assert repr(build(nn)) == repr(build(torch.nn))


# -- state dicts --------------------------------------------------------------------------------


def test_state_dict_round_trip_into_a_fresh_model():
    mg.manual_seed(0)
    source = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    mg.manual_seed(1)
    target = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x = mg.randn(5, 3)
    assert not np.array_equal(source(x).data, target(x).data)
    state = source.state_dict()
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert not state["0.weight"].requires_grad and state["0.weight"].grad_fn is None
    assert source.state_dict(keep_vars=True)["0.weight"] is source[0].weight
    weight_array = target[0].weight.data
    result = target.load_state_dict(state)
    assert result == ([], []) and result.missing_keys == [] and result.unexpected_keys == []
    assert target[0].weight.data is weight_array  # copied in place: optimizers keep their arrays
    np.testing.assert_array_equal(source(x).data, target(x).data)


def test_load_state_dict_bumps_versions_so_stale_graphs_raise():
    layer = nn.Linear(2, 1)
    loss = (layer(mg.ones(3, 2)) ** 2).sum()
    layer.load_state_dict({"weight": np.ones((1, 2)), "bias": np.zeros(1)})
    with pytest.raises(RuntimeError, match="in-place"):
        loss.backward()


def test_load_state_dict_strict_lists_missing_and_unexpected_keys():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    state = {name: np.asarray(value) for name, value in model.state_dict().items()}
    del state["1.bias"]
    state["1.extra"] = np.zeros(2, dtype=np.float32)
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(state)
    assert "missing keys: ['1.bias']" in str(info.value)
    assert "unexpected keys: ['1.extra']" in str(info.value)
    before = model[1].bias.data.copy()
    state["0.weight"] = np.full((4, 3), 7.0, dtype=np.float32)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert missing == ["1.bias"] and unexpected == ["1.extra"]
    np.testing.assert_array_equal(model[0].weight.data, np.full((4, 3), 7.0))
    np.testing.assert_array_equal(model[1].bias.data, before)


def _state_dict_layouts(library, tensor):
    """name -> (model, extra keys given to load_state_dict besides some of its own)."""

    class Scratch(library.Module):
        def __init__(self):
            super().__init__()
            self.linear = library.Linear(1, 1, bias=False)
            self.register_buffer("scratch", tensor([0.0]), persistent=False)
            self.add_module("head", None)

    shared = library.Linear(1, 1)
    return {
        "flat": (
            library.Sequential(library.Linear(1, 1), library.Linear(1, 1)),
            ["1.extra", "0.extra", "zzz"],
        ),
        "nested": (
            library.Sequential(
                library.Linear(1, 1), library.Sequential(library.Linear(1, 1), library.ReLU())
            ),
            ["1.1.x", "1.0.bias.x", "x.y", "1.x", "1.0.x", "0.weight.deeper", "1.2.x", "top"],
        ),
        "non-persistent buffer, None bias and child": (
            Scratch(),
            ["head.weight", "scratch", "linear.bias", "b"],
        ),
        "a module shared by two names": (library.Sequential(shared, shared), ["1.x", "0.x", "x"]),
    }


@pytest.mark.parametrize(
    "layout",
    [
        "flat",
        "nested",
        "non-persistent buffer, None bias and child",
        "a module shared by two names",
    ],
)
def test_missing_and_unexpected_keys_come_in_torch_order(layout):
    torch = _torch()
    results = []
    for library, tensor in ((nn, mg.tensor), (torch.nn, torch.tensor)):
        model, extra = _state_dict_layouts(library, tensor)[layout]
        own = list(model.state_dict().items())
        state = dict(own[1::2])  # every other own entry: the rest is missing
        for position, key in enumerate(extra):
            state[key] = tensor([float(position)])
        result = model.load_state_dict(state, strict=False)
        results.append((list(result.missing_keys), list(result.unexpected_keys)))
    assert results[0] == results[1]


def test_load_state_dict_shape_mismatch_names_both_shapes_and_changes_nothing():
    model = nn.Linear(3, 2)
    before = model.weight.data.copy()
    with pytest.raises(RuntimeError, match=r"weight: expected shape \(2, 3\), got \(3, 2\)"):
        model.load_state_dict(
            {"weight": np.zeros((3, 2), np.float32), "bias": np.zeros(2, np.float32)}
        )
    with pytest.raises(RuntimeError, match=r"weight: expected shape \(2, 3\), got \(3, 2\)"):
        model.load_state_dict(
            {"weight": np.zeros((3, 2), np.float32), "bias": np.zeros(2, np.float32)}, strict=False
        )
    with pytest.raises(RuntimeError, match="numeric"):
        model.load_state_dict({"weight": np.full((2, 3), "x"), "bias": np.zeros(2, np.float32)})
    np.testing.assert_array_equal(model.weight.data, before)


def test_state_dict_with_buffers_saves_and_loads_through_files(tmp_path):
    source, target = with_buffers(nn, mg.tensor), with_buffers(nn, mg.tensor)
    source.first.running_mean.data[...] = [3.0, 4.0]
    mg.save(source.state_dict(), tmp_path / "model.npz")
    target.load_state_dict(mg.load(tmp_path / "model.npz"))
    np.testing.assert_array_equal(target.first.running_mean.numpy(), [3.0, 4.0])


def test_minigrad_nn_functional_imports_as_in_torch():
    code = (
        "import minigrad.nn.functional as F, minigrad.nn as mnn, minigrad as mg; "
        "from minigrad import nn; "
        "assert F is nn.functional is mg.nn.functional and mnn is nn; "
        "from minigrad.nn import Linear; assert Linear is nn.Linear; print('ok')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=str(_root())
    )
    assert result.stdout.strip() == "ok", result.stderr


def _root():
    from pathlib import Path

    return Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("register", ["add_module", "register_parameter"])
@pytest.mark.parametrize(
    "name, error",
    [
        ("", KeyError),
        ("a.b", KeyError),
        (3, TypeError),
        ("forward", KeyError),
        ("training", KeyError),
    ],
)
def test_module_names_are_checked_as_torch_checks_them(register, name, error):
    module = nn.Linear(2, 2)
    value = nn.Linear(1, 1) if register == "add_module" else nn.Parameter(np.zeros(1, np.float32))
    with pytest.raises(error):
        getattr(module, register)(name, value)


def test_register_parameter_refuses_a_plain_tensor_and_add_module_a_non_module():
    module = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Parameter"):
        module.register_parameter("extra", mg.zeros(2))
    with pytest.raises(TypeError, match="Module"):
        module.add_module("extra", mg.zeros(2))


def test_a_registered_name_can_be_replaced():
    module = nn.Linear(2, 2)
    module.register_parameter("bias", nn.Parameter(np.ones(2, np.float32)))
    np.testing.assert_array_equal(module.bias.numpy(), [1, 1])
    assert [n for n, _ in module.named_parameters()] == ["weight", "bias"]
