"""Panel 4, "A trained model": the IMDB classifier of examples/sentiment reads a review.

examples/sentiment/train.py --pool P writes runs/P/best.npz (mg.save of the model's state dict)
and runs/P/vocab.json (the vocabulary). Shelf finds them, rebuilds the model from the shapes in
the checkpoint, and classifies one review: the label, its probability, and the weight the
pooling gives each token.
"""

import os
import threading
from collections.abc import Mapping
from pathlib import Path

import numpy as np

import minigrad as mg

from examples.sentiment import preprocess
from examples.sentiment.model import POOLINGS, SentimentModel

from . import inputs

MAX_REVIEW_CHARACTERS = 5000
MAX_TOKENS = 256  # the model was trained on the first 256 tokens of each review
LABELS = ("negative", "positive")  # label 1 is a positive review (examples/sentiment/data.py)
WEIGHT_KINDS = {
    "additive": "attention weights of the additive pooling",
    "dot": "attention weights of the dot-product pooling",
    "mhsa": "attention each token receives, averaged over the 8 heads and all queries",
    "mean": "mean pooling: every token weighs 1/length (this model has no attention)",
}


def make_command(pool="dot"):
    return f"python examples/sentiment/train.py --quick --pool {pool}"


def _described(value):
    """What a checkpoint entry is, for a message: mg.load gives back a saved dict as a
    Checkpoint."""
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype}"
    return "a dict" if isinstance(value, Mapping) else f"a {type(value).__name__}"


class Shelf:
    """The checkpoints under one runs folder, loaded on first use (and again when the file
    changes)."""

    def __init__(self, runs):
        self.runs = Path(runs)
        self._loaded = {}  # pool -> (modification time, model, vocab)
        # The loaded models keep their last attention weights on their modules: one reader at
        # a time (a prediction takes milliseconds; training sessions do not wait for it).
        self._lock = threading.Lock()

    def checkpoints(self):
        """The poolings that have both runs/<pool>/best.npz and runs/<pool>/vocab.json."""
        return [
            pool
            for pool in POOLINGS
            if (self.runs / pool / "best.npz").is_file()
            and (self.runs / pool / "vocab.json").is_file()
        ]

    def status(self):
        found = self.checkpoints()
        message = None
        if not found:
            message = (
                f"No trained model in {os.path.abspath(self.runs)}. Make one with the one-minute "
                f"demo\n    {make_command()}\nor the full IMDB experiment (about 4 minutes for dot "
                "pooling)\n    python examples/sentiment/train.py --pool dot\nthen open this panel "
                "again. (Checkpoints elsewhere: start the lab with --runs FOLDER.)"
            )
        return {
            "runs": str(self.runs),
            "checkpoints": found,
            "message": message,
            "max_characters": MAX_REVIEW_CHARACTERS,
            "max_tokens": MAX_TOKENS,
        }

    def model(self, pool):
        """(model, vocab) for one pooling, rebuilt from its checkpoint."""
        pool = inputs.choice("model", pool, POOLINGS)
        folder = self.runs / pool
        checkpoint, vocab_file = folder / "best.npz", folder / "vocab.json"
        if pool not in self.checkpoints():
            raise inputs.LabInputError(
                f"no checkpoint for the {pool} pooling in {folder}: make one with "
                f"{make_command(pool)}"
            )
        stamp = (checkpoint.stat().st_mtime_ns, vocab_file.stat().st_mtime_ns)
        if pool in self._loaded and self._loaded[pool][0] == stamp:
            return self._loaded[pool][1:]
        try:
            vocab = preprocess.Vocab.from_json(vocab_file)
            state = mg.load(checkpoint)
            for name, value in state.items():  # mg.load keeps Python values as they were saved
                if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
                    raise ValueError(
                        f"{inputs._shown(name, 60)} is {_described(value)}, not an array of "
                        "numbers: the file is not a checkpoint of examples/sentiment/train.py"
                    )
            embedding = np.shape(state.get("embedding.weight"))
            hidden = np.shape(state.get("encoder.weight_hh_l0"))
            if len(embedding) != 2 or len(hidden) != 2:
                raise ValueError(
                    "expected the weights embedding.weight and encoder.weight_hh_l0 of "
                    "examples/sentiment/model.py"
                )
            if embedding[0] != len(vocab):
                raise ValueError(
                    f"vocab.json has {len(vocab)} tokens but embedding.weight has {embedding[0]} "
                    "rows"
                )
            model = SentimentModel(
                len(vocab), pool=pool, embedding_dim=embedding[1], hidden_size=hidden[1]
            )
            model.load_state_dict(state)
        except (OSError, ValueError, TypeError, KeyError, RuntimeError) as error:
            raise inputs.LabInputError(
                f"could not load the {pool} model from {folder}: {error}"
            ) from None
        model.eval()
        self._loaded[pool] = (stamp, model, vocab)
        return model, vocab

    def predict(self, request):
        """{"model": pool, "text": review} -> label, probability and per-token weights."""
        if not isinstance(request, dict):
            raise inputs.LabInputError("expected a JSON object with a model and a text")
        text = inputs.text("review", request.get("text"), MAX_REVIEW_CHARACTERS)
        with self._lock:
            return self._predict(text, request.get("model"))

    def _predict(self, text, pool):
        model, vocab = self.model(pool)
        all_tokens = preprocess.tokenize(text)
        if not all_tokens:
            raise inputs.LabInputError("review: no words in it; type a sentence")
        tokens = all_tokens[:MAX_TOKENS]
        ids = np.array([vocab.encode(tokens)], dtype=np.int64)
        lengths = np.array([len(tokens)], dtype=np.int64)
        with mg.no_grad():
            probabilities = mg.softmax(model(mg.tensor(ids), lengths), dim=-1).numpy()[0]
        if model.pool_name in ("additive", "dot"):
            weights = model.attention_weights()[0]
        elif model.pool_name == "mhsa":
            # (T,): over heads, then queries
            weights = model.attention.last_weights[0].mean(axis=(0, 1))
        else:
            weights = np.full(len(tokens), 1.0 / len(tokens))
        label = int(probabilities.argmax())
        return {
            "model": model.pool_name,
            "tokens": tokens,
            "known": [i != vocab.unk_id for i in ids[0].tolist()],
            "weights": inputs.plain(weights),
            "weights_kind": WEIGHT_KINDS[model.pool_name],
            "label": LABELS[label],
            "probability": float(probabilities[label]),
            "probability_positive": float(probabilities[1]),
            "tokens_read": len(tokens),
            "tokens_total": len(all_tokens),
        }
