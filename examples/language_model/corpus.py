"""The IMDB review texts as one long string of characters, for a character language model.

The reviews are read by the sentiment example's loader (examples/sentiment/data.py: the
official tarball, an extracted folder, or the cache folder). Labels are dropped. HTML line
breaks (`<br />`) become spaces, and each review ends with a newline, so the model also
learns where a review stops.

    train: the 25,000 reviews of IMDB's train split, in a fixed shuffled order
    validation: a fixed slice of the test split (held out: never trained on)

The vocabulary is every character of the training text, sorted by code point, plus one id
for characters that only the validation text (or a prompt) has.
"""

import numpy as np

from examples.sentiment import data as imdb

UNKNOWN = "\ufffd"  # the id of characters the training text does not have
VALIDATION_CHARACTERS = 1_000_000


def clean(text):
    """A review as the model sees it: `<br />` line breaks as spaces, a newline at the end."""
    return text.replace("<br />", " ").replace("<br/>", " ").replace("<br>", " ") + "\n"


def load_texts(data=None, progress=True, validation_characters=VALIDATION_CHARACTERS):
    """(train text, validation text) from the IMDB reviews (see the top of this file for where
    they are read from). The train reviews are shuffled with a fixed seed (the loader sorts them
    by label); validation is the first `validation_characters` of the shuffled test reviews."""
    reviews = imdb.load_imdb(data, progress=progress)
    order = np.random.default_rng(0)
    train = [reviews["train"][i][0] for i in order.permutation(len(reviews["train"]))]
    test = [reviews["test"][i][0] for i in order.permutation(len(reviews["test"]))]
    validation = "".join(clean(text) for text in test)[:validation_characters]
    return "".join(clean(text) for text in train), validation


class Vocabulary:
    """Characters <-> ids. ids are positions in `characters` (sorted); id 0 is UNKNOWN."""

    def __init__(self, characters):
        characters = sorted(set(characters) - {UNKNOWN})
        self.characters = [UNKNOWN] + characters
        self._code_points = np.array([ord(c) for c in characters], dtype=np.int64)  # sorted

    @classmethod
    def from_text(cls, text):
        return cls(set(text))

    @classmethod
    def from_code_points(cls, code_points):
        """The inverse of `code_points()` (how a checkpoint stores the vocabulary): a 1-D integer
        array, UNKNOWN's code point first, then the characters' in increasing order (ids are
        positions, so any other order would silently give the model other characters). Anything
        else raises ValueError saying what is wrong."""
        if not isinstance(code_points, np.ndarray) or code_points.dtype.kind not in "iu":
            kind = getattr(code_points, "dtype", type(code_points).__name__)
            raise ValueError(f"the vocabulary is {kind}; expected an array of integer code points")
        if code_points.ndim != 1 or not code_points.size:
            raise ValueError(
                f"the vocabulary has shape {code_points.shape}; "
                "expected a 1-D array of code points (UNKNOWN's first)"
            )
        if code_points[0] != ord(UNKNOWN):
            raise ValueError(
                f"the vocabulary starts with {int(code_points[0])}; expected {ord(UNKNOWN)} "
                "(U+FFFD, the unknown character)"
            )
        characters = code_points[1:]
        invalid = characters[
            (characters < 0)
            | (characters > 0x10FFFF)
            | ((characters >= 0xD800) & (characters <= 0xDFFF))  # surrogates: not text
            | (characters == ord(UNKNOWN))
        ]
        if invalid.size:
            raise ValueError(
                f"the vocabulary holds {int(invalid[0]):#x}, which is not the code point of a "
                "character (0 to 0x10FFFF, no surrogates, U+FFFD only first)"
            )
        if not np.all(characters[1:] > characters[:-1]):
            raise ValueError("the vocabulary's code points are not in increasing order")
        return cls(chr(int(c)) for c in characters)

    def code_points(self):
        """The characters as an int array (UNKNOWN first), to store with mg.save."""
        return np.array([ord(c) for c in self.characters], dtype=np.int64)

    def __len__(self):
        return len(self.characters)

    def encode(self, text):
        """text -> int64 ids (len(text),); characters outside the vocabulary -> 0."""
        points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        if not self._code_points.size:
            return np.zeros(points.shape, np.int64)
        position = np.minimum(
            np.searchsorted(self._code_points, points), self._code_points.size - 1
        )
        return np.where(self._code_points[position] == points, position + 1, 0)

    def decode(self, ids):
        return "".join(self.characters[i] for i in np.asarray(ids).reshape(-1))


def encode(vocabulary, text, dtype=np.uint16, chunk=1 << 22):
    """vocabulary.encode(text) as a compact array of `dtype`, a few million characters at a time
    (the int64 ids of all 33 million characters of the reviews would take 260 MB at once)."""
    return np.concatenate(
        [
            vocabulary.encode(text[start : start + chunk]).astype(dtype)
            for start in range(0, len(text), chunk)
        ]
        or [np.zeros(0, dtype)]
    )


def random_batches(ids, batch_size, context, seed):
    """Endless (inputs, targets) pairs of int64 (batch_size, context) arrays: windows of `ids`
    starting at random positions, targets one character further. The same seed gives the same
    batches (the PyTorch twin in benchmarks/ replays them)."""
    if len(ids) < context + 1:
        raise ValueError(
            f"the text has {len(ids)} characters; a context of {context} needs at least "
            f"{context + 1}"
        )
    rng = np.random.default_rng(seed)
    offsets = np.arange(context + 1)
    while True:
        starts = rng.integers(0, len(ids) - context, batch_size)
        windows = ids[starts[:, None] + offsets].astype(np.int64)
        yield windows[:, :-1], windows[:, 1:]


def evaluation_batches(ids, batch_size, context, max_batches):
    """Fixed (inputs, targets) batches for the validation loss: consecutive windows of `ids`
    from the start, at most `max_batches` of them (fewer when the text is short)."""
    windows = min(max_batches * batch_size, (len(ids) - 1) // context)
    if windows < 1:
        raise ValueError(
            f"the validation text has {len(ids)} characters; a context of {context} needs at "
            f"least {context + 1}"
        )
    starts = np.arange(windows) * context
    offsets = np.arange(context + 1)
    for first in range(0, windows, batch_size):
        chunk = ids[starts[first : first + batch_size, None] + offsets].astype(np.int64)
        yield chunk[:, :-1], chunk[:, 1:]
