"""Attention pooling: pick the words that matter, then average them.

    python examples/attention_pooling.py

A classifier needs one vector per sentence. Three ways to squeeze a (words, features) sentence
into one vector, all of the form  sum_t weight_t x_t  with weights >= 0 that sum to 1:
- mean pooling:        weight_t = 1 / length, every word counts the same;
- additive scoring:    score_t = v . tanh(x_t W + q U), weight = softmax(score);
- dot-product scoring: score_t = x_t . q,              weight = softmax(score).
q is a learned query ("what am I looking for?"); here every parameter is set by hand.

Sentences in a batch have different lengths, so the short ones are padded. The padding vector
below is deliberately large junk: the pooled vectors show it never leaks in, because padded
positions get weight exactly 0 (the softmax leaves their scores out of its max and sum).
main() returns every table as numpy arrays (tests/examples/test_teaching.py checks them
against plain numpy).
"""

import numpy as np

import minigrad as mg
from minigrad import nn

WORD_VECTORS = {  # 3 features per word
    "the": [0.1, 0.2, 0.0],
    "movie": [0.3, -0.1, 0.4],
    "was": [0.0, 0.1, 0.1],
    "good": [1.0, 0.9, -0.2],
    "so": [0.2, 0.0, 0.1],
    "bad": [-1.0, -0.8, 0.3],
}
PADDING_VECTOR = [9.0, 9.0, 9.0]  # junk on purpose: it must not show up in any pooled vector
SENTENCES = (("the", "movie", "was", "good"), ("so", "bad"))

# Dot-product scoring: the query points towards "good", so "bad" (pointing away) scores lowest.
DOT_QUERY = np.array([1.5, 1.5, -0.5], dtype=np.float32)
# Additive scoring, hidden size 2. With a = x_0 + x_1, x W = [a, -a] and the query term is
# q U = [-1, -1], so score = tanh(a - 1) + tanh(-a - 1): the same for a and -a, and higher the
# larger |a| is. This score likes strong words of BOTH signs ("good" and "bad"), something a
# dot product with one fixed query cannot do.
ADDITIVE = {
    "input_weight": np.array([[1.0, -1.0], [1.0, -1.0], [0.0, 0.0]], dtype=np.float32),  # W (3, 2)
    "query_weight": np.array(
        [[-0.5, -0.5], [-0.5, -0.5], [0.0, 0.0]], dtype=np.float32
    ),  # U (3, 2)
    "score_vector": np.array([1.0, 1.0], dtype=np.float32),  # v (2,)
    "query": np.array([1.0, 1.0, 0.0], dtype=np.float32),  # q (3,)
}


def padded_batch(sentences):
    """Word vectors of the sentences, padded to the longest: x (B, T, 3) float32,
    lengths (B,) int64."""
    lengths = np.array([len(words) for words in sentences])
    x = np.tile(np.array(PADDING_VECTOR, dtype=np.float32), (len(sentences), lengths.max(), 1))
    for row, words in enumerate(sentences):
        x[row, : len(words)] = [WORD_VECTORS[word] for word in words]
    return x, lengths


def poolings():
    """name -> pooling module, every parameter set by hand."""
    additive = nn.AdditiveScore(3, hidden_size=2)
    additive.load_state_dict(ADDITIVE)
    dot = nn.DotProductScore(3)
    dot.load_state_dict({"query": DOT_QUERY})
    return {
        "mean": nn.MeanPooling(),
        "additive": nn.AttentionPooling(additive),
        "dot": nn.AttentionPooling(dot),
    }


def print_row(label, numbers, width=9):
    print(f"  {label:<16}" + "".join(f"{n:>{width}.4f}" for n in numbers))


def pool_batch(pool, x, lengths):
    """(weights (B, T), pooled (B, 3), raw scores (B, T) or None) of one pooling on the batch."""
    tensor = mg.tensor(x)
    pooled = pool(tensor, lengths=lengths).numpy()
    if isinstance(pool, nn.MeanPooling):  # no scores: weight 1/length on the real words
        weights = (np.arange(x.shape[1]) < lengths[:, None]) / lengths[:, None]
        return weights.astype(np.float32), pooled, None
    return pool.last_weights.copy(), pooled, pool.score(tensor).numpy()


def main():
    x, lengths = padded_batch(SENTENCES)
    steps = x.shape[1]
    print(
        f"A padded batch of {len(SENTENCES)} sentences, lengths {lengths.tolist()}, "
        f"padding vector {PADDING_VECTOR}"
    )
    for row, words in enumerate(SENTENCES):
        names = list(words) + ["<pad>"] * (steps - len(words))
        print(
            f"  row {row}: "
            + "  ".join(
                f"{name} [{' '.join(f'{v:g}' for v in x[row, t])}]" for t, name in enumerate(names)
            )
        )

    result = {"x": x, "lengths": lengths}
    for name, pool in poolings().items():
        weights, pooled, scores = pool_batch(pool, x, lengths)
        print(f"\n{name} pooling")
        for row, words in enumerate(SENTENCES):
            columns = list(words) + ["<pad>"] * (steps - len(words))
            print(f"  row {row}{'':<10}" + "".join(f"{c:>9}" for c in columns))
            if scores is not None:
                # The padded scores are real numbers (often the largest, from the junk vector);
                # the mask, not the score, is what keeps them out.
                print_row("score", scores[row])
            print_row("weight", weights[row])
            print_row("pooled vector", pooled[row])
        padded = weights[np.arange(steps) >= lengths[:, None]]
        print(f"  weights at padded positions: {padded.tolist()}")

        # The short sentence alone, with no padding at all, pools to the same vector.
        alone, _ = padded_batch(SENTENCES[1:])
        alone_pooled = pool(mg.tensor(alone), lengths=lengths[1:]).numpy()[0]
        print(
            f'  "{" ".join(SENTENCES[1])}" pooled alone, without padding: '
            f"largest difference {np.abs(alone_pooled - pooled[1]).max():.1e}"
        )
        result[name] = {
            "weights": weights,
            "pooled": pooled,
            "scores": scores,
            "alone": alone_pooled,
        }
    return result


if __name__ == "__main__":
    main()
