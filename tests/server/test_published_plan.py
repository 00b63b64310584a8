"""What a plan can say is published: the flat suggested_plan that plan_research's inputSchema
describes carries each node's budget, every field of it is described, and a node that stops at its
max_sources says so in what report_results returns. Through a real MCP client session, no key (the
extractive backend), sources given inline."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.llm.scripted import ScriptedModel
from research_mcp.server.app import create_server
from research_mcp.storage.events import SecondHop
from research_mcp.storage.store import Store
from tests.runs.test_second_hop import QUESTION, extractor_script, notes
from tests.server.indexing import wait_until_indexed
from tests.server.waiting import until_finished

__all__ = ["notes"]  # the corpus fixture of tests/runs/test_second_hop.py

KELP = [
    "Giant kelp grows up to 61 centimetres a day in cold, nutrient-rich water.",
    "Kelp forests shelter fish, sea urchins and sea otters along rocky coasts.",
    "Bull kelp is an annual alga whose stipe can reach 36 metres in a single season.",
]
PLAN = [
    {"parent": None, "kind": "executor", "title": "kelp"},
    {
        "parent": 0,
        "kind": "leaf",
        "title": "growth",
        "questions": ["How fast does kelp grow?"],
        "sources": KELP,
        "budget": {"max_sources": 1, "max_seconds": 600},
    },
]


def undescribed(schema: Any, path: str = "") -> list[str]:
    """Every property, at any depth, that carries no description."""
    if isinstance(schema, list):
        return [place for item in schema for place in undescribed(item, path)]
    if not isinstance(schema, dict):
        return []
    found = []
    for name, sub in schema.get("properties", {}).items():
        if not sub.get("description"):
            found.append(f"{path}.{name}")
        found += undescribed(sub, f"{path}.{name}")
    for key in ("items", "anyOf"):
        if key in schema:
            found += undescribed(schema[key], path + ("[]" if key == "items" else ""))
    return found


async def test_the_plan_schema_describes_every_field_and_nodes_carry_a_budget() -> None:
    async with Client(create_server(), mode="legacy") as client:
        tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
    schema = tools["plan_research"]
    assert undescribed(schema) == []
    node = schema["properties"]["suggested_plan"]["items"]["properties"]
    assert set(node) == {"parent", "kind", "title", "questions", "sources", "budget"}
    assert set(node["budget"]["properties"]) == {"max_sources", "max_seconds"}
    # A budget is said with the plan (and binds its run); execute_plan no longer takes a second one.
    assert "budget" in schema["properties"] and "budget" not in tools["execute_plan"]["properties"]


async def test_a_flat_plan_with_a_node_budget_is_honoured_and_the_node_says_it_stopped_at_max_sources() -> (
    None
):
    async with Client(create_server(), mode="legacy") as client:
        planned = await client.call_tool(
            "plan_research", {"query": "How fast does kelp grow?", "suggested_plan": PLAN}
        )
        assert not planned.is_error, planned.content
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 50}
            ),
        )
        assert not run.is_error, run.content
        gaps = await client.call_tool("report_results", {"id": run.structured_content["id"], "view": "gaps"})
        summary = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "report"}
        )
    assert run.structured_content["status"] == "done", run.structured_content
    # The stored plan keeps the node's budget as given, and the leaf read one of its three sources.
    store = Store(Settings().database_path)
    (leaf,) = store.get_plan(planned.structured_content["id"]).tree.root.children
    assert leaf.budget is not None and (leaf.budget.max_sources, leaf.budget.max_seconds) == (1, 600)
    assert run.structured_content["metrics"]["sources"] == 1
    said = "Stopped at its budget of 1 source (max_sources): 2 more found were not read."
    assert said in gaps.structured_content["text"]
    assert "61 centimetres" in summary.structured_content["text"]


async def test_a_flat_node_budget_refuses_what_it_does_not_publish_and_an_empty_plan_is_none() -> None:
    over = [PLAN[0], {**PLAN[1], "budget": {"max_tokens": 10}}]
    async with Client(create_server(), mode="legacy") as client:
        refused = await client.call_tool("plan_research", {"query": "kelp growth", "suggested_plan": over})
        negative = await client.call_tool(
            "plan_research",
            {"query": "kelp growth", "suggested_plan": [PLAN[0], {**PLAN[1], "budget": {"max_sources": 0}}]},
        )
        none = await client.call_tool(
            "plan_research", {"query": "How fast does kelp grow?", "suggested_plan": []}
        )
    assert (
        refused.is_error and "suggested_plan[1].budget.max_tokens: unknown field" in refused.content[0].text
    )  # type: ignore[union-attr]
    assert negative.is_error and "suggested_plan[1].budget.max_sources" in negative.content[0].text  # type: ignore[union-attr]
    # [] is what a strict client sends for "no plan": the server plans the query itself.
    assert not none.is_error and none.structured_content["status"] == "feasible"


async def test_a_second_hop_its_max_sources_leaves_no_room_for_says_so(notes: Path) -> None:
    """A leaf whose budget its first reads use up follows no lead, and says how many it left."""
    plan = [
        {"kind": "executor", "title": "director"},
        {
            "parent": 0,
            "kind": "leaf",
            "title": "based",
            "questions": [QUESTION],
            "budget": {"max_sources": 3},
        },
    ]
    async with Client(create_server(model=ScriptedModel(extractor_script))) as client:
        assert (await wait_until_indexed(client))["phase"] == "ready"
        planned = await client.call_tool("plan_research", {"query": QUESTION, "suggested_plan": plan})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )
        gaps = await client.call_tool("report_results", {"id": run.structured_content["id"], "view": "gaps"})
    assert run.structured_content["metrics"]["sources"] == 3
    [hop] = Store(Settings().database_path).events_for_run(run.structured_content["id"], SecondHop)
    assert hop.chosen == [] and hop.beyond_budget >= 1
    assert re.search(
        r"Stopped at its budget of 3 sources \(max_sources\): .*\d+ leads? not followed\.",
        gaps.structured_content["text"],
    )
