"""A run's result assembled from the store: findings, the sources it cites ranked by what they give,
confidence, gaps, metadata and follow-ups; and why a run without a report has none yet."""

from __future__ import annotations

from dataclasses import dataclass

from research_mcp.core.citations import WRITTEN_CITATION
from research_mcp.core.contracts import ResearchMetadata, ResearchResult, Source, SourceRef
from research_mcp.core.errors import InvalidInput
from research_mcp.core.ids import source_label
from research_mcp.runs.snapshot import read_snapshot
from research_mcp.storage.events import Searched
from research_mcp.storage.models import Run
from research_mcp.storage.outputs import StoredCuration, StoredSynthesis
from research_mcp.storage.store import Store

__all__ = [
    "Assembled",
    "RankedSource",
    "assemble",
    "assemble_result",
    "facts_of",
    "not_ready",
    "result_synthesis",
    "source_name",
]


def result_synthesis(store: Store, run: Run) -> StoredSynthesis | None:
    """The run's final report (or partial report), once it has one."""
    if not run.result_handoff_id:
        return None
    return store.get_handoff(run.result_handoff_id).output_as(StoredSynthesis)


def facts_of(output: StoredSynthesis | None) -> list[int]:
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
