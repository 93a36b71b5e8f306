"""torch.nn.parallel's DistributedDataParallel (distributed.py): one model's replicas in
several processes, their gradients averaged during backward (minigrad.distributed, over MPI).
Threads on one machine's cores are minigrad.parallel's."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
