"""Gates that cannot pass vacuously, with the no-model backend: contradictions between sources are
found by code, fail "contradictions resolved", and an iteration seeks the source that settles them;
the confidence criterion holds the no-model synthesis to its level; a theme is covered only when a
verified fact says it, not when the report's title happens to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import Fact
from research_mcp.roles.contradictions import found_contradictions, settling_question
from research_mcp.server.app import create_server
from research_mcp.storage.events import IterationDone, data_of
from research_mcp.storage.outputs import StoredSynthesis
from research_mcp.storage.store import Store
from tests.server.indexing import wait_until_indexed
from tests.server.waiting import until_finished

OPENED_1932 = "The harbour bridge opened to traffic in 1932. It carries eight lanes of road traffic."
OPENED_1934 = "The harbour bridge opened to traffic in 1934. Its arch is made of silicon steel."
RECORDS = "City records show that the harbour bridge opened to traffic in 1932. Ferries still cross."


@pytest.fixture(autouse=True)
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_MODEL", "extractive")


def records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A corpus holding the source that settles the date."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "city records.txt").write_text(RECORDS, encoding="utf-8")
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))


def bridge_plan(*sources: str, **criteria: Any) -> dict[str, Any]:
    leaf = {
        "kind": "leaf",
        "title": "opening",
        "questions": ["When did the harbour bridge open to traffic?"],
        "sources": list(sources),
    }
    phase = {"name": "settle", "criteria": criteria, "max_iterations": 3}
    return {
        "root": {"kind": "executor", "title": "the harbour bridge", "children": [leaf], "phases": [phase]}
    }


async def run(client: Client, suggested: dict[str, Any]) -> dict[str, Any]:
    plan = await client.call_tool(
        "plan_research", {"query": "the harbour bridge", "suggested_plan": suggested}
    )
    assert not plan.is_error, plan.content
    result = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 50}
        ),
    )
    assert not result.is_error, result.content
    return dict(result.structured_content)


def final_synthesis(run_id: str) -> StoredSynthesis:
    store = Store(Settings().database_path)
    try:
        run_row = store.get_run(run_id)
        assert run_row.result_handoff_id is not None
        output = store.get_handoff(run_row.result_handoff_id).output_as(StoredSynthesis)
        assert output is not None
        return output
    finally:
        store.close()


def iterations(run_id: str) -> list[dict[str, Any]]:
    store = Store(Settings().database_path)
    try:
        return [data_of(e) or {} for e in store.events_for_run(run_id, IterationDone)]
    finally:
        store.close()


async def test_a_planted_contradiction_is_found_by_code_and_named_in_the_report() -> None:
    async with Client(create_server()) as client:
        handle = await run(client, bridge_plan(OPENED_1932, OPENED_1934, contradictions_resolved=True))
        page = await client.call_tool("report_results", {"id": handle["id"], "view": "report"})
    output = final_synthesis(handle["id"])
    [contradiction] = output.contradictions
    assert "Sources disagree on" in contradiction and "1932" in contradiction and "1934" in contradiction
    assert "## Contradictions between sources" in page.structured_content["text"]
    # Nothing settles it (no corpus, no web): the gate stays unmet and says what remains.
    assert handle["metrics"]["criteria_unmet"] == 1
    assert any("contradictions resolved; 1 remain" in gap for gap in output.gaps)
    assert output.confidence.level != "high"


async def test_an_iteration_seeks_the_source_that_settles_a_contradiction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records(tmp_path, monkeypatch)
    async with Client(create_server()) as client:
        await wait_until_indexed(client)
        handle = await run(client, bridge_plan(OPENED_1932, OPENED_1934, contradictions_resolved=True))
    [delta] = iterations(handle["id"])
    asked = delta["changed"]["questions_added"]
    assert any(q.startswith("What is established about") and "bridge" in q for q in asked)
    assert delta["changed"]["sources_added"] == ["corpus:1"]  # the city records
    assert delta["criteria_before"] == {"contradictions_resolved": False}
    assert delta["criteria_after"] == {"contradictions_resolved": True}
    assert final_synthesis(handle["id"]).contradictions == []
    assert handle["metrics"].get("criteria_unmet", 0) == 0


async def test_the_confidence_criterion_is_unmet_by_one_source_and_says_its_level() -> None:
    # One source, however clear, is not high: high needs a second, independent one agreeing.
    async with Client(create_server()) as client:
        handle = await run(client, bridge_plan(OPENED_1932, min_confidence="high"))
    output = final_synthesis(handle["id"])
    assert handle["metrics"]["criteria_unmet"] == 1
    assert any("confidence at least high; the synthesis reached" in gap for gap in output.gaps)


async def test_a_theme_in_the_title_alone_is_not_covered_one_a_verified_fact_says_is() -> None:
    async with Client(create_server()) as client:
        handle = await run(client, bridge_plan(OPENED_1932, themes=["harbour bridge", "ferries"]))
    [first, *_] = iterations(handle["id"]) or [{}]
    output = final_synthesis(handle["id"])
    # "ferries" is in no source: unmet although no report says otherwise; "harbour bridge" is in a fact.
    assert first.get("criteria_before", {}).get("theme:harbour bridge") is True
    assert any("no verified finding of the report covers 'ferries'" in gap for gap in output.gaps)


def fact(ident: int, statement: str, source: int) -> Fact:
    return Fact(
        id=ident,
        statement=statement,
        quote=statement,
        source_id=source,
        location=None,
        confidence=1,
        verified=True,
    )


def test_negation_of_the_same_claim_is_a_contradiction_and_unrelated_numbers_are_not() -> None:
    facts = [
        fact(1, "Offshore wind farms have capacity factors above 40 percent.", 1),
        fact(2, "Offshore wind farms do not have capacity factors above 40 percent.", 2),
        fact(3, "Solar panel efficiency is between 18 and 22 percent in 2024.", 1),
        fact(4, "Panel prices fell by about ninety percent between 2010 and 2020.", 2),
    ]
    [found] = found_contradictions(facts)
    assert "[F1]" in found and "[F2]" in found
    assert (
        settling_question(found) == "What is established about Offshore wind farms capacity factors percent?"
    )


def test_facts_of_one_source_or_unverified_never_contradict() -> None:
    same_source = [
        fact(1, "The bridge opened to traffic in 1932.", 1),
        fact(2, "The bridge opened to traffic in 1934.", 1),
    ]
    unverified = [fact(1, "The bridge opened to traffic in 1932.", 1)]
    unverified.append(
        fact(2, "The bridge opened to traffic in 1934.", 2).model_copy(update={"verified": False})
    )
    assert found_contradictions(same_source) == [] and found_contradictions(unverified) == []


async def test_an_unmet_corroboration_seeks_a_second_source_for_the_weakest_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records(tmp_path, monkeypatch)
    async with Client(create_server()) as client:
        await wait_until_indexed(client)  # the records are searchable: no race with the start-up scan
        handle = await run(client, bridge_plan(OPENED_1932, min_corroboration=2))
    [first, *_] = iterations(handle["id"])
    assert any("1932" in question for question in first["changed"]["questions_added"])
    assert "corpus:1" in first["changed"]["sources_added"]


def test_a_series_over_years_and_two_things_of_one_kind_are_no_contradiction() -> None:
    series = [
        fact(1, "Visitors to the harbour bridge numbered 4081 in the year 2010.", 1),
        fact(2, "Visitors to the harbour bridge numbered 3711 in the year 2000.", 2),
    ]
    named = [
        fact(1, "Record K10: the Elder bridge was first built in 1810 by a guild of 113 masons.", 1),
        fact(2, "Record K00: the Alder bridge was first built in 1700 by a guild of 3 masons.", 2),
    ]
    counted = [
        fact(1, "Visitors to the harbour bridge numbered 4081 in the year 2010.", 1),
        fact(2, "Visitors to the harbour bridge numbered 3711 in the year 2010.", 2),
    ]
    assert found_contradictions(series) == [] and found_contradictions(named) == []
    assert len(found_contradictions(counted)) == 1
