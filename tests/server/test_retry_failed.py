"""Retrying what failed: a run whose parts failed ends `partial`; executing it again reruns those parts only.

The real Anthropic SDK talks to the loopback fake Messages API, which answers every call about one
leaf with 529 overloaded while the "outage" lasts (the SDK's own retries included), and normally
after it. Requests are counted by role and leaf, so a test sees exactly what the retry asked again.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import anyio
from mcp import Client

from research_mcp.core.errors import ModelError
from research_mcp.core.retry import BACKGROUND
from research_mcp.core.role_inputs import ExtractorPayload, SynthesisPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from tests.fake_http import ScriptedResponse
from tests.llm.fake_anthropic import FakeMessagesAPI, error_response, tool_use_response

TEXTS = {
    "solar": "Solar panels convert sunlight into electricity using photovoltaic cells. "
    "Typical panel efficiency is between 18 and 22 percent in 2024.",
    "wind": "Wind turbines convert the kinetic energy of wind into electricity. "
    "Offshore wind farms have capacity factors above 40 percent.",
    "hydro": "Hydroelectric dams turn the energy of falling water into electricity. "
    "Pumped storage holds most of the world's grid storage capacity.",
}
PLAN = {
    "root": {
        "kind": "executor",
        "title": "energy",
        "children": [
            {"kind": "leaf", "title": name, "questions": [f"What is known about {name}?"], "sources": [text]}
            for name, text in TEXTS.items()
        ],
    }
}
WIND_FAILED = "Not researched: leaf 'wind' failed"
GUARD = 40.0  # far above what any run here takes: reaching it means a hang


class Team:
    """The fake model's answers by request content; every call about a leaf in `down` is overloaded."""

    def __init__(self) -> None:
        self.down: set[str] = set()

    def __call__(self, body: dict[str, Any]) -> ScriptedResponse:
        schema = body["tools"][0]["input_schema"].get("title")
        prompt = body["messages"][0]["content"]
        if schema == "PlannerOutput":
            return tool_use_response(PLAN)
        if about(body) in self.down:
            return error_response(529, "overloaded_error", "Overloaded", headers={"retry-after-ms": "1"})
        if schema == "ExtractorOutput":
            first = TEXTS[about(body)].split(". ")[0] + "."
            return tool_use_response(
                {
                    "facts": [{"statement": first, "quote": first, "question_index": 0}],
                    "confidence": {"level": "high", "reasoning": "stated"},
                }
            )
        cited = " ".join(dict.fromkeys(re.findall(r"\[F\d+\]", prompt)))
        return tool_use_response(
            {"report": f"Findings {cited}.", "confidence": {"level": "medium", "reasoning": "stated"}}
        )


def about(body: dict[str, Any]) -> str:
    """The leaf a request is about (an extraction of its source, or its synthesis), or the root's title."""
    prompt = body["messages"][0]["content"]
    if body["tools"][0]["input_schema"].get("title") == "ExtractorOutput":
        return next(name for name, text in TEXTS.items() if text in prompt)
    node = re.search(r"^Node: (.+)$", prompt, re.MULTILINE)
    return node.group(1) if node else "?"


def requests_by_role_and_leaf(api: FakeMessagesAPI, since: int = 0) -> Counter[tuple[str, str]]:
    """Messages requests received after the first `since`, as (output schema, leaf) → count."""
    return Counter(
        (body["tools"][0]["input_schema"].get("title"), about(body)) for body in api.bodies[since:]
    )


def subject(request: ModelRequest[Any]) -> str:
    """What a scripted model call is about: the node a synthesis is for, the leaf whose source is read."""
    payload = request.payload
    if isinstance(payload, SynthesisPayload):
        return payload.title
    assert isinstance(payload, ExtractorPayload)
    return next(name for name, text in TEXTS.items() if text in payload.source_text)


async def execute(client: Client, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool("execute_plan", {"wait_seconds": 30, **arguments})
    assert not result.is_error, result.content
    return dict(result.structured_content)


async def first_run_with_wind_down(client: Client, api: FakeMessagesAPI, team: Team) -> dict[str, Any]:
    team.down = {"wind"}
    api.route(team)
    planned = await client.call_tool("plan_research", {"query": "energy sources", "suggested_plan": PLAN})
    assert not planned.is_error, planned.content
    return await execute(client, plan_id=planned.structured_content["id"])


async def view(client: Client, run_id: str, name: str) -> str:
    result = await client.call_tool("report_results", {"id": run_id, "view": name, "max_tokens": 20_000})
    assert not result.is_error, result.content
    return str(result.structured_content["text"])


async def test_a_run_whose_leaf_failed_ends_partial_and_after_the_outage_a_retry_redoes_that_leaf_alone(
    anthropic_api: FakeMessagesAPI,
) -> None:
    team = Team()
    with anyio.fail_after(GUARD):
        async with Client(create_server()) as client:
            first = await first_run_with_wind_down(client, anthropic_api, team)
            first_gaps = await view(client, first["id"], "gaps")
            first_summary = await view(client, first["id"], "summary")
            before = len(anthropic_api.bodies)

            team.down = set()  # the service recovers
            polled = len(anthropic_api.bodies)
            waited = await execute(client, run_id=first["id"], wait_seconds=0)
            asked_by_waiting = len(anthropic_api.bodies) - polled
            retried = await execute(client, run_id=first["id"], retry=True)
            report = await view(client, retried["id"], "report")
            gaps = await view(client, retried["id"], "gaps")
            facts = await view(client, retried["id"], "facts")

    # Partial: a report from the parts that worked, the failed leaf named, and how to retry it.
    assert first["status"] == "partial", first
    assert f"execute_plan(run_id='{first['id']}', retry=true) retries only them" in first["summary"][1]
    assert f"execute_plan(run_id='{first['id']}', retry=true)" in first["next"]
    # A host that only waits on the run (no retry) gets it as it is, and nothing is paid for.
    assert waited["status"] == "partial" and asked_by_waiting == 0
    assert WIND_FAILED in first_gaps and "overloaded" in first_gaps
    assert "partial: some parts failed" in first_summary
    assert first["metrics"]["citations_verified"] == 2

    # The retry: the same run, now done, citing the wind leaf's fact too, with no gap left.
    assert retried["id"] == first["id"]
    assert retried["status"] == "done", retried
    assert retried["metrics"]["citations_verified"] == 3
    wind_fact = re.search(r"^F(\d+) \[verified.*Wind turbines convert", facts, re.MULTILINE)
    assert wind_fact is not None, facts
    assert f"[F{wind_fact.group(1)}]" in report
    assert "Not covered (failed)" not in report
    assert WIND_FAILED not in gaps and "Source not read" not in gaps
    # Asked again: the wind leaf's extraction and synthesis, and the synthesis above it; nothing else.
    assert requests_by_role_and_leaf(anthropic_api, before) == Counter(
        {("ExtractorOutput", "wind"): 1, ("SynthesisOutput", "wind"): 1, ("SynthesisOutput", "energy"): 1}
    )


async def test_a_retry_while_the_leaf_still_fails_ends_partial_again_naming_it_once(
    anthropic_api: FakeMessagesAPI,
) -> None:
    team = Team()
    with anyio.fail_after(GUARD):
        async with Client(create_server()) as client:
            first = await first_run_with_wind_down(client, anthropic_api, team)
            before = len(anthropic_api.bodies)
            again = await execute(client, run_id=first["id"], retry=True)
            gaps = await view(client, again["id"], "gaps")
            report = await view(client, again["id"], "report")

    assert first["status"] == again["status"] == "partial", again
    assert gaps.count(WIND_FAILED) == 1, gaps
    assert gaps.count("Source not read") == 1, gaps
    assert report.count(WIND_FAILED) == 1, report
    asked = requests_by_role_and_leaf(anthropic_api, before)
    assert (
        asked[("ExtractorOutput", "wind")] == 1 + BACKGROUND.max_retries
    )  # tried again, with a run's retries
    assert not {leaf for _, leaf in asked} & {"solar", "hydro"}, asked  # what worked is not asked again


async def test_a_run_that_finished_whole_is_returned_as_is_when_executed_again() -> None:
    model = ScriptedModel(team_script)
    with anyio.fail_after(GUARD):
        async with Client(create_server(model=model)) as client:
            planned = await client.call_tool(
                "plan_research", {"query": "energy sources", "suggested_plan": PLAN}
            )
            done = await execute(client, plan_id=planned.structured_content["id"])
            calls = len(model.calls)
            again = await execute(client, run_id=done["id"])

    assert done["status"] == "done", done
    assert again == done
    assert len(model.calls) == calls


async def test_of_several_plans_the_one_that_failed_is_retried_alone_and_the_final_answer_covers_both() -> (
    None
):
    down = {"wind"}

    def script(request: ModelRequest[Any]) -> Any:
        payload = request.payload
        about_wind = (isinstance(payload, ExtractorPayload) and TEXTS["wind"] in payload.source_text) or (
            isinstance(payload, SynthesisPayload) and payload.title == "wind"
        )
        if about_wind and "wind" in down:
            raise ModelError("The wind model call failed for this test; try again later.")
        return team_script(request)

    model = ScriptedModel(script)
    with anyio.fail_after(GUARD):
        async with Client(create_server(model=model)) as client:
            ids = []
            for leaf in PLAN["root"]["children"][:2]:  # solar, wind: one plan each
                one = {"root": {"kind": "executor", "title": leaf["title"], "children": [leaf]}}
                planned = await client.call_tool(
                    "plan_research", {"query": f"{leaf['title']} power", "suggested_plan": one}
                )
                ids.append(planned.structured_content["id"])
            first = await execute(client, plan_ids=ids)
            first_gaps = await view(client, first["id"], "gaps")
            down.clear()  # the service recovers
            before = len(model.calls)
            retried = await execute(client, run_id=first["id"], retry=True)
            gaps = await view(client, retried["id"], "gaps")

    assert first["status"] == "partial", first
    assert f"plan {ids[1]}" in first_gaps
    assert retried["status"] == "done", retried
    assert f"plan {ids[1]}" not in gaps
    asked = sorted((call.role, subject(call)) for call in model.calls[before:])
    # The wind plan again (its extraction, its leaf's and root's syntheses), then the final answer;
    # nothing of the solar plan.
    assert asked == [
        ("extractor", "wind"),
        ("synthesizer", "Answer to all subqueries"),
        ("synthesizer", "wind"),
        ("synthesizer", "wind"),
    ]
