"""A loopback HTTP server scripted per request, the base of the API fakes (Anthropic, Tavily).

    class FakeService(ScriptedJSONServer):
        unscripted = ScriptedResponse(500, {"error": "fake_service: no response scripted"})

    with FakeService() as service:
        service.reply(429, headers={"Retry-After": "0"})
        service.reply(200, {"results": [...]})
        service.stall()                      # accept the next request and never answer it
        service.reset()                      # close the connection without answering
        service.drip()                       # send headers, then a byte now and then, never finishing
        service.reply_raw(200, b"<html>")    # these bytes as the body, not JSON
        ... client(base_url=service.url) ...
        service.requests                     # what it received, in order (JSON bodies parsed)
        service.max_in_flight                # most requests it was answering at once

Each request takes the next scripted response, sent as JSON; a subclass can route requests
(`answer`) and fill in scripted bodies (`complete`). A request beyond the script gets the class's
`unscripted` response, so it surfaces as a failure rather than passing by accident. Every
response closes its connection, so closing the server never waits on an idle keep-alive
connection; closing releases stalled requests and joins every handler thread.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

__all__ = ["RecordedRequest", "ScriptedJSONServer", "ScriptedResponse"]

DRIP_INTERVAL = 0.05
#: How long a response ordered `after` another waits at most (a bound against a test's mistake).
AFTER_BOUND_S = 60.0


@dataclass(frozen=True)
class ScriptedResponse:
    status: int = 200
    body: Any = None  # sent as JSON; None is sent as {}
    headers: dict[str, str] = field(default_factory=dict)
    stall: bool = False
    reset: bool = False  # close the connection without sending anything
    drip: bool = False  # send the headers, then a byte every DRIP_INTERVAL s until the fake closes
    raw: bytes | None = None  # sent as the body instead of JSON
    content_type: str = "application/json"
    delay: float = 0.0  # seconds to wait before answering (outside the lock: requests overlap)
    # Orders answers without a clock: this one waits (outside the lock) until `after` is set, and
    # `sent` is set once this one is written whole, e.g. "answer the first search after the second".
    after: threading.Event | None = None
    sent: threading.Event | None = None


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
        self.in_flight = 0  # requests received and not yet answered
        self.max_in_flight = 0  # the most at once since the server started
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

    def reset(self) -> None:
        """Accept the next request and close its connection without a response."""
        with self._lock:
            self._script.append(ScriptedResponse(reset=True))

    def drip(self, status: int = 200) -> None:
        """Answer the next request's headers, then its body a byte at a time, never finishing."""
        with self._lock:
            self._script.append(ScriptedResponse(status, drip=True))

    def reply_raw(
        self,
        status: int,
        raw: bytes,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        """These bytes as the body (not JSON-encoded), e.g. an HTML error page or a cut-off answer."""
        with self._lock:
            self._script.append(
                ScriptedResponse(status, headers=dict(headers or {}), raw=raw, content_type=content_type)
            )

    @property
    def pending(self) -> int:
        """Scripted responses not yet taken."""
        with self._lock:
            return len(self._script)

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
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self.answer(request)

    def _answered(self) -> None:
        with self._lock:
            self.in_flight -= 1


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
        fake = self.server.fake
        response = fake._take(RecordedRequest(self.command, self.path, headers, body))
        self.close_connection = True
        try:
            self._send(response)
        finally:
            fake._answered()

    def _send(self, response: ScriptedResponse) -> None:
        if response.stall:
            self.server.fake._released.wait()
            return
        if response.delay:
            self.server.fake._released.wait(response.delay)
        if response.after is not None:
            response.after.wait(AFTER_BOUND_S)
        if response.reset:
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if response.raw is not None:
            payload = response.raw
        else:
            payload = json.dumps(response.body if response.body is not None else {}).encode()
        try:
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            if not response.drip:
                self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if response.drip:
                self.wfile.write(b'{"type": "message", ')
                self.wfile.flush()
                while not self.server.fake._released.wait(DRIP_INTERVAL):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                return
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test); nothing to answer
        finally:
            if response.sent is not None:
                response.sent.set()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads the fake's `requests` instead."""
