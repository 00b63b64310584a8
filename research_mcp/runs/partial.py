"""The partial report: what a run that a budget stopped had finished, put together without a model."""

from __future__ import annotations

from research_mcp.contracts import Confidence
from research_mcp.ids import fact_label
from research_mcp.role_inputs import SynthesisInput
from research_mcp.storage.outputs import CitationCounts, StoredSynthesis
from research_mcp.storage.store import Store

__all__ = ["partial_report"]


def partial_report(store: Store, run_id: str, reason: str, backend: str) -> str:
    """A report built without a model from the syntheses that finished before a budget stopped the run."""
    syntheses = [
        (h.id, h.input_as(SynthesisInput), output)
        for h in store.handoffs_for_run(run_id, role="synthesizer")
        if h.status == "done" and (output := h.output_as(StoredSynthesis)) is not None
    ]
    covered = {fid for _, _, output in syntheses for fid in output.fact_ids}
    # Keep the highest syntheses only: those whose facts are not all inside another finished synthesis.
    tops = [
        (handoff_id, asked, output)
        for handoff_id, asked, output in syntheses
        if not any(
            other_id != handoff_id and set(output.fact_ids) < set(other.fact_ids)
            for other_id, _, other in syntheses
        )
    ]
    sections = [f"## {asked.title if asked else ''}\n\n{output.report}" for _, asked, output in tops]
    # Verified facts of extractions that finished but were not synthesized yet: paid for, so shown.
    extractions = [h.id for h in store.handoffs_for_run(run_id, role="extractor") if h.status == "done"]
    loose = [f for f in store.facts_for_handoffs(extractions) if f.verified and f.id not in covered]
    if loose:
        sections.append(
            "## Facts found before the stop (not yet synthesized)\n\n"
            + "\n".join(f"- {fact.statement} [{fact_label(fact.id)}]" for fact in loose)
        )
        covered |= {fact.id for fact in loose}
    nodes = store.nodes_for_run(run_id)
    finished = [n.title for n in nodes if n.status == "done"]
    unfinished = [n.title for n in nodes if n.status != "done"]
    report = f"**Partial report: {reason}** Finished parts follow.\n\n" + ("\n\n".join(sections) or "(none)")
    handoff_id = store.start_handoff(
        role="synthesizer",
        input=SynthesisInput(
            title="partial report", questions=[], input_handoffs=[handoff_id for handoff_id, _, _ in tops]
        ).model_dump(mode="json", exclude={"discovery"}),
        backend=backend,
        run_id=run_id,
        node_id="partial",
    )
    cited = sorted({fid for _, _, output in tops for fid in output.cited} | {f.id for f in loose})
    store.finish_handoff(
        handoff_id,
        status="done",
        output=StoredSynthesis(
            report=report,
            key_findings=[finding for _, _, output in tops for finding in output.key_findings],
            confidence=Confidence(level="low", reasoning=f"The run stopped early: {reason}."[:1000]),
            gaps=[f"not researched (budget): {title}" for title in unfinished],
            contradictions=[],
            suggested_followups=[],
            fact_ids=sorted(covered),
            cited=cited,
            citations=CitationCounts(
                made=sum(output.citations.made for _, _, output in tops) + len(loose),
                verified=sum(output.citations.verified for _, _, output in tops) + len(loose),
                dropped=sum(output.citations.dropped for _, _, output in tops),
                links_dropped=sum(output.citations.links_dropped for _, _, output in tops),
            ),
            finished_nodes=finished,
        ),
        summary=[f"partial report: {reason}", f"{len(finished)} nodes finished, {len(unfinished)} not"],
        model="none",
    )
    return handoff_id
