"""The research service: what each MCP tool does, in domain terms, returning compact handles.

The server wires tools to these methods and nothing else. Arguments arrive checked and typed (the
tool boundary, server/inputs.py, holds every limit) with the model backend already chosen. Every method returns a `CompactReturn`
(at most 1,000 bytes of JSON whatever the work behind it) or a `ReportPage` (under `max_tokens`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from research_mcp.config import Settings
from research_mcp.contracts import (
    FINISHED,
    Budget,
    CompactReturn,
    ExtractorTaskSpec,
    PlannerOutput,
    PlanNode,
    ReportPage,
    View,
)
from research_mcp.errors import InvalidInput
from research_mcp.ids import source_label
from research_mcp.llm.base import ModelBackend
from research_mcp.llm.pricing import FALLBACK_PRICE, price_for
from research_mcp.reports import page_of, view_items
from research_mcp.roles.base import BudgetTracker, RoleDeps
from research_mcp.roles.extractor import extract
from research_mcp.roles.planner import plan_research
from research_mcp.roles.scout import scout
from research_mcp.run_document import live_snapshot
from research_mcp.runs.manager import Progress, RunManager
from research_mcp.runs.snapshot import read_snapshot
from research_mcp.scope import judge_scope
from research_mcp.sources.library import SourceLibrary
from research_mcp.storage.knowledge_base import KnowledgeBase
from research_mcp.storage.models import Run
from research_mcp.storage.outputs import StoredCuration, StoredExtraction, StoredSynthesis
from research_mcp.storage.store import Store

__all__ = ["MAX_COMPACT_BYTES", "ResearchService", "fit_compact", "result_bytes"]

logger = logging.getLogger(__name__)

MAX_COMPACT_BYTES = 1000
NO_SOURCES = (
    "no sources to search: set RESEARCH_MCP_CORPUS (your documents) or TAVILY_API_KEY (web), "
    "or give leaf sources (URLs or text)"
)
# What the SDK puts around the two parts: {"_meta":{"io.modelcontextprotocol/serverInfo":{...}},
# "content":[{"type":"text","text":…}],"structuredContent":…,"isError":false,"resultType":"complete"}.
RESULT_ENVELOPE_BYTES = 200
LINE_CHARS = 160
AUTHORIZATION_LEAVES = 8  # leaves a run's authorization question names, per plan


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"


def result_bytes(result: CompactReturn) -> int:
    """Bytes a host receives for this result: the structured JSON, its text rendering, the envelope.

    Both parts are measured as JSON with non-ASCII escaped (the larger of the encodings a client may
    see): an ellipsis costs six bytes, a line break two.
    """
    structured = json.dumps(result.model_dump(mode="json"), separators=(",", ":"))
    return len(structured) + len(json.dumps(result.render())) + RESULT_ENVELOPE_BYTES


def fit_compact(result: CompactReturn) -> CompactReturn:
    """Shorten summary lines and drop suggestions until the whole result is at most MAX_COMPACT_BYTES."""
    result.summary = [_line(line) for line in result.summary[:3]]
    while result_bytes(result) > MAX_COMPACT_BYTES:
        longest = max(range(len(result.summary)), key=lambda i: len(result.summary[i]), default=None)
        if result.next and len(result.next) > 1:
            result.next.pop()
        elif longest is not None and len(result.summary[longest]) > 40:
            result.summary[longest] = result.summary[longest][: len(result.summary[longest]) * 2 // 3] + "…"
        elif result.metrics:
            result.metrics.popitem()
        elif result.next and len(result.next[0]) > 40:
            result.next[0] = result.next[0][: len(result.next[0]) * 2 // 3] + "…"
        else:
            break
    return result


@dataclass
class ResearchService:
    settings: Settings
    store: Store
    sources: SourceLibrary
    runs: RunManager
    knowledge: KnowledgeBase | None = None
    # One limit on model calls for the whole server, shared by every run and tool call.
    limiter: anyio.CapacityLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.limiter = anyio.CapacityLimiter(self.settings.concurrency)

    def deps(self, model: ModelBackend, budget: Budget | None = None) -> RoleDeps:
        return RoleDeps(
            store=self.store,
            model=model,
            sources=self.sources,
            settings=self.settings,
            limiter=self.limiter,
            budget=BudgetTracker.from_limits(budget),
            knowledge=self.knowledge,
        )

    def _price(self, model: ModelBackend) -> tuple[float, float]:
        """USD per million input and output tokens of the model a run would use (0 without a paid model)."""
        if model.name != "anthropic":
            return (0.0, 0.0)
        price = price_for(self.settings.anthropic_model) or FALLBACK_PRICE
        return (price.input_per_mtok, price.output_per_mtok)

    def _searches_nothing(self, root: PlanNode) -> bool:
        """A leaf must search, and there is neither web search nor a corpus to search."""
        searching = any(not node.children and not node.sources for node in root.walk())
        return searching and not self.sources.web_configured and self.sources.corpus is None

    # --- plan_research -------------------------------------------------------------------------

    async def plan(
        self, query: str, *, suggested: PlannerOutput | None, budget: Budget | None, model: ModelBackend
    ) -> CompactReturn:
        known = 0
        if self.knowledge is not None:
            known = await anyio.to_thread.run_sync(self.knowledge.count_known, query)
        record = await plan_research(
            self.deps(model),
            query,
            suggested=suggested,
            budget=budget,
            known_facts=known,
            price=self._price(model),
        )
        est = record.estimate
        if record.status == "infeasible":
            summary = [
                "Plan infeasible: " + "; ".join(record.reasons),
                "Narrow or split the query with the user.",
            ]
            next_calls = [
                "plan_research(query=<narrower>)",
                f"report_results(id='{record.plan_id}', view='tree')",
            ]
        else:
            assert record.root is not None
            nodes = record.root.walk()
            leaves = [n for n in nodes if not n.children]
            next_calls = [
                f"execute_plan(plan_id='{record.plan_id}')",
                f"report_results(id='{record.plan_id}', view='tree')",
            ]
            summary = [
                f"{len(nodes)} nodes, {len(leaves)} leaves: " + "; ".join(n.title for n in leaves[:3]),
                (
                    f"estimate: {est.model_calls} model calls, ~{est.tokens_in + est.tokens_out} tokens, "
                    f"${est.cost_usd}, ~{est.wall_s} s"
                    if est.tokens_in + est.tokens_out
                    else f"estimate: {est.model_calls} steps, no model: 0 tokens, $0, ~{est.wall_s} s"
                ),
            ]
            scope = judge_scope(query)
            if scope.too_broad:  # said first, with the facets it was split into: narrower queries on offer
                # In place of the leaf titles (long questions): the facets they ask about.
                facets = ", ".join(scope.facets)
                # A model's planner may not have split it as the code would: then the facets are advice.
                summary[0] = (
                    f"Too broad ({scope.reason}): {len(leaves)} leaves, {facets}"
                    if len(leaves) == len(scope.facets)
                    else f"Too broad ({scope.reason}): split it with the user, e.g. into {facets}"
                )
            if known:
                summary.append(f"{known} known facts already bear on this query; leaves reuse them")
            elif self._searches_nothing(record.root):
                summary.append(NO_SOURCES)
        return fit_compact(
            CompactReturn(
                id=record.plan_id,
                kind="plan",
                status=record.status,
                summary=summary,
                metrics={
                    "nodes": len(record.root.walk()) if record.root else 0,
                    "known_facts": known,
                    "est_calls": est.model_calls,
                    "est_tokens": est.tokens_in + est.tokens_out,
                    "est_cost_usd": est.cost_usd,
                    "est_wall_s": est.wall_s,
                },
                next=next_calls,
                backend=model.name,
            )
        )

    # --- execute_plan --------------------------------------------------------------------------

    def authorization_question(self, plan_ids: list[str]) -> str | None:
        """What the user is asked before a run of `plan_ids` starts: each plan's query, its leaves,
        its estimate and any scope warning; None when a run of them exists already (it was asked
        for then: execute_plan waits on it or resumes it). Raises NotFound or InvalidInput for
        a plan that cannot run."""
        if self.store.latest_run_for(plan_ids) is not None:
            return None
        lines: list[str] = []
        for plan in (self.store.get_plan(plan_id) for plan_id in plan_ids):
            if plan.status != "feasible":
                raise InvalidInput(f"plan {plan.id} is infeasible; nothing to authorize")
            leaves = [node.title for node in plan.tree.root.walk() if not node.children]
            lines.append(f"Research {plan.query!r} ({plan.id}): {len(leaves)} leaves")
            lines += [f"  - {title}" for title in leaves[:AUTHORIZATION_LEAVES]]
            if len(leaves) > AUTHORIZATION_LEAVES:
                lines.append(f"  - and {len(leaves) - AUTHORIZATION_LEAVES} more")
            if (est := plan.estimate) is not None:
                lines.append(
                    f"  estimate: {est.model_calls} model calls, ~{est.tokens_in + est.tokens_out} tokens, "
                    f"${est.cost_usd}, ~{est.wall_s} s"
                )
            scope = judge_scope(plan.query)
            if scope.too_broad:
                lines.append(f"  warning: too broad ({scope.reason}); narrower: {'; '.join(scope.splits)}")
        return "\n".join([*lines, "Start this research run?"])

    def declined(self, plan_ids: list[str], *, cancelled: bool) -> CompactReturn:
        """The result of an execute_plan whose run the user did not authorize: nothing ran."""
        first = plan_ids[0]
        said = "dismissed the question about" if cancelled else "declined"
        return fit_compact(
            CompactReturn(
                id=first,
                kind="plan",
                status="declined",
                summary=[
                    f"Not started: the user {said} the run of {', '.join(plan_ids)}; nothing ran",
                    "Ask the user what to change, then plan again or call execute_plan again",
                ],
                next=[f"report_results(id='{first}', view='tree')", "plan_research(query=<narrower>)"],
                backend=self.store.get_plan(first).backend,
            )
        )

    async def execute(
        self,
        *,
        plan_ids: list[str],
        run_id: str | None,
        wait_seconds: float,
        cancel: bool,
        budget: Budget | None,
        progress: Progress | None,
        model: Callable[[], ModelBackend],
        retry: bool = False,
    ) -> CompactReturn:
        """Start a run of `plan_ids`, or wait on, resume or cancel `run_id` (one of the two is given).
        `model` is called only when a run starts or resumes."""
        if run_id is None:
            run_id = self.runs.start(plan_ids, self.deps(model(), budget), budget, retry=retry)
        else:
            run = self.store.get_run(run_id)
            if cancel:
                await self.runs.cancel(run_id)
                return self.run_handle(self.store.get_run(run_id))
            # Unfinished: resume it. Partial and asked to retry: rerun the parts that failed only.
            if run_id not in self.runs.live and self.runs.resumable(run, retry=retry):
                self.runs.resume(run_id, self.deps(model()), retry=retry)
        return self.run_handle(await self.runs.wait(run_id, wait_seconds, progress))

    def run_handle(self, run: Run) -> CompactReturn:
        snapshot = read_snapshot(self.store, run)
        run_id, status, totals = snapshot.id, snapshot.status, snapshot.totals
        done, total = totals.nodes_done, totals.nodes_total
        metrics: dict[str, Any] = {
            "nodes_done": done,
            "nodes_total": total,
            "sources": totals.sources,
            "facts": totals.facts,
            "tokens": totals.tokens,
            "cost_usd": round(totals.cost_usd, 4),
        }
        result = self.store.get_handoff(run.result_handoff_id) if run.result_handoff_id else None
        output = result.output_as(StoredSynthesis) if result else None
        if status == "no_sources":
            summary = [str(run.error), "nothing was researched: no search found a source"]
            next_calls = [
                "plan_research(query=<same>) once sources are added",
                f"report_results(id='{run_id}')",
            ]
        elif status in FINISHED and result is not None and output is not None:
            metrics["citations_verified"] = output.citations.verified
            metrics["citations_made"] = output.citations.made
            if output.unmet_criteria:
                metrics["criteria_unmet"] = len(output.unmet_criteria)
            if output.suggested_followups:
                metrics["followups"] = len(output.suggested_followups)
            summary = [
                *result.summary[:2],
                f"{done}/{total} nodes; confidence {output.confidence.level}",
            ]
            if metrics["sources"] == 0:
                summary[1] = NO_SOURCES
            next_calls = [f"report_results(id='{run_id}')", f"report_results(id='{run_id}', view='sources')"]
            if output.suggested_followups:  # no dead ends: where the research could go next
                next_calls.insert(1, f"report_results(id='{run_id}', view='followups')")
            if status == "partial":
                failed = len(output.failures)
                parts = "failed part or source" if failed == 1 else "failed parts or sources"
                summary[1] = (
                    f"partial: {failed} {parts}, named in the gaps; "
                    f"execute_plan(run_id='{run_id}', retry=true) retries only them"
                )
                next_calls = [  # the retry first: suggestions are dropped from the end to fit the bound
                    f"execute_plan(run_id='{run_id}', retry=true)",
                    f"report_results(id='{run_id}')",
                    f"report_results(id='{run_id}', view='gaps')",
                ]
        elif status in ("failed", "cancelled"):
            summary = [
                f"run {status}: {snapshot.error or ''}",
                # The resume call is the first suggestion below; said once, the error keeps its room.
                f"{done}/{total} nodes finished and kept; the first call in next resumes it",
            ]
            next_calls = [f"execute_plan(run_id='{run_id}')", f"report_results(id='{run_id}', view='tree')"]
        else:
            summary = [f"running: {done}/{total} nodes done", "the run goes on in the background"]
            next_calls = [f"execute_plan(run_id='{run_id}')", f"execute_plan(run_id='{run_id}', cancel=true)"]
        return fit_compact(
            CompactReturn(
                id=run_id,
                kind="run",
                status=status,
                summary=summary,
                metrics=metrics,
                next=next_calls,
                backend=snapshot.backend,
            )
        )

    # --- extract_source and scout_sources ------------------------------------------------------

    async def extract(
        self, source: str, questions: list[str], *, task_spec: ExtractorTaskSpec | None, model: ModelBackend
    ) -> CompactReturn:
        deps = self.deps(model)
        read = await self.sources.read(source)
        result = await extract(deps, read, questions=questions, task_spec=task_spec)
        handoff = self.store.get_handoff(result.handoff_id)
        output = handoff.output_as(StoredExtraction)
        facts, verified = (len(output.fact_ids), output.verified) if output else (0, 0)
        return fit_compact(
            CompactReturn(
                id=result.handoff_id,
                kind="extraction",
                status="done",
                summary=[
                    f"{source_label(read.id)}: {read.title or read.ref}",
                    *handoff.summary,
                ],
                metrics={"facts": facts, "verified": verified},
                next=[f"report_results(id='{result.handoff_id}', view='facts')"],
                backend=model.name,
            )
        )

    async def scout(
        self, topic: str, queries: list[str], limit: int, *, model: ModelBackend
    ) -> CompactReturn:
        await self.sources.corpus_scanned()
        coverage = self.sources.corpus_coverage()  # taken before searching: what the searches saw
        # The queries given are also what the sources are for: each is tagged with those it covers.
        result = await scout(self.deps(model), topic, queries=queries, questions=queries, limit=limit)
        output = self.store.get_handoff(result.handoff_id).output_as(StoredCuration) or StoredCuration()
        ranked = output.sources
        top = "; ".join(item.title[:50] for item in ranked[:3])
        metrics: dict[str, Any] = {"ranked": len(ranked), "searches": output.searches}
        if output.questions:
            metrics["queries_covered"] = len(output.questions) - len(output.uncovered)
        if coverage is not None:  # the corpus is still being indexed: say how much was searched
            metrics["corpus"] = coverage.removeprefix("corpus: ")
        return fit_compact(
            CompactReturn(
                id=result.handoff_id,
                kind="curation",
                status="done",
                summary=[
                    f"{len(ranked)} sources ranked from {output.candidates} candidates",
                    f"top: {top}" if ranked else f"nothing relevant found: {self.sources.nothing_found()}",
                ]
                + ([coverage] if coverage else []),
                metrics=metrics,
                next=[f"report_results(id='{result.handoff_id}', view='sources')"],
                backend=model.name,
            )
        )

    # --- report_results ------------------------------------------------------------------------

    def report(self, ident: str, view: View, cursor: str | None, max_tokens: int) -> ReportPage:
        return page_of(ident, view, view_items(self.store, ident, view), cursor, max_tokens)

    def run_view(self, run_id: str) -> dict[str, Any]:
        """The run as the MCP App view shows it (read by the view through the host, never by the model)."""
        return live_snapshot(self.store, run_id)
