"""Priority divides a shared budget: leaves of higher priority get a larger share of the run's
budget (runs/shares.py), through execute_plan with a loopback fake Tavily and web server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import Budget, ExtractorTaskSpec, PlanNode
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.runs.shares import priority_shares
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished
from tests.sources.fake_tavily import FakeTavily, web_through
from tests.sources.loopback import LoopbackServer


def leaf(ident: str, priority: int | None, budget: Budget | None = None) -> PlanNode:
    specs = [ExtractorTaskSpec(questions=[f"What is {ident}?"], priority=priority)] if priority else []
    return PlanNode(
        id=ident, kind="leaf", title=ident, questions=[f"What is {ident}?"], task_specs=specs, budget=budget
    )


def test_shares_follow_the_weight_of_each_priority_and_leave_own_budgets_alone() -> None:
    root = PlanNode(
        id="n",
        kind="executor",
        title="root",
        children=[leaf("a", 1), leaf("b", 5), leaf("c", None), leaf("d", 1, Budget(max_sources=9))],
    )
    shares = priority_shares(root, Budget(max_sources=18, max_tokens=900, max_seconds=60))

    # Weights 5, 1 and 3 (the default priority); the leaf with a budget of its own takes no share.
    assert shares == {
        "a": Budget(max_sources=10, max_tokens=500),
        "b": Budget(max_sources=2, max_tokens=100),
        "c": Budget(max_sources=6, max_tokens=300),
    }


def test_leaves_of_one_priority_or_a_run_without_budget_divide_nothing() -> None:
    root = PlanNode(id="n", kind="executor", title="root", children=[leaf("a", 2), leaf("b", 2)])
    assert priority_shares(root, Budget(max_sources=4)) == {}
    unequal = root.model_copy(update={"children": [leaf("a", 1), leaf("b", 4)]})
    assert priority_shares(unequal, None) == {}
    assert priority_shares(unequal, Budget(max_seconds=30)) == {}


PAGES = {
    f"/page{n}.html": f"<html><head><title>Kelp {n}</title></head><body><article><p>Giant kelp forest "
    f"number {n} grows {n + 10} centimetres a day in cold water. Kelp forest {n} shelters fish.</p>"
    "</article></body></html>"
    for n in range(8)
}


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    with FakeTavily() as tavily, LoopbackServer() as pages:
        for path, html in PAGES.items():
            pages.serve(path, html.encode())
        results = [{"url": pages.url(path), "title": path, "content": "kelp", "score": 0.5} for path in PAGES]
        tavily.route("/search", lambda body: {"results": results})
        web_through(monkeypatch, tavily, pages)
        yield pages


def searching_leaf(title: str, priority: int) -> dict[str, Any]:
    question = f"How fast does {title} grow?"
    return {
        "kind": "leaf",
        "title": title,
        "questions": [question],
        "search_queries": [title],
        "task_specs": [{"questions": [question], "priority": priority}],
    }


async def test_the_higher_priority_leaf_reads_more_of_a_shared_source_budget(web: LoopbackServer) -> None:
    plan = {
        "root": {
            "kind": "executor",
            "title": "kelp",
            "children": [searching_leaf("giant kelp", 1), searching_leaf("kelp forest", 5)],
        }
    }
    async with Client(create_server(), mode="legacy") as client:  # no key: the extractive backend
        planned = await client.call_tool(
            "plan_research", {"query": "kelp growth", "suggested_plan": plan, "budget": {"max_sources": 6}}
        )
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 50}
            ),
        )
    assert not run.is_error, run.content
    read: dict[str, set[str]] = {}
    for handoff in Store(Settings().database_path).handoffs_for_run(
        run.structured_content["id"], "extractor"
    ):
        asked = handoff.input_as(ExtractorInput)
        assert asked is not None
        read.setdefault(str(handoff.node_id).rsplit("/", 1)[-1], set()).add(asked.source_ref)
    # Six sources shared by weights 5 and 1: the priority-1 leaf may read five, the other one.
    assert len(read["n.2"]) == 1
    assert len(read["n.1"]) > 1
