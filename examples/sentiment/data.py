"""IMDB reviews for the sentiment example: find them, read them, check them.

Pure python + tqdm (no minigrad), so it can be read and tested on its own; preprocess.py
turns the reviews into batches.

The data is the Large Movie Review Dataset v1.0 (Maas et al., ACL 2011) in its
official layout, ``aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt``. It is read
from, in this order:

1. ``load_imdb(data=PATH)``: the official ``aclImdb_v1.tar.gz`` (or any tar/tar.gz in
   the same layout), or a folder that holds ``aclImdb/`` or is ``aclImdb/`` itself;
2. the cache folder (``$MINIGRAD_DATA`` if set, else ``~/.cache/minigrad/imdb``),
   which may hold an extracted ``aclImdb/`` or one of the tarballs named in
   ``CACHE_TARBALLS``;
3. a one-time download of the official tarball into the cache folder
   (sha256-checked, written to a temporary file and renamed into place).

Tarballs are read member by member from the compressed stream; nothing is
extracted to disk.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import tarfile
import tempfile
import urllib.error
import urllib.request
import zlib
from pathlib import Path

from tqdm import tqdm

__all__ = [
    "IMDB_URL", "IMDB_SHA256", "IMDB_BYTES", "CACHE_TARBALLS", "DataNotFoundError",
    "default_cache_dir", "load_imdb", "make_tiny_imdb_tarball",
]

IMDB_URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
# sha256 and size of the official aclImdb_v1.tar.gz, as published in the checksum
# files of TensorFlow Datasets (imdb_reviews/checksums.tsv) and scikit-learn-style
# loaders that verify the same file; several independent sources agree.
IMDB_SHA256 = "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe"
IMDB_BYTES = 84_125_825
# Tarball names looked for in the cache folder, in this order.
CACHE_TARBALLS = ("aclImdb_v1.tar.gz", "aclImdb-labelled.tar.gz")

SPLITS = ("train", "test")
LABEL_FOLDERS = ("neg", "pos")          # sorted order; the label is the index: neg 0, pos 1
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
    allowed or fails; ``FileNotFoundError`` when ``data`` does not exist;
    ``ValueError`` for an archive that is corrupt, truncated, hostile (absolute or
    ``..`` paths, links, devices) or not in the IMDB layout.
    """
    if data is not None:
        return _load_path(Path(data).expanduser(), progress)

    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    source = _find_in_cache(cache)
    if source is not None:
        return _load_path(source, progress)
    if not download:
        raise DataNotFoundError(_not_found_message(cache, reason="downloading is disabled (download=False)"))
    return _load_path(_download(IMDB_URL, cache, IMDB_SHA256, progress), progress)


def _not_found_message(cache: Path, reason: str) -> str:
    return (
        "IMDB data not found. Provide it in one of three ways:\n"
        "  1. pass --data PATH (load_imdb(data=PATH)), PATH being the official aclImdb_v1.tar.gz\n"
        "     (or a tar.gz in the same layout), or a folder that holds aclImdb/ or is aclImdb/ itself;\n"
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
        raise FileNotFoundError(f"IMDB data: expected a .tar.gz or a folder at {path}, but nothing is there")
    if path.is_dir():
        root = _dataset_root(path)
        if root is None:
            raise ValueError(
                f"IMDB data: expected the folder {path} to hold aclImdb/ (with train/ and test/) "
                "or to be aclImdb/ itself, but it has neither")
        found = _read_folder(root, progress)
    else:
        found = _read_tarball(path, progress)
    return _assemble(found, path)


def _sort_key(file_name: str):
    """Numeric id first (``123_8.txt`` -> 123), the name as tie-breaker."""
    match = re.match(r"\d+", file_name)
    return (0, int(match.group()), file_name) if match else (1, 0, file_name)


def _assemble(found: dict, source: Path) -> dict:
    """``found[(split, label_folder)] = [(file_name, text)]`` -> sorted (text, label) lists."""
    dataset = {}
    for split in SPLITS:
        pairs = []
        for label, folder in enumerate(LABEL_FOLDERS):
            reviews = found.get((split, folder), [])
            if not reviews:
                raise ValueError(
                    f"IMDB data: expected reviews under aclImdb/{split}/{folder}/ in {source}, found none")
            reviews.sort(key=lambda item: _sort_key(item[0]))
            pairs.extend((text, label) for _, text in reviews)
        dataset[split] = pairs
    return dataset


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"IMDB data: {where} is not valid UTF-8 ({exc})") from None


def _read_folder(root: Path, progress: bool) -> dict:
    files = {}
    for split in SPLITS:
        for folder in LABEL_FOLDERS:
            directory = root / split / folder
            names = [entry.name for entry in os.scandir(directory)
                     if entry.name.endswith(".txt") and entry.is_file()] if directory.is_dir() else []
            files[(split, folder)] = names
    found = {}
    with tqdm(total=sum(map(len, files.values())), unit="file", desc=f"reading {root}",
              disable=not progress) as bar:
        for (split, folder), names in files.items():
            reviews = found.setdefault((split, folder), [])
            for name in names:
                with open(root / split / folder / name, "rb") as file:
                    reviews.append((name, _decode(file.read(), str(root / split / folder / name))))
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
        raise ValueError(f"unsafe archive {path}: member {name!r} is a {kind} (to {member.linkname!r}); "
                         "expected only regular files and directories")
    if not (member.isreg() or member.isdir()):
        raise ValueError(f"unsafe archive {path}: member {name!r} is a device, fifo or other special "
                         "file; expected only regular files and directories")


def _read_tarball(path: Path, progress: bool) -> dict:
    found, seen = {}, set()
    try:
        with open(path, "rb") as raw, tqdm(total=path.stat().st_size, unit="B", unit_scale=True,
                                           desc=f"reading {path.name}", disable=not progress) as bar:
            is_gzip = raw.read(2) == b"\x1f\x8b"
            raw.seek(0)
            stream = _ProgressReader(raw, bar)
            if is_gzip:
                stream = gzip.GzipFile(fileobj=stream, mode="rb")
            with tarfile.open(fileobj=stream, mode="r|", tarinfo=_EndTrackingTarInfo) as archive:
                for member in archive:
                    _check_member(member, path)
                    match = _REVIEW_MEMBER.fullmatch(member.name)
                    if match is None or not member.isreg():
                        continue
                    split, folder, file_name = match.groups()
                    if (split, folder, file_name) in seen:
                        raise ValueError(f"IMDB data: archive {path} holds {member.name!r} twice")
                    seen.add((split, folder, file_name))
                    text = _decode(archive.extractfile(member).read(), f"{member.name} in {path}")
                    found.setdefault((split, folder), []).append((file_name, text))
                end = getattr(archive, "minigrad_end_reason", None)
                if not isinstance(end, tarfile.EOFHeaderError):
                    raise tarfile.ReadError(f"the tar data ends without an end-of-archive marker ({end})")
            while stream.read(1 << 20):       # read to the end so gzip checks its CRC and length
                pass
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise ValueError(
            f"cannot read the IMDB archive {path}: it is corrupt, truncated or not a tar/tar.gz file "
            f"({type(exc).__name__}: {exc}). Re-download or replace it.") from exc
    return found


# ----------------------------------------------------------------------------- download

def _fetch(url: str, destination: Path, progress: bool) -> None:
    """Write the bytes at ``url`` to ``destination`` (network errors propagate as OSError)."""
    with urllib.request.urlopen(url, timeout=60) as response, open(destination, "wb") as out:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=f"downloading {url.rsplit('/', 1)[-1]}",
                  disable=not progress) as bar:
            while chunk := response.read(1 << 20):
                out.write(chunk)
                bar.update(len(chunk))


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _download(url: str, cache: Path, sha256: str, progress: bool) -> Path:
    """Download ``url`` into ``cache`` once: temp file, checksum, then atomic rename."""
    target = cache / url.rsplit("/", 1)[-1]
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataNotFoundError(_not_found_message(cache, f"cannot create the cache folder ({exc})")) from exc
    handle, temporary = tempfile.mkstemp(dir=cache, prefix=target.name + ".", suffix=".part")
    os.close(handle)
    temporary = Path(temporary)
    try:
        try:
            _fetch(url, temporary, progress)
        except (urllib.error.URLError, OSError) as exc:
            raise DataNotFoundError(_not_found_message(cache, f"the download failed ({exc})")) from exc
        actual = _sha256_of(temporary)
        if actual != sha256:
            raise ValueError(f"downloaded {url} has sha256 {actual}, expected {sha256}; "
                             "the file was discarded (a broken transfer or a changed file on the server)")
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return target


# ----------------------------------------------------------------------------- test helper

def make_tiny_imdb_tarball(path, reviews, extra_files=None) -> Path:
    """Write an official-layout tar.gz for tests and return its path.

    ``reviews`` maps ``(split, folder)`` to a list of texts, e.g.
    ``{("train", "pos"): ["great"], ("train", "neg"): ["bad"], ...}`` with split in
    train/test and folder in pos/neg/unsup. File ``i`` is named
    ``<i>_<rating>.txt`` (pos 7-10, neg 1-4, unsup 0, as in the official release).
    ``extra_files`` maps further archive paths to texts (README, imdb.vocab...).
    ``load_imdb`` needs all four train/test x pos/neg folders to be non-empty.
    The output is byte-for-byte reproducible.
    """
    path = Path(path)
    members = {}
    for (split, folder), texts in reviews.items():
        if split not in SPLITS or folder not in ("pos", "neg", "unsup"):
            raise ValueError(f"make_tiny_imdb_tarball: expected keys (train|test, pos|neg|unsup), "
                             f"got {(split, folder)!r}")
        for index, text in enumerate(texts):
            rating = {"pos": 7 + index % 4, "neg": 1 + index % 4, "unsup": 0}[folder]
            members[f"aclImdb/{split}/{folder}/{index}_{rating}.txt"] = text
    members.update(extra_files or {})
    folders = sorted({"/".join(name.split("/")[:depth])
                      for name in members for depth in range(1, name.count("/") + 1)})

    def add(archive, name, data=None):
        info = tarfile.TarInfo(name)
        info.mtime, info.uid, info.gid, info.uname, info.gname = 1306886400, 0, 0, "", ""
        if data is None:
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(info)
        else:
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))

    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as packed:
        with tarfile.open(fileobj=packed, mode="w", format=tarfile.GNU_FORMAT) as archive:
            for folder in folders:
                add(archive, folder + "/")
            for name in sorted(members):
                add(archive, name, members[name].encode("utf-8"))
    return path

