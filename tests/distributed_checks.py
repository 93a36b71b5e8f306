"""What the tests of minigrad.distributed share: a script run under `mpiexec -n N`, each rank
leaving its numbers in a file for the test to compare.

The tests skip when mpi4py or mpiexec is missing (the extra `mpi`, which the `test` extra
includes, so CI runs them). MPICH's mpiexec runs as root without a flag; Open MPI's needs
--allow-run-as-root, added when the launcher is Open MPI's.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# A hang guard, not a speed limit: a run that ends normally takes a few seconds.
HANG_GUARD_SECONDS = 120


def mpiexec():
    """The launcher beside this Python (where pip puts MPICH's wheel's), else on PATH."""
    pytest.importorskip("mpi4py")
    beside = pathlib.Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("mpiexec not found: pip install 'minigrad[mpi]'")
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    root_flag = ["--allow-run-as-root"] if "Open MPI" in version and os.geteuid() == 0 else []
    return [found, *root_flag]


def run_mpi(script, processes, folder, *arguments, check=True):
    """Run `script` (Python source) as `mpiexec -n processes python script.py folder
    *arguments` from the repository's root; returns the CompletedProcess. check: fail the test,
    showing stderr, unless the run exits 0."""
    path = pathlib.Path(folder) / "script.py"
    path.write_text(textwrap.dedent(script))
    environment = {k: v for k, v in os.environ.items() if k not in TORCHRUN_VARIABLES}
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), environment.get("PYTHONPATH", "")])
    command = [*mpiexec(), "-n", str(processes), sys.executable, str(path), str(folder)]
    result = subprocess.run(
        [*command, *map(str, arguments)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=environment,
        timeout=HANG_GUARD_SECONDS,
    )
    if check:
        assert result.returncode == 0, result.stderr[-4000:]
    return result


TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE")


def rank_results(folder, processes):
    """The arrays each rank saved as folder/rank<k>.npz, as a list of dicts."""
    results = []
    for rank in range(processes):
        with np.load(pathlib.Path(folder) / f"rank{rank}.npz") as saved:
            results.append({name: saved[name] for name in saved.files})
    return results
