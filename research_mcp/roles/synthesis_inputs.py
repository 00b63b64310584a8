"""What a synthesis reads below it: the facts in scope, the lower reports, and what code carries up
from the handoffs below (failures, the gaps code found, and what the extractors said their sources
leave open: follow-up questions, gaps a source names, sources it cites), each kept with its source."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from research_mcp.answering.questions import reads_as_question
from research_mcp.answering.terms import bears_on
from research_mcp.core.citations import normalize
from research_mcp.core.gaps import Gap
from research_mcp.core.ids import source_label
from research_mcp.core.role_inputs import ChildReport, ExtractorInput, SourceInsight, SynthesisInput
from research_mcp.roles.base import RoleDeps
from research_mcp.storage.models import KnownInsight
from research_mcp.storage.outputs import StoredExtraction, StoredSynthesis

__all__ = ["Inputs", "insight_followups", "known_insights", "read_inputs", "source_gaps"]

#: What the sources leave open, carried up one synthesis (follow-ups, named gaps, cited sources).
MAX_INSIGHTS = 30
#: Gaps the sources name, and follow-ups (questions, sources to read), a synthesis adds by code.
MAX_SOURCE_GAPS = 3
MAX_CODE_FOLLOWUPS = 5
_KINDS: dict[str, Literal["follow_up", "gap", "link"]] = {
    "follow_up": "follow_up",
    "source_gap": "gap",
    "linked_source": "link",
}


class Inputs:
    """What a synthesis reads below it: facts in scope, child reports, and what code carries up
    (failures, the gaps code found, what the sources leave open)."""

    def __init__(self) -> None:
        self.fact_ids: list[int] = []
        self.reports: list[ChildReport] = []
        self.failures: list[str] = []
        self.evidence_gaps: list[Gap] = []
        self.insights: list[SourceInsight] = []
        self.read_refs: set[str] = set()


def read_inputs(deps: RoleDeps, handoff_ids: list[str]) -> Inputs:
    """Everything a synthesis reads from the handoffs below it."""
    store = deps.store
    found = Inputs()
    for handoff_id in handoff_ids:
        handoff = store.get_handoff(handoff_id)
        if handoff.status != "done" or handoff.output is None:
            continue
        # An extraction lists the facts it recorded (or, reused, re-linked); a synthesis its scope.
        found.fact_ids.extend(handoff.fact_ids)
        found.failures.extend(handoff.failures)
        synthesis, asked = handoff.output_as(StoredSynthesis), handoff.input_as(SynthesisInput)
        extraction = handoff.output_as(StoredExtraction)
        if synthesis is not None:
            found.reports.append(
                ChildReport(
                    title=asked.title if asked else "",
                    report=synthesis.report,
                    confidence=synthesis.confidence.level,
                    gaps=synthesis.as_gaps(),
                )
            )
            found.evidence_gaps.extend(synthesis.evidence_gaps)
            found.insights.extend(synthesis.insights)
        elif extraction is not None and extraction.source_id is not None:
            found.insights.extend(_insights_of(extraction, extraction.source_id))
            if (read := handoff.input_as(ExtractorInput)) is not None:
                found.read_refs.add(read.source_ref)
    unique = {(i.source_id, i.kind, normalize(i.text)): i for i in found.insights}
    found.insights = list(unique.values())[:MAX_INSIGHTS]
    return found


def _insights_of(extraction: StoredExtraction, source_id: int) -> list[SourceInsight]:
    """What one extraction said its source leaves open, with that source."""
    return [
        *(
            SourceInsight(source_id=source_id, kind="gap", text=gap)
            for gap in extraction.source_identified_gaps
        ),
        *(
            SourceInsight(source_id=source_id, kind="follow_up", text=item.question, context=item.rationale)
            for item in extraction.follow_up_questions
        ),
        *(
            SourceInsight(source_id=source_id, kind="link", text=link.ref, context=link.context)
            for link in sorted(extraction.linked_candidate_sources, key=lambda link: link.priority)
        ),
    ]


def source_gaps(insights: Sequence[SourceInsight], questions: Sequence[str]) -> list[Gap]:
    """The gaps sources name themselves (their limitations, their open questions), with the source:
    those that share two terms with a question asked here (a licence's "without limitation" or a
    warranty disclaimer is no gap in what was asked), at most MAX_SOURCE_GAPS."""
    named = [
        item for item in insights if item.kind == "gap" and any(bears_on(item.text, q) for q in questions)
    ]
    return [
        Gap(kind="source_gap", text=f"Source {_named(item)} names a gap: {item.text}"[:500])
        for item in named[:MAX_SOURCE_GAPS]
    ]


def _named(item: SourceInsight) -> str:
    """The source of an insight as a gap names it: by id, and by title when an earlier run read it."""
    return (
        f"{source_label(item.source_id)} ({item.earlier[:120]}), read by an earlier run,"
        if item.earlier
        else source_label(item.source_id)
    )


def known_insights(known: Sequence[KnownInsight], below: Sequence[SourceInsight]) -> list[SourceInsight]:
    """What sources read by earlier runs left open (runs/prior.py chose those bearing on the
    questions) as this synthesis reads them, but those already said below."""
    said = {(item.source_id, item.kind, normalize(item.text)) for item in below}
    found = []
    for item in known:
        insight = SourceInsight(
            source_id=item.source_id,
            kind=_KINDS[item.kind],
            text=item.text,
            context=item.context,
            earlier=item.title or item.ref,
        )
        if (insight.source_id, insight.kind, normalize(insight.text)) not in said:
            found.append(insight)
    return found


def insight_followups(insights: Sequence[SourceInsight], asked: Sequence[str], read: set[str]) -> list[str]:
    """Follow-up questions the extractors raised that nothing here asks yet, and sources the sources
    cite that were not read: at most MAX_CODE_FOLLOWUPS."""
    known = {normalize(question) for question in asked}
    followups: list[str] = []
    for item in insights:
        if item.kind == "follow_up" and normalize(item.text) not in known and reads_as_question(item.text):
            followups.append(item.text[:300])
            known.add(normalize(item.text))
        elif item.kind == "link" and item.text not in read:
            followups.append(f"Read {item.text} (cited by {source_label(item.source_id)})"[:300])
            read = read | {item.text}
    return followups[:MAX_CODE_FOLLOWUPS]
