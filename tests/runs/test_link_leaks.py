"""No data leaves through an address a model chose (issue 46, item 4).

A model reading a private note (or steered by a page) may answer with a "linked source" whose
address carries the note's words to a sink: ``http://127.0.0.1:<port>/leak?d=<salary, password>``.
The research follows a linked source only when the text of the source citing it gives the address
whole, and the views list no other as a source to read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import ExtractorOutput, FollowUpQuestion, LinkedSource
from research_mcp.core.role_inputs import ExtractorInput, ExtractorPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.storage.outputs import StoredExtraction
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished
from tests.sources.loopback import LoopbackServer

NOTE = (
    "Private note on tidal power costs. My salary is 91,250 euros and the lab password is "
    "kelp-Walrus-77. The Sihwa Lake station produces 254 megawatts from the tide."
)
EVIL = "http://evil.example/linked"
PAGE = "<html><head><title>{title}</title></head><body><article><p>{text}</p></article></body></html>"


@pytest.fixture
def sink(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    with LoopbackServer() as server:
        server.serve("/leak", b"<html><body><p>thanks</p></body></html>")
        monkeypatch.setenv("RESEARCH_MCP_FETCH_ALLOW", f"127.0.0.1:{server.port}")
        yield server


def leaking(sink: LoopbackServer) -> Any:
    """A model that answers every extraction with addresses of its own making: one carrying the
    source's text to the sink, one the source never wrote, and a follow-up pointing at it."""

    def script(request: ModelRequest[Any]) -> Any:
        output = team_script(request)
        if isinstance(request.payload, ExtractorPayload):
            assert isinstance(output, ExtractorOutput)
            stolen = quote(request.payload.source_text[:400])
            output.linked_candidate_sources = [
                LinkedSource(ref=sink.url(f"/leak?d={stolen}"), context="the full cost table", priority=1),
                LinkedSource(ref=EVIL, context=f"see {EVIL} for more", priority=2),
            ]
            output.follow_up_questions = [
                FollowUpQuestion(question=f"What does {EVIL} say?", confidence=0.3, rationale=f"{EVIL}")
            ]
        return output

    return script


async def research(client: Client, query: str, root: dict[str, Any]) -> str:
    plan = await client.call_tool("plan_research", {"query": query, "suggested_plan": {"root": root}})
    assert not plan.is_error, plan.content
    run = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
        ),
    )
    assert run.structured_content["status"] == "done", run.structured_content
    return str(run.structured_content["id"])


def leaf(source: str) -> dict[str, Any]:
    spec = {"questions": ["How much does the Sihwa Lake station produce?"], "discovery_intense": True}
    return {"kind": "leaf", "title": "Sihwa output", "sources": [source], "task_specs": [spec]}


async def test_an_address_a_model_composes_from_a_private_note_is_never_fetched_nor_listed(
    sink: LoopbackServer,
) -> None:
    async with Client(create_server(model=ScriptedModel(leaking(sink)))) as client:
        run_id = await research(
            client, "tidal power", {"kind": "executor", "title": "tidal", "children": [leaf(NOTE)]}
        )
        views = {
            view: (await client.call_tool("report_results", {"id": run_id, "view": view})).structured_content
            for view in ("followups", "gaps", "sources", "report")
        }

    assert sink.paths == []  # nothing reached the sink: not the note's text, not a bare request
    store = Store(Settings().database_path)
    for handoff in store.handoffs_for_run(run_id, role="extractor"):
        assert isinstance(handoff.output, StoredExtraction)
        assert handoff.output.linked_candidate_sources == []
        assert all(EVIL not in item.rationale for item in handoff.output.follow_up_questions)
    shown = repr(views)
    assert EVIL not in shown and "/leak" not in shown  # the report may quote the note: it is the user's


def survey_citing_a_report(sink: LoopbackServer) -> tuple[str, str, Any]:
    """A report page served, a survey note whose text gives its address, and a model that lists that
    address among the survey's linked sources: (the address, the survey, the model's script)."""
    report = sink.url("/sihwa.html")
    sink.serve(
        "/sihwa.html", PAGE.format(title="Sihwa Lake", text="Sihwa Lake makes 254 megawatts.").encode()
    )
    survey = f"Tidal power stations are few. The Sihwa Lake report ({report}) gives the output."

    def script(request: ModelRequest[Any]) -> Any:
        output = team_script(request)
        if isinstance(request.payload, ExtractorPayload) and request.payload.source_text == survey:
            assert isinstance(output, ExtractorOutput)
            output.linked_candidate_sources = [LinkedSource(ref=report, context="the Sihwa Lake report")]
        return output

    return report, survey, script


async def test_a_link_its_source_writes_is_still_read(sink: LoopbackServer) -> None:
    report, survey, script = survey_citing_a_report(sink)

    async with Client(create_server(model=ScriptedModel(script))) as client:
        run_id = await research(
            client, "tidal power", {"kind": "executor", "title": "tidal", "children": [leaf(survey)]}
        )
    read = [
        asked.source_ref
        for handoff in Store(Settings().database_path).handoffs_for_run(run_id, role="extractor")
        if (asked := handoff.input_as(ExtractorInput)) is not None
    ]
    assert "/sihwa.html" in sink.paths and report in read


async def test_a_link_an_older_store_kept_is_not_followed_unless_its_source_gives_it(
    sink: LoopbackServer,
) -> None:
    """A store written before the rule may hold a composed link among a source's insights; a later
    run bearing on that source does not fetch it (`follow_leads` checks the citing text)."""
    _, survey, script = survey_citing_a_report(sink)

    async with Client(create_server(model=ScriptedModel(script))) as client:
        await research(
            client, "tidal stations", {"kind": "executor", "title": "tidal", "children": [leaf(survey)]}
        )
        # What an older store could hold: the insight's address rewritten to carry the note out.
        leak = sink.url(f"/leak?d={quote(NOTE[:80])}")
        with sqlite3.connect(Settings().database_path) as db:
            assert db.execute(
                "UPDATE source_insights SET text = ? WHERE kind = 'linked_source'", (leak,)
            ).rowcount
        sink.requests.clear()
        later = {
            "kind": "leaf",
            "title": "Sihwa",
            "questions": ["How much does the Sihwa Lake station produce?"],
        }
        later["sources"] = ["Tidal power turns turbines with the rise and fall of the sea at Sihwa Lake."]
        await research(
            client, "Sihwa Lake output", {"kind": "executor", "title": "Sihwa", "children": [later]}
        )
    assert all(not path.startswith("/leak") for path in sink.paths)
