"""The backend switch (minigrad/kernels/__init__.py): MINIGRAD_KERNELS=numpy makes every kernel
its twin, an unknown backend is an error, and importing minigrad (and running kernels) changes
nothing outside minigrad: glibc's malloc, Numba's classes, numba.config and the environment are
as they were. Each run is a fresh interpreter."""

import os
import subprocess
import sys
import textwrap

import pytest

from kernel_checks import REPO_ROOT, run_python


def test_minigrad_kernels_numpy_selects_the_twins():
    report = run_python(
        """
        import json, sys
        import minigrad.kernels as k
        import numpy as np
        import minigrad as mg
        from minigrad import nn
        embedding, lstm = nn.Embedding(10, 3), nn.LSTM(3, 4, batch_first=True, bidirectional=True)
        output, _ = lstm(embedding(np.array([[1, 2, 3], [4, 5, 0]])), lengths=[3, 2])
        output.sum().backward()
        print(json.dumps({"backend": k.BACKEND,
                          "twins": all(getattr(k, n) is getattr(k.reference, n) for n in k.KERNELS),
                          "numba_kernels_loaded": "minigrad.kernels.softmax" in sys.modules,
                          "numba_imported": "numba" in sys.modules}))
    """,
        env={"MINIGRAD_KERNELS": "numpy"},
    )
    assert report == {
        "backend": "numpy",
        "twins": True,
        "numba_kernels_loaded": False,
        "numba_imported": False,
    }


def test_unknown_backend_is_an_error():
    result = subprocess.run(
        [sys.executable, "-c", "import minigrad.kernels"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, MINIGRAD_KERNELS="cuda", PYTHONPATH=REPO_ROOT),
    )
    assert result.returncode != 0
    assert "MINIGRAD_KERNELS must be 'numba' or 'numpy', got 'cuda'" in result.stderr


# What a fresh process's glibc malloc does, observably: whether a 31 MiB block is mapped on its
# own (glibc's default threshold starts at 128 KiB and rises only to blocks freed before;
# tune_malloc's is 32 MiB), and how much of 100 MiB of small blocks freed at the top of the heap
# it keeps (glibc's default trims above at most 64 MiB; tune_malloc's above 256 MiB).
MALLOC_STATE = """
    import ctypes

    class Mallinfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks",
                    "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = Mallinfo2
    libc.malloc.argtypes, libc.malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]

    def malloc_state():
        mapped = libc.mallinfo2().hblks
        block = libc.malloc(31 << 20)
        mapped = libc.mallinfo2().hblks > mapped
        libc.free(block)
        blocks = [libc.malloc(100 << 10) for _ in range(1000)]
        for block in reversed(blocks):
            libc.free(block)
        return {"big_block_mapped": mapped, "freed_mib_kept": libc.mallinfo2().keepcost >> 20}
"""

IMPORT_PROBE = """
    import json, os
    import numpy as np
    import numba
    from numba.core import caching, dispatcher

    def classes(module):
        return {name: {key: id(value) for key, value in vars(cls).items()}
                for name, cls in vars(module).items() if isinstance(cls, type)}

    def outside():
        return {"classes": [classes(caching), classes(dispatcher)],
                "config": {key: repr(value) for key, value in vars(numba.config).items()
                           if key.isupper()},
                "environment": dict(os.environ)}

    before, load_overload = outside(), caching.Cache.load_overload
    if MODE != "without minigrad":
        import minigrad as mg
        from minigrad import nn
        x = mg.tensor(np.random.default_rng(0).standard_normal((1024, 128)).astype(np.float32),
                      requires_grad=True)
        mg.softmax(x, -1).sum().backward()  # parallel kernels: Numba's pool starts
        embedding = nn.Embedding(10, 4)
        embedding(np.array([[1, 2, 2]])).sum().backward()
        mg.optim.Adam(embedding.parameters()).step()
    after = outside()
    state = malloc_state()
    report = {"same": before == after}
    report["load_overload"] = caching.Cache.load_overload is load_overload
    if MODE == "tuned":
        report["tuned"] = mg.kernels.tune_malloc()
        state = malloc_state()
    print(json.dumps({**report, **state}))
"""


def probe(mode, backend):
    """The probe's report in a fresh interpreter; mode "without minigrad", "imported" or
    "tuned" (imported, then tune_malloc())."""
    code = f"MODE = {mode!r}\n" + textwrap.dedent(MALLOC_STATE) + textwrap.dedent(IMPORT_PROBE)
    return run_python(code, {"MINIGRAD_KERNELS": backend})


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc: Linux only")
@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_importing_minigrad_and_running_kernels_changes_nothing_outside_it(backend):
    """Importing minigrad used to retune glibc's malloc for the whole process and to replace
    numba's Cache.load_overload for every Numba user. Now a process that imports minigrad and
    runs kernels (the Numba pool started, the kernels loaded from their cache) has glibc's own
    malloc thresholds, as one that never imported it, and the same classes in numba.core.caching and
    numba.core.dispatcher, numba.config and environment it had before; until it asks for
    tune_malloc(), which the probe does see."""
    without = probe("without minigrad", backend)
    imported = probe("imported", backend)
    tuned = probe("tuned", backend)
    for untuned in (without, imported):  # glibc's own thresholds: at most 2 x 32 MiB kept
        assert untuned["big_block_mapped"] is True and untuned["freed_mib_kept"] < 64, untuned
    assert imported["same"] is imported["load_overload"] is True, imported
    assert tuned["tuned"] is True and tuned["big_block_mapped"] is False, tuned
    assert tuned["freed_mib_kept"] >= 90, tuned
