"""Every write through atomic_file (minigrad/io/atomic.py), as mg.save makes it: a failed,
interrupted or killed save keeps the old file and leaves no temporary behind (the next save
cleans what a killed one left, of its own target only), saves of one path from several threads
never take each other's temporaries, a new file gets the mode open would give it and an existing
one keeps its own, links are written through, special and read-only files are not replaced, and
errors name the path."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
from thread_helpers import run_in_threads


# -- the old file survives a failed or interrupted write ---------------------------------------


def test_atomic_file_keeps_the_old_file_when_the_block_fails(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"kept")
    with pytest.raises(RuntimeError, match="halfway"):
        with mg.io.atomic_file(path) as file:
            file.write(b"half a new file")
            raise RuntimeError("halfway")
    assert path.read_bytes() == b"kept"
    assert os.listdir(tmp_path) == ["notes.txt"]
    with mg.io.atomic_file(str(path)) as file:
        file.write(b"new")
    assert path.read_bytes() == b"new" and os.listdir(tmp_path) == ["notes.txt"]


def test_failed_write_leaves_the_existing_file_untouched(tmp_path, monkeypatch):
    path = tmp_path / "model.npz"
    mg.io.save({"w": np.arange(4.0)}, path)
    before = path.read_bytes()
    real_write = np.lib.format.write_array
    calls = []

    def failing_write(file, array, **kwargs):  # the disk "fills up" after the first array
        calls.append(1)
        if len(calls) > 1:
            raise OSError("No space left on device")
        real_write(file, array, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", failing_write)
    with pytest.raises(OSError, match="No space left"):
        mg.io.save({"w": np.zeros(4), "b": np.zeros(2)}, path)
    assert len(calls) == 2
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["model.npz"]
    monkeypatch.undo()
    np.testing.assert_array_equal(mg.io.load(path)["w"], np.arange(4.0))


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, MemoryError])
def test_an_interrupted_save_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path, monkeypatch, interrupt
):
    path = tmp_path / "ckpt.npz"
    mg.save({"w": np.arange(3.0)}, path)
    before = path.read_bytes()
    real_write = np.lib.format.write_array

    def failing(file, array, **kwargs):
        real_write(file, array, **kwargs)
        raise interrupt()

    monkeypatch.setattr(np.lib.format, "write_array", failing)
    with pytest.raises(interrupt):
        mg.save({"w": np.zeros(1000), "b": np.ones(2)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.npz"]
    with pytest.raises(TypeError, match="'bad'"):  # a value refused before anything is written
        mg.save({"w": np.zeros(2), "bad": object()}, path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["ckpt.npz"]
    np.testing.assert_array_equal(mg.load(path)["w"], np.arange(3.0))


SLOW_SAVE = """
import sys, time
import numpy as np
import minigrad as mg

real_write = np.lib.format.write_array

def write_then_hang(file, array, **options):
    real_write(file, array, **options)
    print("writing", flush=True)  # the temporary now holds data: the parent kills us here
    time.sleep(3600)

np.lib.format.write_array = write_then_hang
mg.save({"w": np.ones(250_000)}, sys.argv[1])
"""


def test_a_killed_save_leaves_no_temporary_behind_after_the_next_save(tmp_path):
    path = tmp_path / "model.npz"
    mg.save({"w": np.arange(3.0)}, path)
    child = subprocess.Popen(
        [sys.executable, "-c", SLOW_SAVE, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert child.stdout.readline() == "writing\n"
        temporaries = [name for name in os.listdir(tmp_path) if name != "model.npz"]
        assert (
            len(temporaries) == 1
            and temporaries[0].startswith(".model.npz.")
            and temporaries[0].endswith(".tmp")
        )
        mg.save({"w": np.arange(4.0)}, path)  # the child's save is alive: its temporary must stay
        assert sorted(os.listdir(tmp_path)) == sorted(["model.npz", *temporaries])
    finally:
        child.kill()  # as kill -9: no cleanup of its own
        child.wait()
        child.stdout.close()
    assert os.path.getsize(tmp_path / temporaries[0]) > 1_000_000  # what a killed save leaves
    np.testing.assert_array_equal(mg.load(path)["w"], np.arange(4.0))  # loading does not clean up
    assert temporaries[0] in os.listdir(tmp_path)
    mg.save({"w": np.arange(5.0)}, path)
    assert os.listdir(tmp_path) == ["model.npz"]
    np.testing.assert_array_equal(mg.load(path)["w"], np.arange(5.0))


def test_only_temporaries_of_the_same_target_are_cleaned(tmp_path):
    names = [
        ".model.npz.k3x9_q2a.tmp",  # a stale temporary of model.npz (mkstemp-style name)
        ".other.npz.k3x9_q2a.tmp",  # another file's
        ".model.npz.tmp",
        "model.npz.k3x9_q2a.tmp",
        ".model.npz.k3x9_q2a.tmp.bak",
        "notes.txt",
    ]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    mg.save({"w": np.ones(1)}, tmp_path / "model.npz")
    assert sorted(os.listdir(tmp_path)) == sorted(["model.npz", *names[1:]])


def test_saves_of_one_path_from_several_threads_never_take_each_others_temporaries(tmp_path):
    """Each save cleans up abandoned temporaries of its path first; live ones (locked by a save
    in progress) must survive, or that save's rename would fail."""
    path = tmp_path / "model.npz"

    def saver(value):
        for _ in range(15):
            mg.io.save({"w": np.full(20_000, float(value))}, path)

    # raises what a saver raised
    run_in_threads(*(lambda value=value: saver(value) for value in range(4)))
    assert os.listdir(tmp_path) == ["model.npz"]
    w = mg.io.load(path)["w"]
    assert w.shape == (20_000,) and np.all(w == w[0]) and w[0] in range(4)


# -- modes, links, special files, messages -----------------------------------------------------


@pytest.fixture
def umask():
    """Set the process umask for one test (os.umask returns the old one, restored after)."""
    old = os.umask(0o022)
    yield lambda mask: os.umask(mask)
    os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_a_new_file_gets_the_mode_open_would_give_it(tmp_path, umask, mask, mode):
    umask(mask)
    mg.save({"w": np.ones(3)}, tmp_path / "model.npz")
    with open(tmp_path / "by_open.txt", "w"):
        pass
    assert stat.S_IMODE(os.stat(tmp_path / "model.npz").st_mode) == mode
    assert stat.S_IMODE(os.stat(tmp_path / "by_open.txt").st_mode) == mode


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o640, 0o604])
def test_an_existing_file_keeps_its_mode(tmp_path, umask, mode):
    umask(0o077)  # the umask must not matter for a file that exists
    path = tmp_path / "model.npz"
    mg.save({"w": np.ones(3)}, path)
    os.chmod(path, mode)
    mg.save({"w": np.zeros(3)}, path)
    assert stat.S_IMODE(os.stat(path).st_mode) == mode
    np.testing.assert_array_equal(mg.load(path)["w"], np.zeros(3))


def test_a_read_only_file_is_refused_as_open_refuses_it(tmp_path, monkeypatch):
    """Root may write anything (the tests may run as root), so the permission answer is faked."""
    path = tmp_path / "model.npz"
    mg.save({"w": np.ones(3)}, path)
    os.chmod(path, 0o444)
    monkeypatch.setattr(os, "access", lambda target, mode: False)
    with pytest.raises(
        PermissionError,
        match=r"cannot write '.*model.npz': the file is read-only \(mode -r--r--r--\)",
    ):
        mg.save({"w": np.zeros(3)}, path)
    monkeypatch.undo()
    np.testing.assert_array_equal(mg.load(path)["w"], np.ones(3))


def test_save_writes_through_a_symlink_and_keeps_the_link(tmp_path):
    (tmp_path / "store").mkdir()
    (tmp_path / "runs").mkdir()
    target = tmp_path / "store" / "model-v1.npz"
    mg.save({"w": np.ones(2)}, target)
    link = tmp_path / "runs" / "latest.npz"
    link.symlink_to(os.path.relpath(target, link.parent))  # relative, from another folder
    mg.save({"w": np.full(2, 7.0)}, link)
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(target, link.parent)
    np.testing.assert_array_equal(mg.load(target)["w"], [7.0, 7.0])
    assert sorted(os.listdir(tmp_path / "runs")) == ["latest.npz"]
    # the temporary went next to the target
    assert sorted(os.listdir(tmp_path / "store")) == ["model-v1.npz"]

    dangling = tmp_path / "runs" / "next.npz"
    dangling.symlink_to(tmp_path / "store" / "model-v2.npz")
    mg.save({"w": np.ones(1)}, dangling)  # like open(): the link's target is created
    assert dangling.is_symlink() and (tmp_path / "store" / "model-v2.npz").is_file()


@pytest.mark.parametrize("through_link", [False, True])
def test_save_never_replaces_a_special_file(tmp_path, through_link):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    target = fifo
    if through_link:
        target = tmp_path / "link.npz"
        os.symlink(fifo, target)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so a write into the pipe would not block
    try:
        try:
            mg.save({"w": np.zeros(2)}, target)
        except (OSError, ValueError):
            pass  # refusing is fine too
        assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
    finally:
        os.close(reader)


def test_save_errors_name_the_path(tmp_path, monkeypatch):
    with pytest.raises(
        FileNotFoundError,
        match=r"cannot write '.*missing.model.npz': the folder '.*missing' does not exist",
    ):
        mg.save({"w": np.ones(1)}, tmp_path / "missing" / "model.npz")
    with pytest.raises(IsADirectoryError, match=r"cannot write '.*tmp.*': it is a folder"):
        mg.save({"w": np.ones(1)}, tmp_path)
    with pytest.raises(TypeError, match=r"mg.save to '.*model.npz': 'names' has dtype object"):
        mg.save({"names": np.array([None])}, tmp_path / "model.npz")

    def full_disk(file, array, **options):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np.lib.format, "write_array", full_disk)
    with pytest.raises(
        OSError, match=r"cannot write '.*model.npz': \[Errno 28\] No space left on device"
    ) as error:
        mg.save({"w": np.ones(1)}, tmp_path / "model.npz")
    assert error.value.errno == 28
    assert os.listdir(tmp_path) == []
