"""torch.distributed's names over MPI: several processes train one model, each on its part of
the data, and average their gradients (minigrad.nn.parallel.DistributedDataParallel).

    import minigrad.distributed as dist
    dist.init_process_group("mpi")          # or "gloo", or no backend: all run over MPI
    rank, world = dist.get_rank(), dist.get_world_size()
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    dist.destroy_process_group()

Started with `mpiexec -n 2 python train.py` (docs/distributed.md). MPI comes from the extra
`mpi` (mpi4py and MPICH's wheel, which brings `mpiexec`); importing this package does not import
mpi4py, init_process_group does. process_group.py holds who is who, collectives.py what moves
between processes, failure.py how one rank's exception ends the run.
"""

from .collectives import ReduceOp, Work, all_gather, all_reduce, barrier, broadcast
from .process_group import DistError, destroy_process_group, get_backend, get_rank
from .process_group import get_world_size, group, init_process_group, is_available
from .process_group import is_initialized

# fmt: off
__all__ = [
    "init_process_group", "destroy_process_group", "is_initialized", "is_available",
    "get_rank", "get_world_size", "get_backend", "group", "all_reduce", "broadcast",
    "all_gather", "barrier", "ReduceOp", "Work", "DistError",
]
# fmt: on
