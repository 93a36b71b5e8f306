"""Panel 1, "By hand": three words, two numbers each, and every step of self-attention.

compute(request) -> plain data for the page. Each step is one minigrad op, in the order the
chapter tells it, and the whole layer is then run again as nn.SelfAttention with the same
matrices, so the page can show that the library computes exactly the steps it lists.

The defaults are the chapter's example (examples/attention_by_hand.py): "cat sleeps it", where
the query of "it" is [2, 0], the keys are cat [3, 0], sleeps [0, 3], it [1, 1], and the
weights come out [0.93, 0.01, 0.06].
"""

import math

import numpy as np

import minigrad as mg
from minigrad import nn

from examples import attention_by_hand as chapter

from . import inputs

WORD_COUNT, MODEL_DIM = 3, 2
VALUE_LIMIT = (
    100.0  # word vectors and matrix entries: enough to explore, small enough to stay readable
)
TEMPERATURE_RANGE = (0.05, 20.0)
MAX_WORD_LENGTH = 16
MATRICES = ("query_weight", "key_weight", "value_weight", "output_weight")


def defaults():
    """The request the page starts from: the chapter's example, query "it", T = 1, one head."""
    return {
        "words": list(chapter.CHAPTER_WORDS),
        "embeddings": chapter.CHAPTER_EMBEDDINGS.tolist(),
        "query_weight": chapter.CHAPTER_QUERY_WEIGHT.tolist(),
        "key_weight": chapter.CHAPTER_KEY_WEIGHT.tolist(),
        "value_weight": chapter.CHAPTER_VALUE_WEIGHT.tolist(),
        "output_weight": np.eye(MODEL_DIM).tolist(),
        "query": chapter.CHAPTER_WORDS.index(chapter.CHAPTER_QUERY_WORD),
        "temperature": 1.0,
        "causal": False,
        "heads": 1,
    }


def parse(request):
    """Check a request (a dict from JSON); missing fields take their default values."""
    if not isinstance(request, dict):
        raise inputs.LabInputError("expected a JSON object with the words, vectors and matrices")
    request = {**defaults(), **request}
    words = request["words"]
    if not isinstance(words, list) or len(words) != WORD_COUNT:
        raise inputs.LabInputError(
            f"words: expected a list of {WORD_COUNT} words; got {words!r:.40}"
        )
    words = [
        inputs.text(f"word {i + 1}", word, MAX_WORD_LENGTH).strip() for i, word in enumerate(words)
    ]
    parsed = {
        "words": words,
        "embeddings": inputs.matrix(
            "word vectors", request["embeddings"], (WORD_COUNT, MODEL_DIM), VALUE_LIMIT
        ),
        "query": inputs.integer("query word", request["query"], 0, WORD_COUNT - 1),
        "temperature": inputs.number("temperature", request["temperature"], *TEMPERATURE_RANGE),
        "causal": inputs.flag("causal", request["causal"]),
        "heads": inputs.integer("heads", request["heads"], 1, MODEL_DIM),
    }
    short = {
        "query_weight": "W_Q",
        "key_weight": "W_K",
        "value_weight": "W_V",
        "output_weight": "W_O",
    }
    for name in MATRICES:
        parsed[name] = inputs.matrix(
            short[name], request[name], (MODEL_DIM, MODEL_DIM), VALUE_LIMIT
        )
    return parsed


def steps(x, weights, heads, temperature, allowed):
    """Self-attention one minigrad op at a time.

    x (T, D) Tensor; weights: name -> (D, D) Tensor; allowed (T, T) bool or None (no mask).
    Returns a dict of Tensors: queries, keys, values (T, D); per head (a list) the scores,
    scaled scores, tempered scores, weights (T, T) and context (T, D / heads); merged and
    outputs (T, D).
    """
    queries = x @ weights["query_weight"]  # what each word looks for
    keys = x @ weights["key_weight"]  # what each word offers
    values = x @ weights["value_weight"]  # what each word hands over
    head_dim = x.shape[-1] // heads
    per_head = []
    for head in range(heads):  # head h works on features h*dh .. (h+1)*dh - 1 only
        columns = slice(head * head_dim, (head + 1) * head_dim)
        scores = queries[:, columns] @ keys[:, columns].T  # row i, column j: q_i . k_j
        scaled = scores / math.sqrt(head_dim)
        tempered = scaled / temperature
        # each row sums to 1; masked entries exactly 0
        head_weights = mg.masked_softmax(tempered, allowed)
        per_head.append(
            {
                "scores": scores,
                "scaled": scaled,
                "tempered": tempered,
                "weights": head_weights,
                "context": head_weights @ values[:, columns],
            }
        )
    # heads side by side again: (T, D)
    merged = mg.cat([head["context"] for head in per_head], dim=1)
    return {
        "queries": queries,
        "keys": keys,
        "values": values,
        "heads": per_head,
        "merged": merged,
        "outputs": merged @ weights["output_weight"],
    }


def module_run(embeddings, matrices, heads, temperature, causal):
    """The same layer as nn.SelfAttention: (weights (H, T, T), outputs (T, D)) as numpy.

    The module has no temperature; dividing W_Q by T divides every query, hence every score, by T.
    """
    attention = nn.SelfAttention(MODEL_DIM, num_heads=heads, causal=causal)
    state = {name: matrices[name] for name in MATRICES}
    state["query_weight"] = matrices["query_weight"] / np.float32(temperature)
    attention.load_state_dict(state)
    with mg.no_grad():
        outputs = attention(mg.tensor(embeddings[None]))  # a batch of one sentence
    return attention.last_weights[0].copy(), outputs.numpy()[0]


def compute(request):
    """Everything panel 1 shows, as lists of floats (see steps() for the names)."""
    settings = parse(request)
    heads, temperature, causal = settings["heads"], settings["temperature"], settings["causal"]
    allowed = np.tril(np.ones((WORD_COUNT, WORD_COUNT), dtype=bool)) if causal else None
    with mg.no_grad():
        result = steps(
            mg.tensor(settings["embeddings"]),
            {name: mg.tensor(settings[name]) for name in MATRICES},
            heads,
            temperature,
            allowed,
        )
    module_weights, module_outputs = module_run(
        settings["embeddings"], settings, heads, temperature, causal
    )
    step_weights = np.stack([head["weights"].numpy() for head in result["heads"]])
    difference = max(
        np.abs(module_weights - step_weights).max(),
        np.abs(module_outputs - result["outputs"].numpy()).max(),
    )
    head_dim = MODEL_DIM // heads
    return {
        "words": settings["words"],
        "embeddings": inputs.plain(settings["embeddings"]),
        **{name: inputs.plain(settings[name]) for name in MATRICES},
        "query": settings["query"],
        "temperature": temperature,
        "causal": causal,
        "heads": heads,
        "head_dim": head_dim,
        "sqrt_head_dim": math.sqrt(head_dim),
        "allowed": (allowed if causal else np.ones((WORD_COUNT, WORD_COUNT), dtype=bool)).tolist(),
        **{
            name: inputs.plain(result[name].numpy())
            for name in ("queries", "keys", "values", "merged", "outputs")
        },
        "head_results": [
            {
                "features": list(range(head * head_dim, (head + 1) * head_dim)),
                **{name: inputs.plain(values.numpy()) for name, values in head_result.items()},
            }
            for head, head_result in enumerate(result["heads"])
        ],
        "module": {
            "weights": inputs.plain(module_weights),
            "outputs": inputs.plain(module_outputs),
            "largest_difference": float(difference),
        },
    }
