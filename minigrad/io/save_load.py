"""mg.save and mg.load (torch.save / torch.load for checkpoints): the saved tree encoded as a
manifest and written as an .npz archive through atomic_file; torch.load's arguments (the path,
map_location, weights_only, mmap) checked, and the archive read back against its manifest."""

import io
import json
import os
import zipfile
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

# The limits a caller may lower (mg.io._MAX_MANIFEST_BYTES, mg.io._available_memory) are read
# from the package when a function runs, so setting them on mg.io reaches every file.
from .. import io as package
from ..errors import ArgumentError
from ..engine import Tensor
from .atomic import atomic_file
from .manifest import _FORMAT, _VERSION, MANIFEST, Checkpoint
from .manifest import _check_listing, _decode, _encode, _manifest
from .npz import _READ_ERRORS, _ZIP_MAGIC, _check_member
from .npz import _entry_data, _entry_header, _entry_name, _mapped


def _write_npz(file, arrays, manifest):
    """numpy's .npz layout: one '<name>.npy' member per array, written with allow_pickle=False
    (and a folder entry '<name>/' per empty nested dict), the manifest last (as an array too, so
    np.load reads the file like any other .npz)."""
    with zipfile.ZipFile(
        file, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True
    ) as archive:
        for name, array in [*arrays.items(), (MANIFEST, np.frombuffer(manifest, np.uint8))]:
            if isinstance(array, Mapping):
                archive.writestr(zipfile.ZipInfo(name + "/"), b"")
                continue
            with archive.open(name + ".npy", mode="w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


def save(obj, path):
    """Write `obj` to `path` as an .npz archive, atomically (atomic_file: a failed write leaves any
    existing file at `path` untouched). torch.save(obj, path) for the values a checkpoint holds.

    `obj` is a Tensor, a numpy array (numeric, bool or text), a Python int, float, complex, bool,
    str or None, or a dict (string or integer keys), list or tuple of these, nested up to 100
    deep; mg.load gives each back as the type saved (Tensors as numpy arrays). Anything else
    (objects that would need pickle) raises TypeError naming the entry. Dict keys must stay unique
    when nested keys are joined with dots: {"a.b": 1, "a": {"b": 2}} is refused (ValueError), as
    are a key or a path holding a NUL character; all of these before anything is written.
    """
    stream = _is_file_object(path)
    if stream and not hasattr(path, "write"):
        raise TypeError(f"mg.save: the file object {_label_of(path)} cannot be written to")
    if isinstance(path, io.TextIOBase):
        raise TypeError(f"mg.save: the file {_label_of(path)} is open as text; open it with 'wb'")
    where = f"mg.save to {_label_of(path) if stream else repr(os.fspath(path))}"
    if not stream and ("\0" if isinstance(os.fspath(path), str) else b"\0") in os.fspath(path):
        raise ValueError(f"{where}: the path holds a NUL character; no file can be named so")
    arrays = OrderedDict()
    root = _encode(obj, "", set(), arrays, where, 0)
    manifest = json.dumps(
        {"format": _FORMAT, "version": _VERSION, "root": root},
        allow_nan=False,
        separators=(",", ":"),
    ).encode("ascii")
    max_bytes = package._MAX_MANIFEST_BYTES
    if len(manifest) > max_bytes:
        raise ValueError(
            f"{where}: the structure of the saved value takes {len(manifest):,} bytes of manifest, "
            f"more than the {max_bytes:,} that mg.load accepts; "
            "save long lists of numbers as arrays"
        )
    if stream:  # the caller's own file: the whole archive in one write, after every check
        buffer = io.BytesIO()
        _write_npz(buffer, arrays, manifest)
        path.write(buffer.getbuffer())
        return
    with atomic_file(path) as file:
        _write_npz(file, arrays, manifest)


def _is_file_object(f):
    return (hasattr(f, "write") or hasattr(f, "read")) and not isinstance(
        f, (str, bytes, os.PathLike)
    )


def _name_of(file):
    """How messages name a file object: by its name (open() gives one), else by its type."""
    name = getattr(file, "name", None)
    return name if isinstance(name, str) else f"<{type(file).__name__}>"


def _label_of(file):
    return repr(_name_of(file))


def _checked_path(path, where, expected):
    """`path` as a string, refused unless it is an existing regular file (errors name it)."""
    if hasattr(path, "read") and not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{where}: expected a file path; got a file object ({type(path).__name__})")
    path = os.fspath(path)
    if ("\0" if isinstance(path, str) else b"\0") in path:
        raise ValueError(f"{where}: the path {path!r} holds a NUL character; no file is named so")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{where}: {path!r} is a folder; expected {expected}")
    if not os.path.exists(path):
        if os.path.islink(path):
            raise FileNotFoundError(
                f"{where}: {path!r} is a symbolic link that leads nowhere "
                "(a dangling link or a loop)"
            )
        raise FileNotFoundError(f"{where}: no such file: {path!r}")
    if not os.path.isfile(path):
        raise ValueError(
            f"{where}: {path!r} is not a regular file (a device, fifo or socket); "
            f"expected {expected}"
        )
    return path


_DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "hip", "meta", "xla", "ipu", "hpu", "mtia")


def _device_type(device, where):
    """'cpu', 'cuda', ... of a device given as a string ('cuda:1') or an object with .type (torch's
    or minigrad's device). Anything else is a TypeError, as in torch.load (an int too)."""
    kind = getattr(device, "type", device)
    if not isinstance(kind, str):
        raise TypeError(
            f"{where}: map_location must be None, 'cpu', a device, a dict of locations or a "
            f"callable; got {type(device).__name__} {device!r}"
        )
    base, _, index = kind.partition(":")
    if base not in _DEVICE_TYPES or not (index == "" or index.isdigit()):
        raise ArgumentError(
            f"{where}: map_location {device!r} is not a device; expected 'cpu' (or another of "
            f"{', '.join(_DEVICE_TYPES)}, which minigrad refuses: it runs on the CPU only)"
        )
    return base


def _location_map(map_location, where):
    """None (keep arrays as read) or a callable from torch's map_location, refusing a device
    that is not the CPU: every array minigrad saves is on the CPU, and it runs nowhere else."""
    if map_location is None:
        return None
    if isinstance(map_location, Mapping):
        targets = {key: _device_type(target, where) for key, target in map_location.items()}
        for key in targets:
            _device_type(key, where)
        asked = targets.get("cpu", "cpu")  # torch applies the dict to the location saved: cpu
    elif callable(map_location) and not hasattr(map_location, "type"):
        return map_location  # torch's (storage, location) -> storage, applied to each array
    else:
        asked = _device_type(map_location, where)
    if asked != "cpu":
        raise ArgumentError(
            f"{where}: map_location={map_location!r} asks for a {asked.upper()} device; "
            "minigrad runs on the CPU only: use map_location='cpu' or leave it out"
        )
    return None


def _relocate(relocate, array, name, where):
    if relocate is None:
        return array
    moved = relocate(array, "cpu")
    moved = moved.numpy() if isinstance(moved, Tensor) else moved
    if not isinstance(moved, np.ndarray):
        raise TypeError(
            f"{where}: the map_location callable must return the array it is given "
            f"(or another array); for {name!r} it returned {type(moved).__name__}"
        )
    return moved


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_args):
    """Read a file written by mg.save (or np.savez of numeric arrays): torch.load(f, ...) for
    checkpoints, never unpickling anything.

    Returns the value saved, each part as the type saved: dicts as Checkpoints (OrderedDicts,
    nested as saved, as torch.load gives them: list(ckpt) is the top-level keys, ckpt["model"]
    the nested dict; ckpt["model.fc.weight"] also reaches into it), lists, tuples,
    ints, floats, bools, strings and None as themselves, Tensors and arrays as numpy arrays (which
    load_state_dict takes; mg.tensor(a) makes a Tensor). A file written before format version 1
    (no manifest) or by np.savez gives a flat Checkpoint of arrays, numbers as 0-d arrays.

    torch.load's arguments: `map_location` None, 'cpu', a CPU device, a dict of locations mapping
    to the CPU, or a callable (called as fn(array, 'cpu') per array, returning an array); any other
    device raises ArgumentError (a ValueError and RuntimeError) naming it, as torch does without
    CUDA. `weights_only` True, False or None all mean the same here: the format holds no code, so
    every load is what weights_only=True promises. `mmap=True` maps the arrays copy-on-write from
    the file instead of reading them (np.memmap mode 'c': writes stay in memory; bytes are read,
    and not checksummed, on use; compressed entries are refused). `pickle_module` and extra
    pickle arguments are refused (TypeError): nothing is unpickled.

    Refused, each with a message naming the file and the problem: a missing file
    (FileNotFoundError), a folder (IsADirectoryError), anything that is not an .npz archive, an
    entry that is encrypted or compressed other than stored or deflated, an entry whose zip
    directory claims more than the file holds (data past the entries' end, a stored size unlike
    its compressed size, more than deflate can inflate its bytes to), an entry holding pickled
    objects, a .npy header over 10,000 bytes or with a negative dimension, an entry that is
    damaged or whose header declares another size than it holds, a manifest that is not valid
    (wrong types, nesting deeper than 100, a size over 64 MiB, members missing, unlisted or listed
    twice) (ValueError, the entry named too), and arrays larger in total than the memory left
    (MemoryError, checked before allocating; not with mmap): the least of the system's available
    memory, the process's memory cgroup limit and its RLIMIT_AS / RLIMIT_DATA. Nothing is
    allocated on a claim alone: a deflated entry's buffer grows with the bytes it inflates to.
    """
    where = "mg.load"
    if pickle_module is not None or pickle_args:
        given = ["pickle_module"] * (pickle_module is not None) + sorted(pickle_args)
        raise TypeError(
            f"{where}: minigrad never unpickles, so it takes no pickle arguments; got {given}"
        )
    for flag, value in (("weights_only", weights_only), ("mmap", mmap)):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"{where}: {flag} must be True, False or None; got {value!r}")
    relocate = _location_map(map_location, where)
    if _is_file_object(f):  # torch.load(f) of an open file: read from where it stands
        if not hasattr(f, "read"):
            raise TypeError(f"{where}: the file object {_label_of(f)} cannot be read")
        if mmap:
            raise ValueError(f"{where}: mmap=True maps a file by its path; got a file object")
        data = b"" if isinstance(f, io.TextIOBase) else f.read()
        if isinstance(f, io.TextIOBase) or not isinstance(data, bytes):
            raise TypeError(
                f"{where}: the file object {_label_of(f)} gave {type(data).__name__}; "
                "open it in binary mode ('rb')"
            )
        return _load_from(io.BytesIO(data), _name_of(f), relocate, False, where)
    path = _checked_path(f, where, "an .npz file written by mg.save")
    with open(path, "rb") as file:
        return _load_from(file, path, relocate, bool(mmap), where, path)


def _load_from(file, label, relocate, mmap, where, path=None):
    """The value saved in the open archive `file` (named `label` in messages; `path`: for mmap)."""
    magic = file.read(4)
    file.seek(0)
    if magic not in _ZIP_MAGIC:  # np.load would take anything else for a pickle (or a lone .npy)
        raise ValueError(
            f"mg.load: {label!r} is not an .npz archive (it does not start like a zip file; "
            f"first bytes {magic!r})"
        )
    try:
        with zipfile.ZipFile(file) as archive:
            for info in archive.infolist():
                _check_member(file, info, label, archive.start_dir)
            return _read_archive(archive, path or label, relocate, mmap, where)
    except (*_READ_ERRORS, zipfile.LargeZipFile) as error:
        raise ValueError(f"mg.load: {label!r} is not a valid .npz archive ({error})") from None


def _read_archive(archive, path, relocate, mmap, where):
    members = archive.infolist()
    names = [_entry_name(info, path) for info in members]
    if len(set(names)) != len(names):
        raise ValueError(
            f"mg.load: {path!r} holds an entry twice; a valid .npz names each array once"
        )
    headers = {}  # name -> (header, header bytes); None for an empty dict's folder entry
    for info, name in zip(members, names):
        if info.is_dir():
            if info.file_size:
                raise ValueError(
                    f"mg.load: entry {info.filename!r} of {path!r} is corrupt: the folder "
                    f"entry of an empty dict holds {info.file_size:,} bytes"
                )
            headers[name] = None
            continue
        try:
            headers[name] = _entry_header(archive, info, path)
        except _READ_ERRORS as error:
            raise ValueError(
                f"mg.load: entry {info.filename!r} of {path!r} is corrupt ({error})"
            ) from None
    document, corrupt = None, None
    if headers.get(MANIFEST) is not None:  # a file of format version 1 or later
        info = members[names.index(MANIFEST)]
        try:
            document = _manifest(archive, info, headers.pop(MANIFEST), path)
        except _READ_ERRORS as error:
            raise ValueError(f"mg.load: the manifest of {path!r} is corrupt ({error})") from None
        kept = [index for index, name in enumerate(names) if name != MANIFEST]
        members, names = [members[index] for index in kept], [names[index] for index in kept]
        corrupt = _check_listing(document, headers, path)
    if not mmap:
        needed = sum(
            int(np.prod(shape, dtype=object)) * dtype.itemsize
            for (_, shape, _, dtype), _ in filter(None, headers.values())
        )
        available = package._available_memory()
        if available is not None and needed > available:
            raise MemoryError(
                f"mg.load: {path!r} holds {needed:,} bytes of arrays, more than the "
                f"{available:,} bytes of memory available"
            )
    arrays = {}
    for info, name in zip(members, names):
        if headers[name] is None:
            continue
        header, header_bytes = headers[name]
        try:
            array = (
                _mapped(path, info, header, header_bytes, where)
                if mmap
                else _entry_data(archive, info, header, path)
            )
        except _READ_ERRORS as error:
            raise ValueError(f"mg.load: entry {name!r} of {path!r} is corrupt ({error})") from None
        arrays[name] = _relocate(relocate, array, name, where)
    if document is None:  # the flat form of files without a manifest
        return Checkpoint(
            (name, Checkpoint() if headers[name] is None else arrays[name]) for name in names
        )
    return _decode(
        document["root"],
        "",
        lambda member, scalar, name: arrays[member][()] if scalar else arrays[member],
        corrupt,
    )
