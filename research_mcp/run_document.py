"""One run, read from the store for whoever shows it: the whole finished run as one document (the
exports write it as JSON and render it as HTML), and the live snapshot the MCP App view refreshes
while the run goes on (plan tree with node states, totals, and the document once the run has ended).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from research_mcp.citations import CITATION
from research_mcp.contracts import Confidence, Source
from research_mcp.ids import fact_label, source_label, source_number
from research_mcp.reports import assemble_result, result_synthesis, source_name
from research_mcp.runs.snapshot import plan_tree, read_snapshot, run_totals
from research_mcp.storage.outputs import StoredCuration
from research_mcp.storage.store import Store

__all__ = ["UNDER_WAY", "RunView", "live_snapshot", "run_document"]

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


def _source_location(source: Source) -> str:
    """Where a corpus document lives (its root and path), from the source's metadata."""
    if source.metadata.root and source.metadata.path:
        return f"{source.metadata.root.rstrip('/')}/{source.metadata.path}"
    return ""


def run_document(store: Store, run_id: str) -> dict[str, Any]:
    """Everything about a finished run, as JSON-ready data."""
    run = store.get_run(run_id)
    snapshot = read_snapshot(store, run)
    result = assemble_result(store, run_id)
    output = result_synthesis(store, run)
    cited_in_text = [int(number) for number in CITATION.findall(result.findings)]
    fact_ids = sorted(
        {*(output.fact_ids if output else []), *(output.cited if output else []), *cited_in_text}
    )
    facts = store.get_facts(fact_ids)
    citations = store.citations([fact.id for fact in facts])
    relevance = {source.id: source.relevance for source in result.sources}
    reasons = {source.id: source.reason for source in result.sources}
    source_ids = list(
        dict.fromkeys(
            [source_number(s.id) for s in result.sources]
            + [sid for f in facts for sid in [f.source_id, *(c.source_id for c in citations[f.id])]]
        )
    )
    sources = []
    for sid in source_ids:
        source = store.get_source(sid)
        sources.append(
            {
                "id": source_label(sid),
                "url_or_path": source.ref,
                "title": source.title,
                "name": source_name(source),
                "kind": source.kind,
                "location": _source_location(source),
                "relevance": relevance.get(source_label(sid), 0.0),
                "relevance_reason": reasons.get(source_label(sid), ""),
            }
        )
    queries = [store.get_plan(plan_id).query for plan_id in run.plan_ids]
    return {
        "run": {
            "id": run_id,
            "status": run.status,
            "query": " + ".join(queries),
            "backend": run.backend,
            "created_at": run.created_at,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "error": run.error,
            "totals": snapshot.totals.as_dict(),
        },
        "findings": result.findings,
        "sources": sources,
        "confidence": result.confidence.model_dump(mode="json"),
        "gaps": result.gaps,
        "metadata": result.metadata.model_dump(mode="json"),
        "suggested_followups": result.suggested_followups,
        "facts": [
            {
                "id": fact_label(fact.id),
                "statement": fact.statement,
                "quote": fact.quote,
                "verified": fact.verified,
                "source_id": source_label(fact.source_id),
                "location": list(fact.location) if fact.location else None,
                "confidence": fact.confidence,
                "question": fact.question,
                "corroborations": fact.corroborations,
                "also_in": [
                    {"source_id": source_label(c.source_id), "quote": c.quote}
                    for c in citations[fact.id]
                    if c.source_id != fact.source_id
                ],
            }
            for fact in facts
        ],
        "plan": [
            {"plan_id": tree.plan_id, "query": tree.query, "root": tree.root.as_dict()}
            for tree in snapshot.trees(store)
        ],
    }


def _scout_tags(store: Store, run_id: str) -> dict[str, list[str]]:
    """The tags the run's scouts gave each source they ranked (authoritative, recent, ...), by ref."""
    tags: dict[str, list[str]] = {}
    for handoff in store.handoffs_for_run(run_id, role="scout"):
        if isinstance(handoff.output, StoredCuration):
            for ranked in handoff.output.sources:
                if ranked.tags:
                    tags.setdefault(ranked.ref, list(ranked.tags))
    return tags


def live_snapshot(store: Store, run_id: str) -> dict[str, Any]:
    """What the run view shows now: the run, its totals and plan tree with each node's state, and,
    once the run has ended with a report, the report with its facts (quote, source) and sources."""
    run = store.get_run(run_id)
    totals = run_totals(store, run)
    finished = run.status not in UNDER_WAY
    result = None
    if finished and run.result_handoff_id:
        document = run_document(store, run_id)
        tags = _scout_tags(store, run_id)
        result = {
            "findings": document["findings"],
            "facts": document["facts"],
            "sources": [
                # the view shows a source by its title: a corpus document's is its path (reports.source_name)
                {
                    **{key: value for key, value in source.items() if key != "name"},
                    "title": source["name"],
                    "tags": tags.get(source["url_or_path"], []),
                }
                for source in document["sources"]
            ],
            "confidence": document["confidence"],
            "gaps": document["gaps"],
            "suggested_followups": document["suggested_followups"],
        }
    queries = [store.get_plan(plan_id).query for plan_id in run.plan_ids]
    snapshot = {
        "run": {
            "id": run_id,
            "status": run.status,
            "query": " + ".join(queries),
            "backend": run.backend or "",
            "error": run.error,
        },
        "finished": finished,
        "totals": {
            "nodes_done": totals.nodes_done,
            "nodes_total": totals.nodes_total,
            "sources": totals.sources,
            "facts": totals.facts,
            "facts_verified": totals.facts_verified,
            "tokens": totals.tokens,
            "cost_usd": round(totals.cost_usd, 6),
            "elapsed_s": round(totals.elapsed_s, 2),
        },
        "plan": [
            {"plan_id": tree.plan_id, "query": tree.query, "root": tree.root.as_dict()}
            for tree in plan_tree(store, run)
        ],
        "result": result,
    }
    # Checked against the model whose schema run_view publishes: a field added here and not there fails.
    return RunView.model_validate(snapshot).model_dump(mode="json")
