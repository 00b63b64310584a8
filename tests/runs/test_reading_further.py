"""Research that reads further, end to end through the run engine with a scripted model: sibling leaves
read different sources, a linked source is fetched, a follow-up is answered in the next iteration."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import (
    ClaimedFact,
    Confidence,
    ExtractorOutput,
    FollowUpQuestion,
    LinkedSource,
)
from research_mcp.core.role_inputs import ExtractorInput, ExtractorPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.reading import SOURCES_PER_LEAF
from research_mcp.server.app import create_server
from research_mcp.storage.events import IterationDone, SourcesChosen
from research_mcp.storage.outputs import StoredCuration
from research_mcp.storage.store import Store
from tests.server.indexing import wait_until_indexed
from tests.server.waiting import until_finished
from tests.sources.loopback import LoopbackServer


def store() -> Store:
    return Store(Settings().database_path)


async def run_plan(root: dict[str, Any], script: Any = team_script, *, index: bool = False) -> str:
    async with Client(create_server(model=ScriptedModel(script))) as client:
        if index:
            assert (await wait_until_indexed(client))["phase"] == "ready"
        plan = await client.call_tool(
            "plan_research", {"query": "tidal power", "suggested_plan": {"root": root}}
        )
        assert not plan.is_error, plan.content
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 30}
            ),
        )
        assert run.structured_content["status"] == "done", run.structured_content
        return str(run.structured_content["id"])


def extracted(run_id: str) -> list[tuple[ExtractorInput, int]]:
    """Each extraction of the run: what it was asked, and its iteration."""
    return [
        (asked, handoff.iteration)
        for handoff in store().handoffs_for_run(run_id, role="extractor")
        if (asked := handoff.input_as(ExtractorInput)) is not None
    ]


async def test_sibling_leaves_searching_the_same_pool_read_different_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    for number in range(6):
        (folder / f"tidal note {number}.txt").write_text(
            f"tidal power station number {number} turns {number + 3} turbines with the tide.",
            encoding="utf-8",
        )
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))
    leaves = [
        {"kind": "leaf", "title": title, "questions": ["How does tidal power turn turbines?"]}
        for title in ("stations", "turbines")
    ]
    run_id = await run_plan({"kind": "executor", "title": "tidal power", "children": leaves}, index=True)
    chosen = [e.refs for e in store().events_for_run(run_id, SourcesChosen)]
    assert len(chosen) == 2 and all(len(refs) == SOURCES_PER_LEAF for refs in chosen)
    # The same search, the same pool: each leaf still reads sources the other does not.
    assert not set(chosen[0]) & set(chosen[1])


PAGE = "<html><head><title>{title}</title></head><body><article><p>{text}</p></article></body></html>"


@pytest.fixture
def pages(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopbackServer]:
    with LoopbackServer() as server:
        server.serve(
            "/survey.html",
            PAGE.format(
                title="Tidal survey",
                text="Tidal power stations are few. The Sihwa Lake report "
                f"({server.url('/sihwa.html')}) gives the station's output.",
            ).encode(),
        )
        server.serve(
            "/sihwa.html",
            PAGE.format(title="Sihwa Lake", text="The Sihwa Lake station produces 254 megawatts.").encode(),
        )
        monkeypatch.setenv("RESEARCH_MCP_FETCH_ALLOW", f"127.0.0.1:{server.port}")
        yield server


async def test_a_source_an_extractor_found_cited_is_fetched_and_read(pages: LoopbackServer) -> None:
    linked = pages.url("/sihwa.html")

    def script(request: ModelRequest[Any]) -> Any:
        output = team_script(request)
        if isinstance(request.payload, ExtractorPayload) and "survey" in request.payload.source_ref:
            assert isinstance(output, ExtractorOutput)
            output.linked_candidate_sources = [LinkedSource(ref=linked, context="the Sihwa Lake report")]
        return output

    spec = {"questions": ["How much do tidal stations produce?"], "discovery_intense": True}
    leaf = {"kind": "leaf", "title": "output", "sources": [pages.url("/survey.html")], "task_specs": [spec]}
    run_id = await run_plan({"kind": "executor", "title": "tidal power", "children": [leaf]}, script)
    assert "/sihwa.html" in pages.paths  # fetched
    read = [asked.source_ref for asked, _ in extracted(run_id)]
    assert any(ref.endswith("/sihwa.html") for ref in read)
    facts = store().facts_for_handoffs([h.id for h in store().handoffs_for_run(run_id, role="extractor")])
    assert any("254 megawatts" in fact.statement and fact.verified for fact in facts)


STATION = (
    "The Sihwa Lake station in South Korea produces 254 megawatts from the tide. "
    "The station opened in 2011 after seven years of building."
)
FOLLOW_UP = "When did the Sihwa Lake station open?"


async def test_a_follow_up_an_extraction_raised_is_asked_of_its_source_in_the_next_iteration() -> None:
    def script(request: ModelRequest[Any]) -> Any:
        payload = request.payload
        if not isinstance(payload, ExtractorPayload):
            return team_script(request)
        first = "The Sihwa Lake station in South Korea produces 254 megawatts from the tide."
        facts = [ClaimedFact(statement=first, quote=first, question_index=0)]
        if FOLLOW_UP in payload.questions:  # asked the follow-up, this extractor answers it
            opened = "The station opened in 2011 after seven years of building."
            facts.append(
                ClaimedFact(statement=opened, quote=opened, question_index=payload.questions.index(FOLLOW_UP))
            )
            return ExtractorOutput(facts=facts, confidence=Confidence(level="high", reasoning="scripted"))
        return ExtractorOutput(
            facts=facts,
            confidence=Confidence(level="low", reasoning="scripted: the opening year is not asked"),
            follow_up_questions=[
                FollowUpQuestion(question=FOLLOW_UP, confidence=0.6, rationale="age unknown")
            ],
        )

    # A theme no source covers keeps the phase iterating; the follow-up rides along.
    phase = {"name": "coverage", "criteria": {"themes": ["wave power"]}, "max_iterations": 2}
    leaf = {
        "kind": "leaf",
        "title": "station",
        "questions": ["How much does Sihwa Lake produce?"],
        "sources": [STATION],
    }
    run_id = await run_plan(
        {"kind": "executor", "title": "tidal power", "children": [leaf], "phases": [phase]}, script
    )
    again = [asked for asked, iteration in extracted(run_id) if iteration == 1]
    assert again and all(asked.source_ref.startswith("text:") for asked in again)
    assert any(FOLLOW_UP in asked.questions for asked in again)
    facts = store().facts_for_handoffs([h.id for h in store().handoffs_for_run(run_id, role="extractor")])
    opened = [fact for fact in facts if "opened in 2011" in fact.statement]
    assert opened and opened[0].verified and opened[0].question == FOLLOW_UP
    delta = store().events_for_run(run_id, IterationDone)[0]
    assert delta.changed["follow_ups_asked"] == [FOLLOW_UP]


async def test_an_iteration_calls_the_scout_with_the_follow_up_and_reads_the_source_it_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    station = folder / "station.txt"
    station.write_text("The Sihwa Lake station in South Korea produces 254 megawatts from the tide.", "utf-8")
    (folder / "history.txt").write_text(
        "Sihwa Lake station history: the station opened in 2011 after seven years of building.", "utf-8"
    )
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))

    def script(request: ModelRequest[Any]) -> Any:
        payload = request.payload
        if not isinstance(payload, ExtractorPayload):
            return team_script(request)
        if "opened in 2011" in payload.source_text:
            said = "the station opened in 2011 after seven years of building."
            return ExtractorOutput(
                facts=[ClaimedFact(statement=said, quote=said, question_index=0)],
                confidence=Confidence(level="high", reasoning="scripted"),
            )
        first = "The Sihwa Lake station in South Korea produces 254 megawatts from the tide."
        return ExtractorOutput(
            facts=[ClaimedFact(statement=first, quote=first, question_index=0)],
            confidence=Confidence(level="low", reasoning="scripted: its opening year is not said"),
            follow_up_questions=[FollowUpQuestion(question=FOLLOW_UP, confidence=0.6, rationale="age")],
        )

    phase = {"name": "coverage", "criteria": {"themes": ["wave power"]}, "max_iterations": 2}
    leaf = {"kind": "leaf", "title": "station", "questions": ["How much does Sihwa Lake produce?"]}
    leaf["sources"] = [str(station)]
    run_id = await run_plan(
        {"kind": "executor", "title": "tidal power", "children": [leaf], "phases": [phase]},
        script,
        index=True,
    )
    scouts = [h for h in store().handoffs_for_run(run_id, role="scout") if h.iteration == 1]
    assert scouts, "the iteration did not call the scout"
    curation = scouts[0].output
    assert isinstance(curation, StoredCuration)
    assert FOLLOW_UP in curation.angles and FOLLOW_UP in curation.questions
    history = [s for s in curation.sources if s.title.lower().startswith("history")]
    assert history and curation.questions.index(FOLLOW_UP) + 1 in history[0].covers
    read = [
        asked
        for asked, iteration in extracted(run_id)
        if iteration == 1 and asked.source_ref == history[0].ref
    ]
    assert read and FOLLOW_UP in read[0].questions


async def test_a_page_read_in_one_format_is_not_read_again_in_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "manual"
    folder.mkdir()
    # One page in two formats: the HTML also says what the second search asks ("lagoon").
    guide = "Tidal barrages hold the tide behind a dam and turn turbines as it falls."
    (folder / "tidal-guide.txt").write_text(guide, encoding="utf-8")
    (folder / "tidal-guide.html").write_text(
        PAGE.format(title="tidal-guide", text=f"{guide} A lagoon encloses the tide offshore."),
        encoding="utf-8",
    )
    (folder / "lagoon-costs.md").write_text(
        "# Lagoon costs\n\nA tidal lagoon costs more to build than a barrage of the same output.",
        encoding="utf-8",
    )
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))
    leaf = {
        "kind": "leaf",
        "title": "tidal works",
        "questions": ["How do tidal barrages and lagoons work?"],
        "search_queries": ["tidal barrage dam turbines", "lagoon"],
    }
    run_id = await run_plan({"kind": "executor", "title": "tidal power", "children": [leaf]}, index=True)
    read = {
        Path(document.path).name
        for asked, _ in extracted(run_id)
        if (document := store().corpus_document(int(asked.source_ref.removeprefix("corpus:")))) is not None
    }
    # The guide is read once, in one format; its place goes to the page that can say something new.
    assert len(read & {"tidal-guide.txt", "tidal-guide.html"}) == 1, read
    assert "lagoon-costs.md" in read
