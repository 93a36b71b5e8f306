"""The collectives (torch.distributed's all_reduce, broadcast, all_gather, barrier): every
process of the group calls the same one with a tensor of the same shape and dtype, and MPI
moves the numbers.

Each works in place on the tensors given, as torch's do, and writes their arrays without
recording a graph (the tensors' version counters note the change). async_op=True returns a
Work whose wait() returns at once: MPI's calls here are blocking, so the work is done by then.
"""

import enum

import numpy as np

from ..engine import Tensor
from ..errors import ArgumentError, DTypeError, ShapeError
from .process_group import communicator, mpi


class ReduceOp(enum.Enum):
    """How all_reduce combines the processes' tensors, elementwise (torch's names). AVG is SUM
    divided by the world size (floating dtypes); BAND, BOR, BXOR take integer or bool ones."""

    SUM = "SUM"
    AVG = "AVG"
    PRODUCT = "PRODUCT"
    MIN = "MIN"
    MAX = "MAX"
    BAND = "BAND"
    BOR = "BOR"
    BXOR = "BXOR"

    def __repr__(self):
        return f"ReduceOp.{self.value}"


# MPI's operation for each (AVG: a sum, then divided)
_MPI_OPS = {"SUM": "SUM", "AVG": "SUM", "PRODUCT": "PROD", "MIN": "MIN", "MAX": "MAX"}
_MPI_OPS.update(BAND="BAND", BOR="BOR", BXOR="BXOR")
_BITWISE = ("BAND", "BOR", "BXOR")


class Work:
    """What a collective called with async_op=True returns (already complete)."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True

    def is_success(self):
        return True


def _done(async_op):
    return Work() if async_op else None


def _tensor(caller, value, what="tensor"):
    if not isinstance(value, Tensor):
        raise TypeError(f"{caller}: {what} must be a minigrad Tensor; got {type(value).__name__}")
    return value


def _write(tensor, array):
    """Put the collective's result into the tensor's own array (its views see it too)."""
    np.copyto(tensor._data, array.reshape(tensor.shape), casting="no")
    tensor._bump_version()


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Replace `tensor`, on every process, by the elementwise reduction (op) of all processes'
    `tensor`s, which must have the same shape and dtype."""
    comm = communicator("all_reduce", group)
    _tensor("all_reduce", tensor)
    if not isinstance(op, ReduceOp):
        raise TypeError(f"all_reduce: op must be a ReduceOp (ReduceOp.SUM ...); got {op!r}")
    kind = tensor._data.dtype.kind
    if op.value in _BITWISE and kind not in "biu":
        raise DTypeError(
            f"all_reduce: {op!r} takes integer or bool tensors; got {tensor._data.dtype}"
        )
    if op is ReduceOp.AVG and kind != "f":
        raise DTypeError(f"all_reduce: ReduceOp.AVG takes float tensors; got {tensor._data.dtype}")
    source = np.ascontiguousarray(tensor._data)
    result = np.empty_like(source)
    comm.Allreduce(source, result, op=getattr(mpi(), _MPI_OPS[op.value]))
    if op is ReduceOp.AVG:
        result /= comm.Get_size()
    _write(tensor, result)
    return _done(async_op)


def _check_rank(caller, name, rank, size):
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)):
        raise TypeError(f"{caller}: {name} must be an int rank; got {rank!r}")
    if not 0 <= rank < size:
        raise ArgumentError(
            f"{caller}: {name} must be a rank in [0, {size}); got {rank} (world size {size})"
        )


def broadcast(tensor, src=0, group=None, async_op=False):
    """Give every process's `tensor` the values of rank src's (same shape and dtype
    everywhere)."""
    comm = communicator("broadcast", group)
    _tensor("broadcast", tensor)
    _check_rank("broadcast", "src", src, comm.Get_size())
    buffer = np.ascontiguousarray(tensor._data)
    comm.Bcast(buffer, root=int(src))
    if comm.Get_rank() != src:
        _write(tensor, buffer)
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[k] = rank k's `tensor`, on every process. tensor_list holds world-size
    tensors of `tensor`'s shape and dtype, written in place."""
    comm = communicator("all_gather", group)
    _tensor("all_gather", tensor)
    size = comm.Get_size()
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != size:
        got = len(tensor_list) if isinstance(tensor_list, (list, tuple)) else type(tensor_list)
        raise ArgumentError(
            f"all_gather: tensor_list must be a list of {size} tensors (one per rank); got {got}"
        )
    for position, item in enumerate(tensor_list):
        _tensor("all_gather", item, f"tensor_list[{position}]")
        if item.shape != tensor.shape or item.dtype != tensor.dtype:
            raise ShapeError(
                f"all_gather: tensor_list[{position}] must be {tensor.dtype} of shape "
                f"{tuple(tensor.shape)}, as tensor; got {item.dtype} of shape {tuple(item.shape)}"
            )
    source = np.ascontiguousarray(tensor._data)
    gathered = np.empty((size, *source.shape), dtype=source.dtype)
    comm.Allgather(source, gathered)
    for item, part in zip(tensor_list, gathered):
        _write(item, part)
    return _done(async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every process of the group has called barrier."""
    communicator("barrier", group).Barrier()
    return _done(async_op)
