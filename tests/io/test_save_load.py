"""mg.save and mg.load (minigrad/io/save_load.py) as PyTorch scripts use torch.save and
torch.load: round trips bit for bit (models, nested checkpoints, empty dicts, a hypothesis
sweep), nanoGPT's checkpoint resumed exactly, torch.load's arguments (map_location,
weights_only, mmap) as torch takes them, open files and buffers, and the paths and arguments
refused by name (missing files, folders, FIFOs, NUL in a path, what minigrad cannot honour)."""

import io
import math
import os
import zipfile
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
import minigrad.optim  # noqa: F401  (mg.optim)
import parity
from io_checks import assert_same_value, torch_round_trip
from minigrad import nn
from minigrad.nn import functional as F

# compares with PyTorch: skipped without it (pip install torch==2.13.0; CI installs it)
torch = pytest.importorskip("torch")


# -- round trips -------------------------------------------------------------------------------


def _model():
    return nn.Sequential(
        nn.Embedding(20, 4, padding_idx=0), nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)
    )


def test_round_trip_reproduces_outputs_bit_for_bit(tmp_path):
    mg.manual_seed(0)
    source = _model()
    mg.manual_seed(1)
    target = _model()
    ids = np.random.default_rng(0).integers(0, 20, size=(5, 7))
    assert not np.array_equal(source(ids).numpy(), target(ids).numpy())
    path = tmp_path / "model.npz"
    mg.io.save(source.state_dict(), path)
    loaded = mg.io.load(path)
    assert list(loaded) == ["0.weight", "1.weight", "1.bias", "3.weight", "3.bias"]
    for name, value in source.state_dict().items():
        assert loaded[name].dtype == np.float32
        np.testing.assert_array_equal(loaded[name], value.numpy())
    target.load_state_dict(loaded)
    assert np.array_equal(source(ids).numpy(), target(ids).numpy())
    assert sorted(os.listdir(tmp_path)) == ["model.npz"]  # no temporary file left behind


def test_values_may_be_tensors_arrays_numbers_and_nested_dicts(tmp_path):
    path = str(tmp_path / "mixed.npz")
    optimizer = mg.optim.SGD([nn.Parameter(np.ones(2))], lr=0.1)
    mg.io.save(
        {
            "weights": {"w": mg.tensor(np.eye(2))},
            "optim": optimizer.state_dict(),
            "epoch": 3,
            "mask": np.array([True, False]),
            "ids": np.arange(3, dtype=np.int32),
        },
        path,
    )
    loaded = mg.io.load(path)
    assert list(loaded) == ["weights", "optim", "epoch", "mask", "ids"]  # as torch.load nests
    assert loaded["optim"] == optimizer.state_dict()
    np.testing.assert_array_equal(loaded["weights.w"], np.eye(2))
    assert loaded["weights.w"].dtype == np.float64 and loaded["ids"].dtype == np.int32
    assert loaded["epoch"] == 3 and type(loaded["epoch"]) is int  # as saved (format version 1)
    lr = loaded["optim"]["param_groups"][0]["lr"]
    assert lr == 0.1 and type(lr) is float
    np.testing.assert_array_equal(loaded["mask"], [True, False])


def test_a_torch_style_checkpoint_round_trips_and_reads_back_nested(tmp_path):
    """The dict a PyTorch training script saves (nanoGPT's layout), strings and tuples included;
    ckpt["model"] gives the model's entries back as a dict, as torch.load would."""
    mg.manual_seed(0)
    model, path = _model(), tmp_path / "ckpt.npz"
    optimizer = mg.optim.AdamW(model.parameters(), lr=1e-3)
    mg.io.save(
        {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "iter_num": 250,
            "best_val_loss": 1.4712,
            "config": {
                "dataset": "imdb_char",
                "betas": (0.9, 0.95),
                "names": ["train", "val"],
                "compile": False,
            },
        },
        path,
    )
    checkpoint = mg.io.load(path)
    restored = _model()
    restored.load_state_dict(checkpoint["model"])
    ids = np.random.default_rng(0).integers(0, 20, size=(2, 5))
    np.testing.assert_array_equal(restored(ids).numpy(), model(ids).numpy())
    mg.optim.AdamW(restored.parameters()).load_state_dict(checkpoint["optimizer"])
    assert int(checkpoint["iter_num"]) == 250 and float(checkpoint["best_val_loss"]) == 1.4712
    config = checkpoint["config"]
    assert config["dataset"] == "imdb_char" and config["names"] == ["train", "val"]
    assert config["betas"] == (0.9, 0.95) and config["compile"] is False
    assert "model" in checkpoint and "optimizer" in checkpoint and "model.1.weight" in checkpoint
    assert (
        "mode" not in checkpoint
        and checkpoint.get("scheduler") is None
        and checkpoint.get("iter_num") == 250
    )
    with pytest.raises(KeyError):
        checkpoint["scheduler"]
    assert list(checkpoint) == ["model", "optimizer", "iter_num", "best_val_loss", "config"]
    assert list(checkpoint["model"])[0] == "0.weight"  # nested as saved, as torch.load gives it


def test_empty_nested_dicts_round_trip_in_their_place(tmp_path):
    """A module without parameters has an empty state_dict; saved inside a checkpoint it comes back
    as an empty dict, in its place among the entries, and a second save keeps it."""
    path, again = tmp_path / "ckpt.npz", tmp_path / "again.npz"
    mg.io.save(
        {
            "model": nn.Linear(2, 1).state_dict(),
            "act": nn.ReLU().state_dict(),
            "config": {"empty": {}, "depth": 2, "deeper": {"none": {}}},
            "last": {},
        },
        path,
    )
    loaded = mg.io.load(path)
    assert list(loaded) == ["model", "act", "config", "last"]
    assert list(loaded["config"]) == ["empty", "depth", "deeper"]
    for empty in (
        loaded["act"],
        loaded["last"],
        loaded["config"]["empty"],
        loaded["config"]["deeper"]["none"],
    ):
        assert isinstance(empty, mg.io.Checkpoint) and len(empty) == 0
    assert "act" in loaded and loaded.get("act") == {} and int(loaded["config"]["depth"]) == 2
    nn.ReLU().load_state_dict(loaded["act"])
    mg.io.save(loaded, again)
    assert list(mg.io.load(again)) == list(loaded)
    with zipfile.ZipFile(path) as archive:  # an empty folder entry per empty dict, nothing else new
        assert [
            (info.filename, info.file_size) for info in archive.infolist() if info.is_dir()
        ] == [("act/", 0), ("config.empty/", 0), ("config.deeper.none/", 0), ("last/", 0)]
    mg.io.save({}, path)
    assert mg.io.load(path) == {}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    arrays=st.dictionaries(
        st.text("abcxyz_.0123", min_size=1, max_size=8).filter(
            lambda key: not key.startswith(".") and ".." not in key and not key.endswith(".")
        ),
        hnp.arrays(
            st.sampled_from(
                [np.float32, np.float64, np.int8, np.int64, np.uint16, np.bool_, np.complex64]
            ),
            hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
        ),
        max_size=4,
    )
)
def test_save_load_round_trip_property(tmp_path, arrays):
    path = tmp_path / "property.npz"
    mg.io.save(arrays, path)
    loaded = mg.io.load(path)
    assert list(loaded) == list(arrays)
    for name, array in arrays.items():
        assert loaded[name].dtype == array.dtype and loaded[name].shape == array.shape
        np.testing.assert_array_equal(loaded[name], array)


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
    assert config["name"] == "run-ü" and config["layers"] == [3, 2]
    assert config["tags"] == ["a", "bb"] and config["lr"] == 1e-3
    assert config["step"] == 7 and config["flag"] is True
    assert config["neg"] == -3 and config["big"] == 2**62 and config["pair"] == (1.5, 2.5)
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


# -- nanoGPT's checkpoint: resume gives the uninterrupted run ----------------------------------


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


# -- paths -------------------------------------------------------------------------------------


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.npz"):
        mg.io.load(tmp_path / "nowhere.npz")


def test_loading_a_folder_says_it_is_a_folder(tmp_path):
    with pytest.raises(
        IsADirectoryError, match=r"mg.load: '.*' is a folder; expected an .npz file"
    ):
        mg.load(tmp_path)


def test_loading_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.npz")
    with pytest.raises(ValueError, match="pipe.npz' is not a regular file"):
        mg.load(tmp_path / "pipe.npz")


def test_a_path_holding_nul_is_refused(tmp_path):
    path = str(tmp_path / "ck\0pt.npz")
    with pytest.raises(ValueError, match="the path holds a NUL character"):
        mg.save({"a": 1}, path)
    with pytest.raises(ValueError, match="holds a NUL character"):
        mg.load(path)
    assert os.listdir(tmp_path) == []


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
