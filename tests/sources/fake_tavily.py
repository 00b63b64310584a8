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

from tests.fake_http import RecordedRequest, ScriptedJSONServer, ScriptedResponse

__all__ = ["FakeTavily", "RecordedRequest", "ScriptedResponse"]


class FakeTavily(ScriptedJSONServer):
    unscripted = ScriptedResponse(
        500, {"detail": {"error": "fake_tavily: no response scripted for this request"}}
    )
