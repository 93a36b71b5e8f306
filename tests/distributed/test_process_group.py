"""The process group: under `mpiexec -n 2` each process learns its rank and the world's size
from MPI and finds them in torchrun's variables too; torchrun's variables that disagree with
MPI, a second group, and backends or arguments it cannot take are refused naming them; torch's
import paths (nanoGPT's and dcgan's) work."""

import datetime
import importlib
import json
import sys

import pytest
from distributed_checks import TORCHRUN_VARIABLES, run_mpi

import minigrad.distributed as dist

TORCH_NAMES = [
    "init_process_group", "destroy_process_group", "is_initialized", "is_available", "get_rank",
    "get_world_size", "get_backend", "all_reduce", "broadcast", "all_gather", "barrier",
    "ReduceOp", "group",
]  # fmt: skip

GROUP = """
import json, os, sys
import minigrad.distributed as dist

hook = sys.excepthook
seen = {"before": dist.is_initialized()}
dist.init_process_group(backend="gloo", init_method="env://")
seen.update(rank=dist.get_rank(), world=dist.get_world_size(), backend=dist.get_backend())
seen["environment"] = {v: os.environ[v] for v in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
seen["hooked"] = sys.excepthook is not hook
dist.destroy_process_group()
seen["after"], seen["restored"] = dist.is_initialized(), sys.excepthook is hook
dist.init_process_group()  # again, after destroy
seen["again"] = dist.get_rank()
dist.destroy_process_group()
with open(f"{sys.argv[1]}/rank{seen['rank']}.json", "w") as out:
    json.dump(seen, out)
"""


def test_under_mpiexec_each_process_has_mpis_rank_in_the_group_and_in_the_environment(tmp_path):
    run_mpi(GROUP, 2, tmp_path)
    seen = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    assert [s["rank"] for s in seen] == [0, 1] and [s["again"] for s in seen] == [0, 1]
    for rank, s in enumerate(seen):
        assert (s["world"], s["backend"], s["before"], s["after"]) == (2, "gloo", False, False)
        assert s["environment"] == {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank)}
        assert s["hooked"] and s["restored"]


MISMATCH = """
import minigrad.distributed as dist
dist.init_process_group("mpi", world_size=3)
"""


def test_a_world_size_other_than_mpis_is_refused_on_every_rank(tmp_path):
    result = run_mpi(MISMATCH, 2, tmp_path, check=False)
    assert result.returncode != 0
    assert result.stderr.count("world_size=3 was given, but MPI says 2") == 2


@pytest.fixture
def no_torchrun_variables(monkeypatch):
    pytest.importorskip("mpi4py")
    for variable in TORCHRUN_VARIABLES:
        monkeypatch.delenv(variable, raising=False)  # and unset again after the test
    yield monkeypatch
    if dist.is_initialized():
        dist.destroy_process_group()


def test_a_single_process_without_mpiexec_is_a_world_of_one(no_torchrun_variables):
    hook = sys.excepthook
    dist.init_process_group("mpi", world_size=1, rank=0, timeout=datetime.timedelta(seconds=5))
    assert (dist.get_rank(), dist.get_world_size(), dist.is_initialized()) == (0, 1, True)
    assert sys.excepthook is hook  # nothing else to end when this one fails
    with pytest.raises(dist.DistError, match="already initialised"):
        dist.init_process_group("mpi")


@pytest.mark.parametrize("variable, value", [("WORLD_SIZE", "2"), ("RANK", "1")])
def test_torchruns_variables_that_disagree_with_mpi_are_refused(
    no_torchrun_variables, variable, value
):
    no_torchrun_variables.setenv(variable, value)
    with pytest.raises(dist.DistError, match=f"{variable}={value}, but MPI says .*mpiexec -n N"):
        dist.init_process_group()
    assert not dist.is_initialized()


def test_torchruns_variables_that_agree_with_mpi_are_kept(no_torchrun_variables):
    no_torchrun_variables.setenv("WORLD_SIZE", "1")
    no_torchrun_variables.setenv("RANK", "0")
    dist.init_process_group("gloo")
    assert dist.get_world_size() == 1


def test_destroy_takes_back_the_variables_init_set_and_keeps_the_users(no_torchrun_variables):
    """A world of one sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE where they were unset;
    after destroy_process_group the environment is as before (a later mpiexec child of this
    process would otherwise inherit RANK=0 and WORLD_SIZE=1 and be refused)."""
    import os

    no_torchrun_variables.setenv("LOCAL_RANK", "0")
    dist.init_process_group("mpi")
    assert os.environ["RANK"] == "0" and os.environ["WORLD_SIZE"] == "1"
    dist.destroy_process_group()
    assert [v for v in TORCHRUN_VARIABLES if v in os.environ] == ["LOCAL_RANK"]


BAD_SETTINGS = [
    ({"backend": "nccl"}, "needs CUDA GPUs.*use backend='gloo' or 'mpi'"),
    ({"backend": "ucc"}, "expected backend 'mpi', 'gloo' or None; got 'ucc'"),
    ({"backend": 3}, "backend must be a string; got 3"),
    ({"init_method": 5}, "init_method must be a string; got 5"),
    ({"timeout": 30}, "timeout must be a datetime.timedelta; got 30"),
    ({"device_id": "cuda:0"}, "CPU only; got device_id 'cuda:0'"),
    ({"rank": 1}, "rank=1 was given, but MPI says 0"),
    ({"world_size": "2"}, "world_size must be an int; got '2'"),
]


@pytest.mark.parametrize("settings, message", BAD_SETTINGS)
def test_settings_it_cannot_take_are_refused_naming_them(no_torchrun_variables, settings, message):
    with pytest.raises((TypeError, ValueError, RuntimeError), match=message):
        dist.init_process_group(**settings)
    assert not dist.is_initialized()


@pytest.mark.parametrize("ask", [dist.get_rank, dist.get_world_size, dist.destroy_process_group])
def test_asking_before_init_process_group_says_to_call_it(ask):
    with pytest.raises(dist.DistError, match="has not been initialized; call .*init_process_group"):
        ask()


def test_it_has_torch_distributeds_names():
    torch_distributed = pytest.importorskip("torch.distributed")
    assert all(hasattr(torch_distributed, name) for name in TORCH_NAMES)
    assert all(hasattr(dist, name) for name in TORCH_NAMES)
    assert dist.is_available() is (importlib.util.find_spec("mpi4py") is not None)
    assert set(TORCH_NAMES) <= set(dist.__all__)


def imports_of_nanogpt_and_dcgan(library):
    """nanoGPT's train.py: `from torch.nn.parallel import DistributedDataParallel as DDP` and
    `from torch.distributed import init_process_group, destroy_process_group`; dcgan reads
    torch.nn.parallel as an attribute."""
    parallel = importlib.import_module(f"{library}.nn.parallel")
    distributed = importlib.import_module(f"{library}.distributed")
    top = importlib.import_module(library)
    names = (parallel.DistributedDataParallel.__name__, distributed.init_process_group.__name__)
    names += (distributed.destroy_process_group.__name__,)
    return names, top.nn.parallel is parallel, top.distributed is distributed


def test_nanogpts_and_dcgans_imports_work_as_torchs():
    pytest.importorskip("torch")
    assert imports_of_nanogpt_and_dcgan("minigrad") == imports_of_nanogpt_and_dcgan("torch")


def test_without_mpi4py_it_says_what_to_install(no_torchrun_variables):
    no_torchrun_variables.setitem(sys.modules, "mpi4py", None)  # as if not installed
    assert dist.is_available() is False
    with pytest.raises(ImportError, match=r"pip install 'minigrad\[mpi\]'"):
        dist.init_process_group()
    assert not dist.is_initialized()
