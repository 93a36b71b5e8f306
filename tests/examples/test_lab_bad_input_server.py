"""The attention lab's server (examples/lab) on input it cannot use and on one session asked
many times at once: a `collapse` holding lists or other non-names and a checkpoint holding a
Python value where an array belongs are bad input, answered 400 in JSON naming the field or the
entry (they were 500 "internal error"); concurrent step requests on one session each count
their steps once.

A real server runs on a free port of 127.0.0.1 in a thread; requests go through sockets.
"""

import concurrent.futures
import http.client
import json
import threading

import numpy as np
import pytest

import minigrad as mg
from examples.lab import api
from examples.lab import server as lab_server
from examples.sentiment import preprocess
from examples.sentiment.model import SentimentModel

WAIT = 30  # seconds any one answer or thread may take


@pytest.fixture
def served(tmp_path):
    server = lab_server.make_server("127.0.0.1", 0, runs=tmp_path / "runs")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=WAIT)


def post(server, path, body):
    """(status, body) of one POST as the lab's page sends it."""
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=WAIT)
    try:
        connection.request(
            "POST", path, json.dumps(body), headers={"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        assert response.getheader("Content-Type").startswith("application/json")
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def error_of(answer, status):
    code, body = answer
    assert code == status, body
    assert "Traceback" not in body["error"]
    return body["error"]


@pytest.mark.parametrize(
    "collapse",
    [[[[]]], [{}], [["attention"]], [None], [3], "attention", {"attention": 1}],
    ids=["nested lists", "a dict", "a name in a list", "null", "a number", "text", "an object"],
)
def test_a_collapse_that_is_not_a_list_of_names_is_400(served, collapse):
    answer = post(served, "/api/graph", {"session": "tab", "collapse": collapse})
    message = error_of(answer, 400)
    assert message.startswith("collapse: expected a list drawn from attention, pool, classifier")


def write_checkpoint(runs, pool="dot"):
    """A small model as examples/sentiment/train.py saves one; its state dict as numpy arrays."""
    vocab = preprocess.build_vocab([["good", "bad", "movie"]])
    model = SentimentModel(len(vocab), pool=pool, embedding_dim=6, hidden_size=8)
    (runs / pool).mkdir(parents=True)
    vocab.to_json(runs / pool / "vocab.json")
    state = {name: value.numpy() for name, value in model.state_dict().items()}
    mg.save(state, runs / pool / "best.npz")
    return state


@pytest.mark.parametrize(
    "damage, shown",
    [
        (lambda array: array.tolist(), "is a list"),
        (lambda array: {"rows": array.tolist()}, "is a dict"),
        (lambda array: "weights", "is a str"),
        (lambda array: 3.5, "is a float"),
        (lambda array: np.array(["a", "b"]), "is an array of dtype <U1"),
    ],
    ids=["a list", "a dict", "text", "a number", "an array of text"],
)
@pytest.mark.parametrize("entry", ["embedding.weight", "classifier.bias"])
def test_a_checkpoint_with_a_python_value_for_an_array_is_400(
    served, tmp_path, entry, damage, shown
):
    state = write_checkpoint(tmp_path / "runs")
    state[entry] = damage(state[entry])
    mg.save(state, tmp_path / "runs" / "dot" / "best.npz")
    answer = post(served, "/api/model/predict", {"model": "dot", "text": "good movie"})
    message = error_of(answer, 400)
    assert message.startswith("could not load the dot model from ")
    assert f"{entry!r} {shown}, not an array of numbers" in message


def test_the_undamaged_checkpoint_still_predicts(served, tmp_path):
    write_checkpoint(tmp_path / "runs")
    answer = post(served, "/api/model/predict", {"model": "dot", "text": "good movie"})
    assert answer[0] == 200 and answer[1]["tokens"] == ["good", "movie"]


def test_concurrent_steps_on_one_session_each_count_once(served):
    """12 requests of 20 steps at once on one session: 240 steps, each request's answer one of
    20, 40, ..., 240, and the same losses as the 240 steps made one request after another."""
    body = {"session": "shared", "steps": 20}
    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(lambda _: post(served, "/api/train/step", body), range(12)))
    assert [answer[0] for answer in answers] == [200] * 12
    assert sorted(answer[1]["step"] for answer in answers) == list(range(20, 241, 20))
    state = post(served, "/api/train/state", {"session": "shared"})[1]
    one_by_one = api.Lab()
    for _ in range(12):
        one_by_one.call("/api/train/step", {"session": "alone", "steps": 20})
    expected = one_by_one.call("/api/train/state", {"session": "alone"})
    assert state["step"] == 240
    # the loss curve: the loss each of the 240 steps started from, then the loss now
    assert len(state["losses"]) == 241 and state["losses"] == expected["losses"]
    assert state["losses"][-1] == state["loss"]


def test_a_session_in_use_is_not_dropped_to_make_room(served, monkeypatch):
    """A client at its cap of sessions opening one more dropped its least recently used even
    while a request was training it: that request's steps went to a model nobody saw, and the
    same id then started from step 0 beside it."""
    monkeypatch.setattr(api, "MAX_SESSIONS", 1)
    entered, release = threading.Event(), threading.Event()
    train = api.training.TrainingSession.step

    def held_step(session, count, learning_rate):
        entered.set()
        release.wait(WAIT)
        return train(session, count, learning_rate)

    monkeypatch.setattr(api.training.TrainingSession, "step", held_step)
    answers = []
    busy = threading.Thread(
        target=lambda: answers.append(post(served, "/api/train/step", {"session": "a", "steps": 7}))
    )
    busy.start()
    try:
        assert entered.wait(WAIT)
        refused = post(served, "/api/train/state", {"session": "b"})
    finally:
        release.set()
        busy.join(WAIT)
    assert "training sessions of this browser are busy" in error_of(refused, 503)
    assert answers[0][0] == 200 and answers[0][1]["step"] == 7
    assert post(served, "/api/train/state", {"session": "a"})[1]["step"] == 7
    # once the request is done, the session is the one to make room again
    assert post(served, "/api/train/state", {"session": "b"})[0] == 200
    assert list(served.lab._sessions) == ["b"]
