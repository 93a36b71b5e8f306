"""The .npz archive read member by member (minigrad/io/npz.py): files that must be refused
(pickled members, raw pickles, truncated, tampered and hostile archives, members that are not
.npy, names with '..'), each naming the file; numpy's own savez files read; and archives whose zip
directory or .npy headers lie (issue 27, findings 6-7), built here byte by byte, refused with a
message naming the file and the member before the gigabytes they claim are allocated
(tracemalloc's peak stays at a few MB), within the memory left (the system's, the cgroup's, the
rlimit's)."""

import io
import os
import struct
import subprocess
import sys
import zipfile
import zlib

import numpy as np
import pytest

import minigrad as mg
import minigrad.io  # noqa: F401  (mg.io)
import minigrad.io.npz as npz
from memory_checks import peak_bytes


SMALL_PEAK = 4 * 2**20  # bytes: what reading a few headers may take, far below any claim here


def npy_header(shape, descr="<f8", version=1, length=None):
    """The .npy header of an array (shape written as given, negative or not); `length` claims
    another header length than the text has (version 2 holds up to 4 GiB)."""
    text = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple(shape)!r}, }}"
    length_format = "<H" if version == 1 else "<I"
    prefix = 6 + 2 + struct.calcsize(length_format)
    text = text.ljust(-(-(prefix + len(text) + 1) // 64) * 64 - prefix - 1) + "\n"
    claimed = len(text) if length is None else length
    return b"\x93NUMPY" + bytes([version, 0]) + struct.pack(length_format, claimed) + text.encode()


def zip_bytes(name, stored, *, method=0, file_size=None, compress_size=None, crc=None, flags=0):
    """A one-member zip: `stored` (the member's bytes as they lie in the file: compressed for
    method 8) under `name`, with the directory's claims given (or true for a stored member)."""
    name = name.encode()
    crc = (zlib.crc32(stored) if method == 0 else 0) if crc is None else crc
    file_size = len(stored) if file_size is None else file_size
    compress_size = len(stored) if compress_size is None else compress_size
    fields = (flags, method, 0, 0x21, crc, compress_size, file_size, len(name))
    local = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, *fields, 0) + name
    central = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, *fields, 0, 0, 0, 0, 0, 0)
    central += name
    start = len(local) + len(stored)
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(central), start, 0)
    return local + stored + central + end


def deflated(chunks):
    """The raw deflate stream (as a zip holds it) of the byte strings `chunks`, and their length."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    stream, total = [], 0
    for chunk in chunks:
        stream.append(compressor.compress(chunk))
        total += len(chunk)
    stream.append(compressor.flush())
    return b"".join(stream), total


def refused(path, action=None):
    """The error mg.load(path) raises (checked to be minigrad's, naming the file), and the peak."""
    error, peak = peak_bytes(action or (lambda: mg.load(path)))
    assert isinstance(error, (ValueError, MemoryError)), repr(error)
    assert str(error).startswith("mg.load: "), str(error)
    assert repr(str(path)) in str(error), str(error)
    return str(error), peak


def test_the_crafted_zip_is_a_zip(tmp_path):
    """The builder above writes what zipfile and mg.load read as a valid archive."""
    path = tmp_path / "plain.npz"
    data = io.BytesIO()
    np.lib.format.write_array(data, np.arange(4.0))
    stored = data.getvalue()
    path.write_bytes(zip_bytes("w.npy", stored))
    np.testing.assert_array_equal(mg.load(path)["w"], np.arange(4.0))


# -- files that must be refused, each naming the file ------------------------------------------


def test_pickled_npz_is_refused_without_unpickling(tmp_path):
    marker = tmp_path / "was_unpickled"
    path = tmp_path / "pickled.npz"
    np.savez(path, weight=np.zeros(2), payload=np.array([_Tripwire(str(marker))], dtype=object))
    with pytest.raises(ValueError, match=r"'payload'.*pickled.*refusing"):
        mg.io.load(path)
    assert not marker.exists()


class _Tripwire:
    """Unpickling this object creates a file: the test proves load never unpickles it."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_raw_pickle_file_is_refused(tmp_path):
    import pickle

    marker = tmp_path / "was_unpickled"
    path = tmp_path / "model.npz"
    path.write_bytes(pickle.dumps(_Tripwire(str(marker))))
    with pytest.raises(ValueError, match="not an .npz archive"):
        mg.io.load(path)
    assert not marker.exists()


def test_corrupt_and_tampered_files_are_refused(tmp_path):
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"this is not a checkpoint")
    with pytest.raises(ValueError, match=r"garbage.npz.*not an .npz archive"):
        mg.io.load(garbage)

    good = tmp_path / "good.npz"
    mg.io.save({"w": np.arange(1000.0)}, good)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:3000])
    with pytest.raises(ValueError, match="truncated.npz"):
        mg.io.load(truncated)

    flipped = bytearray(good.read_bytes())
    flipped[1000] ^= 0xFF  # inside the array data: the zip checksum no longer matches
    tampered = tmp_path / "tampered.npz"
    tampered.write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match=r"'w' of .*tampered.npz.*corrupt"):
        mg.io.load(tampered)

    other = tmp_path / "other.npz"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("notes.txt", b"hello")
    with pytest.raises(ValueError, match="'notes.txt'.*not a .npy array"):
        mg.io.load(other)

    stuffed = tmp_path / "stuffed.npz"  # an empty dict's folder entry must hold nothing
    with zipfile.ZipFile(stuffed, "w") as archive:
        archive.writestr("act/", b"\x93NUMPY hidden")
    with pytest.raises(
        ValueError, match="'act/' of .*stuffed.npz.*folder entry of an empty dict holds 13 bytes"
    ):
        mg.io.load(stuffed)

    both = tmp_path / "both.npz"  # one name as an array and as an empty dict
    mg.io.save({"act": np.zeros(2)}, both)
    with zipfile.ZipFile(both, "a") as archive:
        archive.writestr("act/", b"")
    with pytest.raises(ValueError, match="both.npz' holds an entry twice"):
        mg.io.load(both)

    single = tmp_path / "single.npy"
    np.save(single, np.zeros(3))
    with pytest.raises(ValueError, match="not an .npz archive"):
        mg.io.load(single)


def _npy(array=None, header=None, payload=b""):
    buffer = io.BytesIO()
    if header is None:
        np.lib.format.write_array(
            buffer, np.arange(3) if array is None else array, allow_pickle=True
        )
    else:
        np.lib.format.write_array_header_1_0(buffer, header)
        buffer.write(payload)
    return buffer.getvalue()


def _hostile(tmp_path, kind):
    path = tmp_path / f"{kind}.npz"
    if kind == "truncated":
        mg.save({"w": np.arange(1000.0)}, tmp_path / "good.npz")
        raw = (tmp_path / "good.npz").read_bytes()
        path.write_bytes(raw[: len(raw) // 2])
    elif kind == "pickled":
        np.savez(path, w=np.array([{"a": 1}], dtype=object))
    elif kind == "huge shape":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(
                "w.npy",
                _npy(
                    header={"descr": "<f8", "fortran_order": False, "shape": (10**12,)},
                    payload=b"\0" * 64,
                ),
            )
    elif kind == "dev zero":
        os.symlink("/dev/zero", path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "missing":
        pass
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "lone npy":
        path.write_bytes(_npy())
    elif kind == "not npy member":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("w.txt", b"hello")
    return path


@pytest.mark.parametrize(
    "kind, error, words",
    [
        ("truncated", ValueError, "not a valid .npz"),
        ("pickled", ValueError, "pickled"),
        ("huge shape", ValueError, "corrupt"),
        ("dev zero", ValueError, "not a regular file"),
        ("folder", IsADirectoryError, "folder"),
        ("missing", FileNotFoundError, "no such file"),
        ("empty", ValueError, "not an .npz"),
        ("lone npy", ValueError, "not an .npz"),
        ("not npy member", ValueError, "not a .npy"),
    ],
)
def test_hostile_files_are_refused_naming_the_file(tmp_path, kind, error, words):
    path = _hostile(tmp_path, kind)
    with pytest.raises(error, match=words) as info:
        mg.load(path)
    assert str(path) in str(info.value)


def test_zip_member_names_with_dot_dot_are_never_written_out(tmp_path):
    inner = tmp_path / "inner"
    inner.mkdir()
    path = inner / "evil.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("../escaped.npy", _npy())
        archive.writestr("/absolute.npy", _npy())
    try:
        loaded = mg.load(path)
    except ValueError:
        loaded = None
    assert sorted(os.listdir(tmp_path)) == ["inner"] and os.listdir(inner) == ["evil.npz"]
    assert not os.path.exists("/absolute.npy")
    if loaded is not None:  # read as data only: the names are keys, nothing is extracted
        assert sorted(loaded) == ["../escaped", "/absolute"]


@pytest.mark.parametrize("writer", [np.savez, np.savez_compressed])
def test_load_reads_numpy_savez_files(tmp_path, writer):
    path = tmp_path / "plain.npz"
    fortran = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    writer(
        path,
        a=np.arange(3),
        b=np.ones((2, 2), np.float32),
        big_endian=np.arange(4, dtype=">i4"),
        fortran=fortran,
        empty=np.zeros((0, 5)),
        flag=np.array(True),
    )
    loaded = mg.io.load(path)
    assert list(loaded) == ["a", "b", "big_endian", "fortran", "empty", "flag"]
    np.testing.assert_array_equal(loaded["b"], np.ones((2, 2)))
    assert loaded["big_endian"].dtype == np.dtype(">i4") and loaded["big_endian"].tolist() == [
        0,
        1,
        2,
        3,
    ]
    np.testing.assert_array_equal(loaded["fortran"], fortran)
    assert loaded["empty"].shape == (0, 5) and loaded["flag"].shape == () and bool(loaded["flag"])


# -- 6: sizes checked against the file's real data and the process's limits --------------------


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
        f"float64 ({declared:,} bytes) but the entry holds {held:,} bytes of data"
    )
    assert peak < 10 * 2**20


def test_a_tiny_stored_file_claiming_gigabytes_is_refused_before_allocating(tmp_path):
    header = npy_header((375_000_000,))  # 3,000,000,000 bytes of float64
    claim = len(header) + 3_000_000_000
    path = tmp_path / "tiny.npz"
    path.write_bytes(zip_bytes("w.npy", header + bytes(80), file_size=claim, compress_size=claim))
    assert path.stat().st_size < 400
    message, peak = refused(path)
    assert "'w.npy'" in message and "is truncated" in message
    assert f"its {claim:,} bytes of data would end" in message
    assert peak < SMALL_PEAK


def test_a_stored_member_claiming_more_than_it_stores_is_refused(tmp_path):
    header = npy_header((375_000_000,))
    path = tmp_path / "claims.npz"
    path.write_bytes(zip_bytes("w.npy", header + bytes(80), file_size=len(header) + 3 * 10**9))
    message, peak = refused(path)
    assert message == (
        f"mg.load: entry 'w.npy' of {str(path)!r} is corrupt: "
        f"it claims {len(header) + 3 * 10**9:,} bytes but stores {len(header) + 80:,} "
        "(uncompressed, the two are equal)"
    )
    assert peak < SMALL_PEAK


def test_a_deflated_member_claiming_more_than_deflate_can_hold_is_refused(tmp_path):
    header = npy_header((375_000_000,))
    stream, _ = deflated([header, bytes(80)])
    path = tmp_path / "ratio.npz"
    path.write_bytes(zip_bytes("w.npy", stream, method=8, file_size=len(header) + 3 * 10**9))
    message, peak = refused(path)
    assert "more than its" in message and "compressed bytes can inflate to" in message
    assert peak < SMALL_PEAK


def test_a_deflate_bomb_in_the_npy_header_is_not_inflated(tmp_path):
    """A version 2.0 header claiming 256 MiB of header text, deflated from zeros: numpy reads
    a header in full before checking its length; mg.load reads at most 10,000 bytes of it."""
    length = 2**28
    header = npy_header((1,), version=2, length=length)[:12]
    stream, total = deflated([header, *[bytes(2**20)] * (length // 2**20)])
    path = tmp_path / "header_bomb.npz"
    path.write_bytes(zip_bytes("w.npy", stream, method=8, file_size=total))
    assert path.stat().st_size < 2**20
    message, peak = refused(path)
    assert message == (
        f"mg.load: entry 'w' of {str(path)!r} has no valid .npy header "
        f"(its header claims {length:,} bytes; at most 10,000 are read)"
    )
    assert peak < SMALL_PEAK


def test_a_deflated_member_that_ends_early_costs_only_what_it_held(tmp_path):
    """It claims 256 MiB (within deflate's ratio of its 300 KB) but inflates to 300 KB: the
    buffer grows with the bytes inflated instead of being made at the size claimed."""
    header = npy_header((2**25,))
    noise = np.random.default_rng(0).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
    stream, _ = deflated([header, noise])
    path = tmp_path / "short.npz"
    path.write_bytes(zip_bytes("w.npy", stream, method=8, file_size=len(header) + 2**28))
    message, peak = refused(path)
    assert message.startswith(f"mg.load: entry 'w' of {str(path)!r} is corrupt")
    assert peak < SMALL_PEAK


BOMB_UNDER_RLIMIT = """
import resource, sys, tracemalloc
import minigrad as mg
with open("/proc/self/status") as status:
    used = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (used + 256 * 2**20, resource.RLIM_INFINITY))
tracemalloc.start()
try:
    mg.load(sys.argv[1])
except MemoryError as error:
    print(tracemalloc.get_traced_memory()[1])
    print(error)
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc/self/status")
def test_a_deflate_bomb_is_refused_under_the_address_space_limit(tmp_path):
    """512 MiB of zeros deflated to about 500 KB, loaded by a process whose RLIMIT_AS leaves
    256 MiB: refused naming the file before allocating (the machine's free memory is no guide)."""
    header = npy_header((2**26,))
    stream, total = deflated([header, *[bytes(2**20)] * 512])
    path = tmp_path / "bomb.npz"
    path.write_bytes(zip_bytes("w.npy", stream, method=8, file_size=total))
    assert path.stat().st_size < 2**20
    result = subprocess.run(
        [sys.executable, "-c", BOMB_UNDER_RLIMIT, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    peak, _, message = result.stdout.partition("\n")
    assert message.startswith(
        f"mg.load: {str(path)!r} holds {2**29:,} bytes of arrays, more than the "
    ), result.stdout + result.stderr
    assert int(peak) < SMALL_PEAK


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


def test_the_memory_left_is_the_least_of_the_system_the_cgroup_and_the_rlimit(
    tmp_path, monkeypatch
):
    proc, cgroup = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "meminfo").write_text("MemTotal: 9000 kB\nMemAvailable: 4000000 kB\nSwapFree: 0 kB\n")
    (proc / "self" / "cgroup").write_text("0::/job/step\n")
    (proc / "self" / "status").write_text("VmSize:\t1000 kB\nVmData:\t500 kB\n")
    step = cgroup / "job" / "step"
    step.mkdir(parents=True)
    (cgroup / "job" / "memory.max").write_text("3000000000\n")
    (cgroup / "job" / "memory.current").write_text("1000000000\n")
    (cgroup / "job" / "memory.stat").write_text("anon 1\ninactive_file 400000000\n")
    (step / "memory.max").write_text("max\n")
    monkeypatch.setattr(npz, "_PROC", str(proc))
    monkeypatch.setattr(npz, "_CGROUP", str(cgroup))
    monkeypatch.setattr(npz, "_rlimit_memory", lambda: None)
    assert npz._cgroup_memory() == 3_000_000_000 - 600_000_000
    assert mg.io._available_memory() == 2_400_000_000
    (cgroup / "job" / "memory.max").write_text("max\n")
    assert mg.io._available_memory() == 4_000_000 * 1024
    monkeypatch.setattr(npz, "_rlimit_memory", lambda: 123_456)
    assert mg.io._available_memory() == 123_456


@pytest.mark.skipif(sys.platform == "win32", reason="no resource module")
def test_the_rlimit_left_is_the_limit_less_what_is_used(tmp_path, monkeypatch):
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "status").write_text("VmSize:\t1000 kB\nVmData:\t500 kB\n")
    monkeypatch.setattr(npz, "_PROC", str(proc))
    limits = {npz.resource.RLIMIT_AS: 5_000_000, npz.resource.RLIMIT_DATA: 9_000_000}
    monkeypatch.setattr(
        npz.resource, "getrlimit", lambda kind: (limits[kind], npz.resource.RLIM_INFINITY)
    )
    assert npz._rlimit_memory() == 5_000_000 - 1_024_000


# -- 7: damaged entries get minigrad's message, naming the file and the member -----------------


def test_an_encrypted_member_is_refused(tmp_path):
    path = tmp_path / "secret.npz"
    path.write_bytes(zip_bytes("w.npy", npy_header((1,)) + bytes(8), flags=0x1))
    message, _ = refused(path)
    assert message == (
        f"mg.load: entry 'w.npy' of {str(path)!r} is encrypted; "
        "mg.load reads unencrypted archives only"
    )


@pytest.mark.parametrize("method", [99, 14, 12])
def test_an_unsupported_compression_method_is_refused(tmp_path, method):
    path = tmp_path / "packed.npz"
    path.write_bytes(zip_bytes("w.npy", npy_header((1,)) + bytes(8), method=method))
    message, _ = refused(path)
    assert message == (
        f"mg.load: entry 'w.npy' of {str(path)!r} uses compression method {method}; "
        "mg.load reads stored and deflated entries (what np.savez and np.savez_compressed write)"
    )


@pytest.mark.parametrize("shape", [(-1, -8), (-64,), (8, -1)])
def test_a_negative_dimension_in_a_header_is_refused(tmp_path, shape):
    path = tmp_path / "negative.npz"
    path.write_bytes(zip_bytes("w.npy", npy_header(shape) + bytes(64)))
    message, _ = refused(path)
    assert message == (
        f"mg.load: entry 'w' of {str(path)!r} has no valid .npy header "
        f"(shape {shape} has a negative dimension)"
    )


def test_a_damaged_deflate_stream_is_called_corrupt(tmp_path):
    header = npy_header((4,))
    stream, total = deflated([header, bytes(32)])
    damaged = bytes([0xFF] * 8) + stream[8:]  # block type 3, which deflate does not have
    path = tmp_path / "damaged.npz"
    path.write_bytes(zip_bytes("w.npy", damaged, method=8, file_size=total))
    message, _ = refused(path)
    assert message.startswith("mg.load: entry 'w") and "is corrupt" in message


def test_a_truncated_member_is_refused(tmp_path):
    header = npy_header((100,))
    stored = header + np.arange(100.0).tobytes()
    cut = zip_bytes("w.npy", stored[:300], file_size=len(stored), compress_size=len(stored))
    path = tmp_path / "cut.npz"
    path.write_bytes(cut)
    message, peak = refused(path)
    assert message.startswith(f"mg.load: entry 'w.npy' of {str(path)!r} is truncated")
    assert peak < SMALL_PEAK


def test_honest_deflated_archives_still_load(tmp_path):
    path = tmp_path / "honest.npz"
    arrays = {
        "w": np.arange(300_000.0),
        "z": np.zeros((3, 0)),
        "b": np.ones(2**20, bool),
        "zeros": np.zeros((2**20, 2)),  # inflates 1,000 times: its buffer grows several times
    }
    np.savez_compressed(path, **arrays)
    loaded = mg.load(path)
    for name, array in arrays.items():
        np.testing.assert_array_equal(loaded[name], array)
        assert loaded[name].shape == array.shape
