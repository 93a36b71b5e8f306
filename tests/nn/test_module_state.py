"""nn.Module's state_dict and load_state_dict (nn/module_state.py) against torch.nn.Module's with
the same calls: keys and their order, buffers persistent or not, casting, missing and unexpected
keys, shape mismatches refused before anything changes, round trips through files and torch.
"""

import numpy as np
import pytest

import minigrad as mg
from minigrad import nn
from module_checks import LIBS, zoo, both, with_buffers

torch = pytest.importorskip("torch")
torch.set_num_threads(1)


def _torch():
    return pytest.importorskip("torch")


def test_buffers_and_state_dict_keys_match_torch():
    torch = _torch()
    ours, theirs = with_buffers(nn, mg.tensor), with_buffers(torch.nn, torch.tensor)
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    # params, persistent buffers, children
    assert list(ours.state_dict()) == list(theirs.state_dict())
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


def test_state_dict_round_trip_loads_buffers_and_casts_as_torch():
    torch = _torch()
    source, target = with_buffers(nn, mg.tensor), with_buffers(nn, mg.tensor)
    source.first.running_mean.numpy()[...] = [1.5, -2.0]
    source.second[1].steps.numpy()[...] = 7
    # float64
    state = {name: value.numpy().astype(np.float64) for name, value in source.state_dict().items()}
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


def test_state_dict_round_trip_into_a_fresh_model():
    mg.manual_seed(0)
    source = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    mg.manual_seed(1)
    target = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    x = mg.randn(5, 3)
    assert not np.array_equal(source(x).numpy(), target(x).numpy())
    state = source.state_dict()
    assert list(state) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert not state["0.weight"].requires_grad and state["0.weight"].grad_fn is None
    assert source.state_dict(keep_vars=True)["0.weight"] is source[0].weight
    weight_array = target[0].weight.numpy()
    result = target.load_state_dict(state)
    assert result == ([], []) and result.missing_keys == [] and result.unexpected_keys == []
    assert target[0].weight.numpy() is weight_array  # copied in place: optimizers keep their arrays
    np.testing.assert_array_equal(source(x).numpy(), target(x).numpy())


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
    before = model[1].bias.numpy().copy()
    state["0.weight"] = np.full((4, 3), 7.0, dtype=np.float32)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert missing == ["1.bias"] and unexpected == ["1.extra"]
    np.testing.assert_array_equal(model[0].weight.numpy(), np.full((4, 3), 7.0))
    np.testing.assert_array_equal(model[1].bias.numpy(), before)


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
    before = model.weight.numpy().copy()
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
    np.testing.assert_array_equal(model.weight.numpy(), before)


def test_state_dict_with_buffers_saves_and_loads_through_files(tmp_path):
    source, target = with_buffers(nn, mg.tensor), with_buffers(nn, mg.tensor)
    source.first.running_mean.numpy()[...] = [3.0, 4.0]
    mg.save(source.state_dict(), tmp_path / "model.npz")
    target.load_state_dict(mg.load(tmp_path / "model.npz"))
    np.testing.assert_array_equal(target.first.running_mean.numpy(), [3.0, 4.0])


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


def test_a_torch_state_dict_loads_into_minigrad_and_back():
    torch.manual_seed(0)
    theirs = zoo(torch.nn)
    theirs.train()
    theirs(torch.randn(16, 3))  # running statistics move
    theirs.eval()
    ours = zoo(nn).eval()
    assert ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()}) == ([], [])
    assert ours.load_state_dict(theirs.state_dict()) == ([], [])  # torch tensors directly
    assert ours[1].num_batches_tracked.item() == 1 and ours[1].num_batches_tracked.dtype == np.int64
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    np.testing.assert_allclose(
        ours(mg.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy(), atol=1e-6
    )
    back = zoo(torch.nn).eval()
    result = back.load_state_dict(
        {k: torch.from_numpy(np.array(v.numpy())) for k, v in ours.state_dict().items()}
    )
    assert not result.missing_keys and not result.unexpected_keys
    np.testing.assert_allclose(
        back(torch.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy()
    )
