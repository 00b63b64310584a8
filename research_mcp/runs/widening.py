"""One iteration of a phase, leaf by leaf: what it asks (the missing themes, what would settle an unmet
criterion, the synthesis's gaps, what each source read left open, the leaf's acceptance criteria still
unmet), the scout's new sources for it, and the extractions that ask it of those and again of the
sources already read that bore on the leaf. runs/phases.py decides when an iteration runs."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from research_mcp.core.citations import WRITTEN_CITATION
from research_mcp.core.contracts import PlanNode
from research_mcp.core.errors import ModelError
from research_mcp.core.feasibility import leaf_reading
from research_mcp.core.gaps import GapKind
from research_mcp.core.ids import source_label
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.roles.contradictions import settling_question
from research_mcp.roles.evidence import STRONG_EVIDENCE
from research_mcp.roles.scout import scout
from research_mcp.runs.context import RunContext, leaf_questions, node_key
from research_mcp.runs.gates import PhaseSpending, corroboration
from research_mcp.runs.leaf import rubric
from research_mcp.runs.reading import choose_sources, extract_sources
from research_mcp.runs.rejudge import criteria_questions, rejudge
from research_mcp.storage.outputs import Handoff, StoredCuration, StoredExtraction, StoredSynthesis

__all__ = [
    "MAX_FOLLOW_UPS",
    "Asking",
    "Widened",
    "follow_ups_of",
    "gap_questions",
    "raised_by_source",
    "settling_questions",
    "widen",
]

#: Follow-up questions and source-named gaps one leaf asks in one iteration.
MAX_FOLLOW_UPS = 3
#: Gaps code writes that are not questions to ask again.
_NOT_QUESTIONS: frozenset[GapKind] = frozenset(
    {"cut_short", "criterion_unmet", "requirement", "source_gap", "never_mentioned", "failure"}
)


def settling_questions(
    unmet: list[str], output: StoredSynthesis, source_of: dict[int, tuple[int, int]]
) -> list[str]:
    """What would settle an unmet criterion besides a theme: each contradiction's subject, asked of
    new sources; and for corroboration, the weakest key finding, to find a second source for it."""
    questions = []
    if "contradictions_resolved" in unmet:
        questions += [settling_question(item) for item in output.contradictions[:MAX_FOLLOW_UPS]]
    if "corroboration" in unmet and output.key_findings:
        weakest = min(output.key_findings, key=lambda f: corroboration(f.fact_ids, source_of))
        questions.append(WRITTEN_CITATION.sub("", weakest.statement).strip()[:300])
    return [question for question in dict.fromkeys(questions) if question]


def gap_questions(output: StoredSynthesis) -> list[str]:
    """The synthesis's gaps as questions to ask again: an unanswered question as itself (also when a
    part's gap carries it, prefixed with the part's title); not the failures, the lists cut short,
    the acceptance criteria, the gaps sources name (asked of them already) or the phase's own notes
    code added (those are no questions)."""
    questions = []
    for gap in output.as_gaps():
        if gap.kind in _NOT_QUESTIONS or gap.text in output.failures:
            continue
        questions.append(
            gap.question if gap.kind in ("unanswered", "not_established") and gap.question else gap.text
        )
    return list(dict.fromkeys(questions))


def follow_ups_of(raised: dict[str, list[str]]) -> list[str]:
    """The follow-ups an iteration asks of new sources: the first `MAX_FOLLOW_UPS` of those the
    leaf's sources raised, by source reference (never by which source was read first)."""
    return list(dict.fromkeys(q for ref in sorted(raised) for q in raised[ref]))[:MAX_FOLLOW_UPS]


def _read_order(handoff: Handoff) -> tuple[str, int, tuple[str, ...]]:
    asked = handoff.input_as(ExtractorInput)
    return (asked.source_ref, handoff.iteration, tuple(asked.questions)) if asked else ("", 0, ())


def raised_by_source(rc: RunContext, leaf_key: str, iteration: int) -> dict[str, list[str]]:
    """What each source the leaf read left open, by its reference: its extractors' follow-up
    questions and the gaps the source itself names (its limitations, its open questions)."""
    raised: dict[str, list[str]] = {}
    # By source and question, not by when each parallel extraction happened to start: what an
    # iteration asks must not depend on which source was read first.
    handoffs = sorted(
        rc.deps.store.handoffs_for_run(rc.run_id, role="extractor", node_id=leaf_key), key=_read_order
    )
    for handoff in handoffs:
        asked, output = handoff.input_as(ExtractorInput), handoff.output_as(StoredExtraction)
        # Only what earlier iterations raised: a resumed iteration asks what it asked the first time.
        if handoff.status != "done" or asked is None or output is None or handoff.iteration >= iteration:
            continue
        open_questions = [item.question for item in output.follow_up_questions]
        open_questions += list(output.source_identified_gaps)
        known = set(asked.questions)
        mine = raised.setdefault(asked.source_ref, [])
        mine += [q for q in open_questions if q not in known and q not in mine]
    return {ref: questions[:MAX_FOLLOW_UPS] for ref, questions in raised.items() if questions}


def _bearing(rc: RunContext, leaf_key: str, iteration: int) -> set[str]:
    """The sources the leaf read before this iteration that gave strong evidence (a verified fact of
    confidence at least `STRONG_EVIDENCE`): asked an iteration's new questions again. The others bore
    weakly on what they were asked; asking them more is a full read each, for little (a question the
    corpus cannot answer would read every unrelated file again)."""
    store = rc.deps.store
    ref_of: dict[int, str] = {}  # each earlier extraction's fact, by id: the source it was read from
    for handoff in store.handoffs_for_run(rc.run_id, role="extractor", node_id=leaf_key):
        asked, output = handoff.input_as(ExtractorInput), handoff.output_as(StoredExtraction)
        if handoff.iteration < iteration and asked is not None and output is not None:
            ref_of.update(dict.fromkeys(output.fact_ids, asked.source_ref))
    return {
        ref_of[fact.id]
        for fact in store.get_facts(list(ref_of))
        if fact.verified and fact.confidence >= STRONG_EVIDENCE
    }


async def _ask(
    rc: RunContext,
    leaf: PlanNode,
    leaf_key: str,
    reads: list[tuple[list[str], list[str], tuple[str, ...]]],
    iteration: int,
    known: list[str],
) -> list[str]:
    """Each (sources, added questions, sources read before) asked in parallel; handoffs in order.
    Each extractor is told what the synthesis so far established (`known`) and what the leaf's
    findings must meet, as on the leaf's first reading."""
    found: dict[int, list[str]] = {}

    async def read(position: int, batch: list[str], asked: list[str], again: tuple[str, ...]) -> None:
        found[position] = await extract_sources(
            rc,
            leaf,
            leaf_key,
            batch,
            questions=leaf_questions(leaf),
            added_questions=asked,
            already_read=again,
            iteration=iteration,
            contexts=rubric(rc, leaf, [], batch)[0],
            known=known,
        )

    async with anyio.create_task_group() as group:
        for position, (batch, asked, again) in enumerate(reads):
            group.start_soon(read, position, batch, asked, again)
    return [handoff for position in sorted(found) for handoff in found[position]]


def _asking(theme: str) -> str:
    """A missing theme as a question: itself when it is one (a part of the question asked)."""
    return theme if theme.rstrip().endswith("?") else f"What about {theme}?"


async def _scout_for(
    rc: RunContext, leaf: PlanNode, leaf_key: str, asking: list[str], read: int, iteration: int
) -> list[str] | None:
    """The scout's sweep for what an iteration asks (missing themes, gaps, follow-ups: each an angle
    and a question to cover), the curated sources covering them first; None when the scout failed
    (named in the leaf's failures), so the leaf searches by itself."""
    try:
        result = await scout(
            rc.deps,
            asking[0],
            queries=[*asking[1:], *leaf.search_queries],
            questions=asking,
            limit=leaf_reading(leaf)[0] + read,
            run_id=rc.run_id,
            node_id=leaf_key,
            iteration=iteration,
        )
    except ModelError as error:
        rc.failures.setdefault(leaf_key, []).append(f"The scout of iteration {iteration} failed: {error}")
        return None
    curation = rc.deps.store.get_handoff(result.handoff_id).output_as(StoredCuration)
    return [source.ref for source in curation.sources] if curation else []


@dataclass
class Asking:
    """What one iteration asks of every leaf: the missing themes, what would settle an unmet
    criterion, the synthesis's gaps, and what the synthesis so far established."""

    themes: list[str]
    settling: list[str]
    gaps: list[str]
    known: list[str]

    @property
    def added(self) -> list[str]:
        return [_asking(theme) for theme in self.themes] + self.settling + self.gaps


@dataclass
class Widened:
    """What an iteration added, over its leaves."""

    sources: list[str] = field(default_factory=list)
    extractions: list[str] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)
    criteria: list[str] = field(default_factory=list)


async def widen(
    rc: RunContext,
    leaf: PlanNode,
    asking: Asking,
    judged: dict[str, str],
    inputs: list[str],
    iteration: int,
    spending: PhaseSpending,
    widened: Widened,
) -> None:
    """One leaf's part of an iteration: new sources found for what it asks, those and the sources it
    read asked the new questions, and its criteria judged again on what that added."""
    store = rc.deps.store
    leaf_key = node_key(rc.plan_id, leaf.id)
    # Read before this iteration (a resumed iteration must not count the sources it chose itself
    # before the interruption, or it would choose others), by reference, and the stored source
    # each is (read again as S<id>: a text given inline has no address to read it from again).
    stored = {
        asked.source_ref: source_label(asked.source_id)
        for h in store.handoffs_for_run(rc.run_id, role="extractor", node_id=leaf_key)
        if h.iteration < iteration and (asked := h.input_as(ExtractorInput)) is not None
    }
    used = set(stored)
    # What the leaf's extractors said their sources left open (follow-up questions, gaps the
    # sources name) is asked in this iteration: of the source that raised it, again, and of
    # new sources, found by searching for it.
    raised = raised_by_source(rc, leaf_key, iteration)
    follow_ups = follow_ups_of(raised)
    # The leaf's acceptance criteria still unmet are asked too, as a missing theme is.
    criteria = criteria_questions(rc, leaf, judged.get(leaf_key))
    angles = [*asking.themes, *asking.settling, *asking.gaps, *criteria, *follow_ups]
    searching = leaf.model_copy(update={"sources": [], "search_queries": [*leaf.search_queries, *angles]})
    found = await _scout_for(rc, searching, leaf_key, angles, len(used), iteration) if angles else None
    # Found by the scout: those, else none (it searched already); the scout failed: a search.
    refs = [] if found == [] else await choose_sources(rc, searching, found or [], skip=used)
    left = spending.sources_left()
    if left is not None:
        refs = refs[:left]
    spending.sources += len(refs)
    widened.sources += refs
    widened.follow_ups += follow_ups
    widened.criteria += criteria
    # New sources are asked the new questions and the follow-ups; the sources already read that
    # bore on the leaf's question, or left something open, are asked again (a new extraction, since
    # its questions differ): the new questions, and what each one itself left open.
    reads: list[tuple[list[str], list[str], tuple[str, ...]]] = [
        (refs, [*asking.added, *criteria, *follow_ups], ())
    ]
    bearing = _bearing(rc, leaf_key, iteration)
    reads += [
        ([stored[ref]], [*asking.added, *criteria, *raised.get(ref, [])], (stored[ref],))
        for ref in sorted(used - set(refs))
        if ref in raised or ref in bearing
    ]
    grown = await _ask(rc, leaf, leaf_key, reads, iteration, asking.known)
    widened.extractions += grown
    # Its criteria judged again on its new evidence; the phase node reads that synthesis.
    before = judged.get(leaf_key)
    again = await rejudge(rc, leaf, leaf_key, before, grown, iteration) if grown and before else None
    if before is not None and again is not None:
        inputs[inputs.index(before)] = again
    else:
        inputs += grown
