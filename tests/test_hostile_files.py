"""Files made by a careless or hostile hand (issue 14, "Files and command line"): checkpoints
that lie, saves that are killed, links, umasks, tar bombs and folders of huge files. Each test
holds a reproducer and asserts the fixed behaviour: a clear message naming the file, nothing
allocated on the word of a header, nothing a user saved lost or left behind."""

import gzip
import io
import os
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np
from memory_checks import peak_bytes
import pytest

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
from examples.sentiment import data

GIGABYTES = 8 * 10**9
REVIEWS = {
    ("train", "pos"): ["good"],
    ("train", "neg"): ["bad"],
    ("test", "pos"): ["fine"],
    ("test", "neg"): ["poor"],
}


# -- mg.save: modes, links, killed saves, messages -------------------------------------------


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
    assert sorted(os.listdir(tmp_path / "store")) == [
        "model-v1.npz"
    ]  # the temporary went next to the target

    dangling = tmp_path / "runs" / "next.npz"
    dangling.symlink_to(tmp_path / "store" / "model-v2.npz")
    mg.save({"w": np.ones(1)}, dangling)  # like open(): the link's target is created
    assert dangling.is_symlink() and (tmp_path / "store" / "model-v2.npz").is_file()


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


# -- mg.load: folders, lying headers, files too big for memory --------------------------------


def npz_with_member(path, header_shape, data):
    """An .npz whose 'w.npy' member has a float64 .npy header declaring header_shape, followed
    by `data` (bytes), whatever their sizes: a header that may lie."""
    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        member, {"descr": "<f8", "fortran_order": False, "shape": header_shape}
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("w.npy", member.getvalue() + data)
    return path


def test_loading_a_folder_says_it_is_a_folder(tmp_path):
    with pytest.raises(
        IsADirectoryError, match=r"mg.load: '.*' is a folder; expected an .npz file"
    ):
        mg.load(tmp_path)


def test_loading_a_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.npz")
    with pytest.raises(ValueError, match="pipe.npz' is not a regular file"):
        mg.load(tmp_path / "pipe.npz")


@pytest.mark.parametrize("shape, held", [((10**9,), 80), ((10**12,), 80), ((2,), 80)])
def test_a_header_that_lies_about_the_size_is_refused_before_allocating(tmp_path, shape, held):
    path = npz_with_member(
        tmp_path / "liar.npz", shape, np.arange(held // 8, dtype="<f8").tobytes()
    )
    error, peak = peak_bytes(lambda: mg.load(path))
    declared = int(np.prod(shape)) * 8
    assert isinstance(error, ValueError), error
    assert str(error) == (
        f"mg.load: entry 'w' of {str(path)!r} is corrupt: its header declares shape {shape} "
        "float64 "
        f"({declared:,} bytes) but the entry holds {held:,} bytes of data"
    )
    assert peak < 10 * 2**20


def test_an_archive_larger_than_the_memory_left_is_refused_before_allocating(tmp_path, monkeypatch):
    path = tmp_path / "big.npz"
    mg.save({"a": np.ones(1000), "b": np.ones(1500)}, path)
    monkeypatch.setattr(mg.io, "_available_memory", lambda: 16_000)
    with pytest.raises(
        MemoryError,
        match=r"mg.load: '.*big.npz' holds 20,000 bytes of arrays, more than the "
        r"16,000 bytes of memory available",
    ):
        mg.load(path)
    monkeypatch.setattr(mg.io, "_available_memory", lambda: 20_000)
    assert mg.load(path)["b"].shape == (1500,)


def test_the_memory_left_is_read_from_the_system():
    available = mg.io._available_memory()
    assert available is None or 2**20 < available < 2**50


# -- tar bombs and folders of huge files --------------------------------------------------------


def _octal(number, width):
    return b"%0*o\0" % (width - 1, number)


def gnu_sparse_header(name, real_size):
    """The header of a GNU sparse member whose one stored byte sits at the end of a file of
    real_size bytes: tarfile reads it as a real_size file of zeros (the 'hole') and a byte."""
    info = tarfile.TarInfo(name)
    info.type, info.size = tarfile.GNUTYPE_SPARSE, 1
    header = bytearray(info.tobuf(format=tarfile.GNU_FORMAT))
    header[386:410] = _octal(real_size - 1, 12) + _octal(
        1, 12
    )  # sparse map: (offset, bytes stored)
    header[483:495] = _octal(real_size, 12)  # the file's real size
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)  # header checksum
    return bytes(header) + b"x".ljust(512, b"\0")


def tiny_bomb(path, name, real_size):
    path.write_bytes(gzip.compress(gnu_sparse_header(name, real_size) + b"\0" * 1024, mtime=0))
    return path


def test_a_sparse_member_claiming_gigabytes_is_refused_before_allocating(tmp_path):
    path = tiny_bomb(tmp_path / "bomb.tar.gz", "aclImdb/train/pos/0_9.txt", GIGABYTES)
    assert path.stat().st_size < 330
    error, peak = peak_bytes(lambda: data.load_imdb(path, progress=False))
    assert isinstance(error, ValueError), error
    assert str(error).startswith(
        f"IMDB data: aclImdb/train/pos/0_9.txt in {path} is 8,000,000,000 bytes; "
        f"a review is at most 1,048,576"
    )
    assert peak < 10 * 2**20


def test_a_huge_member_that_is_not_a_review_counts_against_the_total(tmp_path):
    path = tiny_bomb(
        tmp_path / "bomb.tar.gz", "aclImdb/imdbEr.txt", GIGABYTES
    )  # would be skipped, for hours
    with pytest.raises(ValueError, match=f"{path} holds more than 1,073,741,824 bytes of files"):
        data.load_imdb(path, progress=False)


def test_too_many_members_are_refused(make_imdb_tarball, monkeypatch):
    path = make_imdb_tarball({key: ["text"] * 5 for key in REVIEWS})  # 20 reviews and 7 folders
    monkeypatch.setattr(data, "MAX_MEMBERS", 20)
    with pytest.raises(
        ValueError,
        match=f"{path} holds more than 20 entries; the official release has about 100,000",
    ):
        data.load_imdb(path, progress=False)
    monkeypatch.setattr(data, "MAX_MEMBERS", 27)
    assert len(data.load_imdb(path, progress=False)["train"]) == 10


def extracted(make_imdb_tarball, tmp_path):
    """A dataset folder (tmp_path/data/aclImdb) extracted from a tiny tarball."""
    with tarfile.open(make_imdb_tarball(REVIEWS)) as archive:
        archive.extractall(tmp_path / "data", filter="data")
    return tmp_path / "data" / "aclImdb"


def test_a_folder_with_a_huge_review_file_is_refused_before_reading(make_imdb_tarball, tmp_path):
    root = extracted(make_imdb_tarball, tmp_path)
    with open(root / "train" / "neg" / "5_2.txt", "wb") as file:
        file.truncate(4 * 10**9)  # a sparse file: 4 GB to read, nothing on disk
    error, peak = peak_bytes(lambda: data.load_imdb(root, progress=False))
    assert isinstance(error, ValueError), error
    assert (
        f"{root / 'train' / 'neg' / '5_2.txt'} is 4,000,000,000 bytes; a review is at most"
        in str(error)
    )
    assert peak < 10 * 2**20


def test_a_folder_of_many_files_is_refused_by_its_total(make_imdb_tarball, tmp_path, monkeypatch):
    root = extracted(make_imdb_tarball, tmp_path)
    monkeypatch.setattr(data, "MAX_TOTAL_BYTES", 10)
    with pytest.raises(ValueError, match=f"{root} holds more than 10 bytes of files"):
        data.load_imdb(root, progress=False)


def test_a_review_file_linking_outside_the_dataset_is_refused(make_imdb_tarball, tmp_path):
    root = extracted(make_imdb_tarball, tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("not a review")
    (root / "test" / "pos" / "7_9.txt").symlink_to(secret)
    with pytest.raises(
        ValueError,
        match=f"unsafe dataset folder {root}: .*7_9.txt links to {secret}, outside the dataset",
    ):
        data.load_imdb(root, progress=False)


def test_a_label_folder_linking_outside_the_dataset_is_refused(make_imdb_tarball, tmp_path):
    root = extracted(make_imdb_tarball, tmp_path)
    (root / "test" / "pos").rename(tmp_path / "elsewhere")
    (root / "test" / "pos").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(
        ValueError, match=f"unsafe dataset folder {root}: .*pos links to .*elsewhere"
    ):
        data.load_imdb(root, progress=False)


def test_links_inside_the_dataset_are_fine(make_imdb_tarball, tmp_path):
    root = extracted(make_imdb_tarball, tmp_path)
    (root / "train" / "pos" / "1_8.txt").symlink_to(root / "test" / "pos" / "0_7.txt")
    linked_root = tmp_path / "linked"
    linked_root.symlink_to(root)  # the dataset folder itself may be a link
    loaded = data.load_imdb(linked_root, progress=False)
    assert loaded["train"] == [("bad", 0), ("good", 1), ("fine", 1)]


@pytest.mark.parametrize(
    "magic, kind",
    [
        (b"\x28\xb5\x2f\xfd", "a zstd-compressed file"),
        (b"PK\x03\x04", "a zip archive"),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    ],
)
def test_other_formats_are_called_unsupported_not_corrupt(tmp_path, magic, kind):
    path = tmp_path / "aclImdb.tar.zst"
    path.write_bytes(magic + bytes(600))
    with pytest.raises(ValueError) as error:
        data.load_imdb(path, progress=False)
    assert str(error.value) == (
        f"IMDB data: {path} is {kind}, an unsupported format; expected a tar archive, plain "
        f"or compressed with gzip (.tar.gz), bzip2 (.tar.bz2) or xz (.tar.xz)"
    )
