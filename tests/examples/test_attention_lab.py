"""Tests for the attention lab's data (examples/lab): every endpoint's numbers against plain
numpy in float64 (never against minigrad or the lab itself), and every kind of bad input.

The HTTP layer (routes, caps, static files, the command line) is in test_attention_lab_server.py;
the page in a real browser in test_attention_lab_browser.py.
"""

import json
import math
import re

import numpy as np
import pytest

from examples.lab import by_hand, training
from examples.lab.api import Lab
from examples.lab.inputs import LabInputError
from examples import four_matrices

TOLERANCE = dict(rtol=1e-5, atol=1e-6)  # float32 lab against float64 references


def softmax(scores, allowed=None):
    scores = np.asarray(scores, dtype=np.float64)
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


def attention_reference(
    x, query_weight, key_weight, value_weight, output_weight, heads=1, temperature=1.0, causal=False
):
    """Self-attention of x (T, D), one head at a time, in float64: every intermediate table."""
    x = np.asarray(x, np.float64)
    queries, keys, values = (
        x @ np.asarray(w, np.float64) for w in (query_weight, key_weight, value_weight)
    )
    steps = len(x)
    allowed = np.tril(np.ones((steps, steps), bool)) if causal else None
    head_dim = x.shape[1] // heads
    per_head = []
    for head in range(heads):
        columns = slice(head * head_dim, (head + 1) * head_dim)
        scores = queries[:, columns] @ keys[:, columns].T
        scaled = scores / math.sqrt(head_dim)
        weights = softmax(scaled / temperature, allowed)
        per_head.append(
            dict(
                scores=scores,
                scaled=scaled,
                tempered=scaled / temperature,
                weights=weights,
                context=weights @ values[:, columns],
            )
        )
    merged = np.concatenate([h["context"] for h in per_head], axis=1)
    return dict(
        queries=queries,
        keys=keys,
        values=values,
        heads=per_head,
        merged=merged,
        outputs=merged @ np.asarray(output_weight, np.float64),
    )


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return Lab(runs=tmp_path_factory.mktemp("runs"))


# ---------------------------------------------------------------------------------------
# Panel 1: by hand


def check_by_hand(answer, request):
    settings = {**by_hand.defaults(), **request}
    reference = attention_reference(
        np.array(settings["embeddings"], float),
        *(np.array(settings[name], float) for name in by_hand.MATRICES),
        heads=settings["heads"],
        temperature=float(settings["temperature"]),
        causal=settings["causal"],
    )
    for name in ("queries", "keys", "values", "merged", "outputs"):
        np.testing.assert_allclose(answer[name], reference[name], **TOLERANCE, err_msg=name)
    assert len(answer["head_results"]) == settings["heads"]
    for head, expected in zip(answer["head_results"], reference["heads"]):
        for name, values in expected.items():
            np.testing.assert_allclose(head[name], values, **TOLERANCE, err_msg=name)
    np.testing.assert_allclose(
        answer["module"]["weights"], [h["weights"] for h in reference["heads"]], **TOLERANCE
    )
    np.testing.assert_allclose(answer["module"]["outputs"], reference["outputs"], **TOLERANCE)
    assert answer["module"]["largest_difference"] < 1e-5
    return reference


def test_by_hand_default_is_the_chapter_example(lab):
    answer = lab.call("/api/by_hand", {})
    check_by_hand(answer, {})
    assert answer["words"] == ["cat", "sleeps", "it"] and answer["query"] == 2
    # The chapter's numbers: q_it = [2, 0]; keys cat [3, 0], sleeps [0, 3], it [1, 1].
    np.testing.assert_array_equal(answer["queries"][2], [2, 0])
    np.testing.assert_array_equal(answer["keys"], [[3, 0], [0, 3], [1, 1]])
    weights = answer["head_results"][0]["weights"][2]
    np.testing.assert_allclose(weights, softmax(np.array([6, 0, 2]) / math.sqrt(2)), **TOLERANCE)
    assert [f"{w:.2f}" for w in weights] == ["0.93", "0.01", "0.06"]
    np.testing.assert_allclose(answer["sqrt_head_dim"], math.sqrt(2))
    assert answer["allowed"] == [[True] * 3] * 3
    assert json.loads(json.dumps(answer, allow_nan=False)) == answer  # plain JSON data


@pytest.mark.parametrize("seed", range(6))
def test_by_hand_matches_numpy_for_any_settings(lab, seed):
    rng = np.random.default_rng(seed)
    request = {
        "words": ["a", "b", "c"],
        "embeddings": rng.uniform(-3, 3, (3, 2)).round(2).tolist(),
        **{name: rng.uniform(-2, 2, (2, 2)).round(2).tolist() for name in by_hand.MATRICES},
        "query": int(rng.integers(3)),
        "temperature": [0.1, 0.5, 1.0, 3.0, 20.0, 0.05][seed],
        "causal": bool(seed % 2),
        "heads": 1 + seed // 3,
    }
    # Numbers typed into the page's boxes arrive as text; they mean the same.
    request["query_weight"] = [[str(v) for v in row] for row in request["query_weight"]]
    answer = lab.call("/api/by_hand", request)
    check_by_hand(
        answer,
        {**request, "query_weight": [[float(v) for v in r] for r in request["query_weight"]]},
    )
    if request["causal"]:
        for head in answer["head_results"]:
            assert np.all(np.triu(head["weights"], k=1) == 0.0)  # exactly 0, not small
        assert answer["allowed"] == np.tril(np.ones((3, 3), bool)).tolist()


def test_by_hand_temperature_sharpens_and_flattens(lab):
    peaks = [
        max(lab.call("/api/by_hand", {"temperature": t})["head_results"][0]["weights"][2])
        for t in (0.1, 1.0, 10.0)
    ]
    # 1/3 would be flat
    assert peaks[0] > 0.999 and peaks[0] > peaks[1] > peaks[2] and peaks[2] < 0.42


def test_by_hand_two_heads_split_the_features(lab):
    answer = lab.call("/api/by_hand", {"heads": 2})
    check_by_hand(answer, {"heads": 2})
    assert [h["features"] for h in answer["head_results"]] == [[0], [1]]
    assert answer["head_dim"] == 1 and answer["sqrt_head_dim"] == 1.0
    # Head 1 sees only feature 1: q_it = 2, keys 3, 0, 1 -> scores 6, 0, 2 (no scaling: sqrt(1) =
    # 1).
    np.testing.assert_allclose(answer["head_results"][0]["scores"][2], [6, 0, 2], **TOLERANCE)


BAD_BY_HAND = [
    ({"temperature": "abc"}, "temperature: expected a number"),
    ({"temperature": "nan"}, "temperature: expected a finite number"),
    ({"temperature": float("nan")}, "temperature: expected a finite number"),
    ({"temperature": "1e999"}, "temperature: expected a finite number"),
    ({"temperature": 0}, "temperature: expected a number between 0.05 and 20; got 0"),
    ({"temperature": True}, "temperature: expected a number"),
    (
        {"embeddings": [[1e9, 0], [0, 3], [1, 1]]},
        "word vectors[1][1]: expected a number between -100 and 100",
    ),
    ({"query_weight": [[1, 2], [3]]}, "W_Q: expected a 2 x 2 matrix"),
    ({"key_weight": [[1, 2, 3], [4, 5, 6]]}, "W_K: expected a 2 x 2 matrix"),
    ({"value_weight": [[1, 2], [3, 4], [5, 6]]}, "W_V: expected a 2 x 2 matrix"),
    ({"output_weight": "identity"}, "W_O: expected a 2 x 2 matrix"),
    ({"output_weight": [[1, None], [0, 1]]}, "W_O[1][2]: expected a number"),
    ({"words": ["cat", "sleeps"]}, "words: expected a list of 3 words"),
    ({"words": ["cat", "sleeps", "x" * 17]}, "word 3: at most 16 characters"),
    ({"words": ["cat", "", "it"]}, "word 2: expected some text"),
    ({"query": 3}, "query word: expected a number between 0 and 2"),
    ({"query": 1.5}, "query word: expected a whole number"),
    ({"heads": 3}, "heads: expected a number between 1 and 2"),
    ({"causal": "yes"}, "causal: expected true or false"),
]


@pytest.mark.parametrize("request_, message", BAD_BY_HAND)
def test_by_hand_bad_input_says_what_was_expected(lab, request_, message):
    with pytest.raises(LabInputError) as caught:
        lab.call("/api/by_hand", request_)
    assert message in str(caught.value)


# ---------------------------------------------------------------------------------------
# Panel 2: training


def classifier_loss(parameters, x, labels):
    """The toy model in numpy float64: self-attention, mean over the words, linear,
    cross-entropy."""
    logits = np.stack(
        [
            attention_reference(
                sentence, *(parameters[f"attention.{n}"] for n in training.MATRICES)
            )["outputs"].mean(axis=0)
            for sentence in x
        ]
    )
    logits = logits @ parameters["classifier.weight"].T + parameters["classifier.bias"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), labels].mean()


def finite_difference_gradient(loss, matrix, epsilon=1e-6):
    gradient = np.zeros_like(matrix)
    for index in np.ndindex(matrix.shape):
        saved = matrix[index]
        matrix[index] = saved + epsilon
        up = loss()
        matrix[index] = saved - epsilon
        down = loss()
        matrix[index] = saved
        gradient[index] = (up - down) / (2 * epsilon)
    return gradient


def session_parameters(lab, session):
    model = lab._sessions[session].model
    return {name: p.numpy().astype(np.float64) for name, p in model.named_parameters()}


def test_training_step_is_gradient_descent_with_the_true_gradient(lab):
    vectors, x, labels = four_matrices.word_vectors(), *training.task_data()[1:]
    start = lab.call("/api/train/reset", {"session": "gradient"})
    parameters = session_parameters(lab, "gradient")
    assert start["step"] == 0 and start["learning_rate"] is None
    assert all(m["gradient"] is None and m["update"] is None for m in start["matrices"].values())
    np.testing.assert_allclose(start["losses"], [classifier_loss(parameters, x, labels)], rtol=1e-5)
    for name, matrix in start["matrices"].items():
        np.testing.assert_array_equal(matrix["value"], parameters[f"attention.{name}"])

    answer = lab.call(
        "/api/train/step", {"session": "gradient", "steps": 1, "learning_rate": "0.5"}
    )
    assert answer["step"] == 1 and answer["learning_rate"] == 0.5
    after = session_parameters(lab, "gradient")
    for name, matrix in answer["matrices"].items():
        key = f"attention.{name}"
        expected = finite_difference_gradient(
            lambda: classifier_loss(parameters, x, labels), parameters[key]
        )
        np.testing.assert_allclose(matrix["gradient"], expected, rtol=1e-3, atol=1e-6, err_msg=name)
        np.testing.assert_array_equal(matrix["before"], parameters[key])
        # float32: W now - W before loses the last bits of W (|W| < 1, so about 6e-8)
        np.testing.assert_allclose(
            matrix["update"], -0.5 * np.array(matrix["gradient"]), rtol=1e-5, atol=2e-7
        )
        np.testing.assert_allclose(
            matrix["value"], parameters[key] + matrix["update"], rtol=1e-6, atol=1e-7
        )
        np.testing.assert_array_equal(matrix["value"], after[key])
    # The loss curve: the loss before the step, then the loss now, from the updated matrices.
    np.testing.assert_allclose(
        answer["losses"],
        [classifier_loss(parameters, x, labels), classifier_loss(after, x, labels)],
        rtol=1e-5,
    )
    sentence = vectors[four_matrices.sentence_ids(four_matrices.FIXED_SENTENCE)][0]
    expected_weights = attention_reference(
        sentence, *(after[f"attention.{n}"] for n in training.MATRICES)
    )
    np.testing.assert_allclose(
        answer["sentence_weights"], expected_weights["heads"][0]["weights"], **TOLERANCE
    )
    np.testing.assert_allclose(
        answer["received"], expected_weights["heads"][0]["weights"].mean(axis=0), **TOLERANCE
    )


def test_training_hundred_steps_lower_the_loss_and_move_attention_to_good(lab):
    start = lab.call("/api/train/reset", {"session": "hundred"})
    answer = lab.call("/api/train/step", {"session": "hundred", "steps": 100, "learning_rate": 0.1})
    assert answer["step"] == 100 and len(answer["losses"]) == 101
    assert answer["losses"][0] == start["losses"][0]
    assert answer["loss"] < 0.1 * start["loss"] and answer["accuracy"] > 0.95
    good = answer["sentence"].index("good")
    assert answer["received"][good] > 0.5 > 0.3 > start["received"][good]
    parameters = session_parameters(lab, "hundred")
    _, x, labels = training.task_data()
    np.testing.assert_allclose(answer["loss"], classifier_loss(parameters, x, labels), rtol=1e-4)
    # Reset: the same starting matrices again.
    again = lab.call("/api/train/reset", {"session": "hundred"})
    assert again["step"] == 0 and again["losses"] == start["losses"]
    assert again["matrices"] == start["matrices"]


def test_training_sessions_are_separate(lab):
    lab.call("/api/train/reset", {"session": "tab-1"})
    lab.call("/api/train/reset", {"session": "tab-2"})
    lab.call("/api/train/step", {"session": "tab-1", "steps": 3})
    assert lab.call("/api/train/state", {"session": "tab-1"})["step"] == 3
    assert lab.call("/api/train/state", {"session": "tab-2"})["step"] == 0


def test_training_divergence_is_reported_and_reset_recovers(lab):
    lab.call("/api/train/reset", {"session": "hot"})
    answer = lab.call("/api/train/step", {"session": "hot", "steps": 100, "learning_rate": 10})
    assert answer["diverged"] and "too large" in answer["message"]
    assert None in answer["losses"]  # NaN is not JSON; it arrives as null
    json.dumps(answer, allow_nan=False)
    with pytest.raises(LabInputError, match="diverged.*press reset"):
        lab.call("/api/train/step", {"session": "hot", "steps": 1, "learning_rate": 0.1})
    assert not lab.call("/api/train/reset", {"session": "hot"})["diverged"]


def test_training_stops_at_the_step_cap(lab, monkeypatch):
    monkeypatch.setattr(training, "MAX_STEPS", 3)
    lab.call("/api/train/reset", {"session": "capped"})
    lab.call("/api/train/step", {"session": "capped", "steps": 3})
    with pytest.raises(LabInputError, match="press reset"):
        lab.call("/api/train/step", {"session": "capped", "steps": 1})


BAD_TRAINING = [
    ({"session": "s", "learning_rate": "abc"}, "learning rate: expected a number"),
    (
        {"session": "s", "learning_rate": 0},
        "learning rate: expected a number between 0.0001 and 10",
    ),
    ({"session": "s", "learning_rate": -1}, "learning rate: expected a number between"),
    ({"session": "s", "learning_rate": "NaN"}, "learning rate: expected a finite number"),
    ({"session": "s", "learning_rate": 1e9}, "learning rate: expected a number between"),
    ({"session": "s", "steps": 0}, "steps: expected a number between 1 and 200"),
    ({"session": "s", "steps": 10_000}, "steps: expected a number between 1 and 200"),
    ({"session": "s", "steps": "many"}, "steps: expected a number"),
    ({}, "session: expected an id"),
    ({"session": "../../etc"}, "session: expected an id"),
    ({"session": "x" * 65}, "session: expected an id"),
]


@pytest.mark.parametrize("request_, message", BAD_TRAINING)
def test_training_bad_input_says_what_was_expected(lab, request_, message):
    with pytest.raises(LabInputError) as caught:
        lab.call("/api/train/step", request_)
    assert message in str(caught.value)


def test_sessions_are_capped(monkeypatch):
    from examples.lab import api

    monkeypatch.setattr(api, "MAX_SESSIONS", 2)
    lab = Lab()
    for name in ("one", "two", "three"):
        lab.call("/api/train/state", {"session": name})
    assert list(lab._sessions) == ["two", "three"]


# ---------------------------------------------------------------------------------------
# Panel 3: the graph


def test_graph_is_drawn_with_the_paths_to_the_four_matrices(lab):
    lab.call("/api/train/reset", {"session": "graph"})
    answer = lab.call("/api/graph", {"session": "graph", "collapse": []})
    assert answer["available"] and answer["message"] is None
    assert answer["svg"].lstrip().startswith("<?xml") or "<svg" in answer["svg"][:500]
    for name in training.MATRICES:
        assert f"attention.{name}" in answer["dot"] and f"attention.{name}" in answer["svg"]
    lines = answer["dot"].splitlines()
    # the four matrices drawn emphasised, the classifier's weight not
    for name in training.MATRICES:
        (line,) = [line for line in lines if f'label="attention.{name}' in line]
        assert "#cc0000" in line
    (line,) = [line for line in lines if 'label="classifier.weight' in line]
    assert "#cc0000" not in line
    assert sum("->" in line and "#cc0000" in line for line in lines) > 20
    # Drawing leaves no gradient behind on the model being trained.
    assert all(p.grad is None for p in lab._sessions["graph"].model.parameters())


def test_graph_walk_steps_through_the_drawn_nodes_to_the_true_gradients(lab):
    lab.call("/api/train/reset", {"session": "walk"})
    lab.call("/api/train/step", {"session": "walk", "steps": 3, "learning_rate": 0.5})
    answer = lab.call("/api/graph", {"session": "walk", "collapse": []})
    walk = answer["walk"]
    assert json.loads(json.dumps(walk, allow_nan=False)) == walk
    steps = walk["steps"]
    titles = re.findall(r'<g id="node\d+" class="node">\s*<title>([^<]+)</title>', answer["svg"])
    # Every step is a drawn op (its SVG node's title is its id), each visited once, the loss's
    # op first; an op is visited only after every op that used one of its outputs.
    assert [s["index"] for s in steps] == list(range(len(steps)))
    assert len({s["id"] for s in steps}) == len(steps) and {s["id"] for s in steps} <= set(titles)
    assert steps[0]["op"] == "CrossEntropy" and steps[0]["arriving"][0]["values"] == 1.0
    edges = re.findall(r"^\t*((?:t|op)\d+) -> ((?:t|op)\d+)", answer["dot"], re.M)
    made_by = {head: tail for tail, head in edges if tail.startswith("op")}
    place = {s["id"]: s["index"] for s in steps}
    pairs = [
        (place[head], place[made_by[tail]])  # tensor -> op using it: before the op that made it
        for tail, head in edges
        if tail in made_by and head in place and made_by[tail] in place
    ]
    assert len(pairs) == len(steps) - 1 and all(user < maker for user, maker in pairs)
    # The four matrices: the sums of the walk, .grad, and central differences in float64.
    parameters = session_parameters(lab, "walk")
    vectors = four_matrices.word_vectors()
    sentence = vectors[four_matrices.sentence_ids(four_matrices.FIXED_SENTENCE)]
    for name, matrix in walk["matrices"].items():
        key = f"attention.{name}"
        expected = finite_difference_gradient(
            lambda: classifier_loss(parameters, sentence, np.array([1])), parameters[key]
        )
        np.testing.assert_allclose(matrix["total"], expected, rtol=1e-3, atol=1e-6, err_msg=name)
        assert matrix["total"] == matrix["grad"] and matrix["largest_difference"] == 0.0
        (entry,) = [e for s in steps for e in s["inputs"] if e["id"] == matrix["id"]]
        assert entry["name"] == key and entry["total"]["values"] == matrix["total"]
        assert entry["uses"] == 1  # each matrix is used once: its one gradient is its .grad
    assert all(p.grad is None for p in lab._sessions["walk"].model.parameters())


@pytest.mark.parametrize(
    "collapse, fold", [(["pool"], False), (["attention"], False), ([], True), (["pool"], True)]
)
def test_graph_walk_steps_through_the_graph_as_drawn(lab, collapse, fold):
    """Collapsed or folded, every step lights up a node of the drawing (a collapsed call's ops
    its box), and the walk still ends at the matrices' .grad, the full walk's numbers."""
    lab.call("/api/train/reset", {"session": "drawn"})
    full = lab.call("/api/graph", {"session": "drawn", "collapse": []})["walk"]
    request = {"session": "drawn", "collapse": collapse, "fold": fold}
    answer = lab.call("/api/graph", request)
    walk = answer["walk"]
    titles = set(
        re.findall(r'<g id="node\d+" class="node">\s*<title>([^<]+)</title>', answer["svg"])
    )
    ops = [s["op"] for s in walk["steps"]]
    assert all(s["id"] in titles for s in walk["steps"])
    assert all(e["id"] in titles for s in walk["steps"] for e in s["inputs"] if e["id"])
    expected = [s["op"] for s in full["steps"]]
    if fold:
        expected = [op for op in expected if op not in ("Reshape", "Permute")]
    assert ops == expected
    if "attention" in collapse:  # every op of the attention layer: its one box
        boxes = {s["id"] for s in walk["steps"] if s["module"].startswith("attention")}
        assert len(boxes) == 1 and boxes.pop().startswith("m")
    for name, matrix in walk["matrices"].items():
        assert matrix["total"] == full["matrices"][name]["total"] == matrix["grad"]
        assert matrix["name"] == f"attention.{name}" and matrix["id"] in titles


@pytest.mark.parametrize("fold", ["yes", 1, None])
def test_graph_bad_fold(lab, fold):
    with pytest.raises(LabInputError, match="fold: expected true or false; got"):
        lab.call("/api/graph", {"session": "graph", "fold": fold})


def test_graph_collapses_modules(lab):
    full = lab.call("/api/graph", {"session": "graph", "collapse": []})["dot"]
    collapsed = lab.call("/api/graph", {"session": "graph", "collapse": ["attention", "pool"]})[
        "dot"
    ]
    heads_split = (
        "Permute\\ndims=(0, 2, 1, 3)"  # splitting into heads happens inside the attention box
    )
    assert heads_split in full and heads_split not in collapsed
    assert len(collapsed) < len(full) / 2
    assert "SelfAttention" in collapsed


@pytest.mark.parametrize("collapse", [["encoder"], "attention", [1]])
def test_graph_bad_collapse(lab, collapse):
    with pytest.raises(
        LabInputError, match="collapse: expected a list drawn from attention, pool, classifier"
    ):
        lab.call("/api/graph", {"session": "graph", "collapse": collapse})


def test_graph_without_graphviz_says_how_to_install_it(lab, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` program anywhere on PATH
    answer = lab.call("/api/graph", {"session": "graph"})
    assert not answer["available"] and answer["svg"] is None
    assert "apt-get install graphviz" in answer["message"]
    assert "attention.query_weight" in answer["dot"]
