"""The wording of the compact handles the tools return: each result's summary lines and the next
calls it suggests, fitted to MAX_COMPACT_BYTES. The service decides what happened; this module says
it to the host (and, through the host, to its model)."""

from __future__ import annotations

import json
from typing import Any

from research_mcp.core.contracts import FINISHED, CompactReturn
from research_mcp.core.scope import judge_scope
from research_mcp.roles.planner import PlanRecord
from research_mcp.runs.snapshot import RunSnapshot
from research_mcp.storage.models import StoredPlan
from research_mcp.storage.outputs import Handoff, StoredCuration, StoredSynthesis

__all__ = [
    "MAX_COMPACT_BYTES",
    "NO_SOURCES",
    "authorization_question",
    "curation_handle",
    "declined_handle",
    "extraction_handle",
    "fit_compact",
    "plan_handle",
    "result_bytes",
    "run_handle",
]

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


# --- plan_research ---------------------------------------------------------------------------------


def plan_handle(
    record: PlanRecord, query: str, *, known: int, searches_nothing: bool, backend: str
) -> CompactReturn:
    """A plan's handle: its size and estimate (or why it is infeasible), and how to run it."""
    est = record.estimate
    if record.status == "infeasible" or record.root is None:
        summary = [
            "Plan infeasible: " + "; ".join(record.reasons),
            "Narrow or split the query with the user.",
        ]
        next_calls = [
            "plan_research(query=<narrower>)",
            f"report_results(id='{record.plan_id}', view='tree')",
        ]
    else:
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
            facets = ", ".join(scope.facets)
            # A model's planner may not have split it as the code would: then the facets are advice.
            summary[0] = (
                f"Too broad ({scope.reason}): {len(leaves)} leaves, {facets}"
                if len(leaves) == len(scope.facets)
                else f"Too broad ({scope.reason}): split it with the user, e.g. into {facets}"
            )
        if record.reused:
            summary.append(
                "the plan this query was given before, reused (no model call)"
                + (f"; {known} known facts bear on it" if known else "")
            )
        elif known:
            summary.append(f"{known} known facts already bear on this query; leaves reuse them")
        elif searches_nothing:
            summary.append(NO_SOURCES)
    metrics: dict[str, Any] = {
        "nodes": len(record.root.walk()) if record.root else 0,
        "known_facts": known,
        "est_calls": est.model_calls,
        "est_tokens": est.tokens_in + est.tokens_out,
        "est_cost_usd": est.cost_usd,
        "est_wall_s": est.wall_s,
    }
    return fit_compact(
        CompactReturn(
            id=record.plan_id,
            kind="plan",
            status=record.status,
            summary=summary,
            metrics=metrics,
            next=next_calls,
            backend=backend,
        )
    )


# --- execute_plan ----------------------------------------------------------------------------------


def authorization_question(plans: list[StoredPlan]) -> str:
    """What the user is asked before a run of `plans` starts: each plan's query, its leaves, its
    estimate and any scope warning."""
    lines: list[str] = []
    for plan in plans:
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


def declined_handle(plan_ids: list[str], *, cancelled: bool, backend: str) -> CompactReturn:
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
            backend=backend,
        )
    )


def run_handle(snapshot: RunSnapshot, result: Handoff | None, error: str | None) -> CompactReturn:
    """A run's handle: how far it got, and what to call next (wait, read, retry or resume)."""
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
    if totals.reused:
        metrics["reused"] = totals.reused
    output = result.output_as(StoredSynthesis) if result else None
    if status == "no_sources":
        summary = [str(error), "nothing was researched: no search found a source"]
        next_calls = ["plan_research(query=<same>) once sources are added", f"report_results(id='{run_id}')"]
    elif status in FINISHED and result is not None and output is not None:
        summary, next_calls = _finished(run_id, status, result, output, metrics)
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


def _finished(
    run_id: str, status: str, result: Handoff, output: StoredSynthesis, metrics: dict[str, Any]
) -> tuple[list[str], list[str]]:
    """A finished run's summary and next calls; `metrics` gains the report's counts."""
    metrics["citations_verified"] = output.citations.verified
    metrics["citations_made"] = output.citations.made
    if output.unmet_criteria:
        metrics["criteria_unmet"] = len(output.unmet_criteria)
    if output.suggested_followups:
        metrics["followups"] = len(output.suggested_followups)
    done, total = metrics["nodes_done"], metrics["nodes_total"]
    said = f"confidence {output.confidence.level}"
    # The confidence once: the synthesis's own summary line usually says it already.
    nodes = f"{done}/{total} nodes" + (
        "" if any(said in line for line in result.summary[:2]) else f"; {said}"
    )
    summary = [*result.summary[:2], nodes]
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
    return summary, next_calls


# --- extract_source and scout_sources ----------------------------------------------------------------


def extraction_handle(
    handoff_id: str, source: str, handoff: Handoff, facts: int, verified: int, backend: str
) -> CompactReturn:
    """An extraction's handle: the source read, what was found, and where the facts are."""
    return fit_compact(
        CompactReturn(
            id=handoff_id,
            kind="extraction",
            status="done",
            summary=[source, *handoff.summary],
            metrics={"facts": facts, "verified": verified},
            next=[f"report_results(id='{handoff_id}', view='facts')"],
            backend=backend,
        )
    )


def _scanned(output: StoredCuration) -> str:
    """How many candidates the extractor quick-scanned, and why it stopped when a box closed."""
    scanned = output.scanned
    stopped = next((f for f in output.failures if "quick scans" in f), "")
    box = " (token box spent)" if "token box" in stopped else " (time box closed)" if stopped else ""
    return f"; {scanned} quick-scanned{box}" if scanned or stopped else ""


def curation_handle(
    handoff_id: str, output: StoredCuration, *, coverage: str | None, nothing_found: str, backend: str
) -> CompactReturn:
    """A scout's handle: how many sources it ranked, the top ones, and how much corpus it searched."""
    ranked = output.sources
    top = "; ".join(item.title[:50] for item in ranked[:3])
    metrics: dict[str, Any] = {"ranked": len(ranked), "searches": output.searches}
    if output.questions:
        metrics["queries_covered"] = len(output.questions) - len(output.uncovered)
    if coverage is not None:  # the corpus is still being indexed: say how much was searched
        metrics["corpus"] = coverage.removeprefix("corpus: ")
    return fit_compact(
        CompactReturn(
            id=handoff_id,
            kind="curation",
            status="done",
            summary=[
                f"{len(ranked)} sources ranked from {output.candidates} candidates" + _scanned(output),
                f"top: {top}" if ranked else f"nothing relevant found: {nothing_found}",
                *([coverage] if coverage else []),
            ],
            metrics=metrics,
            next=[f"report_results(id='{handoff_id}', view='sources')"],
            backend=backend,
        )
    )
