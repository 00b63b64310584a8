"""The planner without a model (no API key, no sampling) uses the seed's mechanisms: a comparison
gets a discovery leaf scouting for its items and a leaf per item; a question of several parts gets a
phase whose criteria are its parts, judged on verified facts, with bounded iterations; every leaf
carries a task spec. Through a real MCP client session, a loopback fake Tavily and a loopback web
server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.server.app import create_server
from research_mcp.storage.events import IterationDone, PhaseMet, PhaseUnmet, SourcesChosen
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished
from tests.sources.fake_tavily import FakeTavily, web_through
from tests.sources.loopback import LoopbackServer

PAGES = {
    "/tidal.html": "<html><head><title>Tidal power</title></head><body><article><p>Tidal power turns the "
    "rise and fall of the sea into electricity. The Rance tidal power station in France opened in 1966. "
    "Tidal power is predictable decades in advance.</p></article></body></html>",
    "/wave.html": "<html><head><title>Wave power</title></head><body><article><p>Wave power captures the "
    "energy of surface waves. Most wave power devices are still prototypes. Storms damage many early "
    "wave power devices.</p></article></body></html>",
}


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeTavily, LoopbackServer]]:
    with FakeTavily() as tavily, LoopbackServer() as pages:
        for path, html in PAGES.items():
            pages.serve(path, html.encode())

        def search(body: dict[str, Any]) -> dict[str, Any]:
            query = body["query"].casefold()
            results = [
                {"url": pages.url(path), "title": path[1:-5], "content": path[1:-5], "score": 0.8}
                for path in PAGES
                if path[1:-5] in query
            ]
            return {"results": results}

        tavily.route("/search", search)
        web_through(monkeypatch, tavily, pages)
        yield tavily, pages


async def plan_and_run(client: Client, query: str) -> tuple[dict[str, Any], str, dict[str, Any]]:
    planned = await client.call_tool("plan_research", {"query": query})
    assert planned.structured_content["status"] == "feasible", planned.content
    tree = await client.call_tool("report_results", {"id": planned.structured_content["id"], "view": "tree"})
    run = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 50}
        ),
    )
    assert not run.is_error, run.content
    return dict(planned.structured_content), tree.structured_content["text"], dict(run.structured_content)


async def test_a_comparison_scouts_for_its_items_then_reads_one_leaf_per_item(
    web: tuple[FakeTavily, LoopbackServer],
) -> None:
    tavily, pages = web
    async with Client(create_server(), mode="legacy") as client:  # no key, no sampling: no model
        planned, tree, run = await plan_and_run(client, "Compare tidal power and wave power")
    assert planned["backend"] == "extractive"
    assert "n.1 discovery: Sources on tidal power and wave power" in tree
    assert "n.2 leaf: tidal power" in tree and "n.3 leaf: wave power" in tree
    assert tree.count("task spec: 1 question; expected format: A bulleted list") == 2
    assert run["status"] == "done", run
    # The discovery leaf's scout searched for each item; each item's leaf read its item's page.
    searched = [body["query"] for body in tavily.bodies("/search")]
    assert "tidal power" in searched and "wave power" in searched
    store = Store(Settings().database_path)
    # Each item's leaf takes the curated page on its item first (and the other after it).
    first = {
        str(chosen.node_id).rsplit("/", 1)[-1]: chosen.refs[0]
        for chosen in store.events_for_run(run["id"], SourcesChosen)
        if chosen.refs
    }
    assert first == {"n.2": pages.url("/tidal.html"), "n.3": pages.url("/wave.html")}
    (scout,) = store.handoffs_for_run(run["id"], role="scout")
    assert scout.node_id.endswith("/n.1")


async def test_a_question_of_two_parts_covered_by_verified_facts_meets_its_phase_at_once(
    web: tuple[FakeTavily, LoopbackServer],
) -> None:
    query = "What is tidal power? When did the Rance tidal power station open?"
    async with Client(create_server(), mode="legacy") as client:
        _, tree, run = await plan_and_run(client, query)
        report = await client.call_tool("report_results", {"id": run["id"], "view": "report"})
    assert "phase 'cover every part'" in tree and "at most 2 iterations" in tree
    assert run["status"] == "done", run
    store = Store(Settings().database_path)
    (met,) = store.events_for_run(run["id"], PhaseMet)
    assert met.criteria == {
        "theme:What is tidal power?": True,
        "theme:When did the Rance tidal power station open?": True,
    }
    assert not store.events_for_run(run["id"], IterationDone)
    assert "1966" in report.structured_content["text"]


async def test_a_part_no_verified_fact_covers_iterates_boundedly_and_is_named_in_the_gaps(
    web: tuple[FakeTavily, LoopbackServer],
) -> None:
    # The wave page is found for the second part, but says nothing of who invented the wave organ.
    query = "What is tidal power? Who invented the wave power organ?"
    async with Client(create_server(), mode="legacy") as client:
        _, _, run = await plan_and_run(client, query)
        gaps = await client.call_tool("report_results", {"id": run["id"], "view": "gaps"})
    assert run["status"] == "done", run
    store = Store(Settings().database_path)
    iterations = store.events_for_run(run["id"], IterationDone)
    assert len(iterations) == 1  # max_iterations=2: the first synthesis and one iteration
    assert iterations[0].why == ["theme:Who invented the wave power organ?"]
    assert "Who invented the wave power organ?" in iterations[0].changed["questions_added"]
    (unmet,) = store.events_for_run(run["id"], PhaseUnmet)
    assert unmet.criteria == {
        "theme:What is tidal power?": True,
        "theme:Who invented the wave power organ?": False,
    }
    assert (
        "criterion unmet: no verified finding of the report covers 'Who invented the wave power organ?'"
        in gaps.structured_content["text"]
    )
