"""The scout quick-scans its first candidates with the extractor, under a token box of its own: what
a scan finds moves a candidate's rank and is shown with its reason; when the box is spent the scout
scans no more and says so. Through scout_sources, on a corpus folder."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.role_inputs import ScoutInput, SynthesisInput
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.roles.quick_scan import SCANNED, ScanFinding, Scans, rescored
from research_mcp.server.app import create_server
from research_mcp.storage.outputs import StoredCuration
from research_mcp.storage.store import Store
from tests.server.indexing import notes_folder, wait_until_indexed
from tests.server.waiting import until_finished

NOTES = {
    # Names the topic in its title, never says the output.
    "sihwa.md": "# Sihwa Lake tidal power station output\n\nThe Sihwa Lake tidal power station sits on the "
    "coast of Gyeonggi province, south of Seoul. A seawall closed off the lake, and its water grew "
    "polluted. Engineers opened sluices to let the tide flush the lake.\n",
    # Says the output, under a title about something broader.
    "korea.md": "# Renewable energy in Korea\n\nKorea builds solar and wind farms along its coasts. The Sihwa "
    "Lake station produces 254 megawatts from the tide, the largest tidal output in the world.\n",
    "tides.md": "# Tidal power stations\n\nTidal power stations turn the rise and fall of the sea into "
    "electricity. La Rance in France opened in 1966. Tidal output is predictable.\n",
}
TOPIC = "Sihwa Lake tidal power station output"
OUTPUT = "How many megawatts does the Sihwa Lake station produce?"


@pytest.fixture(autouse=True)
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return notes_folder(tmp_path, monkeypatch, NOTES)


async def scouted(model: Any = None, question: str = OUTPUT) -> tuple[dict[str, Any], str, StoredCuration]:
    """scout_sources on the topic and the question: its handle, its sources view, its curation."""
    async with Client(create_server(model=model)) as client:
        await wait_until_indexed(client)
        handle = await client.call_tool("scout_sources", {"topic": TOPIC, "queries": [question]})
        assert not handle.is_error, handle.content
        view = await client.call_tool(
            "report_results", {"id": handle.structured_content["id"], "view": "sources"}
        )
    curation = Store(Settings().database_path).get_handoff(handle.structured_content["id"])
    output = curation.output_as(StoredCuration)
    assert output is not None
    return handle.structured_content, view.structured_content["text"], output


async def test_a_quick_scan_puts_the_source_that_answers_ahead_of_the_one_that_only_names_the_topic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RESEARCH_MCP_SWEEP_TOKENS", "0")  # scans turned off
    unscanned_handle, _, unscanned = await scouted()
    monkeypatch.delenv("RESEARCH_MCP_SWEEP_TOKENS")
    handle, view, output = await scouted()  # no key: the extractive extractor scans

    assert [s.title for s in unscanned.sources][:2] == [TOPIC, "Renewable energy in Korea"]
    assert unscanned_handle["summary"][0] == "3 sources ranked from 3 candidates"
    assert unscanned.failures == [] and all(not s.scan for s in unscanned.sources)
    assert [s.title for s in output.sources][:2] == ["Renewable energy in Korea", TOPIC]
    assert handle["summary"][0] == "3 sources ranked from 3 candidates; 3 quick-scanned"
    korea = output.sources[0]
    assert re.fullmatch(r"1 of 1 quotes verified; confidence Q1 0\.\d+", korea.scan), korea.scan
    # The why the host is shown carries it, beside the ranker's reason.
    assert f"<{korea.ref}>" in view and f"| scan: {korea.scan} |" in view
    # The no-model extractor scanned for nothing: each scan an extractor handoff of 0 tokens.
    store = Store(Settings().database_path)
    scans = list(
        store.db.query("SELECT tokens_in + tokens_out AS tokens FROM handoffs WHERE role = 'extractor'")
    )
    assert scans == [{"tokens": 0}] * SCANNED
    assert store.db["facts"].count == 0  # a scan keeps no facts: a leaf reading the source extracts it


async def test_the_token_box_stops_the_scans_and_the_scout_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_SWEEP_TOKENS", "500")
    model = ScriptedModel(team_script)
    handle, _, output = await scouted(model)

    scans = model.calls_for("extractor")
    assert len(scans) == 1  # the first scan spent the box: no second one was asked
    (scout,) = model.calls_for("scout")
    assert isinstance(scout.payload, ScoutInput)
    assert [bool(c.scan) for c in scout.payload.candidates] == [True, False, False]
    (stopped,) = [item for item in output.failures if "quick scans" in item]
    assert stopped.startswith("The sweep's token box of 500 tokens closed after 1 of 3 quick scans (")
    assert handle["summary"][0].endswith("; 1 quick-scanned (token box spent)")


async def test_scans_are_no_pace_for_the_plan_estimates_of_extractions() -> None:
    await scouted()
    await scouted(question="Where does the Sihwa Lake station stand?")  # 6 scans, none reused
    store = Store(Settings().database_path)
    assert (
        store.db.execute("SELECT COUNT(*) FROM handoffs WHERE node_id = '/scan'").fetchone()[0] == 2 * SCANNED
    )
    assert "extractor" not in store.seconds_per_call("extractive")


def test_a_scan_lifts_a_confident_answer_leaves_a_weak_one_and_demotes_a_credibility_failure() -> None:
    scans = Scans(
        found={
            "a": ScanFinding(facts=1, verified=1, best=(0.3,)),  # weak: a bridge, perhaps
            "b": ScanFinding(facts=2, verified=2, best=(0.0, 0.9)),  # answers the second question
            "d": ScanFinding(facts=1, verified=0, best=(0.0,)),  # its quote is not in its text
            "e": ScanFinding(error="404"),
            "f": ScanFinding(best=(0.0,)),  # found nothing on the questions: weak, not failed
        }
    )
    ranked = [
        ("a", 0.9, True),
        ("c", 0.8, True),
        ("b", 0.7, True),
        ("d", 0.6, True),
        ("f", 0.55, True),
        ("e", 0.5, False),
    ]
    assert rescored(ranked, scans) == [
        0.9,
        0.8,
        0.9,
        0.4,
        0.55,
        0.3,
    ]
    assert ScanFinding(facts=2, verified=0, best=(0.0,)).note == "2 facts, no quote found in the text"
    assert ScanFinding(error="refused").note == "unreadable: refused"


async def test_in_a_run_the_scans_sit_apart_from_the_leaves_reading_and_the_curated_list_gives_them() -> None:
    plan = {
        "root": {
            "kind": "executor",
            "title": "Sihwa Lake",
            "children": [
                {"kind": "discovery", "title": TOPIC, "budget": {"max_sources": 1}},
                {"kind": "leaf", "title": "output", "questions": [OUTPUT], "budget": {"max_sources": 1}},
            ],
        }
    }
    async with Client(create_server()) as client:
        await wait_until_indexed(client)
        planned = await client.call_tool("plan_research", {"query": OUTPUT, "suggested_plan": plan})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 50}
            ),
        )
        assert run.structured_content["status"] == "done", run.content
        (curated,) = [
            h.id
            for h in Store(Settings().database_path).handoffs_for_run(
                run.structured_content["id"], role="synthesizer"
            )
            if isinstance(h.input, SynthesisInput) and h.input.discovery
        ]
        listed = await client.call_tool("report_results", {"id": curated, "view": "report"})

    store = Store(Settings().database_path)
    extractions = store.handoffs_for_run(run.structured_content["id"], role="extractor")
    scans = [h for h in extractions if (h.node_id or "").endswith("/scan")]
    assert len(scans) == SCANNED and len(extractions) - len(scans) >= 1
    # The leaf read one source; the run counts what its leaves read, not what the scout scanned.
    assert store.sources_read(run.structured_content["id"]) == len(extractions) - len(scans) < SCANNED
    assert re.search(
        r"Quick scan: 1 of 1 quotes verified; confidence Q1 0\.\d+\.", listed.structured_content["text"]
    )
