"""Checkpoints: save and load state dicts as .npz archives, never with pickle.

    mg.save(model.state_dict(), "model.npz")
    model.load_state_dict(mg.load("model.npz"))

Values may be Tensors, numpy arrays (numeric, bool or text), Python numbers, strings, and
lists or tuples of numbers or of strings. A nested dict is flattened with dotted keys, so
{"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3} is stored as
"model.fc.weight", ..., "optim.lr", ..., "epoch"; load returns that flat form, in which
ckpt["model"] also gives the "model.*" entries back as a dict, as torch.load would. A nested
dict that is empty (the state_dict of a ReLU) has no entries to flatten: it is stored as an
empty folder entry of the archive, "act/", and comes back as an empty dict under its name.

Saving goes through atomic_file: the archive is written to a temporary file next to the
target and renamed over it only once it is complete and on disk, so a failed or killed save
never destroys the previous checkpoint. Loading checks every entry's .npy header against the
archive before allocating anything: pickled objects, lying headers and archives larger than
the memory left are refused with a message naming the file.
"""

import contextlib
import numbers
import os
import re
import secrets
import stat
import zipfile
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

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


# -- save ---------------------------------------------------------------------------------


def _flatten(state_dict, prefix, out, where):
    for key, value in state_dict.items():
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            key = str(key)
        if not isinstance(key, str) or not key:
            raise TypeError(f"{where}: keys must be non-empty strings; got {key!r}")
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping) and value:
            _flatten(value, name, out, where)
            continue
        if name in out:
            raise ValueError(f"{where}: key {name!r} appears twice after flattening nested dicts")
        out[name] = (
            {} if isinstance(value, Mapping) else _as_array(name, value, where)
        )  # {}: an empty dict stays
    return out


def _as_array(name, value, where):
    if isinstance(value, Tensor):
        value = value.data
    elif isinstance(value, (numbers.Number, np.generic, str)) and not isinstance(value, np.ndarray):
        value = np.asarray(value)
    elif isinstance(value, (list, tuple)):
        kinds = {
            "str" if isinstance(v, str) else "number" if isinstance(v, numbers.Number) else "other"
            for v in value
        }
        if len(kinds) > 1 or "other" in kinds:
            raise TypeError(
                f"{where}: {name!r} is a list or tuple, which can be saved when it holds only "
                f"numbers or only strings; got {[type(v).__name__ for v in value][:8]}"
            )
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise TypeError(
            f"{where}: {name!r} must be a Tensor, a numpy array, a number, a string or a list of "
            f"numbers or strings; got {type(value).__name__}"
        )
    if value.dtype.kind not in "biufcU":
        raise TypeError(
            f"{where}: {name!r} has dtype {value.dtype}; only numeric, bool and text arrays can be "
            f"saved (no pickled objects)"
        )
    return value


def _write_npz(file, arrays):
    """The .npz layout numpy uses: one '<name>.npy' member per array, written with
    allow_pickle=False (and an empty folder entry '<name>/' per empty nested dict)."""
    with zipfile.ZipFile(
        file, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True
    ) as archive:
        for name, array in arrays.items():
            if isinstance(array, Mapping):
                archive.writestr(zipfile.ZipInfo(name + "/"), b"")
                continue
            with archive.open(name + ".npy", mode="w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


def save(state_dict, path):
    """Write a dict of name -> Tensor / array / number to `path` as an .npz archive, atomically
    (atomic_file: a failed write leaves any existing file at `path` untouched)."""
    where = f"mg.save to {os.fspath(path)!r}"
    if not isinstance(state_dict, Mapping):
        raise TypeError(
            f"{where}: expected a dict of name -> Tensor/array/number; got "
            f"{type(state_dict).__name__}"
        )
    arrays = _flatten(state_dict, "", OrderedDict(), where)
    with atomic_file(path) as file:
        _write_npz(file, arrays)


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
    """(name, shape, fortran_order, dtype) of one .npy member, checked against the archive: the
    .npy header must describe exactly the bytes the member holds, so nothing is allocated on
    the word of a header that lies."""
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
    return name, shape, fortran_order, dtype


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


class Checkpoint(OrderedDict):
    """What mg.load returns: name -> array, flat (an empty nested dict: an empty Checkpoint under
    its name). A name under which a nested dict was saved reads back as that dict too:
    ckpt["model"] (and ckpt.get("model"), "model" in ckpt) give the "model.*" entries with the
    prefix taken off, as a new Checkpoint."""

    def __missing__(self, key):
        prefix = f"{key}."
        part = Checkpoint(
            (name[len(prefix) :], value) for name, value in self.items() if name.startswith(prefix)
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
            isinstance(key, str) and any(name.startswith(f"{key}.") for name in self)
        )


def load(path):
    """Read an archive written by mg.save (or np.savez of numeric arrays) -> a Checkpoint (an
    OrderedDict name -> array, where ckpt["model"] also gives back a nested dict saved as "model").

    Numbers and strings come back as 0-d arrays (int(...), float(...), str(...) give them back), an
    empty nested dict as an empty Checkpoint. Refused, each with a message naming the file and the
    problem: a missing file (FileNotFoundError), a folder (IsADirectoryError), anything that is not
    an .npz archive, an entry holding pickled objects (nothing is unpickled), an entry that is
    damaged or whose header declares another size than it holds (ValueError), and arrays larger in
    total than the memory left (MemoryError, checked before allocating).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(
            f"mg.load: {path!r} is a folder; expected an .npz file written by mg.save"
        )
    if not os.path.exists(path):
        if os.path.islink(path):
            raise FileNotFoundError(
                f"mg.load: {path!r} is a symbolic link that leads nowhere (a dangling link "
                f"or a loop)"
            )
        raise FileNotFoundError(f"mg.load: no such file: {path!r}")
    if not os.path.isfile(path):
        raise ValueError(
            f"mg.load: {path!r} is not a regular file (a device, fifo or socket); "
            f"expected an .npz file written by mg.save"
        )
    with open(path, "rb") as file:
        magic = file.read(4)
    if magic not in _ZIP_MAGIC:  # np.load would take anything else for a pickle (or a lone .npy)
        raise ValueError(
            f"mg.load: {path!r} is not an .npz archive (it does not start like a zip file; "
            f"first bytes {magic!r})"
        )
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            names = [_entry_name(info, path) for info in infos]
            if len(set(names)) != len(names):
                raise ValueError(
                    f"mg.load: {path!r} holds an entry twice; a valid .npz names each array once"
                )
            headers = []  # None for an empty dict's folder entry
            for info in infos:
                if info.is_dir():
                    if info.file_size:
                        raise ValueError(
                            f"mg.load: entry {info.filename!r} of {path!r} is corrupt: the folder "
                            f"entry of an empty dict holds {info.file_size:,} bytes"
                        )
                    headers.append(None)
                    continue
                try:
                    headers.append(_entry_header(archive, info, path))
                except (OSError, EOFError, zipfile.BadZipFile) as error:
                    raise ValueError(
                        f"mg.load: entry {info.filename!r} of {path!r} is corrupt ({error})"
                    ) from None
            needed = sum(
                int(np.prod(shape, dtype=object)) * dtype.itemsize
                for _, shape, _, dtype in filter(None, headers)
            )
            available = _available_memory()
            if available is not None and needed > available:
                raise MemoryError(
                    f"mg.load: {path!r} holds {needed:,} bytes of arrays, more than the "
                    f"{available:,} bytes of memory available"
                )
            result = Checkpoint()
            for info, name, header in zip(infos, names, headers):
                if header is None:
                    result[name] = Checkpoint()
                    continue
                try:
                    result[name] = _entry_data(archive, info, header, path)
                except (OSError, EOFError, zipfile.BadZipFile) as error:
                    raise ValueError(
                        f"mg.load: entry {header[0]!r} of {path!r} is corrupt ({error})"
                    ) from None
    except (OSError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile) as error:
        raise ValueError(f"mg.load: {path!r} is not a valid .npz archive ({error})") from None
    return result


__all__ = ["save", "load", "atomic_file", "Checkpoint"]
