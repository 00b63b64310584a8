"""The partial report: what a run that a budget stopped had finished, put together without a model."""

from __future__ import annotations

from research_mcp.core.contracts import Confidence, Fact
from research_mcp.core.ids import fact_label
from research_mcp.core.role_inputs import SynthesisInput
from research_mcp.storage.models import RunNode
from research_mcp.storage.outputs import CitationCounts, StoredSynthesis
from research_mcp.storage.store import Store

__all__ = ["partial_report"]


_Finished = tuple[str, SynthesisInput | None, StoredSynthesis]


def partial_report(store: Store, run_id: str, reason: str, backend: str) -> str:
    """A report built without a model from the syntheses that finished before a budget stopped the run."""
    syntheses = _finished_syntheses(store, run_id)
    tops = _highest(syntheses)
    covered = {fid for _, _, output in syntheses for fid in output.fact_ids}
    # Verified facts of extractions that finished but were not synthesized yet: paid for, so shown.
    extractions = [h.id for h in store.handoffs_for_run(run_id, role="extractor") if h.status == "done"]
    loose = [f for f in store.facts_for_handoffs(extractions) if f.verified and f.id not in covered]
    nodes = store.nodes_for_run(run_id)
    finished = [n.title for n in nodes if n.status == "done"]
    handoff_id = store.start_handoff(
        role="synthesizer",
        input=SynthesisInput(
            title="partial report", questions=[], input_handoffs=[handoff_id for handoff_id, _, _ in tops]
        ).model_dump(mode="json", exclude={"discovery"}),
        backend=backend,
        run_id=run_id,
        node_id="partial",
    )
    store.finish_handoff(
        handoff_id,
        status="done",
        output=_partial(reason, tops, loose, covered=covered, nodes=nodes),
        summary=[
            f"partial report: {reason}",
            f"{len(finished)} nodes finished, {len(nodes) - len(finished)} not",
        ],
        model="none",
    )
    return handoff_id


def _partial(
    reason: str, tops: list[_Finished], loose: list[Fact], *, covered: set[int], nodes: list[RunNode]
) -> StoredSynthesis:
    """The finished parts' reports, findings, facts and citations, with the loose facts, at low
    confidence; the parts not finished named in the gaps."""
    outputs = [output for _, _, output in tops]
    return StoredSynthesis(
        report=_report(reason, tops, loose),
        key_findings=[finding for output in outputs for finding in output.key_findings],
        confidence=Confidence(level="low", reasoning=f"The run stopped early: {reason}."[:1000]),
        gaps=[f"not researched (budget): {n.title}" for n in nodes if n.status != "done"],
        contradictions=[],
        suggested_followups=[],
        fact_ids=sorted(covered | {fact.id for fact in loose}),
        cited=sorted({fid for output in outputs for fid in output.cited} | {f.id for f in loose}),
        citations=_citations(outputs, loose=len(loose)),
        finished_nodes=[n.title for n in nodes if n.status == "done"],
    )


def _report(reason: str, tops: list[_Finished], loose: list[Fact]) -> str:
    sections = [f"## {asked.title if asked else ''}\n\n{output.report}" for _, asked, output in tops]
    if loose:
        sections.append(
            "## Facts found before the stop (not yet synthesized)\n\n"
            + "\n".join(f"- {fact.statement} [{fact_label(fact.id)}]" for fact in loose)
        )
    return f"**Partial report: {reason}** Finished parts follow.\n\n" + ("\n\n".join(sections) or "(none)")


def _finished_syntheses(store: Store, run_id: str) -> list[_Finished]:
    return [
        (h.id, h.input_as(SynthesisInput), output)
        for h in store.handoffs_for_run(run_id, role="synthesizer")
        if h.status == "done" and (output := h.output_as(StoredSynthesis)) is not None
    ]


def _highest(syntheses: list[_Finished]) -> list[_Finished]:
    """The highest syntheses only: those whose facts are not all inside another finished synthesis."""
    return [
        (handoff_id, asked, output)
        for handoff_id, asked, output in syntheses
        if not any(
            other_id != handoff_id and set(output.fact_ids) < set(other.fact_ids)
            for other_id, _, other in syntheses
        )
    ]


def _citations(outputs: list[StoredSynthesis], *, loose: int) -> CitationCounts:
    """The parts' citations added up; each loose verified fact counts as one made and verified."""
    return CitationCounts(
        made=sum(output.citations.made for output in outputs) + loose,
        verified=sum(output.citations.verified for output in outputs) + loose,
        dropped=sum(output.citations.dropped for output in outputs),
        links_dropped=sum(output.citations.links_dropped for output in outputs),
    )
