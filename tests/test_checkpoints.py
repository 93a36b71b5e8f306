"""Checkpoints as PyTorch scripts write them: mg.save / mg.load with torch.load's arguments, Python
values given back as the types saved (without pickle), nanoGPT's checkpoint resumed exactly,
hostile manifests refused, and safetensors files that PyTorch reads, both ways.

torch.save / torch.load are the reference for what comes back (minigrad never reads their files:
the values are compared)."""

import io
import json
import math
import os
import string
import sys
import zipfile
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import minigrad as mg
import parity
from minigrad import nn
from minigrad.nn import functional as F

# compares with PyTorch: skipped without it (pip install torch==2.13.0; CI installs it)
torch = pytest.importorskip("torch")

# -- Python values come back as the types saved, as torch.load gives them -----------------------


def torch_round_trip(value):
    """What torch.load gives back of torch.save(value) (the reference)."""
    buffer = io.BytesIO()
    torch.save(value, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def assert_same_value(ours, theirs, where="value"):
    """Equal, and of the same type all the way down (a Checkpoint counts as a dict; a torch
    tensor compares with an array; -0.0 is not 0.0; NaN matches NaN)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{where}: {type(ours).__name__}, expected a dict"
        assert list(ours) == list(theirs), f"{where}: keys {list(ours)} != {list(theirs)}"
        for key in theirs:
            assert_same_value(ours[key], theirs[key], f"{where}[{key!r}]")
        return
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, np.ndarray), f"{where}: {type(ours).__name__}, expected an array"
        parity.assert_close(ours, theirs, 0, where, same_dtype=True)
        return
    assert type(ours) is type(theirs), f"{where}: {type(ours).__name__} != {type(theirs).__name__}"
    if isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), f"{where}: length {len(ours)} != {len(theirs)}"
        for index, (mine, reference) in enumerate(zip(ours, theirs)):
            assert_same_value(mine, reference, f"{where}[{index}]")
    elif isinstance(theirs, (float, complex)):
        for mine, reference in ((ours.real, theirs.real), (ours.imag, theirs.imag)):
            assert (math.isnan(mine) and math.isnan(reference)) or (
                mine == reference and math.copysign(1, mine) == math.copysign(1, reference)
            ), f"{where}: {ours!r} != {theirs!r}"
    else:
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.complex_numbers()
    | st.text(max_size=8)
)
KEYS = st.text(alphabet=string.ascii_letters + string.digits + "_ -", min_size=1, max_size=6)
VALUES = st.recursive(
    LEAVES,
    lambda children: (
        st.lists(children, max_size=3)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(KEYS, children, max_size=3)
    ),
    max_leaves=10,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.dictionaries(KEYS, VALUES, max_size=4))
def test_python_values_come_back_as_torch_load_gives_them(tmp_path, saved):
    path = tmp_path / "values.npz"
    mg.save(saved, path)
    assert_same_value(mg.load(path), torch_round_trip(saved))


def test_every_kind_of_value_in_one_checkpoint(tmp_path):
    saved = {
        "n_embd": 32,
        "big": 10**40,
        "negative_zero": -0.0,
        "not_a_number": math.nan,
        "infinite": -math.inf,
        "impedance": 1 - 2j,
        "bias": False,
        "name": "shakespeare_char \u00e9\u4e2d\U0001f600",
        "nothing": None,
        "betas": (0.9, 0.95),
        "mixed": [1, "two", 3.0, None, [4, (5,)], {"deep": True}],
        "empty": {"dict": {}, "list": [], "tuple": ()},
        "weights": {"w": mg.tensor(np.eye(2, dtype=np.float32)), "ids": np.arange(3)},
        "text_array": np.array(["a", "bc"]),
        "numpy_scalar": np.float32(1.5),
        "numpy_int": np.int64(7),
        7: "an integer key",
    }
    path = tmp_path / "all.npz"
    mg.save(saved, path)
    loaded = mg.load(path)
    reference = torch_round_trip(
        {
            **saved,
            "weights": {"w": torch.eye(2), "ids": torch.arange(3)},
            "text_array": None,
            "numpy_scalar": None,
            "numpy_int": None,
        }
    )
    expected = dict(reference)
    for key in ("text_array", "numpy_scalar", "numpy_int"):  # numpy's own types, not torch's
        del expected[key]
    ours = {key: value for key, value in loaded.items() if key in expected}
    assert_same_value(ours, expected)
    assert loaded["text_array"].tolist() == ["a", "bc"] and loaded["text_array"].dtype.kind == "U"
    assert type(loaded["numpy_scalar"]) is np.float32 and loaded["numpy_scalar"] == 1.5
    assert type(loaded["numpy_int"]) is np.int64 and loaded["numpy_int"] == 7
    assert loaded["mixed"][5] == {"deep": True} and loaded["empty"] == {
        "dict": {},
        "list": [],
        "tuple": (),
    }
    assert loaded["weights"]["w"].dtype == np.float32  # a nested dict read back by its name
    assert list(loaded) == list(saved)  # nested, as torch.load gives it
    assert "empty.dict" in loaded and loaded["weights.w"] is loaded["weights"]["w"]


def test_a_value_saved_alone_comes_back_alone(tmp_path):
    path = tmp_path / "one.npz"
    for value in (mg.tensor([1.0, 2.0]), [1, 2.5, "x"], 3, None, "text"):
        mg.save(value, path)
        loaded = mg.load(path)
        if isinstance(value, mg.Tensor):
            parity.assert_close(loaded, value.numpy(), 0, same_dtype=True)
        else:
            assert_same_value(loaded, torch_round_trip(value))


def test_np_load_reads_a_checkpoint_as_any_npz(tmp_path):
    """The arrays are .npy members under their dotted names; the manifest is one more (uint8)."""
    path = tmp_path / "ckpt.npz"
    mg.save({"model": {"w": np.ones(2)}, "act": {}, "step": 3}, path)
    with np.load(path) as archive:
        assert sorted(archive.files) == ["__minigrad__", "act/", "model.w"]
        np.testing.assert_array_equal(archive["model.w"], np.ones(2))
        assert json.loads(archive["__minigrad__"].tobytes())["version"] == 1
    with zipfile.ZipFile(path) as archive:
        assert "act/" in archive.namelist()  # an empty dict keeps its folder entry


def old_format_file(path, entries):
    """A file as mg.save wrote it before the manifest: flat '<name>.npy' members, numbers as 0-d
    arrays, an empty dict as a folder entry."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, value in entries.items():
            if isinstance(value, dict):
                archive.writestr(zipfile.ZipInfo(name + "/"), b"")
                continue
            with archive.open(name + ".npy", "w") as member:
                np.lib.format.write_array(member, np.asarray(value), allow_pickle=False)


def test_files_written_before_the_manifest_still_load(tmp_path):
    path = tmp_path / "old.npz"
    old_format_file(
        path,
        {
            "model.fc.weight": np.ones((2, 3), np.float32),
            "model.fc.bias": np.zeros(2, np.float32),
            "act": {},
            "iter_num": 100,
            "config.dataset": "tiny",
        },
    )
    loaded = mg.load(path)
    assert list(loaded) == ["model.fc.weight", "model.fc.bias", "act", "iter_num", "config.dataset"]
    assert isinstance(loaded["iter_num"], np.ndarray) and loaded["iter_num"].shape == ()
    assert int(loaded["iter_num"]) == 100 and str(loaded["config"]["dataset"]) == "tiny"
    assert list(loaded["model"]) == ["fc.weight", "fc.bias"] and loaded["act"] == {}
    layer = nn.Linear(3, 2)
    layer.load_state_dict(loaded["model.fc"])
    parity.assert_close(layer.weight, np.ones((2, 3), np.float32), 0)


# -- nanoGPT's checkpoint: resume gives the uninterrupted run ---------------------------------


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 65
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = False


class Block(nn.Module):
    """Causal self-attention with a fused query/key/value projection, then an MLP."""

    def __init__(self, config):
        super().__init__()
        self.n_head, self.n_embd = config.n_head, config.n_embd
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.mlp_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        batch, steps, channels = x.size()
        query, key, value = self.c_attn(self.ln_1(x)).split(self.n_embd, dim=2)
        heads = (batch, steps, self.n_head, channels // self.n_head)
        query, key, value = (t.view(*heads).transpose(1, 2) for t in (query, key, value))
        scores = (query @ key.transpose(-2, -1)) * (1.0 / math.sqrt(key.size(-1)))
        causal = mg.tril(mg.ones(steps, steps)).view(1, 1, steps, steps)
        weights = F.softmax(scores.masked_fill(causal == 0, float("-inf")), dim=-1)
        attended = (self.dropout(weights) @ value).transpose(1, 2).contiguous()
        x = x + self.c_proj(attended.view(batch, steps, channels))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(mg.arange(idx.size(1)))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        decay = [p for p in self.parameters() if p.dim() >= 2]
        no_decay = [p for p in self.parameters() if p.dim() < 2]
        groups = [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        return mg.optim.AdamW(groups, lr=learning_rate, betas=betas)


MODEL_ARGS = dict(
    n_layer=2, n_head=2, n_embd=32, block_size=16, bias=False, vocab_size=65, dropout=0.0
)
CONFIG = {
    "out_dir": "out-shakespeare-char",
    "dataset": "shakespeare_char",
    "learning_rate": 1e-3,
    "min_lr": 1e-4,
    "warmup_iters": 2,
    "lr_decay_iters": 6,
    "decay_lr": True,
    "beta2": 0.99,
    "grad_clip": 1.0,
    "compile": False,
    "always_save_checkpoint": True,
    "device": "cpu",
}


def get_lr(it, config):
    if it < config["warmup_iters"]:
        return config["learning_rate"] * (it + 1) / (config["warmup_iters"] + 1)
    ratio = (it - config["warmup_iters"]) / (config["lr_decay_iters"] - config["warmup_iters"])
    coefficient = 0.5 * (1.0 + math.cos(math.pi * min(ratio, 1.0)))
    return config["min_lr"] + coefficient * (config["learning_rate"] - config["min_lr"])


def train_steps(model, optimizer, config, iterations, batches):
    """nanoGPT's step: the lr schedule, forward, backward, clipping, step -> the losses."""
    losses = []
    for it in iterations:
        for group in optimizer.param_groups:
            group["lr"] = get_lr(it, config) if config["decay_lr"] else config["learning_rate"]
        inputs, targets = batches[it]
        loss = model(mg.tensor(inputs), mg.tensor(targets))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), config["grad_clip"])
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses


def test_nanogpt_checkpoint_resumes_exactly_as_the_uninterrupted_run(tmp_path):
    rng = np.random.default_rng(0)
    data = rng.integers(0, 65, size=(6, 4, 17))
    batches = [(chunk[:, :-1], chunk[:, 1:]) for chunk in data]
    mg.manual_seed(0)
    model = GPT(GPTConfig(**MODEL_ARGS))
    optimizer = model.configure_optimizers(0.1, CONFIG["learning_rate"], (0.9, CONFIG["beta2"]))
    train_steps(model, optimizer, CONFIG, range(3), batches)
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "model_args": MODEL_ARGS,
        "iter_num": 3,
        "best_val_loss": 1.5,
        "config": CONFIG,
    }
    path = tmp_path / "ckpt.pt"
    mg.save(checkpoint, path)
    straight = train_steps(model, optimizer, CONFIG, range(3, 6), batches)

    # nanoGPT's train.py, init_from='resume'
    checkpoint = mg.load(path, map_location=CONFIG["device"])
    checkpoint_model_args = checkpoint["model_args"]
    model_args = {}
    for k in ["n_layer", "n_head", "n_embd", "block_size", "bias", "vocab_size"]:
        model_args[k] = checkpoint_model_args[k]
    model_args["dropout"] = checkpoint_model_args["dropout"]
    assert_same_value(dict(model_args), torch_round_trip(MODEL_ARGS))
    resumed = GPT(GPTConfig(**model_args))
    state_dict = checkpoint["model"]
    unwanted_prefix = "_orig_mod."
    for k, _ in list(state_dict.items()):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix) :]] = state_dict.pop(k)
    resumed.load_state_dict(state_dict)
    iter_num, best_val_loss = checkpoint["iter_num"], checkpoint["best_val_loss"]
    assert_same_value([iter_num, best_val_loss], [3, 1.5])
    assert_same_value(dict(checkpoint["config"]), torch_round_trip(CONFIG))
    resumed_optimizer = resumed.configure_optimizers(
        0.1, CONFIG["learning_rate"], (0.9, CONFIG["beta2"])
    )
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    again = train_steps(
        resumed, resumed_optimizer, checkpoint["config"], range(iter_num, 6), batches
    )
    assert again == straight
    for (name, ours), (_, reference) in zip(
        resumed.named_parameters(), model.named_parameters(), strict=True
    ):
        parity.assert_close(ours, reference, 0, name)


# -- torch.load's arguments --------------------------------------------------------------------


@pytest.fixture
def saved_pair(tmp_path):
    """(our file, torch's file) of the same small checkpoint."""
    ours, theirs = tmp_path / "ours.npz", tmp_path / "theirs.pt"
    mg.save({"w": np.arange(4.0, dtype=np.float32), "step": 3}, ours)
    torch.save({"w": torch.arange(4.0), "step": 3}, theirs)
    return ours, theirs


@pytest.mark.parametrize(
    "map_location",
    [
        None,
        "cpu",
        torch.device("cpu"),
        mg.device("cpu"),
        {"cuda:0": "cpu"},
        {"cpu": "cpu"},
        lambda storage, location: storage,
    ],
    ids=["None", "cpu", "torch.device", "mg.device", "dict-cuda-to-cpu", "dict-cpu", "callable"],
)
@pytest.mark.parametrize("weights_only", [None, True, False])
def test_map_location_and_weights_only_as_torch_takes_them(saved_pair, map_location, weights_only):
    ours, theirs = saved_pair
    loaded = mg.load(ours, map_location=map_location, weights_only=weights_only)
    if isinstance(map_location, mg.device):  # torch's own device for torch
        map_location = torch.device(map_location.type)
    reference = torch.load(theirs, map_location=map_location, weights_only=True)
    assert_same_value(loaded, reference)


@pytest.mark.parametrize(
    "map_location, mention",
    [
        ("cuda", "CUDA"),
        ("cuda:1", "'cuda:1'"),
        (torch.device("cuda", 0), "CUDA"),
        ({"cpu": "cuda:0"}, "cuda:0"),
        ("mps", "MPS"),
        ("gpu", "'gpu'"),
        (0, "int"),
    ],
)
def test_a_device_other_than_the_cpu_is_refused_as_torch_refuses_it_here(
    saved_pair, map_location, mention
):
    ours, theirs = saved_pair
    error = parity.raises_like_torch(
        lambda: mg.load(ours, map_location=map_location),
        lambda: torch.load(theirs, map_location=map_location, weights_only=True),
        must_mention=("mg.load", mention),
    )
    if not isinstance(map_location, int):
        assert "CPU only" in str(error)


def test_mmap_maps_the_arrays_copy_on_write(tmp_path):
    path = tmp_path / "big.npz"
    weight = np.arange(12.0).reshape(3, 4)
    mg.save({"model": {"w": weight, "empty": np.zeros((0, 2))}, "s": np.float32(2.5), "n": 1}, path)
    before = path.read_bytes()
    loaded = mg.load(path, mmap=True, map_location="cpu")
    assert isinstance(loaded["model.w"], np.memmap)
    parity.assert_close(loaded["model.w"], weight, 0, same_dtype=True)
    assert loaded["model.empty"].shape == (0, 2) and loaded["s"] == np.float32(2.5)
    loaded["model.w"][0, 0] = 99.0  # copy-on-write: the file stays as it was
    assert path.read_bytes() == before
    assert_same_value(mg.load(path, mmap=False)["n"], 1)
    compressed = tmp_path / "compressed.npz"
    np.savez_compressed(compressed, w=weight)
    with pytest.raises(ValueError, match=r"'w' of .*compressed.npz.* is compressed.*mmap=False"):
        mg.load(compressed, mmap=True)
    parity.assert_close(mg.load(compressed)["w"], weight, 0)


def test_arguments_minigrad_cannot_honour_are_refused_by_name(saved_pair):
    ours, _ = saved_pair
    import pickle

    with pytest.raises(TypeError, match=r"never unpickles.*\['pickle_module'\]"):
        mg.load(ours, pickle_module=pickle)
    with pytest.raises(TypeError, match=r"never unpickles.*\['encoding'\]"):
        mg.load(ours, encoding="latin1")
    with pytest.raises(TypeError, match="weights_only must be True, False or None; got 'yes'"):
        mg.load(ours, weights_only="yes")
    with pytest.raises(TypeError, match="mmap must be True, False or None; got 1"):
        mg.load(ours, mmap=1)
    with pytest.raises(TypeError, match="map_location must be None, 'cpu'.*got float 1.5"):
        mg.load(ours, map_location=1.5)
    with pytest.raises(TypeError, match="callable must return the array.*'w' it returned str"):
        mg.load(ours, map_location=lambda storage, location: "moved")


# -- what mg.save refuses, and hostile manifests --------------------------------------------------


class Opaque:
    pass


@pytest.mark.parametrize(
    "value, error, message",
    [
        ({"names": np.array(["a", None], dtype=object)}, TypeError, "'names' has dtype object"),
        ({"config": {"fn": print}}, TypeError, r"'config.fn' must be .*builtin_function_or_method"),
        ({"x": [1, Opaque()]}, TypeError, r"'x\[1\]' must be .*got Opaque"),
        ({"model": nn.Linear(2, 2)}, TypeError, r"got Linear \(save its state_dict\(\)"),
        ({"s": {1, 2}}, TypeError, "got set"),
        (
            {("a", 1): 1},
            TypeError,
            r"keys must be non-empty strings \(or integers\); got \('a', 1\)",
        ),
        ({"a": {True: 1}}, TypeError, r"got True \(in 'a'\)"),
        ({"": 1}, TypeError, "keys must be non-empty strings"),
        ({"a.b": 1, "a": {"b": 2}}, ValueError, "'a.b' appears twice after flattening"),
        ({"n": 1 << 20_000}, ValueError, "'n' is an integer of 20,001 bits"),
        (nn.Linear(2, 2), TypeError, r"the saved value must be .*got Linear \(save its state_dict"),
    ],
)
def test_save_refuses_what_the_format_cannot_hold(tmp_path, value, error, message):
    path = tmp_path / "bad.npz"
    with pytest.raises(error, match=message):
        mg.save(value, path)
    assert not path.exists()


def test_open_files_and_buffers_save_and_load_as_in_torch(tmp_path):
    """torch.save(obj, f) and torch.load(f) with an open file or a BytesIO (pytorch/examples'
    time_sequence_prediction writes its data so): the same values back as torch gives."""
    saved = {"w": np.arange(6.0).reshape(2, 3), "n": 3, "cfg": {"lr": 0.5, "names": ["a"]}}
    ours, theirs = io.BytesIO(), io.BytesIO()
    mg.save(saved, ours)
    torch.save({**saved, "w": torch.from_numpy(saved["w"])}, theirs)
    ours.seek(0), theirs.seek(0)
    assert_same_value(mg.load(ours), torch.load(theirs))
    path = tmp_path / "data.pt"
    with open(path, "wb") as file:
        mg.save(saved["w"], file)
    with open(path, "rb") as file:
        parity.assert_close(mg.load(file), saved["w"], 0, same_dtype=True)
    parity.assert_close(mg.load(path), saved["w"], 0, same_dtype=True)  # a file like any other


def test_file_objects_that_cannot_serve_are_refused_by_name(tmp_path):
    path = tmp_path / "ckpt.pt"
    mg.save({"w": np.ones(1)}, path)
    with open(path, encoding="latin-1") as text, pytest.raises(TypeError, match="binary mode"):
        mg.load(text)
    with (
        open(tmp_path / "out.txt", "w") as text,
        pytest.raises(TypeError, match="open it with 'wb'"),
    ):
        mg.save({"w": np.ones(1)}, text)
    with (
        open(path, "rb") as file,
        pytest.raises(ValueError, match="mmap=True maps a file by its path"),
    ):
        mg.load(file, mmap=True)
    with pytest.raises(ValueError, match=r"'<BytesIO>' is not an .npz archive"):
        mg.load(io.BytesIO(b"\x80\x02pickle"))
    broken = io.BytesIO()
    with pytest.raises(TypeError, match="no pickled objects|must be a Tensor"):
        mg.save({"m": object()}, broken)
    assert broken.getvalue() == b""  # every check runs before the first byte is written


def test_save_refuses_nesting_deeper_than_100_and_a_dict_that_holds_itself(tmp_path):
    deep = leaf = {}
    for _ in range(101):
        leaf["x"] = {}
        leaf = leaf["x"]
    with pytest.raises(ValueError, match="nested more than 100 containers deep"):
        mg.save(deep, tmp_path / "deep.npz")
    looped = {"a": 1}
    looped["self"] = looped
    with pytest.raises(ValueError, match="'self.self.*nested more than 100.*or holds itself"):
        mg.save(looped, tmp_path / "looped.npz")
    fine = nested = []
    for _ in range(99):
        nested.append([])
        nested = nested[0]
    mg.save({"x": fine}, tmp_path / "fine.npz")
    assert mg.load(tmp_path / "fine.npz")["x"] == fine


def hostile_file(path, manifest, arrays=()):
    """An archive of `arrays` (name, array) and a manifest (a document, or raw bytes)."""
    text = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in [*arrays, ("__minigrad__", np.frombuffer(text, np.uint8))]:
            with archive.open(name + ".npy", "w") as member:
                np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)
    return path


def document(root, **changes):
    return {"format": "minigrad.checkpoint", "version": 1, "root": root, **changes}


def nested_lists(depth):
    """A manifest whose root is `depth` list nodes, one inside the other."""
    nodes = b'{"list":[' * depth + b"]}" * depth
    return b'{"format":"minigrad.checkpoint","version":1,"root":' + nodes + b"}"


W = [("w", np.ones(2))]


@pytest.mark.parametrize(
    "manifest, arrays, message",
    [
        (b"{not json", (), "is not valid JSON"),
        (b"\xff\xfe", (), "is not valid JSON"),
        (b'{"format":"minigrad.checkpoint","version":1,"root":{"int":NaN}}', (), "not valid JSON"),
        (b'{"format":"x","format":"y","version":1,"root":1}', (), "repeats a key"),
        (b"[1, 2]", (), "expected an object with the keys format"),
        (
            {"format": "other", "version": 1, "root": {"none": None}},
            (),
            "not a minigrad checkpoint",
        ),
        (document({"none": None}, extra=1), (), r"got \['extra', 'format', 'root', 'version'\]"),
        (document({"none": None}, version=2), (), "format version 2, written by a newer minigrad"),
        (document({"none": None}, version="1"), (), "has version '1'; expected an integer >= 1"),
        (document({"none": None}, version=True), (), "has version True"),
        (document([1]), (), "the saved value is not a one-key object"),
        (document({"int": 1, "str": "x"}), (), "is not a one-key object"),
        (document({"code": "import os"}), (), "has the unknown type 'code'"),
        (document({"int": "3"}), (), "is a int node holding str"),
        (document({"int": True}), (), "is a int node holding bool"),
        (document({"bool": 1}), (), "is a bool node holding int"),
        (document({"str": 5}), (), "is a str node holding int"),
        (document({"none": 0}), (), "is a none node holding int"),
        (document({"float": 1.5}), (), "is a float node holding float '1.5', not a float's repr"),
        (document({"float": "1.50"}), (), "holding str '1.50', not a float's repr"),
        (document({"float": "1_0.0"}), (), "not a float's repr"),
        (document({"complex": ["1.0"]}), (), "complex node without two float reprs"),
        (document({"list": {"a": 1}}), (), "is a list node holding dict, not a JSON list"),
        (document({"dict": {"a": {"int": 1}}}), (), "is a dict node holding dict"),
        (document({"dict": [["a"]]}), (), "items are not \\[key, value\\] pairs"),
        (document({"dict": [[1.5, {"int": 1}]]}), (), "has the key '1.5'; keys are non-empty"),
        (document({"dict": [["", {"int": 1}]]}), (), "has the key ''"),
        (document({"dict": [[True, {"int": 1}]]}), (), "has the key 'True'"),
        (document({"dict": [["a", {"int": 1}], ["a", {"int": 2}]]}), (), "holds the key 'a' twice"),
        (
            document({"dict": [["x", {"array": "w"}]]}),
            (),
            "names the member 'w', which the archive lacks",
        ),
        (document({"dict": [["x", {"array": "v"}]]}), W, "entry 'x' names the member 'v', which"),
        (document({"dict": [["x", {"array": 3}]]}), W, "entry 'x' is an array node naming int"),
        (
            document({"list": [{"array": "w"}, {"array": "w"}]}),
            W,
            r"entry '\[1\]' names the member 'w', which another entry names",
        ),
        (
            document({"dict": [["x", {"scalar": "w"}]]}),
            W,
            r"scalar node whose member has shape \(2,\)",
        ),
        (document({"list": []}), W, r"entries its manifest does not list: \['w'\]"),
        (nested_lists(200), (), r"entry '\[0\]\[0\].*is nested more than 100 containers deep"),
        (nested_lists(200_000), (), "is nested too deeply to read"),
        (
            b'{"format":"minigrad.checkpoint","version":1,"root":{"int":1' + b"0" * 5000 + b"}}",
            (),
            "is not valid JSON",
        ),
    ],
)
def test_hostile_manifests_are_refused_naming_the_file(tmp_path, manifest, arrays, message):
    path = hostile_file(tmp_path / "hostile.npz", manifest, arrays)
    with pytest.raises(ValueError, match=message) as error:
        mg.load(path)
    assert str(path) in str(error.value)


def test_a_dict_nested_101_deep_in_the_manifest_is_refused(tmp_path):
    root = {"none": None}
    for _ in range(101):
        root = {"dict": [["x", root]]}
    path = hostile_file(tmp_path / "deep.npz", document(root))
    with pytest.raises(ValueError, match="deep.npz.*nested more than 100 containers deep"):
        mg.load(path)


def test_huge_claimed_sizes_are_refused_before_reading(tmp_path, monkeypatch):
    path = hostile_file(tmp_path / "claims.npz", document({"str": "x" * 200}))
    monkeypatch.setattr(mg.io, "_MAX_MANIFEST_BYTES", 100)
    with pytest.raises(
        ValueError, match=r"claims.npz.*claims 2\d\d bytes; at most 100 are accepted"
    ):
        mg.load(path)
    with pytest.raises(ValueError, match="manifest, more than the 100 that mg.load accepts"):
        mg.save({"text": "x" * 200}, tmp_path / "large.npz")
    monkeypatch.undo()
    lying = tmp_path / "lying.npz"  # a manifest header that claims a terabyte
    with zipfile.ZipFile(lying, "w") as archive:
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(
            header, {"descr": "|u1", "fortran_order": False, "shape": (10**12,)}
        )
        archive.writestr("__minigrad__.npy", header.getvalue() + b"{}")
    with pytest.raises(ValueError, match=r"lying.npz.*declares shape \(1000000000000,\)"):
        mg.load(lying)
    wrong_kind = hostile_file(tmp_path / "kind.npz", b"")
    with zipfile.ZipFile(wrong_kind, "w") as archive, archive.open("__minigrad__.npy", "w") as m:
        np.lib.format.write_array(m, np.zeros(3))
    with pytest.raises(ValueError, match="kind.npz.*float64 array of shape.*expected uint8 JSON"):
        mg.load(wrong_kind)


# -- safetensors, both ways --------------------------------------------------------------------


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
