"""What sources leave open is kept in the knowledge base with the source, and a later run uses it:
a limitation one run's source names reaches the synthesizer, the gaps and the sources of a later
run whose questions it bears on, without that source being read again; a source it cites is read
by a later leaf it bears on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import ExtractorOutput, FollowUpQuestion, LinkedSource
from research_mcp.core.role_inputs import ExtractorPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.runs.prior import related
from research_mcp.server.app import create_server
from research_mcp.storage.store import Store
from tests.server.indexing import notes_folder, wait_until_indexed
from tests.server.waiting import until_finished
from tests.sources.loopback import LoopbackServer

STUDY = (
    "# Offshore wind in the North Sea\n\n"
    "Offshore wind farms in the North Sea reached an average capacity factor of 42 percent in 2022. "
    "Larger turbines raised the capacity factor of new farms above 45 percent.\n\n"
    "## Limitations\n\n"
    "This study does not cover floating offshore wind turbines.\n"
)
HYWIND = (
    "Hywind Scotland opened in 2017 as the first commercial floating offshore wind farm. "
    "Its five floating turbines stand in water up to 120 metres deep."
)
LIMITATION = "This study does not cover floating offshore wind turbines."
FLOATING = "How do floating offshore wind turbines perform?"


def one_leaf(title: str, question: str, source: str) -> dict[str, Any]:
    leaf = {"kind": "leaf", "title": title, "questions": [question], "sources": [source]}
    return {"root": {"kind": "executor", "title": f"about {title}", "children": [leaf]}}


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, {"north sea wind.md": STUDY})


async def research(client: Client, query: str, plan: dict[str, Any]) -> str:
    planned = await client.call_tool("plan_research", {"query": query, "suggested_plan": plan})
    run = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 50}
        ),
    )
    assert run.structured_content["status"] == "done", run.structured_content
    return str(run.structured_content["id"])


PAGE = "<html><head><title>{title}</title></head><body><article><p>{text}</p></article></body></html>"
SIHWA = "How much does the Sihwa Lake station produce?"


async def test_a_source_an_earlier_runs_source_cites_is_read_by_a_later_leaf_it_bears_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with LoopbackServer() as pages:
        linked = pages.url("/sihwa.html")
        # The survey writes the report's address: a linked source is one its source gives.
        survey = f"Tidal power stations are few. The Sihwa Lake report ({linked}) gives the station's output."
        pages.serve("/survey.html", PAGE.format(title="Tidal survey", text=survey).encode())
        report = "The Sihwa Lake station produces 254 megawatts from the tide."
        pages.serve("/sihwa.html", PAGE.format(title="Sihwa Lake", text=report).encode())
        monkeypatch.setenv("RESEARCH_MCP_FETCH_ALLOW", f"127.0.0.1:{pages.port}")

        def script(request: ModelRequest[Any]) -> Any:
            output = team_script(request)
            if isinstance(request.payload, ExtractorPayload) and "survey" in request.payload.source_ref:
                assert isinstance(output, ExtractorOutput)
                output.linked_candidate_sources = [LinkedSource(ref=linked, context="the Sihwa Lake report")]
            return output

        spec = {"questions": ["Which tidal power stations are there?"], "discovery_intense": True}
        survey_leaf = {"kind": "leaf", "title": "survey", "sources": [pages.url("/survey.html")]}
        later = one_leaf("Sihwa", SIHWA, "Tidal power turns turbines with the rise and fall of the sea.")
        async with Client(create_server(model=ScriptedModel(script))) as client:
            await research(
                client,
                "tidal stations",
                {
                    "root": {
                        "kind": "executor",
                        "title": "tidal",
                        "children": [{**survey_leaf, "task_specs": [spec]}],
                    }
                },
            )
            second = await research(client, SIHWA, later)

    # The later leaf was given its own text only; the page the survey cites was read on its second hop.
    read = {
        h.input.source_ref: h.input.context
        for h in Store(Settings().database_path).handoffs_for_run(second, role="extractor")
    }  # type: ignore[union-attr]
    assert read.get(linked, "").startswith("Cited by source S")
    assert "read by an earlier run: the Sihwa Lake report" in read[linked]


def test_what_an_earlier_source_left_open_reaches_a_question_sharing_half_the_terms_of_each_not_one_naming_a_country() -> (
    None
):
    assert related(LIMITATION, FLOATING)
    balk = "Alfred Balk served on a committee under which United States Vice President?"
    assert not related("United States: country population inhabitants", balk)
    assert not related("Are Local H and For Against both from the United States?", balk)
    assert not related(
        'The director of "Big Stone Gap" is based in what New York city?',
        "Which New York bands formed in 1990?",
    )


async def test_a_foreign_link_in_a_gap_a_source_names_is_removed_like_in_any_free_text(corpus: Path) -> None:
    capacity = "What capacity factor do offshore wind farms in the North Sea reach?"

    def appends_a_link(request: ModelRequest[Any]) -> Any:
        answer = team_script(request)
        if isinstance(answer, ExtractorOutput):
            answer.source_identified_gaps = [f"{LIMITATION} per http://evil.example/proof"]
            answer.follow_up_questions = [
                FollowUpQuestion(
                    question="Do floating offshore wind turbines (see http://evil.example/q) fare worse?",
                    confidence=0.3,
                    rationale="the study leaves it out",
                )
            ]
        return answer

    async with Client(create_server(model=ScriptedModel(appends_a_link))) as client:
        await wait_until_indexed(client)
        run = await research(client, capacity, one_leaf("North Sea", capacity, "corpus:1"))
        gaps = await client.call_tool("report_results", {"id": run, "view": "gaps"})
        followups = await client.call_tool("report_results", {"id": run, "view": "followups"})
    text = gaps.structured_content["text"]
    assert f"names a gap: {LIMITATION} per (link removed)" in text
    assert (
        "Do floating offshore wind turbines (see (link removed)) fare worse?"
        in followups.structured_content["text"]
    )
    assert "evil.example" not in text + followups.structured_content["text"]
