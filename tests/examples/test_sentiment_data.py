"""Tests for examples/sentiment/data.py (on tiny archives built in tmp_path by conftest's
make_imdb_tarball: no real IMDB, no network) and examples/sentiment/preprocess.py (tokenizer,
vocabulary, batches). Hostile archives and folders: test_hostile_files.py."""

import hashlib
import json
import tarfile
import urllib.error

import numpy as np
import pytest

from examples.sentiment import data, preprocess

REVIEWS = {
    ("train", "pos"): [f"train pos {i}" for i in range(12)],  # ids 0..11: 10 and 11 sort after 9
    ("train", "neg"): ["Bad<br /><br />film.", "Awful!!"],
    ("test", "pos"): ["Loved it", "Café au lait"],
    ("test", "neg"): ["Boring"],
    ("train", "unsup"): ["unlabelled, must be ignored"],
}
EXTRA_FILES = {
    "aclImdb/README": "readme",
    "aclImdb/imdb.vocab": "the\nand",
    "aclImdb/train/urls_pos.txt": "u",
}
EXPECTED = {
    "train": [("Bad<br /><br />film.", 0), ("Awful!!", 0)]
    + [(f"train pos {i}", 1) for i in range(12)],
    "test": [("Boring", 0), ("Loved it", 1), ("Café au lait", 1)],
}


COMPRESSIONS = ["gz", "bz2", "xz", ""]


@pytest.fixture
def tiny_tarball(make_imdb_tarball):
    return make_imdb_tarball(REVIEWS, extra_files=EXTRA_FILES)


@pytest.fixture
def no_network(monkeypatch):
    def offline(url, file, progress):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(data, "_fetch", offline)


# ----------------------------------------------------------------------------- loading


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_tarball_loads_labels_and_order_ignoring_other_files(make_imdb_tarball, compression):
    """The format is read from the first bytes, so the name does not have to say it."""
    path = make_imdb_tarball(
        REVIEWS, name="reviews.tar.any", extra_files=EXTRA_FILES, compression=compression
    )
    assert data.load_imdb(path, progress=False) == EXPECTED


def test_extracted_folder_gives_the_same_result(tiny_tarball, tmp_path):
    with tarfile.open(tiny_tarball) as archive:
        archive.extractall(tmp_path / "extracted", filter="data")
    assert data.load_imdb(tmp_path / "extracted", progress=False) == EXPECTED  # holds aclImdb/
    # is aclImdb/
    assert data.load_imdb(tmp_path / "extracted" / "aclImdb", progress=False) == EXPECTED


def test_loading_is_deterministic_and_tarball_reproducible(make_imdb_tarball):
    first = make_imdb_tarball(REVIEWS, name="a.tar.gz")
    second = make_imdb_tarball(REVIEWS, name="b.tar.gz")
    assert first.read_bytes() == second.read_bytes()
    assert (
        data.load_imdb(first, progress=False) == data.load_imdb(second, progress=False) == EXPECTED
    )


def test_cache_folder_and_env_var(tiny_tarball, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "aclImdb-labelled.tar.gz").write_bytes(tiny_tarball.read_bytes())
    monkeypatch.setattr(data, "_fetch", lambda *args: pytest.fail("must not download"))
    assert data.load_imdb(cache_dir=cache, progress=False) == EXPECTED
    monkeypatch.setenv("MINIGRAD_DATA", str(cache))
    assert data.default_cache_dir() == cache
    assert data.load_imdb(progress=False) == EXPECTED


def test_missing_path_and_wrong_folder(tmp_path):
    with pytest.raises(
        FileNotFoundError,
        match=r"expected a tarball \(.tar, .tar.gz, .tar.bz2, .tar.xz\) or a folder "
        r"at .*nope.tar.gz, but nothing is there",
    ):
        data.load_imdb(tmp_path / "nope.tar.gz", progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="aclImdb"):
        data.load_imdb(tmp_path / "empty", progress=False)


def test_missing_label_folder_is_an_error(make_imdb_tarball):
    reviews = {key: texts for key, texts in REVIEWS.items() if key != ("test", "neg")}
    path = make_imdb_tarball(reviews, name="partial.tar.gz")
    with pytest.raises(ValueError, match="aclImdb/test/neg"):
        data.load_imdb(path, progress=False)


def test_invalid_utf8_names_the_file(make_imdb_tarball):
    info = tarfile.TarInfo("aclImdb/test/pos/99_9.txt")
    info.size = 2
    path = make_imdb_tarball(REVIEWS, name="latin1.tar.gz", extra_members=[(info, b"\xe9!")])
    with pytest.raises(ValueError, match="99_9.txt.*UTF-8"):
        data.load_imdb(path, progress=False)


def test_duplicate_member_is_rejected(make_imdb_tarball):
    info = tarfile.TarInfo("aclImdb/test/neg/0_1.txt")
    info.size = 3
    path = make_imdb_tarball(REVIEWS, name="dup.tar.gz", extra_members=[(info, b"dup")])
    with pytest.raises(ValueError, match="twice"):
        data.load_imdb(path, progress=False)


def hostile(kind):
    if kind == "dotdot":
        info = tarfile.TarInfo("aclImdb/../../evil.txt")
        info.size = 1
        return info, b"x"
    if kind == "absolute":
        info = tarfile.TarInfo("/tmp/evil.txt")
        info.size = 1
        return info, b"x"
    info = tarfile.TarInfo("aclImdb/train/pos/100_9.txt")
    if kind == "symlink":
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
    elif kind == "hardlink":
        info.type, info.linkname = tarfile.LNKTYPE, "aclImdb/train/pos/0_1.txt"
    elif kind == "device":
        info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
    return info, None


@pytest.mark.parametrize(
    "kind, message",
    [
        ("dotdot", "'..'"),
        ("absolute", "absolute"),
        ("symlink", "symlink"),
        ("hardlink", "hardlink"),
        ("device", "device"),
    ],
)
def test_hostile_archives_are_rejected(make_imdb_tarball, kind, message):
    path = make_imdb_tarball(REVIEWS, name=f"{kind}.tar.gz", extra_members=[hostile(kind)])
    with pytest.raises(ValueError, match=f"unsafe archive .*{kind}.tar.gz.*{message}"):
        data.load_imdb(path, progress=False)


@pytest.mark.parametrize(
    "compression, error",
    [("gz", "(zlib.error|BadGzipFile)"), ("bz2", "OSError"), ("xz", "LZMAError")],
)
def test_garbled_compressed_data_names_the_file(make_imdb_tarball, compression, error):
    raw = bytearray(make_imdb_tarball(REVIEWS, compression=compression).read_bytes())
    for index in range(30, len(raw) - 20, 7):  # garble the compressed data, keep the header
        raw[index] ^= 0x5A
    path = make_imdb_tarball(REVIEWS, name="corrupt.tar")
    path.write_bytes(bytes(raw))
    with pytest.raises(
        ValueError, match=f"corrupt.tar: it is corrupt, truncated or not a tar file .*{error}"
    ):
        data.load_imdb(path, progress=False)


@pytest.mark.parametrize("compression, trailer_byte", [("gz", -8), ("bz2", -3)])
def test_checksum_errors_are_detected(make_imdb_tarball, compression, trailer_byte):
    """gzip ends with the CRC32 of the data, bzip2 with a CRC of the whole stream."""
    raw = bytearray(make_imdb_tarball(REVIEWS, compression=compression).read_bytes())
    raw[trailer_byte] ^= 0xFF
    path = make_imdb_tarball(REVIEWS, name="crc.tar")
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="crc.tar.*(CRC|corrupt)"):
        data.load_imdb(path, progress=False)


def test_not_an_archive_names_the_file(tmp_path):
    path = tmp_path / "notes.tar.gz"
    path.write_text("this is not a tarball at all " * 40)
    with pytest.raises(
        ValueError, match="notes.tar.gz: it is corrupt, truncated or not a tar file"
    ):
        data.load_imdb(path, progress=False)


@pytest.mark.parametrize("compression", ["gz", "bz2", "xz"])
def test_truncated_compressed_tarball_names_the_file(make_imdb_tarball, compression):
    raw = make_imdb_tarball(REVIEWS, compression=compression).read_bytes()
    path = make_imdb_tarball(REVIEWS, name="truncated.tar")
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="truncated.tar: it is corrupt, truncated.*EOFError"):
        data.load_imdb(path, progress=False)


@pytest.mark.parametrize(
    "where", ["inside the data of a member", "at a header boundary", "inside a header"]
)
def test_truncated_plain_tar_names_the_file(make_imdb_tarball, where):
    """At a header boundary tarfile alone would stop silently, as if the archive ended there."""
    path = make_imdb_tarball(REVIEWS, name="truncated.tar", compression="")
    with tarfile.open(path) as archive:
        members = [member for member in archive.getmembers() if member.isreg()]
    cut = {
        "inside the data of a member": members[0].offset_data + 1,
        "at a header boundary": members[3].offset,
        "inside a header": members[3].offset + 100,
    }[where]
    path.write_bytes(path.read_bytes()[:cut])
    with pytest.raises(ValueError, match="truncated.tar: it is corrupt, truncated"):
        data.load_imdb(path, progress=False)


# ----------------------------------------------------------------------------- download


def test_offline_without_data_lists_the_three_ways(tmp_path, no_network):
    cache = tmp_path / "cache"
    with pytest.raises(data.DataNotFoundError) as error:
        data.load_imdb(cache_dir=cache, progress=False)
    message = str(error.value)
    assert "--data PATH" in message and str(cache) in message and "MINIGRAD_DATA" in message
    assert data.IMDB_URL in message and "name resolution" in message
    assert list(cache.iterdir()) == []  # no partial file left behind


def test_download_disabled_lists_the_three_ways(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "_fetch", lambda *args: pytest.fail("must not download"))
    with pytest.raises(
        data.DataNotFoundError, match="(?s)--data PATH.*MINIGRAD_DATA.*download=False"
    ):
        data.load_imdb(cache_dir=tmp_path / "cache", download=False, progress=False)
    assert issubclass(data.DataNotFoundError, RuntimeError)


def test_checksum_mismatch_raises_and_leaves_nothing(tmp_path, monkeypatch):
    def fetch_bad_bytes(url, file, progress):
        file.write(b"<html>captive portal</html>")

    monkeypatch.setattr(data, "_fetch", fetch_bad_bytes)
    cache = tmp_path / "cache"
    bad_digest = hashlib.sha256(b"<html>captive portal</html>").hexdigest()
    with pytest.raises(ValueError, match=f"sha256 {bad_digest}, expected {data.IMDB_SHA256}"):
        data.load_imdb(cache_dir=cache, progress=False)
    assert list(cache.iterdir()) == []


def test_download_once_into_the_cache(tiny_tarball, tmp_path, monkeypatch):
    payload = tiny_tarball.read_bytes()
    calls = []

    def fetch(url, file, progress):
        calls.append(url)
        file.write(payload)

    monkeypatch.setattr(data, "_fetch", fetch)
    monkeypatch.setattr(data, "IMDB_SHA256", hashlib.sha256(payload).hexdigest())
    cache = tmp_path / "cache"
    assert data.load_imdb(cache_dir=cache, progress=False) == EXPECTED
    assert data.load_imdb(cache_dir=cache, progress=False) == EXPECTED
    assert calls == ["https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"]
    assert sorted(p.name for p in cache.iterdir()) == ["aclImdb_v1.tar.gz"]


def test_official_checksum_constant_is_well_formed():
    assert len(data.IMDB_SHA256) == 64 and int(data.IMDB_SHA256, 16) >= 0


# ----------------------------------------------------------------------------- tokenizer


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("", []),
        ("   \n\t ", []),
        ("Great!!", ["great", "!", "!"]),
        ("Bad<br /><br />film", ["bad", "film"]),
        ("a<br/>b<BR>c<br >d", ["a", "b", "c", "d"]),
        ("Don't stop; it's OK...", ["don't", "stop", ";", "it's", "ok", ".", ".", "."]),
        ("the actors' 'best' rock'n'roll", ["the", "actors", "'", "'", "best", "'", "rock'n'roll"]),
        (
            "10/10, 3.5 stars in the 80's",
            ["10", "/", "10", ",", "3", ".", "5", "stars", "in", "the", "80's"],
        ),
        ("Café NAÏVE Ärger — 東京", ["café", "naïve", "ärger", "—", "東京"]),
        ("snake_case (x)?", ["snake", "_", "case", "(", "x", ")", "?"]),
        ('"quoted"-word', ['"', "quoted", '"', "-", "word"]),
    ],
)
def test_tokenize(text, tokens):
    assert preprocess.tokenize(text) == tokens


# ----------------------------------------------------------------------------- vocab


def test_vocab_order_ties_and_specials():
    vocab = preprocess.build_vocab([["b", "a", "c", "b"], ["c", "d", "b"], ["e"]])
    # b:3, c:2, then a, d, e tied at 1 in alphabetical order
    assert vocab.itos == ["[pad]", "[unk]", "b", "c", "a", "d", "e"]
    assert (vocab.pad_id, vocab.unk_id, len(vocab)) == (0, 1, 7)
    assert vocab.stoi["b"] == 2 and vocab.stoi["e"] == 6
    assert vocab.encode(["c", "zzz", "b"]) == [3, 1, 2]
    assert vocab.decode(np.array([2, 0, 1])) == ["b", "[pad]", "[unk]"]
    with pytest.raises(ValueError, match=r"\[0, 7\).*got 7"):
        vocab.decode([7])


def test_vocab_min_freq_and_max_size():
    lists = [["x"] * 5 + ["y"] * 3 + ["z"] * 3 + ["w"]]
    assert preprocess.build_vocab(lists, min_freq=3).itos == ["[pad]", "[unk]", "x", "y", "z"]
    assert preprocess.build_vocab(lists, max_size=4).itos == ["[pad]", "[unk]", "x", "y"]
    assert preprocess.build_vocab(lists, max_size=2).itos == ["[pad]", "[unk]"]
    with pytest.raises(ValueError, match="max_size"):
        preprocess.build_vocab(lists, max_size=1)


def test_vocab_ignores_special_strings_in_input():
    assert preprocess.build_vocab([["[unk]", "[pad]", "a"]]).itos == ["[pad]", "[unk]", "a"]


def test_vocab_json_round_trip(tmp_path):
    vocab = preprocess.build_vocab([["naïve", "film", "film", "東京"]])
    path = tmp_path / "vocab.json"
    text = vocab.to_json(path)
    assert path.read_text(encoding="utf-8") == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vocab.json"]  # no temp file left
    assert json.loads(text)["itos"] == ["[pad]", "[unk]", "film", "naïve", "東京"]
    for source in (path, str(path), text):
        loaded = preprocess.Vocab.from_json(source)
        assert loaded.itos == vocab.itos and loaded.stoi == vocab.stoi


def test_vocab_rejects_bad_json(tmp_path):
    with pytest.raises(ValueError, match="minigrad-vocab"):
        preprocess.Vocab.from_json('{"itos": ["[pad]", "[unk]"]}')
    with pytest.raises(ValueError, match=r"start with \['\[pad\]', '\[unk\]'\]"):
        preprocess.Vocab(["a", "[pad]"])
    with pytest.raises(ValueError, match="duplicates"):
        preprocess.Vocab(["[pad]", "[unk]", "a", "a"])


# ----------------------------------------------------------------------------- encode, split, batch


def test_encode_dataset_truncates_and_handles_empty():
    vocab = preprocess.Vocab(["[pad]", "[unk]", "good", "bad", "!"])
    encoded = preprocess.encode_dataset(
        [("Good good BAD!", 1), ("", 0), ("<br />", 0), (["bad", "new"], 0)],
        vocab,
        max_len=3,
        progress=False,
    )
    ids = [item[0] for item in encoded]
    assert [item[1] for item in encoded] == [1, 0, 0, 0]
    assert all(array.dtype == np.int64 for array in ids)
    assert [array.tolist() for array in ids] == [[2, 2, 3], [1], [1], [3, 1]]


def test_split_dev_test_deterministic_and_disjoint():
    pairs = [(f"review {i}", i % 2) for i in range(11)]
    dev, test = preprocess.split_dev_test(pairs, seed=0)
    order = np.random.default_rng(0).permutation(11)
    assert dev == [pairs[i] for i in order[:5]] and test == [pairs[i] for i in order[5:]]
    assert (len(dev), len(test)) == (5, 6)
    assert set(dev).isdisjoint(test) and sorted(dev + test) == sorted(pairs)
    assert preprocess.split_dev_test(pairs, seed=0) == (dev, test)
    assert preprocess.split_dev_test(pairs, seed=1) != (dev, test)


def test_batches_pad_with_zero_and_report_lengths():
    encoded = [
        (np.array([5, 6, 7], dtype=np.int64), 1),
        (np.array([8], dtype=np.int64), 0),
        (np.array([9, 10], dtype=np.int64), 1),
    ]
    (ids, lengths, labels), (last_ids, last_lengths, last_labels) = preprocess.batches(
        encoded, batch_size=2
    )
    np.testing.assert_array_equal(ids, [[5, 6, 7], [8, 0, 0]])
    np.testing.assert_array_equal(lengths, [3, 1])
    np.testing.assert_array_equal(labels, [1, 0])
    np.testing.assert_array_equal(last_ids, [[9, 10]])  # last partial batch
    np.testing.assert_array_equal(last_lengths, [2])
    np.testing.assert_array_equal(last_labels, [1])
    assert ids.dtype == lengths.dtype == labels.dtype == np.int64


def test_batches_shuffle_follows_the_seed():
    encoded = [(np.full(i % 4 + 1, i, dtype=np.int64), i % 2) for i in range(10)]
    order = np.random.default_rng(3).permutation(10)
    first_rows = [
        ids[:, 0] for ids, _, _ in preprocess.batches(encoded, batch_size=4, shuffle=True, seed=3)
    ]
    np.testing.assert_array_equal(np.concatenate(first_rows), order)
    lengths = np.concatenate(
        [lens for _, lens, _ in preprocess.batches(encoded, batch_size=4, shuffle=True, seed=3)]
    )
    np.testing.assert_array_equal(lengths, order % 4 + 1)
    with pytest.raises(ValueError, match="batch_size >= 1, got 0"):
        next(preprocess.batches(encoded, batch_size=0))


def test_a_file_id_of_thousands_of_digits_loads_in_numeric_order(make_imdb_tarball):
    """Python refuses int() of more than 4,300 digits; the ids are ordered without converting."""
    huge = "9" * 5000
    path = make_imdb_tarball(
        REVIEWS, extra_files={f"aclImdb/train/pos/{huge}_7.txt": "a review with a long id"}
    )
    loaded = data.load_imdb(path, progress=False)
    texts = [text for text, _ in loaded["train"]]
    assert "a review with a long id" in texts
    rng = np.random.default_rng(0)
    ids = [str(n) for n in rng.integers(0, 10**6, size=200)] + [
        "0",
        "007",
        "10",
        "9" * 4000,
        "1" + "0" * 3999,
    ]
    by_key = sorted(ids, key=lambda i: data._sort_key(f"{i}_1.txt"))
    assert [int(i) for i in by_key] == sorted(int(i) for i in ids)
