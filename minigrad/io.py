"""Checkpoints: save and load state dicts as .npz archives, never with pickle.

    mg.save(model.state_dict(), "model.npz")
    model.load_state_dict(mg.load("model.npz"))

Values may be Tensors, numpy arrays (numeric or bool) or Python numbers. A nested dict is
flattened with dotted keys, so {"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}
is stored as "model.fc.weight", ..., "optim.lr", ..., "epoch"; load returns that flat form.
The file is written to `path` exactly (no suffix is added), through a temporary file in the
same folder that replaces the old file only once it is complete.
"""

import contextlib
import numbers
import os
import tempfile
import zipfile
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

from .tensor import Tensor


def _flatten(state_dict, prefix, out):
    for key, value in state_dict.items():
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            key = str(key)
        if not isinstance(key, str) or not key:
            raise TypeError(f"mg.save: keys must be non-empty strings; got {key!r}")
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            _flatten(value, name, out)
            continue
        if name in out:
            raise ValueError(f"mg.save: key {name!r} appears twice after flattening nested dicts")
        out[name] = _as_array(name, value)
    return out


def _as_array(name, value):
    if isinstance(value, Tensor):
        value = value.data
    elif isinstance(value, (numbers.Number, np.generic)) and not isinstance(value, np.ndarray):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise TypeError(f"mg.save: {name!r} must be a Tensor, a numpy array or a number; "
                        f"got {type(value).__name__}")
    if value.dtype.kind not in "biufc":
        raise TypeError(f"mg.save: {name!r} has dtype {value.dtype}; only numeric and bool arrays can be "
                        f"saved (no pickled objects)")
    return value


def _write_npz(file, arrays):
    """The .npz layout numpy uses: one '<name>.npy' member per array, written with allow_pickle=False."""
    with zipfile.ZipFile(file, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(name + ".npy", mode="w", force_zip64=True) as member:
                np.lib.format.write_array(member, array, allow_pickle=False)


@contextlib.contextmanager
def atomic_file(path):
    """A binary file to write that takes the place of `path` only when the block ends without an
    error: it is a temporary file in the same folder, flushed to disk, then renamed over `path`.
    A failed write (bad value, full disk, interrupted process) leaves any existing file at
    `path` untouched and removes the temporary file. Used by mg.save and mg.viz.render."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def save(state_dict, path):
    """Write a dict of name -> Tensor / array / number to `path` as an .npz archive, atomically
    (atomic_file: a failed write leaves any existing file at `path` untouched)."""
    if not isinstance(state_dict, Mapping):
        raise TypeError(f"mg.save expects a dict of name -> Tensor/array/number; got {type(state_dict).__name__}")
    arrays = _flatten(state_dict, "", OrderedDict())
    with atomic_file(path) as file:
        _write_npz(file, arrays)


_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip


def load(path):
    """Read an archive written by mg.save (or np.savez of numeric arrays) -> OrderedDict name -> array.

    Opens with allow_pickle=False: a file holding pickled objects raises ValueError without
    unpickling anything, as does a file that is not a valid .npz. A missing file raises
    FileNotFoundError. Numbers come back as 0-d arrays.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"mg.load: no such file: {path!r}")
    with open(path, "rb") as file:
        magic = file.read(4)
    if magic not in _ZIP_MAGIC:  # np.load would take anything else for a pickle (or a lone .npy)
        raise ValueError(f"mg.load: {path!r} is not an .npz archive (it does not start like a zip file; "
                         f"first bytes {magic!r})")
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as error:
        raise ValueError(f"mg.load: {path!r} is not a valid .npz archive ({error})") from None
    result = OrderedDict()
    with archive:
        for name in archive.files:
            try:
                result[name] = archive[name]
            except ValueError as error:
                if "pickle" in str(error) or "Object arrays" in str(error):
                    raise ValueError(f"mg.load: entry {name!r} of {path!r} holds pickled Python objects; "
                                     f"refusing to load it") from None
                raise ValueError(f"mg.load: entry {name!r} of {path!r} is corrupt ({error})") from None
            except (OSError, EOFError, zipfile.BadZipFile) as error:
                raise ValueError(f"mg.load: entry {name!r} of {path!r} is corrupt ({error})") from None
            if not isinstance(result[name], np.ndarray):  # numpy hands back raw bytes for non-.npy members
                raise ValueError(f"mg.load: entry {name!r} of {path!r} is not a .npy array")
    return result


__all__ = ["save", "load"]
