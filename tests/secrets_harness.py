"""Upstreams that echo every configured secret, and a count of where the secrets end up.

A whole session through a real MCP client against the Anthropic backend (the real SDK talking to
the loopback fake of the Messages API) with web search (the loopback fake of Tavily):

- Tavily answers every search with a 401 whose body echoes every key;
- Claude answers the first extraction of each pair with a 400 echoing every key, and writes the
  keys into its own answers (confidence reasoning, report, scout note), as a model tricked by a
  page might;
- the host plans, executes, pulls every view of the result, extracts one source and scouts.

Then the store's files, every tool result, the three exports, the logs and every request body
sent to the Messages API (the prompts) are searched for each secret, whole and as a run of its
first 16 characters. Used by tests/test_secrets.py (which wants 0 everywhere) and by
bench/secrets_echo.py (which prints the counts for SECURITY.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client

from research_mcp.cli.exports import export_run
from research_mcp.core.config import Settings
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.llm.fake_anthropic import FakeMessagesAPI, ScriptedResponse, error_response, tool_use_response
from tests.sources.fake_tavily import FakeTavily

__all__ = ["SECRETS", "EchoReport", "echo_secrets"]

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-api03-Xq7RkP2mWv9LtB4nYc8JhD3sFg6AzE1uKo5",
    "TAVILY_API_KEY": "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",
    "QDRANT_API_KEY": "qd-Ue4Ri9Ow2Pa7Sd1Fg6Hj3Kl8Zx5Cv0Bn",
    "RESEARCH_MCP_HTTP_TOKEN": "tok-Mq2Wn7Eb4Rv9Tc1Yx6Ul3Io8Pz5As0Dk",
}
ECHO = " / ".join(SECRETS.values()) + f" (cut short: {SECRETS['TAVILY_API_KEY'][:24]}…)"
SOURCES = [
    "The bridge opened in 1932. It carries eight lanes of traffic and a railway line across the harbour.",
    "The bridge was designed by John Bradfield. Its arch spans 503 metres across Sydney Harbour.",
]
VIEWS = ("summary", "report", "sources", "facts", "confidence", "gaps", "followups", "tree", "handoff")


@dataclass
class EchoReport:
    found: dict[str, int]  # sink -> occurrences of any secret (whole, or its first 16 characters)
    redactions: int  # "[redacted]" marks in the tool results: the echoes arrived
    run_status: str
    tavily_requests: int
    anthropic_requests: int
    prompts: str


def occurrences(text: str | bytes) -> int:
    """Occurrences of each secret's first 16 characters (a whole secret counts once)."""
    if isinstance(text, bytes):
        return sum(text.count(secret[:16].encode()) for secret in SECRETS.values())
    return sum(text.count(secret[:16]) for secret in SECRETS.values())


def _route(state: dict[str, int]) -> Callable[[Any], ScriptedResponse | None]:
    leaf = {"kind": "leaf", "title": "bridge", "questions": ["When did the bridge open?"], "sources": SOURCES}
    searched = {
        "kind": "leaf",
        "title": "wind",
        "questions": ["What about wind?"],
        "search_queries": ["wind"],
    }
    fact = {"statement": "It opened in 1932.", "quote": "The bridge opened in 1932.", "question_index": 0}

    def route(body: dict[str, Any]) -> ScriptedResponse | None:
        title = body["tools"][0]["input_schema"].get("title")
        if title == "PlannerOutput":
            return tool_use_response(
                {"root": {"kind": "executor", "title": "bridge", "children": [leaf, searched]}}
            )
        if title == "ExtractorOutput":
            state["extractions"] += 1
            if state["extractions"] % 2 == 1:
                return error_response(400, "invalid_request_error", f"bad request for {ECHO}")
            return tool_use_response(
                {
                    "facts": [fact],
                    "answers": [],
                    "confidence": {"level": "high", "reasoning": f"stated; {ECHO}"},
                }
            )
        if title == "ScoutOutput":
            return tool_use_response({"ranked": [], "coverage_note": ECHO})
        return tool_use_response(
            {
                "report": f"The bridge opened in 1932 [F1]. {ECHO}",
                "confidence": {"level": "high", "reasoning": ECHO},
            }
        )

    return route


async def echo_secrets(home: Path, log_text: Callable[[], str]) -> EchoReport:
    """Run the session in data folder `home`; `log_text()` gives what was logged meanwhile."""
    with FakeMessagesAPI() as api, FakeTavily() as tavily:
        settings = Settings.model_validate(
            {
                "RESEARCH_MCP_HOME": str(home),
                "ANTHROPIC_BASE_URL": api.url,
                "TAVILY_API_BASE_URL": tavily.url,
                **SECRETS,
            }
        )
        api.route(_route({"extractions": 0}))
        for _ in range(3):
            tavily.reply(401, {"detail": {"error": f"Unauthorized: invalid API key {ECHO}"}})
        async with Client(create_server(settings)) as client:
            plan = await client.call_tool("plan_research", {"query": "When did the bridge open?"})
            run = await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            )
            run_id = run.structured_content["id"]
            results = [plan, run]
            for view in VIEWS:
                results.append(
                    await client.call_tool(
                        "report_results", {"id": run_id, "view": view, "max_tokens": 20_000}
                    )
                )
            results.append(
                await client.call_tool("extract_source", {"source": SOURCES[0], "questions": ["When?"]})
            )
            results.append(await client.call_tool("scout_sources", {"topic": "bridges"}))
        prompts = json.dumps(api.bodies)
        tavily_requests, anthropic_requests = len(tavily.requests), len(api.requests)
    store = Store(settings.database_path)
    try:
        exports = [export_run(store, run_id, fmt) for fmt in ("md", "html", "json")]
    finally:
        store.close()
    stored = b"".join(path.read_bytes() for path in home.rglob("*") if path.is_file())
    shown = [str(result) for result in results]
    return EchoReport(
        found={
            "store": occurrences(stored),
            "tool results": sum(occurrences(text) for text in shown),
            "exports": sum(occurrences(text) for text in exports),
            "logs": occurrences(log_text()),
            "prompts": occurrences(prompts),
        },
        redactions=sum(text.count("[redacted]") for text in shown),
        run_status=str(run.structured_content["status"]),
        tavily_requests=tavily_requests,
        anthropic_requests=anthropic_requests,
        prompts=prompts,
    )
