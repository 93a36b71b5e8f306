"""mg.io.save / mg.io.load: round trips (nested checkpoints too), atomic writes, and files that
must be refused (hostile archives, links, special files, bad paths), each naming the file."""

import io
import os
import stat
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
import minigrad.optim  # noqa: F401  (mg.optim)
from minigrad import nn
from thread_helpers import run_in_threads


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


def test_save_rejects_values_that_would_need_pickle(tmp_path):
    path = tmp_path / "bad.npz"
    with pytest.raises(TypeError, match="'names'.*object"):
        mg.io.save({"names": np.array(["a", None], dtype=object)}, path)
    with pytest.raises(
        TypeError, match=r"'config.hook' must be a Tensor, a numpy array, a number, .*got function"
    ):
        mg.io.save({"config": {"hook": lambda: None}}, path)
    with pytest.raises(TypeError, match=r"'layers\[1\]' must be .*got object"):
        mg.io.save({"layers": [1, object()]}, path)
    with pytest.raises(TypeError, match="keys must be non-empty strings"):
        mg.io.save({("a", 1): np.zeros(1)}, path)
    with pytest.raises(ValueError, match="'a.b' appears twice"):
        mg.io.save({"a.b": 1, "a": {"b": 2}}, path)
    assert not path.exists()


def test_failed_write_leaves_the_existing_file_untouched(tmp_path, monkeypatch):
    path = tmp_path / "model.npz"
    mg.io.save({"w": np.arange(4.0)}, path)
    before = path.read_bytes()
    real_write = np.lib.format.write_array
    calls = []

    def failing_write(file, array, **kwargs):  # the disk "fills up" after the first array
        calls.append(1)
        if len(calls) > 1:
            raise OSError("No space left on device")
        real_write(file, array, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", failing_write)
    with pytest.raises(OSError, match="No space left"):
        mg.io.save({"w": np.zeros(4), "b": np.zeros(2)}, path)
    assert len(calls) == 2
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["model.npz"]
    monkeypatch.undo()
    np.testing.assert_array_equal(mg.io.load(path)["w"], np.arange(4.0))


def test_pickled_npz_is_refused_without_unpickling(tmp_path):
    marker = tmp_path / "was_unpickled"
    path = tmp_path / "pickled.npz"
    np.savez(path, weight=np.zeros(2), payload=np.array([_Tripwire(str(marker))], dtype=object))
    with pytest.raises(ValueError, match=r"'payload'.*pickled.*refusing"):
        mg.io.load(path)
    assert not marker.exists()


class _Tripwire:
    """Unpickling this object creates a file: the test proves load never unpickles it."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_raw_pickle_file_is_refused(tmp_path):
    import pickle

    marker = tmp_path / "was_unpickled"
    path = tmp_path / "model.npz"
    path.write_bytes(pickle.dumps(_Tripwire(str(marker))))
    with pytest.raises(ValueError, match="not an .npz archive"):
        mg.io.load(path)
    assert not marker.exists()


def test_corrupt_and_tampered_files_are_refused(tmp_path):
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"this is not a checkpoint")
    with pytest.raises(ValueError, match=r"garbage.npz.*not an .npz archive"):
        mg.io.load(garbage)

    good = tmp_path / "good.npz"
    mg.io.save({"w": np.arange(1000.0)}, good)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:3000])
    with pytest.raises(ValueError, match="truncated.npz"):
        mg.io.load(truncated)

    flipped = bytearray(good.read_bytes())
    flipped[1000] ^= 0xFF  # inside the array data: the zip checksum no longer matches
    tampered = tmp_path / "tampered.npz"
    tampered.write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match=r"'w' of .*tampered.npz.*corrupt"):
        mg.io.load(tampered)

    other = tmp_path / "other.npz"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("notes.txt", b"hello")
    with pytest.raises(ValueError, match="'notes.txt'.*not a .npy array"):
        mg.io.load(other)

    stuffed = tmp_path / "stuffed.npz"  # an empty dict's folder entry must hold nothing
    with zipfile.ZipFile(stuffed, "w") as archive:
        archive.writestr("act/", b"\x93NUMPY hidden")
    with pytest.raises(
        ValueError, match="'act/' of .*stuffed.npz.*folder entry of an empty dict holds 13 bytes"
    ):
        mg.io.load(stuffed)

    both = tmp_path / "both.npz"  # one name as an array and as an empty dict
    mg.io.save({"act": np.zeros(2)}, both)
    with zipfile.ZipFile(both, "a") as archive:
        archive.writestr("act/", b"")
    with pytest.raises(ValueError, match="both.npz' holds an entry twice"):
        mg.io.load(both)

    single = tmp_path / "single.npy"
    np.save(single, np.zeros(3))
    with pytest.raises(ValueError, match="not an .npz archive"):
        mg.io.load(single)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.npz"):
        mg.io.load(tmp_path / "nowhere.npz")


@pytest.mark.parametrize("writer", [np.savez, np.savez_compressed])
def test_load_reads_numpy_savez_files(tmp_path, writer):
    path = tmp_path / "plain.npz"
    fortran = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    writer(
        path,
        a=np.arange(3),
        b=np.ones((2, 2), np.float32),
        big_endian=np.arange(4, dtype=">i4"),
        fortran=fortran,
        empty=np.zeros((0, 5)),
        flag=np.array(True),
    )
    loaded = mg.io.load(path)
    assert list(loaded) == ["a", "b", "big_endian", "fortran", "empty", "flag"]
    np.testing.assert_array_equal(loaded["b"], np.ones((2, 2)))
    assert loaded["big_endian"].dtype == np.dtype(">i4") and loaded["big_endian"].tolist() == [
        0,
        1,
        2,
        3,
    ]
    np.testing.assert_array_equal(loaded["fortran"], fortran)
    assert loaded["empty"].shape == (0, 5) and loaded["flag"].shape == () and bool(loaded["flag"])


def test_atomic_file_keeps_the_old_file_when_the_block_fails(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"kept")
    with pytest.raises(RuntimeError, match="halfway"):
        with mg.io.atomic_file(path) as file:
            file.write(b"half a new file")
            raise RuntimeError("halfway")
    assert path.read_bytes() == b"kept"
    assert os.listdir(tmp_path) == ["notes.txt"]
    with mg.io.atomic_file(str(path)) as file:
        file.write(b"new")
    assert path.read_bytes() == b"new" and os.listdir(tmp_path) == ["notes.txt"]


def test_saves_of_one_path_from_several_threads_never_take_each_others_temporaries(tmp_path):
    """Each save cleans up abandoned temporaries of its path first; live ones (locked by a save
    in progress) must survive, or that save's rename would fail."""
    path = tmp_path / "model.npz"

    def saver(value):
        for _ in range(15):
            mg.io.save({"w": np.full(20_000, float(value))}, path)

    run_in_threads(
        *(lambda value=value: saver(value) for value in range(4))
    )  # raises what a saver raised
    assert os.listdir(tmp_path) == ["model.npz"]
    w = mg.io.load(path)["w"]
    assert w.shape == (20_000,) and np.all(w == w[0]) and w[0] in range(4)


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
