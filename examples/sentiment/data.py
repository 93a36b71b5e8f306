"""IMDB reviews for the sentiment example: find them, read them, check them.

Python, tqdm and minigrad's atomic file writer; preprocess.py turns the reviews into batches.

The data is the Large Movie Review Dataset v1.0 (Maas et al., ACL 2011) in its
official layout, ``aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt``. It is read
from, in this order:

1. ``load_imdb(data=PATH)``: the official ``aclImdb_v1.tar.gz`` (or any tar in the same
   layout, plain or compressed with gzip, bzip2 or xz), or a folder that holds ``aclImdb/``
   or is ``aclImdb/`` itself;
2. the cache folder (``$MINIGRAD_DATA`` if set, else ``~/.cache/minigrad/imdb``),
   which may hold an extracted ``aclImdb/`` or one of the tarballs named in
   ``CACHE_TARBALLS``;
3. a one-time download of the official tarball into the cache folder
   (sha256-checked, written through minigrad.io.atomic_file).

Tarballs are read member by member from the compressed stream; nothing is
extracted to disk. The data is treated as untrusted: unsafe members (absolute or
``..`` paths, links, devices), files linked from outside the dataset folder, and
sizes beyond the limits below are refused before anything is allocated.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import tarfile
import urllib.error
import urllib.request
import zlib
from pathlib import Path

from tqdm import tqdm

from minigrad.io import atomic_file

# fmt: off
__all__ = [
    "IMDB_URL", "IMDB_SHA256", "IMDB_BYTES", "CACHE_TARBALLS",
    "DataNotFoundError", "default_cache_dir", "load_imdb",
]
# fmt: on

IMDB_URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
# sha256 and size of the official aclImdb_v1.tar.gz, as published in the checksum
# files of TensorFlow Datasets (imdb_reviews/checksums.tsv) and scikit-learn-style
# loaders that verify the same file; several independent sources agree.
IMDB_SHA256 = "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe"
IMDB_BYTES = 84_125_825
# Tarball names looked for in the cache folder, in this order.
CACHE_TARBALLS = ("aclImdb_v1.tar.gz", "aclImdb-labelled.tar.gz")

# Limits that stop a hostile or broken dataset before it costs memory or hours. For scale, the
# 50,000 labelled reviews: 50,007 tar members, 65 MB of text, the longest review 13,704 bytes;
# the official release adds 50,000 unlabelled reviews and a few word and URL lists.
MAX_REVIEW_BYTES = 1 << 20  # 1 MiB for one review file
MAX_MEMBERS = 250_000  # files and folders in a tarball, review files in a folder
MAX_TOTAL_BYTES = 1 << 30  # 1 GiB of file data in all, read or skipped

SPLITS = ("train", "test")
LABEL_FOLDERS = ("neg", "pos")  # sorted order; the label is the index: neg 0, pos 1
_REVIEW_MEMBER = re.compile(r"(?:\./)?aclImdb/(train|test)/(neg|pos)/([^/]+\.txt)")


class DataNotFoundError(RuntimeError):
    """No IMDB data could be found locally and it could not be downloaded."""


def default_cache_dir() -> Path:
    """The IMDB cache folder: ``$MINIGRAD_DATA`` if set, else ``~/.cache/minigrad/imdb``."""
    configured = os.environ.get("MINIGRAD_DATA")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "minigrad" / "imdb"


# ----------------------------------------------------------------------------- loading


def load_imdb(data=None, cache_dir=None, download=True, progress=True) -> dict:
    """Load the 50,000 labelled IMDB reviews.

    Returns ``{"train": [(text, label), ...], "test": [...]}`` with label 1 for
    ``pos`` and 0 for ``neg``. Each split is ordered by label folder (neg, then pos),
    then by the numeric id in the file name, so every run sees the same order.
    ``unsup/`` and all other files of the official release are ignored.

    Raises ``DataNotFoundError`` when there is no local copy and the download is not
    allowed or fails; ``FileNotFoundError`` when ``data`` does not exist; ``ValueError``
    for an archive in an unsupported format, corrupt or truncated, hostile (absolute or
    ``..`` paths, links, devices; a file in a dataset folder that links outside it), too
    large (``MAX_REVIEW_BYTES``, ``MAX_MEMBERS``, ``MAX_TOTAL_BYTES``), or not in the IMDB
    layout. Every message names the file and says what was expected.
    """
    if data is not None:
        return _load_path(Path(data).expanduser(), progress)

    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    source = _find_in_cache(cache)
    if source is not None:
        return _load_path(source, progress)
    if not download:
        raise DataNotFoundError(
            _not_found_message(cache, reason="downloading is disabled (download=False)")
        )
    return _load_path(_download(IMDB_URL, cache, IMDB_SHA256, progress), progress)


def _not_found_message(cache: Path, reason: str) -> str:
    return (
        "IMDB data not found. Provide it in one of three ways:\n"
        "  1. pass --data PATH (load_imdb(data=PATH)), PATH being the official aclImdb_v1.tar.gz\n"
        "     (or a tar, tar.gz, tar.bz2 or tar.xz in the same layout), or a folder that holds\n"
        "     aclImdb/ or is aclImdb/ itself;\n"
        f"  2. put the tarball ({' or '.join(CACHE_TARBALLS)}) or the extracted aclImdb/ folder\n"
        f"     in the cache folder {cache} (set MINIGRAD_DATA to use another folder);\n"
        f"  3. allow the one-time download (download=True, needs network access) of\n"
        f"     {IMDB_URL} ({IMDB_BYTES / 1e6:.0f} MB) into that cache folder.\n"
        f"Reason: {reason}."
    )


def _find_in_cache(cache: Path):
    """The first usable source in the cache folder, or None."""
    if not cache.is_dir():
        return None
    if _dataset_root(cache) is not None:
        return cache
    for name in CACHE_TARBALLS:
        if (cache / name).is_file():
            return cache / name
    return None


def _dataset_root(folder: Path):
    """The aclImdb folder inside or at ``folder`` (it holds train/ and test/), or None."""
    for candidate in (folder / "aclImdb", folder):
        if (candidate / "train").is_dir() and (candidate / "test").is_dir():
            return candidate
    return None


def _load_path(path: Path, progress: bool) -> dict:
    if not path.exists():
        raise FileNotFoundError(
            f"IMDB data: expected a tarball (.tar, .tar.gz, .tar.bz2, .tar.xz) or a folder "
            f"at {path}, but nothing is there"
        )
    if not (path.is_dir() or path.is_file()):  # a FIFO or a device would block or never end
        raise ValueError(
            f"IMDB data: expected a tarball or a folder at {path}, but it is neither a regular "
            "file nor a folder (a pipe, a device or a socket)"
        )
    if path.is_dir():
        root = _dataset_root(path)
        if root is None:
            raise ValueError(
                f"IMDB data: expected the folder {path} to hold aclImdb/ (with train/ and test/) "
                "or to be aclImdb/ itself, but it has neither"
            )
        found = _read_folder(root, progress)
    else:
        found = _read_tarball(path, progress)
    return _assemble(found, path)


def _sort_key(file_name: str):
    """Numeric id first (``123_8.txt`` -> 123), the name as tie-breaker. The id is compared as
    digits (shorter first, then in order: the order of the numbers), never converted: Python
    refuses int() of more than 4,300 digits, and a hostile archive may name a file so."""
    match = re.match(r"\d+", file_name)
    if not match:
        return (1, 0, "", file_name)
    digits = match.group().lstrip("0") or "0"
    return (0, len(digits), digits, file_name)


def _assemble(found: dict, source: Path) -> dict:
    """``found[(split, label_folder)] = [(file_name, text)]`` -> sorted (text, label) lists."""
    dataset = {}
    for split in SPLITS:
        pairs = []
        for label, folder in enumerate(LABEL_FOLDERS):
            reviews = found.get((split, folder), [])
            if not reviews:
                raise ValueError(
                    f"IMDB data: expected reviews under aclImdb/{split}/{folder}/ in {source}, "
                    "found none"
                )
            reviews.sort(key=lambda item: _sort_key(item[0]))
            pairs.extend((text, label) for _, text in reviews)
        dataset[split] = pairs
    return dataset


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"IMDB data: {where} is not valid UTF-8 ({exc})") from None


def _too_big(what: str, size: int) -> ValueError:
    return ValueError(
        f"IMDB data: {what} is {size:,} bytes; a review is at most {MAX_REVIEW_BYTES:,} "
        f"(the longest IMDB review has 13,704), so this is not IMDB data; refusing to read it"
    )


def _check_totals(where: str, count: int, total: int) -> None:
    """Refuse a dataset with more files or more bytes than IMDB could have (before reading on)."""
    if count > MAX_MEMBERS:
        raise ValueError(
            f"IMDB data: {where} holds more than {MAX_MEMBERS:,} entries; "
            "the official release has about 100,000, so this is not IMDB data; refusing to read it"
        )
    if total > MAX_TOTAL_BYTES:
        raise ValueError(
            f"IMDB data: {where} holds more than {MAX_TOTAL_BYTES:,} bytes of files; "
            "the 50,000 labelled reviews are 65 MB, so this is not IMDB data; refusing to read it"
        )


def _read_folder(root: Path, progress: bool) -> dict:
    """Read the review files of an extracted aclImdb/ folder, after checking all of them: each
    must be a regular file inside the folder (a symlink out of it is refused, as a link
    member of a tarball is) and small enough to be a review."""
    inside = os.path.realpath(root)

    def check_inside(path):
        target = os.path.realpath(path)
        if os.path.commonpath([inside, target]) != inside:
            raise ValueError(
                f"unsafe dataset folder {root}: {path} links to {target}, outside the dataset; "
                f"expected review files inside {root}"
            )

    files, count, total = {}, 0, 0
    for split in SPLITS:
        for folder in LABEL_FOLDERS:
            directory = root / split / folder
            if directory.is_dir():
                check_inside(directory)
            entries = (
                [
                    entry
                    for entry in os.scandir(directory)
                    if entry.name.endswith(".txt") and entry.is_file()
                ]
                if directory.is_dir()
                else []
            )
            for entry in entries:
                # realpath only where needed: it costs seconds over 50,000 files
                if entry.is_symlink():
                    check_inside(entry.path)
                size = entry.stat().st_size
                if size > MAX_REVIEW_BYTES:
                    raise _too_big(entry.path, size)
                count, total = count + 1, total + size
                _check_totals(str(root), count, total)
            files[(split, folder)] = [entry.name for entry in entries]
    found = {}
    with tqdm(total=count, unit="file", desc=f"reading {root}", disable=not progress) as bar:
        for (split, folder), names in files.items():
            reviews = found.setdefault((split, folder), [])
            for name in names:
                with open(root / split / folder / name, "rb") as file:
                    # the file may have grown since it was checked
                    raw = file.read(MAX_REVIEW_BYTES + 1)
                if len(raw) > MAX_REVIEW_BYTES:
                    raise _too_big(str(root / split / folder / name), len(raw))
                reviews.append((name, _decode(raw, str(root / split / folder / name))))
                bar.update(1)
    return found


class _ProgressReader:
    """A read-only file wrapper that advances a tqdm bar by the bytes read."""

    def __init__(self, file, bar):
        self.file, self.bar = file, bar

    def read(self, size=-1):
        chunk = self.file.read(size)
        self.bar.update(len(chunk))
        return chunk


class _EndTrackingTarInfo(tarfile.TarInfo):
    """Remembers why a tar stream stopped: tarfile treats a truncated or garbled header
    in mid-archive as a silent end, but only a zero block (EOFHeaderError) is a real end."""

    @classmethod
    def fromtarfile(cls, archive):
        try:
            return super().fromtarfile(archive)
        except tarfile.HeaderError as exc:
            archive.minigrad_end_reason = exc
            raise


def _check_member(member: tarfile.TarInfo, path: Path) -> None:
    """Reject members that would be unsafe to extract anywhere, even though we do not extract."""
    name = member.name
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", name):
        raise ValueError(f"unsafe archive {path}: member {name!r} has an absolute path")
    if ".." in re.split(r"[/\\]", name):
        raise ValueError(f"unsafe archive {path}: member {name!r} has a '..' path component")
    if member.issym() or member.islnk():
        kind = "symlink" if member.issym() else "hardlink"
        raise ValueError(
            f"unsafe archive {path}: member {name!r} is a {kind} (to {member.linkname!r}); "
            "expected only regular files and directories"
        )
    if not (member.isreg() or member.isdir()):
        raise ValueError(
            f"unsafe archive {path}: member {name!r} is a device, fifo or other special file; "
            "expected only regular files and directories"
        )


# The first bytes of a file -> (compression, module with open()); tar itself has no magic at 0.
_COMPRESSIONS = {
    b"\x1f\x8b": ("gzip", "gzip"),
    b"BZh": ("bzip2", "bz2"),
    b"\xfd7zXZ\x00": ("xz", "lzma"),
}
_UNSUPPORTED = {
    b"\x28\xb5\x2f\xfd": "a zstd-compressed file",
    b"PK\x03\x04": "a zip archive",
    b"7z\xbc\xaf\x27\x1c": "a 7-Zip archive",
    b"\x04\x22\x4d\x18": "an lz4-compressed file",
    b"Rar!": "a RAR archive",
    b"\x1f\x9d": "a compress (.Z) file",
}
_SUPPORTED = (
    "a tar archive, plain or compressed with gzip (.tar.gz), bzip2 (.tar.bz2) or xz (.tar.xz)"
)


def _open_decompressed(raw, magic: bytes, path: Path):
    """(stream of tar bytes, the errors its decompressor raises for bad data) for a file that
    starts with `magic`; an unsupported format is a ValueError that says so (never 'corrupt')."""
    for prefix, kind in _UNSUPPORTED.items():
        if magic.startswith(prefix):
            raise ValueError(
                f"IMDB data: {path} is {kind}, an unsupported format; expected {_SUPPORTED}"
            )
    for prefix, (kind, module_name) in _COMPRESSIONS.items():
        if magic.startswith(prefix):
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                raise ValueError(
                    f"IMDB data: {path} is {kind}-compressed, which this Python cannot read "
                    f"(it was built without the {module_name} module): unsupported here; "
                    "decompress it and pass the .tar"
                ) from None
            errors = (module.LZMAError,) if module_name == "lzma" else ()
            return module.open(raw, "rb"), errors
    return raw, ()


def _read_tarball(path: Path, progress: bool) -> dict:
    found, seen, count, total = {}, set(), 0, 0
    with (
        open(path, "rb") as raw,
        tqdm(
            total=path.stat().st_size,
            unit="B",
            unit_scale=True,
            desc=f"reading {path.name}",
            disable=not progress,
        ) as bar,
    ):
        magic = raw.read(6)
        raw.seek(0)
        stream, decompression_errors = _open_decompressed(_ProgressReader(raw, bar), magic, path)
        try:
            with tarfile.open(fileobj=stream, mode="r|", tarinfo=_EndTrackingTarInfo) as archive:
                for member in archive:  # sizes are a header's word: checked before reading anything
                    _check_member(member, path)
                    match = _REVIEW_MEMBER.fullmatch(member.name)
                    is_review = match is not None and member.isreg()
                    # a sparse member claims GBs in a few bytes
                    if is_review and member.size > MAX_REVIEW_BYTES:
                        raise _too_big(f"{member.name} in {path}", member.size)
                    count, total = count + 1, total + member.size
                    _check_totals(str(path), count, total)
                    if not is_review:
                        continue
                    split, folder, file_name = match.groups()
                    if (split, folder, file_name) in seen:
                        raise ValueError(f"IMDB data: archive {path} holds {member.name!r} twice")
                    seen.add((split, folder, file_name))
                    text = _decode(archive.extractfile(member).read(), f"{member.name} in {path}")
                    found.setdefault((split, folder), []).append((file_name, text))
                end = getattr(archive, "minigrad_end_reason", None)
                if not isinstance(end, tarfile.EOFHeaderError):
                    raise tarfile.ReadError(
                        f"the tar data ends without an end-of-archive marker ({end})"
                    )
            # read to the end so the decompressor checks its CRC and length
            while stream.read(1 << 20):
                pass
        except (tarfile.TarError, EOFError, zlib.error, OSError, *decompression_errors) as exc:
            raise ValueError(
                f"cannot read the IMDB archive {path}: it is corrupt, truncated or not a tar file "
                f"({type(exc).__name__}: {exc}); expected {_SUPPORTED}. Re-download or replace it."
            ) from exc
    return found


# ----------------------------------------------------------------------------- download


class _HashingWriter:
    """A binary file wrapper that keeps the sha256 of everything written through it."""

    def __init__(self, file):
        self.file, self.digest = file, hashlib.sha256()

    def write(self, chunk):
        self.digest.update(chunk)
        return self.file.write(chunk)


def _fetch(url: str, file, progress: bool) -> None:
    """Write the bytes at ``url`` to the binary ``file`` (network errors propagate as OSError)."""
    with urllib.request.urlopen(url, timeout=60) as response:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(
            total=total,
            unit="B",
            unit_scale=True,
            desc=f"downloading {url.rsplit('/', 1)[-1]}",
            disable=not progress,
        ) as bar:
            while chunk := response.read(1 << 20):
                file.write(chunk)
                bar.update(len(chunk))


def _download(url: str, cache: Path, sha256: str, progress: bool) -> Path:
    """Download ``url`` into ``cache`` once: it takes its place only when complete and checked."""
    target = cache / url.rsplit("/", 1)[-1]
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataNotFoundError(
            _not_found_message(cache, f"cannot create the cache folder ({exc})")
        ) from exc
    with atomic_file(target) as file:  # any error below leaves nothing behind
        hashing = _HashingWriter(file)
        try:
            _fetch(url, hashing, progress)
        except (urllib.error.URLError, OSError) as exc:
            raise DataNotFoundError(
                _not_found_message(cache, f"the download failed ({exc})")
            ) from exc
        actual = hashing.digest.hexdigest()
        if actual != sha256:
            raise ValueError(
                f"downloaded {url} has sha256 {actual}, expected {sha256}; "
                "the file was discarded (a broken transfer or a changed file on the server)"
            )
    return target
