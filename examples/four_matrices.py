"""The four matrices of self-attention learn; the attention weights are computed, not learned.

    python examples/four_matrices.py [--images DIR]

A toy sentiment task: sentences of five words, four neutral filler words ("the", "plot", ...)
and one sentiment word ("good", "great" -> positive; "bad", "awful" -> negative) at a random
place. The word vectors are fixed random numbers, and the fillers are twice as long as the
sentiment words, so a plain average of the words is dominated by the fillers. The model is

    words (B, 5, 8) --SelfAttention(8): W_Q, W_K, W_V, W_O--> (B, 5, 8)
                    --mean over the words--> (B, 8) --Linear(8, 2)--> logits (B, 2)

and it is trained with Adam for a few hundred steps. What to watch:
- the loss falls, and W_Q, W_K, W_V and W_O all move away from their initial values. It starts
  above ln 2 = 0.69, the loss of a 50/50 guess (1.30 at step 0): the untrained model gives
  nearly every sentence the same confident answer (P(positive) about 0.8), because the fillers
  dominate every sentence's mean; the first steps take that offset away;
- in the fixed sentence "the acting was really good" the attention moves onto "good";
- what it learns to look at is the positive words, not "the sentiment word": on held-out
  sentences good and great get most of the sentence vector (0.65, 0.60), bad and awful little
  (0.13, 0.06). With two classes "a positive word is here, or not" separates the labels, and
  attention learns whatever lowers the loss, not what a person would underline (notebook 3
  adds a neutral class of fillers only, and then the negative words draw attention too). A
  filler can draw it as well: in "so great was the plot", "so" looks at itself;
- the attention weights are not parameters: they are not in named_parameters(), the optimizer
  never sees them, and every new sentence gets its own weights from the same four matrices.

Last, it draws the computation graph of one training step with the paths along which the
gradient reaches the four matrices in red, to DIR/four_matrices.svg (default docs/images/),
with the DOT text it is drawn from beside it (tests check the committed one against a rebuild).
"""

import argparse
import os
from pathlib import Path

import numpy as np

import minigrad as mg
from minigrad import nn

FILLERS = ("the", "movie", "was", "plot", "acting", "really", "a", "so")
POSITIVE = ("good", "great")
NEGATIVE = ("bad", "awful")
VOCABULARY = FILLERS + POSITIVE + NEGATIVE
FEATURES = 8
SENTENCE_LENGTH = 5
FILLER_SCALE = 2.0  # filler vectors twice as long as sentiment vectors: averaging drowns the signal
TRAIN_SIZE, HELD_OUT_SIZE = 128, 128
STEPS, LEARNING_RATE, REPORT_EVERY = 300, 0.003, 25
SEED = 0
FIXED_SENTENCE = ("the", "acting", "was", "really", "good")
OTHER_SENTENCE = ("so", "great", "was", "the", "plot")
MATRICES = ("query_weight", "key_weight", "value_weight", "output_weight")
SHORT_NAMES = {
    "query_weight": "W_Q",
    "key_weight": "W_K",
    "value_weight": "W_V",
    "output_weight": "W_O",
}
IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"


def word_vectors(seed=SEED):
    """The fixed (not learned) vector of every word in VOCABULARY: (len(VOCABULARY), FEATURES)
    float32."""
    vectors = (
        np.random.default_rng(seed).normal(size=(len(VOCABULARY), FEATURES)).astype(np.float32)
    )
    vectors[: len(FILLERS)] *= FILLER_SCALE
    return vectors


def make_sentences(count, rng):
    """count random sentences: word ids (count, SENTENCE_LENGTH) and labels (count,),
    1 = positive."""
    ids = rng.integers(len(FILLERS), size=(count, SENTENCE_LENGTH))
    labels = rng.integers(2, size=count)
    sentiment = np.where(labels == 1, VOCABULARY.index(POSITIVE[0]), VOCABULARY.index(NEGATIVE[0]))
    sentiment += rng.integers(2, size=count)  # good or great, bad or awful
    ids[np.arange(count), rng.integers(SENTENCE_LENGTH, size=count)] = sentiment
    return ids, labels


def sentence_ids(words):
    return np.array([[VOCABULARY.index(word) for word in words]])


class AttentionClassifier(nn.Module):
    """SelfAttention -> mean over the words -> Linear: (B, T, FEATURES) -> logits (B, 2)."""

    def __init__(self):
        super().__init__()
        # drawn step by step (MatMul, Softmax, MatMul)
        self.attention = nn.SelfAttention(FEATURES, fused=False)
        self.pool = nn.MeanPooling()
        self.classifier = nn.Linear(FEATURES, 2)

    def forward(self, x):
        return self.classifier(self.pool(self.attention(x)))


def untrained_model():
    """The model as training starts: the same numbers on every run (seeded)."""
    mg.manual_seed(SEED)
    return AttentionClassifier()


def print_table(title, header, rows, first_width=8):
    """Print rows of (label, numbers...) under a header, 4 decimals."""
    print(f"\n{title}")
    width = max(9, *(len(h) + 2 for h in header[1:]))
    print(f"{header[0]:<{first_width}}" + "".join(f"{h:>{width}}" for h in header[1:]))
    for label, *numbers in rows:
        print(f"{label!s:<{first_width}}" + "".join(f"{n:>{width}.4f}" for n in numbers))


def attention_of(model, vectors, words):
    """The (T, T) attention weights of one sentence (row = the word asking), without a graph."""
    with mg.no_grad():
        model(mg.tensor(vectors[sentence_ids(words)]))
    return model.attention.last_weights[0, 0].copy()


def train(model, vectors, ids, labels):
    """Adam on the whole training set for STEPS steps; returns the history of what changed."""
    initial = {name: getattr(model.attention, name).numpy().copy() for name in MATRICES}
    optimizer = mg.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    inputs, targets = mg.tensor(vectors[ids]), mg.tensor(labels)
    history = []
    for step in range(STEPS + 1):
        logits = model(inputs)
        loss = mg.cross_entropy(logits, targets)
        if step % REPORT_EVERY == 0:
            history.append(
                {
                    "step": step,
                    "loss": loss.item(),
                    "accuracy": float((logits.numpy().argmax(axis=1) == labels).mean()),
                    # How far each matrix has moved: the Frobenius norm of (W now - W at the start).
                    "moved": {
                        name: float(
                            np.linalg.norm(getattr(model.attention, name).numpy() - initial[name])
                        )
                        for name in MATRICES
                    },
                    # With mean pooling after attention, word j's share of the sentence vector is
                    # the average over the asking words i of weight_ij: the column means.
                    "received": attention_of(model, vectors, FIXED_SENTENCE).mean(axis=0),
                }
            )
        if step == STEPS:
            break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return history


def build_graph(model, vectors):
    """One training step on FIXED_SENTENCE, drawn with the four matrices' gradient paths in red."""
    x = mg.tensor(vectors[sentence_ids(FIXED_SENTENCE)])
    x.name = "words"
    label = mg.tensor(np.array([1]))
    label.name = "label"
    model.zero_grad()
    loss = mg.cross_entropy(model(x), label)
    loss.name = "loss"
    loss.backward()
    matrices = [getattr(model.attention, name) for name in MATRICES]
    graph = mg.viz.draw(loss, params=model, show_grad=True, highlight=matrices)
    model.zero_grad()
    return graph


def main(images=IMAGES):
    """Train, print the story, write the graph to images/ (None: skip); return the key numbers."""
    vectors = word_vectors()
    rng = np.random.default_rng(SEED + 1)
    train_ids, train_labels = make_sentences(TRAIN_SIZE, rng)
    held_out_ids, held_out_labels = make_sentences(HELD_OUT_SIZE, rng)
    model = untrained_model()

    # What will be learned: the four matrices and the small head. Nothing else.
    print("Parameters (what the optimizer updates):")
    for name, parameter in model.named_parameters():
        print(f"  {name:<26} {parameter.shape}")
    parameter_names = [name for name, _ in model.named_parameters()]
    print("No attention weights among them: those are computed from the input at every call.")

    # Draw the graph from the untrained model: the picture is the same at every step, and its
    # gradient norms do not depend on hundreds of steps of rounding.
    graph = build_graph(model, vectors)
    initial_parameters = {name: p.numpy().copy() for name, p in model.named_parameters()}
    weights_before = attention_of(model, vectors, FIXED_SENTENCE)
    history = train(model, vectors, train_ids, train_labels)
    weights_after = attention_of(model, vectors, FIXED_SENTENCE)

    print_table(
        f"Training: loss, accuracy, and how far each matrix moved (||W - W_start||), "
        f"Adam lr={LEARNING_RATE}",
        ["step", "loss", "accuracy", *(SHORT_NAMES[n] for n in MATRICES)],
        [(h["step"], h["loss"], h["accuracy"], *h["moved"].values()) for h in history],
    )
    print(
        f"(step 0's loss is above ln 2 = {np.log(2):.4f}, a 50/50 guess: the untrained model "
        "gives nearly every sentence the same confident answer)"
    )
    print_table(
        f'Attention each word of "{" ".join(FIXED_SENTENCE)}" receives '
        "(column means of its weights)",
        ["step", *FIXED_SENTENCE],
        [(h["step"], *h["received"]) for h in history],
    )
    print_table(
        "Its attention weights before training (row = the word asking)",
        ["", *FIXED_SENTENCE],
        zip(FIXED_SENTENCE, *weights_before.T),
    )
    print_table(
        "... and after training", ["", *FIXED_SENTENCE], zip(FIXED_SENTENCE, *weights_after.T)
    )

    # Generalisation: sentences the model never saw.
    with mg.no_grad():
        logits = model(mg.tensor(vectors[held_out_ids]))
    held_out_accuracy = float((logits.numpy().argmax(axis=1) == held_out_labels).mean())
    print(f"\naccuracy on {HELD_OUT_SIZE} held-out sentences: {held_out_accuracy:.4f}")

    # Which words does it look at? The share of each sentiment word, averaged over the held-out
    # sentences that contain it. Attention learns whatever lowers the loss, not what a person
    # would underline: one kind of word standing out is enough to tell the two classes apart.
    received = model.attention.last_weights[:, 0].mean(axis=1)  # (B, T): column means per sentence
    sentiment_words = POSITIVE + NEGATIVE
    received_by_word = {
        word: float(received[held_out_ids == VOCABULARY.index(word)].mean())
        for word in sentiment_words
    }
    print_table(
        "Average share of the sentence vector that each sentiment word gets (held-out sentences)",
        ["", *sentiment_words],
        [("share", *received_by_word.values())],
    )
    print(
        "It learnt to look at the positive words: with two classes, whether one is there already "
        "tells the labels apart."
    )

    # Same four matrices, another sentence: other weights. They are outputs of the matrices,
    # recomputed for every input, which is why no optimizer could store them.
    other_weights = attention_of(model, vectors, OTHER_SENTENCE)
    print_table(
        f'Same matrices, another sentence "{" ".join(OTHER_SENTENCE)}": its own weights',
        ["", *OTHER_SENTENCE],
        zip(OTHER_SENTENCE, *other_weights.T),
    )

    if images is not None:
        images = Path(images)
        images.mkdir(parents=True, exist_ok=True)
        (images / "four_matrices.dot").write_text(graph.source)
        written = mg.viz.render(graph, images / "four_matrices.svg")
        print(
            f"\nwrote {os.path.relpath(written)} (red: the gradient paths from the loss to W_Q, "
            "W_K, W_V, W_O)"
        )

    return {
        "vectors": vectors,
        "train_ids": train_ids,
        "train_labels": train_labels,
        "parameter_names": parameter_names,
        "history": history,
        "initial_parameters": initial_parameters,
        "final_parameters": {name: p.numpy().copy() for name, p in model.named_parameters()},
        "weights_before": weights_before,
        "weights_after": weights_after,
        "other_weights": other_weights,
        "held_out_accuracy": held_out_accuracy,
        "held_out_ids": held_out_ids,
        "received_by_word": received_by_word,
        "graph": graph,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--images", type=Path, default=IMAGES, help="where to write four_matrices.svg/.dot"
    )
    main(parser.parse_args().images)
