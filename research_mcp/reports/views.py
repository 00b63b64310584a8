"""A run's, a plan's or a handoff's views (summary, tree, report, sources, facts, confidence, gaps,
follow-ups, handoff) as lists of text items, for report_results to page."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from research_mcp.core.contracts import FINISHED, Fact, PlanNode, ResearchResult, SynthesisOutput, View
from research_mcp.core.errors import InvalidInput, NotFound
from research_mcp.core.ids import NodeKey, fact_label, kind_of_id, source_label
from research_mcp.core.report_parts import summary_parts
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.reports.assembly import assemble_result, facts_of, not_ready, result_synthesis, source_name
from research_mcp.roles.curation import curation_behind
from research_mcp.storage.events import AcceptanceRejudged, IterationDone, data_of
from research_mcp.storage.models import Citation, Run, StoredPlan
from research_mcp.storage.outputs import Handoff, StoredExtraction
from research_mcp.storage.store import Store

__all__ = ["view_items"]

#: The characters of a curated source's opening shown in the sources view.
LEAD_IN_VIEW = 160
SUMMARY_FOLLOWUPS = 3  # follow-up questions the summary view names (the followups view has them all)


def view_items(store: Store, ident: str, view: View) -> list[str]:
    """The view as a list of text items (paragraphs, lines), to be paged: the subject (a run, a plan
    or a handoff) read from the store, then its view looked up in the subject's table."""
    kind = kind_of_id(ident)
    items: list[str] | None = None
    if kind == "run":
        run = _RunSubject(store, store.get_run(ident))
        items = _RUN_VIEWS[view](run) if view in _RUN_VIEWS else None
        refusal = f"unknown view {view!r}"
    elif kind == "plan":
        plan = _PlanSubject(store, store.get_plan(ident))
        items = _PLAN_VIEWS[view](plan) if view in _PLAN_VIEWS else None
        refusal = f"view {view!r} is not available for a plan; use summary, tree or handoff."
    elif kind == "handoff":
        handoff = _HandoffSubject(store, store.get_handoff(ident))
        items = _HANDOFF_VIEWS[view](handoff) if view in _HANDOFF_VIEWS else None
        refusal = f"view {view!r} is not available for a {handoff.handoff.role} handoff."
    else:
        raise NotFound("run, plan or handoff", ident)
    if items is None:
        raise InvalidInput(refusal)
    return items


@dataclass(frozen=True)
class _PlanSubject:
    store: Store
    plan: StoredPlan


def _plan_handoff(subject: _PlanSubject) -> list[str] | None:
    if not subject.plan.handoff_id:
        return None
    return [json.dumps(subject.store.get_handoff(subject.plan.handoff_id).model_dump(mode="json"), indent=1)]


def _plan_tree(subject: _PlanSubject) -> list[str]:
    plan = subject.plan
    lines = [f"plan {plan.id} ({plan.status}) for: {plan.query}"]
    lines += [f"- infeasible: {reason}" for reason in plan.reasons]
    lines.append("estimate: " + json.dumps(plan.estimate.model_dump() if plan.estimate else None))
    return lines + _tree_lines(plan.tree.root)


_PLAN_VIEWS: dict[str, Callable[[_PlanSubject], list[str] | None]] = {
    "handoff": _plan_handoff,
    "tree": _plan_tree,
    "summary": _plan_tree,
}


def _tree_lines(node: PlanNode, depth: int = 0, status: dict[str, str] | None = None) -> list[str]:
    """One line per node; with `status`, each node's, and the handoff a finished node ended in (to
    read it with report_results: a leaf's synthesis, a discovery leaf's curated list)."""
    mark = f" [{status.get(node.id, 'pending')}]" if status is not None else ""
    questions = "; ".join(node.questions[:3])
    line = f"{'  ' * depth}- {node.id} {node.kind}: {node.title}{mark}" + (
        f" — {questions}" if questions else ""
    )
    lines = [line]
    pad = "  " * (depth + 1)
    lines += [
        f"{pad}task spec: {len(spec.questions)} question{'s' if len(spec.questions) > 1 else ''}; "
        f"expected format: {spec.expected_format or 'any'}"
        for spec in node.task_specs
    ]
    lines += [
        f"{pad}phase {phase.name!r}: {phase.criteria.model_dump_json(exclude_defaults=True)}, "
        f"at most {phase.max_iterations} iterations"
        for phase in node.phases
    ]
    for child in node.children:
        lines += _tree_lines(child, depth + 1, status)
    return lines


@dataclass(frozen=True)
class _RunSubject:
    store: Store
    run: Run

    @cached_property
    def result(self) -> ResearchResult:
        """The run's result; a run without a report yet is refused, saying how it gets one."""
        return assemble_result(self.store, self.run.id)


def _run_tree(subject: _RunSubject) -> list[str]:
    store, run = subject.store, subject.run
    status: dict[str, str] = {
        NodeKey.parse(n.node_id).node_id: n.status + (f" {n.handoff_id}" if n.handoff_id else "")
        for n in store.nodes_for_run(run.id)
    }
    # A leaf synthesized again after a phase iteration (its criteria judged again): the newest.
    for event in store.events_for_run(run.id, AcceptanceRejudged):
        local = NodeKey.parse(event.node_id or "").node_id
        if local in status:
            status[local] = status[local].split(";", 1)[0] + f"; criteria judged again in {event.handoff_id}"
    lines = []
    for plan_id in run.plan_ids:
        plan = store.get_plan(plan_id)
        lines.append(f"plan {plan_id}: {plan.query}")
        lines += _tree_lines(plan.tree.root, status=status)
    events = store.events_for_run(run.id, IterationDone)
    lines += [f"iteration: {event.message} — {json.dumps(data_of(event))}" for event in events]
    return lines


def _run_handoffs(subject: _RunSubject) -> list[str]:
    return [
        json.dumps(h.model_dump(mode="json", exclude={"input"}), indent=1)
        for h in subject.store.handoffs_for_run(subject.run.id)
    ]


def _run_summary(subject: _RunSubject) -> list[str]:
    """The whole result at a glance: its confidence and any disagreement between its sources first,
    then every part of the report with its first lines, the counts, and where to go next."""
    run = subject.run
    if run.status not in FINISHED:
        return [not_ready(run)]
    result = subject.result
    output = result_synthesis(subject.store, run)
    contradictions = list(output.contradictions) if output else []
    meta = result.metadata
    lines = [
        f"confidence: {result.confidence.level} — {result.confidence.reasoning}",
        *contradictions,
        *summary_parts(result.findings, contradictions),
        f"{len(result.sources)} sources cited of {meta.sources_read} read; "
        f"citations {meta.citations_verified}/{meta.citations_made} verified, "
        f"{meta.citations_dropped} dropped; {meta.llm_calls} model calls, ${meta.cost_usd:.4f} ({meta.backend})"
        + (f"; {meta.reused_answers} answers reused, not asked again" if meta.reused_answers else ""),
    ]
    if result.gaps:
        lines.append(f"{len(result.gaps)} gap{'s' if len(result.gaps) > 1 else ''}: the gaps view lists them")
    if run.status == "partial":
        lines.append(
            "partial: some parts failed (the gaps view names them and why); "
            f"execute_plan(run_id='{run.id}', retry=true) retries only them"
        )
    if result.suggested_followups:
        lines.append("follow-ups: " + " | ".join(result.suggested_followups[:SUMMARY_FOLLOWUPS]))
    return [*lines, "more: report_results views report, sources, facts, confidence, gaps, followups, tree"]


def _run_report(subject: _RunSubject) -> list[str]:
    result = subject.result
    return [part for part in result.findings.split("\n\n") if part.strip()] + [
        "metadata: " + result.metadata.model_dump_json()
    ]


def _run_sources(subject: _RunSubject) -> list[str]:
    return [
        f"{s.id} {s.title} <{s.url_or_path}> relevance={s.relevance} ({s.reason})"
        for s in subject.result.sources
    ]


def _run_facts(subject: _RunSubject) -> list[str]:
    _ = subject.result  # a run without a report is refused here, as in the other views
    store = subject.store
    facts = store.get_facts(facts_of(result_synthesis(store, subject.run)))
    citations = store.citations([f.id for f in facts])
    return [_fact_line(f, citations[f.id]) for f in facts]


_RUN_VIEWS: dict[str, Callable[[_RunSubject], list[str]]] = {
    "tree": _run_tree,
    "handoff": _run_handoffs,
    "summary": _run_summary,
    "report": _run_report,
    "sources": _run_sources,
    "facts": _run_facts,
    "confidence": lambda subject: [
        f"{subject.result.confidence.level}: {subject.result.confidence.reasoning}"
    ],
    "gaps": lambda subject: subject.result.gaps or ["no gaps recorded"],
    "followups": lambda subject: subject.result.suggested_followups or ["no follow-ups suggested"],
}


def _fact_line(fact: Fact, citations: list[Citation], *, source: bool = True) -> str:
    """One fact: id, status, corroboration, source, statement, quote, and the other sources' quotes."""
    status = "verified" if fact.verified else "UNVERIFIED"
    if fact.corroborations > 1:
        status += f", corroborated by {fact.corroborations} sources"
    line = f"{fact_label(fact.id)} [{status}]" + (f" {source_label(fact.source_id)}" if source else "")
    line += f' {fact.statement} | "{fact.quote}"'
    others = [c for c in citations if c.source_id != fact.source_id]
    if others:
        line += " | also " + "; ".join(f'{source_label(c.source_id)}: "{c.quote}"' for c in others)
    return line


@dataclass(frozen=True)
class _HandoffSubject:
    store: Store
    handoff: Handoff

    @property
    def report(self) -> SynthesisOutput | None:
        return self.handoff.output_as(SynthesisOutput)

    @property
    def extraction(self) -> StoredExtraction | None:
        return self.handoff.output_as(StoredExtraction)


def _handoff_summary(subject: _HandoffSubject) -> list[str]:
    handoff = subject.handoff
    return [*handoff.summary, f"role {handoff.role}, status {handoff.status}, backend {handoff.backend}"]


def _handoff_facts(subject: _HandoffSubject) -> list[str]:
    store, handoff = subject.store, subject.handoff
    facts = store.facts_for_handoffs([handoff.id]) or store.get_facts(handoff.fact_ids)
    citations = store.citations([f.id for f in facts])
    return [_fact_line(f, citations[f.id], source=False) for f in facts] or ["no facts"]


def _handoff_sources(subject: _HandoffSubject) -> list[str] | None:
    curation = curation_behind(subject.store, subject.handoff.id)  # a scout's, or a discovery synthesis's
    if curation is not None:
        return [
            f"{i + 1}. {s.title} <{s.ref}> score={s.score} tags={','.join(s.tags)}"
            + (f" covers={','.join(f'Q{n}' for n in s.covers)}" if s.covers else "")
            + f" — {s.rationale}"
            + (f" | scan: {s.scan}" if s.scan else "")
            + (
                f" | copies, one source with it: {', '.join(f'<{ref}>' for ref in s.copies)}"
                if s.copies
                else ""
            )
            + (f" | {s.lead[:LEAD_IN_VIEW]}" if s.lead else "")
            for i, s in enumerate(curation.sources)
        ] + [f"Q{n}. {question}" for n, question in enumerate(curation.questions, 1)]
    asked = subject.handoff.input_as(ExtractorInput)
    if asked is None:
        return None
    source = subject.store.get_source(asked.source_id)
    return [f"{source_label(source.id)} {source_name(source)} <{source.ref}>"]


def _handoff_report(subject: _HandoffSubject) -> list[str] | None:
    if subject.report is None:
        return None
    return [part for part in subject.report.report.split("\n\n") if part.strip()]


def _handoff_confidence(subject: _HandoffSubject) -> list[str] | None:
    report, extraction = subject.report, subject.extraction
    confidence = report.confidence if report else extraction.confidence if extraction else None
    return None if confidence is None else [f"{confidence.level}: {confidence.reasoning}"]


def _handoff_gaps(subject: _HandoffSubject) -> list[str]:
    report, extraction = subject.report, subject.extraction
    gaps = report.gaps if report else extraction.source_identified_gaps if extraction else []
    return list(gaps) or ["no gaps recorded"]


def _handoff_followups(subject: _HandoffSubject) -> list[str]:
    report, extraction = subject.report, subject.extraction
    follow = (report.suggested_followups if report else []) or [
        q.question for q in (extraction.follow_up_questions if extraction else [])
    ]
    return follow or ["no follow-ups suggested"]


_HANDOFF_VIEWS: dict[str, Callable[[_HandoffSubject], list[str] | None]] = {
    "handoff": lambda subject: [json.dumps(subject.handoff.model_dump(mode="json"), indent=1)],
    "summary": _handoff_summary,
    "facts": _handoff_facts,
    "sources": _handoff_sources,
    "report": _handoff_report,
    "confidence": _handoff_confidence,
    "gaps": _handoff_gaps,
    "followups": _handoff_followups,
}
