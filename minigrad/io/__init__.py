"""Checkpoints: mg.save / mg.load (torch.save / torch.load) as .npz archives, never with pickle,
and safetensors files both ways.

    mg.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iter_num": 100}, path)
    checkpoint = mg.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])

An archive holds one '<name>.npy' member per array (numpy's .npz layout, readable by np.load)
and a JSON manifest (the member '__minigrad__.npy', uint8 bytes of JSON) describing the saved
tree: dicts, lists, tuples, Python numbers, bools, strings and None, each of which comes back as
the type saved, with the arrays referred to by member name. The manifest is data, never code,
and is checked part by part on load. Files written before the manifest existed (and np.savez
files) still load, as a flat dict of arrays.

Saving goes through atomic_file: the archive is written to a temporary file next to the
target and renamed over it only once it is complete and on disk, so a failed or killed save
never destroys the previous checkpoint. Loading checks every entry's .npy header against the
archive (and every zip directory entry against the file's real bytes) before allocating
anything: pickled objects, lying headers and directories, encrypted or oddly compressed
entries, malformed manifests and archives larger than the memory left (the system's, the
cgroup's, the rlimit's) are refused with a message naming the file.

mg.save_safetensors / mg.load_safetensors write and read the safetensors format (the
`safetensors` package, an optional extra), which PyTorch loads with safetensors.torch.load_file.

The parts, one file each:

    atomic.py       atomic_file: the temporary-file-then-rename writer every save goes through
    save_load.py    save and load: torch.save / torch.load's arguments, the archive against its
                    manifest
    manifest.py     the JSON manifest of the saved tree, its schema checks, Checkpoint
    npz.py          the .npz members read with their limits: headers, sizes, mmap, memory left
    safetensors.py  save_safetensors / load_safetensors

The package also holds the two limits a test may lower, _MAX_MANIFEST_BYTES and
_available_memory; the files read them from here when they run.
"""

from .atomic import atomic_file
from .manifest import _MAX_MANIFEST_BYTES, MANIFEST, Checkpoint
from .npz import _available_memory
from .safetensors import load_safetensors, save_safetensors
from .save_load import load, save

# fmt: off
__all__ = [
    "save", "load", "save_safetensors", "load_safetensors", "atomic_file", "Checkpoint", "MANIFEST",
]
# fmt: on
