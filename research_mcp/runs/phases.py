"""Phase gates: after a synthesis, check the phase's success criteria; while unmet, within
`max_iterations` and the phase's budget, widen the node's leaves (the scout sweeps for the missing
themes, the gaps and the follow-ups; its sources are read, and those already read asked again) and
synthesize again, at the same level: the tree never deepens. Each iteration's delta is an event.
A leaf with acceptance criteria whose extractions grew is synthesized again and its criteria judged
again (runs/rejudge.py); a criterion still unmet is asked in the next iteration, as a missing theme is.

The best synthesis of the phase is kept, not the last: the one meeting most criteria (runs/gates.py
judges them), then leaving fewest leaf acceptance criteria unmet, then citing most verified facts. A phase that stops with criteria unmet (max_iterations reached, or its budget
spent) does not pass silently: the kept synthesis is committed again by code with one gap per unmet
criterion, naming the evidence it was judged on, and its confidence capped (`medium` when some
criteria were met, `low` when none were); the run stays `done` and its handle says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio

from research_mcp.core.citations import WRITTEN_CITATION
from research_mcp.core.contracts import ConfidenceLevel, Phase, PlanNode, SynthesisOutput
from research_mcp.core.errors import BudgetExhausted, ModelError, NodeBudgetExhausted
from research_mcp.core.feasibility import leaf_reading
from research_mcp.core.gaps import Gap, GapKind
from research_mcp.core.ids import source_label
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.roles.base import RoleResult
from research_mcp.roles.contradictions import settling_question
from research_mcp.roles.evidence import STRONG_EVIDENCE
from research_mcp.roles.node_budgets import node_budget_spent
from research_mcp.roles.scout import scout
from research_mcp.roles.synthesizer import gate_synthesis, synthesize
from research_mcp.runs.context import RunContext, leaf_questions, node_key, report_outline
from research_mcp.runs.gates import PhaseSpending, answered, corroboration, criteria_status, unmet_gap
from research_mcp.runs.leaf import RUBRIC_FACTS, rubric
from research_mcp.runs.reading import choose_sources, extract_sources
from research_mcp.runs.rejudge import criteria_questions, judged_leaves, rejudge, unmet_acceptance
from research_mcp.storage.events import (
    IterationDone,
    PhaseBudgetSpent,
    PhaseGate,
    PhaseMet,
    PhaseUnmet,
    RetryStarted,
    StopReason,
)
from research_mcp.storage.outputs import Handoff, StoredCuration, StoredExtraction, StoredSynthesis

__all__ = ["follow_ups_of", "raised_by_source", "run_phases"]

#: Follow-up questions and source-named gaps one leaf asks in one iteration.
MAX_FOLLOW_UPS = 3
#: Gaps code writes that are not questions to ask again.
_NOT_QUESTIONS: frozenset[GapKind] = frozenset(
    {"cut_short", "criterion_unmet", "requirement", "source_gap", "never_mentioned", "failure"}
)


class _PhaseBudgetSpent(Exception):
    """The phase's own budget is spent: the phase stops, the run goes on."""


def _synthesis(rc: RunContext, handoff_id: str) -> tuple[StoredSynthesis, dict[int, tuple[int, int]]]:
    """A synthesis handoff's output, and the source and corroborations of each fact in its scope."""
    store = rc.deps.store
    output = store.get_handoff(handoff_id).output_as(StoredSynthesis)
    if output is None:
        raise ValueError(f"handoff {handoff_id} is no finished synthesis")
    return output, {f.id: (f.source_id, f.corroborations) for f in store.get_facts(output.fact_ids)}


def _status(
    rc: RunContext, phase: Phase, output: StoredSynthesis, source_of: dict[int, tuple[int, int]]
) -> dict[str, bool]:
    """The phase's criteria judged on a synthesis, its themes on what the verified facts it cites say
    (each one's statement and quote) and on the questions they were extracted for that it answered."""
    cited = [f for f in rc.deps.store.get_facts(output.cited) if f.verified]
    said = [f"{f.statement} {f.quote}" for f in cited]
    return criteria_status(
        phase, output, source_of, said, answered(output, [f.question for f in cited if f.question])
    )


def _settling_questions(
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


def _gap_questions(output: StoredSynthesis) -> list[str]:
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


def _merit(status: dict[str, bool], output: StoredSynthesis) -> tuple[int, int, int]:
    """How good a phase's synthesis is: criteria met, then its leaves' acceptance criteria left
    unmet (fewer is better), then verified facts cited."""
    return sum(status.values()), -unmet_acceptance(output), output.citations.verified


#: The synthesis a phase keeps: its handoff, the criteria it met, and the iteration it came from.
_Kept = tuple[str, dict[str, bool], int]


async def run_phases(
    rc: RunContext, node: PlanNode, key: str, child_handoffs: list[str], result: RoleResult[SynthesisOutput]
) -> str:
    handoff_id = result.handoff_id
    inputs = list(child_handoffs)
    gates = _recorded_gates(rc, key)
    for phase in node.phases:
        best, stopped = await _run_phase(rc, node, key, phase, handoff_id, inputs, gates)
        handoff_id = _close_phase(rc, key, phase, best, stopped)
    return handoff_id


#: Why a phase stopped with criteria unmet, and how it says so; None: every criterion was met.
_Stopped = tuple[StopReason, str] | None


def _stop_reason(rc: RunContext, phase: Phase, iteration: int, spending: PhaseSpending) -> _Stopped:
    """Why no further iteration starts (None: one may)."""
    if iteration == phase.max_iterations:
        return StopReason.MAX_ITERATIONS, f"stopped at max_iterations={phase.max_iterations}"
    if reason := spending.stop_reason(rc) or node_budget_spent():
        return StopReason.BUDGET, f"budget spent: {reason}"
    return None


async def _run_phase(
    rc: RunContext,
    node: PlanNode,
    key: str,
    phase: Phase,
    handoff_id: str,
    inputs: list[str],
    gates: dict[tuple[str, int], dict[str, bool]],
) -> tuple[_Kept, _Stopped]:
    """Iterate one phase while a criterion is unmet and its budget allows: the synthesis it keeps,
    and why it stopped short (None when every criterion was met)."""
    store = rc.deps.store
    spending = PhaseSpending(phase.budget, rc.deps.budget.tokens, rc.deps.budget.cost_usd)
    output, source_of = _synthesis(rc, handoff_id)
    status = gates.get((phase.name, 0)) or _status(rc, phase, output, source_of)
    best: _Kept = (handoff_id, status, 0)
    for iteration in range(1, phase.max_iterations + 1):
        unmet = [name for name, met in status.items() if not met]
        if not unmet:
            store.add_event(
                rc.run_id, PhaseMet(message=f"phase {phase.name!r} met", node_id=key, criteria=status)
            )
            return best, None
        if stopped := _stop_reason(rc, phase, iteration, spending):
            return best, stopped
        # The decision to iterate is recorded with the criteria it was taken on: a run resumed in
        # the iteration takes it again on them, not on a store the iteration had already added to.
        store.add_event(
            rc.run_id,
            PhaseGate(
                message=f"phase {phase.name!r}: {unmet} unmet, iteration {iteration} starts",
                node_id=key,
                phase=phase.name,
                iteration=iteration - 1,
                status=status,
            ),
        )
        try:
            handoff_id, delta = await _iterate(
                rc, node, key, phase, output, unmet, inputs, iteration, spending
            )
        except (_PhaseBudgetSpent, NodeBudgetExhausted) as spent:
            why = spent.what if isinstance(spent, NodeBudgetExhausted) else str(spent)
            return best, (StopReason.BUDGET, f"budget spent: {why}")
        except BudgetExhausted:
            store.add_event(
                rc.run_id, PhaseBudgetSpent(message=f"budget spent in phase {phase.name!r}", node_id=key)
            )
            raise
        before = status
        output, source_of = _synthesis(rc, handoff_id)
        status = gates.get((phase.name, iteration)) or _status(rc, phase, output, source_of)
        if _merit(status, output) > _merit(best[1], _synthesis(rc, best[0])[0]):
            best = (handoff_id, status, iteration)
        store.add_event(
            rc.run_id,
            IterationDone(
                message=f"phase {phase.name!r} iteration {iteration}: {len(delta['sources_added'])} sources, "
                f"{len(delta['extractions_added'])} extractions added",
                node_id=key,
                iteration=iteration,
                why=unmet,
                changed=delta,
                criteria_before=before,
                criteria_after=status,
                kept_iteration=best[2],
            ),
        )
    return best, None


def _close_phase(rc: RunContext, key: str, phase: Phase, best: _Kept, stopped: _Stopped) -> str:
    """The kept synthesis; with criteria unmet, committed again by code with a gap for each and its
    confidence capped."""
    store = rc.deps.store
    handoff_id, status, kept_at = best
    unmet = [name for name, met in status.items() if not met]
    if not unmet:
        return handoff_id
    stop, said = stopped if stopped is not None else (None, "stopped")
    store.add_event(
        rc.run_id,
        PhaseUnmet(
            message=f"phase {phase.name!r} {said} with {unmet} unmet; kept the synthesis of iteration {kept_at}",
            node_id=key,
            criteria=status,
            stopped=stop,
        ),
    )
    output, source_of = _synthesis(rc, handoff_id)
    cap: ConfidenceLevel = "medium" if len(unmet) < len(status) else "low"
    gaps = [Gap(kind="requirement", text=unmet_gap(phase, name, output, source_of)) for name in unmet]
    if stop is StopReason.BUDGET:
        store.add_event(rc.run_id, PhaseBudgetSpent(message=f"phase {phase.name!r} {said}", node_id=key))
        gaps.append(Gap(kind="requirement", text=f"Phase {phase.name!r} {said}"))
    return gate_synthesis(
        rc.deps,
        handoff_id,
        unmet=[f"{phase.name}: {name}" for name in unmet],
        gaps=gaps,
        cap=cap,
        run_id=rc.run_id,
        node_id=key,
        iteration=kept_at,
    )


def _recorded_gates(rc: RunContext, key: str) -> dict[tuple[str, int], dict[str, bool]]:
    """The criteria each iteration of this node's phases was decided on in an earlier attempt of the
    run, since its last retry (a retry of failed parts judges its gates afresh)."""
    gates: dict[tuple[str, int], dict[str, bool]] = {}
    for event in rc.deps.store.events_for_run(rc.run_id):
        if isinstance(event, RetryStarted):
            gates.clear()
        elif isinstance(event, PhaseGate) and event.node_id == key:
            gates[(event.phase, event.iteration)] = event.status
    return gates


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
class _Asking:
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
class _Widened:
    """What an iteration added, over its leaves."""

    sources: list[str] = field(default_factory=list)
    extractions: list[str] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)
    criteria: list[str] = field(default_factory=list)


async def _iterate(
    rc: RunContext,
    node: PlanNode,
    key: str,
    phase: Phase,
    output: StoredSynthesis,
    unmet: list[str],
    inputs: list[str],
    iteration: int,
    spending: PhaseSpending,
) -> tuple[str, dict[str, list[str]]]:
    """One iteration: widen each leaf with the missing themes and the gaps, then synthesize again.
    `inputs` grows with the new extractions. Returns the new synthesis handoff and the delta."""
    leaves = [child for child in node.children if child.kind == "leaf"]
    source_of = {f.id: (f.source_id, f.corroborations) for f in rc.deps.store.get_facts(output.fact_ids)}
    asking = _Asking(
        themes=[name.split(":", 1)[1] for name in unmet if name.startswith("theme:")],
        settling=_settling_questions(unmet, output, source_of),
        gaps=_gap_questions(output)[:2],
        known=[WRITTEN_CITATION.sub("", f.statement).strip() for f in output.key_findings[:RUBRIC_FACTS]],
    )
    widened = _Widened()
    judged = judged_leaves(rc, inputs, leaves, [node_key(rc.plan_id, leaf.id) for leaf in leaves])
    for leaf in leaves:
        if reason := spending.exceeded(rc):
            raise _PhaseBudgetSpent(reason)
        await _widen(rc, leaf, asking, judged, inputs, iteration, spending, widened)
    if reason := spending.exceeded(rc):
        raise _PhaseBudgetSpent(reason)
    result = await synthesize(
        rc.deps,
        title=node.title,
        questions=list(node.questions) or [q for leaf in leaves for q in leaf_questions(leaf)],
        input_handoffs=inputs,
        run_id=rc.run_id,
        node_id=key,
        iteration=iteration,
        outline=report_outline(rc, node),
        failures=[
            *rc.failures.get(key, []),
            *(f for leaf in leaves for f in rc.failures.get(node_key(rc.plan_id, leaf.id), [])),
        ],
    )
    delta = {
        "sources_added": widened.sources,
        "extractions_added": widened.extractions,
        "questions_added": asking.themes + asking.settling + asking.gaps,
        "follow_ups_asked": list(dict.fromkeys(widened.follow_ups)),
        "criteria_asked": list(dict.fromkeys(widened.criteria)),
    }
    return result.handoff_id, delta


async def _widen(
    rc: RunContext,
    leaf: PlanNode,
    asking: _Asking,
    judged: dict[str, str],
    inputs: list[str],
    iteration: int,
    spending: PhaseSpending,
    widened: _Widened,
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
