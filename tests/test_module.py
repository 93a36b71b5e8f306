"""nn.Module: registration, dotted names, shared parameters, modes, repr, state dicts."""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


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


def test_setattr_registers_parameters_and_children_only():
    block = Block()
    assert list(block._parameters) == ["scale"]
    assert list(block._modules) == ["inner"]
    assert block.note == "not a parameter"
    assert [name for name, _ in block.named_parameters()] == ["scale", "inner.weight", "inner.bias"]
    assert list(block.children()) == [block.inner]
    assert [name for name, _ in block.named_modules()] == ["", "inner"]


def test_reassigning_replaces_the_registration():
    block = Block()
    block.scale = "now a string"
    assert "scale" not in block._parameters and block.scale == "now a string"
    del block.inner
    assert [name for name, _ in block.named_parameters()] == []


def test_setattr_before_super_init_explains():
    class Broken(nn.Module):
        def __init__(self):
            self.weight = nn.Parameter(np.zeros(2))

    with pytest.raises(AttributeError, match="super"):
        Broken()


def test_dotted_names_through_sequential_and_modulelist():
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Sequential(nn.Linear(3, 2), nn.ModuleList([nn.Linear(2, 2)])))
    names = [name for name, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.0.weight", "2.0.bias", "2.1.0.weight", "2.1.0.bias"]
    assert len(model) == 3 and isinstance(model[1], nn.Tanh)
    shapes = {name: p.shape for name, p in model.named_parameters()}
    assert shapes["2.1.0.weight"] == (2, 2) and shapes["0.weight"] == (3, 4)
    with pytest.raises(TypeError, match="Module"):
        nn.ModuleList([nn.Linear(2, 2), "oops"])


def test_shared_parameter_is_listed_once():
    model = Tied()
    names = [name for name, _ in model.named_parameters()]
    assert names == ["embed.weight"]
    assert len(list(model.parameters())) == 1
    shared = nn.Linear(2, 2)
    twice = nn.Sequential(shared, shared)
    assert len(list(twice.parameters())) == 2
    assert len(list(twice.modules())) == 2


def test_train_eval_reaches_every_descendant():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5), nn.ModuleList([nn.Dropout(0.1)])))
    assert all(m.training for m in model.modules())
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())


def test_zero_grad_clears_every_gradient():
    model = nn.Sequential(nn.Linear(3, 2), nn.Tanh(), nn.Linear(2, 1))
    model(mg.randn(4, 3)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_call_runs_forward():
    class Double(nn.Module):
        def forward(self, x):
            return x * 2

    np.testing.assert_array_equal(Double()(mg.tensor([1.0, 2.0])).data, [2.0, 4.0])
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(mg.tensor([1.0]))


def test_repr_is_an_indented_tree():
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Sequential(nn.Dropout(0.25), nn.Embedding(10, 3, padding_idx=0)))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=4, out_features=3, bias=True)\n"
        "  (1): Tanh()\n"
        "  (2): Sequential(\n"
        "    (0): Dropout(p=0.25)\n"
        "    (1): Embedding(10, 3, padding_idx=0)\n"
        "  )\n"
        ")")


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
    weight_array = target[0].weight.data
    assert target.load_state_dict(state) == ([], [])
    assert target[0].weight.data is weight_array  # copied in place: optimizers keep their arrays
    np.testing.assert_array_equal(source(x).data, target(x).data)


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


def test_load_state_dict_shape_mismatch_names_both_shapes_and_changes_nothing():
    model = nn.Linear(3, 2)
    before = model.weight.data.copy()
    with pytest.raises(RuntimeError, match=r"weight: expected shape \(2, 3\), got \(3, 2\)"):
        model.load_state_dict({"weight": np.zeros((3, 2), np.float32), "bias": np.zeros(2, np.float32)})
    with pytest.raises(RuntimeError, match=r"weight: expected shape \(2, 3\), got \(3, 2\)"):
        model.load_state_dict({"weight": np.zeros((3, 2), np.float32), "bias": np.zeros(2, np.float32)},
                              strict=False)
    np.testing.assert_array_equal(model.weight.data, before)
