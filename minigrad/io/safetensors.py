"""mg.save_safetensors / mg.load_safetensors: the safetensors format (the `safetensors`
package, an optional extra), the ecosystem's pickle-free weights format, which PyTorch loads
with safetensors.torch.load_file."""

import os
from collections.abc import Mapping

import numpy as np

# The limits a caller may lower (mg.io._MAX_MANIFEST_BYTES, mg.io._available_memory) are read
# from the package when a function runs, so setting them on mg.io reaches every file.
from .. import io as package
from ..errors import ArgumentError, DTypeError
from ..engine import Tensor
from .atomic import atomic_file
from .manifest import Checkpoint
from .save_load import _checked_path, _location_map


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
    anything else raises TypeError naming the key, and the key `__metadata__` (the format's own
    entry) ArgumentError, before anything is written. A 0-d tensor is stored 0-d, as torch's
    writer stores it. Needs the `safetensors` extra (ImportError naming it otherwise)."""
    where = f"mg.save_safetensors to {os.fspath(path)!r}"
    if not isinstance(state_dict, Mapping):
        raise TypeError(
            f"{where}: expected a dict of name -> Tensor/array (a state_dict); "
            f"got {type(state_dict).__name__}"
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
        if key == "__metadata__":
            # the header's own entry for the metadata: a tensor there makes the file unreadable
            raise ArgumentError(
                f"{where}: the key '__metadata__' is reserved by the safetensors format for the "
                f"header's metadata; rename that entry (nothing was written)"
            )
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
        # np.require, not np.ascontiguousarray, which makes a 0-d array 1-d
        tensors[key] = np.require(array, requirements="C")
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
    size, available = os.path.getsize(path), package._available_memory()
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
