"""A loopback fake of the Anthropic Messages API: a real HTTP server on 127.0.0.1, scripted per request.

    with FakeMessagesAPI() as api:
        api.reply_error(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
        api.reply_tool_use({"facts": [], ...}, usage=message_usage(input_tokens=900))
        api.reply_text("I can't help with that.", stop_reason="refusal")
        api.stall()                           # accept the next request and never answer it
        api.route(lambda body: ...)           # answer by content: a ScriptedResponse, or None for the script
        ... AnthropicModel(api_key="test-key", base_url=api.url, ...) ...
        api.requests                          # what it received, in order (JSON bodies parsed)

Each POST /v1/messages takes the next scripted response; message bodies echo the requested model
and carry a fresh message and tool-use id. A request beyond the script gets HTTP 500 with
`x-should-retry: false`, so it surfaces as a failure rather than passing by accident. Every
response closes its connection, so closing the fake never waits on an idle keep-alive connection.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from tests.fake_http import RecordedRequest, ScriptedJSONServer, ScriptedResponse

__all__ = [
    "FakeMessagesAPI",
    "RecordedRequest",
    "ScriptedResponse",
    "error_response",
    "message_response",
    "message_usage",
    "tool_use_response",
]

MESSAGES_PATH = "/v1/messages"


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


def message_response(
    content: list[dict[str, Any]],
    *,
    stop_reason: str,
    usage: dict[str, int] | None = None,
    stop_details: dict[str, Any] | None = None,
) -> ScriptedResponse:
    """A 200 Message with these content blocks (ids and the model are filled in when it is sent)."""
    body = {
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "stop_details": stop_details,
        "usage": usage or message_usage(),
    }
    return ScriptedResponse(200, body)


def tool_use_response(
    tool_input: Any,
    *,
    name: str = "submit",
    stop_reason: str = "tool_use",
    usage: dict[str, int] | None = None,
) -> ScriptedResponse:
    """The model calls tool `name` with `tool_input`."""
    block = {"type": "tool_use", "name": name, "input": tool_input}
    return message_response([block], stop_reason=stop_reason, usage=usage)


def error_response(
    status: int, error_type: str, message: str, *, headers: dict[str, str] | None = None
) -> ScriptedResponse:
    """An API error in the Messages API's shape, e.g. (529, "overloaded_error", "Overloaded")."""
    return ScriptedResponse(
        status, _error_body(error_type, message), {"request-id": "req_fake", **(headers or {})}
    )


class FakeMessagesAPI(ScriptedJSONServer):
    unscripted = ScriptedResponse(
        500,
        _error_body("api_error", "fake_anthropic: no response scripted for this request"),
        {"x-should-retry": "false"},
    )

    def __init__(self) -> None:
        super().__init__()
        self._ids = itertools.count(1)
        self._router: Callable[[Any], ScriptedResponse | None] | None = None

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the Messages requests received, in order."""
        return [request.json for request in self.requests if request.path == MESSAGES_PATH]

    # --- scripting ---------------------------------------------------------------------------

    def reply_message(
        self,
        content: list[dict[str, Any]],
        *,
        stop_reason: str,
        usage: dict[str, int] | None = None,
        stop_details: dict[str, Any] | None = None,
    ) -> None:
        """A 200 Message with these content blocks (tool_use blocks get an id when they lack one)."""
        response = message_response(content, stop_reason=stop_reason, usage=usage, stop_details=stop_details)
        self.reply(response.status, response.body)

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
        response = error_response(status, error_type, message, headers=headers)
        self.reply(response.status, response.body, headers=response.headers)

    def route(self, router: Callable[[Any], ScriptedResponse | None]) -> None:
        """Answer each Messages request with `router(json_body)` (called under the fake's lock, so
        it may keep state); where it returns None, the script answers."""
        self._router = router

    # --- hooks -------------------------------------------------------------------------------

    def answer(self, request: RecordedRequest) -> ScriptedResponse:
        """Messages requests take the script; any other path is a 404."""
        if request.path != MESSAGES_PATH:
            return ScriptedResponse(404, _error_body("not_found_error", f"fake_anthropic: no {request.path}"))
        routed = self._router(request.json) if self._router is not None else None
        if routed is not None:
            return self.complete(routed, request.json)
        return super().answer(request)

    def complete(self, response: ScriptedResponse, request_body: Any) -> ScriptedResponse:
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
