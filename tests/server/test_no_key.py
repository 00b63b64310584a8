"""With no API key and no sampling host, research is served by the extractive backend: no model at all."""

from __future__ import annotations

import re
from typing import Any

from mcp import Client

from research_mcp.server.app import create_server
from tests.server.waiting import until_finished

SOURCE = (
    "Marie Curie was a physicist and chemist who conducted pioneering research on radioactivity. "
    "She was the first woman to win a Nobel Prize. "
    "Curie won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911. "
    "She was born in Warsaw in 1867. "
    "Her husband Pierre Curie shared the 1903 prize."
)
PLAN = {
    "root": {
        "kind": "executor",
        "title": "Marie Curie",
        "children": [
            {
                "kind": "leaf",
                "title": "Nobel prizes",
                "questions": ["Which Nobel Prizes did Marie Curie win?", "Where was Marie Curie born?"],
                "sources": [SOURCE],
            }
        ],
    }
}


async def research(client: Client) -> tuple[dict[str, Any], str, str]:
    plan = await client.call_tool("plan_research", {"query": "Marie Curie's prizes", "suggested_plan": PLAN})
    run = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
        ),
    )
    report = await client.call_tool("report_results", {"id": run.structured_content["id"], "view": "report"})
    facts = await client.call_tool("report_results", {"id": run.structured_content["id"], "view": "facts"})
    return dict(run.structured_content), report.structured_content["text"], facts.structured_content["text"]


async def test_a_client_without_sampling_and_no_key_gets_a_cited_extractive_report() -> None:
    async with Client(create_server(), mode="legacy") as client:
        run, report, facts = await research(client)
    assert run["backend"] == "extractive"
    assert run["status"] == "done"
    assert "1903" in report and "Warsaw" in report
    verified = set(re.findall(r"^F(\d+) \[verified\]", facts, re.M))
    cited = set(re.findall(r"\[F(\d+)\]", report))
    assert cited and cited <= verified
    assert run["metrics"]["cost_usd"] == 0


async def test_the_extractive_backend_gives_the_same_report_for_the_same_input() -> None:
    async with Client(create_server()) as client:
        _, first, _ = await research(client)
    async with Client(create_server()) as client:
        plan = await client.call_tool(
            "plan_research", {"query": "Marie Curie's prizes", "suggested_plan": PLAN}
        )
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
        second = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "report"}
        )
    # Fact ids differ between runs (they are rows of one store); the text around them is the same.
    strip = lambda text: re.sub(r"\[F\d+\]", "[F]", text.split("metadata:")[0])  # noqa: E731
    assert strip(first) == strip(second.structured_content["text"])


async def test_with_nothing_to_search_the_plan_and_the_run_say_how_to_give_sources() -> None:
    async with Client(create_server()) as client:
        plan = await client.call_tool("plan_research", {"query": "What is the capital of Australia?"})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
    assert run.structured_content["status"] == "no_sources"  # not `done` with an empty report
    for result in (plan, run):
        assert any(
            "RESEARCH_MCP_CORPUS" in line and "TAVILY_API_KEY" in line
            for line in result.structured_content["summary"]
        )
