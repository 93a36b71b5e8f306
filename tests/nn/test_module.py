"""nn.Module: registration, buffers, hooks, dtypes, traversal, containers and state dicts,
each checked against what torch.nn.Module does with the same calls.

Then a sweep of the same API written as a PyTorch user writes code: traversal names and orders,
tied parameters, state dicts with missing and unexpected keys, dtype moves, hooks, reprs and
containers. Differences found are strict xfails (each one fails for the reason given when run
with --runxfail).
"""

import copy
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from module_checks import LIBS, both, with_buffers

torch = pytest.importorskip("torch")
torch.set_num_threads(1)


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


def test_assigning_a_buffer_name_replaces_the_buffer():
    model = with_buffers(nn, mg.tensor)
    model.mask = mg.ones(2, 2)
    assert model.state_dict()["mask"].numpy().sum() == 4
    with pytest.raises(TypeError, match="buffer 'mask'"):
        model.mask = [[1.0]]
    model.mask = None
    assert "mask" not in model.state_dict()


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
    """model(x) with the parameters temporarily replaced by `values` (gradcheck's float64
    leaves)."""
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
                parameter.numpy()[...] = np.random.default_rng(1).normal(size=parameter.shape)
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

    np.testing.assert_array_equal(Double()(mg.tensor([1.0, 2.0])).numpy(), [2.0, 4.0])
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


def test_minigrad_nn_functional_imports_as_in_torch():
    code = (
        "import minigrad.nn.functional as F, minigrad.nn as mnn, minigrad as mg; "
        "from minigrad import nn; assert F is nn.functional is mg.nn.functional and mnn is nn; "
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


def names(pairs):
    return [name for name, _ in pairs]


def kinds(modules):
    return [type(m).__name__ for m in modules]


def _nested(lib, tensor):
    class Block(lib.Module):
        def __init__(self):
            super().__init__()
            self.scale = lib.Parameter(tensor(np.ones(2, np.float32)))
            self.register_buffer("count", tensor(np.array(0, np.int64)))
            self.register_buffer("scratch", tensor(np.zeros(2, np.float32)), persistent=False)
            self.proj = lib.Linear(2, 2)

    class Model(lib.Module):
        def __init__(self):
            super().__init__()
            shared = lib.Linear(2, 2)
            self.stem = lib.Sequential(shared, lib.Tanh(), _named_sequential(lib))
            self.blocks = lib.ModuleList([Block(), Block()])
            self.heads = lib.ModuleDict({"b": lib.Linear(2, 1), "a": lib.Linear(2, 3, bias=False)})
            self.again = shared  # the same module under a second name
            self.register_buffer("mask", tensor(np.ones((2, 2), np.float32)))

    return Model()


def _named_sequential(lib):
    return lib.Sequential(OrderedDict([("enc", lib.Linear(2, 2)), ("act", lib.ReLU())]))


def test_traversal_names_and_orders_match_torch():
    ours, theirs = both(_nested)
    for kwargs in (
        {},
        {"prefix": "model"},
        {"recurse": False},
        {"remove_duplicate": False},
        {"prefix": "m", "remove_duplicate": False},
    ):
        assert names(ours.named_parameters(**kwargs)) == names(theirs.named_parameters(**kwargs)), (
            kwargs
        )
        assert names(ours.named_buffers(**kwargs)) == names(theirs.named_buffers(**kwargs)), kwargs
    for kwargs in ({}, {"prefix": "root"}, {"remove_duplicate": False}):
        assert names(ours.named_modules(**kwargs)) == names(theirs.named_modules(**kwargs)), kwargs
    assert names(ours.named_children()) == names(theirs.named_children())
    assert kinds(ours.modules()) == kinds(theirs.modules())
    assert kinds(ours.children()) == kinds(theirs.children())
    assert len(list(ours.parameters())) == len(list(theirs.parameters()))
    assert (
        len(list(ours.parameters(recurse=False)))
        == len(list(theirs.parameters(recurse=False)))
        == 0
    )
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours.state_dict(prefix="net.")) == list(theirs.state_dict(prefix="net."))
    assert "blocks.0.scratch" not in ours.state_dict() and "blocks.0.scratch" in dict(
        ours.named_buffers()
    )
    assert names(ours.blocks[1].named_parameters(prefix="x", recurse=False)) == ["x.scale"]


def test_tied_parameters_listed_once_everywhere_but_state_dict():
    def build(lib, tensor):
        model = lib.Sequential(lib.Embedding(5, 3), lib.Linear(3, 5, bias=False))
        model[1].weight = model[0].weight
        return model

    ours, theirs = both(build)
    assert names(ours.named_parameters()) == names(theirs.named_parameters()) == ["0.weight"]
    assert names(ours.named_parameters(remove_duplicate=False)) == ["0.weight", "1.weight"]
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["0.weight", "1.weight"]
    twin = copy.deepcopy(ours)
    assert twin[1].weight is twin[0].weight and twin[0].weight is not ours[0].weight


def test_reassigning_a_registered_name_keeps_its_place_as_in_torch():
    def build(lib, tensor):
        class FineTuned(lib.Module):
            def __init__(self):
                super().__init__()
                self.encoder = lib.Linear(4, 4)
                self.head = lib.Linear(4, 2)
                self.scale = lib.Parameter(tensor(np.ones(1, np.float32)))
                self.shift = lib.Parameter(tensor(np.zeros(1, np.float32)))

        model = FineTuned()
        model.encoder = lib.Linear(4, 4)  # swap a pretrained part, as in fine-tuning
        model.scale = lib.Parameter(tensor(np.full(1, 2.0, np.float32)))
        return model

    ours, theirs = both(build)
    assert names(ours.named_children()) == names(theirs.named_children()) == ["encoder", "head"]
    # parameters() order feeds optimizers
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_buffers_persistent_switches_and_none_as_torch():
    def build(lib, tensor):
        module = lib.Linear(1, 1)
        module.register_buffer("b", tensor([1.0]), persistent=False)
        before = list(module.state_dict())
        module.register_buffer("b", tensor([1.0]))  # now persistent
        after = list(module.state_dict())
        module.register_buffer("gone", None)
        module.b = None
        return before, after, list(module.state_dict()), names(module.named_buffers())

    ours, theirs = both(build)
    assert ours == theirs


def test_a_parameter_over_a_buffer_name_replaces_it_as_in_torch():
    def build(lib, tensor):
        module = lib.Linear(1, 1)
        module.register_buffer("b", tensor([1.0]), persistent=False)
        module.b = lib.Parameter(tensor([2.0]))
        return (
            list(module.state_dict()),
            names(module.named_buffers()),
            names(module.named_parameters()),
        )

    assert both(build)[0] == both(build)[1]


def test_a_parameter_named_like_a_method_is_refused():
    for lib, tensor in LIBS:
        module = lib.Linear(1, 1)
        with pytest.raises(KeyError, match="already exists"):
            module.train = lib.Parameter(tensor([1.0]))


def test_setattr_and_delattr_of_modules_parameters_and_none_as_torch():
    def build(lib, tensor):
        model = lib.Sequential(lib.Linear(2, 2), lib.ReLU())
        setattr(model, "1", None)  # a child slot emptied
        model.extra = lib.Tanh()
        model.extra = None
        model.note = "plain"
        del model.note
        log = [names(model.named_modules()), len(model), repr(model)]
        model[0].bias = None
        log.append(list(model.state_dict()))
        del model[0].weight
        log.append(list(model.state_dict()))
        for bad in ("missing",):
            try:
                delattr(model, bad)
            except AttributeError:
                log.append("AttributeError")
        return log

    ours, theirs = both(build)
    assert ours == theirs


def test_dtype_moves_match_torch():
    def build(lib, tensor):
        model = lib.Sequential(lib.Linear(2, 2), lib.BatchNorm1d(2)).requires_grad_(False)
        seen = [str(v.dtype).replace("torch.", "") for v in model.double().state_dict().values()]
        float32 = mg.float32 if lib is nn else torch.float32
        seen += [
            str(v.dtype).replace("torch.", "")
            for v in model.to(dtype=float32).state_dict().values()
        ]
        return seen, [p.requires_grad for p in model.parameters()], kinds(model.parameters())

    assert both(build)[0] == both(build)[1]


def test_train_eval_apply_requires_grad_zero_grad_as_torch():
    def build(lib, tensor):
        model = lib.Sequential(lib.Dropout(0.5), lib.Sequential(lib.Dropout(0.1), lib.Linear(2, 1)))
        model[1].eval()
        flags = [[m.training for m in model.modules()]]
        model.train()
        flags.append([m.training for m in model.modules()])
        assert model.eval() is model
        flags.append([m.training for m in model.modules()])
        order = []
        model.apply(lambda m: order.append(type(m).__name__))
        model.requires_grad_(False)
        model[1][1].requires_grad_()
        frozen = [p.requires_grad for p in model.parameters()]
        model(tensor(np.ones((3, 2), np.float32))).sum().backward()
        model.zero_grad(set_to_none=False)
        zeros = [float(p.grad.sum()) for p in model.parameters()]
        model.zero_grad()
        return flags, order, frozen, zeros, [p.grad is None for p in model.parameters()]

    assert both(build)[0] == both(build)[1]


def test_hooks_replace_inputs_and_outputs_and_remove_as_torch():
    def build(lib, tensor):
        class Add(lib.Module):
            def forward(self, x, y, scale=1.0):
                return (x + y) * scale

        module = Add()
        log = []
        pre = module.register_forward_pre_hook(lambda m, args: (args[0] * 10, args[1]))
        post = module.register_forward_hook(lambda m, args, out: out + args[0])  # args as replaced

        def once(m, args, out):
            log.append("once")
            handles[0].remove()

        handles = [module.register_forward_hook(once)]
        x, y = tensor([1.0]), tensor([2.0])
        first = float(module(x, y, scale=2.0).sum())
        module(x, y)
        pre.remove()
        post.remove()
        post.remove()
        second = float(module(x, y).sum())

        class Boom(lib.Module):
            def forward(self, x):
                raise ValueError("boom")

        boom = Boom()
        boom.register_forward_hook(lambda m, a, o: log.append("after a failed forward"))
        with pytest.raises(ValueError):
            boom(x)
        return first, second, log

    assert both(build)[0] == both(build)[1] == (34.0, 3.0, ["once"])


def test_full_backward_hook_sees_the_gradients_as_torch():
    def build(lib, tensor):
        module = lib.Linear(2, 1)
        seen = []
        module.register_full_backward_hook(
            lambda m, grad_input, grad_output: seen.append((len(grad_input), len(grad_output)))
        )
        x = tensor(np.ones((1, 2), np.float32), requires_grad=True)
        module(x).sum().backward()
        return seen

    assert both(build)[0] == both(build)[1] == [(1, 1)]


def test_forward_hook_always_call_runs_after_a_failed_forward():
    def build(lib, tensor):
        class Boom(lib.Module):
            def forward(self, x):
                raise ValueError("boom")

        boom, log = Boom(), []
        boom.register_forward_hook(lambda m, a, o: log.append("cleanup"), always_call=True)
        with pytest.raises(ValueError):
            boom(tensor([1.0]))
        return log

    assert both(build)[0] == both(build)[1] == ["cleanup"]


def test_single_line_extra_repr_without_children_as_torch():
    def build(lib, tensor):
        class Scale(lib.Module):
            def extra_repr(self):
                return "factor=2"

        return repr(lib.Sequential(Scale(), lib.Flatten(0, -1), lib.Identity(7, key=1)))

    assert both(build)[0] == both(build)[1]


def test_extra_repr_with_children_or_several_lines_as_torch():
    def build(lib, tensor):
        class WithChild(lib.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.Linear(2, 2)

            def extra_repr(self):
                return "k=1"

        class TwoLines(lib.Module):
            def extra_repr(self):
                return "a=1\nb=2"

        return repr(WithChild()), repr(TwoLines())

    ours, theirs = both(build)
    assert ours == theirs
    # the built-in MultiheadAttention shows it: 'MultiheadAttention(embed_dim=4, ...\n  (out_proj):
    # ...'
    assert repr(nn.MultiheadAttention(4, 2)).splitlines()[0] == "MultiheadAttention("


def test_module_list_repr_compresses_repeats_as_torch():
    def build(lib, tensor):
        return repr(lib.ModuleList([lib.Linear(2, 2) for _ in range(3)] + [lib.ReLU()]))

    assert both(build)[0] == both(build)[1]


def test_sequential_indexing_slicing_len_append_as_torch():
    def build(lib, tensor):
        model = lib.Sequential(lib.Linear(1, 1), lib.ReLU(), lib.Tanh())
        log = [
            type(model[-1]).__name__,
            type(model[np.int64(1)]).__name__,
            kinds(model[::-1]),
            list(model[1:]._modules),
            type(model[:2]).__name__,
            len(model),
        ]
        for bad in (3, -4, "0", 1.0):
            try:
                model[bad]
            except (IndexError, TypeError) as error:
                log.append(type(error).__name__)
        log.append(model.append(lib.Sigmoid()) is model)
        log.append(list(model._modules))
        return log

    assert both(build)[0] == both(build)[1]


def test_sequential_list_edits_as_torch():
    def build(lib, tensor):
        model = lib.Sequential(lib.Linear(1, 1), lib.ReLU())
        model.insert(1, lib.Tanh())
        model.extend([lib.Sigmoid()])
        popped = model.pop(0)
        model[0] = lib.Identity()
        del model[1]
        joined = model + lib.Sequential(lib.ReLU())
        model += lib.Sequential(lib.Tanh())
        return (
            type(popped).__name__,
            list(model._modules),
            kinds(model),
            kinds(joined),
            len(model * 2),
        )

    assert both(build)[0] == both(build)[1]


def test_module_list_and_dict_operations_as_torch():
    def build(lib, tensor):
        layers = lib.ModuleList([lib.ReLU(), lib.Tanh(), lib.Sigmoid(), lib.Identity()])
        del layers[1:3]
        layers.insert(1, lib.Linear(1, 1))
        layers[0] = lib.Tanh()
        log = [list(layers._modules), kinds(layers), names(layers.named_parameters())]
        heads = lib.ModuleDict([("b", lib.ReLU()), ("a", lib.Tanh())])
        heads.update({"c": lib.Linear(1, 1)})
        del heads["b"]
        log += [list(heads), kinds(heads.values()), names(heads.named_parameters()), "a" in heads]
        for bad in (lambda: heads.update(lib.ReLU()), lambda: heads.__setitem__(1, lib.ReLU())):
            try:
                bad()
            except TypeError:
                log.append("TypeError")
        try:
            heads["x.y"] = lib.ReLU()
        except KeyError:
            log.append("KeyError")
        log.append(type(heads.pop("c")).__name__)
        heads.clear()
        log.append(len(heads))
        return log

    assert both(build)[0] == both(build)[1]


def test_module_list_pop_and_add_as_torch():
    def build(lib, tensor):
        layers = lib.ModuleList([lib.ReLU(), lib.Tanh(), lib.Sigmoid()])
        popped = layers.pop(1)
        joined = layers + lib.ModuleList([lib.Identity()])
        return type(popped).__name__, list(layers._modules), kinds(joined), list(joined._modules)

    assert both(build)[0] == both(build)[1]


def test_identity_flatten_unflatten_values_and_gradients_as_torch():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    def build(lib, tensor):
        results = []
        for layer in (
            lib.Identity(),
            lib.Flatten(),
            lib.Flatten(0, 1),
            lib.Flatten(-2, -1),
            lib.Unflatten(-1, (2, -1)),
            lib.Sequential(lib.Flatten(), lib.Unflatten(1, (3, 4))),
        ):
            inp = tensor(x, requires_grad=True)
            out = layer(inp)
            (out * out).sum().backward()
            results.append(
                (
                    tuple(out.shape),
                    np.asarray(out.detach().numpy()).tolist(),
                    np.asarray(inp.grad.numpy()).tolist(),
                    list(layer.state_dict()),
                )
            )
        return results

    assert both(build)[0] == both(build)[1]


def test_get_submodule_and_get_parameter_as_torch():
    def build(lib, tensor):
        model = lib.Sequential(lib.Linear(1, 1), lib.ModuleDict({"q": lib.Linear(1, 2)}))
        model.note = "plain"
        found = [
            tuple(model.get_parameter("1.q.weight").shape),
            model.get_submodule("1.q") is model[1]["q"],
            model.get_submodule("") is model,
        ]
        for call, target in (
            (model.get_submodule, "0.weight"),
            (model.get_submodule, "2"),
            (model.get_submodule, "note"),
            (model.get_parameter, "0"),
            (model.get_parameter, "0.nothere"),
            (model.get_parameter, "nothere.weight"),
        ):
            try:
                call(target)
                found.append("found")
            except AttributeError:
                found.append("AttributeError")
        return found

    assert both(build)[0] == both(build)[1]


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
