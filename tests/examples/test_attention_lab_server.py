"""The attention lab's HTTP layer (examples/lab/server.py) and command line
(examples/attention_lab.py): routes, static files, caps, error answers, several clients at once.

A real server runs on a free port of 127.0.0.1 in a thread; requests go through sockets.
"""

import concurrent.futures
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from examples.lab import server as lab_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(tmp_path):
    server = lab_server.make_server("127.0.0.1", 0, runs=tmp_path / "runs")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def request(server, method, path, body=None, headers=None):
    """(status, headers, body bytes) of one request; body: dict -> JSON, bytes as they are."""
    connection = http.client.HTTPConnection(*server.server_address[:2], timeout=30)
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", **(headers or {})}  # what the page sends
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    answer = (response.status, dict(response.getheaders()), response.read())
    connection.close()
    return answer


def error_of(answer, status):
    code, headers, body = answer
    assert code == status, body
    assert headers["Content-Type"].startswith("application/json")
    message = json.loads(body)["error"]
    assert "Traceback" not in message and 'File "' not in message
    return message


def test_the_page_and_its_files_are_served_offline(served):
    status, headers, body = request(served, "GET", "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    # the browser loads nothing from elsewhere
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    page = body.decode()
    files = re.findall(r'(?:src|href)="(/static/[^"]+)"', page)
    assert {"/static/lab.css", "/static/lab.js", "/static/by_hand.js"} <= set(files)
    assert not re.search(r'(?:src|href)="(?:https?:)?//', page)  # no CDN
    for path in files:
        status, headers, body = request(served, "GET", path)
        assert status == 200 and len(body) > 500, path
        # no fetch from the network
        assert not re.search(rb"https?://(?!www\.w3\.org/2000/svg)", body), path


@pytest.mark.parametrize(
    "path",
    [
        "/static/../api.py",
        "/static/%2e%2e/api.py",
        "/static/..%2fserver.py",
        "/static/%2e%2e/%2e%2e/%2e%2e/README.md",
        "/static//etc/passwd",
    ],
)
def test_paths_outside_the_static_folder_are_refused(served, path):
    assert "only files inside the lab's static folder" in error_of(
        request(served, "GET", path), 403
    )


@pytest.mark.parametrize(
    "path", ["/nothing", "/static/missing.js", "/static/", "/api/by_hand/extra", "/static/x.py"]
)
def test_unknown_pages_are_404(served, path):
    error_of(request(served, "GET", path), 404)


def test_unknown_endpoints_and_wrong_methods(served):
    assert "no endpoint at /api/nothing" in error_of(
        request(served, "POST", "/api/nothing", {}), 404
    )
    assert "takes POST" in error_of(request(served, "GET", "/api/by_hand"), 405)


def test_an_endpoint_answers_json(served):
    status, _, body = request(served, "POST", "/api/by_hand", {"temperature": 2})
    assert status == 200
    answer = json.loads(body)
    assert answer["temperature"] == 2 and len(answer["head_results"][0]["weights"]) == 3


@pytest.mark.parametrize(
    "body, message",
    [
        (b"{not json", "not valid JSON"),
        (b'{"temperature": NaN}', "not valid JSON: NaN is not a number JSON allows"),
        (b'{"temperature": Infinity}', "not valid JSON"),
        (b"[1, 2]", "expected a JSON object; got list"),
        (b"\xff\xfe", "not valid JSON"),
        (b"[" * 50_000 + b"]" * 10_000, "not valid JSON"),
    ],
)
def test_malformed_bodies_are_400(served, body, message):
    assert message in error_of(request(served, "POST", "/api/by_hand", body), 400)


def test_bad_input_is_400_with_the_message(served):
    message = error_of(
        request(served, "POST", "/api/by_hand", {"query_weight": [[1, "x"], [0, 1]]}), 400
    )
    assert message == "W_Q[1][2]: expected a number between -100 and 100; got 'x'"


def test_oversized_bodies_are_refused_without_reading_them(served):
    connection = http.client.HTTPConnection(*served.server_address[:2], timeout=30)
    connection.putrequest("POST", "/api/model/predict")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Content-Length", str(100 * 1024 * 1024))  # announced, never sent
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 413
    assert "request body too large: at most 65,536 bytes" in json.loads(response.read())["error"]
    connection.close()


def test_missing_or_bad_content_length(served):
    with socket.create_connection(served.server_address[:2], timeout=30) as raw:
        host = "127.0.0.1:%d" % served.server_address[1]  # the lab answers its own Host only
        raw.sendall(b"POST /api/by_hand HTTP/1.1\r\nHost: %s\r\n\r\n" % host.encode())
        assert raw.recv(4096).startswith(b"HTTP/1.0 411")
    assert "whole number" in error_of(
        request(served, "POST", "/api/by_hand", b"{}", {"Content-Length": "-5"}), 400
    )


def test_a_bug_is_500_without_a_traceback(served, capsys):
    def broken(request):
        raise ZeroDivisionError("division by zero")

    served.lab.routes["/api/by_hand"] = broken
    message = error_of(request(served, "POST", "/api/by_hand", {}), 500)
    assert "internal error (ZeroDivisionError)" in message
    assert "Traceback" in capsys.readouterr().err  # the details are in the terminal


def test_a_stalled_client_does_not_hold_up_the_others(served):
    with socket.create_connection(served.server_address[:2], timeout=30) as stalled:
        head = "POST /api/by_hand HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % served.server_address[1]
        head += "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        stalled.sendall(head.encode())  # and then nothing
        status, _, _ = request(served, "POST", "/api/by_hand", {})
        assert status == 200


def test_several_tabs_at_once(served):
    """Four tabs train their own models at the same time; each ends where one alone would."""

    def tab(number):
        session = f"tab{number}"
        request(served, "POST", "/api/train/reset", {"session": session})
        for _ in range(5):
            status, _, body = request(
                served, "POST", "/api/train/step", {"session": session, "steps": 2}
            )
            assert status == 200, body
        by_hand = request(served, "POST", "/api/by_hand", {"temperature": 0.5 + number})
        assert by_hand[0] == 200
        return json.loads(body)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        states = list(pool.map(tab, range(4)))
    assert [state["step"] for state in states] == [10] * 4
    # the same seed, the same data
    assert all(state["losses"] == states[0]["losses"] for state in states)


# ---------------------------------------------------------------------------------------
# The command line


def start_lab(*arguments, sigint=signal.SIG_DFL):
    """The lab as a user starts it; sigint: the SIGINT disposition it inherits (a shell hands a
    program it starts in the background SIG_IGN)."""
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.Popen(
        [sys.executable, str(ROOT / "examples" / "attention_lab.py"), *map(str, arguments)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
    )


@pytest.mark.parametrize(
    "sigint", [signal.SIG_DFL, signal.SIG_IGN], ids=["foreground", "started in the background"]
)
def test_command_prints_the_url_serves_and_stops_on_ctrl_c(tmp_path, sigint):
    process = start_lab("--port", 0, "--runs", tmp_path, sigint=sigint)
    try:
        line = process.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line + process.stderr.read()
        with urllib.request.urlopen(url.group(0), timeout=30) as response:
            assert response.status == 200 and b"Attention lab" in response.read()
        process.send_signal(signal.SIGINT)  # what Ctrl-C sends
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert "attention lab: stopped" in out and "Traceback" not in err


def test_command_says_when_the_port_is_taken():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        process = start_lab("--port", taken.getsockname()[1])
        out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "cannot listen on 127.0.0.1" in err and "Traceback" not in err
