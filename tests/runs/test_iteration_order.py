"""A run asked twice does the same, whichever parallel step finishes first: sibling leaves take their
sources in plan order, and the follow-ups a phase iteration asks are taken by source."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import Confidence, FollowUpQuestion
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.context import node_key
from research_mcp.runs.widening import MAX_FOLLOW_UPS, follow_ups_of, raised_by_source
from research_mcp.server.app import create_server
from research_mcp.storage.events import SourcesChosen
from research_mcp.storage.outputs import StoredExtraction
from research_mcp.storage.store import Store
from tests.fake_http import ScriptedResponse
from tests.runs.walk import PLAN_ID, leaf, tree, walk
from tests.server.waiting import until_finished
from tests.sources.fake_tavily import FakeTavily, web_through
from tests.sources.loopback import LoopbackServer

RAISED = {
    "corpus:1": ["Which field does fsck read?", "What does the pass number mean?"],
    "corpus:2": ["What does the dump field do?", "Which options does defaults stand for?"],
}


def extracted(store: Store, run_id: str, ref: str) -> None:
    asked = ExtractorInput(
        source_id=int(ref.split(":")[1]), source_ref=ref, source_title=ref, questions=["fstab?"]
    )
    handoff = store.start_handoff(
        role="extractor",
        input=asked.model_dump(),
        backend="scripted",
        run_id=run_id,
        node_id=node_key(PLAN_ID, "n.1"),
    )
    follow_ups = [FollowUpQuestion(question=q, confidence=0.5, rationale="open") for q in RAISED[ref]]
    output = StoredExtraction(
        follow_up_questions=follow_ups, confidence=Confidence(level="low", reasoning="scripted")
    )
    store.finish_handoff(handoff, status="done", output=output, summary=[])


def test_the_follow_ups_an_iteration_asks_do_not_depend_on_which_source_was_read_first(
    temp_store: Store,
) -> None:
    asked = []
    for order in (["corpus:1", "corpus:2"], ["corpus:2", "corpus:1"]):
        rc = walk(temp_store, ScriptedModel(team_script), tree(leaf("fstab", questions=["fstab?"])))
        for ref in order:
            extracted(temp_store, rc.run_id, ref)
        asked.append(follow_ups_of(raised_by_source(rc, node_key(PLAN_ID, "n.1"), iteration=1)))
    assert asked[0] == asked[1]
    assert len(asked[0]) == MAX_FOLLOW_UPS == 3
    assert asked[0][:2] == RAISED["corpus:1"]


PAGE = "<html><head><title>{name}</title></head><body><p>{name} is a tidal power plant on a river estuary.</p></body></html>"


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[FakeTavily, LoopbackServer]]:
    """Four pages every search finds, in the same order; the search for "slow" is answered only once
    the search for "fast" has been answered whole, however the machine schedules the two."""
    with FakeTavily() as tavily, LoopbackServer() as pages:
        names = ["alpha", "beta", "gamma", "delta"]
        for name in names:
            pages.serve(f"/{name}.html", PAGE.format(name=name).encode())
        fast_answered = threading.Event()

        def search(body: dict[str, Any]) -> ScriptedResponse:
            results = [
                {"url": pages.url(f"/{n}.html"), "title": n, "content": n, "score": 0.8} for n in names
            ]
            if "slow" in body["query"]:  # the first leaf's search finishes after its sibling's
                return ScriptedResponse(200, {"results": results}, after=fast_answered)
            return ScriptedResponse(200, {"results": results}, sent=fast_answered)

        tavily.route("/search", search)
        web_through(monkeypatch, tavily, pages)
        yield tavily, pages


async def test_sibling_leaves_take_sources_in_plan_order_not_by_whose_search_finished_first(
    web: tuple[FakeTavily, LoopbackServer],
) -> None:
    _, pages = web
    searching = {"kind": "leaf", "questions": ["What is a tidal power plant?"]}
    plan = {
        "root": {
            "kind": "executor",
            "title": "tidal power",
            "children": [
                {**searching, "title": "slow", "search_queries": ["tidal slow"]},
                {**searching, "title": "fast", "search_queries": ["tidal fast"]},
            ],
        }
    }
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        planned = await client.call_tool("plan_research", {"query": "tidal power", "suggested_plan": plan})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )
    assert run.structured_content["status"] == "done", run.content
    store = Store(Settings().database_path)
    chosen = {
        e.node_id.rsplit("/", 1)[-1]: e.refs
        for e in store.events_for_run(run.structured_content["id"], SourcesChosen)
    }
    # The first leaf in the plan takes the first three, though its search answered last; its
    # sibling gets the one left, then the taken ones last.
    assert chosen["n.1"] == [pages.url(f"/{name}.html") for name in ("alpha", "beta", "gamma")]
    assert chosen["n.2"] == [pages.url(f"/{name}.html") for name in ("delta", "alpha", "beta")]
