"""The sentiment example's IMDB data (examples/sentiment/data.py) against archives and folders made
by a careless or hostile hand (issue 14, "Files and command line"): tar bombs, sparse members
claiming gigabytes, too many members, folders of huge files, links leading outside the dataset,
formats it does not read. Each test holds a reproducer and asserts the fixed behaviour: a clear
message naming the file, nothing allocated on the word of a header. (The hostile checkpoints and
saves of minigrad/io are in tests/io/.)"""

import gzip
import tarfile

from memory_checks import peak_bytes
import pytest

from examples.sentiment import data

GIGABYTES = 8 * 10**9
REVIEWS = {
    ("train", "pos"): ["good"],
    ("train", "neg"): ["bad"],
    ("test", "pos"): ["fine"],
    ("test", "neg"): ["poor"],
}


def _octal(number, width):
    return b"%0*o\0" % (width - 1, number)


def gnu_sparse_header(name, real_size):
    """The header of a GNU sparse member whose one stored byte sits at the end of a file of
    real_size bytes: tarfile reads it as a real_size file of zeros (the 'hole') and a byte."""
    info = tarfile.TarInfo(name)
    info.type, info.size = tarfile.GNUTYPE_SPARSE, 1
    header = bytearray(info.tobuf(format=tarfile.GNU_FORMAT))
    # sparse map: (offset, bytes stored)
    header[386:410] = _octal(real_size - 1, 12) + _octal(1, 12)
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
    # would be skipped, for hours
    path = tiny_bomb(tmp_path / "bomb.tar.gz", "aclImdb/imdbEr.txt", GIGABYTES)
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
