"""A sweep of nn.Module's API and the checkpoint functions, written as a PyTorch user writes
code, compared with torch where torch has the same API. Differences found are strict xfails
(each one fails for the reason given when run with --runxfail)."""

import copy
import io
import os
import stat
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn

torch = pytest.importorskip("torch")
torch.set_num_threads(1)

LIBS = [(nn, mg.tensor), (torch.nn, torch.tensor)]


def names(pairs):
    return [name for name, _ in pairs]


def kinds(modules):
    return [type(m).__name__ for m in modules]


def both(build):
    """build(lib, tensor) for minigrad and torch -> (ours, theirs)."""
    return tuple(build(lib, tensor) for lib, tensor in LIBS)


# -- parameters, buffers, traversal -------------------------------------------------------------


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
    assert list(ours.state_dict()) == list(
        theirs.state_dict()
    )  # parameters() order feeds optimizers


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


# -- state dicts ----------------------------------------------------------------------------------


def test_load_state_dict_missing_and_unexpected_keys_as_torch():
    def build(lib, tensor):
        model = lib.Sequential(lib.Linear(2, 2), lib.Sequential(lib.Linear(2, 1)))
        state = {
            name: tensor(np.asarray(value.detach().numpy()).copy())
            for name, value in model.state_dict().items()
        }
        del state["1.0.bias"]
        state["1.0.extra"] = tensor([0.0])
        state["0.weight.more"] = tensor([0.0])
        result = model.load_state_dict(state, strict=False)
        try:
            model.load_state_dict(state)
            strict = "loaded"
        except RuntimeError as error:
            strict = ("1.0.bias" in str(error), "1.0.extra" in str(error))
        return (
            list(result.missing_keys),
            sorted(result.unexpected_keys),
            strict,
            isinstance(result, tuple),
        )

    assert both(build)[0] == both(build)[1]


def test_unexpected_keys_come_in_torch_order():
    def build(lib, tensor):
        model = lib.Sequential(lib.Linear(1, 1), lib.Linear(1, 1))
        state = {"1.extra": tensor([1.0]), "0.extra": tensor([1.0]), "zzz": tensor([1.0])}
        state.update(model.state_dict())
        return model.load_state_dict(state, strict=False).unexpected_keys

    ours, theirs = both(build)
    assert ours == theirs == ["zzz", "0.extra", "1.extra"]


def test_shape_mismatch_is_refused_even_when_not_strict_and_names_the_key():
    for lib, tensor in LIBS:
        model = lib.Linear(3, 2)
        before = np.array(model.weight.detach().numpy())
        for strict in (True, False):
            with pytest.raises(RuntimeError, match=r"weight") as info:
                model.load_state_dict(
                    {
                        "weight": tensor(np.zeros((3, 2), np.float32)),
                        "bias": tensor(np.zeros(2, np.float32)),
                    },
                    strict=strict,
                )
            assert "3, 2" in str(info.value) and "2, 3" in str(info.value)
        np.testing.assert_array_equal(model.weight.detach().numpy(), before)


def test_load_state_dict_refuses_what_is_not_a_mapping():
    for lib, tensor in LIBS:
        model = lib.Linear(1, 1)
        for wrong in ([("weight", tensor([[1.0]])), ("bias", tensor([1.0]))], lib.Linear(1, 1)):
            with pytest.raises(TypeError, match="dict"):
                model.load_state_dict(wrong)


def _zoo(lib):
    return lib.Sequential(
        lib.Linear(3, 4), lib.BatchNorm1d(4), lib.LayerNorm(4), lib.Tanh(), lib.Linear(4, 2)
    )


def test_a_torch_state_dict_loads_into_minigrad_and_back():
    torch.manual_seed(0)
    theirs = _zoo(torch.nn)
    theirs.train()
    theirs(torch.randn(16, 3))  # running statistics move
    theirs.eval()
    ours = _zoo(nn).eval()
    assert ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()}) == ([], [])
    assert ours.load_state_dict(theirs.state_dict()) == ([], [])  # torch tensors directly
    assert ours[1].num_batches_tracked.item() == 1 and ours[1].num_batches_tracked.dtype == np.int64
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_allclose(
        ours(mg.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-6
    )
    back = _zoo(torch.nn).eval()
    result = back.load_state_dict(
        {k: torch.from_numpy(np.array(v.numpy())) for k, v in ours.state_dict().items()}
    )
    assert not result.missing_keys and not result.unexpected_keys
    np.testing.assert_allclose(
        back(torch.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy()
    )


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


# -- hooks ----------------------------------------------------------------------------------------


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


# -- repr ---------------------------------------------------------------------------------------


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
    # the built-in MultiheadAttention shows it: 'MultiheadAttention(embed_dim=4, ...\n  (out_proj): ...'
    assert repr(nn.MultiheadAttention(4, 2)).splitlines()[0] == "MultiheadAttention("


def test_module_list_repr_compresses_repeats_as_torch():
    def build(lib, tensor):
        return repr(lib.ModuleList([lib.Linear(2, 2) for _ in range(3)] + [lib.ReLU()]))

    assert both(build)[0] == both(build)[1]


# -- containers -----------------------------------------------------------------------------------


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


# -- checkpoints ----------------------------------------------------------------------------------


def test_checkpoint_round_trip_of_nested_values(tmp_path):
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    checkpoint = {
        "model": model.state_dict(),
        "config": {
            "name": "run-ü",
            "layers": [3, 2],
            "tags": ["a", "bb"],
            "lr": 1e-3,
            "step": 7,
            "flag": True,
            "neg": -3,
            "big": 2**62,
            "pair": (1.5, 2.5),
        },
    }
    path = tmp_path / "ckpt.npz"
    mg.save(checkpoint, path)
    loaded = mg.load(path)
    config = loaded["config"]
    assert str(config["name"]) == "run-ü" and config["layers"].tolist() == [3, 2]
    assert config["tags"].tolist() == ["a", "bb"] and float(config["lr"]) == 1e-3
    assert (
        int(config["step"]) == 7
        and bool(config["flag"]) is True
        and config["flag"].dtype == np.bool_
    )
    assert (
        int(config["neg"]) == -3
        and int(config["big"]) == 2**62
        and config["pair"].tolist() == [1.5, 2.5]
    )
    fresh = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    assert fresh.load_state_dict(loaded["model"]) == ([], [])
    for name, value in model.state_dict().items():
        assert loaded["model"][name].dtype == value.dtype
        np.testing.assert_array_equal(loaded["model"][name], value.numpy())
    assert loaded["model"]["0"]["weight"].shape == (2, 3)


def test_an_empty_nested_dict_round_trips(tmp_path):
    path = tmp_path / "ckpt.npz"
    mg.save({"model": nn.Linear(1, 1).state_dict(), "act": nn.ReLU().state_dict()}, path)
    loaded = mg.load(path)
    assert "act" in loaded
    nn.ReLU().load_state_dict(loaded["act"])


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, MemoryError])
def test_an_interrupted_save_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path, monkeypatch, interrupt
):
    path = tmp_path / "ckpt.npz"
    mg.save({"w": np.arange(3.0)}, path)
    before = path.read_bytes()
    real_write = np.lib.format.write_array

    def failing(file, array, **kwargs):
        real_write(file, array, **kwargs)
        raise interrupt()

    monkeypatch.setattr(np.lib.format, "write_array", failing)
    with pytest.raises(interrupt):
        mg.save({"w": np.zeros(1000), "b": np.ones(2)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.npz"]
    with pytest.raises(TypeError, match="'bad'"):  # a value refused before anything is written
        mg.save({"w": np.zeros(2), "bad": object()}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.npz"]
    np.testing.assert_array_equal(mg.load(path)["w"], np.arange(3.0))


def _npy(array=None, header=None, payload=b""):
    buffer = io.BytesIO()
    if header is None:
        np.lib.format.write_array(
            buffer, np.arange(3) if array is None else array, allow_pickle=True
        )
    else:
        np.lib.format.write_array_header_1_0(buffer, header)
        buffer.write(payload)
    return buffer.getvalue()


def _hostile(tmp_path, kind):
    path = tmp_path / f"{kind}.npz"
    if kind == "truncated":
        mg.save({"w": np.arange(1000.0)}, tmp_path / "good.npz")
        raw = (tmp_path / "good.npz").read_bytes()
        path.write_bytes(raw[: len(raw) // 2])
    elif kind == "pickled":
        np.savez(path, w=np.array([{"a": 1}], dtype=object))
    elif kind == "huge shape":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(
                "w.npy",
                _npy(
                    header={"descr": "<f8", "fortran_order": False, "shape": (10**12,)},
                    payload=b"\0" * 64,
                ),
            )
    elif kind == "dev zero":
        os.symlink("/dev/zero", path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "missing":
        pass
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "lone npy":
        path.write_bytes(_npy())
    elif kind == "not npy member":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("w.txt", b"hello")
    return path


@pytest.mark.parametrize(
    "kind, error, words",
    [
        ("truncated", ValueError, "not a valid .npz"),
        ("pickled", ValueError, "pickled"),
        ("huge shape", ValueError, "corrupt"),
        ("dev zero", ValueError, "not a regular file"),
        ("folder", IsADirectoryError, "folder"),
        ("missing", FileNotFoundError, "no such file"),
        ("empty", ValueError, "not an .npz"),
        ("lone npy", ValueError, "not an .npz"),
        ("not npy member", ValueError, "not a .npy"),
    ],
)
def test_hostile_files_are_refused_naming_the_file(tmp_path, kind, error, words):
    path = _hostile(tmp_path, kind)
    with pytest.raises(error, match=words) as info:
        mg.load(path)
    assert str(path) in str(info.value)


def test_zip_member_names_with_dot_dot_are_never_written_out(tmp_path):
    inner = tmp_path / "inner"
    inner.mkdir()
    path = inner / "evil.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("../escaped.npy", _npy())
        archive.writestr("/absolute.npy", _npy())
    try:
        loaded = mg.load(path)
    except ValueError:
        loaded = None
    assert sorted(os.listdir(tmp_path)) == ["inner"] and os.listdir(inner) == ["evil.npz"]
    assert not os.path.exists("/absolute.npy")
    if loaded is not None:  # read as data only: the names are keys, nothing is extracted
        assert sorted(loaded) == ["../escaped", "/absolute"]


@pytest.mark.parametrize("through_link", [False, True])
def test_save_never_replaces_a_special_file(tmp_path, through_link):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    target = fifo
    if through_link:
        target = tmp_path / "link.npz"
        os.symlink(fifo, target)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so a write into the pipe would not block
    try:
        try:
            mg.save({"w": np.zeros(2)}, target)
        except (OSError, ValueError):
            pass  # refusing is fine too
        assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    finally:
        os.close(reader)


def test_path_errors_say_what_is_wrong(tmp_path):
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(OSError) as info:
        mg.save({"a": 1}, tmp_path / "file.txt" / "ckpt.npz")
    assert "does not exist" not in str(info.value) and "not a folder" in str(info.value)
    os.symlink(tmp_path / "loop2", tmp_path / "loop1")
    os.symlink(tmp_path / "loop1", tmp_path / "loop2")
    with pytest.raises(OSError) as info:
        mg.load(tmp_path / "loop1")
    assert "no such file" not in str(info.value)
