"""Text to batches for the sentiment example: tokenizer, vocabulary, encoding, the
dev/test split and padded batches. Python, numpy and tqdm; files are written with
minigrad.io.atomic_file.

    reviews (data.load_imdb) -> tokenize -> build_vocab -> encode_dataset -> batches
"""

from __future__ import annotations

import collections
import json
import re
from pathlib import Path

import numpy as np
from tqdm import tqdm

from minigrad.io import atomic_file

# fmt: off
__all__ = [
    "tokenize", "write_text_atomic", "Vocab", "build_vocab",
    "encode_dataset", "split_dev_test", "batches",
]
# fmt: on

# ----------------------------------------------------------------------------- text -> ids

_LINE_BREAK = re.compile(r"<br\s*/?>")
# A word: letters/digits (str.isalnum, so any script), with single apostrophes inside.
# Anything else that is not whitespace is a token of one character.
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*|\S")


def tokenize(text: str) -> list:
    """Split a review into lowercase tokens.

    Rules: lowercase; ``<br />``, ``<br/>`` and ``<br>`` become spaces; then a token is
    either a word, a run of letters or digits (any script: what ``str.isalnum`` accepts)
    that may contain single ASCII apostrophes between such characters ("don't",
    "80's"), or any other single non-space character ("great!!" -> great ! !).
    A leading or trailing apostrophe is its own token ("actors'" -> actors ').
    """
    return _TOKEN.findall(_LINE_BREAK.sub(" ", text.lower()))


def write_text_atomic(path, text):
    """Write text as UTF-8 through minigrad.io.atomic_file (a failed write never leaves a
    half-written file in place of a good one), creating the folder if needed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as file:
        file.write(text.encode("utf-8"))


class Vocab:
    """Token <-> id maps. Id 0 is ``[pad]``, id 1 is ``[unk]`` (every unknown token)."""

    PAD, UNK = "[pad]", "[unk]"
    pad_id, unk_id = 0, 1

    def __init__(self, itos):
        itos = list(itos)
        if itos[:2] != [self.PAD, self.UNK]:
            raise ValueError(
                f"Vocab: expected the list to start with {[self.PAD, self.UNK]}, got {itos[:2]}"
            )
        if len(set(itos)) != len(itos):
            duplicates = sorted(token for token, n in collections.Counter(itos).items() if n > 1)
            raise ValueError(f"Vocab: tokens must be unique, got duplicates {duplicates[:5]}")
        self.itos = itos
        self.stoi = {token: index for index, token in enumerate(itos)}

    def __len__(self):
        return len(self.itos)

    def __repr__(self):
        return f"Vocab({len(self)} tokens)"

    def encode(self, tokens) -> list:
        stoi, unk = self.stoi, self.unk_id
        return [stoi.get(token, unk) for token in tokens]

    def decode(self, ids) -> list:
        size = len(self.itos)
        tokens = []
        for index in ids:
            index = int(index)
            if not 0 <= index < size:
                raise ValueError(f"Vocab.decode: expected ids in [0, {size}), got {index}")
            tokens.append(self.itos[index])
        return tokens

    def to_json(self, path=None) -> str:
        """The vocabulary as JSON text; with ``path``, also written there atomically."""
        text = json.dumps(
            {"format": "minigrad-vocab", "version": 1, "itos": self.itos}, ensure_ascii=False
        )
        if path is not None:
            write_text_atomic(path, text)
        return text

    @classmethod
    def from_json(cls, source) -> "Vocab":
        """Load from a file path, or from JSON text (a string starting with ``{``)."""
        if isinstance(source, str) and source.lstrip().startswith("{"):
            text, where = source, "JSON text"
        else:
            text, where = Path(source).read_text(encoding="utf-8"), str(source)
        try:
            content = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"Vocab.from_json: {where} is not valid JSON ({exc})") from None
        if not isinstance(content, dict) or content.get("format") != "minigrad-vocab":
            raise ValueError(f"Vocab.from_json: expected a minigrad-vocab JSON object in {where}")
        return cls(content["itos"])


def build_vocab(token_lists, min_freq=1, max_size=None) -> Vocab:
    """``[pad]``, ``[unk]``, then tokens seen at least ``min_freq`` times, most frequent
    first, ties in alphabetical order. ``max_size`` caps ``len(vocab)``, the two
    special tokens included."""
    if max_size is not None and max_size < 2:
        raise ValueError(
            f"build_vocab: max_size counts [pad] and [unk], so it must be >= 2, got {max_size}"
        )
    counts = collections.Counter()
    for tokens in token_lists:
        counts.update(tokens)
    for special in (Vocab.PAD, Vocab.UNK):
        counts.pop(special, None)
    words = sorted(
        (token for token, n in counts.items() if n >= min_freq),
        key=lambda token: (-counts[token], token),
    )
    if max_size is not None:
        words = words[: max_size - 2]
    return Vocab([Vocab.PAD, Vocab.UNK, *words])


def encode_dataset(pairs, vocab: Vocab, max_len=256, progress=True) -> list:
    """``[(text, label)] -> [(ids, label)]``, ids an int64 array of at most ``max_len``
    ids (the first tokens of the review). ``text`` may also be an already tokenized
    list. A review with no tokens becomes a single ``[unk]`` so that every sequence has
    length >= 1."""
    if max_len < 1:
        raise ValueError(f"encode_dataset: expected max_len >= 1, got {max_len}")
    encoded = []
    for text, label in tqdm(pairs, desc="encoding", unit="review", disable=not progress):
        tokens = tokenize(text) if isinstance(text, str) else text
        ids = vocab.encode(tokens[:max_len]) or [vocab.unk_id]
        encoded.append((np.array(ids, dtype=np.int64), int(label)))
    return encoded


# ----------------------------------------------------------------------------- splits, batches


def split_dev_test(pairs, seed=0):
    """Shuffle with ``np.random.default_rng(seed).permutation``; first half dev, rest test."""
    order = np.random.default_rng(seed).permutation(len(pairs))
    half = len(pairs) // 2
    return [pairs[i] for i in order[:half]], [pairs[i] for i in order[half:]]


def batches(encoded, batch_size=128, shuffle=False, seed=None):
    """Yield ``(ids (B, T), lengths (B,), labels (B,))``, all int64, ids padded with 0 up
    to the longest review of the batch. With ``shuffle``, the order is
    ``np.random.default_rng(seed).permutation`` (pass a new seed each epoch). The last
    batch may be smaller."""
    if batch_size < 1:
        raise ValueError(f"batches: expected batch_size >= 1, got {batch_size}")
    order = (
        np.random.default_rng(seed).permutation(len(encoded)) if shuffle else range(len(encoded))
    )
    order = list(order)
    for start in range(0, len(order), batch_size):
        chosen = [encoded[i] for i in order[start : start + batch_size]]
        lengths = np.array([len(ids) for ids, _ in chosen], dtype=np.int64)
        ids = np.zeros((len(chosen), int(lengths.max())), dtype=np.int64)
        for row, (sequence, _) in enumerate(chosen):
            ids[row, : len(sequence)] = sequence
        labels = np.array([label for _, label in chosen], dtype=np.int64)
        yield ids, lengths, labels
