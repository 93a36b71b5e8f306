"""Self-attention by hand: three words, two numbers each, every step printed.

    python examples/attention_by_hand.py

First the chapter's own example: "cat sleeps it", where the word "it" asks which word it
stands for. Its query is q = [2, 0]; the keys are cat [3, 0], sleeps [0, 3], it [1, 1]; the
scores q . k = [6, 0, 2], divided by sqrt(2), go through a softmax and give the weights
[0.93, 0.01, 0.06]: "it" looks at "cat". (examples/attention_lab.py starts from the same
numbers in the browser.)

Then a second example with every table, in five steps:
1. Each word vector x is turned into a query q = x W_Q ("what am I looking for?"), a key
   k = x W_K ("what do I offer?") and a value v = x W_V ("what do I hand over?").
2. Word i scores every word j by the dot product q_i . k_j, divided by sqrt(d) (d = 2 here).
3. A softmax over j turns each row of scores into weights that are positive and sum to 1.
4. Word i's output is the weighted sum of the values: sum_j weight_ij v_j.
5. nn.SelfAttention does exactly this (plus a fourth matrix W_O, set to the identity here), a
   causal mask forbids looking ahead, and a temperature makes the weights sharper or flatter.

Steps 1-4 use minigrad ops one at a time; main() returns every table as a numpy array
(tests/examples/test_teaching.py checks them against plain numpy).
"""

import math

import numpy as np

import minigrad as mg
from minigrad import nn

WORDS = ("cats", "chase", "mice")
EMBEDDINGS = np.array(
    [
        [1.0, 0.0],  # cats     one row per word: X, (3 words, 2 features)
        [0.0, 1.0],  # chase
        [1.0, 1.0],
    ],  # mice
    dtype=np.float32,
)
QUERY_WEIGHT = np.array([[1.0, 0.0], [1.0, 2.0]], dtype=np.float32)  # W_Q, used as x @ W_Q
KEY_WEIGHT = np.array([[2.0, 0.0], [0.0, 1.0]], dtype=np.float32)  # W_K
VALUE_WEIGHT = np.array([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32)  # W_V
TEMPERATURES = (0.5, 1.0, 2.0)

# The chapter's example. The chapter gives the query of "it" and the three keys; here they come
# from word vectors x and matrices, as in a real layer: with W_K = identity the keys are the word
# vectors themselves, and W_Q is chosen so that q_it = [1, 1] W_Q = [2, 0]. (It also makes "cat"
# look for its verb, q_cat = [0, 3], and "sleeps" for its subject, q_sleeps = [6, -3].)
CHAPTER_WORDS = ("cat", "sleeps", "it")
CHAPTER_EMBEDDINGS = np.array(
    [
        [3.0, 0.0],  # cat
        [0.0, 3.0],  # sleeps
        [1.0, 1.0],
    ],  # it
    dtype=np.float32,
)
CHAPTER_QUERY_WEIGHT = np.array([[0.0, 1.0], [2.0, -1.0]], dtype=np.float32)
CHAPTER_KEY_WEIGHT = np.eye(2, dtype=np.float32)
# values = word vectors: the output reads directly
CHAPTER_VALUE_WEIGHT = np.eye(2, dtype=np.float32)
CHAPTER_QUERY_WORD = "it"


def print_table(title, matrix, rows, columns):
    """Print a 2-D array with named rows and columns, 4 decimals."""
    matrix = np.asarray(matrix)
    print(f"\n{title}")
    width = max(9, *(len(c) + 2 for c in columns))
    label_width = max(len(r) for r in rows) + 2
    print(" " * label_width + "".join(f"{c:>{width}}" for c in columns))
    for name, row in zip(rows, matrix):
        print(f"{name:<{label_width}}" + "".join(f"{value:>{width}.4f}" for value in row))


def chapter_example():
    """The chapter's "cat sleeps it": the query of "it" against the three keys, one op per step.

    Returns numpy arrays: query (2,), keys (3, 2), values (3, 2), scores (3,), scaled_scores (3,),
    weights (3,) (= [0.93, 0.01, 0.06] to two decimals) and output (2,), the weighted sum of values.
    """
    x = mg.tensor(CHAPTER_EMBEDDINGS)  # (3, 2)
    asking = CHAPTER_WORDS.index(CHAPTER_QUERY_WORD)
    query = (x @ mg.tensor(CHAPTER_QUERY_WEIGHT))[asking]  # (2,)
    keys = x @ mg.tensor(CHAPTER_KEY_WEIGHT)
    values = x @ mg.tensor(CHAPTER_VALUE_WEIGHT)
    scores = keys @ query  # (3,): q . k_j for every word j
    scaled = scores / math.sqrt(x.shape[-1])
    weights = mg.softmax(scaled, dim=-1)
    output = weights @ values  # (2,)

    print(
        f'The chapter\'s example: "{" ".join(CHAPTER_WORDS)}", the query is "{CHAPTER_QUERY_WORD}"'
    )
    print(f"  query  q_{CHAPTER_QUERY_WORD} = {_vector(query.numpy())}")
    for word, key in zip(CHAPTER_WORDS, keys.numpy()):
        print(f"  key    k_{word:<7}= {_vector(key)}")
    print_table(
        f"q_{CHAPTER_QUERY_WORD} . k, then / sqrt(2), then softmax",
        np.stack([scores.numpy(), scaled.numpy(), weights.numpy()]),
        ["score", "/ sqrt(d)", "weight"],
        CHAPTER_WORDS,
    )
    rounded = ", ".join(f"{w:.2f}" for w in weights.numpy())
    print(
        f'weights rounded: [{rounded}]: "{CHAPTER_QUERY_WORD}" attends to '
        f'"{CHAPTER_WORDS[int(weights.numpy().argmax())]}"'
    )
    terms = " + ".join(f"{w:.4f}*{_vector(v)}" for w, v in zip(weights.numpy(), values.numpy()))
    print(f"output = {terms} = [{output.numpy()[0]:.4f} {output.numpy()[1]:.4f}]\n")
    return {
        "query": query.numpy(),
        "keys": keys.numpy(),
        "values": values.numpy(),
        "scores": scores.numpy(),
        "scaled_scores": scaled.numpy(),
        "weights": weights.numpy(),
        "output": output.numpy(),
    }


def _vector(values):
    return "[" + " ".join(f"{v:g}" for v in values) + "]"


def by_hand():
    """Steps 1-4 with one minigrad op per step. Returns the intermediate tables as numpy arrays."""
    x = mg.tensor(EMBEDDINGS)  # (3, 2)
    size = x.shape[-1]

    # 1. Three views of every word: the same x, multiplied by three different matrices.
    queries = x @ mg.tensor(QUERY_WEIGHT)
    keys = x @ mg.tensor(KEY_WEIGHT)
    values = x @ mg.tensor(VALUE_WEIGHT)
    print("Step 1: queries Q = X W_Q, keys K = X W_K, values V = X W_V (one row per word)")
    print_table(
        "X, Q, K, V side by side",
        np.hstack([EMBEDDINGS, queries.numpy(), keys.numpy(), values.numpy()]),
        WORDS,
        ["x[0]", "x[1]", "q[0]", "q[1]", "k[0]", "k[1]", "v[0]", "v[1]"],
    )

    # 2. Row i, column j: how well word i's query matches word j's key.
    scores = queries @ keys.T
    print_table(
        "Step 2: scores Q K^T (row = the word asking, column = the word asked)",
        scores.numpy(),
        WORDS,
        WORDS,
    )
    # Dot products of d-dimensional vectors grow like sqrt(d); dividing keeps the softmax
    # out of its flat, saturated region when d is large (d = 256 in the textbook).
    scaled = scores / math.sqrt(size)
    print_table(
        f"... divided by sqrt(d) = sqrt({size}) = {math.sqrt(size):.4f}",
        scaled.numpy(),
        WORDS,
        WORDS,
    )

    # 3. Softmax over each row: positive weights that sum to 1 for every asking word.
    weights = mg.softmax(scaled, dim=-1)
    print_table(
        "Step 3: attention weights softmax(Q K^T / sqrt(d)), each row sums to 1",
        weights.numpy(),
        WORDS,
        WORDS,
    )

    # 4. Each word's output is a blend of all the values, mixed by its row of weights.
    outputs = weights @ values
    print("\nStep 4: each output is the weighted sum of the value rows")
    w, v, o = weights.numpy(), values.numpy(), outputs.numpy()
    for i, word in enumerate(WORDS):
        terms = " + ".join(f"{w[i, j]:.4f}*[{v[j, 0]:g} {v[j, 1]:g}]" for j in range(len(WORDS)))
        print(f"  {word:<6} = {terms} = [{o[i, 0]:.4f} {o[i, 1]:.4f}]")
    return {
        "queries": queries.numpy(),
        "keys": keys.numpy(),
        "values": values.numpy(),
        "scores": scores.numpy(),
        "scaled_scores": scaled.numpy(),
        "weights": w,
        "outputs": o,
    }


def attention_module(causal=False, temperature=1.0):
    """nn.SelfAttention(2) holding the matrices above; W_O = identity, so its output is step 4's.

    A temperature T divides the scores: softmax(q.k / (sqrt(d) T)). Dividing W_Q by T divides
    every query, hence every score, by T, so the module needs no extra setting for it.
    """
    attention = nn.SelfAttention(2, num_heads=1, causal=causal)
    attention.load_state_dict(
        {
            "query_weight": QUERY_WEIGHT / temperature,
            "key_weight": KEY_WEIGHT,
            "value_weight": VALUE_WEIGHT,
            "output_weight": np.eye(2, dtype=np.float32),
        }
    )
    return attention


def run_module(attention):
    """(weights (3, 3), outputs (3, 2)) of the module on the three words, as a batch of one."""
    outputs = attention(mg.tensor(EMBEDDINGS[None]))  # (1, 3, 2): batch of one sentence
    return attention.last_weights[0, 0], outputs.numpy()[0]  # drop the batch and head axes


def main():
    chapter = chapter_example()
    print("A second example, every table: three words, two features each:", ", ".join(WORDS))
    result = by_hand()

    # 5a. The library does the same: same matrices in, same numbers out.
    module_weights, module_outputs = run_module(attention_module())
    print("\nStep 5: nn.SelfAttention(2) with W_Q, W_K, W_V loaded and W_O = identity")
    print_table("attention weights (attention.last_weights)", module_weights, WORDS, WORDS)
    print_table("outputs", module_outputs, WORDS, ["out[0]", "out[1]"])
    difference = max(
        np.abs(module_weights - result["weights"]).max(),
        np.abs(module_outputs - result["outputs"]).max(),
    )
    print(f"largest difference from the hand computation: {difference:.1e} (float32 rounding)")

    # 5b. Causal: a word may only look at itself and the words before it, as when generating
    # text left to right. The softmax leaves the forbidden scores out, so their weights are
    # exactly 0 and the remaining weights of the row are renormalised.
    causal_weights, causal_outputs = run_module(attention_module(causal=True))
    print_table("causal=True: weights (above the diagonal exactly 0)", causal_weights, WORDS, WORDS)
    print_table("causal=True: outputs", causal_outputs, WORDS, ["out[0]", "out[1]"])
    future = causal_weights[np.triu_indices(len(WORDS), k=1)]
    print(f"weights on future words: {future.tolist()}")

    # 5c. Temperature: T < 1 sharpens the weights towards the best match, T > 1 flattens them
    # towards the plain average. By hand with mg.softmax, and with the module via W_Q / T.
    temperature_weights = {}
    for temperature in TEMPERATURES:
        scores = mg.tensor(result["scores"])
        by_hand_weights = mg.softmax(scores / (math.sqrt(2) * temperature), dim=-1).numpy()
        module_weights_t, _ = run_module(attention_module(temperature=temperature))
        print_table(
            f"temperature T = {temperature}: softmax(Q K^T / (sqrt(d) T))",
            by_hand_weights,
            WORDS,
            WORDS,
        )
        print(
            f"(nn.SelfAttention with W_Q / T: largest difference "
            f"{np.abs(module_weights_t - by_hand_weights).max():.1e})"
        )
        temperature_weights[temperature] = module_weights_t

    result.update(
        module_weights=module_weights,
        module_outputs=module_outputs,
        causal_weights=causal_weights,
        causal_outputs=causal_outputs,
        temperature_weights=temperature_weights,
        chapter=chapter,
    )
    return result


if __name__ == "__main__":
    main()
