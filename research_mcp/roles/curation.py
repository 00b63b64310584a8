"""The discovery synthesizer: a discovery leaf's scout curation written up as its synthesis, the
curated list its parent reads beside its sibling leaves' reports.

It is written by code from the curation, in every backend: the judgement (what to keep, why, its
tags) is the scout's, made by the model when there is one; this arranges it for a reader, so no
second model call is paid. The list names each source kept with its coverage tags (the questions
it bears on) and why it was kept, the questions no source covers (gaps), and the candidates left
out with the reason. Its confidence is in the coverage, not in any fact: `medium` when every question
has a source, `low` when one has none; never `high`, since only openings, snippets and quick scans
were read.
"""

from __future__ import annotations

from research_mcp.core.contracts import Confidence, ConfidenceLevel
from research_mcp.core.role_inputs import SynthesisInput
from research_mcp.roles.base import RoleDeps
from research_mcp.storage.outputs import StoredCuration, StoredSynthesis
from research_mcp.storage.store import Store

__all__ = ["curate", "curation_behind"]

#: Sources listed in the curated report (the curation keeps them all).
LISTED = 12


def curation_behind(store: Store, handoff_id: str) -> StoredCuration | None:
    """The scout curation of a discovery synthesis (or of a scout handoff itself)."""
    handoff = store.get_handoff(handoff_id)
    curation = handoff.output_as(StoredCuration)
    if curation is not None:
        return curation
    asked = handoff.input_as(SynthesisInput)
    if asked is None or not asked.discovery or not asked.input_handoffs:
        return None
    return store.get_handoff(asked.input_handoffs[0]).output_as(StoredCuration)


def _confidence(curation: StoredCuration) -> Confidence:
    kept = curation.sources
    if not curation.questions:
        level: ConfidenceLevel = "medium" if len(kept) >= 3 else "low"
        return Confidence(
            level=level, reasoning=f"{len(kept)} sources kept; no questions to cover were given."
        )
    counts = [sum(n in source.covers for source in kept) for n in range(1, len(curation.questions) + 1)]
    level = "medium" if min(counts) >= 1 else "low"
    covered = sum(count > 0 for count in counts)
    return Confidence(
        level=level,
        reasoning=(
            f"Coverage of the sources found, not of answers: {covered} of {len(counts)} questions have a "
            f"source (fewest sources on one question: {min(counts)}). Never high: only openings and "
            "snippets and the first few sources' openings were read, not the sources."
        ),
    )


def _report(title: str, curation: StoredCuration) -> str:
    lines = [
        f"Sources found for {title!r}: {len(curation.sources)} kept of {curation.candidates} candidates, "
        f"from {curation.searches} searches ({'; '.join(curation.angles) or 'none'})."
    ]
    if curation.sources:
        lines.append("")
    for rank, source in enumerate(curation.sources[:LISTED], 1):
        covers = ", ".join(f"Q{n}" for n in source.covers) or "no question directly"
        tags = f" [{', '.join(source.tags)}]" if source.tags else ""
        why = f" Why: {source.rationale}" if source.rationale else ""
        why += f" Quick scan: {source.scan}." if source.scan else ""
        lines.append(f"{rank}. {source.title} <{source.ref}>{tags}: covers {covers}.{why}")
    if curation.questions:
        lines += ["", "Coverage:"]
        for n, question in enumerate(curation.questions, 1):
            ranks = [str(rank) for rank, s in enumerate(curation.sources, 1) if n in s.covers]
            found = f"sources {', '.join(ranks)}" if ranks else "no source found"
            lines.append(f"- Q{n} {question}: {found}")
    if curation.excluded:
        lines += ["", "Left out:"]
        lines += [f"- {s.title} <{s.ref}>: {s.rationale or 'not kept'}" for s in curation.excluded]
    return "\n".join(lines)


def curate(
    deps: RoleDeps,
    scout_handoff: str,
    *,
    title: str,
    run_id: str | None = None,
    node_id: str | None = None,
) -> str:
    """The discovery synthesis of a scout's curation, committed as a synthesizer handoff: its id."""
    curation = deps.store.get_handoff(scout_handoff).output_as(StoredCuration) or StoredCuration()
    uncovered = [
        f"No source found for Q{n}: {curation.questions[n - 1]}"[:500]
        for n in curation.uncovered
        if n <= len(curation.questions)
    ]
    output = StoredSynthesis(
        report=_report(title, curation),
        confidence=_confidence(curation),
        gaps=[*uncovered, *curation.failures],
        failures=curation.failures,
    )
    handoff_id = deps.store.start_handoff(
        role="synthesizer",
        input=SynthesisInput(
            title=title, questions=curation.questions, input_handoffs=[scout_handoff], discovery=True
        ).model_dump(mode="json"),
        backend=deps.model.name,
        run_id=run_id,
        node_id=node_id,
        caller=deps.caller,
    )
    covered = len(curation.questions) - len(curation.uncovered)
    deps.store.finish_handoff(
        handoff_id,
        status="done",
        output=output,
        summary=[
            f"{len(curation.sources)} sources curated for {title!r}"[:200],
            f"covers {covered} of {len(curation.questions)} questions; confidence {output.confidence.level}",
        ],
        model="none",
    )
    return handoff_id
