"""minigrad/kernels/_numba_cache.py: the kernels' on-disk cache from a read-only install, and a
damaged cache file recompiled (or the folder to delete named). Each run is a fresh interpreter."""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

from kernel_checks import KERNELS_DIR, REPO_ROOT, run_python


def make_read_only(folder):
    """Make folder read-only for this process, even as root (for whom modes do not count:
    then the immutable attribute is used). Returns an undo function."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        os.chmod(folder, 0o555)
        return lambda: os.chmod(folder, 0o755)
    chattr = shutil.which("chattr")
    if (
        chattr is None
        or subprocess.run([chattr, "+i", folder], capture_output=True).returncode != 0
    ):
        pytest.skip(
            "running as root on a file system without chattr +i: cannot make a folder read-only"
        )
    return lambda: subprocess.run([chattr, "-i", folder], check=True)


CACHE_PROBE = """
    import json, sys
    import numpy as np
    import kernels_copy as k
    from kernels_copy import embedding
    grad = k.embedding_backward(np.array([[0, 2, 2]]), np.ones((1, 3, 4), np.float32), 3)
    assert grad[2, 0] == 2.0 and grad[1, 0] == 0.0
    stats = embedding._scatter_add.stats
    hits, misses = sum(stats.cache_hits.values()), sum(stats.cache_misses.values())
    print(json.dumps({"hits": hits, "misses": misses}))
"""


def test_cache_works_from_a_read_only_install():
    """Installed read-only, kernels cache per user: in ~/.cache/numba (Numba's own fallback),
    or, when that is not writable either, in a per-user folder under the temp dir."""
    root = tempfile.mkdtemp(prefix="minigrad-ro-")
    undo = []
    try:
        site = os.path.join(root, "site")
        package = os.path.join(site, "kernels_copy")
        shutil.copytree(KERNELS_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
        home, tmp, locked_home = (
            os.path.join(root, name) for name in ("home", "tmp", "locked-home")
        )
        for folder in (home, tmp, locked_home):
            os.makedirs(folder)
        undo += [make_read_only(package), make_read_only(locked_home)]

        env = {"HOME": home, "XDG_CACHE_HOME": os.path.join(home, ".cache"), "TMPDIR": tmp}
        first = run_python(CACHE_PROBE, env=env, cwd=site)
        second = run_python(CACHE_PROBE, env=env, cwd=site)
        assert first["misses"] == 1 and second == {"hits": 1, "misses": 0}
        assert os.listdir(os.path.join(home, ".cache", "numba"))
        assert not os.path.exists(os.path.join(package, "__pycache__"))

        env = {"HOME": locked_home, "XDG_CACHE_HOME": locked_home, "TMPDIR": tmp}
        first = run_python(CACHE_PROBE, env=env, cwd=site)
        second = run_python(CACHE_PROBE, env=env, cwd=site)
        assert first["misses"] == 1 and second == {"hits": 1, "misses": 0}
        assert [name for name in os.listdir(tmp) if name.startswith("minigrad-numba-cache-")]
        assert not os.listdir(locked_home)
    finally:
        for restore in undo:
            restore()
        shutil.rmtree(root, ignore_errors=True)


def numba_cache_files(cache_dir, kernel):
    """(index file, data files) of one kernel in a NUMBA_CACHE_DIR."""
    index = glob.glob(os.path.join(cache_dir, "**", f"{kernel}-*.nbi"), recursive=True)
    data = glob.glob(os.path.join(cache_dir, "**", f"{kernel}-*.nbc"), recursive=True)
    assert len(index) == 1 and data, (index, data)
    return index[0], data


DAMAGED_CACHE_PROBE = """
    import json, warnings
    import numpy as np
    from minigrad.kernels import embedding
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids, upstream = np.array([[0, 2, 2]]), np.ones((1, 3, 4), np.float32)
        grad = embedding.embedding_backward(ids, upstream, 3)
    stats = embedding._scatter_add.stats
    print(json.dumps({"right": bool(grad[2, 0] == 2.0 and grad[1, 0] == 0.0),
                      "hits": sum(stats.cache_hits.values()),
                      "misses": sum(stats.cache_misses.values()),
                      "warnings": [str(w.message) for w in caught
                                   if "Numba cache" in str(w.message)]}))
"""


@pytest.mark.parametrize(
    "damaged, damage", [("data", "truncated"), ("data", "empty"), ("index", "junk")]
)
def test_a_damaged_cache_file_is_recompiled_and_repaired(damaged, damage, tmp_path):
    """Before: every later run raised (pickle's "data was truncated", EOFError ...) until the
    cache folder was deleted by hand. Now: one warning naming the folder, a recompile, and the
    run after that loads the repaired cache."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    first = run_python(DAMAGED_CACHE_PROBE, env=env)
    assert first == {"right": True, "hits": 0, "misses": 1, "warnings": []}
    index, data = numba_cache_files(tmp_path, "embedding._scatter_add")
    path = data[0] if damaged == "data" else index
    content = open(path, "rb").read()
    with open(path, "wb") as file:
        file.write(
            {
                "truncated": content[: len(content) // 3],
                "junk": bytes(range(256)) * 4,
                "empty": b"",
            }[damage]
        )

    recovered = run_python(DAMAGED_CACHE_PROBE, env=env)
    assert recovered["right"] and recovered["misses"] == 1 and len(recovered["warnings"]) == 1
    assert (
        "_scatter_add" in recovered["warnings"][0]
        and os.path.dirname(path) in recovered["warnings"][0]
    )
    assert run_python(DAMAGED_CACHE_PROBE, env=env) == {
        "right": True,
        "hits": 1,
        "misses": 0,
        "warnings": [],
    }


def test_a_damaged_cache_that_cannot_be_repaired_names_the_folder_to_delete(tmp_path):
    # Numba skips a cache folder it cannot write to, so the folder stays writable here and the
    # probe is refused the deletion of the damaged kernel's index (as a file system may refuse it)
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    run_python(DAMAGED_CACHE_PROBE, env=env)
    index, data = numba_cache_files(tmp_path, "embedding._scatter_add")
    with open(data[0], "wb") as file:
        file.write(b"not a pickle")
    refuse_removal = """
        import errno, os
        def remove(path):
            raise PermissionError(errno.EPERM, "Operation not permitted", path)
        os.remove = remove
    """
    full_env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=REPO_ROOT)
    full_env.pop("MINIGRAD_KERNELS", None)
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(refuse_removal) + textwrap.dedent(DAMAGED_CACHE_PROBE),
        ],
        cwd=REPO_ROOT,
        env=full_env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert (
        "RuntimeError" in result.stderr
        and f"delete the folder {os.path.dirname(index)}" in result.stderr
    )
