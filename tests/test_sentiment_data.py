"""Tests for examples/sentiment/data.py (on tiny archives built in tmp_path: no real IMDB, no network)
and examples/sentiment/preprocess.py (tokenizer, vocabulary, batches)."""

import gzip
import hashlib
import io
import json
import sys
import tarfile
import urllib.error
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from examples.sentiment import data, preprocess  # noqa: E402

REVIEWS = {
    ("train", "pos"): [f"train pos {i}" for i in range(12)],     # ids 0..11: 10 and 11 sort after 9
    ("train", "neg"): ["Bad<br /><br />film.", "Awful!!"],
    ("test", "pos"): ["Loved it", "Café au lait"],
    ("test", "neg"): ["Boring"],
    ("train", "unsup"): ["unlabelled, must be ignored"],
}
EXTRA_FILES = {"aclImdb/README": "readme", "aclImdb/imdb.vocab": "the\nand", "aclImdb/train/urls_pos.txt": "u"}
EXPECTED = {
    "train": [("Bad<br /><br />film.", 0), ("Awful!!", 0)] + [(f"train pos {i}", 1) for i in range(12)],
    "test": [("Boring", 0), ("Loved it", 1), ("Café au lait", 1)],
}


@pytest.fixture
def tiny_tarball(tmp_path):
    return data.make_tiny_imdb_tarball(tmp_path / "tiny.tar.gz", REVIEWS, extra_files=EXTRA_FILES)


@pytest.fixture
def no_network(monkeypatch):
    def offline(url, destination, progress):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")
    monkeypatch.setattr(data, "_fetch", offline)


def tar_bytes(extra_members, compress=True):
    """A valid tiny IMDB tar (gz) plus extra (TarInfo, payload) members appended."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for (split, folder), texts in REVIEWS.items():
            for index, text in enumerate(texts):
                payload = text.encode()
                info = tarfile.TarInfo(f"aclImdb/{split}/{folder}/{index}_1.txt")
                info.size = len(payload)
                archive.addfile(info, io.BytesIO(payload))
        for info, payload in extra_members:
            archive.addfile(info, None if payload is None else io.BytesIO(payload))
    raw = buffer.getvalue()
    return gzip.compress(raw, mtime=0) if compress else raw


# ----------------------------------------------------------------------------- loading

def test_tarball_loads_labels_and_order_ignoring_other_files(tiny_tarball):
    assert data.load_imdb(tiny_tarball, progress=False) == EXPECTED


def test_extracted_folder_gives_the_same_result(tiny_tarball, tmp_path):
    with tarfile.open(tiny_tarball) as archive:
        archive.extractall(tmp_path / "extracted", filter="data")
    assert data.load_imdb(tmp_path / "extracted", progress=False) == EXPECTED            # holds aclImdb/
    assert data.load_imdb(tmp_path / "extracted" / "aclImdb", progress=False) == EXPECTED  # is aclImdb/


def test_loading_is_deterministic_and_tarball_reproducible(tmp_path):
    first = data.make_tiny_imdb_tarball(tmp_path / "a.tar.gz", REVIEWS)
    second = data.make_tiny_imdb_tarball(tmp_path / "b.tar.gz", REVIEWS)
    assert first.read_bytes() == second.read_bytes()
    assert data.load_imdb(first, progress=False) == data.load_imdb(second, progress=False) == EXPECTED


def test_plain_tar_is_accepted(tmp_path):
    path = tmp_path / "plain.tar"
    path.write_bytes(tar_bytes([], compress=False))
    loaded = data.load_imdb(path, progress=False)
    assert [label for _, label in loaded["train"]] == [0, 0] + [1] * 12
    assert loaded["test"][0] == ("Boring", 0)


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
    with pytest.raises(FileNotFoundError, match="nothing is there"):
        data.load_imdb(tmp_path / "nope.tar.gz", progress=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="aclImdb"):
        data.load_imdb(tmp_path / "empty", progress=False)


def test_missing_label_folder_is_an_error(tmp_path):
    reviews = {key: texts for key, texts in REVIEWS.items() if key != ("test", "neg")}
    path = data.make_tiny_imdb_tarball(tmp_path / "partial.tar.gz", reviews)
    with pytest.raises(ValueError, match="aclImdb/test/neg"):
        data.load_imdb(path, progress=False)


def test_invalid_utf8_names_the_file(tmp_path):
    info = tarfile.TarInfo("aclImdb/test/pos/99_9.txt")
    info.size = 2
    path = tmp_path / "latin1.tar.gz"
    path.write_bytes(tar_bytes([(info, b"\xe9!")]))
    with pytest.raises(ValueError, match="99_9.txt.*UTF-8"):
        data.load_imdb(path, progress=False)


def test_duplicate_member_is_rejected(tmp_path):
    info = tarfile.TarInfo("aclImdb/test/neg/0_1.txt")
    info.size = 3
    path = tmp_path / "dup.tar.gz"
    path.write_bytes(tar_bytes([(info, b"dup")]))
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


@pytest.mark.parametrize("kind, message", [
    ("dotdot", "'..'"), ("absolute", "absolute"), ("symlink", "symlink"),
    ("hardlink", "hardlink"), ("device", "device")])
def test_hostile_archives_are_rejected(tmp_path, kind, message):
    path = tmp_path / f"{kind}.tar.gz"
    path.write_bytes(tar_bytes([hostile(kind)]))
    with pytest.raises(ValueError, match=f"unsafe archive .*{kind}.tar.gz.*{message}"):
        data.load_imdb(path, progress=False)


def test_corrupt_gzip_names_the_file(tiny_tarball, tmp_path):
    raw = bytearray(tiny_tarball.read_bytes())
    for index in range(30, len(raw) - 20, 7):       # garble the deflate data, keep the gzip header
        raw[index] ^= 0x5A
    path = tmp_path / "corrupt.tar.gz"
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="corrupt.tar.gz.*corrupt, truncated"):
        data.load_imdb(path, progress=False)


def test_gzip_crc_error_is_detected(tmp_path):
    raw = bytearray(tar_bytes([]))
    raw[-8] ^= 0xFF                                  # the CRC32 in the gzip trailer
    path = tmp_path / "crc.tar.gz"
    path.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="crc.tar.gz.*(CRC|corrupt)"):
        data.load_imdb(path, progress=False)


def test_not_an_archive_names_the_file(tmp_path):
    path = tmp_path / "notes.tar.gz"
    path.write_text("this is not a tarball at all " * 40)
    with pytest.raises(ValueError, match="notes.tar.gz"):
        data.load_imdb(path, progress=False)


def test_truncated_tar_gz_names_the_file(tiny_tarball, tmp_path):
    raw = tiny_tarball.read_bytes()
    path = tmp_path / "truncated.tar.gz"
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="truncated.tar.gz.*EOFError"):
        data.load_imdb(path, progress=False)


@pytest.mark.parametrize("cut", [
    512 * 3 + 100,     # inside the data of a member
    512 * 4,           # exactly at a header boundary: tarfile alone would stop silently
    512 * 4 + 100,     # inside a header
])
def test_truncated_plain_tar_names_the_file(tmp_path, cut):
    raw = tar_bytes([], compress=False)
    path = tmp_path / "truncated.tar"
    path.write_bytes(raw[:cut])
    with pytest.raises(ValueError, match="truncated.tar.*corrupt, truncated"):
        data.load_imdb(path, progress=False)


# ----------------------------------------------------------------------------- download

def test_offline_without_data_lists_the_three_ways(tmp_path, no_network):
    cache = tmp_path / "cache"
    with pytest.raises(data.DataNotFoundError) as error:
        data.load_imdb(cache_dir=cache, progress=False)
    message = str(error.value)
    assert "--data PATH" in message and str(cache) in message and "MINIGRAD_DATA" in message
    assert data.IMDB_URL in message and "name resolution" in message
    assert list(cache.iterdir()) == []                 # no partial file left behind


def test_download_disabled_lists_the_three_ways(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "_fetch", lambda *args: pytest.fail("must not download"))
    with pytest.raises(data.DataNotFoundError, match="(?s)--data PATH.*MINIGRAD_DATA.*download=False"):
        data.load_imdb(cache_dir=tmp_path / "cache", download=False, progress=False)
    assert issubclass(data.DataNotFoundError, RuntimeError)


def test_checksum_mismatch_raises_and_leaves_nothing(tmp_path, monkeypatch):
    def fetch_bad_bytes(url, destination, progress):
        Path(destination).write_bytes(b"<html>captive portal</html>")
    monkeypatch.setattr(data, "_fetch", fetch_bad_bytes)
    cache = tmp_path / "cache"
    bad_digest = hashlib.sha256(b"<html>captive portal</html>").hexdigest()
    with pytest.raises(ValueError, match=f"sha256 {bad_digest}, expected {data.IMDB_SHA256}"):
        data.load_imdb(cache_dir=cache, progress=False)
    assert list(cache.iterdir()) == []


def test_download_once_into_the_cache(tiny_tarball, tmp_path, monkeypatch):
    payload = tiny_tarball.read_bytes()
    calls = []

    def fetch(url, destination, progress):
        calls.append(url)
        Path(destination).write_bytes(payload)
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

@pytest.mark.parametrize("text, tokens", [
    ("", []),
    ("   \n\t ", []),
    ("Great!!", ["great", "!", "!"]),
    ("Bad<br /><br />film", ["bad", "film"]),
    ("a<br/>b<BR>c<br >d", ["a", "b", "c", "d"]),
    ("Don't stop; it's OK...", ["don't", "stop", ";", "it's", "ok", ".", ".", "."]),
    ("the actors' 'best' rock'n'roll", ["the", "actors", "'", "'", "best", "'", "rock'n'roll"]),
    ("10/10, 3.5 stars in the 80's", ["10", "/", "10", ",", "3", ".", "5", "stars", "in", "the", "80's"]),
    ("Café NAÏVE Ärger — 東京", ["café", "naïve", "ärger", "—", "東京"]),
    ("snake_case (x)?", ["snake", "_", "case", "(", "x", ")", "?"]),
    ('"quoted"-word', ['"', "quoted", '"', "-", "word"]),
])
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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vocab.json"]      # no temp file left
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
        [("Good good BAD!", 1), ("", 0), ("<br />", 0), (["bad", "new"], 0)], vocab, max_len=3, progress=False)
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
    encoded = [(np.array([5, 6, 7], dtype=np.int64), 1), (np.array([8], dtype=np.int64), 0),
               (np.array([9, 10], dtype=np.int64), 1)]
    (ids, lengths, labels), (last_ids, last_lengths, last_labels) = preprocess.batches(encoded, batch_size=2)
    np.testing.assert_array_equal(ids, [[5, 6, 7], [8, 0, 0]])
    np.testing.assert_array_equal(lengths, [3, 1])
    np.testing.assert_array_equal(labels, [1, 0])
    np.testing.assert_array_equal(last_ids, [[9, 10]])                       # last partial batch
    np.testing.assert_array_equal(last_lengths, [2])
    np.testing.assert_array_equal(last_labels, [1])
    assert ids.dtype == lengths.dtype == labels.dtype == np.int64


def test_batches_shuffle_follows_the_seed():
    encoded = [(np.full(i % 4 + 1, i, dtype=np.int64), i % 2) for i in range(10)]
    order = np.random.default_rng(3).permutation(10)
    first_rows = [ids[:, 0] for ids, _, _ in preprocess.batches(encoded, batch_size=4, shuffle=True, seed=3)]
    np.testing.assert_array_equal(np.concatenate(first_rows), order)
    lengths = np.concatenate([lens for _, lens, _ in preprocess.batches(encoded, batch_size=4, shuffle=True, seed=3)])
    np.testing.assert_array_equal(lengths, order % 4 + 1)
    with pytest.raises(ValueError, match="batch_size >= 1, got 0"):
        next(preprocess.batches(encoded, batch_size=0))
