"""The HTTP side of the lab: Python's standard-library server, static files and JSON.

    server = make_server("127.0.0.1", 8000, runs="runs")
    server.serve_forever()

GET  /                 the page (static/index.html)
GET  /static/<file>    the page's CSS and JavaScript; nothing outside static/ is served
POST /api/...          JSON in, JSON out (api.Lab.routes)

Every failure is a JSON answer {"error": message} with a status code, never a stack trace:
400 bad input, 404 unknown route or file, 403 a path outside static/, 405 wrong method,
411/413 a missing or too large body, 500 a bug (its traceback goes to the terminal only).
"""

import json
import sys
import traceback
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import inputs
from .api import Lab

STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY_BYTES = 64 * 1024  # a 5,000-character review, escaped, fits several times over
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
# Everything the page loads comes from this server: no CDN, works offline.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


def _reject_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


class LabHandler(BaseHTTPRequestHandler):
    server_version = "AttentionLab/1"
    timeout = 15  # seconds a client may stall mid-request before its connection is dropped

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path in ("/", "/index.html"):
            return self._send_file(STATIC / "index.html")
        if path.startswith("/static/"):
            return self._send_static(urllib.parse.unquote(path[len("/static/") :]))
        if path in self.server.lab.routes:
            return self._send_error(
                HTTPStatus.METHOD_NOT_ALLOWED, f"{path} takes POST with a JSON body"
            )
        return self._send_error(HTTPStatus.NOT_FOUND, f"no page or endpoint at {path}")

    def do_POST(self):
        path = urllib.parse.urlsplit(self.path).path
        if path not in self.server.lab.routes:
            self.close_connection = True  # the body is not read
            return self._send_error(HTTPStatus.NOT_FOUND, f"no endpoint at {path}")
        request = self._read_json()
        if request is None:
            return
        try:
            answer = self.server.lab.call(path, request)
        except inputs.LabInputError as error:
            return self._send_error(HTTPStatus.BAD_REQUEST, str(error))
        except Exception as error:  # a bug: say so on the page, keep the details in the terminal
            traceback.print_exc(file=sys.stderr)
            return self._send_error(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                f"the lab hit an internal error ({type(error).__name__}); "
                f"the terminal running the server shows the details",
            )
        self._send_json(HTTPStatus.OK, answer)

    def _read_json(self):
        """The request body as a dict, or None after answering with the error."""
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            self._send_error(HTTPStatus.LENGTH_REQUIRED, "a POST needs a Content-Length header")
            return None
        if not length.isdigit():
            self.close_connection = True
            self._send_error(
                HTTPStatus.BAD_REQUEST, f"Content-Length must be a whole number; got {length!r:.20}"
            )
            return None
        if int(length) > MAX_BODY_BYTES:
            self.close_connection = True  # never read an oversized body
            self._send_error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"request body too large: at most {MAX_BODY_BYTES:,} bytes; got {int(length):,}",
            )
            return None
        body = self.rfile.read(int(length))
        if len(body) != int(length):
            self.close_connection = True
            self._send_error(HTTPStatus.BAD_REQUEST, "the request body ended early")
            return None
        try:
            request = json.loads(body.decode("utf-8") or "{}", parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError, RecursionError) as error:
            self._send_error(HTTPStatus.BAD_REQUEST, f"the request body is not valid JSON: {error}")
            return None
        if not isinstance(request, dict):
            self._send_error(
                HTTPStatus.BAD_REQUEST, f"expected a JSON object; got {type(request).__name__}"
            )
            return None
        return request

    def _send_static(self, name):
        root = STATIC.resolve()
        try:
            path = (root / name).resolve()
        except (OSError, ValueError):
            return self._send_error(HTTPStatus.BAD_REQUEST, "bad file name")
        if "\x00" in name or not path.is_relative_to(root):
            return self._send_error(
                HTTPStatus.FORBIDDEN, "only files inside the lab's static folder are served"
            )
        if not path.is_file() or path.suffix not in CONTENT_TYPES:
            return self._send_error(HTTPStatus.NOT_FOUND, f"no file static/{name}")
        self._send_file(path)

    def _send_file(self, path):
        self._send(HTTPStatus.OK, path.read_bytes(), CONTENT_TYPES[path.suffix])

    def _send_json(self, status, data):
        body = json.dumps(data, allow_nan=False).encode(
            "utf-8"
        )  # inputs.plain turned NaN into null
        self._send(status, body, "application/json; charset=utf-8")

    def _send_error(self, status, message):
        self._send_json(status, {"error": message})

    def _send(self, status, body, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format, *args):  # quiet: one line per error, none per request
        if self.server.verbose:
            super().log_message(format, *args)

    def log_error(self, format, *args):
        super().log_message(format, *args)


class LabServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer (one thread per connection, so several tabs at once) holding a Lab."""

    daemon_threads = True  # Ctrl-C never waits for a stalled browser connection

    def __init__(self, address, lab, verbose=False):
        self.lab = lab
        self.verbose = verbose
        super().__init__(address, LabHandler)

    @property
    def url(self):
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"


def make_server(host="127.0.0.1", port=8000, runs="runs", verbose=False):
    """A LabServer bound to (host, port); port 0 picks a free port (see server.url)."""
    return LabServer((host, port), Lab(runs), verbose=verbose)
