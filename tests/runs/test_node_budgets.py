"""Budgets that bind: a plan node's own tokens, cost and time stop its reads and the node ends
partial saying why; the budget given to plan_research is kept with the plan and binds its run; a
leaf's task specs are asked in the order of their priority. Through the MCP tools, scripted model."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.role_inputs import ExtractorPayload
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.runs.test_task_specs import HYDRO, SOLAR, WIND
from tests.server.waiting import until_finished


@pytest.fixture(autouse=True)
def one_call_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Model calls in turn, so that which call a spent budget refuses does not depend on scheduling."""
    monkeypatch.setenv("RESEARCH_MCP_CONCURRENCY", "1")


def energy_leaf(**extra: Any) -> dict[str, Any]:
    return {
        "kind": "leaf",
        "title": "energy",
        "questions": ["How is electricity generated?"],
        "sources": [SOLAR, WIND, HYDRO],
        **extra,
    }


async def run(client: Client, root: dict[str, Any], **plan: Any) -> dict[str, Any]:
    planned = await client.call_tool(
        "plan_research", {"query": "electricity generation", "suggested_plan": {"root": root}, **plan}
    )
    assert not planned.is_error, planned.content
    result = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
        ),
    )
    assert not result.is_error, result.content
    return dict(result.structured_content)


async def gaps(client: Client, run_id: str) -> str:
    page = await client.call_tool("report_results", {"id": run_id, "view": "gaps", "max_tokens": 20000})
    return page.structured_content["text"]


async def test_a_leaf_out_of_its_token_budget_reads_no_more_and_ends_partial_saying_why() -> None:
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        root = {"kind": "executor", "title": "grid", "children": [energy_leaf(budget={"max_tokens": 1})]}
        handle = await run(client, root)
        named = await gaps(client, handle["id"])
    assert len(model.calls_for("extractor")) == 1  # the first read spent the budget; the other two not asked
    assert handle["status"] == "partial"
    assert named.count("budget exhausted: the budget of 'energy':") == 2 and "of its 1 tokens spent" in named
    assert (
        len(model.calls_for("synthesizer")) == 2
    )  # the leaf still closes over what it read, then its parent


async def test_an_executor_budget_binds_the_leaves_below_it() -> None:
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        root = {"kind": "executor", "title": "grid", "budget": {"max_tokens": 1}, "children": [energy_leaf()]}
        handle = await run(client, root)
        named = await gaps(client, handle["id"])
    assert len(model.calls_for("extractor")) == 1
    assert "the budget of 'grid'" in named and handle["status"] == "partial"


async def test_a_leaf_out_of_time_asks_nothing_more_and_says_its_time_ran_out() -> None:
    model = ScriptedModel(team_script, latency=0.05)
    async with Client(create_server(model=model)) as client:
        leaf = energy_leaf(budget={"max_seconds": 0.01})
        handle = await run(client, {"kind": "executor", "title": "grid", "children": [leaf]})
        named = await gaps(client, handle["id"])
    assert len(model.calls_for("extractor")) <= 1
    assert "0.01 s time limit reached" in named and handle["status"] == "partial"


async def test_a_node_within_its_budget_runs_as_without_one() -> None:
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        leaf = energy_leaf(budget={"max_tokens": 1_000_000, "max_cost_usd": 5, "max_seconds": 600})
        handle = await run(client, {"kind": "executor", "title": "grid", "children": [leaf]})
    assert handle["status"] == "done" and len(model.calls_for("extractor")) == 3


async def test_the_budget_given_to_plan_research_is_kept_with_the_plan_and_binds_its_run() -> None:
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        root = {"kind": "executor", "title": "grid", "children": [energy_leaf()]}
        handle = await run(client, root, budget={"max_sources": 1})
    assert handle["status"] == "budget_exhausted" and handle["metrics"]["sources"] == 1
    store = Store(Settings().database_path)
    try:
        run_row = store.get_run(handle["id"])
        assert run_row.budget is not None and run_row.budget.max_sources == 1
        assert store.get_plan(run_row.plan_ids[0]).budget == run_row.budget
    finally:
        store.close()


async def test_task_specs_are_asked_highest_priority_first_so_a_spent_budget_skips_the_lowest() -> None:
    model = ScriptedModel(team_script)
    specs = [
        {"questions": ["What do turbines cost?"], "priority": 5},
        {"questions": ["How much power do panels make?"], "priority": 1},
    ]
    leaf = energy_leaf(sources=[SOLAR], task_specs=specs, budget={"max_tokens": 1})
    async with Client(create_server(model=model)) as client:
        await run(client, {"kind": "executor", "title": "grid", "children": [leaf]})
    asked = [call.payload for call in model.calls_for("extractor")]
    assert [p.task_spec.priority for p in asked if isinstance(p, ExtractorPayload) and p.task_spec] == [1]
