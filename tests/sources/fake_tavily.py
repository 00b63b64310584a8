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
from typing import Any

from tests.fake_http import RecordedRequest, ScriptedJSONServer, ScriptedResponse

__all__ = ["FakeTavily", "RecordedRequest", "ScriptedResponse"]


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
            return ScriptedResponse(200, routed(request.json))
        return super().answer(request)

    def bodies(self, path: str) -> list[Any]:
        """The JSON bodies received on `path`, in order."""
        return [request.json for request in self.requests if request.path == path]
