"""The JSON manifest of a checkpoint: the saved tree of dicts, lists, tuples and Python values
as data (never code), its arrays named by member; _encode writes it, _manifest and _decode read
it back checking every part (the schema below), and Checkpoint is the dict mg.load returns."""

import json
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

# The limits a caller may lower (mg.io._MAX_MANIFEST_BYTES, mg.io._available_memory) are read
# from the package when a function runs, so setting them on mg.io reaches every file.
from .. import io as package
from ..engine import Tensor
from .npz import _entry_data

MANIFEST = "__minigrad__"  # the entry (a uint8 .npy of JSON text) that describes the saved tree
_FORMAT, _VERSION = "minigrad.checkpoint", 1
_MAX_DEPTH = 100  # containers inside containers; deeper (or a dict that holds itself) is refused
_MAX_MANIFEST_BYTES = 64 << 20  # the manifest is parsed whole, so its size is bounded both ways
_MAX_INT_BITS = 13_000  # about 4,000 digits: Python's limit on int <-> str conversion is 4,300


def _dict_key(key, name, where):
    """A dict key as saved: a non-empty string (no NUL, no lone surrogate: a member's name is
    UTF-8 and ends at a NUL) or an integer (numpy integers become ints)."""
    if isinstance(key, np.integer):
        key = int(key)
    if isinstance(key, bool) or not isinstance(key, (str, int)) or key == "":
        inside = f" (in {name!r})" if name else ""
        raise TypeError(
            f"{where}: keys must be non-empty strings (or integers); got {key!r}{inside}"
        )
    if isinstance(key, str):
        inside = f" (in {name!r})" if name else ""
        if "\0" in key:  # a zip member's name ends at its first NUL
            raise ValueError(
                f"{where}: the key {key!r}{inside} holds a NUL character, which an archive's "
                f"entry names cannot hold; nothing was written"
            )
        try:
            key.encode("utf-8")  # a member's name is stored as UTF-8
        except UnicodeEncodeError:
            raise ValueError(
                f"{where}: the key {key!r}{inside} holds a lone surrogate, which UTF-8 "
                "(an archive's entry names) cannot hold; nothing was written"
            ) from None
    return key


def _label(name):
    """How an error names a saved entry: its dotted name quoted, or 'the saved value'."""
    return repr(name) if name else "the saved value"


def _savable_array(value, name, where):
    array = value.numpy() if isinstance(value, Tensor) else np.asarray(value)
    if array.dtype.kind not in "biufcU":
        raise TypeError(
            f"{where}: {_label(name)} has dtype {array.dtype}; only numeric, bool and text arrays "
            f"can be saved (no pickled objects)"
        )
    return array


def _member_name(name, arrays):
    """`name`, or 'name~1', 'name~2' ... if taken ('a[0]' can be a list item and a dict key)."""
    member, count = name, 1
    while member in arrays or member == MANIFEST:
        member, count = f"{name}~{count}", count + 1
    return member


def _encode(value, name, flat, arrays, where, depth):
    """The manifest node of `value`, saved under the dotted `name` ('model.fc.weight',
    'config.sizes[1]'). Arrays go to `arrays` (member name -> array); `flat` collects the dotted
    names of dict entries, which must be unique so that ckpt["model.fc.weight"] names one entry.

    Nodes are one-key JSON objects: {"dict": [[key, node], ...]}, {"list": [...]},
    {"tuple": [...]}, {"none": null}, {"bool": b}, {"int": n}, {"float": repr}, {"complex":
    [repr, repr]}, {"str": s}, {"array": member} (a Tensor or numpy array) and {"scalar": member}
    (a numpy scalar such as np.float32(1.5), kept as a 0-d member). An empty nested dict also
    gets an empty folder entry '<name>/' (`arrays[name] = {}`), which carries no data."""
    if depth > _MAX_DEPTH:
        raise ValueError(
            f"{where}: {_label(name)} is nested more than {_MAX_DEPTH} containers deep "
            "(or holds itself)"
        )
    if isinstance(value, Mapping):
        items = []
        for key, item in value.items():
            key = _dict_key(key, name, where)
            inner = f"{name}.{key}" if name else str(key)
            if inner in flat:
                raise ValueError(
                    f"{where}: key {inner!r} appears twice after flattening nested dicts"
                )
            flat.add(inner)
            items.append([key, _encode(item, inner, flat, arrays, where, depth + 1)])
        if not items and name:  # an empty folder entry too, as files before the manifest had
            arrays[_member_name(name, arrays)] = {}
        return {"dict": items}
    if isinstance(value, (list, tuple)):
        kind = "tuple" if isinstance(value, tuple) else "list"
        return {
            kind: [
                _encode(item, f"{name}[{index}]", flat, arrays, where, depth + 1)
                for index, item in enumerate(value)
            ]
        }
    if isinstance(value, (Tensor, np.ndarray, np.generic)):  # np.float64 is also a float: first
        member = _member_name(name or "value", arrays)
        arrays[member] = _savable_array(value, name, where)
        return {"scalar" if isinstance(value, np.generic) else "array": member}
    if value is None:
        return {"none": None}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        if value.bit_length() > _MAX_INT_BITS:
            raise ValueError(
                f"{where}: {_label(name)} is an integer of {value.bit_length():,} bits; "
                f"at most {_MAX_INT_BITS:,} can be saved (save it as a string)"
            )
        return {"int": int(value)}
    if isinstance(value, float):
        return {"float": float.__repr__(value)}
    if isinstance(value, complex):
        return {"complex": [float.__repr__(value.real), float.__repr__(value.imag)]}
    if isinstance(value, str):
        return {"str": str(value)}
    hint = " (save its state_dict(), not the object)" if hasattr(value, "state_dict") else ""
    raise TypeError(
        f"{where}: {_label(name)} must be a Tensor, a numpy array, a number, a string, None, or a "
        f"dict, list or tuple of those; got {type(value).__name__}{hint}"
    )


def _manifest(archive, info, header, path):
    """The parsed manifest of a checkpoint: {"format", "version", "root"}, checked as a document
    (its size before reading, JSON, no repeated keys, a version this minigrad reads)."""
    where = f"mg.load: the manifest {MANIFEST!r} of {path!r}"
    max_bytes = package._MAX_MANIFEST_BYTES
    (_, shape, _, dtype), _ = header
    if dtype != np.uint8 or len(shape) != 1:
        raise ValueError(f"{where} is a {dtype} array of shape {shape}; expected uint8 JSON text")
    if shape[0] > max_bytes:
        raise ValueError(f"{where} claims {shape[0]:,} bytes; at most {max_bytes:,} are accepted")
    text = _entry_data(archive, info, header[0], path).tobytes()

    def unique(pairs):
        keys = [key for key, _ in pairs]
        if len(set(keys)) != len(keys):
            raise ValueError(f"an object repeats a key among {sorted(keys)[:8]}")
        return dict(pairs)

    def constant(word):
        raise ValueError(f"{word} is not JSON")

    try:
        document = json.loads(
            text.decode("utf-8"), object_pairs_hook=unique, parse_constant=constant
        )
    except RecursionError:
        raise ValueError(f"{where} is nested too deeply to read") from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, a repeated key
        raise ValueError(f"{where} is not valid JSON ({error})") from None
    if (
        not isinstance(document, dict)
        or set(document) != {"format", "version", "root"}
        or document["format"] != _FORMAT
    ):
        got = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise ValueError(
            f"{where} is not a minigrad checkpoint manifest: expected an object with the keys "
            f"format ({_FORMAT!r}), version and root; got {got}"
        )
    version = document["version"]
    if type(version) is not int or version < 1:
        raise ValueError(f"{where} has version {version!r}; expected an integer >= 1")
    if version > _VERSION:
        raise ValueError(
            f"{where} is of format version {version}, written by a newer minigrad; "
            f"this one reads version {_VERSION}"
        )
    return document


_SCALAR_NODES = {
    "none": lambda payload: payload is None,
    "bool": lambda payload: type(payload) is bool,
    "int": lambda payload: type(payload) is int,
    "str": lambda payload: type(payload) is str,
}


def _float(text):
    """The float saved as its repr; None unless `text` is exactly what repr gives."""
    if type(text) is not str:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if float.__repr__(value) == text else None


def _decode(node, name, resolve, corrupt, depth=0):
    """The value of one manifest node (see _encode), every part checked; `resolve(member,
    scalar)` gives an array member's value, `corrupt(name, text)` raises the error."""
    if depth > _MAX_DEPTH:
        corrupt(name, f"is nested more than {_MAX_DEPTH} containers deep")
    if type(node) is not dict or len(node) != 1:
        corrupt(name, f"is not a one-key object naming its type (got {str(node)[:60]})")
    ((kind, payload),) = node.items()
    if kind in _SCALAR_NODES:
        if not _SCALAR_NODES[kind](payload):
            corrupt(name, f"is a {kind} node holding {type(payload).__name__} {str(payload)[:40]}")
        return payload
    if kind == "float":
        value = _float(payload)
        if value is None:
            corrupt(
                name,
                f"is a float node holding {type(payload).__name__} {str(payload)[:40]!r}, not a "
                f"float's repr",
            )
        return value
    if kind == "complex":
        parts = [_float(part) for part in payload] if type(payload) is list else []
        if len(parts) != 2 or None in parts:
            corrupt(name, "is a complex node without two float reprs")
        return complex(*parts)
    if kind in ("array", "scalar"):
        if type(payload) is not str:
            corrupt(name, f"is an {kind} node naming {type(payload).__name__}, not a member")
        return resolve(payload, kind == "scalar", name)
    if kind in ("list", "tuple"):
        if type(payload) is not list:
            corrupt(name, f"is a {kind} node holding {type(payload).__name__}, not a JSON list")
        items = [
            _decode(item, f"{name}[{index}]", resolve, corrupt, depth + 1)
            for index, item in enumerate(payload)
        ]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        if type(payload) is not list:
            corrupt(name, f"is a dict node holding {type(payload).__name__}, not a JSON list")
        result = Checkpoint()
        for pair in payload:
            if type(pair) is not list or len(pair) != 2:
                corrupt(name, "is a dict node whose items are not [key, value] pairs")
            key, item = pair
            if not ((type(key) is str and key) or type(key) is int):
                corrupt(name, f"has the key {str(key)[:40]!r}; keys are non-empty strings or ints")
            if dict.__contains__(result, key):  # `in` also reaches into dotted names
                corrupt(name, f"holds the key {key!r} twice")
            inner = f"{name}.{key}" if name else str(key)
            result[key] = _decode(item, inner, resolve, corrupt, depth + 1)
        return result
    corrupt(name, f"has the unknown type {kind[:40]!r}")
    return None


def _check_listing(document, headers, path):
    """Check the manifest's tree against the archive before any array is read: every array node
    names a member that exists, no member twice, a scalar's member is 0-d, and every member is
    named (folder entries aside) -> the function that raises a manifest error."""
    listed = set()

    def corrupt(name, text):
        place = f"entry {name!r}" if name else "the saved value"
        raise ValueError(f"mg.load: the manifest of {path!r} is corrupt: {place} {text}")

    def check(member, scalar, name):
        header = headers.get(member)
        if header is None:
            corrupt(name, f"names the member {member[:60]!r}, which the archive lacks")
        if member in listed:
            corrupt(name, f"names the member {member[:60]!r}, which another entry names")
        if scalar and header[0][1] != ():
            corrupt(name, f"is a scalar node whose member has shape {header[0][1]}")
        listed.add(member)

    _decode(document["root"], "", check, corrupt)
    unlisted = sorted({name for name, header in headers.items() if header} - listed)
    if unlisted:
        raise ValueError(
            f"mg.load: {path!r} holds entries its manifest does not list: {unlisted[:8]}"
        )
    return corrupt


class Checkpoint(OrderedDict):
    """What mg.load returns for a saved dict: the dict as saved, each nested dict a Checkpoint too
    (as torch.load: ckpt["model"] is the model's state dict, list(ckpt) the top-level keys). A
    name that joins nested keys with dots reads the entry too: ckpt["model.fc.weight"] is
    ckpt["model"]["fc.weight"] (mg.save refuses dicts whose joined names collide, so such a name
    has one meaning); `in` and get() take such names as well. A file written before the manifest
    reads back flat ("model.fc.weight" -> array); there ckpt["model"] gathers the "model.*"
    entries, the prefix taken off, into a new Checkpoint."""

    def __missing__(self, key):
        if not isinstance(key, str):
            raise KeyError(key)
        for name, value in self.items():
            prefix = f"{name}."
            if isinstance(value, Checkpoint) and key.startswith(prefix):
                found = value.get(key[len(prefix) :], _ABSENT)
                if found is not _ABSENT:
                    return found
        prefix = f"{key}."
        part = Checkpoint(
            (name[len(prefix) :], value)
            for name, value in self.items()
            if isinstance(name, str) and name.startswith(prefix)
        )
        if not part:
            raise KeyError(key)
        return part

    def get(self, key, default=None):
        try:
            return self[key]
        except (KeyError, TypeError):
            return default

    def __contains__(self, key):
        return self.get(key, _ABSENT) is not _ABSENT


_ABSENT = object()
