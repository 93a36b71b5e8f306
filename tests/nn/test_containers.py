"""nn containers (Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict): the names
they register and their list/dict behaviour, against torch's."""

from collections import OrderedDict

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn


def _torch():
    return pytest.importorskip("torch")


def test_dotted_names_through_sequential_and_modulelist():
    model = nn.Sequential(
        nn.Linear(4, 3), nn.Tanh(), nn.Sequential(nn.Linear(3, 2), nn.ModuleList([nn.Linear(2, 2)]))
    )
    names = [name for name, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.0.weight", "2.0.bias", "2.1.0.weight", "2.1.0.bias"]
    assert len(model) == 3 and isinstance(model[1], nn.Tanh)
    shapes = {name: p.shape for name, p in model.named_parameters()}
    assert shapes["2.1.0.weight"] == (2, 2) and shapes["0.weight"] == (3, 4)
    with pytest.raises(TypeError, match="Module"):
        nn.ModuleList([nn.Linear(2, 2), "oops"])


def test_module_list_edits_renumber_like_torch():
    torch = _torch()

    def edit(library):
        layers = library.ModuleList([library.Linear(1, 1), library.Tanh()])
        layers.append(library.ReLU())
        layers.insert(1, library.Sigmoid())
        layers.extend([library.Linear(1, 2)])
        layers += [library.Identity()]
        del layers[0]
        layers[-1] = library.Tanh()
        names = [type(m).__name__ for m in layers]
        sliced = layers[1:3]
        return (
            names,
            list(layers._modules),
            type(sliced).__name__,
            [type(m).__name__ for m in sliced],
            len(layers),
        )

    assert edit(nn) == edit(torch.nn)
    with pytest.raises(IndexError, match="out of range"):
        nn.ModuleList([nn.Tanh()])[3]


def test_sequential_from_ordered_dict_and_slices():
    model = nn.Sequential(
        OrderedDict([("encode", nn.Linear(3, 4)), ("act", nn.Tanh()), ("decode", nn.Linear(4, 1))])
    )
    assert [name for name, _ in model.named_parameters()] == [
        "encode.weight",
        "encode.bias",
        "decode.weight",
        "decode.bias",
    ]
    head = model[:2]
    assert isinstance(head, nn.Sequential) and list(head._modules) == ["encode", "act"]
    assert model[-1] is model.decode
    x = mg.randn(2, 3)
    np.testing.assert_allclose(model(x).numpy(), model.decode(model.act(model.encode(x))).numpy())


def test_module_dict_registers_by_key_as_torch():
    torch = _torch()

    def build(library):
        heads = library.ModuleDict(
            {"query": library.Linear(2, 2), "key": library.Linear(2, 2, bias=False)}
        )
        heads["value"] = library.Linear(2, 3)
        heads.update([("extra", library.Tanh())])
        popped = heads.pop("extra")
        return heads, popped

    (ours, popped), (theirs, _) = build(nn), build(torch.nn)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert (
        list(ours) == list(theirs) == ["query", "key", "value"]
        and "key" in ours
        and isinstance(popped, nn.Tanh)
    )
    assert [type(v).__name__ for v in ours.values()] == ["Linear"] * 3 and len(ours) == 3
    model = nn.Sequential(ours)
    assert "0.value.weight" in model.state_dict()
    with pytest.raises(KeyError, match="already exists"):
        ours["train"] = nn.Tanh()  # would shadow Module.train


def test_parameter_list_and_dict_register_tensors_as_parameters():
    torch = _torch()
    ours = nn.ParameterList([nn.Parameter(np.zeros(2, np.float32)), mg.ones(3)])
    theirs = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(2)), torch.ones(3)])
    ours.append(mg.ones(1))
    theirs.append(torch.ones(1))
    assert (
        [n for n, _ in ours.named_parameters()]
        == [n for n, _ in theirs.named_parameters()]
        == ["0", "1", "2"]
    )
    assert isinstance(ours[1], nn.Parameter) and ours[1].requires_grad and len(ours) == 3
    assert [p.shape for p in ours[1:]] == [(3,), (1,)]
    table = nn.ParameterDict({"scale": mg.ones(2)})
    table["shift"] = nn.Parameter(np.zeros(2, np.float32))
    assert list(table) == ["scale", "shift"] and isinstance(table["scale"], nn.Parameter)
    model = nn.Sequential(nn.Linear(2, 2))
    model.extra = ours
    model.table = table
    assert [n for n, _ in model.named_parameters()][2:] == [
        "extra.0",
        "extra.1",
        "extra.2",
        "table.scale",
        "table.shift",
    ]
    assert model.double().extra[0].dtype == np.float64
    with pytest.raises(TypeError, match="Parameters or Tensors"):
        nn.ParameterList([[1.0, 2.0]])
