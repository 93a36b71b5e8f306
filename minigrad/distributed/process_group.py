"""The process group: who this process is among the others (torch.distributed's
init_process_group, get_rank, get_world_size, destroy_process_group), over MPI.

`mpiexec -n N python train.py` starts the N processes and connects them; init_process_group
asks MPI (through mpi4py, imported only here) for this process's rank and the world's size.
torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE) are read where they are
set, and must agree with MPI's numbers (torchrun itself starts processes MPI does not connect);
where they are not set, init_process_group sets them, so a script that reads os.environ["RANK"]
after it finds MPI's rank there (destroy_process_group takes back the ones it set). While the
group is up, an exception that ends one rank ends them all (failure.py), instead of leaving the
others waiting in a collective forever.
"""

import datetime
import importlib.util
import os

from ..errors import ArgumentError
from . import failure

# torch's backends and what runs them here: gloo is torch's CPU backend, and MPI does the same
# work on the CPU; nccl is CUDA's, and minigrad has no GPU.
BACKENDS = {"mpi": "mpi", "gloo": "mpi"}
INSTALL_HINT = "pip install 'minigrad[mpi]' (mpi4py and MPICH's wheel, which brings mpiexec)"


class DistError(RuntimeError):
    """A process-group mistake: no group yet, a second one, numbers that disagree."""


class _Group:
    """The one process group (torch's default group, WORLD): MPI's world, duplicated so that
    minigrad's messages never meet the script's own mpi4py traffic."""

    def __init__(self, comm, backend, local_rank, local_size):
        self.comm, self.backend = comm, backend
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.local_rank, self.local_size = local_rank, local_size
        self.set_variables = {}  # the environment variables init_process_group set, and to what


_group = None


def is_available():
    """True when mpi4py can be imported (the extra `mpi` is installed)."""
    return importlib.util.find_spec("mpi4py") is not None


def is_initialized():
    """True between init_process_group and destroy_process_group."""
    return _group is not None


def mpi():
    """mpi4py's MPI module (importing it initialises MPI), or an ImportError saying what to
    install."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise ImportError(f"minigrad.distributed runs over MPI: {INSTALL_HINT}") from error
    return MPI


def _backend_name(backend):
    if backend is None:
        return "mpi"
    if not isinstance(backend, str):
        raise TypeError(f"init_process_group: backend must be a string; got {backend!r}")
    name = backend.lower()
    if name == "nccl":
        raise ArgumentError(
            "init_process_group: backend 'nccl' needs CUDA GPUs, and minigrad runs on the CPU; "
            "use backend='gloo' or 'mpi' (both run over MPI here)"
        )
    if name not in BACKENDS:
        raise ArgumentError(
            f"init_process_group: expected backend 'mpi', 'gloo' or None; got {backend!r}"
        )
    return name


def _check_given(name, given, actual):
    """A rank or world size passed to init_process_group must be MPI's (or -1: not given)."""
    if isinstance(given, bool) or not isinstance(given, int):
        raise TypeError(f"init_process_group: {name} must be an int; got {given!r}")
    if given != -1 and given != actual:
        raise DistError(
            f"init_process_group: {name}={given} was given, but MPI says {actual}; under mpiexec "
            f"the {name} comes from MPI (leave it out)"
        )


def _check_environment(variable, actual):
    """torchrun's variable, where set, must name MPI's number."""
    value = os.environ.get(variable)
    if value is None:
        return
    if value.strip() != str(actual):
        raise DistError(
            f"init_process_group: the environment says {variable}={value}, but MPI says "
            f"{actual}. minigrad.distributed connects processes through MPI: start them with "
            f"`mpiexec -n N python script.py` (torchrun's processes are each a world of one to "
            f"MPI), or unset {variable}"
        )


def init_process_group(
    backend=None,
    init_method=None,
    timeout=None,
    world_size=-1,
    rank=-1,
    store=None,
    group_name="",
    pg_options=None,
    device_id=None,
):
    """Join the processes mpiexec started: after it, get_rank() is this process's MPI rank and
    get_world_size() the number of processes. backend: 'mpi', 'gloo' (run over MPI) or None;
    'nccl' is refused (no GPU). init_method and store are accepted and unused (mpiexec has
    already connected the processes); world_size and rank, if given, must be MPI's. timeout
    (a datetime.timedelta) is accepted: MPI's collectives have none. A single process run
    without mpiexec is a world of one."""
    global _group
    if _group is not None:
        raise DistError("init_process_group: the process group is already initialised")
    name = _backend_name(backend)
    if init_method is not None and not isinstance(init_method, str):
        raise TypeError(f"init_process_group: init_method must be a string; got {init_method!r}")
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise TypeError(
            f"init_process_group: timeout must be a datetime.timedelta; got {timeout!r}"
        )
    if device_id is not None and str(device_id).split(":")[0] != "cpu":
        raise ArgumentError(
            f"init_process_group: minigrad runs on the CPU only; got device_id {device_id!r}"
        )
    MPI = mpi()
    world = MPI.COMM_WORLD
    _check_given("world_size", world_size, world.Get_size())
    _check_given("rank", rank, world.Get_rank())
    local = world.Split_type(MPI.COMM_TYPE_SHARED)
    local_rank, local_size = local.Get_rank(), local.Get_size()
    local.Free()
    numbers = {"RANK": world.Get_rank(), "WORLD_SIZE": world.Get_size()}
    numbers.update(LOCAL_RANK=local_rank, LOCAL_WORLD_SIZE=local_size)
    for variable, actual in numbers.items():
        _check_environment(variable, actual)
    group = _Group(world.Dup(), name, local_rank, local_size)
    for variable, actual in numbers.items():
        if variable not in os.environ:
            os.environ[variable] = group.set_variables[variable] = str(actual)
    _group = group
    failure.end_all_on_exception(group)


def destroy_process_group(group=None):
    """Leave the process group (MPI itself is finalised when the process exits)."""
    global _group
    _check_group("destroy_process_group", group)
    current, _group = _group, None
    failure.restore_excepthook()
    for variable, value in current.set_variables.items():
        if os.environ.get(variable) == value:
            del os.environ[variable]
    current.comm.Free()


def default_group(caller):
    """The group, or the error torch raises when there is none yet."""
    if _group is None:
        raise DistError(
            f"{caller}: the default process group has not been initialized; call "
            "minigrad.distributed.init_process_group() first"
        )
    return _group


def _check_group(caller, group):
    current = default_group(caller)
    if group is not None and group is not current and group is not WORLD:
        raise ArgumentError(
            f"{caller}: only the default group (group=None) exists here; got {group!r}"
        )
    return current


def get_rank(group=None):
    """This process's rank, 0 .. get_world_size() - 1."""
    return _check_group("get_rank", group).rank


def get_world_size(group=None):
    """The number of processes in the group."""
    return _check_group("get_world_size", group).size


def get_backend(group=None):
    """The backend asked for: 'mpi' or 'gloo' (which runs over MPI)."""
    return _check_group("get_backend", group).backend


class _World:
    """group.WORLD, torch's name for the default group."""

    def __repr__(self):
        return "minigrad.distributed.group.WORLD"


WORLD = _World()


class group:  # torch's name: dist.group.WORLD
    WORLD = WORLD


def communicator(caller, group=None):
    """The MPI communicator of the group (collectives.py)."""
    return _check_group(caller, group).comm
