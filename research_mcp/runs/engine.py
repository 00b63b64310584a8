"""The run engine's tree walk: runs a plan tree node by node, children in parallel, and records each
node in the store.

An executor node runs its children (discovery leaves first, feeding their ranked sources to the
ingestion leaves beside them), then one synthesizer over the children's handoffs, then its phases
(runs/phases.py). A leaf is leaf work (runs/leaf.py). A node whose row says `done` is never run
again: its handoff is read from the store, which is what makes a killed run resumable.
"""

from __future__ import annotations

import logging

import anyio

from research_mcp.contracts import PlanNode
from research_mcp.errors import BudgetExhausted, ModelError, ResearchError
from research_mcp.roles.scout import scout
from research_mcp.roles.synthesizer import synthesize
from research_mcp.runs.context import RunContext, leaf_questions, node_key
from research_mcp.runs.leaf import run_leaf
from research_mcp.runs.phases import run_phases
from research_mcp.storage.outputs import StoredCuration

__all__ = ["execute_node"]

logger = logging.getLogger(__name__)


async def execute_node(rc: RunContext, node: PlanNode, *, discovered: list[str] | None = None) -> str:
    """Run `node` (or read it from the store when done) and return its result handoff id."""
    store = rc.deps.store
    key = node_key(rc.plan_id, node.id)
    row = store.get_node(rc.run_id, key)
    if row is not None and row.status == "done" and row.handoff_id:
        return row.handoff_id
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
            handoff_id = await run_leaf(rc, node, key, discovered or [])
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
        curation = rc.deps.store.get_handoff(handoff_id).output_as(StoredCuration)
        discovered.extend(item.ref for item in (curation.sources if curation else []))
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
