"""The attention lab's server against hostile clients (issue 27, items 11 and 12): malformed
headers and names, DNS rebinding, cross-site POSTs, slow clients, connection floods, session
eviction, other HTTP methods and a long request holding up the rest.

Each test starts its own server on 127.0.0.1, port 0, and talks to it through sockets; every
wait is bounded by a socket timeout or a bounded loop.
"""

import json
import socket
import threading
import time
from http.cookies import SimpleCookie

import pytest

from examples.lab import api, training
from examples.lab import server as lab_server

WAIT = 30  # seconds any one answer may take before the test gives up on it


@pytest.fixture
def start(tmp_path):
    """start(**limits) -> a running server; all are stopped after the test."""
    servers = []

    def start_server(**limits):
        server = lab_server.make_server("127.0.0.1", 0, runs=tmp_path / "runs", **limits)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        return server

    yield start_server
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join(timeout=WAIT)


def host_of(server):
    return f"127.0.0.1:{server.server_address[1]}"


def exchange(server, data, timeout=WAIT):
    """Send raw bytes, read until the server closes: (status, headers, body); status None if
    the server closed without answering."""
    with socket.create_connection(server.server_address[:2], timeout=timeout) as connection:
        connection.sendall(data)
        received = b""
        while chunk := connection.recv(65536):
            received += chunk
    if not received:
        return None, {}, b""
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, body


def http(server, method, path, body=None, headers=None):
    """One request as the lab's page sends it (its Host, JSON), with `headers` on top (a value
    None leaves that header out)."""
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    fields = {"Host": host_of(server)}
    if body is not None:
        fields.update({"Content-Type": "application/json", "Content-Length": str(len(body))})
    fields.update(headers or {})
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in fields.items() if value is not None
    )
    return exchange(server, head.encode("latin-1") + b"\r\n" + (body or b""))


def json_error(answer, status):
    code, headers, body = answer
    assert code == status, body
    assert headers["content-type"].startswith("application/json")
    message = json.loads(body)["error"]
    assert "Traceback" not in message
    return message


def steps_of(server, session, headers=None):
    answer = http(server, "POST", "/api/train/state", {"session": session}, headers)
    assert answer[0] == 200, answer[2]
    return json.loads(answer[2])["step"]


# ---------------------------------------------------------------------------------------
# Item 11: headers and names that used to end in a traceback and no answer


def test_a_content_length_of_unicode_digits_is_400(start):
    server = start()
    # '²' is a digit to str.isdigit() but not to int(); headers are read as Latin-1.
    data = b"POST /api/by_hand HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
    data = data % host_of(server).encode() + b"Content-Length: \xb2\r\n\r\n{}"
    assert "Content-Length must be a whole number" in json_error(exchange(server, data), 400)


def test_two_different_content_lengths_are_400(start):
    server = start()
    data = b"POST /api/by_hand HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
    data = data % host_of(server).encode() + b"Content-Length: 2\r\nContent-Length: 9\r\n\r\n{}"
    assert "two Content-Lengths" in json_error(exchange(server, data), 400)


def test_a_5000_digit_content_length_is_413(start):
    server = start()
    message = json_error(
        http(server, "POST", "/api/by_hand", b"{}", {"Content-Length": "9" * 5000}), 413
    )
    assert "at most 65,536 bytes; got a 5,000-digit number" in message


@pytest.mark.parametrize(
    "name",
    ["a" * 5000, "a/" * 2500 + "x.js", "%41" * 5000],
    ids=["one name", "deep folders", "percent-encoded"],
)
def test_a_5000_character_static_name_is_404(start, name):
    server = start()
    assert "no file static/" in json_error(http(server, "GET", "/static/" + name), 404)


# ---------------------------------------------------------------------------------------
# Item 12: who may ask


@pytest.mark.parametrize(
    "host",
    [
        "evil.example:{port}",  # a page of another site, its name rebound to 127.0.0.1
        "127.0.0.1.evil.example:{port}",
        "127.0.0.1:1",  # another port: another server
        "localhost",  # no port
        "",
        None,  # no Host at all
    ],
)
def test_a_host_that_is_not_the_lab_is_refused(start, host, tmp_path):
    server = start()
    if host is not None:
        host = host.format(port=server.server_address[1])
    for method, path, body in [("GET", "/", None), ("POST", "/api/model/status", {})]:
        answer = http(server, method, path, body, {"Host": host})
        assert "this lab answers requests addressed to" in json_error(answer, 403)
        assert str(tmp_path) not in answer[2].decode()  # the runs path stays private


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "LOCALHOST", "[::1]"])
def test_the_labs_own_names_are_served(start, name, tmp_path):
    server = start()
    host = f"{name}:{server.server_address[1]}"
    assert http(server, "GET", "/", headers={"Host": host})[0] == 200
    answer = http(server, "POST", "/api/model/status", {}, {"Host": host})
    assert answer[0] == 200 and str(tmp_path) in json.loads(answer[2])["runs"]


def test_a_lab_open_to_the_network_takes_ip_addresses_but_no_names(start):
    server = start()
    port = server.server_address[1]
    # As if started with --host 0.0.0.0 (tests listen on 127.0.0.1 only): rebinding needs a name.
    server.server_address = ("0.0.0.0", port)
    assert http(server, "GET", "/", headers={"Host": f"192.168.1.5:{port}"})[0] == 200
    assert http(server, "GET", "/", headers={"Host": f"[fe80::1]:{port}"})[0] == 200
    for host in [f"evil.example:{port}", "192.168.1.5:1", "192.168.1.5"]:
        assert "or any IP address" in json_error(
            http(server, "GET", "/", headers={"Host": host}), 403
        )


@pytest.mark.parametrize(
    "headers, status, message",
    [
        ({"Origin": "http://evil.example"}, 403, "its own page only; got Origin"),
        ({"Origin": "null"}, 403, "its own page only; got Origin"),
        ({"Origin": "https://127.0.0.1:{port}"}, 403, "its own page only; got Origin"),
        ({"Referer": "http://evil.example/page.html"}, 403, "its own page only; got Referer"),
        ({"Content-Type": "text/plain"}, 415, "must be Content-Type: application/json"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "application/json"),
        ({"Content-Type": None}, 415, "must be Content-Type: application/json"),
    ],
)
def test_a_cross_site_post_trains_nothing(start, headers, status, message):
    server = start()
    port = server.server_address[1]
    headers = {name: value and value.format(port=port) for name, value in headers.items()}
    answer = http(server, "POST", "/api/train/step", {"session": "tab", "steps": 5}, headers)
    assert message in json_error(answer, status)
    assert steps_of(server, "tab") == 0


def test_the_labs_own_page_may_post(start):
    server = start()
    own = f"http://{host_of(server)}"
    headers = {"Origin": own, "Referer": own + "/", "Content-Type": "application/json"}
    answer = http(server, "POST", "/api/train/step", {"session": "tab", "steps": 2}, headers)
    assert answer[0] == 200 and json.loads(answer[2])["step"] == 2


# ---------------------------------------------------------------------------------------
# Item 12: slow clients and floods


def handler_threads():
    return sum("process_request_thread" in thread.name for thread in threading.enumerate())


def test_a_client_trickling_bytes_is_cut_off_at_the_deadline(start):
    server = start()
    server.request_seconds = 1
    with socket.create_connection(server.server_address[:2], timeout=WAIT) as connection:
        connection.sendall(b"POST /api/by_hand HTTP/1.1\r\n")
        closed = False
        for _ in range(150):  # a byte every 0.2 s: a per-read timeout never fires
            try:
                connection.sendall(b"X")
                connection.settimeout(0.2)
                closed = connection.recv(1) == b""
            except TimeoutError:
                continue
            except (ConnectionResetError, BrokenPipeError):
                closed = True
            break
    assert closed, "the server still held the connection after 30 s of trickling"


def test_connections_past_the_cap_are_answered_503_and_hold_no_thread(start):
    server = start(max_connections=4)
    baseline = handler_threads()
    stalled = []
    try:
        for _ in range(12):
            connection = socket.create_connection(server.server_address[:2], timeout=WAIT)
            connection.sendall(b"GET / HTTP/1.1\r\n")  # and nothing more
            stalled.append(connection)
        answered = []
        for connection in stalled:
            connection.settimeout(1)  # the accepted four send nothing: wait a second for each
            try:
                answered.append(connection.recv(4096))
            except TimeoutError:
                pass
        assert len(answered) == 8
        assert all(answer.startswith(b"HTTP/1.0 503") for answer in answered)
        assert b"as many connections as it takes" in answered[0]
        assert handler_threads() - baseline <= 4
    finally:
        for connection in stalled:
            connection.close()
    # The stalled four see their clients leave; then the lab serves again.
    for _ in range(100):
        if handler_threads() <= baseline:
            break
        time.sleep(0.1)
    assert http(server, "GET", "/")[0] == 200


def test_the_listen_backlog_queues_a_burst(tmp_path):
    server = lab_server.make_server("127.0.0.1", 0, runs=tmp_path)  # bound, not accepting yet
    connections = []
    try:
        for _ in range(50):
            connections.append(socket.create_connection(server.server_address[:2], timeout=5))
    except TimeoutError:
        pass
    finally:
        for connection in connections:
            connection.close()
        server.server_close()
    assert len(connections) == 50, f"only {len(connections)} connections were queued"


# ---------------------------------------------------------------------------------------
# Item 12: sessions belong to their client


def page_cookie(server, cookie=None):
    """The Set-Cookie header of the page (None if it sets none)."""
    status, headers, _ = http(server, "GET", "/", headers={"Cookie": cookie})
    assert status == 200
    return headers.get("set-cookie")


def client_cookie(server):
    value = SimpleCookie(page_cookie(server))[lab_server.CLIENT_COOKIE].value
    return {"Cookie": f"{lab_server.CLIENT_COOKIE}={value}"}


def test_the_page_names_its_client_in_a_cookie(start):
    server = start()
    set_cookie = page_cookie(server)
    assert set_cookie.startswith(lab_server.CLIENT_COOKIE + "=")
    assert "HttpOnly" in set_cookie and "SameSite=Lax" in set_cookie
    token = SimpleCookie(set_cookie)[lab_server.CLIENT_COOKIE].value
    assert token != SimpleCookie(page_cookie(server))[lab_server.CLIENT_COOKIE].value
    assert page_cookie(server, f"{lab_server.CLIENT_COOKIE}={token}") is None  # kept


def test_one_client_cannot_evict_the_sessions_of_another(start, monkeypatch):
    monkeypatch.setattr(api, "MAX_SESSIONS", 4)
    server = start()
    alice = client_cookie(server)
    assert (
        http(server, "POST", "/api/train/step", {"session": "alice", "steps": 3}, alice)[0] == 200
    )
    for number in range(12):  # another client, without a cookie, opens tab after tab
        assert steps_of(server, f"flood{number}") == 0
    assert steps_of(server, "alice", alice) == 3
    assert steps_of(server, "flood11") == 0 and "flood0" not in server.lab._sessions


def test_a_client_minting_cookies_is_refused_when_the_lab_is_full(start, monkeypatch):
    monkeypatch.setattr(api, "MAX_SESSIONS", 4)
    monkeypatch.setattr(api, "MAX_ALL_SESSIONS", 6, raising=False)
    server = start()
    alice = client_cookie(server)
    assert (
        http(server, "POST", "/api/train/step", {"session": "alice", "steps": 3}, alice)[0] == 200
    )
    statuses = []
    for number in range(10):
        body = {"session": f"flood{number}"}
        statuses.append(http(server, "POST", "/api/train/state", body, client_cookie(server))[0])
    assert statuses == [200] * 5 + [503] * 5
    assert steps_of(server, "alice", alice) == 3


def test_a_session_answers_only_its_client(start):
    server = start()
    alice, mallory = client_cookie(server), client_cookie(server)
    assert (
        http(server, "POST", "/api/train/step", {"session": "alice", "steps": 3}, alice)[0] == 200
    )
    answer = http(server, "POST", "/api/train/reset", {"session": "alice"}, mallory)
    assert "belongs to another client" in json_error(answer, 403)
    assert steps_of(server, "alice", alice) == 3


def test_an_idle_session_makes_room_when_the_lab_is_full(monkeypatch):
    monkeypatch.setattr(api, "MAX_ALL_SESSIONS", 2, raising=False)
    now = [0.0]
    lab = api.Lab(clock=lambda: now[0])
    lab.call("/api/train/state", {"session": "old"}, client="a")
    lab.call("/api/train/state", {"session": "recent"}, client="b")
    with pytest.raises(api.LabBusyError, match="the lab holds 2 training sessions"):
        lab.call("/api/train/state", {"session": "new"}, client="c")
    now[0] = api.SESSION_IDLE_SECONDS + 1
    lab.call("/api/train/state", {"session": "recent"}, client="b")
    lab.call("/api/train/state", {"session": "new"}, client="c")
    assert list(lab._sessions) == ["recent", "new"]


# ---------------------------------------------------------------------------------------
# Item 12: other methods, and no lock held across the whole lab


def test_head_answers_like_get_without_a_body(start):
    server = start()
    status, headers, body = http(server, "HEAD", "/")
    assert status == 200 and headers["content-type"].startswith("text/html") and body == b""
    assert int(headers["content-length"]) > 500
    status, headers, body = http(server, "HEAD", "/nothing")
    assert status == 404 and headers["content-type"].startswith("application/json")
    assert body == b""


@pytest.mark.parametrize("method", ["OPTIONS", "PUT", "DELETE", "PATCH", "FROB"])
@pytest.mark.parametrize("path", ["/", "/api/by_hand"])
def test_other_methods_get_a_json_405(start, method, path):
    server = start()
    answer = http(server, method, path, b"{}")
    assert f"the lab answers GET, HEAD, POST only; got {method}" in json_error(answer, 405)
    assert answer[1]["allow"] == "GET, HEAD, POST"


def test_a_long_training_request_holds_up_only_its_own_session(start, monkeypatch):
    server = start()
    entered, release = threading.Event(), threading.Event()
    train = training.TrainingSession.step

    def held_step(session, count, learning_rate):  # a 200-step request, as long as we like
        entered.set()
        release.wait(WAIT)
        return train(session, count, learning_rate)

    monkeypatch.setattr(training.TrainingSession, "step", held_step)
    answers = []
    body = {"session": "long", "steps": 200}
    long_request = threading.Thread(
        target=lambda: answers.append(http(server, "POST", "/api/train/step", body))
    )
    long_request.start()
    try:
        assert entered.wait(WAIT)
        by_hand = exchange_with_timeout(server, "/api/by_hand", {"temperature": 2})
        other = exchange_with_timeout(server, "/api/train/state", {"session": "other"})
        status = exchange_with_timeout(server, "/api/model/status", {})
    finally:
        release.set()
        long_request.join(WAIT)
    assert (by_hand, other, status) == (200, 200, 200)
    assert answers[0][0] == 200 and json.loads(answers[0][2])["step"] == 200


def exchange_with_timeout(server, path, body):
    """The status of a POST, or 'no answer' if none came within 10 s (it waits on a lock)."""
    data = json.dumps(body).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host_of(server)}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    try:
        return exchange(server, head.encode() + data, timeout=10)[0]
    except TimeoutError:
        return "no answer"
