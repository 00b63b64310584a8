"""A discovery leaf's scout searches the web (a fake Tavily) and its sibling leaf reads what it ranked
(pages from a loopback web server, reached through the fetch allow-list)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.storage.outputs import StoredCuration
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished
from tests.sources.fake_tavily import FakeTavily, web_through
from tests.sources.loopback import LoopbackServer

PAGES = {
    "/tides.html": "<html><head><title>Tidal power</title></head><body><article><p>Tidal power uses the rise "
    "and fall of the sea to turn turbines. The Sihwa Lake station in South Korea produces 254 megawatts. "
    "Tidal energy is predictable decades in advance.</p></article></body></html>",
    "/waves.html": "<html><head><title>Wave power</title></head><body><article><p>Wave energy converters "
    "capture the motion of surface waves. Most wave projects are still at the prototype stage. "
    "Storms damage many early devices.</p></article></body></html>",
}


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeTavily, LoopbackServer]]:
    with FakeTavily() as tavily, LoopbackServer() as pages:
        for path, html in PAGES.items():
            pages.serve(path, html.encode())
        web_through(monkeypatch, tavily, pages)
        yield tavily, pages


async def test_a_discovery_leaf_feeds_its_ranked_sources_to_its_sibling_leaf(
    web: tuple[FakeTavily, LoopbackServer],
) -> None:
    tavily, pages = web
    results = [
        {"url": pages.url("/tides.html"), "title": "Tidal power", "content": "tides", "score": 0.9},
        {"url": pages.url("/waves.html"), "title": "Wave power", "content": "waves", "score": 0.7},
    ]
    tavily.route("/search", lambda body: {"results": results})
    plan = {
        "root": {
            "kind": "executor",
            "title": "marine energy",
            "children": [
                {"kind": "discovery", "title": "marine energy sources"},
                {
                    "kind": "leaf",
                    "title": "marine energy",
                    "questions": ["How much power do tidal stations make?"],
                },
            ],
        }
    }
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        planned = await client.call_tool("plan_research", {"query": "marine energy", "suggested_plan": plan})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 20}
            ),
        )
        assert run.structured_content["status"] == "done", run.content
        sources = await client.call_tool(
            "report_results", {"id": run.structured_content["id"], "view": "sources"}
        )

    assert tavily.requests[0].json["query"] == "marine energy sources"
    assert sorted(pages.paths) == ["/tides.html", "/waves.html"]
    store = Store(Settings().database_path)
    extractions = store.handoffs_for_run(run.structured_content["id"], role="extractor")
    # Each page quick-scanned by the scout (its node's /scan handoffs), then read by the leaf.
    scans = sorted(h.input.source_ref for h in extractions if h.node_id.endswith("/scan"))  # type: ignore[union-attr]
    read = sorted(h.input.source_ref for h in extractions if not h.node_id.endswith("/scan"))  # type: ignore[union-attr]
    assert scans == read == [pages.url("/tides.html"), pages.url("/waves.html").rstrip("/")]
    assert "Tidal power" in sources.structured_content["text"]
    (scout,) = store.handoffs_for_run(run.structured_content["id"], role="scout")
    assert isinstance(scout.output, StoredCuration)
    assert [s.ref for s in scout.output.sources] == [pages.url("/tides.html"), pages.url("/waves.html")]
