"""No dead ends: a finished run's handle and its summary view point to the follow-up questions, and
each source in the sources view says in a few words why it is relevant."""

from __future__ import annotations

from typing import Any

from mcp import Client

from research_mcp.core.role_inputs import SynthesisPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from tests.server.test_runs import plan, three_leaf_plan
from tests.server.waiting import until_finished

FOLLOW_UPS = ["How has topic 1 changed since then?", "Who first described topic 2?"]


def asking_further(request: ModelRequest[Any]) -> Any:
    """The team script, with the top synthesis suggesting where to go next."""
    answer = team_script(request)
    if isinstance(request.payload, SynthesisPayload) and request.payload.child_reports:
        answer.suggested_followups = FOLLOW_UPS
    return answer


async def finished(client: Client) -> dict[str, Any]:
    result = await until_finished(
        client, await client.call_tool("execute_plan", {"plan_id": await plan(client), "wait_seconds": 20})
    )
    assert result.structured_content["status"] == "done", result.content
    return dict(result.structured_content)


async def view(client: Client, run_id: str, name: str) -> str:
    page = await client.call_tool("report_results", {"id": run_id, "view": name, "max_tokens": 20000})
    assert not page.is_error, page.content
    return str(page.structured_content["text"])


async def test_the_run_handle_and_summary_lead_to_the_follow_ups() -> None:
    async with Client(create_server(model=ScriptedModel(asking_further))) as client:
        handle = await finished(client)
        summary = await view(client, handle["id"], "summary")
    # The backend's two, after the question that settles the disagreement its sources show.
    assert handle["metrics"]["followups"] == 3
    assert f"report_results(id='{handle['id']}', view='followups')" in handle["next"]
    assert (
        "follow-ups: Which is right on key finding first described: 1900 or 1901? | " + " | ".join(FOLLOW_UPS)
        in summary
    )


async def test_a_run_with_no_follow_ups_does_not_point_to_them() -> None:
    one_leaf = three_leaf_plan()
    one_leaf["root"]["children"] = one_leaf["root"]["children"][:1]  # one source: nothing disagrees
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        planned = await client.call_tool("plan_research", {"query": "one topic", "suggested_plan": one_leaf})
        result = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 20}
            ),
        )
        handle = dict(result.structured_content)
        assert handle["status"] == "done", result.content
        summary = await view(client, handle["id"], "summary")
    assert "followups" not in handle["metrics"] and "follow-ups:" not in summary
    assert not any("view='followups'" in call for call in handle["next"])


async def test_each_source_says_why_it_is_relevant() -> None:
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        handle = await finished(client)
        sources = (await view(client, handle["id"], "sources")).splitlines()
    assert len(sources) == 3
    for line in sources:
        assert "relevance=1.0 (source of " in line and "of the 9 cited facts)" in line
