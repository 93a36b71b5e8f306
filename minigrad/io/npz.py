"""The .npz archive read member by member: each .npy header checked against the bytes the
member holds before anything is allocated, the data read into a buffer of exactly that size (or
mapped copy-on-write from the file, for mmap=True), and the memory left to read it into."""

import os
import zipfile

import numpy as np

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip
_READ_CHUNK = 1 << 18  # bytes per read: the zip reader copies each chunk; small ones stay in cache


def _available_memory():
    """Bytes that can still be allocated (available RAM plus free swap), or None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as file:
            fields = dict(line.split(":", 1) for line in file)
        return sum(int(fields[key].split()[0]) * 1024 for key in ("MemAvailable", "SwapFree"))
    except (OSError, KeyError, ValueError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _entry_name(info, path):
    """The key a member holds: '<key>.npy' an array, '<key>/' (a folder entry) an empty nested
    dict."""
    for suffix in (".npy", "/"):
        if info.filename.endswith(suffix):
            return info.filename[: -len(suffix)]
    raise ValueError(
        f"mg.load: entry {info.filename!r} of {path!r} is not a .npy array (nor the folder entry "
        f"of an empty dict)"
    )


def _entry_header(archive, info, path):
    """((name, shape, fortran_order, dtype), header bytes) of one .npy member, checked against
    the archive: the .npy header must describe exactly the bytes the member holds, so nothing is
    allocated on the word of a header that lies."""
    name = _entry_name(info, path)
    with archive.open(info) as member:
        try:
            version = np.lib.format.read_magic(member)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f"format version {version}, expected 1.0 or 2.0")
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran_order, dtype = read_header(member)
        except ValueError as error:
            raise ValueError(
                f"mg.load: entry {name!r} of {path!r} has no valid .npy header ({error})"
            ) from None
        header_bytes = member.tell()
    if dtype.hasobject:
        raise ValueError(
            f"mg.load: entry {name!r} of {path!r} holds pickled Python objects; refusing to load it"
        )
    declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
    held = info.file_size - header_bytes
    if declared != held:
        raise ValueError(
            f"mg.load: entry {name!r} of {path!r} is corrupt: its header declares shape {shape} "
            f"{dtype} ({declared:,} bytes) but the entry holds {held:,} bytes of data"
        )
    return (name, shape, fortran_order, dtype), header_bytes


def _entry_data(archive, info, header, path):
    """Read one member's array into a fresh buffer of exactly the declared size."""
    name, shape, fortran_order, dtype = header
    array = np.empty(int(np.prod(shape, dtype=object)), dtype)
    buffer = memoryview(array.view(np.uint8))
    with archive.open(info) as member:
        member.seek(info.file_size - buffer.nbytes)  # past the header
        filled = 0
        while filled < buffer.nbytes:
            count = member.readinto(buffer[filled : filled + _READ_CHUNK])
            if not count:
                raise ValueError(
                    f"mg.load: entry {name!r} of {path!r} is corrupt (it ends after "
                    f"{filled:,} of {buffer.nbytes:,} bytes)"
                )
            filled += count
        if member.read(1):  # also makes the zip reader check the CRC
            raise ValueError(
                f"mg.load: entry {name!r} of {path!r} is corrupt (more data than declared)"
            )
    return array.reshape(shape, order="F" if fortran_order else "C")


def _data_offset(file, info, header_bytes):
    """Where a stored (uncompressed) member's array data starts in the file: past the zip's
    local header (whose name and extra fields may differ in length from the central ones)."""
    file.seek(info.header_offset)
    local = file.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        return None
    name_length, extra_length = (
        int.from_bytes(local[26:28], "little"),
        int.from_bytes(local[28:30], "little"),
    )
    return info.header_offset + 30 + name_length + extra_length + header_bytes


def _mapped(path, info, header, header_bytes, where):
    """One member's array mapped copy-on-write from the file (mmap=True): writes to it stay in
    memory, the file is never changed, and the bytes are read (and not checksummed) on use."""
    name, shape, fortran_order, dtype = header
    if info.compress_type != zipfile.ZIP_STORED:
        raise ValueError(
            f"{where}: entry {name!r} of {path!r} is compressed, so it cannot be memory-mapped; "
            f"load it with mmap=False"
        )
    count = int(np.prod(shape, dtype=object))
    with open(path, "rb") as file:
        offset = _data_offset(file, info, header_bytes)
        size = os.fstat(file.fileno()).st_size
    if offset is None or offset + count * dtype.itemsize > size:
        raise ValueError(
            f"mg.load: entry {name!r} of {path!r} is corrupt (it lies outside the file)"
        )
    if count == 0:
        return np.empty(shape, dtype, order="F" if fortran_order else "C")
    return np.memmap(
        path, dtype, mode="c", offset=offset, shape=shape, order="F" if fortran_order else "C"
    )
