"""Prior findings: what earlier research already established about a leaf's questions.

Before a leaf extracts, the knowledge base is asked for known, verified, fresh facts close to its
questions; they reach the leaf's synthesizer with their original citations, citable like the facts
the leaf finds itself. Facts found for questions another leaf of the same run asks are left to
that leaf (they reach the parent synthesis through it), so running the same plan again gives each
leaf the same inputs as before, and its synthesis can be reused.
"""

from __future__ import annotations

import anyio

from research_mcp.contracts import PlanNode
from research_mcp.runs.context import RunContext, leaf_questions

__all__ = ["prior_findings"]


def _asked(node: PlanNode, questions: list[str]) -> set[str]:
    return set(questions) | {question for spec in node.task_specs for question in spec.questions}


def asked_by_leaf(rc: RunContext) -> dict[tuple[str, str], set[str]]:
    """The questions of every leaf of the run's plans, read from the store once per run context."""
    if rc.asked_by_leaf is None:
        store = rc.deps.store
        rc.asked_by_leaf = {}
        for plan_id in store.get_run(rc.run_id).plan_ids:
            root = store.get_plan(plan_id).tree.root
            for leaf in root.walk():
                if leaf.kind == "leaf":
                    rc.asked_by_leaf[(plan_id, leaf.id)] = _asked(leaf, leaf_questions(leaf))
    return rc.asked_by_leaf


async def prior_findings(rc: RunContext, node: PlanNode, key: str, questions: list[str]) -> list[int]:
    """Ids of known facts bearing on the leaf's questions, best first (none without a knowledge base)."""
    knowledge = rc.deps.knowledge
    if knowledge is None or not knowledge.available:
        return []
    store = rc.deps.store
    own = _asked(node, questions)
    others: set[str] = set()
    for (plan_id, leaf_id), asked in asked_by_leaf(rc).items():
        if (plan_id, leaf_id) != (rc.plan_id, node.id):
            others |= asked
    facts = await anyio.to_thread.run_sync(
        lambda: knowledge.prior_findings(questions, own=own, others=others - own),
        abandon_on_cancel=True,  # a read: a cancelled run need not wait for it (or the model to load)
    )
    if facts:
        store.add_event(
            rc.run_id,
            "prior_findings",
            f"{len(facts)} known facts bear on {node.title!r} (prior findings)",
            node_id=key,
            data={"fact_ids": [fact.id for fact in facts]},
        )
    return [fact.id for fact in facts]
