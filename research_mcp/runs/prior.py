"""Prior findings: what earlier research already established about a leaf's questions.

Before a leaf extracts, the knowledge base is asked for known, verified, fresh facts close to its
questions; they reach the leaf's synthesizer with their original citations, citable like the facts
the leaf finds itself. Facts found for questions another leaf of the same run asks are left to
that leaf (they reach the parent synthesis through it), so running the same plan again gives each
leaf the same inputs as before, and its synthesis can be reused.
"""

from __future__ import annotations

import anyio

from research_mcp.answering.terms import said_terms, terms
from research_mcp.core.callers import may_read
from research_mcp.core.contracts import PlanNode
from research_mcp.core.errors import NotFound
from research_mcp.core.ids import source_label
from research_mcp.roles.items import ItemScope, facts_of_items, item_scope
from research_mcp.runs.context import RunContext, leaf_questions
from research_mcp.runs.reading import stored_ref
from research_mcp.storage.events import InsightsGiven, PriorFindings
from research_mcp.storage.models import InsightKind, KnownInsight

__all__ = [
    "KNOWN_INSIGHTS",
    "KNOWN_QUESTIONS",
    "compared_items",
    "known_insights",
    "known_questions",
    "prior_findings",
    "recorded_insights",
]

#: What earlier sources left open, given to one leaf's synthesizer; and asked of its sources.
KNOWN_INSIGHTS = 5
KNOWN_QUESTIONS = 3
_KIND_ORDER: tuple[InsightKind, ...] = ("source_gap", "follow_up", "linked_source")


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


def _asked_elsewhere(rc: RunContext, node: PlanNode) -> set[str]:
    """What the run's other leaves ask (normalized), across its plans."""
    others: set[str] = set()
    for (plan_id, leaf_id), asked in asked_by_leaf(rc).items():
        if (plan_id, leaf_id) != (rc.plan_id, node.id):
            others |= asked
    return others


async def prior_findings(rc: RunContext, node: PlanNode, key: str, questions: list[str]) -> list[int]:
    """Ids of known facts bearing on the leaf's questions, best first (none without a knowledge base)."""
    knowledge = rc.deps.knowledge
    if knowledge is None or not knowledge.available:
        return []
    store = rc.deps.store
    own = _asked(node, questions)
    others = _asked_elsewhere(rc, node) - own
    known = await anyio.to_thread.run_sync(
        lambda: knowledge.prior_findings(questions, own=own, others=others, caller=rc.deps.caller),
        abandon_on_cancel=True,  # a read: a cancelled run need not wait for it (or the model to load)
    )
    # A compared item is given the facts about it only: an earlier run's facts on another licence
    # answer that licence's section, never this one's (roles/items.py).
    items = compared_items(rc, node)
    facts = facts_of_items(store.get_facts([fact.id for fact in known]), items, store.get_source)
    if facts:
        store.add_event(
            rc.run_id,
            PriorFindings(
                message=f"{len(facts)} known facts bear on {node.title!r} (prior findings)",
                node_id=key,
                fact_ids=[fact.id for fact in facts],
            ),
        )
    return [fact.id for fact in facts]


def compared_items(rc: RunContext, node: PlanNode) -> dict[str, ItemScope]:
    """For a compared item's leaf, its questions mapped to its item; for an executor over compared
    items, each item leaf's questions to its item (roles/items.py); else nothing."""
    children: list[tuple[PlanNode, PlanNode | None]]
    if node.kind == "executor":
        children = [(child, node) for child in node.children]
    else:
        try:
            root = rc.deps.store.get_plan(rc.plan_id).tree.root
        except NotFound:  # a node run on its own, outside a stored plan: no siblings
            return {}
        parent = next((each for each in root.walk() if any(c.id == node.id for c in each.children)), None)
        children = [(node, parent)]
    return {
        question: scope
        for child, parent in children
        if (scope := item_scope(child, parent)) is not None
        for question in leaf_questions(child)
    }


async def known_insights(
    rc: RunContext, node: PlanNode, key: str, questions: list[str], refs: list[str]
) -> list[KnownInsight]:
    """What sources read by earlier runs said they leave open, kept in the knowledge base, bearing
    on the leaf's questions (`related` to one of them by terms, or, with `RESEARCH_MCP_INSIGHT_VECTORS`,
    close in meaning by the knowledge index: `KnowledgeBase.insight_scores`): the gaps they name first, then their
    extractors' follow-up questions, then the sources they cite; at most KNOWN_INSIGHTS. Not those of a source the leaf reads itself (its extraction gives them again),
    nor those raised for another leaf's questions of this run and none of its own (left to that
    leaf): running the same plan again gives each leaf the same inputs as before."""
    if rc.deps.knowledge is None:
        return []
    if given := recorded_insights(rc, key):  # given before an interruption: given again
        return given
    store, knowledge = rc.deps.store, rc.deps.knowledge
    own = _asked(node, questions)
    others = _asked_elsewhere(rc, node) - own
    reading = {stored_ref(ref) for ref in refs} | set(refs)
    candidates = [
        item
        for item in store.known_insights(kinds=_KIND_ORDER, not_run=rc.run_id)
        if item.ref not in reading
        and may_read(item.owner, rc.deps.caller)  # what another user's research left open is theirs
        and source_label(item.source_id) not in reading
        and not (set(item.questions) & others and not set(item.questions) & own)
    ]
    close: dict[int, float] = {}
    if rc.deps.settings.insight_vectors:
        close = await anyio.to_thread.run_sync(
            lambda: knowledge.insight_scores(questions, [(item.id, _said(item)) for item in candidates]),
            abandon_on_cancel=True,
        )
    found = [
        item
        for item in candidates
        if item.id in close or any(related(_said(item), question) for question in questions)
    ]
    found.sort(key=lambda item: _KIND_ORDER.index(item.kind))  # stable: the newest first within a kind
    found = found[:KNOWN_INSIGHTS]
    if found:
        store.add_event(
            rc.run_id,
            InsightsGiven(
                message=f"{len(found)} things earlier sources left open bear on {node.title!r}",
                node_id=key,
                insight_ids=[item.id for item in found],
            ),
        )
    return found


def _said(item: KnownInsight) -> str:
    """What an insight says: a cited source is judged by what the citing source says of it (its
    address says little)."""
    return item.context or item.text if item.kind == "linked_source" else item.text


def related(text: str, question: str) -> bool:
    """Whether what an earlier source left open is about a question: they share at least two content
    terms, and at least half the terms of each. Two terms alone are too loose across runs: "Are Local
    H and For Against both from the United States?" would reach every question naming the United
    States, and be asked of its sources."""
    said, asked = set(terms(text)), set(terms(question))
    return len(said_terms(asked, said)) >= max(2, len(said) / 2, len(asked) / 2)


def known_questions(insights: list[KnownInsight]) -> list[str]:
    """What the leaf's sources are asked besides its questions: the gaps earlier sources named and
    the questions they left open (a source read now may answer them), at most KNOWN_QUESTIONS."""
    asked = [item.text for item in insights if item.kind in ("source_gap", "follow_up")]
    return list(dict.fromkeys(asked))[:KNOWN_QUESTIONS]


def recorded_insights(rc: RunContext, key: str) -> list[KnownInsight]:
    """What earlier runs left open that this leaf was given (its `known_insights` event), again."""
    for given in reversed(rc.deps.store.events_for_run(rc.run_id, InsightsGiven)):
        if given.node_id == key:
            return rc.deps.store.get_insights(given.insight_ids)
    return []
