"""The JSON manifest of a checkpoint (minigrad/io/manifest.py): Python values come back as the
types saved, as torch.load gives them (torch.save / torch.load are the reference: minigrad never
reads their files, the values are compared), with no pickle; what the format cannot hold is
refused before writing, keys holding NUL or a lone surrogate too; hostile manifests (wrong
schema, nesting past 100, huge claimed sizes) are refused naming the file."""

import io
import json
import math
import os
import string
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
import parity
from io_checks import assert_same_value, torch_round_trip
from minigrad import nn

# compares with PyTorch: skipped without it (pip install torch==2.13.0; CI installs it)
torch = pytest.importorskip("torch")


# -- Python values come back as the types saved, as torch.load gives them ----------------------


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


# -- what mg.save refuses ----------------------------------------------------------------------


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


@pytest.mark.parametrize(
    "value, problem",
    [
        ({"a\0b": 1.0}, "a NUL character"),
        ({"model": {"w\0": np.ones(2)}}, "a NUL character"),
        ({"\ud800": np.ones(2)}, "a lone surrogate"),
    ],
)
def test_a_key_holding_nul_is_refused_before_writing(tmp_path, value, problem):
    path = tmp_path / "ckpt.npz"
    mg.save({"kept": 1}, path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match=f"holds {problem}") as caught:
        mg.save(value, path)
    assert str(path) in str(caught.value)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["ckpt.npz"]


# -- hostile manifests -------------------------------------------------------------------------


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
