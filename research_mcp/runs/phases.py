"""Phase gates: after a synthesis, check the phase's success criteria; while unmet, within
`max_iterations` and budget, widen the node's leaves (more sources, the gaps as questions) and
synthesize again, at the same level: the tree never deepens. Each iteration's delta is an event.
"""

from __future__ import annotations

from research_mcp.contracts import ExtractorInput, Phase, PlanNode, SynthesisOutput
from research_mcp.errors import BudgetExhausted
from research_mcp.roles.base import RoleResult
from research_mcp.roles.synthesizer import synthesize
from research_mcp.runs.context import RunContext, leaf_questions, node_key
from research_mcp.runs.leaf import choose_sources, extract_sources
from research_mcp.storage.outputs import StoredSynthesis

__all__ = ["criteria_status", "run_phases"]

_LEVELS = {"low": 0, "medium": 1, "high": 2}


def corroboration(fact_ids: list[int], sources: dict[int, tuple[int, int]]) -> int:
    """Sources agreeing on a finding: its facts' distinct sources, or a merged fact's corroborations."""
    known = [sources[f] for f in fact_ids if f in sources]
    return max(len({source for source, _ in known}), max((count for _, count in known), default=0))


def criteria_status(
    phase: Phase, output: StoredSynthesis, source_of: dict[int, tuple[int, int]]
) -> dict[str, bool]:
    """Each criterion of the phase, met or not, judged from a synthesis handoff's output."""
    criteria = phase.criteria
    status: dict[str, bool] = {}
    if criteria.min_corroboration is not None:
        findings = output.key_findings
        status["corroboration"] = bool(findings) and all(
            corroboration(finding.fact_ids, source_of) >= criteria.min_corroboration for finding in findings
        )
    report = output.report.lower()
    for theme in criteria.themes:
        status[f"theme:{theme}"] = theme.lower() in report
    if criteria.contradictions_resolved:
        status["contradictions_resolved"] = not output.contradictions
    if criteria.min_confidence is not None:
        status["confidence"] = _LEVELS[output.confidence.level] >= _LEVELS[criteria.min_confidence]
    return status


def _synthesis(rc: RunContext, handoff_id: str) -> tuple[StoredSynthesis, dict[int, tuple[int, int]]]:
    """A synthesis handoff's output, and the source and corroborations of each fact in its scope."""
    store = rc.deps.store
    output = store.get_handoff(handoff_id).output_as(StoredSynthesis)
    if output is None:
        raise ValueError(f"handoff {handoff_id} is no finished synthesis")
    return output, {f.id: (f.source_id, f.corroborations) for f in store.get_facts(output.fact_ids)}


async def run_phases(
    rc: RunContext, node: PlanNode, key: str, child_handoffs: list[str], result: RoleResult[SynthesisOutput]
) -> str:
    store = rc.deps.store
    handoff_id = result.handoff_id
    leaves = [child for child in node.children if child.kind == "leaf"]
    inputs = list(child_handoffs)
    for phase in node.phases:
        tokens_at_start = rc.deps.budget.tokens
        for iteration in range(1, phase.max_iterations + 1):
            output, source_of = _synthesis(rc, handoff_id)
            before = criteria_status(phase, output, source_of)
            unmet = [name for name, met in before.items() if not met]
            if not unmet:
                store.add_event(rc.run_id, "phase_met", f"phase {phase.name!r} met", node_id=key, data=before)
                break
            if iteration == phase.max_iterations:
                store.add_event(
                    rc.run_id,
                    "phase_unmet",
                    f"phase {phase.name!r} stopped at max_iterations={phase.max_iterations} with {unmet} unmet",
                    node_id=key,
                    data=before,
                )
                break
            spent = rc.deps.budget.tokens - tokens_at_start
            if phase.budget and phase.budget.max_tokens and spent >= phase.budget.max_tokens:
                store.add_event(rc.run_id, "phase_budget", f"phase {phase.name!r} budget spent", node_id=key)
                break
            # The model's gaps, not the failures code added to them: those are no search queries.
            gaps = [gap for gap in output.gaps if gap not in output.failures]
            missing_themes = [name.split(":", 1)[1] for name in unmet if name.startswith("theme:")]
            added_sources: list[str] = []
            new_extractions: list[str] = []
            try:
                for leaf in leaves:
                    leaf_key = node_key(rc.plan_id, leaf.id)
                    used = {
                        asked.source_ref
                        for h in store.handoffs_for_run(rc.run_id, role="extractor", node_id=leaf_key)
                        if (asked := h.input_as(ExtractorInput)) is not None
                    }
                    widened = leaf.model_copy(
                        update={
                            "sources": [],
                            "search_queries": [*leaf.search_queries, *missing_themes, *gaps[:2]],
                        }
                    )
                    refs = await choose_sources(rc, widened, [], skip=used)
                    questions = (
                        leaf_questions(leaf) + [f"What about {theme}?" for theme in missing_themes] + gaps[:2]
                    )
                    added_sources += refs
                    new_extractions += await extract_sources(
                        rc, leaf, leaf_key, refs, questions=questions[:10], iteration=iteration
                    )
                inputs += new_extractions
                result = await synthesize(
                    rc.deps,
                    title=node.title,
                    questions=list(node.questions) or [q for leaf in leaves for q in leaf_questions(leaf)],
                    input_handoffs=inputs,
                    run_id=rc.run_id,
                    node_id=key,
                    iteration=iteration,
                    failures=[
                        *rc.failures.get(key, []),
                        *(f for leaf in leaves for f in rc.failures.get(node_key(rc.plan_id, leaf.id), [])),
                    ],
                )
            except BudgetExhausted:
                store.add_event(
                    rc.run_id, "phase_budget", f"budget spent in phase {phase.name!r}", node_id=key
                )
                raise
            handoff_id = result.handoff_id
            after_output, source_of = _synthesis(rc, handoff_id)
            after = criteria_status(phase, after_output, source_of)
            store.add_event(
                rc.run_id,
                "iteration",
                f"phase {phase.name!r} iteration {iteration}: {len(added_sources)} sources, "
                f"{len(new_extractions)} extractions added",
                node_id=key,
                data={
                    "iteration": iteration,
                    "why": unmet,
                    "changed": {
                        "sources_added": added_sources,
                        "extractions_added": new_extractions,
                        "questions_added": missing_themes + gaps[:2],
                    },
                    "criteria_before": before,
                    "criteria_after": after,
                },
            )
    return handoff_id
