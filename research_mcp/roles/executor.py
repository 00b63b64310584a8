"""The executor: runs a plan tree node by node, children in parallel, and records each node in the store.

An executor node runs its children (discovery leaves first, feeding their ranked sources to the
ingestion leaves beside them), then one synthesizer over the children's handoffs. A leaf fans out
one extractor per (source, task spec), then one synthesizer. A node whose row says `done` is never
run again: its handoff is read from the store, which is what makes a killed run resumable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from research_mcp.contracts import ExtractorTaskSpec, PlanNode, Source
from research_mcp.errors import BudgetExhausted, ModelError, NotConfigured, ResearchError, SourceError
from research_mcp.roles.base import RoleDeps
from research_mcp.roles.extractor import extract
from research_mcp.roles.phases import run_phases
from research_mcp.roles.prior import prior_findings
from research_mcp.roles.scout import scout
from research_mcp.roles.synthesizer import synthesize
from research_mcp.sources.library import canonical_url, classify_ref

__all__ = ["RunContext", "execute_node", "node_key", "plan_nodes"]

logger = logging.getLogger(__name__)

SOURCES_PER_LEAF = 3


@dataclass
class RunContext:
    deps: RoleDeps
    run_id: str
    plan_id: str
    on_node_done: Callable[[], None] = lambda: None
    # What each node (by key) could not research, and why: sources not read, searches and parts failed.
    failures: dict[str, list[str]] = field(default_factory=dict)
    asked_by_leaf: dict[tuple[str, str], set[str]] | None = None  # see roles/prior.py


def node_key(plan_id: str, node_id: str) -> str:
    return f"{plan_id}/{node_id}"


def plan_nodes(plan_id: str, root: PlanNode) -> list[dict[str, str | None]]:
    """Rows for the store's nodes table, parents before children."""
    rows: list[dict[str, str | None]] = []

    def visit(node: PlanNode, parent: str | None) -> None:
        key = node_key(plan_id, node.id)
        rows.append(
            {"node_id": key, "plan_id": plan_id, "parent_id": parent, "kind": node.kind, "title": node.title}
        )
        for child in node.children:
            visit(child, key)

    visit(root, None)
    return rows


def ref_key(ref: str) -> str:
    """How a reference is compared: web addresses in canonical form."""
    return canonical_url(ref) if classify_ref(ref) == "web" else ref.strip()


def leaf_questions(node: PlanNode) -> list[str]:
    if node.questions:
        return list(node.questions)
    return [question for spec in node.task_specs for question in spec.questions] or [node.title]


async def execute_node(rc: RunContext, node: PlanNode, *, discovered: list[str] | None = None) -> str:
    """Run `node` (or read it from the store when done) and return its result handoff id."""
    store = rc.deps.store
    key = node_key(rc.plan_id, node.id)
    row = store.get_node(rc.run_id, key)
    if row is not None and row["status"] == "done" and row["handoff_id"]:
        return str(row["handoff_id"])
    store.start_node(rc.run_id, key)
    store.add_event(rc.run_id, "node_started", f"{node.kind} {node.title!r} started", node_id=key)
    try:
        if node.kind == "executor":
            handoff_id = await _run_executor(rc, node, key)
        elif node.kind == "discovery":
            result = await scout(
                rc.deps, node.title, queries=list(node.search_queries), run_id=rc.run_id, node_id=key
            )
            handoff_id = result.handoff_id
        else:
            handoff_id = await _run_leaf(rc, node, key, discovered or [])
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            store.finish_node(rc.run_id, key, "cancelled", None)
        raise
    except Exception:
        store.finish_node(rc.run_id, key, "failed", None)
        raise
    store.finish_node(rc.run_id, key, "done", handoff_id)
    store.add_event(rc.run_id, "node_done", f"{node.kind} {node.title!r} done", node_id=key)
    rc.on_node_done()
    return handoff_id


async def _run_executor(rc: RunContext, node: PlanNode, key: str) -> str:
    discovery = [child for child in node.children if child.kind == "discovery"]
    others = [child for child in node.children if child.kind != "discovery"]
    discovered: list[str] = []
    scout_handoffs = await _run_children(rc, key, discovery, [])
    for handoff_id in scout_handoffs:
        output = rc.deps.store.get_handoff(handoff_id).output or {}
        discovered.extend(item["ref"] for item in output.get("sources", []))
    child_handoffs = scout_handoffs + await _run_children(rc, key, others, discovered)
    if node.children and not child_handoffs:
        raise ModelError(
            f"Every part of {node.title!r} failed, so there is nothing to synthesize: "
            + "; ".join(rc.failures.get(key, []))
        )
    questions = (
        [q for child in others for q in leaf_questions(child)] if not node.questions else node.questions
    )
    result = await synthesize(
        rc.deps,
        title=node.title,
        questions=questions,
        input_handoffs=child_handoffs,
        run_id=rc.run_id,
        node_id=key,
        failures=rc.failures.get(key, []),
    )
    if node.phases:
        return await run_phases(rc, node, key, child_handoffs, result)
    return result.handoff_id


async def _run_children(
    rc: RunContext, key: str, children: list[PlanNode], discovered: list[str]
) -> list[str]:
    """The children's result handoffs, in order. A child that fails (its model calls, its sources) is
    named in `rc.failures[key]` and left out, so its siblings finish; a budget stop still stops all."""
    results: dict[int, str] = {}

    async def run(index: int, child: PlanNode) -> None:
        try:
            results[index] = await execute_node(rc, child, discovered=discovered)
        except BudgetExhausted:
            raise
        except ResearchError as error:
            failure = f"Not researched: {child.kind} {child.title!r} failed: {error}"
            child_key = node_key(rc.plan_id, child.id)
            # What the child had found missing before it failed is named too, after it.
            rc.failures.setdefault(key, []).extend([failure, *rc.failures.get(child_key, [])])
            rc.deps.store.add_event(rc.run_id, "node_failed", failure, node_id=child_key)

    async with anyio.create_task_group() as group:
        for index, child in enumerate(children):
            group.start_soon(run, index, child)
    return [results[index] for index in sorted(results)]


async def choose_sources(
    rc: RunContext, node: PlanNode, discovered: list[str], *, skip: set[str]
) -> list[str]:
    """The leaf's own sources, else those its discovery siblings found, else the best of a search."""
    skip = {ref_key(ref) for ref in skip}
    if node.sources:
        return [ref for ref in node.sources if ref_key(ref) not in skip]
    limit = SOURCES_PER_LEAF
    if node.budget is not None and node.budget.max_sources is not None:
        limit = min(limit, node.budget.max_sources)
    if discovered:
        return [ref for ref in discovered if ref_key(ref) not in skip][:limit]
    queries = list(node.search_queries) or leaf_questions(node)[:2]
    refs: list[str] = []
    key = node_key(rc.plan_id, node.id)
    for query in queries:
        failed: list[str] = []
        found = await rc.deps.sources.search(query, limit=limit + len(skip), failures=failed)
        rc.deps.store.add_event(
            rc.run_id, "search", f"{query!r}: {len(found)} candidates", data={"query": query}
        )
        for failure in failed:
            rc.failures.setdefault(key, []).append(failure)
            rc.deps.store.add_event(rc.run_id, "search_failed", failure, node_id=key)
        for candidate in found:
            if ref_key(candidate.ref) not in skip and candidate.ref not in refs:
                refs.append(candidate.ref)
    return refs[:limit]


async def extract_sources(
    rc: RunContext, node: PlanNode, key: str, refs: list[str], *, questions: list[str], iteration: int = 0
) -> list[str]:
    """One extractor per (source, task spec), in parallel; a source that fails is logged and skipped."""
    specs: list[ExtractorTaskSpec | None] = list(node.task_specs) or [None]
    done = _done_extractions(rc, key)
    handoffs: list[str] = []

    async def one(ref: str, spec: ExtractorTaskSpec | None) -> None:
        if not rc.deps.budget.take_source():
            rc.failures.setdefault(key, []).append(
                f"Source not read: {ref}: the run's budget of {rc.deps.budget.max_sources} sources was reached"
            )
            return
        try:
            source: Source = await rc.deps.sources.read(ref)
            asked = tuple(spec.questions) if spec is not None else tuple(questions)
            reuse = done.get((source.id, asked))
            if reuse is not None:
                handoffs.append(reuse)
                return
            result = await extract(
                rc.deps,
                source,
                questions=questions,
                task_spec=spec,
                run_id=rc.run_id,
                node_id=key,
                iteration=iteration,
            )
            handoffs.append(result.handoff_id)
        except (SourceError, ModelError, NotConfigured) as error:
            rc.failures.setdefault(key, []).append(f"Source not read: {ref}: {error}")
            rc.deps.store.add_event(rc.run_id, "source_failed", f"{ref}: {error}", node_id=key)

    async with anyio.create_task_group() as group:
        for ref in refs:
            for spec in specs:
                group.start_soon(one, ref, spec)
    return sorted(handoffs)


def _done_extractions(rc: RunContext, key: str) -> dict[tuple[int, tuple[str, ...]], str]:
    """Extractions this node finished before a restart, by (source, questions)."""
    found = {}
    for handoff in rc.deps.store.handoffs_for_run(rc.run_id, role="extractor"):
        if handoff.node_id == key and handoff.status == "done":
            found[(handoff.input["source_id"], tuple(handoff.input["questions"]))] = handoff.id
    return found


async def _run_leaf(rc: RunContext, node: PlanNode, key: str, discovered: list[str]) -> str:
    questions = leaf_questions(node)
    refs = await choose_sources(rc, node, discovered, skip=set())
    if not refs:
        rc.deps.store.add_event(rc.run_id, "no_sources", f"no sources found for {node.title!r}", node_id=key)
    prior = await prior_findings(rc, node, key, questions)
    extractions = await extract_sources(rc, node, key, refs, questions=questions)
    result = await synthesize(
        rc.deps,
        title=node.title,
        questions=questions,
        input_handoffs=extractions,
        run_id=rc.run_id,
        node_id=key,
        prior_facts=prior,
        failures=rc.failures.get(key, []),
    )
    return result.handoff_id
