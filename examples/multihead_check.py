"""Multi-head self-attention, checked on the smallest case that shows everything.

    python examples/multihead_check.py

Two sequences in one padded batch, of lengths 1 and 2, tokens of 4 features, 2 heads. Each
head gets its own 2 of the 4 columns of Q, K and V (head 0: columns 0-1, head 1: columns 2-3),
computes its own attention weights, and the heads' outputs are put side by side and
multiplied by W_O.

The matrices are chosen so the heads are easy to read: W_Q = identity and W_K = 2 * identity,
so head 0 compares tokens by their features 0-1 and head 1 by their features 2-3.
- Sequence 0 has one real token: in both heads every row puts weight 1 on it and exactly 0 on
  the padding (a padded query row is computed too, and ignored by whoever pools the output).
- Sequence 1's two tokens differ in features 0-1 but agree in features 2-3: head 0 sees two
  different tokens (each prefers itself), head 1 sees two equal ones (0.5 / 0.5). Two heads,
  two different views of the same sentence.
Last, every head is recomputed by hand from its slices of the matrices, and the
concatenation matches the module's output.
"""

import math

import numpy as np

import minigrad as mg
from minigrad import nn

NUM_HEADS = 2
TOKENS = np.array(
    [
        [
            [1.0, 0.0, 0.0, 1.0],
            [5.0, 5.0, 5.0, 5.0],
        ],  # sequence 0: one token, then padding (junk on purpose)
        [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]],  # sequence 1: two tokens, same features 2-3
    ],
    dtype=np.float32,
)
LENGTHS = np.array([1, 2])
MATRICES = {
    "query_weight": np.eye(4, dtype=np.float32),
    "key_weight": 2 * np.eye(4, dtype=np.float32),
    "value_weight": np.array(
        [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]], dtype=np.float32
    ),
    "output_weight": np.eye(4, dtype=np.float32),
}


def print_matrix(title, matrix, rows, columns):
    print(title)
    print(" " * 12 + "".join(f"{c:>9}" for c in columns))
    for name, row in zip(rows, matrix):
        print(f"  {name:<10}" + "".join(f"{v:>9.4f}" for v in row))


def heads_by_hand(x, lengths):
    """Each head on its own, with minigrad ops: weights (B, H, T, T) and concatenated
    outputs (B, T, 4)."""
    batch, steps, model_dim = x.shape
    head_dim = model_dim // NUM_HEADS
    # (B, 1, T_key): the real tokens
    keys_allowed = (np.arange(steps) < lengths[:, None])[:, None, :]
    x = mg.tensor(x)
    weights, outputs = [], []
    for head in range(NUM_HEADS):
        # this head's columns of W_Q, W_K, W_V
        columns = slice(head * head_dim, (head + 1) * head_dim)
        queries = x @ mg.tensor(MATRICES["query_weight"][:, columns])
        keys = x @ mg.tensor(MATRICES["key_weight"][:, columns])
        values = x @ mg.tensor(MATRICES["value_weight"][:, columns])
        scores = queries @ keys.transpose(1, 2)  # (B, T, T)
        head_weights = mg.masked_softmax(scores, keys_allowed, scale=1 / math.sqrt(head_dim))
        weights.append(head_weights.numpy())
        outputs.append(head_weights @ values)
    # heads side by side, then W_O
    merged = mg.cat(outputs, dim=-1) @ mg.tensor(MATRICES["output_weight"])
    return np.stack(weights, axis=1), merged.numpy()


def main():
    attention = nn.SelfAttention(4, num_heads=NUM_HEADS)
    attention.load_state_dict(MATRICES)
    output = attention(mg.tensor(TOKENS), lengths=LENGTHS).numpy()
    weights = attention.last_weights  # (batch, heads, query, key)

    print(
        f"{NUM_HEADS} heads of {attention.head_dim} features; lengths {LENGTHS.tolist()}; "
        "weights: row = query token, column = key token"
    )
    for sequence, length in enumerate(LENGTHS):
        names = [f"tok{t}" if t < length else "<pad>" for t in range(TOKENS.shape[1])]
        for head in range(NUM_HEADS):
            print_matrix(
                f"\nsequence {sequence} (length {length}), head {head}",
                weights[sequence, head],
                names,
                names,
            )
    padded = np.concatenate([weights[s, :, :, length:].ravel() for s, length in enumerate(LENGTHS)])
    print(f"\nweights on padded keys: {padded.tolist()}")
    head_gap = np.abs(weights[1, 0] - weights[1, 1]).max()
    print(f"sequence 1: largest difference between head 0 and head 1: {head_gap:.4f}")

    print("\noutputs (the padded row of sequence 0 is computed, and meant to be ignored)")
    for sequence, length in enumerate(LENGTHS):
        for t in range(TOKENS.shape[1]):
            name = f"tok{t}" if t < length else "<pad>"
            print(
                f"  sequence {sequence} {name:<6}"
                + "".join(f"{v:>9.4f}" for v in output[sequence, t])
            )

    by_hand_weights, by_hand_output = heads_by_hand(TOKENS, LENGTHS)
    difference = max(np.abs(by_hand_weights - weights).max(), np.abs(by_hand_output - output).max())
    print("\neach head by hand from its columns of W_Q, W_K, W_V, then side by side and times W_O:")
    print(f"largest difference from the module: {difference:.1e}")
    return {
        "weights": weights.copy(),
        "output": output,
        "by_hand_weights": by_hand_weights,
        "by_hand_output": by_hand_output,
    }


if __name__ == "__main__":
    main()
