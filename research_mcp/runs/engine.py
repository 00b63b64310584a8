"""The run engine's tree walk: runs a plan tree node by node, children in parallel, and records each
node in the store.

An executor node runs its children (discovery leaves first: their scouts sweep for the questions
of the ingestion leaves beside them, and each of those leaves gets the curated sources that cover its
own questions first), then one synthesizer over the children's handoffs (a discovery leaf's is its
curated list), then its phases (runs/phases.py). A leaf is leaf work (runs/leaf.py). A node whose row says `done` is never run
again: its handoff is read from the store, which is what makes a killed run resumable.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import anyio

from research_mcp.answering.terms import said_terms, terms
from research_mcp.core.contracts import PlanNode
from research_mcp.core.errors import BudgetExhausted, ModelError, ResearchError
from research_mcp.roles.curation import curate, curation_behind
from research_mcp.roles.node_budgets import node_budget
from research_mcp.roles.scout import scout
from research_mcp.roles.synthesizer import synthesize
from research_mcp.runs.context import RunContext, leaf_questions, node_key, report_outline
from research_mcp.runs.leaf import run_leaf
from research_mcp.runs.phases import run_phases
from research_mcp.runs.prior import compared_items
from research_mcp.storage.events import NodeDone, NodeFailed, NodeStarted
from research_mcp.storage.outputs import StoredCuration

__all__ = ["execute_node"]

#: Sources a discovery leaf keeps when its budget does not say.
SCOUT_LIMIT = 8

logger = logging.getLogger(__name__)


async def execute_node(
    rc: RunContext, node: PlanNode, *, discovered: list[str] | None = None, wanted: Sequence[str] = ()
) -> str:
    """Run `node` (or read it from the store when done) and return its result handoff id.

    `discovered`: for a leaf, the sources its discovery siblings curated for it, best first;
    `wanted`: for a discovery leaf, the questions its sibling leaves ask (what to find sources for)."""
    store = rc.deps.store
    key = node_key(rc.plan_id, node.id)
    if node.budget is None and node.id in rc.shares:
        node = node.model_copy(update={"budget": rc.shares[node.id]})
    row = store.get_node(rc.run_id, key)
    if row is not None and row.status == "done" and row.handoff_id:
        return row.handoff_id
    store.start_node(rc.run_id, key)
    store.add_event(rc.run_id, NodeStarted(message=f"{node.kind} {node.title!r} started", node_id=key))
    try:
        with node_budget(node.title, node.budget):
            if node.kind == "executor":
                handoff_id = await _run_executor(rc, node, key)
            elif node.kind == "discovery":
                handoff_id = await _run_discovery(rc, node, key, wanted)
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
    store.add_event(rc.run_id, NodeDone(message=f"{node.kind} {node.title!r} done", node_id=key))
    rc.on_node_done()
    return handoff_id


async def _run_discovery(rc: RunContext, node: PlanNode, key: str, wanted: Sequence[str]) -> str:
    """A discovery leaf: the scout's sweep for its own and its siblings' questions, then the
    discovery synthesis (its curated list, roles/curation.py), whose handoff is the leaf's result."""
    limit = node.budget.max_sources if node.budget and node.budget.max_sources else SCOUT_LIMIT
    result = await scout(
        rc.deps,
        node.title,
        queries=list(node.search_queries),
        questions=[*node.questions, *wanted],
        limit=limit,
        run_id=rc.run_id,
        node_id=key,
    )
    return curate(rc.deps, result.handoff_id, title=node.title, run_id=rc.run_id, node_id=key)


def _interleaved(groups: Sequence[Sequence[str]]) -> list[str]:
    """Each group's first item, then each group's second, ...: every sibling's questions lead."""
    out: list[str] = []
    for rank in range(max((len(g) for g in groups), default=0)):
        out += [g[rank] for g in groups if rank < len(g) and g[rank] not in out]
    return out


def _for_each_leaf(curations: Sequence[StoredCuration], leaves: Sequence[PlanNode]) -> list[list[str]]:
    """Each leaf's curated sources, in the order it takes them: those covering one of its own
    questions first, then the others; within each, first those it matches at least as well as any
    sibling does (its questions' terms in their title and opening, then its title's), in rank order. So sibling leaves
    take different sources, each the ones that match it, and a source touching two leaves' questions
    ("file", "modified" in a packaging note and a licence question) goes to the leaf it is about."""
    sources = [(curation, source) for curation in curations for source in curation.sources]
    wanted = [set(terms(" ".join(leaf_questions(leaf)))) for leaf in leaves]
    titled = [set(terms(leaf.title)) for leaf in leaves]
    # Ties on the questions go by the leaf's title: leaves asked one comparison whole differ only there.
    strengths = [
        [
            (_shared(f"{source.title} {source.lead}", asked), _shared(f"{source.title} {source.lead}", title))
            for asked, title in zip(wanted, titled, strict=True)
        ]
        for _, source in sources
    ]
    out: list[list[str]] = []
    for index, leaf in enumerate(leaves):
        asked = {" ".join(q.split()) for q in leaf_questions(leaf)}
        ranked = []
        for rank, (curation, source) in enumerate(sources):
            covers = {curation.questions[n - 1] for n in source.covers if n <= len(curation.questions)}
            strength = strengths[rank]
            best = any(strength[index]) and strength[index] >= max(strength)
            ranked.append(((not covers & asked, not best, rank), source.ref))
        out.append(list(dict.fromkeys(ref for _, ref in sorted(ranked))))
    return out


def _shared(text: str, asked: set[str]) -> int:
    """How many of the asked terms `text` holds."""
    return len(said_terms(asked, set(terms(text))))


async def _run_executor(rc: RunContext, node: PlanNode, key: str) -> str:
    discovery = [child for child in node.children if child.kind == "discovery"]
    others = [child for child in node.children if child.kind != "discovery"]
    wanted = _interleaved([leaf_questions(child) for child in others])
    scout_handoffs = await _run_children(rc, key, discovery, wanted=wanted)
    curations = [c for h in scout_handoffs if (c := curation_behind(rc.deps.store, h)) is not None]
    child_handoffs = scout_handoffs + await _run_children(
        rc, key, others, discovered=_for_each_leaf(curations, others) if curations else None
    )
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
        outline=report_outline(rc, node),
        items=compared_items(rc, node),
    )
    if node.phases:
        return await run_phases(rc, node, key, child_handoffs, result)
    return result.handoff_id


async def _run_children(
    rc: RunContext,
    key: str,
    children: list[PlanNode],
    *,
    discovered: Sequence[list[str]] | None = None,
    wanted: Sequence[str] = (),
) -> list[str]:
    """The children's result handoffs, in order. A child that fails (its model calls, its sources) is
    named in `rc.failures[key]` and left out, so its siblings finish; a budget stop still stops all."""
    results: dict[int, str] = {}
    turns = [anyio.Event() for _ in children]
    for index, child in enumerate(children):
        rc.take_turns[node_key(rc.plan_id, child.id)] = (turns[:index], turns[index])

    async def run(index: int, child: PlanNode) -> None:
        try:
            found = discovered[index] if discovered is not None else None
            results[index] = await execute_node(rc, child, discovered=found, wanted=wanted)
        except BudgetExhausted:
            raise
        except ResearchError as error:
            failure = f"Not researched: {child.kind} {child.title!r} failed: {error}"
            child_key = node_key(rc.plan_id, child.id)
            # What the child had found missing before it failed is named too, after it.
            rc.failures.setdefault(key, []).extend([failure, *rc.failures.get(child_key, [])])
            rc.deps.store.add_event(rc.run_id, NodeFailed(message=failure, node_id=child_key))
        finally:
            turns[index].set()  # a child done before, failed or taking nothing holds up no sibling

    async with anyio.create_task_group() as group:
        for index, child in enumerate(children):
            group.start_soon(run, index, child)
    return [results[index] for index in sorted(results)]
