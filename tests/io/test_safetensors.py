"""mg.save_safetensors / mg.load_safetensors (minigrad/io/safetensors.py): every layer's weights
cross to PyTorch and back through safetensors files (torch's names, shapes and dtypes), tied
weights both ways, half precision cast on load and bfloat16 refused by name, refusals naming the
file and the entry, and the error without the optional package."""

import json
import os
import sys

import numpy as np
import pytest

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
import minigrad.optim  # noqa: F401  (mg.optim)
import parity
from minigrad import nn

# compares with PyTorch: skipped without it (pip install torch==2.13.0; CI installs it)
torch = pytest.importorskip("torch")


def safetensors_torch():
    return pytest.importorskip(
        "safetensors.torch",
        reason="the safetensors package is not installed (pip install -e '.[safetensors]')",
    )


def layer_cases():
    """(name, make(nn), input array, run(layer, input) -> tuple of outputs)."""
    rng = np.random.default_rng(0)

    def x(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    def first(layer, data):
        return (layer(data),)

    def rnn(layer, data):
        out, hidden = layer(data)
        return (out, *(hidden if isinstance(hidden, tuple) else (hidden,)))

    def attention(layer, data):
        return layer(data, data, data)

    return [
        ("Linear", lambda lib: lib.Linear(5, 3), x(4, 5), first),
        ("Embedding", lambda lib: lib.Embedding(10, 4), rng.integers(0, 10, (3, 5)), first),
        ("LayerNorm", lambda lib: lib.LayerNorm(6), x(2, 3, 6), first),
        ("LSTM", lambda lib: lib.LSTM(4, 5, num_layers=2, batch_first=True), x(2, 3, 4), rnn),
        ("GRU", lambda lib: lib.GRU(4, 5, batch_first=True, bidirectional=True), x(2, 3, 4), rnn),
        ("Conv2d", lambda lib: lib.Conv2d(2, 3, 3, padding=1), x(2, 2, 5, 5), first),
        (
            "MultiheadAttention",
            lambda lib: lib.MultiheadAttention(8, 2, batch_first=True),
            x(2, 4, 8),
            attention,
        ),
        (
            "TransformerEncoderLayer",
            lambda lib: lib.TransformerEncoderLayer(
                8, 2, dim_feedforward=16, dropout=0.0, batch_first=True
            ),
            x(2, 4, 8),
            first,
        ),
        ("BatchNorm2d", lambda lib: lib.BatchNorm2d(2), x(3, 2, 4, 4), first),
    ]


CASES = layer_cases()


def torch_side(run, layer, data):
    tensor = torch.from_numpy(np.ascontiguousarray(data))
    return run(layer, tensor)


@pytest.mark.parametrize("name, make, data, run", CASES, ids=[case[0] for case in CASES])
def test_a_layer_trained_here_loads_into_pytorch_through_safetensors(
    tmp_path, name, make, data, run
):
    st_torch = safetensors_torch()
    mg.manual_seed(1)
    ours = make(nn)
    optimizer = mg.optim.SGD(ours.parameters(), lr=0.1)
    outputs = run(ours, mg.tensor(data))
    sum(output.float().pow(2).sum() for output in outputs).backward()
    optimizer.step()  # trained: not the initial weights any more
    ours.eval()
    path = tmp_path / f"{name}.safetensors"
    mg.save_safetensors(ours.state_dict(), path, metadata={"format": "pt"})
    theirs = make(torch.nn)
    theirs.load_state_dict(st_torch.load_file(path))  # strict: every name and shape matches
    theirs.eval()
    with torch.no_grad():
        expected = torch_side(run, theirs, data)
    for index, (mine, reference) in enumerate(
        zip(run(ours, mg.tensor(data)), expected, strict=True)
    ):
        parity.assert_close(mine, reference, None, f"{name} output {index}")
    from safetensors import safe_open

    with safe_open(path, framework="pt") as file:
        assert file.metadata() == {"format": "pt"}


@pytest.mark.parametrize("name, make, data, run", CASES, ids=[case[0] for case in CASES])
def test_a_pytorch_layer_loads_here_through_safetensors(tmp_path, name, make, data, run):
    st_torch = safetensors_torch()
    torch.manual_seed(2)
    theirs = make(torch.nn).eval()
    path = tmp_path / f"{name}.safetensors"
    st_torch.save_file(theirs.state_dict(), path)
    ours = make(nn)
    assert ours.load_state_dict(mg.load_safetensors(path, device="cpu")) == ([], [])
    ours.eval()
    with torch.no_grad():
        expected = torch_side(run, theirs, data)
    for index, (mine, reference) in enumerate(
        zip(run(ours, mg.tensor(data)), expected, strict=True)
    ):
        parity.assert_close(mine, reference, None, f"{name} output {index}")
    for key, value in theirs.state_dict().items():
        parity.assert_close(ours.state_dict()[key], value, 0, key, same_dtype=True)


def test_safetensors_refusals_name_the_file_and_the_entry(tmp_path, monkeypatch):
    safetensors_torch()
    import safetensors.numpy

    path = tmp_path / "model.safetensors"
    mg.save_safetensors({"w": np.ones(3, np.float32)}, path)
    before = path.read_bytes()
    for bad, message in [
        ({"step": 3}, "'step' is a int; a safetensors file holds only tensors"),
        ({"names": np.array(["a"])}, "'names' has dtype <U1; a safetensors file holds numeric"),
        ({1: np.ones(1)}, "keys must be non-empty strings; got 1"),
        ([np.ones(1)], "expected a dict of name -> Tensor/array"),
    ]:
        with pytest.raises(TypeError, match=message):
            mg.save_safetensors(bad, path)
    with pytest.raises(TypeError, match="metadata must be None or a dict of str -> str"):
        mg.save_safetensors({"w": np.ones(1)}, path, metadata={"epoch": 3})

    def full_disk(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(safetensors.numpy, "save", full_disk)
    with pytest.raises(OSError, match="No space left"):
        mg.save_safetensors({"w": np.zeros(3)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.safetensors"]

    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(before[:-4])
    with pytest.raises(ValueError, match="damaged.safetensors' is not a valid safetensors file"):
        mg.load_safetensors(damaged)
    lying = tmp_path / "lying.safetensors"  # a header that claims more than the file holds
    header = json.dumps({"w": {"dtype": "F32", "shape": [10**9], "data_offsets": [0, 4 * 10**9]}})
    lying.write_bytes(len(header).to_bytes(8, "little") + header.encode() + b"\0" * 8)
    with pytest.raises(ValueError, match="lying.safetensors' is not a valid safetensors file"):
        mg.load_safetensors(lying)
    with pytest.raises(FileNotFoundError, match="mg.load_safetensors: no such file"):
        mg.load_safetensors(tmp_path / "missing.safetensors")
    with pytest.raises(mg.ArgumentError, match="CUDA device; minigrad runs on the CPU only"):
        mg.load_safetensors(path, device="cuda")
    loaded = mg.load_safetensors(path)
    loaded["w"][0] = 5.0  # a writable array of its own
    parity.assert_close(mg.load_safetensors(path)["w"], np.ones(3, np.float32), 0)


def test_without_the_safetensors_package_the_error_names_the_extra(tmp_path, monkeypatch):
    for module in ("safetensors", "safetensors.numpy"):
        monkeypatch.setitem(sys.modules, module, None)
    for call in (
        lambda: mg.save_safetensors({"w": np.ones(1)}, tmp_path / "w.safetensors"),
        lambda: mg.load_safetensors(tmp_path / "w.safetensors"),
    ):
        with pytest.raises(ImportError, match=r"pip install 'minigrad\[safetensors\]'"):
            call()
    assert not (tmp_path / "w.safetensors").exists()


def tied(lib):
    """A model in lib (nn or torch.nn) whose output layer shares the embedding's weight, as
    nanoGPT's lm_head and wte."""

    class Tied(lib.Module):
        def __init__(self):
            super().__init__()
            self.wte = lib.Embedding(5, 3)
            self.head = lib.Linear(3, 5, bias=False)
            self.head.weight = self.wte.weight

    return Tied()


def test_tied_weights_cross_both_ways(tmp_path):
    st_torch = safetensors_torch()
    ours, path = tied(nn), tmp_path / "tied.safetensors"
    mg.save_safetensors(ours.state_dict(), path)  # both names, as the state_dict has them
    theirs = tied(torch.nn)
    theirs.load_state_dict(st_torch.load_file(path))
    assert theirs.head.weight is theirs.wte.weight
    parity.assert_close(theirs.head.weight, ours.wte.weight, 0)
    torch.manual_seed(3)
    theirs = tied(torch.nn)
    st_torch.save_model(theirs, path)  # torch keeps one name of the two
    again = tied(nn)
    missing, unexpected = again.load_state_dict(mg.load_safetensors(path), strict=False)
    assert len(missing) == 1 and unexpected == [] and again.head.weight is again.wte.weight
    parity.assert_close(again.head.weight, theirs.head.weight, 0)


def test_half_precision_files_load_cast_and_bfloat16_is_refused_by_name(tmp_path):
    st_torch = safetensors_torch()
    path = tmp_path / "half.safetensors"
    weight = torch.randn(2, 3)
    st_torch.save_file({"weight": weight.half(), "bias": torch.zeros(2, dtype=torch.float16)}, path)
    layer = nn.Linear(3, 2)
    layer.load_state_dict(mg.load_safetensors(path))
    assert layer.weight.dtype == mg.float32
    parity.assert_close(layer.weight, weight.half().float(), 0)
    st_torch.save_file({"weight": weight.bfloat16(), "bias": torch.zeros(2)}, path)
    with pytest.raises(mg.DTypeError, match=r"half.safetensors' holds .*\{'weight': 'BF16'\}"):
        mg.load_safetensors(path)
