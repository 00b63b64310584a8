"""The presentation layer's pull: a run's result assembled from the store, its views, and pages that
never exceed a token budget.

Tokens are approximated as characters / 3, rounded up, over the whole JSON result. English prose
runs at about 4 characters per Claude token and JSON at about 3, so the figure errs high: a page
said to fit `max_tokens` does.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from research_mcp.core.citations import WRITTEN_CITATION
from research_mcp.core.contracts import (
    FINISHED,
    Fact,
    PlanNode,
    ReportPage,
    ResearchMetadata,
    ResearchResult,
    Source,
    SourceRef,
    SynthesisOutput,
    View,
)
from research_mcp.core.errors import InvalidInput, NotFound
from research_mcp.core.ids import NodeKey, fact_label, kind_of_id, source_label
from research_mcp.core.report_parts import summary_parts
from research_mcp.core.role_inputs import ExtractorInput
from research_mcp.roles.curation import curation_behind
from research_mcp.runs.snapshot import read_snapshot
from research_mcp.storage.events import AcceptanceRejudged, IterationDone, Searched, data_of
from research_mcp.storage.models import Citation, Run, StoredPlan
from research_mcp.storage.outputs import Handoff, StoredCuration, StoredExtraction, StoredSynthesis
from research_mcp.storage.store import Store

__all__ = [
    "Assembled",
    "RankedSource",
    "approx_tokens",
    "assemble",
    "assemble_result",
    "not_ready",
    "page_of",
    "report_markdown",
    "view_items",
]

CHARS_PER_TOKEN = 3
MIN_MAX_TOKENS = 200
# Hosts cut or refuse tool results over about 25,000 tokens; a page stays well under that.
MAX_MAX_TOKENS = 20_000
#: The characters of a curated source's opening shown in the sources view.
LEAD_IN_VIEW = 160
SUMMARY_FOLLOWUPS = 3  # follow-up questions the summary view names (the followups view has them all)


def approx_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def result_synthesis(store: Store, run: Run) -> StoredSynthesis | None:
    """The run's final report (or partial report), once it has one."""
    if not run.result_handoff_id:
        return None
    return store.get_handoff(run.result_handoff_id).output_as(StoredSynthesis)


def _facts_of(output: StoredSynthesis | None) -> list[int]:
    """Every fact a result speaks of: its scope, what it cites, and every id its report text cites, so
    a reader can resolve each citation of the report from the run's own facts view."""
    if output is None:
        return []
    in_text = [int(found) for found in WRITTEN_CITATION.findall(output.report)]
    return sorted({*output.fact_ids, *output.cited, *in_text})


def _cited(output: StoredSynthesis) -> list[int]:
    in_text = [int(found) for found in WRITTEN_CITATION.findall(output.report)]
    return sorted({*output.cited, *in_text}) or list(output.fact_ids)


@dataclass(frozen=True)
class RankedSource:
    """A source the report cites, with its relevance: the cited facts it gives or backs."""

    source: Source
    relevance: float
    reason: str

    def ref(self) -> SourceRef:
        return SourceRef(
            id=source_label(self.source.id),
            url_or_path=self.source.ref,
            title=source_name(self.source),
            relevance=self.relevance,
            reason=self.reason,
        )


@dataclass(frozen=True)
class Assembled:
    """A run's result, and the sources behind it as read from the store (each read once)."""

    result: ResearchResult
    output: StoredSynthesis
    sources: list[RankedSource]


def assemble_result(store: Store, run_id: str) -> ResearchResult:
    """A finished (or partial) run as findings, sources, confidence, gaps, metadata and follow-ups."""
    return assemble(store, store.get_run(run_id)).result


def assemble(store: Store, run: Run) -> Assembled:
    """The run's result with its ranked sources; a run without a report is refused (`not_ready`)."""
    output = result_synthesis(store, run)
    if output is None:
        raise InvalidInput(not_ready(run))
    ranked = _ranked_sources(store, output)
    result = ResearchResult(
        findings=output.report,
        sources=[source.ref() for source in ranked],
        confidence=output.confidence,
        gaps=output.gaps,
        metadata=_metadata(store, run, output),
        suggested_followups=output.suggested_followups,
        confidence_reasons=output.confidence_reasons,
    )
    return Assembled(result, output, ranked)


def _ranked_sources(store: Store, output: StoredSynthesis) -> list[RankedSource]:
    """Each source with the cited facts it supports, as their source or corroborating them."""
    facts = store.get_facts(_cited(output))
    citations = store.citations([fact.id for fact in facts])
    own: dict[int, int] = {}
    backs: dict[int, int] = {}
    for fact in facts:
        own[fact.source_id] = own.get(fact.source_id, 0) + 1
        for sid in dict.fromkeys(c.source_id for c in citations[fact.id] if c.source_id != fact.source_id):
            backs[sid] = backs.get(sid, 0) + 1
    counts = {sid: own.get(sid, 0) + backs.get(sid, 0) for sid in dict.fromkeys([*own, *backs])}
    top = max(counts.values(), default=1)
    # One order in every view: the most relevant first, ties by id.
    counts = dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    return [
        RankedSource(
            store.get_source(sid),
            relevance=round(count / top, 2),
            reason=_relevance_reason(own.get(sid, 0), backs.get(sid, 0), len(facts)),
        )
        for sid, count in counts.items()
    ]


def _metadata(store: Store, run: Run, output: StoredSynthesis) -> ResearchMetadata:
    totals = read_snapshot(store, run).totals
    # The scouts' searches, and the searches leaves ran themselves (one "search" event each).
    searches = sum(
        curation.searches
        for h in store.handoffs_for_run(run.id, role="scout")
        if (curation := h.output_as(StoredCuration)) is not None
    ) + len(store.events_for_run(run.id, Searched))
    return ResearchMetadata(
        searches=searches,
        sources_read=totals.sources,
        llm_calls=totals.llm_calls,
        reused_answers=totals.reused,
        tokens_in=totals.tokens_in,
        tokens_out=totals.tokens_out,
        cost_usd=round(totals.cost_usd, 6),
        elapsed_s=round(totals.elapsed_s, 2),
        citations_made=output.citations.made,
        citations_verified=output.citations.verified,
        citations_dropped=output.citations.dropped,
        backend=run.backend,
    )


def _relevance_reason(own: int, backs: int, cited: int) -> str:
    """Why a source ranks where it does, in a few words: the cited facts it gives and corroborates."""
    parts = [f"source of {own} of the {cited} cited facts"] if own else []
    parts += [f"corroborates {backs}"] if backs else []
    return ", ".join(parts)


def not_ready(run: Run) -> str:
    """Why a run has no report, and what gives it one: waiting on it, or resuming it."""
    run_id, status = run.id, run.status
    reason = f"run {run_id} is {status}" + (f": {run.error}" if run.error else "")
    if status in ("pending", "running"):
        return f"{reason}; it has no report yet: wait on it with execute_plan(run_id='{run_id}')."
    return (
        f"{reason}; it has no report yet. Its finished parts are kept: resume it with "
        f"execute_plan(run_id='{run_id}') (or in a terminal: research-mcp run --resume {run_id})."
    )


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
    facts = store.get_facts(_facts_of(result_synthesis(store, subject.run)))
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


def page_of(ident: str, view: View, items: list[str], cursor: str | None, max_tokens: int) -> ReportPage:
    """The page starting at `cursor`, as large as fits in `max_tokens` (whole JSON result; the tool
    boundary holds it between MIN_MAX_TOKENS and MAX_MAX_TOKENS)."""
    item, offset = 0, 0
    if cursor:
        try:
            item, offset = (int(part) for part in cursor.split(":"))
        except ValueError:
            raise InvalidInput(
                f"cursor {cursor!r} is not one this server gave; omit it to start over."
            ) from None
    # Characters of text per page: the budget less the envelope, halved again for JSON escaping.
    budget = (max_tokens * CHARS_PER_TOKEN) - 300
    while True:
        text, next_item, next_offset = _fill(items, item, offset, budget)
        next_cursor = f"{next_item}:{next_offset}" if next_item < len(items) else None
        page = ReportPage(id=ident, view=view, text=text, cursor=next_cursor, page_tokens=0)
        for _ in range(3):  # the count is part of what it counts: settle it
            page.page_tokens = approx_tokens(page.model_dump_json())
        if page.page_tokens <= max_tokens or budget <= 50:
            return page
        budget = int(budget * 0.8)


def _fill(items: list[str], item: int, offset: int, budget: int) -> tuple[str, int, int]:
    parts: list[str] = []
    used = 0
    while item < len(items):
        rest = items[item][offset:]
        room = budget - used - (1 if parts else 0)
        if len(rest) <= room:
            parts.append(rest)
            used += len(rest) + (1 if len(parts) > 1 else 0)
            item, offset = item + 1, 0
            continue
        if room > 0 and (not parts or room > 200):
            parts.append(rest[:room])
            offset += room
        break
    return "\n".join(parts), item, offset


_UNSAFE_SCHEME = re.compile(r"^\s*<?\s*(?:javascript|vbscript|data|file)\s*:", re.IGNORECASE)
# A `<` that could open raw HTML or an autolink: followed by a letter, `/`, `!` or `?`. Any other `<`
# ("x < 3", "<=") is text already and stays as it is.
_OPENS_TAG = re.compile(r"(\\*)<(?=[A-Za-z/!?])")
_MD_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(\s+\"[^\"]*\")?\)")


def safe_markdown(text: str) -> str:
    """Markdown a viewer may render without running or loading anything: raw HTML escaped (a `<` never
    opens a tag or an autolink, and reads as `<`, not `&lt;`), images and links to javascript:, data:, vbscript: or file: addresses
    reduced to their text. Source text and model text are untrusted; a Markdown viewer is a browser."""

    def link(match: re.Match[str]) -> str:
        image, label, url = match.group(1), match.group(2), match.group(3)
        if image or _UNSAFE_SCHEME.match(url):
            return label
        return match.group(0)

    return _MD_LINK.sub(link, _OPENS_TAG.sub(_escape_opening, text))


def _escape_opening(match: re.Match[str]) -> str:
    """`\\<`: CommonMark shows a backslash-escaped `<` as `<` and never as a tag or an autolink;
    the backslashes before it are doubled so that none of them escapes the escape."""
    return match.group(1) * 2 + "\\<"


def source_name(source: Source) -> str:
    """What a reader sees a source as: a corpus document's path under its corpus folder
    ("doc/zlib1g/copyright", where four files are titled "copyright"), after its title when the
    document has one of its own ("Kelp forests (notes/forests.md)"); else its title."""
    path = source.metadata.path
    if source.kind != "corpus" or not path:
        return source.title
    name = path.rsplit("/", 1)[-1]
    if not source.title or source.title in (name, name.rsplit(".", 1)[0]):
        return path
    return f"{source.title} ({path})"


def report_markdown(store: Store, run_id: str) -> str:
    """A run's result as one Markdown document: findings, confidence, gaps, sources."""
    result = assemble_result(store, run_id)
    # The confidence near the top, under the title: read before the answer, as in every view.
    title, _, body = result.findings.partition("\n")
    said = f"**Confidence:** {result.confidence.level} — {result.confidence.reasoning}"
    top = [title, "", said, body] if title.startswith("# ") else [said, "", result.findings]
    lines = [*top, ""]
    if result.gaps:
        lines += ["## Gaps", *[f"- {gap}" for gap in result.gaps], ""]
    lines += [
        "## Sources",
        *[f"- {s.id} [{s.title or s.url_or_path}]({s.url_or_path})" for s in result.sources],
    ]
    meta = result.metadata
    lines += [
        "",
        f"_{meta.citations_verified}/{meta.citations_made} citations verified; {meta.backend} backend_",
    ]
    return safe_markdown("\n".join(lines))
