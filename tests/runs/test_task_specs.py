"""A leaf's task specs acted on, end to end through the run engine with a scripted model: acceptance
criteria judged by code (or by the model) and recorded, unmet ones in the run's gaps and capping its
confidence; the expected format given; a spec's budget obeyed; a summary asked for kept concise."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import (
    ClaimedFact,
    Confidence,
    CriterionVerdict,
    ExtractorOutput,
    SynthesisOutput,
)
from research_mcp.core.errors import ModelError
from research_mcp.core.role_inputs import ExtractorPayload, SynthesisPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.storage.events import AcceptanceRejudged, IterationDone
from research_mcp.storage.outputs import StoredExtraction, StoredSynthesis
from research_mcp.storage.store import Store
from tests.server.indexing import wait_until_indexed
from tests.server.waiting import until_finished

SOLAR = (
    "Solar panels convert sunlight into electricity using photovoltaic cells. "
    "Typical panel efficiency is between 18 and 22 percent in 2024. "
    "Panel prices fell by about ninety percent between 2010 and 2020."
)
WIND = (
    "Wind turbines convert the kinetic energy of wind into electricity. "
    "Offshore wind farms have capacity factors above 40 percent. "
    "Modern turbines have rotor diameters of more than 150 metres."
)
HYDRO = (
    "Hydropower plants turn the energy of falling water into electricity. "
    "The Three Gorges Dam has an installed capacity of 22,500 megawatts. "
    "Pumped storage holds most of the world's grid storage capacity."
)
QUESTION = "How do panels make electricity?"


def store() -> Store:
    return Store(Settings().database_path)


async def run_leaf(
    spec: dict[str, Any], sources: list[str], script: Any = team_script
) -> tuple[ScriptedModel, str]:
    """One leaf with `spec`, run to its end; the model and the run id."""
    model = ScriptedModel(script)
    leaf = {
        "kind": "leaf",
        "title": "panels",
        "questions": [QUESTION],
        "sources": sources,
        "task_specs": [spec],
    }
    plan = {"root": {"kind": "executor", "title": "energy", "children": [leaf]}}
    async with Client(create_server(model=model)) as client:
        planned = await client.call_tool("plan_research", {"query": "energy", "suggested_plan": plan})
        assert not planned.is_error, planned.content
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )
        assert run.structured_content["status"] == "done", run.structured_content
    return model, str(run.structured_content["id"])


def leaf_synthesis(run_id: str, iteration: int | None = None) -> StoredSynthesis:
    [output] = [
        output
        for h in store().handoffs_for_run(run_id, role="synthesizer")
        if h.node_id
        and h.node_id.endswith("/n.1")
        and iteration in (None, h.iteration)
        and (output := h.output_as(StoredSynthesis)) is not None
    ]
    return output


def final(run_id: str) -> StoredSynthesis:
    s = store()
    output = s.get_handoff(s.get_run(run_id).result_handoff_id or "").output_as(StoredSynthesis)
    assert output is not None
    return output


async def test_criteria_code_can_read_are_judged_and_an_unmet_one_is_a_gap_of_the_run_capping_its_confidence() -> (
    None
):
    spec = {
        "questions": [QUESTION],
        "acceptance_criteria": ["cites at least 2 sources", "mentions 'photovoltaic'"],
    }
    _, run_id = await run_leaf(spec, [SOLAR])
    checks = leaf_synthesis(run_id).acceptance
    assert [(c.criterion, c.met, c.by) for c in checks] == [
        ("cites at least 2 sources", False, "code"),
        ("mentions 'photovoltaic'", True, "code"),
    ]
    assert checks[0].evidence == "1 sources behind the cited verified facts"
    # The scripted synthesizers said "high"; the run's report (the root's) says what was unmet, and is capped.
    result = final(run_id)
    assert (
        "Acceptance criterion unmet: 'cites at least 2 sources': 1 sources behind the cited verified facts"
        in (result.gaps)
    )
    assert result.confidence.level == "medium"


async def test_a_criterion_code_cannot_read_is_put_to_the_model_and_its_verdict_recorded() -> None:
    criterion = "explains why panel prices fell"

    def script(request: ModelRequest[Any]) -> Any:
        output = team_script(request)
        if isinstance(request.payload, SynthesisPayload) and request.payload.task_specs:
            assert isinstance(output, SynthesisOutput)
            output.criteria = [CriterionVerdict(index=0, met=False, evidence="the facts give no cause")]
        return output

    model, run_id = await run_leaf(
        {"questions": [QUESTION], "acceptance_criteria": [criterion]}, [SOLAR], script
    )
    [asked] = [call for call in model.calls_for("synthesizer") if "Acceptance criteria" in call.prompt]
    assert f"C0: {criterion}" in asked.prompt
    [check] = leaf_synthesis(run_id).acceptance
    assert (check.met, check.by, check.evidence) == (False, "model", "the facts give no cause")
    assert f"Acceptance criterion unmet: {criterion!r}: the facts give no cause" in final(run_id).gaps


async def test_a_criterion_nobody_judged_is_recorded_unchecked_and_named_in_the_gaps() -> None:
    criterion = "explains why panel prices fell"
    _, run_id = await run_leaf({"questions": [QUESTION], "acceptance_criteria": [criterion]}, [SOLAR])
    [check] = leaf_synthesis(run_id).acceptance
    assert (check.met, check.by) == (None, "unchecked")
    assert any(
        gap.startswith(f"Acceptance criterion not checked: {criterion!r}") for gap in final(run_id).gaps
    )


async def test_a_table_asked_for_is_given_when_the_synthesis_wrote_none() -> None:
    spec = {"questions": [QUESTION], "expected_format": "a table of findings"}
    model, run_id = await run_leaf(spec, [SOLAR])
    assert any(
        "Expected format of the report: a table of findings" in c.prompt
        for c in model.calls_for("synthesizer")
    )
    report = leaf_synthesis(run_id).report
    table = report.split("## In the expected format (a table of findings)", 1)[1]
    header, rule, *rows = table.strip().splitlines()
    assert (header, rule) == ("| Finding | Facts |", "|---|---|")
    # One row per key finding, each citing its facts.
    assert len(rows) == 3 and all(re.fullmatch(r"\| [^|]+ \| \[F\d+\] \|", row) for row in rows)
    assert any(row.startswith("| Solar panels convert sunlight into electricity") for row in rows)


async def test_a_specs_source_budget_limits_the_sources_asked_and_says_so() -> None:
    spec = {"questions": [QUESTION], "budget": {"max_sources": 1}}
    model, run_id = await run_leaf(spec, [SOLAR, WIND, HYDRO])
    asked = [
        call.payload.source_text
        for call in model.calls_for("extractor")
        if isinstance(call.payload, ExtractorPayload)
    ]
    assert asked == [SOLAR]
    gaps = final(run_id).gaps
    assert (
        sum("Task spec 1 not asked of" in gap and "budget of 1 sources was reached" in gap for gap in gaps)
        == 2
    )


async def test_a_specs_token_budget_stops_its_extractions_once_spent() -> None:
    spec = {"questions": [QUESTION], "budget": {"max_tokens": 1}}
    model, run_id = await run_leaf(spec, [SOLAR, WIND, HYDRO])
    assert len(model.calls_for("extractor")) == 1  # one at a time: the first spent the spec's budget
    assert any("Task spec 1 not asked of" in gap and "tokens spent" in gap for gap in final(run_id).gaps)


async def test_a_spec_asking_for_a_summary_keeps_its_extractions_concise() -> None:
    sentences = [f"Panel fact number {n} says panels turn light into power at {n} percent." for n in range(8)]

    def script(request: ModelRequest[Any]) -> Any:
        if isinstance(request.payload, ExtractorPayload):
            facts = [
                ClaimedFact(statement=s, quote=s, question_index=0, confidence=0.5 + n / 20)
                for n, s in enumerate(sentences)
            ]
            return ExtractorOutput(facts=facts, confidence=Confidence(level="high", reasoning="scripted"))
        return team_script(request)

    spec = {"questions": [QUESTION], "expected_format": "a concise summary"}
    _, run_id = await run_leaf(spec, [" ".join(sentences)], script)
    [handoff] = store().handoffs_for_run(run_id, role="extractor")
    output = handoff.output_as(StoredExtraction)
    assert output is not None and len(output.fact_ids) == 5
    kept = store().get_facts(output.fact_ids)
    assert sorted(fact.statement for fact in kept) == sorted(sentences[3:])  # the five most confident
    assert "summary mode: 5 of 8 facts kept" in handoff.summary[0]


EIFFEL = "The Eiffel Tower was completed in 1889 for the World's Fair in Paris."
METRO = "The Paris Metro opened its first line in July 1900 during the World's Fair."
BUILT = "When was the Eiffel Tower built?"


async def test_an_extractor_is_told_what_other_sources_established_and_what_its_findings_must_meet() -> None:
    model = ScriptedModel(team_script)
    spec = {"questions": [BUILT], "acceptance_criteria": ["mentions 'Paris'"], "expected_format": "a list"}
    async with Client(create_server(model=model)) as client:
        for text, specs in ((EIFFEL, []), (METRO, [spec])):
            leaf = {
                "kind": "leaf",
                "title": text[:20],
                "questions": [BUILT],
                "sources": [text],
                "task_specs": specs,
            }
            plan = {"root": {"kind": "executor", "title": "Paris", "children": [leaf]}}
            planned = await client.call_tool("plan_research", {"query": BUILT, "suggested_plan": plan})
            await until_finished(
                client,
                await client.call_tool(
                    "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
                ),
            )
    first, second = [call.payload for call in model.calls_for("extractor")]
    assert isinstance(first, ExtractorPayload) and isinstance(second, ExtractorPayload)
    assert first.context == ""  # nothing known yet, nothing to meet
    assert second.context == (
        "Already known (look for what adds to it or contradicts it):\n"
        f"- {EIFFEL}\n"
        "The findings must meet:\n- mentions 'Paris'"
    )


async def test_a_phase_iteration_tells_each_extractor_what_the_synthesis_established_and_what_to_meet() -> (
    None
):
    spec = {"questions": [QUESTION], "acceptance_criteria": ["mentions 'geothermal'"]}
    leaf = {
        "kind": "leaf",
        "title": "panels",
        "questions": [QUESTION],
        "sources": [SOLAR],
        "task_specs": [spec],
    }
    phase = {"name": "coverage", "criteria": {"themes": ["geothermal"]}, "max_iterations": 2}
    plan = {"root": {"kind": "executor", "title": "energy", "children": [leaf], "phases": [phase]}}
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        planned = await client.call_tool("plan_research", {"query": "energy", "suggested_plan": plan})
        await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )
    first, again = [call.payload for call in model.calls_for("extractor")]
    assert isinstance(first, ExtractorPayload) and isinstance(again, ExtractorPayload)
    assert first.context == "The findings must meet:\n- mentions 'geothermal'"
    known, must = again.context.split("\nThe findings must meet:\n")
    assert must == "- mentions 'geothermal'"
    # The synthesis so far (the scripted one finds each fact a key finding), without its citations.
    assert known.startswith("Already known (look for what adds to it or contradicts it):\n- ")
    assert "Solar panels convert sunlight into electricity using photovoltaic cells" in known
    assert "[F" not in known


PEROVSKITE = (
    "Perovskite solar cells reached 26 percent efficiency in laboratory tests in 2024. "
    "Perovskite panels are cheaper to make than silicon panels."
)


async def run_phase(
    folder: Path, criterion: str, script: Any = team_script, status: str = "done"
) -> tuple[str, str]:
    """A leaf reading the solar note, with `criterion`, under a phase whose theme only the perovskite
    note covers (so the phase iterates, and the iteration adds that note); the run id and its gaps."""
    (folder / "solar.txt").write_text(SOLAR, "utf-8")
    (folder / "perovskite.txt").write_text(PEROVSKITE, "utf-8")
    leaf = {
        "kind": "leaf",
        "title": "panels",
        "questions": [QUESTION],
        "sources": [str(folder / "solar.txt")],
        "task_specs": [{"questions": [QUESTION], "acceptance_criteria": [criterion]}],
    }
    phase = {"name": "coverage", "criteria": {"themes": ["perovskite"]}, "max_iterations": 2}
    plan = {"root": {"kind": "executor", "title": "energy", "children": [leaf], "phases": [phase]}}
    async with Client(create_server(model=ScriptedModel(script))) as client:
        assert (await wait_until_indexed(client))["phase"] == "ready"
        planned = await client.call_tool("plan_research", {"query": "energy", "suggested_plan": plan})
        run = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )
        assert run.structured_content["status"] == status, run.structured_content
        run_id = run.structured_content["id"]
        gaps = await client.call_tool("report_results", {"id": run_id, "view": "gaps"})
    return run_id, gaps.structured_content["text"]


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))
    return folder


async def test_a_criterion_unmet_on_the_first_reading_is_asked_and_judged_met_after_an_iteration_adds_a_source(
    notes: Path,
) -> None:
    criterion = "cites at least 2 sources"
    run_id, gaps = await run_phase(notes, criterion)

    # Unmet on the first reading, and asked in the iteration.
    assert [(c.criterion, c.met) for c in leaf_synthesis(run_id, iteration=0).acceptance] == [
        (criterion, False)
    ]
    [delta] = store().events_for_run(run_id, IterationDone)
    assert delta.changed["criteria_asked"] == [f"{QUESTION} (to meet: {criterion})"]
    # Judged again on the leaf's new evidence, recorded met; the run's report no longer says unmet.
    [judged] = store().events_for_run(run_id, AcceptanceRejudged)
    assert [(c.criterion, c.met) for c in judged.after] == [(criterion, True)]
    again = store().get_handoff(judged.handoff_id).output_as(StoredSynthesis)
    assert again is not None and [(c.met, c.by) for c in again.acceptance] == [(True, "code")]
    assert again.acceptance[0].evidence == "2 sources behind the cited verified facts"
    assert not [gap for gap in final(run_id).gaps if criterion in gap]
    assert criterion not in gaps
    # The run's tree names the leaf's synthesis judged again, where the manager can read it.
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        tree = await client.call_tool("report_results", {"id": run_id, "view": "tree"})
    [line] = [x for x in tree.structured_content["text"].splitlines() if "leaf: panels" in x]
    assert line.split("[", 1)[1].startswith("done h_")
    assert f"; criteria judged again in {judged.handoff_id}]" in line


async def test_a_leaf_whose_synthesis_fails_when_judged_again_is_named_and_the_phase_reads_its_new_extractions(
    notes: Path,
) -> None:
    def script(request: ModelRequest[Any]) -> Any:
        payload = request.payload
        if (
            isinstance(payload, SynthesisPayload)
            and payload.task_specs
            and len({f.source_id for f in payload.facts}) > 1
        ):
            raise ModelError("the model is unavailable")
        return team_script(request)

    # Partial: a part failed, named in the gaps (execute_plan(run_id, retry=true) runs it again).
    run_id, gaps = await run_phase(notes, "cites at least 2 sources", script, status="partial")

    assert not store().events_for_run(run_id, AcceptanceRejudged)
    assert "The acceptance criteria of 'panels' were not judged again in iteration 1" in gaps
    facts = {f.statement for f in store().get_facts(final(run_id).fact_ids)}
    assert any("Perovskite" in statement for statement in facts)  # the new extractions, read as they are
