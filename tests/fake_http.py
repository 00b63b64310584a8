"""A loopback HTTP server scripted per request, the base of the API fakes (Anthropic, Tavily).

    class FakeService(ScriptedJSONServer):
        unscripted = ScriptedResponse(500, {"error": "fake_service: no response scripted"})

    with FakeService() as service:
        service.reply(429, headers={"Retry-After": "0"})
        service.reply(200, {"results": [...]})
        service.stall()                      # accept the next request and never answer it
        ... client(base_url=service.url) ...
        service.requests                     # what it received, in order (JSON bodies parsed)

Each request takes the next scripted response, sent as JSON; a subclass can route requests
(`answer`) and fill in scripted bodies (`complete`). A request beyond the script gets the class's
`unscripted` response, so it surfaces as a failure rather than passing by accident. Every
response closes its connection, so closing the server never waits on an idle keep-alive
connection; closing releases stalled requests and joins every handler thread.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

__all__ = ["RecordedRequest", "ScriptedJSONServer", "ScriptedResponse"]


@dataclass(frozen=True)
class ScriptedResponse:
    status: int = 200
    body: Any = None  # sent as JSON; None is sent as {}
    headers: dict[str, str] = field(default_factory=dict)
    stall: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    json: Any


class ScriptedJSONServer:
    """A real HTTP server on 127.0.0.1:<free port> while entered, answering from a script."""

    unscripted: ClassVar[ScriptedResponse] = ScriptedResponse(
        500, {"error": "fake_http: no response scripted for this request"}
    )

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._script: deque[ScriptedResponse] = deque()
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    # --- scripting ---------------------------------------------------------------------------

    def reply(self, status: int = 200, body: Any = None, *, headers: dict[str, str] | None = None) -> None:
        with self._lock:
            self._script.append(ScriptedResponse(status, body, dict(headers or {})))

    def stall(self) -> None:
        """Accept the next request and never answer it (until the fake closes)."""
        with self._lock:
            self._script.append(ScriptedResponse(stall=True))

    # --- hooks -------------------------------------------------------------------------------

    def answer(self, request: RecordedRequest) -> ScriptedResponse:
        """The response to `request` (called under the lock): the next scripted one, completed."""
        response = self._script.popleft() if self._script else self.unscripted
        return self.complete(response, request.json)

    def complete(self, response: ScriptedResponse, request_body: Any) -> ScriptedResponse:
        """`response` as sent for a request with this JSON body; as scripted unless overridden."""
        return response

    # --- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._released.set()  # let stalled handlers finish, so closing can join them
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _take(self, request: RecordedRequest) -> ScriptedResponse:
        with self._lock:
            self.requests.append(request)
            return self.answer(request)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the handler threads
    fake: ScriptedJSONServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self._answer()

    def do_GET(self) -> None:
        self._answer()

    def _answer(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {name.lower(): value for name, value in self.headers.items()}
        response = self.server.fake._take(RecordedRequest(self.command, self.path, headers, body))
        self.close_connection = True
        if response.stall:
            self.server.fake._released.wait()
            return
        payload = json.dumps(response.body if response.body is not None else {}).encode()
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads the fake's `requests` instead."""
