"""A loopback fake of the Anthropic Messages API: a real HTTP server on 127.0.0.1, scripted per request.

    with FakeMessagesAPI() as api:
        api.reply_error(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
        api.reply_tool_use({"facts": [], ...}, usage=message_usage(input_tokens=900))
        api.reply_text("I can't help with that.", stop_reason="refusal")
        api.stall()                           # accept the next request and never answer it
        ... AnthropicModel(api_key="test-key", base_url=api.url, ...) ...
        api.requests                          # what it received, in order (JSON bodies parsed)

Each POST /v1/messages takes the next scripted response; message bodies echo the requested model
and carry a fresh message and tool-use id. A request beyond the script gets HTTP 500 with
`x-should-retry: false`, so it surfaces as a failure rather than passing by accident. Every
response closes its connection, so closing the fake never waits on an idle keep-alive connection.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["FakeMessagesAPI", "RecordedRequest", "ScriptedResponse", "message_usage"]

MESSAGES_PATH = "/v1/messages"


@dataclass(frozen=True)
class ScriptedResponse:
    status: int = 200
    body: Any = None  # sent as JSON; a dict with "type": "message" gets the model and ids filled in
    headers: dict[str, str] = field(default_factory=dict)
    stall: bool = False


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    json: Any


def message_usage(
    input_tokens: int = 100,
    output_tokens: int = 50,
    cache_read_input_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
) -> dict[str, int]:
    """A Messages API `usage` object."""
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache_read_input_tokens,
        "cache_creation_input_tokens": cache_creation_input_tokens,
    }


def _error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_fake"}


UNSCRIPTED = ScriptedResponse(
    500,
    _error_body("api_error", "fake_anthropic: no response scripted for this request"),
    {"x-should-retry": "false"},
)


class FakeMessagesAPI:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._script: deque[ScriptedResponse] = deque()
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._ids = itertools.count(1)
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the Messages requests received, in order."""
        return [request.json for request in self.requests if request.path == MESSAGES_PATH]

    # --- scripting ---------------------------------------------------------------------------

    def reply(self, status: int = 200, body: Any = None, *, headers: dict[str, str] | None = None) -> None:
        with self._lock:
            self._script.append(ScriptedResponse(status, body, dict(headers or {})))

    def reply_message(
        self,
        content: list[dict[str, Any]],
        *,
        stop_reason: str,
        usage: dict[str, int] | None = None,
        stop_details: dict[str, Any] | None = None,
    ) -> None:
        """A 200 Message with these content blocks (tool_use blocks get an id when they lack one)."""
        body = {
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "stop_details": stop_details,
            "usage": usage or message_usage(),
        }
        self.reply(200, body)

    def reply_tool_use(
        self,
        tool_input: Any,
        *,
        name: str = "submit",
        stop_reason: str = "tool_use",
        usage: dict[str, int] | None = None,
    ) -> None:
        """The model calls tool `name` with `tool_input`."""
        block = {"type": "tool_use", "name": name, "input": tool_input}
        self.reply_message([block], stop_reason=stop_reason, usage=usage)

    def reply_text(
        self,
        text: str,
        *,
        stop_reason: str = "end_turn",
        usage: dict[str, int] | None = None,
        stop_details: dict[str, Any] | None = None,
    ) -> None:
        """The model answers in prose (no tool call)."""
        content = [{"type": "text", "text": text}] if text else []
        self.reply_message(content, stop_reason=stop_reason, usage=usage, stop_details=stop_details)

    def reply_error(
        self, status: int, error_type: str, message: str, *, headers: dict[str, str] | None = None
    ) -> None:
        """An API error in the Messages API's shape, e.g. (529, "overloaded_error", "Overloaded")."""
        self.reply(
            status, _error_body(error_type, message), headers={"request-id": "req_fake", **(headers or {})}
        )

    def stall(self) -> None:
        """Accept the next request and never answer it (until the fake closes)."""
        with self._lock:
            self._script.append(ScriptedResponse(stall=True))

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
            if request.path != MESSAGES_PATH:
                return ScriptedResponse(
                    404, _error_body("not_found_error", f"fake_anthropic: no {request.path}")
                )
            response = self._script.popleft() if self._script else UNSCRIPTED
            return self._completed(response, request.json)

    def _completed(self, response: ScriptedResponse, request_body: Any) -> ScriptedResponse:
        """A Message body with the requested model and fresh ids filled in."""
        body = response.body
        if not (isinstance(body, dict) and body.get("type") == "message"):
            return response
        number = next(self._ids)
        model = request_body.get("model", "claude-fake") if isinstance(request_body, dict) else "claude-fake"
        content = [
            {"id": f"toolu_fake_{number}_{index}", **block} if block.get("type") == "tool_use" else block
            for index, block in enumerate(body["content"])
        ]
        body = {"id": f"msg_fake_{number}", "model": model, **body, "content": content}
        return ScriptedResponse(response.status, body, response.headers)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the handler threads
    fake: FakeMessagesAPI


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
        """Quiet: the test reads `FakeMessagesAPI.requests` instead."""
