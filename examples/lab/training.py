"""Panel 2, "Train the four matrices", and panel 3, "The graph".

The task is the toy sentiment task of examples/four_matrices.py: sentences of five words, one
of them good/great (positive) or bad/awful (negative), the rest filler words whose vectors
are twice as long. The model is SelfAttention(8) (W_Q, W_K, W_V, W_O) -> mean over the words
-> Linear(8, 2), trained by plain gradient descent, W <- W - lr * grad, so that the update
the page shows is exactly the gradient times the learning rate.

A TrainingSession is one browser tab's model; the server keeps one per tab.
"""

import tempfile
from pathlib import Path

import numpy as np

import minigrad as mg

from examples import four_matrices as task

from . import inputs

DEFAULT_LEARNING_RATE = 0.1  # the loss falls from 1.30 to about 0.07 in 100 steps
LEARNING_RATE_RANGE = (1e-4, 10.0)
MAX_STEPS_PER_REQUEST = 200
MAX_STEPS = 5000  # then the page asks for a reset: the loss curve stays drawable
MATRICES = task.MATRICES  # query_weight, key_weight, value_weight, output_weight
SHORT_NAMES = task.SHORT_NAMES
COLLAPSIBLE = {"attention": "SelfAttention", "pool": "MeanPooling", "classifier": "Linear"}
WALK_VALUES = 64  # the walk's gradients carry their values up to this size (an 8 x 8 matrix)

_data = None


def task_data():
    """(word vectors, training inputs (128, 5, 8), labels (128,)): the same as four_matrices.py."""
    global _data
    if _data is None:
        vectors = task.word_vectors()
        ids, labels = task.make_sentences(task.TRAIN_SIZE, np.random.default_rng(task.SEED + 1))
        _data = vectors, vectors[ids], labels
    return _data


def describe_task():
    """The words of the task, for the page's explanation."""
    return {
        "fillers": list(task.FILLERS),
        "positive": list(task.POSITIVE),
        "negative": list(task.NEGATIVE),
        "train_size": task.TRAIN_SIZE,
        "sentence_length": task.SENTENCE_LENGTH,
        "features": task.FEATURES,
        "sentence": list(task.FIXED_SENTENCE),
    }


class TrainingSession:
    """One model being trained, step by step; state() is what the page draws."""

    def __init__(self):
        self.reset()

    def reset(self):
        # Seeded: every reset starts from the same numbers as task.untrained_model(). The
        # generator is this thread's own, so tabs resetting at once do not share the global one.
        with mg.random.using_generator(np.random.default_rng(task.SEED)):
            self.model = task.AttentionClassifier()
        self.losses = []  # the loss each step's gradient came from
        self.last_step = None  # matrices, gradients and updates of the most recent step
        self.diverged = False

    def matrix(self, name):
        return getattr(self.model.attention, name)

    def step(self, count, learning_rate):
        """count steps of W <- W - learning_rate * grad on the whole training set."""
        count = inputs.integer("steps", count, 1, MAX_STEPS_PER_REQUEST)
        learning_rate = inputs.number("learning rate", learning_rate, *LEARNING_RATE_RANGE)
        if self.diverged:
            raise inputs.LabInputError(
                "the training has diverged (the loss is not a finite number any more): "
                "press reset, then try a smaller learning rate"
            )
        if len(self.losses) + count > MAX_STEPS:
            raise inputs.LabInputError(
                f"this session has trained {len(self.losses)} steps; "
                f"the lab stops at {MAX_STEPS}: press reset to start again"
            )
        _, x, labels = task_data()
        x, targets = mg.tensor(x), mg.tensor(labels)
        optimizer = mg.optim.SGD(self.model.parameters(), lr=learning_rate)
        # a too large rate overflows: reported below
        with np.errstate(over="ignore", invalid="ignore"):
            for _ in range(count):
                loss = mg.cross_entropy(self.model(x), targets)
                optimizer.zero_grad()
                loss.backward()
                before = {name: self.matrix(name).numpy().copy() for name in MATRICES}
                gradients = {name: self.matrix(name).grad.numpy().copy() for name in MATRICES}
                optimizer.step()
                self.losses.append(loss.item())
                self.last_step = {
                    "learning_rate": learning_rate,
                    "before": before,
                    "gradients": gradients,
                    "updates": {
                        name: self.matrix(name).numpy() - before[name] for name in MATRICES
                    },
                }
                if not all(np.isfinite(p.numpy()).all() for p in self.model.parameters()):
                    self.diverged = True
                    break
            optimizer.zero_grad()
            return self.state()

    def state(self):
        """The loss curve, accuracy, the four matrices with the last step's gradients and
        updates, and the attention weights of the fixed sentence, as plain data."""
        vectors, x, labels = task_data()
        # after divergence: NaN, reported
        with mg.no_grad(), np.errstate(over="ignore", invalid="ignore"):
            logits = self.model(mg.tensor(x))
            loss_now = mg.cross_entropy(logits, mg.tensor(labels)).item()
        accuracy = float((logits.numpy().argmax(axis=1) == labels).mean())
        with np.errstate(over="ignore", invalid="ignore"):
            # (5, 5), row = the word asking
            weights = task.attention_of(self.model, vectors, task.FIXED_SENTENCE)
        last = self.last_step
        matrices = {}
        for name in MATRICES:
            matrices[name] = {
                "label": SHORT_NAMES[name],
                "value": inputs.plain(self.matrix(name).numpy()),
                "before": inputs.plain(last["before"][name]) if last else None,
                "gradient": inputs.plain(last["gradients"][name]) if last else None,
                "update": inputs.plain(last["updates"][name]) if last else None,
            }
        message = None
        if self.diverged:
            message = (
                "The loss is not a finite number any more: the learning rate "
                f"{last['learning_rate']:g} was too large. Press reset and try a smaller one."
            )
        return {
            "step": len(self.losses),
            "losses": inputs.plain(self.losses + [loss_now]),
            "loss": inputs.plain(loss_now),
            "accuracy": accuracy,
            "learning_rate": last["learning_rate"] if last else None,
            "matrices": matrices,
            "sentence": list(task.FIXED_SENTENCE),
            "sentence_weights": inputs.plain(weights),
            "received": inputs.plain(weights.mean(axis=0)),
            "parameters": [name for name, _ in self.model.named_parameters()],
            "diverged": self.diverged,
            "message": message,
        }

    def graph(self, collapse=(), fold_views=False):
        """Panel 3: one forward and backward of the current model on the fixed sentence (label
        positive), drawn by mg.viz with the gradient paths to the four matrices in red and
        every tensor's gradient, signed. The backward is mg.viz.replay's, so the page can step
        through the walk it made, on the drawing as drawn: with modules collapsed (their ops
        light up their box) and with the Reshape/Permute chains folded into the edges.

        Returns {"available", "svg" (or None), "dot", "message", "walk"}; without Graphviz's
        `dot` program there is no SVG and the message says how to install it. "walk" is
        {"steps": replay.to_dicts(), "matrices": {name: {"label", "name", "id", "total",
        "grad", "largest_difference"}}}: per matrix its name and node id in the drawing, the
        sum of the gradients the walk brought it, its `.grad` and the largest difference.
        """
        if not isinstance(collapse, list) or any(
            not isinstance(name, str) or name not in COLLAPSIBLE for name in collapse
        ):  # a name checked as text first: a list or dict is no key of COLLAPSIBLE
            raise inputs.LabInputError(
                f"collapse: expected a list drawn from {', '.join(COLLAPSIBLE)}; "
                f"got {collapse!r:.60}"
            )
        if not isinstance(fold_views, bool):
            raise inputs.LabInputError(
                f"fold: expected true or false; got {type(fold_views).__name__} {fold_views!r:.40}"
            )
        vectors, _, _ = task_data()
        words = mg.tensor(vectors[task.sentence_ids(task.FIXED_SENTENCE)])
        words.name = "words"
        label = mg.tensor(np.array([1]))
        label.name = "label"
        self.model.zero_grad()
        loss = mg.cross_entropy(self.model(words), label)
        loss.name = "loss"
        matrices = [self.matrix(name) for name in MATRICES]
        drawing = {"highlight": matrices, "collapse": list(collapse) or None}
        drawing["fold_views"] = fold_views
        steps = mg.viz.replay(loss, params=self.model, **drawing)  # = loss.backward()
        graph = mg.viz.draw(loss, params=self.model, show_grad=steps, **drawing)
        walk = _walk(steps, dict(zip(MATRICES, matrices)))
        self.model.zero_grad()
        with tempfile.TemporaryDirectory() as folder:
            try:
                svg = Path(mg.viz.render(graph, Path(folder) / "graph.svg")).read_text(
                    encoding="utf-8"
                )
            except mg.viz.GraphvizNotFoundError as error:
                return {
                    "available": False,
                    "svg": None,
                    "dot": graph.source,
                    "message": str(error),
                    "walk": walk,
                }
        return {"available": True, "svg": svg, "dot": graph.source, "message": None, "walk": walk}


def _walk(steps, matrices):
    """The replayed backward walk as the page draws it (see TrainingSession.graph)."""
    totals = steps.totals()
    return {
        "steps": steps.to_dicts(max_values=WALK_VALUES),
        "matrices": {
            name: {
                "label": SHORT_NAMES[name],
                "name": steps.names[matrix],
                "id": steps.ids[matrix],
                "total": inputs.plain(totals[matrix].array),
                "grad": inputs.plain(matrix.grad.numpy()),
                "largest_difference": inputs.plain(
                    np.abs(totals[matrix].array - matrix.grad.numpy()).max()
                ),
            }
            for name, matrix in matrices.items()
        },
    }
