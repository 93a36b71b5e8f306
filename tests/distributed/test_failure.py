"""One rank fails, the run ends: under `mpiexec -n 2`, rank 1 raising (or killed) while rank 0
waits in an all_reduce ends both processes with a non-zero exit and a message naming the rank
and the exception, instead of leaving rank 0 waiting forever (run_mpi's hang guard would fail
the test)."""

import signal

import pytest
from distributed_checks import run_mpi

FAILING = """
import os, signal, sys
import minigrad as mg
import minigrad.distributed as dist

dist.init_process_group("mpi")
dist.barrier()
if dist.get_rank() == 1:
    if sys.argv[2] == "raise":
        raise ValueError("rank 1's batch is bad")
    os.kill(os.getpid(), signal.SIGKILL)
dist.all_reduce(mg.ones(3))  # rank 0 waits here for a rank that is gone
print("rank 0 went on")
"""


def test_an_exception_on_one_rank_ends_every_rank_naming_it(tmp_path):
    result = run_mpi(FAILING, 2, tmp_path, "raise", check=False)
    assert result.returncode != 0
    assert "ValueError: rank 1's batch is bad" in result.stderr  # the traceback, as usual
    assert (
        "minigrad.distributed: rank 1 of 2 failed with ValueError: rank 1's batch is bad; "
        "ending all 2 processes (MPI_Abort)"
    ) in result.stderr
    assert "rank 0 went on" not in result.stdout


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals")
def test_a_rank_killed_by_a_signal_ends_the_run(tmp_path):
    result = run_mpi(FAILING, 2, tmp_path, "kill", check=False)
    assert result.returncode != 0
    assert "signal 9" in result.stdout + result.stderr  # mpiexec's own report
    assert "rank 0 went on" not in result.stdout
