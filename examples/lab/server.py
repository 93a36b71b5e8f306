"""The HTTP side of the lab: Python's standard-library server, static files and JSON.

    server = make_server("127.0.0.1", 8000, runs="runs")
    server.serve_forever()

GET  /                 the page (static/index.html); HEAD answers the same without the body
GET  /static/<file>    the page's CSS and JavaScript; nothing outside static/ is served
POST /api/...          JSON in, JSON out (api.Lab.routes)

Every failure is a JSON answer {"error": message} with a status code, never a stack trace:
400 bad input, 404 unknown route or file, 403 a path outside static/ (or a request refused
below), 405 any other method, 411/413 a missing or too large body, 415 a POST that is not
application/json, 503 the lab is full, 500 a bug (its traceback goes to the terminal only).

A local web app is reachable from every page the browser shows, so, as Jupyter does:
- the Host header must name this server: 127.0.0.1, localhost or [::1] (or the address it
  was started on) with its port. A page of another site whose name was made to resolve to
  127.0.0.1 (DNS rebinding) sends its own name and is refused;
- a POST must come from the lab's own page: an Origin or Referer naming another site is
  refused, and the body must be declared application/json, which a plain form or a simple
  cross-site request cannot send;
- each request, its headers and its body, must arrive within request_seconds of the server
  starting to wait for it, or the connection is closed (a client sending a byte now and then
  holds no thread); at most max_connections connections are served at once, others get 503;
- the listen backlog is LISTEN_BACKLOG, so a burst of tabs is queued rather than refused.
"""

import http.cookies
import io
import ipaddress
import json
import re
import secrets
import sys
import threading
import time
import traceback
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from . import inputs
from .api import ANONYMOUS, Lab

STATIC = Path(__file__).resolve().parent / "static"
MAX_BODY_BYTES = 64 * 1024  # a 5,000-character review, escaped, fits several times over
MAX_STATIC_NAME = 255  # characters of a /static/ file name (the page's are a dozen)
REQUEST_SECONDS = 20  # for the whole of one request to arrive, headers and body
MAX_CONNECTIONS = 64  # served at once, one thread each
LISTEN_BACKLOG = 128  # connections the kernel queues before the server accepts them
LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")
WILDCARDS = ("", "0.0.0.0", "::")
CLIENT_COOKIE = "lab_client"  # names the client whose training sessions a request may use
_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,64}")
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
ALLOWED_METHODS = "GET, HEAD, POST"


def _reject_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


class _DeadlineReader(io.RawIOBase):
    """A connection's incoming bytes, each read waiting only until handler.deadline: a
    per-read timeout alone lets a client that sends a byte every few seconds stay forever."""

    def __init__(self, connection, handler):
        self.connection = connection
        self.handler = handler

    def readable(self):
        return True

    def readinto(self, buffer):
        remaining = self.handler.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request did not arrive in time")
        self.connection.settimeout(remaining)
        return self.connection.recv_into(buffer)


class LabHandler(BaseHTTPRequestHandler):
    server_version = "AttentionLab/1"
    deadline = 0.0

    def setup(self):
        super().setup()
        self.rfile.close()  # the plain reader; this one keeps to the request's deadline
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self))

    def handle_one_request(self):
        self.deadline = time.monotonic() + self.server.request_seconds
        super().handle_one_request()  # closes the connection on TimeoutError

    # ---------------------------------------------------------------------------------
    # Methods

    def do_GET(self):
        if self._refused_host():
            return
        path = urllib.parse.urlsplit(self.path).path
        if path in ("/", "/index.html"):
            return self._send_file(STATIC / "index.html", page=True)
        if path.startswith("/static/"):
            return self._send_static(urllib.parse.unquote(path[len("/static/") :]))
        if path in self.server.lab.routes:
            return self._send_error(
                HTTPStatus.METHOD_NOT_ALLOWED, f"{path} takes POST with a JSON body"
            )
        return self._send_error(HTTPStatus.NOT_FOUND, f"no page or endpoint at {path}")

    do_HEAD = do_GET  # _send leaves the body out

    def do_POST(self):
        if self._refused_host() or self._refused_origin():
            return
        path = urllib.parse.urlsplit(self.path).path
        if path not in self.server.lab.routes:
            self.close_connection = True  # the body is not read
            return self._send_error(HTTPStatus.NOT_FOUND, f"no endpoint at {path}")
        request = self._read_json()
        if request is None:
            return
        try:
            answer = self.server.lab.call(path, request, client=self._client())
        except inputs.LabInputError as error:
            return self._send_error(getattr(error, "status", HTTPStatus.BAD_REQUEST), str(error))
        except Exception as error:  # a bug: say so on the page, keep the details in the terminal
            traceback.print_exc(file=sys.stderr)
            return self._send_error(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                f"the lab hit an internal error ({type(error).__name__}); "
                f"the terminal running the server shows the details",
            )
        self._send_json(HTTPStatus.OK, answer)

    def _other_method(self):
        if self._refused_host():
            return
        self.close_connection = True  # a body, if any, is not read
        self._send_error(
            HTTPStatus.METHOD_NOT_ALLOWED,
            f"the lab answers {ALLOWED_METHODS} only; got {self.command}",
        )

    do_PUT = do_DELETE = do_OPTIONS = do_PATCH = do_TRACE = do_CONNECT = _other_method

    def send_error(self, code, message=None, explain=None):
        """http.server's own refusals (a bad request line, an unknown method, headers too
        long) as JSON too."""
        self.close_connection = True
        if code == HTTPStatus.NOT_IMPLEMENTED and self.command:
            code = HTTPStatus.METHOD_NOT_ALLOWED
            message = f"the lab answers {ALLOWED_METHODS} only; got {self.command:.20}"
        self._send_error(code, message or explain or HTTPStatus(code).phrase)

    # ---------------------------------------------------------------------------------
    # Who may ask

    def _refused_host(self):
        """Answer 403 and return True unless the Host header names this server."""
        host = self.headers.get("Host")
        if host is not None and self.server.allows_host(host):
            return False
        self.close_connection = True
        self._send_error(
            HTTPStatus.FORBIDDEN,
            f"this lab answers requests addressed to {self.server.host_names()}; "
            f"got Host {inputs._shown(host, 60)}",
        )
        return True

    def _refused_origin(self):
        """Answer 403 and return True if an Origin or Referer names another site."""
        for header in ("Origin", "Referer"):
            value = self.headers.get(header)
            if value is None:
                continue
            parts = urllib.parse.urlsplit(value)
            if parts.scheme == "http" and self.server.allows_host(parts.netloc):
                continue
            self.close_connection = True
            self._send_error(
                HTTPStatus.FORBIDDEN,
                "the lab takes requests from its own page only; "
                f"got {header} {inputs._shown(value, 60)}",
            )
            return True
        return False

    def _client(self):
        """The lab_client cookie's token, or api.ANONYMOUS."""
        cookie = http.cookies.SimpleCookie()
        try:
            cookie.load(self.headers.get("Cookie", ""))
        except http.cookies.CookieError:
            return ANONYMOUS
        token = cookie.get(CLIENT_COOKIE)
        return token.value if token and _TOKEN.fullmatch(token.value) else ANONYMOUS

    # ---------------------------------------------------------------------------------
    # Reading

    def _read_json(self):
        """The request body as a dict, or None after answering with the error."""
        lengths = set(self.headers.get_all("Content-Length", []))
        if len(lengths) > 1:  # which one the body follows is anyone's guess
            self.close_connection = True
            self._send_error(HTTPStatus.BAD_REQUEST, "the request has two Content-Lengths")
            return None
        length = self.headers.get("Content-Length")
        if length is None:
            self.close_connection = True
            self._send_error(HTTPStatus.LENGTH_REQUIRED, "a POST needs a Content-Length header")
            return None
        length = length.strip()
        # ASCII digits only: str.isdigit() takes '²', which int() refuses.
        if not re.fullmatch(r"[0-9]+", length):
            self.close_connection = True
            self._send_error(
                HTTPStatus.BAD_REQUEST,
                f"Content-Length must be a whole number; got {inputs._shown(length, 20)}",
            )
            return None
        # The length of the text first: int() of a 5,000-digit string raises.
        if len(length) > 20 or int(length) > MAX_BODY_BYTES:
            self.close_connection = True  # never read an oversized body
            shown = f"{int(length):,}" if len(length) <= 20 else f"a {len(length):,}-digit number"
            self._send_error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"request body too large: at most {MAX_BODY_BYTES:,} bytes; got {shown}",
            )
            return None
        media_type = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if media_type != "application/json":
            self.close_connection = True
            self._send_error(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                "a POST to the lab must be Content-Type: application/json; "
                f"got {inputs._shown(self.headers.get('Content-Type'), 40)}",
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

    # ---------------------------------------------------------------------------------
    # Answering

    def _send_static(self, name):
        if len(name) > MAX_STATIC_NAME:  # the file system would refuse it (ENAMETOOLONG)
            return self._send_error(
                HTTPStatus.NOT_FOUND, f"no file static/{name[:40]}... ({len(name):,} characters)"
            )
        root = STATIC.resolve()
        try:
            path = (root / name).resolve()
        except (OSError, ValueError):
            return self._send_error(HTTPStatus.BAD_REQUEST, "bad file name")
        if "\x00" in name or not path.is_relative_to(root):
            return self._send_error(
                HTTPStatus.FORBIDDEN, "only files inside the lab's static folder are served"
            )
        try:
            found = path.is_file() and path.suffix in CONTENT_TYPES
        except OSError:  # a part of the name too long, or not readable
            found = False
        if not found:
            return self._send_error(HTTPStatus.NOT_FOUND, f"no file static/{name}")
        self._send_file(path)

    def _send_file(self, path, page=False):
        headers = {}
        if page and self._client() == ANONYMOUS:
            # The page's later requests carry this token: the sessions they make are theirs.
            # Lax, not Strict: a Strict cookie is left out when a link on another site opens the
            # lab, and a new token would then cut the tabs already open off their sessions.
            headers["Set-Cookie"] = (
                f"{CLIENT_COOKIE}={secrets.token_urlsafe(18)}; Path=/; HttpOnly; SameSite=Lax"
            )
        self._send(HTTPStatus.OK, path.read_bytes(), CONTENT_TYPES[path.suffix], headers)

    def _send_json(self, status, data):
        # inputs.plain turned NaN into null
        body = json.dumps(data, allow_nan=False).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8")

    def _send_error(self, status, message):
        headers = {"Allow": ALLOWED_METHODS} if status == HTTPStatus.METHOD_NOT_ALLOWED else {}
        body = json.dumps({"error": message}).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8", headers)

    def _send(self, status, body, content_type, headers=None):
        # Writing has its own bound: the read deadline may be nearly spent by now.
        self.connection.settimeout(self.server.request_seconds)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in {**SECURITY_HEADERS, **(headers or {})}.items():
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
    """A ThreadingHTTPServer (one thread per connection, so several tabs at once) holding a Lab.

    request_seconds bounds the arrival of each request (headers and body); max_connections
    bounds the connections served at once (a connection past it is answered 503 and closed).
    """

    daemon_threads = True  # Ctrl-C never waits for a stalled browser connection
    request_queue_size = LISTEN_BACKLOG  # socketserver's default is 5

    def __init__(
        self,
        address,
        lab,
        verbose=False,
        request_seconds=REQUEST_SECONDS,
        max_connections=MAX_CONNECTIONS,
    ):
        self.lab = lab
        self.verbose = verbose
        self.request_seconds = request_seconds
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, LabHandler)
        host, port = address[0], self.server_address[1]
        names = [*LOCAL_NAMES]
        if host not in WILDCARDS:
            names.append(f"[{host}]" if ":" in host else host)
        self._hosts = {f"{name.lower()}:{port}" for name in names}

    @property
    def url(self):
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"

    def host_names(self):
        """The Host values accepted, as a sentence."""
        names = ", ".join(sorted(self._hosts))
        if self.server_address[0] in WILDCARDS:
            names += f" or any IP address with port {self.server_address[1]}"
        return names

    def allows_host(self, host):
        """True if `host` (a Host header, or an Origin's host:port) names this server. Bound
        to every address (0.0.0.0), any IP address with the port is accepted too: DNS
        rebinding needs a name, never an IP literal."""
        host = host.strip().lower()
        if host in self._hosts:
            return True
        if self.server_address[0] not in WILDCARDS:
            return False
        name, _, port = host.rpartition(":")
        try:
            ipaddress.ip_address(name[1:-1] if name.startswith("[") else name)
        except ValueError:
            return False
        return port == str(self.server_address[1])

    def process_request(self, request, client_address):
        if not self._slots.acquire(blocking=False):
            return self._refuse_busy(request)
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def _refuse_busy(self, request):
        """A short 503 written without a thread (it fits any socket buffer), then close."""
        body = json.dumps(
            {"error": "the lab is serving as many connections as it takes: try again"}
        ).encode()
        answer = (
            b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        try:
            request.setblocking(False)
            request.send(answer)
        except OSError:
            pass
        self.shutdown_request(request)

    def handle_error(self, request, client_address):
        """A client that went away is no error of the lab's; anything else is printed."""
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def make_server(host="127.0.0.1", port=8000, runs="runs", verbose=False, **limits):
    """A LabServer bound to (host, port); port 0 picks a free port (see server.url).
    limits: request_seconds, max_connections (LabServer)."""
    return LabServer((host, port), Lab(runs), verbose=verbose, **limits)
