"""Devices, as torch names them, on an engine that runs on the CPU only.

    device = mg.device("cuda" if mg.cuda.is_available() else "cpu")
    x = mg.zeros(3, device=device)
    x.device, x.is_cuda, x.cpu() is x     # device(type='cpu'), False, True

`mg.device("cuda:0")` makes a device object as torch's does (a script may name a device it
will not use), but putting a tensor or a module on it raises an error naming it: nothing is
silently computed somewhere other than where it was asked. This module also gives Tensor its
`device`, `is_cuda`, `is_xpu`, `cpu()` and `cuda()`.
"""

import re

from .errors import ArgumentError
from .random import Generator
from .engine import Tensor
from .ops.args import check_device

# The device types torch's device strings may start with; minigrad computes on the first only.
DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "meta", "hip", "xla", "hpu", "mtia", "privateuseone")
_DEVICE_STRING = re.compile(r"([a-z_]+)(?::(\d+))?")


class device:
    """torch.device: a type ('cpu', 'cuda', ...) and an optional index.

    Args:
        type: a device string ('cpu', 'cuda', 'cuda:1'), another device, or an int (an
            accelerator index: refused, there is none).
        index: the device's index, when `type` has none.

    Equal to another device of the same type and index (not to a string, as in torch);
    str() is 'cuda:1', repr() is device(type='cuda', index=1).
    """

    __slots__ = ("_type", "_index")

    def __init__(self, type, index=None):  # noqa: A002 (torch's argument name)
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, int) and not isinstance(type, bool):
            raise ArgumentError(
                f"mg.device({type}): an integer names an accelerator, and minigrad has none; "
                "use mg.device('cpu')"
            )
        if not isinstance(type, str):
            raise TypeError(f"mg.device: expected a device string such as 'cpu'; got {type!r}")
        match = _DEVICE_STRING.fullmatch(type)
        if match is None or match.group(1) not in DEVICE_TYPES:
            name = match.group(1) if match else type
            if match is None or name in DEVICE_TYPES:
                raise ArgumentError(f"mg.device: invalid device string {type!r}")
            raise ArgumentError(
                f"mg.device: expected a device type among {', '.join(DEVICE_TYPES)}; got {type!r}"
            )
        if match.group(2) is not None:
            if index is not None:
                raise ArgumentError(
                    f"mg.device: {type!r} already has an index, and index={index} was passed too"
                )
            index = int(match.group(2))
        if index is not None and (not isinstance(index, int) or index < 0):
            raise ArgumentError(f"mg.device: index must be an int >= 0; got {index!r}")
        self._type, self._index = match.group(1), index

    @property
    def type(self):
        return self._type

    @property
    def index(self):
        return self._index

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self):
        index = "" if self._index is None else f", index={self._index}"
        return f"device(type='{self._type}'{index})"

    def __eq__(self, other):
        if not isinstance(other, device):
            return NotImplemented
        return (self._type, self._index) == (other._type, other._index)

    def __hash__(self):
        return hash((self._type, self._index))

    def __reduce__(self):
        return device, (self._type, self._index)


CPU = device("cpu")


# Tensor's (and Generator's) device members live here, beside the device they name: tensor.py,
# the engine floor, imports nothing above dtypes and errors (as ops/__init__.py attaches the ops'
# methods).
def _tensor_device(self):
    """Where the tensor's data is: always device(type='cpu')."""
    return CPU


def _cpu(self, memory_format=None):
    """The tensor itself (its data is on the CPU already), as torch's x.cpu()."""
    return self


def _cuda(self, device=None, non_blocking=False, memory_format=None):
    """Refused: minigrad has no CUDA device (the error names the one asked for)."""
    asked = "cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device
    check_device(asked, "Tensor.cuda")


def _pin_memory(self, device=None):
    """Refused, as torch refuses it without an accelerator: pinned memory is for copies to one."""
    raise RuntimeError(
        "Tensor.pin_memory: pinned memory speeds up copies to an accelerator, and minigrad has "
        "none (mg.cuda.is_available() is False); use the tensor as it is"
    )


Tensor.device = property(_tensor_device)
Tensor.pin_memory = _pin_memory
Tensor.is_pinned = lambda self, device=None: False
Tensor.share_memory_ = lambda self: self  # one process: nothing to share with; torch returns self
Tensor.is_cuda = property(lambda self: False, doc="False: minigrad computes on the CPU.")
Tensor.is_xpu = property(lambda self: False, doc="False, as is_cuda: there is no Intel GPU here.")
Tensor.cpu = _cpu
Tensor.cuda = _cuda
Generator.device = property(_tensor_device, doc="device(type='cpu'), as torch.Generator's.")
