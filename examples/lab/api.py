"""The lab's JSON endpoints as plain functions: request dict in, response dict out.

    lab = Lab(runs="runs")
    lab.call("/api/by_hand", {"temperature": 0.5})   # -> dict, or raises LabInputError

The HTTP server (server.py) only reads bodies and writes answers; everything the page shows
comes from here, so it is tested without a browser.

Training sessions (one per browser tab) belong to the client that made them: the server names
a client by its `lab_client` cookie, and calls without one share the anonymous client. Each
client keeps at most MAX_SESSIONS; a new one past that replaces that client's least recently
used. All clients together keep at most MAX_ALL_SESSIONS: past that, a session idle for
SESSION_IDLE_SECONDS makes room, and otherwise the new session is refused (LabBusyError), so
no client can push out the sessions of the others. A session that a request is using or
waiting for is never the one dropped.
"""

import collections
import contextlib
import threading
import time

from . import by_hand, inputs, trained, training

MAX_SESSIONS = 32  # per client: browser tabs with a model of their own
MAX_ALL_SESSIONS = 256  # all clients together (a session is a few kilobytes of numbers)
SESSION_IDLE_SECONDS = 30 * 60  # a session unused this long may make room for a new one
ANONYMOUS = ""  # the client of calls that name none


class SessionRefusedError(inputs.LabInputError):
    """The session id belongs to another client."""

    status = 403


class LabBusyError(inputs.LabInputError):
    """The lab holds as many sessions as it keeps and none has been idle long enough."""

    status = 503


class _Owner:
    """Who made a session, the lock its requests take turns on, and when it was last used."""

    def __init__(self, client, now):
        self.client = client
        self.lock = threading.Lock()
        self.last_used = now
        self.requests = 0  # holding or waiting for the lock: such a session is never dropped


class Lab:
    def __init__(self, runs="runs", clock=time.monotonic):
        self.shelf = trained.Shelf(runs)
        self._clock = clock
        self._sessions = collections.OrderedDict()  # id -> TrainingSession, least recent first
        self._owners = {}  # id -> _Owner
        # Held only while the two tables above change, never while a model computes: each
        # session has a lock of its own, so a 200-step request holds up only its own tab.
        self._table_lock = threading.Lock()
        self.routes = {
            "/api/by_hand/defaults": lambda request: by_hand.defaults(),
            "/api/by_hand": by_hand.compute,
            "/api/train/state": self._state,
            "/api/train/step": self._step,
            "/api/train/reset": self._reset,
            "/api/train/task": lambda request: training.describe_task(),
            "/api/graph": self._graph,
            "/api/model/status": lambda request: self.shelf.status(),
            "/api/model/predict": self.shelf.predict,
        }
        self._session_routes = {
            "/api/train/state",
            "/api/train/step",
            "/api/train/reset",
            "/api/graph",
        }

    def call(self, route, request, client=ANONYMOUS):
        """Answer one request of `client` (any string naming who asks; see the module's
        docstring); raises KeyError for an unknown route, LabInputError for bad input."""
        handler = self.routes[route]
        if not isinstance(request, dict):
            raise inputs.LabInputError(f"expected a JSON object; got {type(request).__name__}")
        if route in self._session_routes:
            return handler(request, client)
        return handler(request)

    @contextlib.contextmanager
    def _session(self, request, client):
        """The client's session named in the request (made if new), its lock held."""
        session_id = inputs.session_id(request.get("session"))
        with self._table_lock:
            owner = self._owners.get(session_id)
            if owner is not None and owner.client != client:
                raise SessionRefusedError(
                    "session: this id belongs to another client (another browser or program); "
                    "reload the page to start a session of your own"
                )
            if owner is None:
                self._make_room(client)
                owner = self._owners[session_id] = _Owner(client, self._clock())
                self._sessions[session_id] = training.TrainingSession()  # a few milliseconds
            self._sessions.move_to_end(session_id)  # most recently used last
            owner.last_used = self._clock()
            owner.requests += 1
            session = self._sessions[session_id]
        try:
            with owner.lock:
                yield session
        finally:
            with self._table_lock:
                owner.requests -= 1

    def _make_room(self, client):
        """Drop sessions so that one more of `client` fits (called with the table lock held)."""
        # A session a request is using (or waiting for) stays: dropped, its requests would
        # train a model nobody sees while a new one of the same id trained beside it.
        own = [name for name in self._sessions if self._owners[name].client == client]
        if len(own) >= MAX_SESSIONS:
            unused = [name for name in own if not self._owners[name].requests]
            if not unused:
                raise LabBusyError(
                    f"all {len(own)} training sessions of this browser are busy with a "
                    "request: wait for one to finish, or close a tab"
                )
            self._drop(unused[0])  # the client's least recently used
        if len(self._owners) < MAX_ALL_SESSIONS:
            return
        # the least recently used of all that no request is using
        stalest = next((name for name in self._sessions if not self._owners[name].requests), None)
        if (
            stalest is None
            or self._clock() - self._owners[stalest].last_used < SESSION_IDLE_SECONDS
        ):
            raise LabBusyError(
                f"the lab holds {MAX_ALL_SESSIONS} training sessions, the most it keeps, "
                f"and none has been idle for {SESSION_IDLE_SECONDS // 60} minutes: "
                "close other tabs or try again later"
            )
        self._drop(stalest)

    def _drop(self, session_id):
        del self._owners[session_id]
        del self._sessions[session_id]

    def _state(self, request, client):
        with self._session(request, client) as session:
            return session.state()

    def _step(self, request, client):
        with self._session(request, client) as session:
            return session.step(
                request.get("steps", 1),
                request.get("learning_rate", training.DEFAULT_LEARNING_RATE),
            )

    def _reset(self, request, client):
        with self._session(request, client) as session:
            session.reset()
            return session.state()

    def _graph(self, request, client):
        with self._session(request, client) as session:
            return session.graph(request.get("collapse", []), request.get("fold", False))
