"""One run, read from the store for whoever shows it: the whole finished run as one document (the
exports write it as JSON and render it as HTML), and the live snapshot the MCP App view refreshes
while the run goes on (plan tree with node states, totals, and the document once the run has ended).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from research_mcp.core.citations import CITATION
from research_mcp.core.contracts import Confidence, Fact, ResearchMetadata, Source
from research_mcp.core.ids import fact_label, source_label
from research_mcp.reports import assemble, source_name
from research_mcp.runs.snapshot import PlanTree, RunTotals, plan_tree, read_snapshot, run_totals
from research_mcp.storage.models import Citation
from research_mcp.storage.outputs import StoredCuration
from research_mcp.storage.store import Store

__all__ = ["UNDER_WAY", "RunDocument", "RunView", "live_snapshot", "run_document"]

UNDER_WAY = ("pending", "running")  # any other status has ended: the view stops refreshing


class _Shown(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ViewNode(_Shown):
    id: str
    kind: str
    title: str
    state: str
    questions: list[str]
    children: list[ViewNode]


class ViewPlan(_Shown):
    plan_id: str
    query: str
    root: ViewNode


class ViewRun(_Shown):
    id: str
    status: str
    query: str
    backend: str
    error: str | None


class ViewTotals(_Shown):
    nodes_done: int
    nodes_total: int
    sources: int
    facts: int
    facts_verified: int
    tokens: int
    cost_usd: float
    elapsed_s: float

    @classmethod
    def of(cls, totals: RunTotals) -> ViewTotals:
        return cls(**totals.as_dict())


class ViewCitation(_Shown):
    source_id: str
    quote: str


class ViewFact(_Shown):
    id: str
    statement: str
    quote: str
    verified: bool
    source_id: str
    location: list[int] | None
    confidence: float
    question: str | None
    corroborations: int
    also_in: list[ViewCitation]

    @classmethod
    def of(cls, fact: Fact, citations: list[Citation]) -> ViewFact:
        return cls(
            id=fact_label(fact.id),
            statement=fact.statement,
            quote=fact.quote,
            verified=fact.verified,
            source_id=source_label(fact.source_id),
            location=list(fact.location) if fact.location else None,
            confidence=fact.confidence,
            question=fact.question,
            corroborations=fact.corroborations,
            also_in=[
                ViewCitation(source_id=source_label(c.source_id), quote=c.quote)
                for c in citations
                if c.source_id != fact.source_id
            ],
        )


class DocumentSource(_Shown):
    """A source of the run: one the report cites (ranked by relevance), or one a fact comes from."""

    id: str
    url_or_path: str
    title: str
    #: What a reader sees it as (reports.source_name): a corpus document's path under its title.
    name: str
    kind: str
    location: str
    relevance: float
    relevance_reason: str

    @classmethod
    def of(cls, source: Source, relevance: float = 0.0, reason: str = "") -> DocumentSource:
        return cls(
            id=source_label(source.id),
            url_or_path=source.ref,
            title=source.title,
            name=source_name(source),
            kind=source.kind,
            location=_source_location(source),
            relevance=relevance,
            relevance_reason=reason,
        )


class ViewSource(_Shown):
    id: str
    url_or_path: str
    title: str
    kind: str
    location: str
    relevance: float
    relevance_reason: str = ""
    tags: list[str]


class ViewResult(_Shown):
    findings: str
    facts: list[ViewFact]
    sources: list[ViewSource]
    confidence: Confidence
    gaps: list[str]
    suggested_followups: list[str]


class RunView(_Shown):
    """The run as the MCP App view shows it: `run_view`'s structured content (and output schema)."""

    run: ViewRun
    finished: bool
    totals: ViewTotals
    plan: list[ViewPlan]
    result: ViewResult | None


class DocumentRun(_Shown):
    id: str
    status: str
    query: str
    backend: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    error: str | None
    totals: ViewTotals


class RunDocument(_Shown):
    """A finished run whole: what the exports write (JSON) and render (HTML)."""

    run: DocumentRun
    findings: str
    sources: list[DocumentSource]
    confidence: Confidence
    gaps: list[str]
    metadata: ResearchMetadata
    suggested_followups: list[str]
    facts: list[ViewFact]
    plan: list[ViewPlan]


def _source_location(source: Source) -> str:
    """Where a corpus document lives (its root and path), from the source's metadata."""
    if source.metadata.root and source.metadata.path:
        return f"{source.metadata.root.rstrip('/')}/{source.metadata.path}"
    return ""


def _plans(trees: list[PlanTree]) -> list[ViewPlan]:
    return [
        ViewPlan(plan_id=tree.plan_id, query=tree.query, root=ViewNode.model_validate(tree.root.as_dict()))
        for tree in trees
    ]


def run_document(store: Store, run_id: str) -> RunDocument:
    """Everything about a finished run: its result, every fact it rests on, their sources, its plan."""
    run = store.get_run(run_id)
    snapshot = read_snapshot(store, run)
    assembled = assemble(store, run)
    result, output = assembled.result, assembled.output
    cited_in_text = [int(number) for number in CITATION.findall(result.findings)]
    # A fact lent by another user's research is shown without the question it asked (Store.as_lent).
    facts = store.as_lent(
        store.get_facts(sorted({*output.fact_ids, *output.cited, *cited_in_text})), run.caller
    )
    citations = store.citations([fact.id for fact in facts])
    sources = [DocumentSource.of(s.source, s.relevance, s.reason) for s in assembled.sources]
    ranked = {s.source.id for s in assembled.sources}
    behind_facts = [sid for f in facts for sid in [f.source_id, *(c.source_id for c in citations[f.id])]]
    sources += [
        DocumentSource.of(store.get_source(sid)) for sid in dict.fromkeys(behind_facts) if sid not in ranked
    ]
    queries = [store.get_plan(plan_id).query for plan_id in run.plan_ids]
    return RunDocument(
        run=DocumentRun(
            id=run_id,
            status=run.status,
            query=" + ".join(queries),
            backend=run.backend,
            created_at=run.created_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
            error=run.error,
            totals=ViewTotals.of(snapshot.totals),
        ),
        findings=result.findings,
        sources=sources,
        confidence=result.confidence,
        gaps=result.gaps,
        metadata=result.metadata,
        suggested_followups=result.suggested_followups,
        facts=[ViewFact.of(fact, citations[fact.id]) for fact in facts],
        plan=_plans(snapshot.trees(store)),
    )


def _scout_tags(store: Store, run_id: str) -> dict[str, list[str]]:
    """The tags the run's scouts gave each source they ranked (authoritative, recent, ...), by ref."""
    tags: dict[str, list[str]] = {}
    for handoff in store.handoffs_for_run(run_id, role="scout"):
        if isinstance(handoff.output, StoredCuration):
            for ranked in handoff.output.sources:
                if ranked.tags:
                    tags.setdefault(ranked.ref, list(ranked.tags))
    return tags


def _view_result(store: Store, run_id: str) -> ViewResult:
    document = run_document(store, run_id)
    tags = _scout_tags(store, run_id)
    return ViewResult(
        findings=document.findings,
        facts=document.facts,
        sources=[
            # the view shows a source by its title: a corpus document's is its path (reports.source_name)
            ViewSource(
                **source.model_dump(exclude={"name", "title"}),
                title=source.name,
                tags=tags.get(source.url_or_path, []),
            )
            for source in document.sources
        ],
        confidence=document.confidence,
        gaps=document.gaps,
        suggested_followups=document.suggested_followups,
    )


def live_snapshot(store: Store, run_id: str) -> RunView:
    """What the run view shows now: the run, its totals and plan tree with each node's state, and,
    once the run has ended with a report, the report with its facts (quote, source) and sources."""
    run = store.get_run(run_id)
    finished = run.status not in UNDER_WAY
    queries = [store.get_plan(plan_id).query for plan_id in run.plan_ids]
    return RunView(
        run=ViewRun(
            id=run_id,
            status=run.status,
            query=" + ".join(queries),
            backend=run.backend or "",
            error=run.error,
        ),
        finished=finished,
        totals=ViewTotals.of(run_totals(store, run)),
        plan=_plans(plan_tree(store, run)),
        result=_view_result(store, run_id) if finished and run.result_handoff_id else None,
    )
