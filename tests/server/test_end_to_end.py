"""Plan → execute → report through a real MCP client, in both handshakes, with a scripted model."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from tests.server.waiting import until_finished

SOURCE_TEXT = (
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris. "
    "It stands 330 metres tall after the addition of new antennas. "
    "Gustave Eiffel's company designed and built the tower. "
    "It was the tallest man-made structure in the world until 1930."
)


def compact_size(result: Any) -> int:
    """Bytes of the whole tool result as it travels (meta, content, structured content, flags), non-ASCII escaped."""
    return len(
        json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
    )


async def test_a_plan_with_long_titles_still_returns_at_most_1000_bytes_in_all() -> None:
    long_plan = {
        "root": {
            "kind": "executor",
            "title": "x" * 190,
            "children": [
                {"kind": "leaf", "title": "y…" * 90, "questions": ["é?" * 200], "sources": [SOURCE_TEXT]}
            ],
        }
    }
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        plan = await client.call_tool("plan_research", {"query": "q " * 200, "suggested_plan": long_plan})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 10}
            ),
        )
    assert compact_size(plan) <= 1000
    assert compact_size(run) <= 1000


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_host_plans_executes_and_reads_a_report_with_small_results(mode: str) -> None:
    model = ScriptedModel(team_script)
    server = create_server(model=model)
    async with Client(server, mode=mode) as client:
        plan = await client.call_tool(
            "plan_research",
            {
                "query": "When was the Eiffel Tower built?",
                "suggested_plan": {
                    "root": {
                        "kind": "executor",
                        "title": "Eiffel Tower",
                        "children": [
                            {
                                "kind": "leaf",
                                "title": "construction",
                                "questions": ["When was it built?"],
                                "sources": [SOURCE_TEXT],
                            }
                        ],
                    }
                },
            },
        )
        assert not plan.is_error, plan.content
        assert plan.structured_content["status"] == "feasible"
        assert compact_size(plan) <= 1000

        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 10}
            ),
        )
        assert not run.is_error, run.content
        assert run.structured_content["status"] == "done"
        assert compact_size(run) <= 1000
        assert run.structured_content["metrics"]["citations_verified"] >= 1

        page = await client.call_tool("report_results", {"id": run.structured_content["id"]})
        assert not page.is_error, page.content
        assert "[F" in page.structured_content["text"]
        assert page.structured_content["page_tokens"] <= 2000

        facts = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "facts"}
        )
        assert "330 metres" in facts.structured_content["text"]
        assert "verified" in facts.structured_content["text"]
