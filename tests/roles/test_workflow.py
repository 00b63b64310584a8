"""The research workflow's rules, each through the MCP tools with a scripted model."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import (
    ClaimedFact,
    Confidence,
    ExtractorOutput,
    PlannerOutput,
    PlanNode,
    SynthesisOutput,
)
from research_mcp.core.role_inputs import ExtractorPayload, PlannerInput, SynthesisInput, SynthesisPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.storage.events import IterationDone
from research_mcp.storage.outputs import StoredExtraction, StoredSynthesis
from research_mcp.storage.store import Store
from tests.server.indexing import wait_until_indexed
from tests.server.waiting import until_finished

TEXT_A = (
    "Solar panels convert sunlight into electricity using photovoltaic cells. "
    "Typical panel efficiency is between 18 and 22 percent in 2024. "
    "Panel prices fell by about ninety percent between 2010 and 2020."
)
TEXT_B = (
    "Wind turbines convert the kinetic energy of wind into electricity. "
    "Offshore wind farms have capacity factors above 40 percent. "
    "Modern turbines have rotor diameters of more than 150 metres."
)


def leaf(title: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "leaf",
        "title": title,
        "questions": [f"What is known about {title}?"],
        "sources": [text],
        **extra,
    }


def plan_of(*children: dict[str, Any], **root: Any) -> dict[str, Any]:
    return {"root": {"kind": "executor", "title": "energy", "children": list(children), **root}}


async def run_plan(client: Client, suggested: dict[str, Any], **planned: Any) -> dict[str, Any]:
    """Plan (with the run's budget, if given: a plan's budget is the run's) and run it, once the
    corpus (if any) is indexed: a search made while notes are still being read finds fewer of them."""
    if os.environ.get("RESEARCH_MCP_CORPUS"):
        await wait_until_indexed(client)
    plan = await client.call_tool(
        "plan_research", {"query": "energy sources", "suggested_plan": suggested, **planned}
    )
    assert not plan.is_error, plan.content
    run = await until_finished(
        client,
        await client.call_tool(
            "execute_plan", {"plan_id": plan.structured_content["id"], "wait_seconds": 20}
        ),
    )
    assert not run.is_error, run.content
    return dict(run.structured_content)


def store() -> Store:
    return Store(Settings().database_path)


def four_levels() -> PlanNode:
    node = PlanNode(kind="leaf", title="deep", questions=["what is deep?"])
    for level in range(4):
        node = PlanNode(kind="executor", title=f"level {4 - level}", children=[node])
    return node


async def test_a_suggested_four_level_plan_is_refused_with_the_reason() -> None:
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        result = await client.call_tool(
            "plan_research",
            {"query": "deep question", "suggested_plan": PlannerOutput(root=four_levels()).model_dump()},
        )
    assert result.is_error
    assert "executor level 4" in result.content[0].text


async def test_an_infeasible_model_plan_is_repaired_with_its_violations_fed_back() -> None:
    def script(request: ModelRequest[Any]) -> Any:
        assert isinstance(request.payload, PlannerInput)
        if not request.payload.violations:
            return PlannerOutput(root=four_levels())
        assert any("executor level 4" in v for v in request.payload.violations)
        return team_script(request)

    model = ScriptedModel(script)
    async with Client(create_server(model=model)) as client:
        result = await client.call_tool("plan_research", {"query": "deep question"})
    assert result.structured_content["status"] == "feasible"
    assert len(model.calls_for("planner")) == 2


async def test_a_plan_that_stays_infeasible_is_returned_as_infeasible_with_reasons() -> None:
    model = ScriptedModel(lambda request: PlannerOutput(root=four_levels()))
    async with Client(create_server(model=model)) as client:
        result = await client.call_tool("plan_research", {"query": "deep question"})
        assert result.structured_content["status"] == "infeasible"
        assert "executor level 4" in result.structured_content["summary"][0]
        refused = await client.call_tool("execute_plan", {"plan_id": result.structured_content["id"]})
    assert refused.is_error and "infeasible" in refused.content[0].text
    assert len(model.calls_for("planner")) == 3  # the first answer and two repairs


async def test_a_task_spec_reaches_the_extractor_unchanged() -> None:
    spec = {
        "questions": ["What is the panel efficiency?"],
        "expected_format": "a percentage range",
        "acceptance_criteria": ["cites a year"],
        "priority": 1,
        "discovery_intense": False,
    }
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        await run_plan(client, plan_of(leaf("solar", TEXT_A, task_specs=[spec])))
    (call,) = model.calls_for("extractor")
    assert isinstance(call.payload, ExtractorPayload)
    assert call.payload.task_spec is not None
    assert call.payload.task_spec.model_dump(exclude={"budget"}) == spec
    assert call.payload.questions == spec["questions"]


async def test_an_unmet_phase_criterion_iterates_until_max_iterations_and_logs_each_delta() -> None:
    model = ScriptedModel(team_script)
    phase = {"name": "coverage", "criteria": {"themes": ["geothermal"]}, "max_iterations": 3}
    async with Client(create_server(model=model)) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A), leaf("wind", TEXT_B), phases=[phase]))
    assert run["status"] == "done"
    events = store().events_for_run(run["id"])
    iterations = [e for e in events if isinstance(e, IterationDone)]
    assert [data.iteration for data in iterations] == [1, 2]
    assert all(data.why == ["theme:geothermal"] for data in iterations)
    assert all(data.criteria_after == {"theme:geothermal": False} for data in iterations)
    assert any(e.kind == "phase_unmet" and "max_iterations=3" in e.message for e in events)
    # Re-synthesis happens at the same level: no node was added to the tree.
    assert len(store().nodes_for_run(run["id"])) == 3


async def test_a_phase_left_unmet_names_the_criterion_in_the_gaps_and_caps_the_confidence() -> None:
    # The scripted synthesizer says "high" for three facts or more; no criterion met caps it at low.
    phase = {"name": "coverage", "criteria": {"themes": ["geothermal"]}, "max_iterations": 2}
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A), leaf("wind", TEXT_B), phases=[phase]))
        gaps = await client.call_tool("report_results", {"id": run["id"], "view": "gaps"})
        confidence = await client.call_tool("report_results", {"id": run["id"], "view": "confidence"})
    assert run["status"] == "done"
    assert run["metrics"]["criteria_unmet"] == 1
    assert "1 phase criteria unmet: coverage: theme:geothermal" in " ".join(run["summary"])
    assert "confidence low" in " ".join(run["summary"])
    assert (
        "Phase 'coverage' criterion unmet: no verified finding of the report covers 'geothermal'"
        in gaps.structured_content["text"]
    )
    text = confidence.structured_content["text"]
    # One plain sentence (the rule that capped it stays in the structured output's reasons).
    assert text.startswith("low: ") and "1 criterion of the plan not met; so confidence is low" in text


def geothermal_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A corpus of six notes a widened leaf finds by searching for the theme "geothermal"."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for number in range(6):
        (folder / f"geothermal {number}.txt").write_text(
            f"Geothermal plant number {number} draws heat from hot rock {number + 2} kilometres down.",
            encoding="utf-8",
        )
    monkeypatch.setenv("RESEARCH_MCP_CORPUS", str(folder))


async def test_an_unmet_theme_asks_a_new_question_whose_answer_makes_the_kept_synthesis_meet_the_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    geothermal_notes(tmp_path, monkeypatch)
    phase = {"name": "coverage", "criteria": {"themes": ["geothermal"]}, "max_iterations": 3}
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A), phases=[phase]))
        report = await client.call_tool("report_results", {"id": run["id"], "view": "report"})
    events = store().events_for_run(run["id"])
    [delta] = [e for e in events if isinstance(e, IterationDone)]
    # The unmet theme became the iteration's question, its answer met the gate, and that synthesis
    # (not the first) is the run's.
    assert delta.changed["questions_added"] == ["geothermal"]
    assert (delta.criteria_before, delta.criteria_after) == (
        {"theme:geothermal": False},
        {"theme:geothermal": True},
    )
    assert delta.kept_iteration == 1
    assert "phase_met" in [e.kind for e in events]
    assert "Geothermal plant" in report.structured_content["text"]
    assert run["metrics"].get("criteria_unmet", 0) == 0


async def test_a_phase_keeps_its_best_synthesis_not_its_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first synthesis covers "electricity"; the re-syntheses, over new sources, cover nothing.
    geothermal_notes(tmp_path, monkeypatch)
    calls = 0

    def script(request: ModelRequest[Any]) -> Any:
        nonlocal calls
        if isinstance(request.payload, SynthesisPayload) and request.payload.title == "energy":
            calls += 1
            if calls > 1:
                return SynthesisOutput(
                    report="# energy\n\nNothing new.",
                    confidence=Confidence(level="high", reasoning="scripted"),
                )
        return team_script(request)

    phase = {"name": "coverage", "criteria": {"themes": ["electricity", "geothermal"]}, "max_iterations": 3}
    async with Client(create_server(model=ScriptedModel(script))) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A), phases=[phase]))
        report = await client.call_tool("report_results", {"id": run["id"], "view": "report"})
    assert calls == 3  # the first synthesis and two iterations
    events = store().events_for_run(run["id"])
    assert [e.kept_iteration for e in events if isinstance(e, IterationDone)] == [0, 0]
    assert any(e.kind == "phase_unmet" and "kept the synthesis of iteration 0" in e.message for e in events)
    assert "electricity" in report.structured_content["text"]
    # One criterion of two was met: the confidence is capped at medium, not low.
    assert "confidence medium" in " ".join(run["summary"])


async def test_a_phase_stops_when_its_own_token_budget_is_spent_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    geothermal_notes(tmp_path, monkeypatch)
    model = ScriptedModel(team_script)
    phase = {
        "name": "coverage",
        "criteria": {"themes": ["tidal"]},
        "max_iterations": 5,
        "budget": {"max_tokens": 1},
    }
    async with Client(create_server(model=model)) as client:
        solar = leaf("solar", TEXT_A, search_queries=["geothermal plant"])
        run = await run_plan(client, plan_of(solar, phases=[phase]))
        gaps = await client.call_tool("report_results", {"id": run["id"], "view": "gaps"})
    assert run["status"] == "done"  # a phase budget stops the phase, not the run
    # The first iteration's extractions spent the phase's single token: it stops before re-synthesizing.
    extractions = store().handoffs_for_run(run["id"], role="extractor")
    assert any(handoff.iteration == 1 for handoff in extractions)
    syntheses = store().handoffs_for_run(run["id"], role="synthesizer")
    assert not any(e.kind == "iteration" for e in store().events_for_run(run["id"]))
    assert all(handoff.iteration == 0 for handoff in syntheses)
    assert "Phase 'coverage' budget spent: " in gaps.structured_content["text"]
    assert "of its 1 tokens spent" in gaps.structured_content["text"]


async def test_a_phase_reads_no_more_sources_than_its_budget_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    geothermal_notes(tmp_path, monkeypatch)
    phase = {
        "name": "coverage",
        "criteria": {"themes": ["tidal"]},
        "max_iterations": 4,
        "budget": {"max_sources": 2},
    }
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        solar = leaf("solar", TEXT_A, search_queries=["geothermal plant"])
        run = await run_plan(client, plan_of(solar, phases=[phase]))
        gaps = await client.call_tool("report_results", {"id": run["id"], "view": "gaps"})
    iterations = store().events_for_run(run["id"], IterationDone)
    added = [source for data in iterations for source in data.changed["sources_added"]]
    assert len(added) == 2  # two of the six geothermal notes, then the phase stops
    assert "Phase 'coverage' budget spent: its 2 sources read" in gaps.structured_content["text"]


async def test_a_met_phase_criterion_stops_iterating() -> None:
    phase = {"name": "coverage", "criteria": {"themes": ["electricity"]}, "max_iterations": 3}
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A), phases=[phase]))
    kinds = [e.kind for e in store().events_for_run(run["id"])]
    assert "phase_met" in kinds and "iteration" not in kinds


async def test_a_budget_stop_yields_budget_exhausted_and_a_partial_report() -> None:
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        run = await run_plan(
            client,
            plan_of(leaf("solar", TEXT_A), leaf("wind", TEXT_B)),
            budget={"max_tokens": 700},
        )
        assert run["status"] == "budget_exhausted"
        summary = await client.call_tool("report_results", {"id": run["id"], "view": "report"})
    assert "Partial report" in summary.structured_content["text"]
    assert "Budget exhausted" in summary.structured_content["text"]


async def test_a_budget_stop_after_an_extraction_keeps_its_verified_facts_in_the_partial_report() -> None:
    # The extraction spends past the token limit; the synthesis that would use it is never asked for.
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A)), budget={"max_tokens": 1})
        assert run["status"] == "budget_exhausted"
        report = await client.call_tool("report_results", {"id": run["id"], "view": "report"})
    text = report.structured_content["text"]
    extractions = [h.id for h in store().handoffs_for_run(run["id"], role="extractor")]
    verified = [fact for fact in store().facts_for_handoffs(extractions) if fact.verified]
    assert verified
    assert "Facts found before the stop (not yet synthesized)" in text
    assert all(f"[F{fact.id}]" in text for fact in verified)


def inventing_extractor(request: ModelRequest[Any]) -> Any:
    if isinstance(request.payload, ExtractorPayload):
        return ExtractorOutput(
            facts=[
                ClaimedFact(
                    statement="Efficiency is 18-22%.",
                    quote="Typical panel efficiency is between 18 and 22 percent",
                ),
                ClaimedFact(statement="Panels last forever.", quote="Solar panels never wear out at all."),
            ],
            confidence=Confidence(level="medium", reasoning="two claims"),
        )
    return team_script(request)


async def test_an_invented_quote_is_marked_unverified_and_never_cited_as_verified() -> None:
    async with Client(create_server(model=ScriptedModel(inventing_extractor))) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A)))
        facts = await client.call_tool("report_results", {"id": run["id"], "view": "facts"})
        report = await client.call_tool("report_results", {"id": run["id"], "view": "report"})
    text = facts.structured_content["text"]
    assert "[verified]" in text and "[UNVERIFIED]" in text
    invented = next(line for line in text.splitlines() if "never wear out" in line)
    invented_id = invented.split()[0]
    assert f"[{invented_id}]" not in report.structured_content["text"]
    assert f"[{invented_id}, unverified]" in report.structured_content["text"]
    # Every citation of the invented fact, wherever the report carries it, is counted as unverified.
    unverified = report.structured_content["text"].count(f"[{invented_id}, unverified]")
    assert run["metrics"]["citations_made"] - run["metrics"]["citations_verified"] == unverified


async def test_a_citation_to_a_fact_outside_the_inputs_is_dropped_and_counted() -> None:
    def script(request: ModelRequest[Any]) -> Any:
        if isinstance(request.payload, SynthesisPayload):
            known = request.payload.facts[0].id
            return SynthesisOutput(
                report=f"Solar is efficient [F{known}] and cheap [F99999].",
                confidence=Confidence(level="medium", reasoning="x"),
            )
        return team_script(request)

    async with Client(create_server(model=ScriptedModel(script))) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A)))
        report = await client.call_tool("report_results", {"id": run["id"], "view": "report"})
    assert "[F99999]" not in report.structured_content["text"]
    root = store().get_handoff(store().get_run(run["id"]).result_handoff_id or "")
    assert isinstance(root.output, StoredSynthesis) and root.output.citations.dropped == 1


@pytest.mark.parametrize(
    ("text", "level", "discovery", "fires"),
    [
        (TEXT_A, "high", False, False),
        (TEXT_A, "low", False, True),
        (TEXT_A + "\n\nLimitations\nThe data covers only 2024.", "high", False, True),
        (TEXT_A, "high", True, True),
    ],
    ids=["no trigger", "low confidence", "limitations section", "discovery intense"],
)
async def test_insights_appear_exactly_when_their_triggers_fire(
    text: str, level: str, discovery: bool, fires: bool
) -> None:
    def script(request: ModelRequest[Any]) -> Any:
        return ExtractorOutput.model_validate(
            {
                "facts": [
                    {"statement": "Prices fell.", "quote": "Panel prices fell by about ninety percent"}
                ],
                "confidence": {"level": level, "reasoning": "scripted"},
                "follow_up_questions": [
                    {"question": "Why?", "confidence": 0.5, "rationale": "cause unknown"}
                ],
                "source_identified_gaps": ["only one year"],
                "linked_candidate_sources": [{"ref": "https://example.org/report", "context": "cited"}],
            }
        )

    spec = {"questions": ["How did prices change?"], "discovery_intense": discovery}
    text += "\n\nThe full report is at https://example.org/report."  # the link the source gives
    async with Client(create_server(model=ScriptedModel(script))) as client:
        result = await client.call_tool(
            "extract_source", {"source": text, "questions": [], "task_spec": spec}
        )
    output = store().get_handoff(result.structured_content["id"]).output
    assert isinstance(output, StoredExtraction)
    assert bool(output.follow_up_questions) is fires
    assert bool(output.source_identified_gaps) is fires
    assert bool(output.linked_candidate_sources) is fires


async def test_scout_sources_never_starts_an_executor() -> None:
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        result = await client.call_tool("scout_sources", {"topic": "wind power"})
    assert not result.is_error, result.content
    assert {call.role for call in model.calls} == {"scout"}
    s = store()
    assert s.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0] == 0
    assert s.db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0


async def test_two_plans_executed_together_end_in_one_synthesis() -> None:
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        ids = []
        for text, title in ((TEXT_A, "solar"), (TEXT_B, "wind")):
            plan = await client.call_tool(
                "plan_research", {"query": f"{title} power", "suggested_plan": plan_of(leaf(title, text))}
            )
            ids.append(plan.structured_content["id"])
        run = await client.call_tool("execute_plan", {"plan_ids": ids, "wait_seconds": 20})
    assert run.structured_content["status"] == "done"
    s = store()
    result = s.get_handoff(s.get_run(run.structured_content["id"]).result_handoff_id or "")
    assert result.node_id == "final"
    assert isinstance(result.input, SynthesisInput)
    assert result.input.questions == ["solar power", "wind power"]
    # one synthesis per leaf, per plan root, and the final one
    assert len(model.calls_for("synthesizer")) == 2 + 2 + 1
    final_inputs = result.input.input_handoffs
    assert {s.get_handoff(h).node_id.split("/")[1] for h in final_inputs} == {"n"}


async def test_a_corroboration_criterion_is_met_by_facts_merged_across_sources() -> None:
    shared = (
        "The Hoover Dam was completed in 1936 on the Colorado River. "
        "The dam generates about 4 billion kilowatt hours of electricity each year. "
        "The reservoir behind the dam is called Lake Mead."
    )
    phase = {"name": "agreement", "criteria": {"min_corroboration": 2}, "max_iterations": 2}
    plan = plan_of(
        leaf("dam report one", shared + " Report one."),
        leaf("dam report two", shared + " Report two, a different page."),
        phases=[phase],
    )
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        run = await run_plan(client, plan)
    events = store().events_for_run(run["id"])
    assert [e.kind for e in events if e.kind.startswith("phase")] == ["phase_met"]


async def test_a_question_no_verified_fact_answers_is_a_gap_and_caps_any_backends_confidence() -> None:
    # The scripted synthesizer says "high" and names no gap; the extractor answers only the first question.
    solar = leaf("solar", TEXT_A, questions=["What is known about solar?", "What does tidal power cost?"])
    async with Client(create_server(model=ScriptedModel(team_script))) as client:
        run = await run_plan(client, plan_of(solar))
        gaps = await client.call_tool("report_results", {"id": run["id"], "view": "gaps"})
        confidence = await client.call_tool("report_results", {"id": run["id"], "view": "confidence"})
    assert "No verified fact was found for: What does tidal power cost?" in gaps.structured_content["text"]
    assert "What is known about solar?" not in gaps.structured_content["text"]
    text = confidence.structured_content["text"]
    assert text.startswith("medium: 1 of 2 questions is answered by") and "; 1 is not answered;" in text


async def test_an_unmet_theme_is_asked_of_the_source_already_read_after_the_task_specs_own_questions() -> (
    None
):
    spec = {"questions": ["What is the panel efficiency?"]}
    phase = {"name": "coverage", "criteria": {"themes": ["geothermal"]}, "max_iterations": 2}
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        await run_plan(client, plan_of(leaf("solar", TEXT_A, task_specs=[spec]), phases=[phase]))
    asked = [call.payload.questions for call in model.calls_for("extractor")]
    assert all(isinstance(call.payload, ExtractorPayload) for call in model.calls_for("extractor"))
    # The first reading asks the spec's question; the iteration asks the same source again, adding the theme.
    assert asked == [
        ["What is the panel efficiency?"],
        ["What is the panel efficiency?", "What about geothermal?"],
    ]


async def test_an_iteration_does_not_read_again_a_source_that_bore_only_weakly_on_the_question() -> None:
    # Its facts are verified but weak (confidence 0.45): a question the corpus cannot answer must
    # not read every unrelated file it touched once more.
    def weak(request: ModelRequest[Any]) -> Any:
        output = team_script(request)
        if isinstance(output, ExtractorOutput):
            facts = [fact.model_copy(update={"confidence": 0.45}) for fact in output.facts]
            return output.model_copy(update={"facts": facts})
        return output

    phase = {"name": "coverage", "criteria": {"themes": ["geothermal"]}, "max_iterations": 2}
    model = ScriptedModel(weak)
    async with Client(create_server(model=model)) as client:
        run = await run_plan(client, plan_of(leaf("solar", TEXT_A), phases=[phase]))
    assert len(model.calls_for("extractor")) == 1  # read once; the iteration found nothing new to read
    [delta] = store().events_for_run(run["id"], IterationDone)
    assert delta.changed["questions_added"] == ["geothermal"]
    assert delta.changed["extractions_added"] == []


async def test_asking_a_source_again_does_not_count_it_twice_against_the_runs_source_budget() -> None:
    phase = {"name": "coverage", "criteria": {"themes": ["geothermal"]}, "max_iterations": 2}
    model = ScriptedModel(team_script)
    async with Client(create_server(model=model)) as client:
        run = await run_plan(
            client, plan_of(leaf("solar", TEXT_A), phases=[phase]), budget={"max_sources": 1}
        )
    assert len(model.calls_for("extractor")) == 2  # read once, asked again with the theme
    assert run["status"] == "done"
