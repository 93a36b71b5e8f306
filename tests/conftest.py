"""Fixtures shared by the tests.

make_imdb_tarball: a tiny IMDB tarball in the official layout, so that the sentiment example's
loader and training script are tested without the real data or a network.
"""

import bz2
import gzip
import io
import lzma
import tarfile
from pathlib import Path

import numpy as np
import pytest

import minigrad as mg

COMPRESSIONS = {
    "": lambda raw: raw,
    "gz": lambda raw: gzip.compress(raw, mtime=0),
    "bz2": bz2.compress,
    "xz": lzma.compress,
}


def write_imdb_tarball(path, reviews, extra_files=None, extra_members=(), compression="gz"):
    """Write an official-layout tarball and return its path.

    ``reviews`` maps ``(split, folder)`` to a list of texts, e.g. ``{("train", "pos"): ["great"],
    ("train", "neg"): ["bad"], ...}``, split in train/test and folder in pos/neg/unsup. File ``i``
    is ``aclImdb/<split>/<folder>/<i>_<rating>.txt`` (pos 7-10, neg 1-4, unsup 0, as in the
    official release). ``extra_files`` maps further archive paths to texts (README,
    imdb.vocab...); ``extra_members`` is a list of (TarInfo, payload bytes or None) appended
    as they are, for hostile archives. ``compression`` is "gz", "bz2", "xz" or "" (plain tar).
    The bytes are reproducible: the same arguments give the same file.
    """
    members = {}
    for (split, folder), texts in reviews.items():
        if split not in ("train", "test") or folder not in ("pos", "neg", "unsup"):
            raise ValueError(
                "write_imdb_tarball: expected keys (train|test, pos|neg|unsup), got "
                f"{(split, folder)!r}"
            )
        for index, text in enumerate(texts):
            rating = {"pos": 7 + index % 4, "neg": 1 + index % 4, "unsup": 0}[folder]
            members[f"aclImdb/{split}/{folder}/{index}_{rating}.txt"] = text
    members.update(extra_files or {})
    folders = sorted(
        {
            "/".join(name.split("/")[:depth])
            for name in members
            for depth in range(1, name.count("/") + 1)
        }
    )

    def add(archive, name, data=None):
        info = tarfile.TarInfo(name)
        info.mtime, info.uid, info.gid, info.uname, info.gname = 1306886400, 0, 0, "", ""
        if data is None:
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(info)
        else:
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for folder in folders:
            add(archive, folder + "/")
        for name in sorted(members):
            add(archive, name, members[name].encode("utf-8"))
        for info, payload in extra_members:
            archive.addfile(info, None if payload is None else io.BytesIO(payload))
    path = Path(path)
    path.write_bytes(COMPRESSIONS[compression](buffer.getvalue()))
    return path


LM_WORDS = "This movie was the good bad great plot actors film and".split()


def write_lm_tarball(path):
    """A tarball of 4 reviews per split and label, each 60 random words of LM_WORDS: enough text
    for the character language model's tests (examples/language_model) to train a few steps."""
    rng = np.random.default_rng(0)
    reviews = {
        (split, label): [" ".join(rng.choice(LM_WORDS, 60)) + ".<br />The end." for _ in range(4)]
        for split in ("train", "test")
        for label in ("pos", "neg")
    }
    return write_imdb_tarball(path, reviews)


@pytest.fixture
def make_imdb_tarball(tmp_path):
    """make_imdb_tarball(reviews, name="tiny.tar.gz", **options) -> the path of a tarball
    written by write_imdb_tarball in this test's tmp_path."""

    def make(reviews, name="tiny.tar.gz", **options):
        return write_imdb_tarball(tmp_path / name, reviews, **options)

    return make


# -- gradients of a whole module ----------------------------------------------------------


def check_module_gradients(module, x, *args, **kwargs):
    """mg.gradcheck of module(x, *args, **kwargs) with respect to x and every parameter.

    gradcheck makes its own float64 leaves, so they are put in the module in place of its
    Parameters before every call (the module is not usable as before afterwards).
    """
    names = [name for name, _ in module.named_parameters()]
    values = [parameter.numpy().astype(np.float64) for parameter in module.parameters()]

    def run(x, *parameters):
        for name, tensor in zip(names, parameters):
            *path, leaf = name.split(".")
            owner = module
            for part in path:
                owner = getattr(owner, part)
            owner._parameters[leaf] = tensor
        return module(x, *args, **kwargs)

    assert mg.gradcheck(run, [x.astype(np.float64)] + values)


@pytest.fixture
def gradcheck_module():
    """check_module_gradients: mg.gradcheck of a module's output with respect to its input and
    every parameter, in float64."""
    return check_module_gradients


# Hypothesis draws the same examples on every run (CI must not pass or fail by luck), and
# never times a test out: these machines are shared and noisy.
from hypothesis import settings  # noqa: E402

settings.register_profile("minigrad", derandomize=True, deadline=None)
settings.load_profile("minigrad")
