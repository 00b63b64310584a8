"""Confidence computed from the evidence, whatever the synthesizer says, end to end through the run
engine with a scripted model (which always says "high" over three facts or more)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from research_mcp.core.config import Settings
from research_mcp.core.contracts import ClaimedFact, Confidence, ExtractorOutput, FollowUpQuestion
from research_mcp.core.role_inputs import ExtractorPayload, SynthesisPayload
from research_mcp.llm.base import ModelRequest
from research_mcp.llm.scripted import ScriptedModel, team_script
from research_mcp.server.app import create_server
from research_mcp.storage.outputs import StoredSynthesis
from research_mcp.storage.store import Store
from tests.server.waiting import until_finished

GPL = "What does the GPL-3 require when distributing modified versions?"
SEE = "See the GNU Lesser General Public License for more details."
COPY = "You should have received a copy of the GNU General Public License along with this program."
CONVEY = (
    "You may convey modified versions if the work carries prominent notices stating that you modified it."
)
MODIFY = "You may modify your copy and distribute such modifications under the terms of section 1."
FSF = "The Free Software Foundation publishes this License text."
LICENSE_A = f"The GNU GPL-3. {SEE} {COPY} {FSF} {CONVEY}"
LICENSE_B = f"GPL-3, the text. {COPY} {SEE} {FSF} The license text follows. {CONVEY}"


def scripted(statements: list[str], confidence: float = 0.9, **extra: Any) -> Any:
    """An extractor quoting `statements` as answers to the first question; the team's synthesizer."""

    def script(request: ModelRequest[Any]) -> Any:
        if not isinstance(request.payload, ExtractorPayload):
            return team_script(request)
        facts = [
            ClaimedFact(statement=s, quote=s, question_index=0, confidence=confidence)
            for s in statements
            if s in request.payload.source_text
        ]
        return ExtractorOutput(
            facts=facts, confidence=Confidence(level="high", reasoning="scripted"), **extra
        )

    return script


async def run(
    question: str | list[str], sources: list[str], script: Any
) -> tuple[ScriptedModel | None, StoredSynthesis]:
    """The run's result over `sources` given inline; `script` None: the no-model backend."""
    model = ScriptedModel(script) if script is not None else None
    questions = [question] if isinstance(question, str) else question
    leaf = {"kind": "leaf", "title": "licence", "questions": questions, "sources": sources}
    plan = {"root": {"kind": "executor", "title": "licences", "children": [leaf]}}
    async with Client(create_server(model=model)) as client:
        planned = await client.call_tool("plan_research", {"query": questions[0], "suggested_plan": plan})
        done = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )
        assert done.structured_content["status"] == "done", done.structured_content
    store = Store(Settings().database_path)
    output = store.get_handoff(store.get_run(done.structured_content["id"]).result_handoff_id or "").output
    assert isinstance(output, StoredSynthesis)
    return model, output


async def test_corroborated_evidence_that_bears_on_the_question_keeps_the_synthesizers_high() -> None:
    _, output = await run(GPL, [LICENSE_A, LICENSE_B], scripted([SEE, COPY, CONVEY]))
    assert output.confidence.level == "high"
    assert output.confidence_reasons == ["scripted"]
    assert output.confidence_caps == []


async def test_a_single_source_caps_confidence_at_medium() -> None:
    _, output = await run(GPL, [LICENSE_A], scripted([SEE, COPY, CONVEY]))
    assert output.confidence.level == "medium"
    # The rule found by its name, its words said to a person once.
    [cap] = [cap for cap in output.confidence_caps if cap.rule == "corroboration"]
    assert (cap.level, cap.reason) == ("medium", "0 of 1 answered questions backed by two or more sources")
    assert cap.reason in " ".join(output.confidence_reasons)


async def test_what_sources_leave_open_reaches_the_synthesizer_and_the_runs_gaps_and_followups() -> None:
    follow_up = "Does the GPL-3 apply to software offered over a network?"
    script = scripted(
        [CONVEY],
        source_identified_gaps=[
            "It does not say what distributing modified versions over a network requires."
        ],
        follow_up_questions=[FollowUpQuestion(question=follow_up, confidence=0.3, rationale="not covered")],
    )

    def low(request: ModelRequest[Any]) -> Any:  # low confidence: the trigger for insights
        output = script(request)
        if isinstance(output, ExtractorOutput):
            output.confidence = Confidence(level="low", reasoning="scripted")
        return output

    model, output = await run(GPL, [LICENSE_A], low)
    [leaf] = [
        c
        for c in model.calls_for("synthesizer")
        if isinstance(c.payload, SynthesisPayload) and c.payload.title == "licence"
    ]
    assert isinstance(leaf.payload, SynthesisPayload)
    assert [(i.kind, i.text) for i in leaf.payload.insights] == [
        ("gap", "It does not say what distributing modified versions over a network requires."),
        ("follow_up", follow_up),
    ]
    assert (
        "names a gap: It does not say what distributing modified versions over a network requires."
        in leaf.prompt
    )
    # The run's result (the root's synthesis, a model that said no gap and no follow-up) carries them.
    source = leaf.payload.insights[0].source_id
    assert (
        f"Source S{source} names a gap: It does not say what distributing modified versions over a network requires."
        in output.gaps
    )
    assert follow_up in output.suggested_followups


PROTECTED = "What does the Protected field of a dpkg package do?"
ELSEWHERE = [  # "dpkg" and "package", never the Protected field
    "For more information, please see dpkg --print-avail <package> or apt-cache show <package>.",
    "Each dpkg package lists the files it installs in the dpkg database.",
    "The dpkg tool unpacks a package archive and runs its maintainer scripts.",
]
ON_IT = [
    "A package with the Protected field set is one dpkg refuses to remove without a force option.",
    "The Protected field marks a dpkg package the system needs to boot.",
    "Removing a package whose Protected field says yes needs the dpkg option --force-remove-protected.",
]


LIBYAML = "What does python3-yaml's README say about installing the LibYAML bindings?"
BINDINGS = [
    "By default, the setup.py script checks whether LibYAML is installed and builds its bindings.",
    "To skip building the LibYAML bindings, use --without-libyaml.",
    "With the LibYAML bindings installed, a fast parser and emitter can be used.",
]


async def test_a_question_a_phase_iteration_answered_is_no_longer_a_gap_of_the_run() -> None:
    first, second = "What does the GPL-3 require of modified versions?", "When was the GPL-3 published?"
    published = "The GPL-3 was published on 29 June 2007 by the Free Software Foundation."
    text = f"The GNU GPL-3. {CONVEY} {published}"

    def script(request: ModelRequest[Any]) -> Any:
        payload = request.payload
        if not isinstance(payload, ExtractorPayload):
            return team_script(request)
        facts = [ClaimedFact(statement=CONVEY, quote=CONVEY, question_index=0)]
        if request is not model.calls_for("extractor")[0]:  # asked again: this time it finds the date
            facts.append(ClaimedFact(statement=published, quote=published, question_index=1))
        return ExtractorOutput(facts=facts, confidence=Confidence(level="high", reasoning="scripted"))

    model = ScriptedModel(script)
    leaf = {"kind": "leaf", "title": "licence", "questions": [first, second], "sources": [text]}
    phase = {"name": "coverage", "criteria": {"themes": ["wave power"]}, "max_iterations": 2}
    plan = {"root": {"kind": "executor", "title": "licences", "children": [leaf], "phases": [phase]}}
    async with Client(create_server(model=model)) as client:
        planned = await client.call_tool("plan_research", {"query": first, "suggested_plan": plan})
        done = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )
    store = Store(Settings().database_path)
    leaf_gaps = [
        gap
        for h in store.handoffs_for_run(done.structured_content["id"], role="synthesizer")
        if h.node_id and h.node_id.endswith("/n.1") and (o := h.output_as(StoredSynthesis)) is not None
        for gap in o.gaps
    ]
    assert f"No verified fact was found for: {second}" in leaf_gaps  # the leaf's first reading missed it
    output = store.get_handoff(store.get_run(done.structured_content["id"]).result_handoff_id or "").output
    assert isinstance(output, StoredSynthesis)
    assert not any(second in gap for gap in output.gaps), output.gaps


async def test_a_question_no_fact_answers_is_one_gap_not_two(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RESEARCH_MCP_MODEL", "extractive")
    works, unsupported = "How does fakeroot work?", "What does fakeroot not support?"
    note = "fakeroot runs a command in an environment where it appears to have root privileges for files."
    _, output = await run([works, unsupported], [note], None)
    # A question left without a fact of its own has its gap said once, not in two wordings.
    counts = [len([gap for gap in output.gaps if q in gap]) for q in (works, unsupported)]
    assert max(counts) == 1 and counts[1] == 1, output.gaps


async def test_a_question_nothing_answers_is_not_suggested_again_as_its_own_follow_up() -> None:
    # The no-model synthesizer turned the unanswered question into the run's follow-up: asked again,
    # the same question is no way forward for the person reading the report.
    question = "How many cores does the Raspberry Pi 5 have?"
    async with Client(create_server(model=None)) as client:
        planned = await client.call_tool("plan_research", {"query": question})
        done = await until_finished(
            client,
            await client.call_tool(
                "execute_plan", {"plan_id": planned.structured_content["id"], "wait_seconds": 30}
            ),
        )
        followups = await client.call_tool(
            "report_results", {"id": done.structured_content["id"], "view": "followups"}
        )
    assert done.structured_content["status"] == "no_sources"
    assert question not in followups.content[0].text  # type: ignore[union-attr]
