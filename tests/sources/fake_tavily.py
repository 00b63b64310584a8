"""A loopback fake of the Tavily HTTP API: a real HTTP server on 127.0.0.1, scripted per request.

    with FakeTavily() as tavily:
        tavily.reply(429, headers={"Retry-After": "0"})
        tavily.reply(200, {"results": [...]})
        tavily.stall()                       # accept the next request and never answer it
        ... WebSearch("tvly-test", tavily.url) ...
        tavily.requests                      # what it received, in order

Each request takes the next scripted response. A request beyond the script gets HTTP 500 saying
so, which surfaces as a failure rather than passing by accident. Every response closes its
connection, so closing the fake never waits on an idle keep-alive connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.fake_http import RecordedRequest, ScriptedJSONServer, ScriptedResponse

if TYPE_CHECKING:
    import pytest

    from tests.sources.loopback import LoopbackServer

__all__ = ["FakeTavily", "RecordedRequest", "ScriptedResponse", "web_through"]


class FakeTavily(ScriptedJSONServer):
    """Also routed by endpoint: `tavily.route("/search", lambda body: {...})` answers every request
    to that path from its JSON body (a scout searches several angles, in no fixed order), while
    paths without a route take the script in order."""

    unscripted = ScriptedResponse(
        500, {"detail": {"error": "fake_tavily: no response scripted for this request"}}
    )

    def __init__(self) -> None:
        super().__init__()
        self.routes: dict[str, Callable[[Any], Any]] = {}

    def route(self, path: str, answer: Callable[[Any], Any]) -> None:
        self.routes[path] = answer

    def answer(self, request: RecordedRequest) -> ScriptedResponse:
        routed = self.routes.get(request.path)
        if routed is not None:
            answer = routed(request.json)  # a body, or a whole response (ordered, delayed, ...)
            return answer if isinstance(answer, ScriptedResponse) else ScriptedResponse(200, answer)
        return super().answer(request)

    def bodies(self, path: str) -> list[Any]:
        """The JSON bodies received on `path`, in order."""
        return [request.json for request in self.requests if request.path == path]


def web_through(monkeypatch: pytest.MonkeyPatch, tavily: FakeTavily, pages: LoopbackServer) -> None:
    """The server searches the web through `tavily` with a test key and may fetch `pages`' pages."""
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test")
    monkeypatch.setenv("TAVILY_API_BASE_URL", tavily.url)
    monkeypatch.setenv("RESEARCH_MCP_FETCH_ALLOW", f"127.0.0.1:{pages.port}")
