"""The lab's JSON endpoints as plain functions: request dict in, response dict out.

    lab = Lab(runs="runs")
    lab.call("/api/by_hand", {"temperature": 0.5})   # -> dict, or raises LabInputError

The HTTP server (server.py) only reads bodies and writes answers; everything the page shows
comes from here, so it is tested without a browser.
"""

import collections
import threading

from . import by_hand, inputs, trained, training

MAX_SESSIONS = 32  # browser tabs with a model of their own; the least recently used goes first


class Lab:
    def __init__(self, runs="runs"):
        self.shelf = trained.Shelf(runs)
        self._sessions = collections.OrderedDict()
        # One request computes at a time. Numba's parallel kernels and the global random seed
        # (each reset re-seeds to rebuild the same starting model) are shared by all threads;
        # a request takes milliseconds, so several tabs still feel live.
        self._lock = threading.Lock()
        self.routes = {
            "/api/by_hand/defaults": lambda request: by_hand.defaults(),
            "/api/by_hand": by_hand.compute,
            "/api/train/state": lambda request: self._session(request).state(),
            "/api/train/step": self._step,
            "/api/train/reset": self._reset,
            "/api/train/task": lambda request: training.describe_task(),
            "/api/graph": self._graph,
            "/api/model/status": lambda request: self.shelf.status(),
            "/api/model/predict": self.shelf.predict,
        }

    def call(self, route, request):
        """Answer one request; raises KeyError for an unknown route, LabInputError for bad input."""
        handler = self.routes[route]
        if not isinstance(request, dict):
            raise inputs.LabInputError(f"expected a JSON object; got {type(request).__name__}")
        with self._lock:
            return handler(request)

    def _session(self, request):
        session_id = inputs.session_id(request.get("session"))
        session = self._sessions.pop(session_id, None) or training.TrainingSession()
        self._sessions[session_id] = session  # most recently used last
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def _step(self, request):
        return self._session(request).step(
            request.get("steps", 1), request.get("learning_rate", training.DEFAULT_LEARNING_RATE)
        )

    def _reset(self, request):
        session = self._session(request)
        session.reset()
        return session.state()

    def _graph(self, request):
        return self._session(request).graph(request.get("collapse", []))
