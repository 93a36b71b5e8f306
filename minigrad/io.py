"""Checkpoints: mg.save / mg.load (torch.save / torch.load) as .npz archives, never with pickle,
and safetensors files both ways.

    mg.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iter_num": 100}, path)
    checkpoint = mg.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])

An archive holds one '<name>.npy' member per array (numpy's .npz layout, readable by np.load)
and a JSON manifest, '__minigrad__.json', describing the saved tree: dicts, lists, tuples,
Python numbers, bools, strings and None, each of which comes back as the type saved, with the
arrays referred to by member name. The manifest is data, never code, and is checked part by part
on load. Files written before the manifest existed (and np.savez files) still load, as a flat
dict of arrays.

Saving goes through atomic_file: the archive is written to a temporary file next to the
target and renamed over it only once it is complete and on disk, so a failed or killed save
never destroys the previous checkpoint. Loading checks every entry's .npy header against the
archive before allocating anything: pickled objects, lying headers, malformed manifests and
archives larger than the memory left are refused with a message naming the file.

mg.save_safetensors / mg.load_safetensors write and read the safetensors format (the
`safetensors` package, an optional extra), which PyTorch loads with safetensors.torch.load_file.
"""

import contextlib
import json
import os
import re
import secrets
import stat
import zipfile
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

from .errors import ArgumentError, DTypeError
from .tensor import Tensor

try:
    import fcntl  # POSIX: a save holds a lock on its temporary file, so others can tell it is alive
except ImportError:  # Windows: a file that is open cannot be deleted, which protects it as well
    fcntl = None


# -- writing: one temporary-file-and-rename writer ----------------------------------------------


def _temporary_name_pattern(name):
    """Names of the temporaries of target `name`: '.<name>.<8 random characters>.tmp'
    (the random part as this module and, before it, tempfile.mkstemp made it)."""
    return re.compile(re.escape(f".{name}.") + r"[a-z0-9_]{8}\.tmp")


def _lock(fd, blocking):
    """Take the exclusive lock of an open file; False if another holder has it (non-blocking)."""
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


def _remove_abandoned_temporaries(folder, name):
    """Delete temporaries of `name` left behind by a save that was killed before its rename.

    A live save keeps its temporary locked until the rename, and locks die with their process,
    so an unlocked temporary is abandoned. The lock is held while unlinking; a new save checks
    after locking that its file is still linked (see _create_temporary), so no live file is
    lost. Best effort: a temporary that cannot be removed is left for the next save.
    """
    pattern = _temporary_name_pattern(name)
    candidates = []
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        candidates = [
            entry.path
            for entry in entries
            if pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
        ]
    for candidate in candidates:
        with contextlib.suppress(OSError):
            if fcntl is None:
                os.remove(candidate)  # fails while the file is open elsewhere
                continue
            fd = os.open(candidate, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                if _lock(fd, blocking=False):
                    os.unlink(candidate)
            finally:
                os.close(fd)


def _create_temporary(folder, name, existing):
    """Create, lock and return (fd, path) of a new temporary for target `name` in `folder`.

    A new file gets mode 0o666 minus the umask, as open() would give it; when the target
    exists, the temporary takes its mode (and, where allowed, its owner) instead."""
    while True:
        temporary = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(
                temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                0o600 if existing is not None else 0o666,
            )
        except FileExistsError:
            continue
        try:
            _lock(fd, blocking=True)
            if os.fstat(fd).st_nlink == 0:  # a cleaner took it between creation and lock: try again
                os.close(fd)
                continue
            if existing is not None and hasattr(os, "fchmod"):
                with contextlib.suppress(OSError):
                    os.fchown(fd, existing.st_uid, existing.st_gid)  # only root may: best effort
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        except OSError:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.remove(temporary)
            raise
        return fd, temporary


def _fsync_folder(folder):
    """Make the rename itself durable (POSIX); not possible everywhere, hence best effort."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _naming(error, path):
    """The same kind of OSError, its message led by `path` (the file the user asked for, not the
    temporary), errno kept. Errors of other libraries' OSError subclasses pass unchanged."""
    if path in str(error) or type(error).__module__ != "builtins":
        return error
    named = type(error)(f"cannot write {path!r}: {error}")
    named.errno = error.errno
    return named


@contextlib.contextmanager
def atomic_file(path):
    """A binary file to write that takes the place of `path` only when the block ends without
    an error: a temporary '.<name>.<random>.tmp' in the same folder, flushed and fsynced, then
    renamed over `path`.

    - A failed write (bad value, full disk, exception) leaves an existing file untouched and
      removes the temporary; temporaries left by a killed save are removed by the next save
      of the same path.
    - A symlink at `path` is followed: its target is replaced and the link stays.
    - A new file gets the usual mode (0o666 minus the umask); a replaced file keeps its mode.
      A read-only existing file is refused, as open() would refuse it. (Hard links to the old
      file keep the old contents: that is what an atomic rename means.)
    - OSErrors name `path`. Used by mg.save, mg.viz.render and the examples' writers.
    """
    path = os.fspath(path)
    target = os.path.realpath(path)  # through symlinks, so the link is kept and its target written
    folder, name = os.path.split(target)
    if os.path.isdir(target):
        raise IsADirectoryError(f"cannot write {path!r}: it is a folder, expected a file path")
    if not os.path.isdir(folder):
        if os.path.exists(folder):
            raise NotADirectoryError(f"cannot write {path!r}: {folder!r} is not a folder")
        raise FileNotFoundError(f"cannot write {path!r}: the folder {folder!r} does not exist")
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(
        existing.st_mode
    ):  # the rename would replace a pipe or device
        raise OSError(
            f"cannot write {path!r}: it is not a regular file ({stat.filemode(existing.st_mode)}); "
            f"minigrad writes files by replacing them, which would remove it"
        )
    if existing is not None and not os.access(target, os.W_OK):
        raise PermissionError(
            f"cannot write {path!r}: the file is read-only (mode {stat.filemode(existing.st_mode)})"
        )
    _remove_abandoned_temporaries(folder, name)
    try:
        fd, temporary = _create_temporary(folder, name, existing)
    except OSError as error:
        raise _naming(error, path) from error
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
            if fcntl is not None:
                os.replace(temporary, target)  # while still locked, so no cleaner can take it
        if fcntl is None:
            os.replace(temporary, target)  # Windows cannot rename a file that is open
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        if isinstance(error, OSError):
            raise _naming(error, path) from error
        raise
    _fsync_folder(folder)


# -- save: the saved tree as a JSON manifest, its arrays as .npy members -------------------------

MANIFEST = "__minigrad__"  # the entry (a uint8 .npy of JSON text) that describes the saved tree
_FORMAT, _VERSION = "minigrad.checkpoint", 1
_MAX_DEPTH = 100  # containers inside containers; deeper (or a dict that holds itself) is refused
_MAX_MANIFEST_BYTES = 64 << 20  # the manifest is parsed whole, so its size is bounded both ways
_MAX_INT_BITS = 13_000  # about 4,000 digits: Python's limit on int <-> str conversion is 4,300


def _dict_key(key, name, where):
    """A dict key as saved: a non-empty string or an integer (numpy integers become ints)."""
    if isinstance(key, np.integer):
        key = int(key)
    if isinstance(key, bool) or not isinstance(key, (str, int)) or key == "":
        inside = f" (in {name!r})" if name else ""
        raise TypeError(
            f"{where}: keys must be non-empty strings (or integers); got {key!r}{inside}"
        )
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
            f"{where}: {_label(name)} is nested more than {_MAX_DEPTH} containers deep (or holds "
            f"itself)"
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
                f"{where}: {_label(name)} is an integer of {value.bit_length():,} bits; at most "
                f"{_MAX_INT_BITS:,} can be saved (save it as a string)"
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
    when nested keys are joined with dots: {"a.b": 1, "a": {"b": 2}} is refused (ValueError).
    """
    if hasattr(path, "write") and not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(
            f"mg.save: expected a file path; got a file object ({type(path).__name__}): minigrad "
            f"writes a checkpoint by replacing the file at a path, atomically"
        )
    where = f"mg.save to {os.fspath(path)!r}"
    arrays = OrderedDict()
    root = _encode(obj, "", set(), arrays, where, 0)
    manifest = json.dumps(
        {"format": _FORMAT, "version": _VERSION, "root": root},
        allow_nan=False,
        separators=(",", ":"),
    ).encode("ascii")
    if len(manifest) > _MAX_MANIFEST_BYTES:
        raise ValueError(
            f"{where}: the structure of the saved value takes {len(manifest):,} bytes of manifest, "
            f"more than the {_MAX_MANIFEST_BYTES:,} that mg.load accepts; save long lists of "
            f"numbers as arrays"
        )
    with atomic_file(path) as file:
        _write_npz(file, arrays, manifest)


# -- load ---------------------------------------------------------------------------------

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip
_READ_CHUNK = 1 << 18  # bytes per read: the zip reader copies each chunk; small ones stay in cache


def _available_memory():
    """Bytes that can still be allocated (available RAM plus free swap), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as file:
            fields = dict(line.split(":", 1) for line in file)
        return sum(int(fields[key].split()[0]) * 1024 for key in ("MemAvailable", "SwapFree"))
    except (OSError, KeyError, ValueError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _entry_name(info, path):
    """The key a member holds: '<key>.npy' an array, '<key>/' (a folder entry) an empty nested
    dict."""
    for suffix in (".npy", "/"):
        if info.filename.endswith(suffix):
            return info.filename[: -len(suffix)]
    raise ValueError(
        f"mg.load: entry {info.filename!r} of {path!r} is not a .npy array (nor the folder entry "
        f"of an empty dict)"
    )


def _entry_header(archive, info, path):
    """((name, shape, fortran_order, dtype), header bytes) of one .npy member, checked against
    the archive: the .npy header must describe exactly the bytes the member holds, so nothing is
    allocated on the word of a header that lies."""
    name = _entry_name(info, path)
    with archive.open(info) as member:
        try:
            version = np.lib.format.read_magic(member)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f"format version {version}, expected 1.0 or 2.0")
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran_order, dtype = read_header(member)
        except ValueError as error:
            raise ValueError(
                f"mg.load: entry {name!r} of {path!r} has no valid .npy header ({error})"
            ) from None
        header_bytes = member.tell()
    if dtype.hasobject:
        raise ValueError(
            f"mg.load: entry {name!r} of {path!r} holds pickled Python objects; refusing to load it"
        )
    declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
    held = info.file_size - header_bytes
    if declared != held:
        raise ValueError(
            f"mg.load: entry {name!r} of {path!r} is corrupt: its header declares shape {shape} "
            f"{dtype} ({declared:,} bytes) but the entry holds {held:,} bytes of data"
        )
    return (name, shape, fortran_order, dtype), header_bytes


def _entry_data(archive, info, header, path):
    """Read one member's array into a fresh buffer of exactly the declared size."""
    name, shape, fortran_order, dtype = header
    array = np.empty(int(np.prod(shape, dtype=object)), dtype)
    buffer = memoryview(array.view(np.uint8))
    with archive.open(info) as member:
        member.seek(info.file_size - buffer.nbytes)  # past the header
        filled = 0
        while filled < buffer.nbytes:
            count = member.readinto(buffer[filled : filled + _READ_CHUNK])
            if not count:
                raise ValueError(
                    f"mg.load: entry {name!r} of {path!r} is corrupt (it ends after "
                    f"{filled:,} of {buffer.nbytes:,} bytes)"
                )
            filled += count
        if member.read(1):  # also makes the zip reader check the CRC
            raise ValueError(
                f"mg.load: entry {name!r} of {path!r} is corrupt (more data than declared)"
            )
    return array.reshape(shape, order="F" if fortran_order else "C")


def _manifest(archive, info, header, path):
    """The parsed manifest of a checkpoint: {"format", "version", "root"}, checked as a document
    (its size before reading, JSON, no repeated keys, a version this minigrad reads)."""
    where = f"mg.load: the manifest {MANIFEST!r} of {path!r}"
    (_, shape, _, dtype), _ = header
    if dtype != np.uint8 or len(shape) != 1:
        raise ValueError(f"{where} is a {dtype} array of shape {shape}; expected uint8 JSON text")
    if shape[0] > _MAX_MANIFEST_BYTES:
        raise ValueError(
            f"{where} claims {shape[0]:,} bytes; at most {_MAX_MANIFEST_BYTES:,} are accepted"
        )
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
            f"{where} is of format version {version}, written by a newer minigrad; this one reads "
            f"version {_VERSION}"
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


def _data_offset(file, info, header_bytes):
    """Where a stored (uncompressed) member's array data starts in the file: past the zip's
    local header (whose name and extra fields may differ in length from the central ones)."""
    file.seek(info.header_offset)
    local = file.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        return None
    name_length, extra_length = (
        int.from_bytes(local[26:28], "little"),
        int.from_bytes(local[28:30], "little"),
    )
    return info.header_offset + 30 + name_length + extra_length + header_bytes


def _mapped(path, info, header, header_bytes, where):
    """One member's array mapped copy-on-write from the file (mmap=True): writes to it stay in
    memory, the file is never changed, and the bytes are read (and not checksummed) on use."""
    name, shape, fortran_order, dtype = header
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(
            f"{where}: entry {name!r} of {path!r} is compressed, so it cannot be memory-mapped; "
            f"load it with mmap=False"
        )
    count = int(np.prod(shape, dtype=object))
    with open(path, "rb") as file:
        offset = _data_offset(file, info, header_bytes)
        size = os.fstat(file.fileno()).st_size
    if offset is None or offset + count * dtype.itemsize > size:
        raise ValueError(
            f"mg.load: entry {name!r} of {path!r} is corrupt (it lies outside the file)"
        )
    if count == 0:
        return np.empty(shape, dtype, order="F" if fortran_order else "C")
    return np.memmap(
        path, dtype, mode="c", offset=offset, shape=shape, order="F" if fortran_order else "C"
    )


class Checkpoint(OrderedDict):
    """What mg.load returns for a saved dict: name -> value, flat, nested dicts joined with dots
    ("model.fc.weight"; an empty nested dict: an empty Checkpoint under its name). A name under
    which a nested dict was saved reads back as that dict too: ckpt["model"] (and
    ckpt.get("model"), "model" in ckpt) give the "model.*" entries with the prefix taken off, as a
    new Checkpoint, as torch.load's ckpt["model"] would."""

    def __missing__(self, key):
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
        return super().__contains__(key) or (
            isinstance(key, str) and any(str(name).startswith(f"{key}.") for name in self)
        )


def _flat(value, prefix="", into=None):
    """A decoded value with its dicts in the flat form: Checkpoint entries joined with dots
    (recursively; a dict inside a list or tuple becomes a flat Checkpoint of its own)."""
    if isinstance(value, (list, tuple)):
        items = [_flat(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if not isinstance(value, Checkpoint):
        return value
    result = Checkpoint() if into is None else into
    for key, item in value.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(item, Checkpoint) and item:
            _flat(item, name, result)
        else:
            result[name] = _flat(item)
    return result


def _checked_path(path, where, expected):
    """`path` as a string, refused unless it is an existing regular file (errors name it)."""
    if hasattr(path, "read") and not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{where}: expected a file path; got a file object ({type(path).__name__})")
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{where}: {path!r} is a folder; expected {expected}")
    if not os.path.exists(path):
        if os.path.islink(path):
            raise FileNotFoundError(
                f"{where}: {path!r} is a symbolic link that leads nowhere (a dangling link "
                f"or a loop)"
            )
        raise FileNotFoundError(f"{where}: no such file: {path!r}")
    if not os.path.isfile(path):
        raise ValueError(
            f"{where}: {path!r} is not a regular file (a device, fifo or socket); expected "
            f"{expected}"
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
            f"{where}: map_location={map_location!r} asks for a {asked.upper()} device; minigrad "
            f"runs on the CPU only: use map_location='cpu' or leave it out"
        )
    return None


def _relocate(relocate, array, name, where):
    if relocate is None:
        return array
    moved = relocate(array, "cpu")
    moved = moved.numpy() if isinstance(moved, Tensor) else moved
    if not isinstance(moved, np.ndarray):
        raise TypeError(
            f"{where}: the map_location callable must return the array it is given (or another "
            f"array); for {name!r} it returned {type(moved).__name__}"
        )
    return moved


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_args):
    """Read a file written by mg.save (or np.savez of numeric arrays): torch.load(f, ...) for
    checkpoints, never unpickling anything.

    Returns the value saved, each part as the type saved: dicts as Checkpoints (OrderedDicts;
    ckpt["model"] is the nested dict, ckpt["model.fc.weight"] reaches into it), lists, tuples,
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
    entry holding pickled objects, an entry that is damaged or whose header declares another size
    than it holds, a manifest that is not valid (wrong types, nesting deeper than 100, a size over
    64 MiB, members missing, unlisted or listed twice) (ValueError), and arrays larger in total
    than the memory left (MemoryError, checked before allocating; not with mmap).
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
    path = _checked_path(f, where, "an .npz file written by mg.save")
    with open(path, "rb") as file:
        magic = file.read(4)
    if magic not in _ZIP_MAGIC:  # np.load would take anything else for a pickle (or a lone .npy)
        raise ValueError(
            f"mg.load: {path!r} is not an .npz archive (it does not start like a zip file; "
            f"first bytes {magic!r})"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            return _read_archive(archive, path, relocate, bool(mmap), where)
    except (OSError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile) as error:
        raise ValueError(f"mg.load: {path!r} is not a valid .npz archive ({error})") from None


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
        except (OSError, EOFError, zipfile.BadZipFile) as error:
            raise ValueError(
                f"mg.load: entry {info.filename!r} of {path!r} is corrupt ({error})"
            ) from None
    document, corrupt = None, None
    if headers.get(MANIFEST) is not None:  # a file of format version 1 or later
        info = members[names.index(MANIFEST)]
        try:
            document = _manifest(archive, info, headers.pop(MANIFEST), path)
        except (OSError, EOFError, zipfile.BadZipFile) as error:
            raise ValueError(f"mg.load: the manifest of {path!r} is corrupt ({error})") from None
        kept = [index for index, name in enumerate(names) if name != MANIFEST]
        members, names = [members[index] for index in kept], [names[index] for index in kept]
        corrupt = _check_listing(document, headers, path)
    if not mmap:
        needed = sum(
            int(np.prod(shape, dtype=object)) * dtype.itemsize
            for (_, shape, _, dtype), _ in filter(None, headers.values())
        )
        available = _available_memory()
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
        except (OSError, EOFError, zipfile.BadZipFile) as error:
            raise ValueError(f"mg.load: entry {name!r} of {path!r} is corrupt ({error})") from None
        arrays[name] = _relocate(relocate, array, name, where)
    if document is None:  # the flat form of files without a manifest
        return Checkpoint(
            (name, Checkpoint() if headers[name] is None else arrays[name]) for name in names
        )
    return _flat(
        _decode(
            document["root"],
            "",
            lambda member, scalar, name: arrays[member][()] if scalar else arrays[member],
            corrupt,
        )
    )


# -- safetensors: the ecosystem's pickle-free weights format (an optional extra) ----------------


def _safetensors_numpy(where):
    try:
        import safetensors.numpy
    except ImportError as error:
        raise ImportError(
            f"{where} needs the safetensors package, an optional extra of minigrad: "
            f"pip install 'minigrad[safetensors]' (or: pip install safetensors)"
        ) from error
    return safetensors


def save_safetensors(state_dict, path, metadata=None):
    """Write a flat dict name -> Tensor / numeric array (a state_dict) to `path` as a .safetensors
    file, atomically: safetensors.torch.save_file(state_dict, path, metadata) for minigrad, which
    PyTorch reads back with safetensors.torch.load_file (then model.load_state_dict).

    `metadata` is None or a dict str -> str, stored in the file's header. Values must be Tensors or
    numpy arrays of a numeric or bool dtype (numbers, strings and nested dicts belong in mg.save);
    anything else raises TypeError naming the key. Needs the `safetensors` extra (ImportError
    naming it otherwise)."""
    where = f"mg.save_safetensors to {os.fspath(path)!r}"
    if not isinstance(state_dict, Mapping):
        raise TypeError(
            f"{where}: expected a dict of name -> Tensor/array (a state_dict); got "
            f"{type(state_dict).__name__}"
        )
    if metadata is not None and (
        not isinstance(metadata, Mapping)
        or not all(isinstance(item, str) for pair in metadata.items() for item in pair)
    ):
        raise TypeError(f"{where}: metadata must be None or a dict of str -> str; got {metadata!r}")
    tensors = {}
    for key, value in state_dict.items():
        if not isinstance(key, str) or not key:
            raise TypeError(f"{where}: keys must be non-empty strings; got {key!r}")
        if not isinstance(value, (Tensor, np.ndarray)):
            raise TypeError(
                f"{where}: {key!r} is a {type(value).__name__}; a safetensors file holds only "
                f"tensors (save numbers, strings and nested dicts with mg.save, or as metadata)"
            )
        array = value.numpy() if isinstance(value, Tensor) else value
        if array.dtype.kind not in "biuf":
            raise TypeError(
                f"{where}: {key!r} has dtype {array.dtype}; a safetensors file holds numeric and "
                f"bool arrays"
            )
        tensors[key] = np.ascontiguousarray(array)
    data = _safetensors_numpy(where).numpy.save(
        tensors, metadata=dict(metadata) if metadata else None
    )
    with atomic_file(path) as file:
        file.write(data)


# The safetensors dtypes numpy holds (bfloat16 and the float8s it has no type for)
_NUMPY_KINDS = ("BOOL", "U8", "I8", "U16", "I16", "F16", "U32", "I32", "F32", "U64", "I64", "F64")


def load_safetensors(path, device="cpu"):
    """Read a .safetensors file (written by mg.save_safetensors, safetensors.torch.save_file or
    any other writer) -> a Checkpoint name -> numpy array, in name order, for load_state_dict:
    safetensors.torch.load_file(path, device) for minigrad.

    `device` is 'cpu' or a CPU device (another raises ArgumentError naming it). A file that is
    missing, a folder, not a safetensors file or damaged (its header checked by the safetensors
    package against the file's size) is refused naming the file; a file larger than the memory
    left raises MemoryError before reading; tensors of a dtype numpy lacks (bfloat16, float8)
    raise DTypeError naming them (float16 is read; load_state_dict casts it to the layer's dtype).
    Needs the `safetensors` extra."""
    where = "mg.load_safetensors"
    _location_map(device, where)
    library = _safetensors_numpy(where)
    path = _checked_path(path, where, "a .safetensors file")
    size, available = os.path.getsize(path), _available_memory()
    if available is not None and size > available:
        raise MemoryError(
            f"{where}: {path!r} holds {size:,} bytes, more than the {available:,} bytes of memory "
            f"available"
        )
    try:
        with library.safe_open(path, framework="np") as file:
            kinds = {key: file.get_slice(key).get_dtype() for key in file.keys()}
            unreadable = {key: kind for key, kind in kinds.items() if kind not in _NUMPY_KINDS}
            if not unreadable:
                return Checkpoint((key, np.array(file.get_tensor(key))) for key in kinds)
    except Exception as error:  # SafetensorError (a Rust exception) and friends, all named
        if isinstance(error, (MemoryError, KeyboardInterrupt)):
            raise
        raise ValueError(
            f"{where}: {path!r} is not a valid safetensors file ({type(error).__name__}: {error})"
        ) from None
    raise DTypeError(
        f"{where}: {path!r} holds tensors of a dtype numpy has no type for: "
        f"{dict(list(unreadable.items())[:8])}; expected one of {', '.join(_NUMPY_KINDS)} "
        f"(convert them where they were written, e.g. model.float() in PyTorch)"
    )


__all__ = [
    "save",
    "load",
    "save_safetensors",
    "load_safetensors",
    "atomic_file",
    "Checkpoint",
    "MANIFEST",
]
