"""The .npz archive read member by member: each zip directory entry checked against the file's
real bytes and each .npy header against the bytes the member holds before anything is allocated,
the data read into a buffer of that size (grown as it inflates, for a deflated member) or mapped
copy-on-write from the file (mmap=True), and the memory left to read it into (the system's, the
memory cgroup's, the rlimit's)."""

import io
import os
import struct
import zipfile
import zlib

import numpy as np

try:
    import resource  # POSIX: the process's own limits on memory
except ImportError:
    resource = None

_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip
_READ_CHUNK = 1 << 18  # bytes per read: the zip reader copies each chunk; small ones stay in cache
_MAX_HEADER_BYTES = 10_000  # numpy's own limit on the .npy header it parses
_DEFLATE_MAX_RATIO = 1032  # deflate cannot inflate a byte into more than this (zlib's FAQ)
_ENCRYPTED_FLAGS = 0x1 | 0x40  # general purpose bits: encrypted, strongly encrypted
# Exceptions the zip reader raises for damaged data (zlib.error: a deflate stream that is not one)
_READ_ERRORS = (OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError)
# Where the limits are read from; tests point these at folders of their own.
_PROC, _CGROUP = "/proc", "/sys/fs/cgroup"


def _read_text(path):
    try:
        with open(path, encoding="ascii") as file:
            return file.read()
    except (OSError, ValueError):
        return None


def _system_memory():
    """Available RAM plus free swap (/proc/meminfo, else sysconf), or None."""
    text = _read_text(os.path.join(_PROC, "meminfo"))
    if text is not None:
        try:
            fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
            return sum(int(fields[key].split()[0]) * 1024 for key in ("MemAvailable", "SwapFree"))
        except (KeyError, ValueError, IndexError):
            pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def _cgroup_memory():
    """What the process's memory cgroup (and every cgroup above it) still allows: its limit less
    its usage, page cache that can be dropped (inactive_file) not counted as used; None if no
    cgroup limits it. cgroup v2 (memory.max, memory.current) and v1 (memory.limit_in_bytes,
    memory.usage_in_bytes), found from /proc/self/cgroup and at the mount's root."""
    folders = {_CGROUP, os.path.join(_CGROUP, "memory")}
    for line in (_read_text(os.path.join(_PROC, "self", "cgroup")) or "").splitlines():
        _, controllers, place = (line.split(":", 2) + ["", ""])[:3]
        base = _CGROUP if controllers == "" else os.path.join(_CGROUP, "memory")
        if controllers == "" or "memory" in controllers.split(","):
            parts = [part for part in place.split("/") if part]
            folders.update(os.path.join(base, *parts[:depth]) for depth in range(len(parts) + 1))
    left = None
    for folder in folders:
        for limit_name, usage_name, cache_name in (
            ("memory.max", "memory.current", "inactive_file"),
            ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"),
        ):
            limit = _read_text(os.path.join(folder, limit_name))
            usage = _read_text(os.path.join(folder, usage_name))
            if limit is None or not limit.strip().isdigit():  # absent, or "max": no limit
                continue
            used = int(usage) if usage is not None and usage.strip().isdigit() else 0
            stat = _read_text(os.path.join(folder, "memory.stat")) or ""
            for line in stat.splitlines():
                key, _, value = line.partition(" ")
                if key == cache_name and value.strip().isdigit():
                    used -= int(value)
            room = max(int(limit) - max(used, 0), 0)
            left = room if left is None else min(left, room)
    return left


def _rlimit_memory():
    """What the process's soft RLIMIT_AS and RLIMIT_DATA still allow (the limit less the
    VmSize / VmData already in use, from /proc/self/status), or None if neither is set."""
    if resource is None:
        return None
    status = _read_text(os.path.join(_PROC, "self", "status")) or ""
    used = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if value.split()[:1] and value.split()[0].isdigit():
            used[key] = int(value.split()[0]) * 1024
    left = None
    for kind, field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        if not hasattr(resource, kind):
            continue
        try:
            soft, _ = resource.getrlimit(getattr(resource, kind))
        except (OSError, ValueError):
            continue
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        room = max(soft - used.get(field, 0), 0)
        left = room if left is None else min(left, room)
    return left


def _available_memory():
    """Bytes this process can still allocate, or None if unknown: the least of the system's
    available RAM plus free swap, what its memory cgroup allows and what its RLIMIT_AS and
    RLIMIT_DATA allow (a container's or a ulimit's limit is often far below the machine's)."""
    known = [
        value
        for value in (_system_memory(), _cgroup_memory(), _rlimit_memory())
        if value is not None
    ]
    return min(known) if known else None


def _entry_name(info, path):
    """The key a member holds: '<key>.npy' an array, '<key>/' (a folder entry) an empty nested
    dict."""
    for suffix in (".npy", "/"):
        if info.filename.endswith(suffix):
            return info.filename[: -len(suffix)]
    raise ValueError(
        f"mg.load: entry {info.filename!r} of {path!r} is not a .npy array "
        "(nor the folder entry of an empty dict)"
    )


_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}


def _check_member(file, info, path, end_of_members):
    """Refuse a member whose directory entry cannot be trusted, before any of it is read: one
    encrypted or compressed other than as np.savez / np.savez_compressed write (stored,
    deflated), whose data would lie past the members' end, or whose claimed size is more than its
    compressed bytes can hold (a stored member holds exactly them; deflate inflates a byte into
    at most 1032). So nothing later is allocated on a size the file does not back."""
    entry = f"mg.load: entry {info.filename!r} of {path!r}"
    if info.flag_bits & _ENCRYPTED_FLAGS:
        raise ValueError(f"{entry} is encrypted; mg.load reads unencrypted archives only")
    if info.compress_type not in _METHODS:
        raise ValueError(
            f"{entry} uses compression method {info.compress_type}; mg.load reads stored and "
            f"deflated entries (what np.savez and np.savez_compressed write)"
        )
    start = _data_start(file, info)
    if start is None:
        raise ValueError(f"{entry} is corrupt (its local header is missing or damaged)")
    if start + info.compress_size > end_of_members:
        raise ValueError(
            f"{entry} is truncated: its {info.compress_size:,} bytes of data would end at byte "
            f"{start + info.compress_size:,}, past the end of the entries at byte "
            f"{end_of_members:,}"
        )
    if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
        raise ValueError(
            f"{entry} is corrupt: it claims {info.file_size:,} bytes but stores "
            f"{info.compress_size:,} (uncompressed, the two are equal)"
        )
    if info.file_size > _DEFLATE_MAX_RATIO * info.compress_size + _DEFLATE_MAX_RATIO:
        raise ValueError(
            f"{entry} is corrupt: it claims {info.file_size:,} bytes, more than its "
            f"{info.compress_size:,} compressed bytes can inflate to"
        )


def _read_bounded(member, count, what):
    """Exactly `count` bytes (a small count: a header's) read from a member, or ValueError."""
    data = member.read(count)
    if len(data) != count:
        raise ValueError(f"it ends in the {what}")
    return data


def _entry_header(archive, info, path):
    """((name, shape, fortran_order, dtype), header bytes) of one .npy member, checked against
    the archive: the .npy header (at most 10,000 bytes, read in full only then) must describe
    exactly the bytes the member holds, with no negative dimension, so nothing is allocated on the
    word of a header that lies."""
    name = _entry_name(info, path)
    with archive.open(info) as member:
        try:
            prefix = _read_bounded(member, 8, "magic string")
            if prefix[:6] != b"\x93NUMPY":
                raise ValueError(f"it starts with {prefix[:6]!r}, not the .npy magic string")
            version = (prefix[6], prefix[7])
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f"format version {version}, expected 1.0 or 2.0")
            length_format = "<H" if version == (1, 0) else "<I"
            length_bytes = _read_bounded(member, struct.calcsize(length_format), "header length")
            (length,) = struct.unpack(length_format, length_bytes)
            if length > _MAX_HEADER_BYTES:
                raise ValueError(
                    f"its header claims {length:,} bytes; at most {_MAX_HEADER_BYTES:,} are read"
                )
            text = _read_bounded(member, length, "header")
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, fortran_order, dtype = read_header(io.BytesIO(length_bytes + text))
            if any(size < 0 for size in shape):
                raise ValueError(f"shape {shape} has a negative dimension")
        except (ValueError, SyntaxError) as error:
            raise ValueError(
                f"mg.load: entry {name!r} of {path!r} has no valid .npy header ({error})"
            ) from None
        header_bytes = len(prefix) + len(length_bytes) + len(text)
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
    """Read one member's array. A stored member's bytes are in the file (_check_member), so its
    buffer is made at its size at once; a deflated member's size is only claimed, so its buffer
    grows (doubling) with the bytes inflated, read in chunks and stopped at the declared size:
    a stream that ends early or inflates past its claim costs no more than it really held."""
    name, shape, fortran_order, dtype = header
    count = int(np.prod(shape, dtype=object))
    itemsize = max(dtype.itemsize, 1)
    capacity = count
    if info.compress_type != zipfile.ZIP_STORED and dtype.itemsize:
        capacity = min(count, (4 * info.compress_size + _READ_CHUNK) // itemsize + 1)
    array = np.empty(capacity, dtype)
    size = count * dtype.itemsize
    with archive.open(info) as member:
        member.seek(info.file_size - size)  # past the header
        filled = 0
        while filled < size:
            if filled == array.nbytes:  # a deflated member's buffer is full: double it
                grown = np.empty(min(count, 2 * capacity), dtype)
                grown[:capacity] = array
                array, capacity = grown, len(grown)
            buffer = memoryview(array.view(np.uint8))
            read = member.readinto(buffer[filled : min(filled + _READ_CHUNK, array.nbytes)])
            if not read:
                raise ValueError(
                    f"mg.load: entry {name!r} of {path!r} is corrupt "
                    f"(it ends after {filled:,} of {size:,} bytes)"
                )
            filled += read
        if member.read(1):  # also makes the zip reader check the CRC
            raise ValueError(
                f"mg.load: entry {name!r} of {path!r} is corrupt (more data than declared)"
            )
    return array.reshape(shape, order="F" if fortran_order else "C")


def _data_start(file, info):
    """Where a member's data starts in the file: past the zip's local header (whose name and
    extra fields may differ in length from the central ones); None if there is none."""
    file.seek(info.header_offset)
    local = file.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        return None
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + name_length + extra_length


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
        offset = _data_start(file, info)
        offset = None if offset is None else offset + header_bytes
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
